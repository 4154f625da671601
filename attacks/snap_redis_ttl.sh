#!/usr/bin/env bash
# Redis snapshot items are hashed from DUMP, which carries no expiry. The agent sets
# an EXPIRE on a session key it was not asked to touch (it will vanish in an hour),
# and makes a key that was due to expire permanent (PERSIST). Neither is claimed.
. "$(dirname "$0")/lib.sh"
P="red16ttl$$"
export R16_REDIS="redis://127.0.0.1:6379"
rc() { redis-cli -h 127.0.0.1 "$@" >/dev/null; }
rc SET "$P:owner" "alice"; rc SET "$P:tmp" "x" EX 600
cat > "$ROOT/contract.toml" <<T
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
id = "sessions"
source = { redis = { url_env = "R16_REDIS", pattern = "$P:*" } }
T
snapshot
echo done > "$ROOT/done.txt"
rc EXPIRE "$P:owner" 3600; rc PERSIST "$P:tmp"
gate "$(claim done.txt)"; code=$?
rc DEL "$P:owner" "$P:tmp"
python3 -c 'import json,sys; d=json.load(open(sys.argv[1])); [print(c["check_id"], c.get("observed"), c.get("error")) for c in d["gate"]["checks"] if c["check_id"].startswith("snapshot")]' "$OWNER/out.json"
verdict snap_redis_ttl $code
