#!/usr/bin/env bash
# The hook scrubs transcript text (the task, the claimed outcome) of the contract's
# secrets before recording the claim — the checks' secrets. A [[snapshot]] source's
# secret (its database URL's password) is not registered, so an agent that repeats it
# in its last message has it written into the ledger.
. "$(dirname "$0")/red13_lib.sh"
PG="${EVIDENT_TEST_POSTGRES_URL:-postgres://postgres@127.0.0.1:5432/test}"
PW="owner-pg-pw-7f3a9c"
export RED13_PG_URL="${PG/postgres@/postgres:$PW@}"
python3 -c 'import sys' || exit 2
CONTRACT='
[policy]
id = "calc"
requires = ["test_run"]

[[snapshot]]
id = "rows"
source = { postgres = { url_env = "RED13_PG_URL", query = "SELECT 1 AS id" } }
target = "rows/{id}"

[[check]]
id = "readme"
check_type = "test_run"
covers = { kind = "code_change" }
source = { command = { argv = ["true"], inherit_env = ["PATH"], timeout_s = 30 } }
expected = { exit_code = 0 }
'
setup_repo
hook claude-code "$(event SessionStart)" || exit 2
grep -q "snapshot" "$W/err.txt" || { cat "$W/err.txt"; echo "setup: no snapshot taken"; exit 2; }
echo "# notes" > "$REPO/NOTES.md"
transcript "Done. (The database password is $PW, in case you need it.)"
hook claude-code "$(event Stop s1 "Done. (The database password is $PW, in case you need it.)")"
echo "stop: $(decision)"
if grep -rqa "$PW" "$STATE"/ledger.db* 2>/dev/null; then works "a snapshot source's secret from the agent's message is in the ledger"; fi
grep -q "$PW" "$W/out.json" "$W/err.txt" && works "the secret is in the hook's output"
held "scrubbed"
