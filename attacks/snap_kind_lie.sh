#!/usr/bin/env bash
# A snapshot difference is "claimed" by any mutation naming its target, whatever its
# kind. The contract proves state_writes by target (accounts/4471) and covers every
# file_write by kind with one check (here: a build output exists; in real contracts
# the test suite). The agent rewrites the row accounts/4472 too and claims it as a
# *file_write*: the snapshot counts it claimed, the kind-wide check covers it, the
# claim verifies although nothing observed row 4472.
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
[[check]]
id = "build"
check_type = "state_readback"
covers = { kind = "file_write" }
source = { file = { path = "build.txt" } }
expected = { exists = true }
[[snapshot]]
id = "accounts"
source = { sqlite = { path = "billing.db", query = "SELECT id, billing_zip FROM accounts ORDER BY id" } }
target = "accounts/{id}"
T
sqlite "$ROOT/billing.db" "CREATE TABLE accounts(id TEXT PRIMARY KEY, billing_zip TEXT); INSERT INTO accounts VALUES ('4471','10001'),('4472','10002');"
echo ok > "$ROOT/build.txt"
snapshot
sqlite "$ROOT/billing.db" "UPDATE accounts SET billing_zip='94107' WHERE id='4471'; UPDATE accounts SET billing_zip='00000' WHERE id='4472';"
at="$(now)"
echo "{\"spec_version\":\"0.1\",\"task\":{\"id\":\"t\"},\"mutations\":[{\"id\":\"m0\",\"kind\":\"state_write\",\"target\":\"accounts/4471\",\"at\":\"$at\"},{\"id\":\"m1\",\"kind\":\"file_write\",\"target\":\"accounts/4472\",\"at\":\"$at\"}]}" > "$OWNER/claim.json"
gate "$OWNER/claim.json"; code=$?
python3 -c 'import json,sys; d=json.load(open(sys.argv[1])); [print(c["check_id"], c.get("covers"), c.get("error")) for c in d["gate"]["checks"]]' "$OWNER/out.json"
verdict snap_kind_lie $code
