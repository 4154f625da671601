#!/usr/bin/env bash
# ATIF has no error field: the reader takes extra.is_error, extra.exit_code, then
# extra.status from a list of words, then text conventions. A call marked
# status "interrupted" (or "aborted", "killed"), or whose exit code is written as a
# string ("1") or a float (137.0), fell through all of them and was read as a
# success by `evident adapt atif`.
. "$(dirname "$0")/red13_lib.sh"
echo '[{"action": "bash", "evidence_fields": []}]' > "$W/reqs.json"
bad=0
for extra in '{"status": "interrupted"}' '{"status": "aborted"}' '{"status": "killed"}' '{"exit_code": "1"}' '{"exit_code": 137.0}'; do
  python3 - "$W/t.json" "$extra" <<'PY'
import json, sys
extra = json.loads(sys.argv[2])
t = {"schema_version": "ATIF-v1.7", "session_id": "s", "agent": {"name": "a", "version": "1"},
     "steps": [{"step_id": 1, "source": "user", "message": "run the tests"},
               {"step_id": 2, "source": "agent", "message": "", "tool_calls": [
                   {"tool_call_id": "c1", "function_name": "bash", "arguments": {"command": "pytest"}}],
                "observation": {"results": [{"source_call_id": "c1", "content": "partial output", "extra": extra}]}}]}
open(sys.argv[1], "w").write(json.dumps(t))
PY
  "$EVIDENT" adapt atif "$W/t.json" "$W/reqs.json" --source-ref r --claimed true > "$W/case.json" 2>"$W/err.txt" || { cat "$W/err.txt"; exit 2; }
  s=$(python3 -c 'import json,sys; print(json.load(open(sys.argv[1]))["events"][0]["success"])' "$W/case.json")
  echo "extra $extra: success = $s"
  [ "$s" = True ] && bad=1
done
[ $bad = 1 ] && works "an interrupted or failed ATIF call is read as a success"
held "read as failures"
