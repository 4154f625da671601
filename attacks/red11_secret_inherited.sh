#!/usr/bin/env bash
# red11: the owner passes DATABASE_URL (and a token) through to the tests with
# inherit_env. The agent's test writes the URL's password and the token into the
# file a readback check observes (json pointer), so the gate shows them in its report,
# --json and the ledger. Works when either shows.
. "$(dirname "$0")/lib.sh"
cd "$ROOT" || exit 2
mkdir -p tests out
cat > tests/test_a.py <<'PY'
import os, json, urllib.parse
def test_a():
    u = urllib.parse.urlparse(os.environ["DATABASE_URL"])
    json.dump({"status": u.password, "t": os.environ["GITHUB_TOKEN"]}, open("out/status.json", "w"))
PY
cat > contract.toml <<'TOML'
[policy]
id = "p"
requires = ["state_readback", "test_run"]

[[check]]
id = "tests"
check_type = "test_run"
covers = { kind = "code_change" }
source = { command = { argv = ["python3", "-m", "pytest", "-q"], inherit_env = ["PATH", "DATABASE_URL", "GITHUB_TOKEN"] } }

[[check]]
id = "report"
check_type = "state_readback"
covers = { kind = "state_write" }
source = { file = { path = "out/status.json", pointers = { status = "/status", t = "/t" } } }
expected = { json = { status = "ok" } }
TOML
at="$(now)"
echo "{\"spec_version\":\"0.1\",\"task\":{\"id\":\"t\"},\"mutations\":[{\"id\":\"m0\",\"kind\":\"state_write\",\"target\":\"x\",\"at\":\"$at\"},{\"id\":\"m1\",\"kind\":\"code_change\",\"target\":\"app.py\",\"at\":\"$at\"}]}" > "$OWNER/claim.json"
export DATABASE_URL='postgres://app:Hunter2Secret@127.0.0.1:5432/test' GITHUB_TOKEN='ghp_inheritedTok3n0000'
"$EVIDENT" gate contract.toml "$OWNER/claim.json" --json --key "$OWNER/owner.key" > "$OWNER/out.json" 2>"$OWNER/err.txt"
"$EVIDENT" gate contract.toml "$OWNER/claim.json" --key "$OWNER/owner.key" --junit "$OWNER/j.xml" --markdown "$OWNER/m.md" > "$OWNER/out.txt" 2>&1
n=$(cat "$OWNER/out.json" "$OWNER/err.txt" "$OWNER/out.txt" "$OWNER/j.xml" "$OWNER/m.md" 2>/dev/null | grep -c "Hunter2Secret\|inheritedTok3n")
l=$("$EVIDENT" ledger export --ledger "$EVIDENT_LEDGER" 2>/dev/null | grep -c "Hunter2Secret\|inheritedTok3n")
echo "secret in output lines: $n, in ledger export: $l"
if [ "$n" != 0 ] || [ "$l" != 0 ]; then echo "ATTACK WORKS: red11_secret_inherited"; exit 1; fi
echo "held: red11_secret_inherited"; exit 0
