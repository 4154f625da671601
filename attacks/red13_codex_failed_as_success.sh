#!/usr/bin/env bash
# Codex rollouts record a shell call's exit code inside the function_call_output's
# output, a JSON string {"output": …, "metadata": {"exit_code": N}} (the exec_command_end
# event is not persisted by default, and where it is, it can come after the output).
# A reader that takes only exec_command_end, and only before the output, counts a
# failed command as a success: `evident adapt codex` then reports success = true.
. "$(dirname "$0")/red13_lib.sh"
echo '[{"action": "shell", "evidence_fields": []}]' > "$W/reqs.json"
python3 - "$W" <<'PY'
import json, sys
w = sys.argv[1]
def line(t, typ, payload): return json.dumps({"timestamp": t, "type": typ, "payload": payload})
call = lambda cid: line("2026-12-01T10:00:01Z", "response_item", {"type": "function_call", "name": "shell", "call_id": cid, "arguments": json.dumps({"command": ["pytest", "-q"]})})
out = lambda cid, code: line("2026-12-01T10:00:02Z", "response_item", {"type": "function_call_output", "call_id": cid, "output": json.dumps({"output": "1 failed in 0.1s", "metadata": {"exit_code": code, "duration_seconds": 0.1}})})
end = lambda cid, code: line("2026-12-01T10:00:03Z", "event_msg", {"type": "exec_command_end", "call_id": cid, "exit_code": code})
head = [line("2026-12-01T10:00:00Z", "session_meta", {"id": "s", "cwd": "/r"}),
        line("2026-12-01T10:00:00Z", "event_msg", {"type": "user_message", "message": "make the tests pass"})]
open(w + "/meta.jsonl", "w").write("\n".join(head + [call("c1"), out("c1", 1)]) + "\n")
open(w + "/late.jsonl", "w").write("\n".join(head + [call("c1"), out("c1", 1), end("c1", 1)]) + "\n")
PY
bad=0
for f in meta late; do
  "$EVIDENT" adapt codex "$W/$f.jsonl" "$W/reqs.json" --source-ref r --claimed true > "$W/$f.case.json" 2>"$W/err.txt" || { cat "$W/err.txt"; exit 2; }
  s=$(python3 -c 'import json,sys; print(json.load(open(sys.argv[1]))["events"][0]["success"])' "$W/$f.case.json")
  echo "$f: exit code 1 read as success = $s"
  [ "$s" = True ] && bad=1
done
[ $bad = 1 ] && works "a failed Codex shell call is read as a success"
held "failed calls are failures"
