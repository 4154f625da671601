#!/usr/bin/env bash
# serve bounds the gates one client can pile up: --gate-concurrency running,
# --gate-queue waiting, then 503 busy. The same gates through submit_claim at /mcp
# (the same server, the same token): are they bounded too, or does every call wait
# (memory, a claim each, connections held open) without limit?
. "$(dirname "$0")/serve_lib.sh"
cat > "$CONTRACTS/slow.toml" <<'T'
[policy]
id = "slow"
requires = ["test_run"]

[[check]]
id = "wait"
check_type = "test_run"
covers = { target = "note.txt" }
source = { command = { argv = ["/bin/sleep", "3"] } }
expected = { exit_code = 0 }
T
start_serve --gate-concurrency 1 --gate-queue 1
N=8
python3 - "$BASE" "$TOKEN" "$HERE" "$N" "$(now 3)" <<'PY'
import json, sys, threading, urllib.request, urllib.error
base, token, here, n, at = sys.argv[1], sys.argv[2], sys.argv[3], int(sys.argv[4]), sys.argv[5]
sys.path.insert(0, here)
from mcp_wire import Http, tool, result_of
claim = {"spec_version": "0.1", "task": {"id": "q"}, "mutations": [
    {"id": "m1", "kind": "file_write", "target": "note.txt", "at": at}], "evidence": []}
# The twin: N gates at once over HTTP; past 1 running + 1 queued they get 503.
codes = []
def http_gate():
    req = urllib.request.Request(base + "/v1/gate/slow", data=json.dumps(claim).encode(),
        headers={"Authorization": f"Bearer {token}", "Content-Type": "application/json"})
    try:
        codes.append(urllib.request.urlopen(req, timeout=120).status)
    except urllib.error.HTTPError as e:
        codes.append(e.code)
ts = [threading.Thread(target=http_gate) for _ in range(n)]
[t.start() for t in ts]; [t.join() for t in ts]
print("POST /v1/gate x%d: %s" % (n, sorted(codes)))
# The attack: N submit_claim calls at once over /mcp.
answers = []
def mcp_gate():
    h = Http(base, token)
    h.init()
    sc, err, text = result_of(h.call(1, "tools/call", tool("submit_claim", {"contract": "slow", "claim": claim})))
    answers.append("refused: " + text[:80] if err else (sc or {}).get("state"))
ts = [threading.Thread(target=mcp_gate) for _ in range(n)]
[t.start() for t in ts]; [t.join() for t in ts]
print("submit_claim x%d: %s" % (n, answers))
decided = sum(1 for a in answers if a and not a.startswith("refused"))
http_decided = sum(1 for c in codes if c == 200)
# Works when MCP lets more gates wait than --gate-queue allows HTTP.
sys.exit(1 if decided > max(http_decided, 2) else 0)
PY
rc=$?
[ $rc = 1 ] && { echo "ATTACK WORKS: /mcp gates are not bounded by --gate-queue"; exit 1; }
[ $rc = 0 ] && { echo "held"; exit 0; }
exit 2
