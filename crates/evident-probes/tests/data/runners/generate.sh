#!/usr/bin/env bash
# Regenerates the recorded runner outputs in this directory from the sources in src/.
# Not run by the tests or CI: the outputs are checked in, and the tests read them.
#
#   PY8=/tmp/venv-runners/bin/python    # python -m venv; pip install "pytest<9" pytest-subtests
#   PY9=/tmp/venv-runners9/bin/python   # python -m venv; pip install "pytest>=9"
#   PYENV=/root/.pyenv/versions         # CPython 3.10.13, 3.11.7, 3.12.1, 3.13.0
#   NODE_MODULES=/tmp/npm-runners/node_modules   # npm install tape tap
#   DJANGO_PY=/tmp/venv-django/bin/python        # python -m venv; pip install django
#   bash generate.sh
#
# Every command runs in a scratch directory under /tmp, so paths in tracebacks name it.
set -uo pipefail
here="$(cd "$(dirname "$0")" && pwd)"
src="$here/src"
: "${PY8:?}" "${PY9:?}" "${PYENV:?}" "${NODE_MODULES:?}" "${DJANGO_PY:?}"
work=/tmp/evident-runner-fixtures
rm -rf "$work"
mkdir -p "$work"

v8=$("$PY8" -c 'import pytest; print(pytest.__version__)')
v9=$("$PY9" -c 'import pytest; print(pytest.__version__)')

# --- pytest -------------------------------------------------------------------------
mkdir -p "$work/py"
cp "$src/pytest_mix.py" "$work/py/test_mix.py"
cp "$src/pytest_subtests.py" "$work/py/test_subtests.py"
cd "$work/py"
for py in "$PY8" "$PY9"; do
  v=$("$py" -c 'import pytest; print(pytest.__version__)')
  "$py" -m pytest -p no:cacheprovider -rA --junitxml="$here/pytest-$v-mix.xml" test_mix.py \
    >"$here/pytest-$v-mix.txt" 2>&1
  "$py" -m pytest -p no:cacheprovider -v test_subtests.py >"$here/pytest-$v-subtests-v.txt" 2>&1
  "$py" -m pytest -p no:cacheprovider -q test_subtests.py >"$here/pytest-$v-subtests-q.txt" 2>&1
done
"$PY9" -m pytest -p no:cacheprovider -rA --color=yes test_mix.py >"$here/pytest-$v9-mix-color.txt" 2>&1
"$PY9" -m pytest -p no:cacheprovider -v --color=yes test_subtests.py \
  >"$here/pytest-$v9-subtests-v-color.txt" 2>&1
"$PY8" -m pytest -p no:cacheprovider --color=yes test_subtests.py \
  >"$here/pytest-$v8-subtests-color.txt" 2>&1

# --- unittest (its report goes to stderr; stdout is left out) -----------------------
mkdir -p "$work/ut/pkg" "$work/ut/empty"
touch "$work/ut/pkg/__init__.py"
for f in mod sub pass fixture forge; do cp "$src/unittest_$f.py" "$work/ut/pkg/test_$f.py"; done
echo "import nonexistent_module_xyz" >"$work/ut/pkg/test_broken.py"
cd "$work/ut"
ut() { # version, output name, arguments...
  local v=$1 out=$2
  shift 2
  "$PYENV/$v/bin/python3" -m unittest "$@" 2>"$here/unittest-$v-$out.txt" >/dev/null
}
ut 3.11.7 mod-v -v pkg.test_mod
ut 3.11.7 mod -- pkg.test_mod
ut 3.10.13 mod-v -v pkg.test_mod
for v in 3.10.13 3.11.7 3.13.0; do ut $v sub-v -v pkg.test_sub; done
ut 3.12.1 fixture-v -v pkg.test_fixture pkg.test_broken
for v in 3.10.13 3.11.7; do ut $v pass-v -v pkg.test_pass; done
ut 3.11.7 pass pkg.test_pass
ut 3.11.7 forge-v -v pkg.test_forge
cd "$work/ut/empty"
ut 3.11.7 empty-v -v
ut 3.12.1 empty-v -v

# --- Django's test runner (unittest's result class), both streams --------------------
dv=$("$DJANGO_PY" -c 'import django; print(django.__version__)')
mkdir -p "$work/dj"
cd "$work/dj"
"$(dirname "$DJANGO_PY")/django-admin" startproject site_ .
"$DJANGO_PY" manage.py startapp accounts
cp "$src/django_tests.py" accounts/tests.py
sed -i 's/"django.contrib.staticfiles",/"django.contrib.staticfiles",\n    "accounts",/' site_/settings.py
"$DJANGO_PY" manage.py test -v 2 >"$here/django-$dv-v2.stdout.txt" 2>"$here/django-$dv-v2.stderr.txt"

# --- node's test runner, TAP reporter -------------------------------------------------
nv=$(node --version | tr -d v)
mkdir -p "$work/node"
for f in mix pass own_failure; do cp "$src/node_$f.js" "$work/node/$f.test.js"; done
cd "$work/node"
for f in mix pass own_failure; do
  node --test --test-reporter=tap "$f.test.js" >"$here/node-$nv-${f//_/-}-tap.txt" 2>/dev/null
done

# --- tape -------------------------------------------------------------------------------
tv=$(node -p "require('$NODE_MODULES/tape/package.json').version")
mkdir -p "$work/tape"
cd "$work/tape"
for f in mix pass forge; do
  cp "$src/tape_$f.js" "$f.js"
  NODE_PATH="$NODE_MODULES" node "$f.js" >"$here/tape-$tv-$f.txt" 2>/dev/null
done

# --- node-tap ---------------------------------------------------------------------------
ntv=$(node -p "require('$NODE_MODULES/tap/package.json').version")
mkdir -p "$work/ntap"
cd "$work/ntap"
ln -s "$NODE_MODULES" node_modules
echo '{"name":"ntap","version":"1.0.0","private":true}' >package.json
for f in mix pass forge; do cp "$src/ntap_$f.js" "$f.test.js"; done
for f in mix pass forge; do
  ./node_modules/.bin/tap --reporter=tap --disable-coverage "$f.test.js" \
    >"$here/tap-$ntv-$f.txt" 2>/dev/null
done

# --- cargo test and nextest, coloured ----------------------------------------------------
cv=$(cargo --version | cut -d' ' -f2)
xv=$(cargo nextest --version | head -1 | cut -d' ' -f2)
mkdir -p "$work/cargo/src"
cp "$src/cargo_Cargo.toml" "$work/cargo/Cargo.toml"
cp "$src/cargo_lib.rs" "$work/cargo/src/lib.rs"
cd "$work/cargo"
RUST_BACKTRACE=0 CARGO_TARGET_DIR="$work/cargo/target" cargo test --color always -- --color always \
  >"$here/cargo-$cv-color.txt" 2>/dev/null
RUST_BACKTRACE=0 CARGO_TARGET_DIR="$work/cargo/target" cargo nextest run --color always --no-fail-fast \
  >/dev/null 2>"$here/nextest-$xv-color.txt"

echo "pytest $v8 and $v9, django $dv, node $nv, tape $tv, tap $ntv, cargo $cv, nextest $xv"
