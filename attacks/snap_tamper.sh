#!/usr/bin/env bash
# The snapshot file itself: (a) a hash edited to the after-state's, (b) the
# signature kept and a set removed, (c) a snapshot of another contract with the same
# sets, (d) an unsigned copy, (e) one re-signed with the agent's own key. Each must
# leave the claim unverified. Works (exit 1) if any variant verifies.
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
snapshot; cp "$OWNER/before.json" "$OWNER/genuine.json"
sqlite "$ROOT/billing.db" "UPDATE accounts SET billing_zip='94107' WHERE id IN ('4471','4472');"
# the after-state hashes, from a snapshot the agent takes with its own key
"$EVIDENT" key generate --id owner-gate --out "$W/agent.key" >/dev/null
"$EVIDENT" snapshot "$ROOT/contract.toml" --out "$W/agent.json" --key "$W/agent.key" >/dev/null
C="$(claim accounts/4471)"
works=0
try() { # NAME python-transform
  python3 - "$OWNER/genuine.json" "$W/agent.json" "$OWNER/before.json" <<PY
import json,sys
g=json.load(open(sys.argv[1])); a=json.load(open(sys.argv[2]))
$2
json.dump(out, open(sys.argv[3],"w"))
PY
  gate "$C"; local code=$? st; st="$(state)"
  echo "$1: exit $code state $st :: $(python3 -c 'import json,sys; d=json.load(open(sys.argv[1])); print([c.get("error") for c in d["gate"]["checks"] if c["check_id"].startswith("snapshot")])' "$OWNER/out.json" 2>/dev/null | cut -c1-160)"
  [ "$code" = 0 ] && [ "$st" = verified ] && works=1
}
try edited-hash 'out=g; out["sets"]["accounts"]["accounts/4472"]=a["sets"]["accounts"]["accounts/4472"]'
try set-dropped 'out=g; out["sets"]={}'
try unsigned 'out=a; del out["signature"]'
try agent-signed 'out=a'
try agent-signed-verifier-id 'out=a; out["verifier"]={"id":"owner-gate"}'
try sig-swapped 'out=a; out["signature"]=g["signature"]'
try future 'out=g; out["taken_at"]="2099-01-01T00:00:00Z"'
try genuine 'out=g'
[ $works = 1 ] && { echo "ATTACK WORKS: snap_tamper"; exit 1; }
echo "held: snap_tamper"; exit 0
