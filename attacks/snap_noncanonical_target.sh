#!/usr/bin/env bash
# A row whose id is a non-canonical spelling of a claimed target ("4471/", "./4471",
# "4471//") is ADDED without being claimed. Its target "accounts/4471/" differs from
# "accounts/4471" as a string (no collision error), but is_claimed canonicalises it to
# the claimed "accounts/4471": the added row passes as claimed.
. "$(dirname "$0")/lib.sh"
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
id = "accounts"
source = { sqlite = { path = "billing.db", query = "SELECT id, billing_zip FROM accounts ORDER BY id" } }
target = "accounts/{id}"
T
sqlite "$ROOT/billing.db" "CREATE TABLE accounts(id TEXT PRIMARY KEY, billing_zip TEXT); INSERT INTO accounts VALUES ('4471','10001'),('4472','10002');"
snapshot
# the agent: the claimed write, plus undeclared rows
sqlite "$ROOT/billing.db" "UPDATE accounts SET billing_zip='94107' WHERE id='4471'; INSERT INTO accounts VALUES ('4471/','00000'), ('./4471','00000'), ('4471//','66666');"
gate "$(claim accounts/4471)"; code=$?
python3 -c 'import json,sys; d=json.load(open(sys.argv[1])); [print(c["check_id"], c.get("observed"), c.get("error")) for c in d["gate"]["checks"] if c["check_id"].startswith("snapshot")]' "$OWNER/out.json"
verdict snap_noncanonical_target $code
