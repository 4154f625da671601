#!/usr/bin/env bash
# submit_claim without a contract: the claim is decided "from its own evidence under
# the owner's --policy". The agent writes an evidence item that merely *says*
# `"verifier": {"kind": "independent"}` (unsigned) for work it never did. POST
# /v1/verify on the same server refuses to count it (no --trust: nothing is
# authenticated); does submit_claim, on stdio and at /mcp?
. "$(dirname "$0")/serve_lib.sh"
cat > "$OWNER/policy.json" <<'P'
{"id": "owner", "requires": ["state_readback"], "max_age_s": 300}
P
M="$(now 5)"; E="$(now 2)"
cat > "$W/claim.json" <<C
{"spec_version": "0.1", "task": {"id": "undone-4471"},
 "claimed_outcome": "Updated the billing address on account 4471.",
 "mutations": [{"id": "m1", "kind": "state_write", "target": "accounts/4471", "at": "$M"}],
 "evidence": [{"check_type": "state_readback", "target": "accounts/4471",
   "expected": {"billing_zip": "94107"}, "observed_value": {"billing_zip": "94107"},
   "at": "$E", "covers": ["m1"], "verifier": {"id": "gitreal-gate/0.3", "kind": "independent"}}],
 "policy": {"id": "agent", "requires": []}}
C
start_serve --policy "$OWNER/policy.json"
http_state="$(curl -s -X POST "$BASE/v1/verify" -H "Authorization: Bearer $TOKEN" \
  -H 'Content-Type: application/json' --data @"$W/claim.json" \
  | python3 -c 'import json,sys; print(json.load(sys.stdin).get("verdict",{}).get("state","?"))')"
echo "POST /v1/verify (the twin route): $http_state"
python3 - "$EVIDENT" "$CONTRACTS" "$OWNER" "$BASE" "$TOKEN" "$W/claim.json" "$HERE" <<'PY'
import json, sys
ev, contracts, owner, base, token, claim_path, here = sys.argv[1:]
sys.path.insert(0, here)
from mcp_wire import Stdio, Http, tool, result_of
claim = json.load(open(claim_path))
worked = []
s = Stdio([ev, "mcp", "--contracts", contracts, "--ledger", owner + "/mcp-ledger.db",
           "--policy", owner + "/policy.json", "--as", "agent"])
s.init()
sc, err, text = result_of(s.call(1, "tools/call", tool("submit_claim", {"claim": claim})))
s.close()
print("stdio submit_claim:", (sc or {}).get("state"), (sc or {}).get("status"), text[:200] if err else "")
if sc and sc.get("state") == "verified":
    worked.append("stdio")
h = Http(base, token)
h.init()
sc, err, text = result_of(h.call(1, "tools/call", tool("submit_claim", {"claim": claim})))
print("/mcp submit_claim:", (sc or {}).get("state"), (sc or {}).get("status"), text[:200] if err else "")
if sc and sc.get("state") == "verified":
    worked.append("/mcp")
sys.exit(1 if worked else 0)
PY
rc=$?
[ $rc = 1 ] && { echo "ATTACK WORKS: self-attested independent evidence verified over MCP"; exit 1; }
[ $rc = 0 ] && { echo "held"; exit 0; }
exit 2
