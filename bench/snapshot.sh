#!/usr/bin/env bash
# The snapshot benchmark (issue 22; docs/probes.md "Performance"): a repository of
# 10,000 tracked files (40 MB) beside a 1 GB ignored build directory, gated by a check
# whose command does nothing (`true`), so the figure is the snapshot's own cost. Run:
#   bench/snapshot.sh [EVIDENT_BINARY]
# and time the printed command with any whole-process timer (/usr/bin/time -v, hyperfine).
set -euo pipefail
EVIDENT="${1:-$(dirname "$0")/../target/release/evident}"
W="${BENCH_DIR:-${TMPDIR:-/tmp}/evident-bench-snapshot}"
if ! [ -d "$W/repo/.git" ]; then
  rm -rf "$W"; mkdir -p "$W/repo" "$W/owner"
  cd "$W/repo"
  git init -q -b main
  printf 'target/\n' > .gitignore
  python3 - <<'PY'
import os
for d in range(100):
    os.makedirs(f"src/m{d}", exist_ok=True)
    for f in range(100):
        with open(f"src/m{d}/f{f}.txt", "w") as fh:
            fh.write(("line %d of file %d/%d\n" % (0, d, f)) * 200)
os.makedirs("target/debug", exist_ok=True)
for i in range(16):
    with open(f"target/debug/blob{i}", "wb") as fh:
        fh.truncate(0)
        fh.write(os.urandom(64 * 1024 * 1024))
PY
  git add -A
  git -c user.name=b -c user.email=b@example.com commit -qm base
  echo changed >> src/m0/f0.txt
  cat > "$W/owner/contract.toml" <<TOML
[policy]
id = "bench-snapshot"
requires = ["test_run"]

[[check]]
id = "nothing"
check_type = "test_run"
covers = { kind = "code_change" }
source = { command = { argv = ["true"], inherit_env = ["PATH"], timeout_s = 300, protect = { base = "@baseline", paths = ["src/m1/**"] } } }
expected = { exit_code = 0 }
TOML
  cat > "$W/claim.json" <<JSON
{"spec_version":"0.1","task":{"id":"bench","requested_by":"user","description":"bench"},
 "mutations":[{"id":"m1","kind":"code_change","target":"src/m0/f0.txt","at":"2026-01-01T00:00:00Z"}],"evidence":[]}
JSON
fi
cd "$W"
echo "$EVIDENT gate $W/owner/contract.toml $W/claim.json --root $W/repo --baseline HEAD --no-record"
exec "$EVIDENT" gate "$W/owner/contract.toml" "$W/claim.json" --root "$W/repo" --baseline HEAD --no-record
