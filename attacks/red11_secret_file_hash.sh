#!/usr/bin/env bash
# red11: the digest leak through another probe. The owner passes DATABASE_URL to the
# tests (inherit_env) and reads a report file back with a file check; the agent's test
# writes the URL's password alone into that file. The file probe observes the file's
# `sha256` (and `size`) as it always does: sha256("hunter2") lands in --json and the
# ledger. Works when that hash appears.
. "$(dirname "$0")/lib.sh"
cd "$ROOT" || exit 2
mkdir -p tests out
cat > tests/test_a.py <<'PY'
import os, urllib.parse
def test_a():
    open("out/report.txt", "w").write(urllib.parse.urlparse(os.environ["DATABASE_URL"]).password)
PY
cat > contract.toml <<'TOML'
[policy]
id = "p"
requires = ["state_readback", "test_run"]

[[check]]
id = "tests"
check_type = "test_run"
covers = { kind = "code_change" }
source = { command = { argv = ["python3", "-m", "pytest", "-q"], inherit_env = ["PATH", "DATABASE_URL"] } }

[[check]]
id = "report"
check_type = "state_readback"
covers = { kind = "file_write" }
source = { file = { path = "out/report.txt" } }
expected = { exists = true }
TOML
at="$(now)"
echo "{\"spec_version\":\"0.1\",\"task\":{\"id\":\"t\"},\"mutations\":[{\"id\":\"m0\",\"kind\":\"file_write\",\"target\":\"out/report.txt\",\"at\":\"$at\"},{\"id\":\"m1\",\"kind\":\"code_change\",\"target\":\"app.py\",\"at\":\"$at\"}]}" > "$OWNER/claim.json"
export DATABASE_URL='postgres://app:hunter2@127.0.0.1:5432/test'
"$EVIDENT" gate contract.toml "$OWNER/claim.json" --json --key "$OWNER/owner.key" > "$OWNER/out.json" 2>"$OWNER/err.txt"
h=$(printf 'hunter2' | sha256sum | cut -d' ' -f1)
n=$(grep -c "$h" "$OWNER/out.json"); l=$("$EVIDENT" ledger export --ledger "$EVIDENT_LEDGER" 2>/dev/null | grep -c "$h")
echo "state $(state); sha256(\"hunter2\") in --json: $n, in the ledger: $l"
if [ "$n" != 0 ] || [ "$l" != 0 ]; then echo "ATTACK WORKS: red11_secret_file_hash"; exit 1; fi
echo "held: red11_secret_file_hash"; exit 0
