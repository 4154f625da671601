#!/usr/bin/env bash
# red11: a protected run is a copy, not a sandbox. The agent's test (in an unprotected
# path, or the code under test it imports) writes to the real tree by absolute path,
# through a relative symlink whose `..` climb past `/` (so it resolves the same from
# any scratch directory), and into the real .git/config. Works when the real tree or
# its .git was written during the protected run. docs/probes.md promises only that
# nothing reaches the real tree "through the copy"; the issue asks that the real tree,
# .git included, is "never written by a protected run".
. "$(dirname "$0")/lib.sh"
cd "$ROOT" || exit 2
git init -q . && git config user.email o@x && git config user.name owner
mkdir tests && printf 'def test_a():\n    assert True\n' > tests/test_a.py
git add . && git commit -qm base
BASE=$(git rev-parse HEAD)
up=$(printf '../%.0s' $(seq 1 40))
ln -s "${up%/}$ROOT" realtree
cat > test_escape.py <<PY
import os
def test_escape():
    open("$ROOT/ESCAPED_ABS", "w").write("x")
    with open("$ROOT/.git/config", "a") as f:
        f.write("\\n[evident-red11]\\n\\tescaped = true\\n")
    try:
        open("realtree/ESCAPED_LINK", "w").write("x")
    except OSError:
        pass  # a directory symlink is left out of a pytest copy
PY
cat > contract.toml <<TOML
[policy]
id = "p"
requires = ["test_run"]

[[check]]
id = "tests"
check_type = "test_run"
covers = { kind = "code_change" }
[check.source.command]
argv = ["python3", "-m", "pytest", "-q"]
inherit_env = ["PATH"]
protect = { base = "$BASE", paths = ["tests/**"] }
TOML
c="$(KIND=code_change claim app.py)"
"$EVIDENT" gate contract.toml "$c" --json --no-record > "$OWNER/out.json" 2>"$OWNER/err.txt"
wrote=""
[ -e "$ROOT/ESCAPED_ABS" ] && wrote="$wrote absolute-path"
[ -e "$ROOT/ESCAPED_LINK" ] && wrote="$wrote climbing-symlink"
grep -q evident-red11 "$ROOT/.git/config" && wrote="$wrote .git/config"
st=$(state)
echo "state $st; the protected run wrote to the real tree by:${wrote:- nothing}"
# A copy cannot stop a write by absolute path (no sandbox); it works when such a run
# is still taken as an observation (here: verified).
if [ -n "$wrote" ] && [ "$st" = verified ]; then echo "ATTACK WORKS: red11_protect_escape"; exit 1; fi
echo "held: red11_protect_escape"; exit 0
