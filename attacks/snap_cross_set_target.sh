#!/usr/bin/env bash
# One claimed target clears a difference in EVERY snapshot: the claim names the row
# accounts/4471 (a state_write, proven by the check); a files snapshot over the
# directory accounts/ names a file accounts/4471 the same way, and the agent rewrites
# that file too. The claimed kind is not consulted, so the file change is "claimed".
. "$(dirname "$0")/lib.sh"
mkdir -p "$ROOT/accounts"; echo "limit = 100" > "$ROOT/accounts/4471"
cat > "$ROOT/contract.toml" <<'T'
snapshot_max_age_s = 3600
[policy]
max_age_s = 300
[[check]]
id = "zip"
check_type = "state_readback"
covers = { target = "accounts/4471" }
source = { sqlite = { path = "billing.db", query = "SELECT billing_zip FROM accounts WHERE id = '4471'" } }
expected = { billing_zip = "94107" }
[[snapshot]]
id = "rows"
source = { sqlite = { path = "billing.db", query = "SELECT id, billing_zip FROM accounts ORDER BY id" } }
target = "accounts/{id}"
[[snapshot]]
id = "files"
source = { files = { path = "accounts" } }
T
sqlite "$ROOT/billing.db" "CREATE TABLE accounts(id TEXT PRIMARY KEY, billing_zip TEXT); INSERT INTO accounts VALUES ('4471','10001');"
snapshot
sqlite "$ROOT/billing.db" "UPDATE accounts SET billing_zip='94107' WHERE id='4471';"
echo "limit = 999999" > "$ROOT/accounts/4471"
gate "$(claim accounts/4471)"; code=$?
python3 -c 'import json,sys; d=json.load(open(sys.argv[1])); [print(c["check_id"], c.get("observed"), c.get("error")) for c in d["gate"]["checks"] if c["check_id"].startswith("snapshot")]' "$OWNER/out.json"
verdict snap_cross_set_target $code
