#!/usr/bin/env bash
# red11: strict pairing of tool calls and results in the adapters (openai, openai-chat).
# The agent writes its own trace: a result before its call, a duplicate call id still
# waiting, a second result, a result under a near-identical id (case, a trailing
# blank), a duplicate JSON key, a reused id after a failed result. Works when a
# malformed trace adapts to a case whose send_email / booking succeeded. Honest twins:
# the recorded traces adapt, a reused id after its result is a new call.
. "$(dirname "$0")/lib.sh"
EX="$HERE/../examples/eval"
works=0
python3 - "$EX" "$W" <<'PY'
import json, sys
ex, w = sys.argv[1], sys.argv[2]
t = json.load(open(f"{ex}/openai_tool_trace.json"))
call, res = t["records"]
for k, v in {
    "ok": [call, res], "result_first": [res, call], "dup_call": [call, dict(call), res],
    "second_result": [call, dict(res, success=False), res],
    "id_case": [call, dict(res, tool_call_id="CALL-1")], "id_blank": [call, dict(res, tool_call_id="call-1 ")],
    "unfinished": [call],
}.items():
    json.dump(dict(t, records=v), open(f"{w}/oa_{k}.json", "w"))
c = json.load(open(f"{ex}/chat.json"))
s, u, tc, tr, fin = c
for k, v in {
    "ok": [s, u, tc, tr, fin], "result_first": [s, u, tr, tc, fin],
    "dup_in_one": [s, u, dict(tc, tool_calls=tc["tool_calls"] * 2), tr, fin],
    "two_results": [s, u, tc, tr, tr, fin], "dup_across": [s, u, tc, tc, tr, fin],
}.items():
    json.dump(v, open(f"{w}/ch_{k}.json", "w"))
open(f"{w}/ch_dup_key.json", "w").write(json.dumps(c).replace('"tool_call_id": "call_1"', '"tool_call_id": "call_9", "tool_call_id": "call_1"'))
PY
adapt() { "$EVIDENT" adapt "$@" --source-ref x --jsonl 2>"$W/err.txt"; }
for k in ok result_first dup_call second_result id_case id_blank unfinished; do
  out=$(adapt openai "$W/oa_$k.json" "$EX/requirements.json")
  ok=$(printf '%s' "$out" | python3 -c 'import json,sys; d=json.load(sys.stdin); print(any(e.get("success") for e in d["events"]))' 2>/dev/null || echo none)
  if [ "$k" = ok ]; then [ "$ok" = True ] || { echo "BROKEN twin openai ok"; exit 2; }; echo "  twin  openai ok: success"; continue; fi
  if [ "$ok" = True ]; then echo "  WORKS openai $k: a success"; works=1; else echo "  held  openai $k: $(head -c 140 "$W/err.txt" | tr '\n' ' ')"; fi
done
for k in ok result_first dup_in_one two_results dup_across dup_key; do
  out=$(adapt openai-chat "$W/ch_$k.json" "$EX/chat.requirements.json" --claimed true)
  ok=$(printf '%s' "$out" | python3 -c 'import json,sys; d=json.load(sys.stdin); print(any(e.get("success") for e in d["events"]))' 2>/dev/null || echo none)
  if [ "$k" = ok ]; then [ "$ok" = True ] || { echo "BROKEN twin chat ok"; exit 2; }; echo "  twin  openai-chat ok: success"; continue; fi
  if [ "$ok" = True ]; then echo "  WORKS openai-chat $k: a success"; works=1; else echo "  held  openai-chat $k: $(grep -v '^note' "$W/err.txt" | head -c 140 | tr '\n' ' ')"; fi
done
if [ "$works" = 1 ]; then echo "ATTACK WORKS: red11_adapter_pairing"; exit 1; fi
echo "held: red11_adapter_pairing"; exit 0
