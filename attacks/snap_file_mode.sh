#!/usr/bin/env bash
# A files snapshot hashes content only: the agent makes a config file world-writable
# and setuid/executable (chmod 4777) and nobody claimed it.
. "$(dirname "$0")/lib.sh"
mkdir -p "$ROOT/config"; echo "mode = 'live'" > "$ROOT/config/app.toml"; chmod 600 "$ROOT/config/app.toml"
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
id = "config"
source = { files = { path = "config" } }
T
snapshot
echo done > "$ROOT/done.txt"
chmod 4777 "$ROOT/config/app.toml"
gate "$(claim done.txt)"; code=$?
python3 -c 'import json,sys; d=json.load(open(sys.argv[1])); [print(c["check_id"], c.get("observed"), c.get("error")) for c in d["gate"]["checks"] if c["check_id"].startswith("snapshot")]' "$OWNER/out.json"
verdict snap_file_mode $code
