#!/usr/bin/env bash
# Learn a held-out check (`hidden = true`): its id (`heldcnry7`) or what it reads
# (`hidcnry…`), from everything the agent can read: the gate's answer (waited and
# wait=false + the job), GET /v1/decisions and /v1/decisions/{id}, the page (/ and
# /decisions/{id}), /metrics, /v1/contracts, and over /mcp list_contracts,
# get_contract, submit_claim with a progressToken (its progress notifications) and
# explain_decision. The held-out checks fail (the agent did not do that part), so
# their detail is what a verdict would want to quote.
. "$(dirname "$0")/serve_lib.sh"
cat > "$CONTRACTS/files.toml" <<'T'
[policy]
id = "files"
requires = ["state_readback"]

[[check]]
id = "note"
check_type = "state_readback"
covers = { target = "note.txt" }
source = { file = { path = "note.txt" } }
expected = { exists = true }

[[check]]
id = "heldcnry7"
check_type = "state_readback"
covers = { target = "note.txt" }
source = { file = { path = "hidcnry-file.txt" } }
expected = { exists = true }
hidden = true

[[check]]
id = "heldcnry8"
check_type = "test_run"
covers = { target = "note.txt" }
source = { command = { argv = ["/bin/cat", "hidcnry-cmd.txt"] } }
expected = { exit_code = 0 }
hidden = true
T
echo hi > "$ROOT/note.txt"
start_serve
CLAIM="{\"spec_version\":\"0.1\",\"task\":{\"id\":\"h\"},\"mutations\":[{\"id\":\"m1\",\"kind\":\"file_write\",\"target\":\"note.txt\",\"at\":\"$(now 2)\"}],\"evidence\":[]}"
A=(-H "Authorization: Bearer $TOKEN")
J=(-H 'Content-Type: application/json')
{
  curl -s -X POST "$BASE/v1/gate/files" "${A[@]}" "${J[@]}" --data "$CLAIM"; echo
  loc="$(curl -s -D - -o "$W/job.json" -X POST "$BASE/v1/gate/files?wait=false" "${A[@]}" "${J[@]}" --data "$CLAIM" | tr -d '\r' | awk -F': ' 'tolower($1)=="location"{print $2}')"
  cat "$W/job.json"; echo
  sleep 3; [ -n "$loc" ] && curl -s "$BASE$loc"; echo
  curl -s "$BASE/v1/decisions?limit=500"; echo
  for id in 1 2 3 4; do curl -s "$BASE/v1/decisions/$id"; echo; curl -s "$BASE/decisions/$id"; echo; done
  curl -s "$BASE/"; curl -s "$BASE/metrics"; curl -s "$BASE/v1/contracts"; curl -s "$BASE/v1/contracts/files"
} > "$W/http.txt" 2>&1
python3 - "$BASE" "$TOKEN" "$HERE" "$CLAIM" > "$W/mcp.txt" <<'PY'
import json, sys
base, token, here, claim = sys.argv[1:]
sys.path.insert(0, here)
from mcp_wire import Http, tool
h = Http(base, token); h.init()
print(json.dumps(h.call(1, "tools/call", tool("list_contracts", {}))))
print(json.dumps(h.call(2, "tools/call", tool("get_contract", {"name": "files"}))))
# the whole SSE stream of the call, progress notifications included
call = {"jsonrpc": "2.0", "id": 3, "method": "tools/call", "params": {"name": "submit_claim",
        "arguments": {"contract": "files", "claim": json.loads(claim)}, "_meta": {"progressToken": "p1"}}}
s, out = h.post(call)
print(json.dumps(out))
did = None
for v in out:
    sc = (v.get("result") or {}).get("structuredContent") if isinstance(v, dict) else None
    if sc: did = sc.get("decision_id")
print(json.dumps(h.call(4, "tools/call", tool("explain_decision", {"id": did or 1}))))
progress = sum(1 for v in out if isinstance(v, dict) and v.get("method") == "notifications/progress")
print("progress notifications:", progress, file=sys.stderr)
PY
for f in http mcp; do echo "$f: $(wc -c < "$W/$f.txt") bytes read"; done
grep -q '"state":"refuted"\|"state":"unverified"' "$W/http.txt" || { echo "no decision came back"; head -c 600 "$W/http.txt"; exit 2; }
if grep -o '.\{80\}\(heldcnry\|hidcnry\).\{80\}' "$W/http.txt" "$W/mcp.txt" | head -5 | grep .; then
  echo "ATTACK WORKS: a held-out check shows"; exit 1
fi
echo "held: neither the held-out ids nor their targets show anywhere"; exit 0
