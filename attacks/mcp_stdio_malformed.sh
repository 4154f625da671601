#!/usr/bin/env bash
# `evident mcp` on stdio, fed what a misbehaving agent framework sends: a line that is
# not JSON, a batch, odd ids, params as an array, an unknown tool, the claim as a
# string, a claim nested 120 levels (recorded? can it be read back?), a 15 MiB line
# (under rmcp's 16 MiB line cap) and a 40 MiB one (over it), and 200 calls at once.
# Works if the server dies, stops answering, prints anything but JSON-RPC on stdout,
# grows past 1 GiB, or records a decision it cannot read back.
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
T
python3 - "$EVIDENT" "$CONTRACTS" "$OWNER" "$HERE" "$(now 2)" <<'PY'
import json, sys, time
ev, contracts, owner, here, at = sys.argv[1:]
sys.path.insert(0, here)
from mcp_wire import Stdio, tool, result_of
s = Stdio([ev, "mcp", "--contracts", contracts, "--ledger", owner + "/ledger.db", "--as", "agent"])
s.init()
bad = []
claim = {"spec_version": "0.1", "task": {"id": "m"}, "mutations": [
    {"id": "m1", "kind": "file_write", "target": "note.txt", "at": at}], "evidence": []}
def alive(i):
    r = s.call(i, "ping", timeout=30)
    return r is not None and "result" in r
s.raw(b"garbage{\n")
s.raw(b'[{"jsonrpc":"2.0","id":101,"method":"ping"},{"jsonrpc":"2.0","id":102,"method":"ping"}]\n')
s.raw(b'{"jsonrpc":"2.0","id":{"a":1},"method":"ping"}\n')
s.raw(b'{"jsonrpc":"2.0","id":1e400,"method":"ping"}\n')
s.send({"jsonrpc": "2.0", "id": 103, "method": "tools/call", "params": ["submit_claim"]})
s.send({"jsonrpc": "2.0", "id": 104, "method": "tools/call", "params": tool("rm_rf", {})})
if not alive(105): bad.append("dead after malformed lines")
sc, err, text = result_of(s.call(106, "tools/call", tool("submit_claim", {"contract": "files", "claim": json.dumps(claim)})))
print("claim as a string:", "refused: " + text[:100] if err else sc and sc.get("state"))
if sc and not err and sc.get("state") == "verified": bad.append("string claim verified")
deep = {"k": 1}
for _ in range(118): deep = {"k": deep}
c2 = dict(claim, evidence=[{"check_type": "state_readback", "target": "note.txt", "expected": deep,
     "observed_value": deep, "at": at, "covers": ["m1"], "verifier": {"id": "x", "kind": "self"}}])
r = s.call(107, "tools/call", tool("submit_claim", {"contract": "files", "claim": c2}))
sc, err, text = result_of(r)
print("claim 120 deep:", "refused: " + text[:120] if err else (sc or {}).get("state"), "" if r else "(no answer)")
if sc and sc.get("decision_id"):
    r = s.call(108, "tools/call", tool("explain_decision", {"id": sc["decision_id"]}))
    sc2, err2, text2 = result_of(r)
    print("  its explain_decision:", "error: " + text2[:120] if err2 else "read back")
    if err2 or not r: bad.append("a recorded decision cannot be read back")
big = json.dumps({"jsonrpc": "2.0", "id": 109, "method": "tools/call", "params": tool("submit_claim",
      {"contract": "files", "claim": dict(claim, claimed_outcome="x" * (15 << 20))})}).encode() + b"\n"
s.raw(big); r = s.wait(109, 60)
print("15 MiB line:", "refused: " + result_of(r)[2][:100] if r and result_of(r)[1] else json.dumps(r)[:120])
s.raw(b'{"jsonrpc":"2.0","id":110,"method":"ping","params":{"x":"' + b"y" * (40 << 20) + b'"}}\n')
if not alive(111): bad.append("dead after a 40 MiB line")
for i in range(200):
    s.send({"jsonrpc": "2.0", "id": 1000 + i, "method": "tools/call", "params": tool("get_contract", {"name": "files"})})
got = sum(1 for i in range(200) if s.wait(1000 + i, 60))
print("200 calls at once:", got, "answered")
if got < 200: bad.append("calls lost")
hwm = 0
for line in open(f"/proc/{s.p.pid}/status"):
    if line.startswith("VmHWM"): hwm = int(line.split()[1])
print("peak RSS:", hwm // 1024, "MiB")
if hwm > 1 << 20: bad.append("peak RSS over 1 GiB")
if not alive(112): bad.append("dead at the end")
notjson = [o for o in s.other if "not_json" in o]
if notjson: bad.append("non-JSON on stdout: " + notjson[0]["not_json"][:80])
s.close()
print("problems:", bad)
sys.exit(1 if bad else 0)
PY
rc=$?
[ $rc = 1 ] && { echo "ATTACK WORKS"; exit 1; }
[ $rc = 0 ] && { echo held; exit 0; }
exit 2
