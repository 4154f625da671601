# Shared helpers for the red13 attack scripts (the stop hooks and claim building).
# Each attack exits 1 when it WORKS (a stop allowed on an unmet contract, a hang past
# the deadline, a leak, a forged line), 0 when evident held, 2 when setup failed.
set -u
HERE="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
EVIDENT="${EVIDENT:-$HERE/../target/debug/evident}"
[ -x "$EVIDENT" ] || { echo "build evident first (cargo build -p evident)"; exit 2; }
W="$(mktemp -d /tmp/red13-XXXXXX)"
REPO="$W/repo"; STATE="$W/state"; T="$W/transcript.jsonl"
mkdir -p "$REPO/tests" "$REPO/.evident"
cleanup() { [ -n "${KEEP:-}" ] || rm -rf "$W"; }
trap cleanup EXIT
g() { git -C "$REPO" -c user.name=t -c user.email=t@example.com -c commit.gpgsign=false "$@"; }

# A pytest repository whose add() is wrong, with CONTRACT (default: evident init's).
setup_repo() {
  g init -q -b main
  printf 'def add(a, b):\n    return a - b\n' > "$REPO/calc.py"
  printf 'from calc import add\n\ndef test_add():\n    assert add(2, 3) == 5\n' > "$REPO/tests/test_calc.py"
  : > "$REPO/conftest.py"
  printf '__pycache__/\n' > "$REPO/.gitignore"
  if [ -n "${CONTRACT:-}" ]; then printf '%s\n' "$CONTRACT" > "$REPO/.evident/contract.toml"
  else "$EVIDENT" init claude-code --repo "$REPO" >/dev/null 2>&1 || { echo "init failed"; exit 2; }; fi
  g add -A && g commit -qm start || exit 2
  REPO="$(cd "$REPO" && pwd -P)"
}

# transcript LAST: a Claude Code transcript with an Edit of calc.py.
transcript() {
  python3 - "$T" "$REPO" "${1:-Fixed add(); all tests pass.}" <<'PY'
import json, sys
t, repo, last = sys.argv[1:]
lines = [
 {"type": "user", "sessionId": "s1", "message": {"role": "user", "content": "Fix add() in calc.py"}},
 {"type": "assistant", "message": {"role": "assistant", "content": [{"type": "tool_use", "id": "toolu_1", "name": "Edit", "input": {"file_path": repo + "/calc.py", "old_string": "a - b", "new_string": "a + b"}}]}},
 {"type": "user", "message": {"role": "user", "content": [{"type": "tool_result", "tool_use_id": "toolu_1", "content": "ok", "is_error": False}]}},
 {"type": "assistant", "message": {"role": "assistant", "content": [{"type": "text", "text": last}]}},
]
open(t, "w").write("".join(json.dumps(l) + "\n" for l in lines))
PY
}

# event NAME [SESSION] [LAST]: a Claude Code hook event.
event() {
  python3 -c 'import json,sys; print(json.dumps({"session_id": sys.argv[2], "transcript_path": sys.argv[3], "cwd": sys.argv[4], "hook_event_name": sys.argv[1], "stop_hook_active": False, "last_assistant_message": sys.argv[5], "permission_mode": "default"}))' "$1" "${2:-s1}" "$T" "$REPO" "${3:-Fixed add(); all tests pass.}"
}

# hook AGENT EVENT_JSON [args]: runs the hook, stdout in $W/out.json, stderr in $W/err.txt,
# wall seconds in $HOOK_SECS; returns the hook's exit code.
hook() {
  local agent="$1" ev="$2"; shift 2
  local t0 t1 rc
  t0=$(date +%s.%N)
  printf '%s' "$ev" | CLAUDE_PROJECT_DIR="$REPO" EVIDENT_LEDGER= timeout "${HOOK_KILL:-120}" \
    "$EVIDENT" hook "$agent" --state-dir "$STATE" "$@" > "$W/out.json" 2> "$W/err.txt"
  rc=$?
  t1=$(date +%s.%N)
  HOOK_SECS=$(python3 -c "print(round($t1-$t0,1))")
  return $rc
}

# decision: "block", "allow" or "none" from a Claude Code answer in $W/out.json.
decision() {
  python3 -c '
import json,sys
s=open(sys.argv[1]).read().strip()
if not s: print("silent"); sys.exit()
try: v=json.loads(s)
except Exception: print("not-json"); sys.exit()
print(v.get("decision") or ("allow" if "followup_message" not in v else "block"))' "$W/out.json"
}

works() { echo "ATTACK WORKS: $1"; exit 1; }
held() { echo "held: $1"; exit 0; }
