#!/usr/bin/env bash
# SQLite is dynamically typed and a row is hashed from its JSON observation, where a
# BLOB is its hex text: the agent replaces TEXT 'cafe' by BLOB x'cafe' (two bytes, a
# different value to the application) and REAL 1e999 (inf) by TEXT 'inf'.
. "$(dirname "$0")/lib.sh"
cat > "$ROOT/contract.toml" <<'T'
snapshot_max_age_s = 3600
[policy]
max_age_s = 300
[[check]]
id = "done"
check_type = "state_readback"
covers = { target = "done.txt" }
source = { file = { path = "done.txt" } }
expected = { exists = true }
[[snapshot]]
id = "accounts"
source = { sqlite = { path = "billing.db", query = "SELECT id, token, limit_ FROM accounts ORDER BY id" } }
target = "accounts/{id}"
T
sqlite "$ROOT/billing.db" "CREATE TABLE accounts(id INTEGER PRIMARY KEY, token, limit_); INSERT INTO accounts VALUES (1,'cafe', 'inf');"
snapshot
echo done > "$ROOT/done.txt"
sqlite "$ROOT/billing.db" "UPDATE accounts SET token = x'cafe', limit_ = 1e999 WHERE id = 1;"
python3 -c 'import sqlite3,sys; print(sqlite3.connect(sys.argv[1]).execute("select typeof(token), typeof(limit_) from accounts").fetchall())' "$ROOT/billing.db"
gate "$(claim done.txt)"; code=$?
python3 -c 'import json,sys; d=json.load(open(sys.argv[1])); [print(c["check_id"], c.get("observed"), c.get("error")) for c in d["gate"]["checks"] if c["check_id"].startswith("snapshot")]' "$OWNER/out.json"
verdict snap_sqlite_type $code
