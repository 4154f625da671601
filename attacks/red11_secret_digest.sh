#!/usr/bin/env bash
# red11: the agent's test writes the inherited DSN's password alone to stderr (an
# atexit handler, after pytest's capture ends). Nothing shows the password, but the
# observation's `stderr_sha256` is then sha256("hunter2\n"): an unsalted hash a word
# list reverses at once, published in --json and the ledger. Works when the digest
# of the secret alone appears.
. "$(dirname "$0")/lib.sh"
cd "$ROOT" || exit 2
mkdir -p tests
cat > tests/test_a.py <<'PY'
import os, atexit, urllib.parse
pw = urllib.parse.urlparse(os.environ["DATABASE_URL"]).password
atexit.register(lambda: os.write(2, (pw + "\n").encode()))
def test_a():
    assert True
PY
cat > contract.toml <<'TOML'
[policy]
id = "p"
requires = ["test_run"]

[[check]]
id = "tests"
check_type = "test_run"
covers = { kind = "code_change" }
source = { command = { argv = ["python3", "-m", "pytest", "-q"], inherit_env = ["PATH", "DATABASE_URL"] } }
TOML
c="$(KIND=code_change claim app.py)"
export DATABASE_URL='postgres://app:hunter2@127.0.0.1:5432/test'
"$EVIDENT" gate contract.toml "$c" --json --key "$OWNER/owner.key" > "$OWNER/out.json" 2>"$OWNER/err.txt"
h=$(printf 'hunter2\n' | sha256sum | cut -d' ' -f1)
n=$(grep -c "$h" "$OWNER/out.json"); l=$("$EVIDENT" ledger export --ledger "$EVIDENT_LEDGER" 2>/dev/null | grep -c "$h")
echo "state $(state); sha256(\"hunter2\\n\") in --json: $n, in the ledger: $l"
if [ "$n" != 0 ] || [ "$l" != 0 ]; then echo "ATTACK WORKS: red11_secret_digest"; exit 1; fi
echo "held: red11_secret_digest"; exit 0
