#!/usr/bin/env bash
# Runs one fuzz target under libFuzzer on the stable toolchain (no cargo-fuzz needed):
#   fuzz/run.sh TARGET [libFuzzer flags...]     e.g. fuzz/run.sh claim -runs=1000000
# Builds with the coverage instrumentation cargo-fuzz would pass (no sanitizer, so no
# nightly), debug assertions and overflow checks on, then runs the target on
# fuzz/corpus/TARGET (new inputs land there; not tracked) seeded from fuzz/seeds/TARGET
# and the repository's own fixtures. A crash is written to fuzz/artifacts/TARGET/.
set -euo pipefail
cd "$(dirname "$0")"
# Its own target folder: these flags make every crate build differently.
export CARGO_TARGET_DIR="$PWD/target"
target="${1:?usage: fuzz/run.sh TARGET [libFuzzer flags]}"
shift
host="$(rustc -vV | sed -n 's/^host: //p')"
# An explicit --target keeps these flags off build scripts and proc macros.
RUSTFLAGS="${RUSTFLAGS:-} -Cpasses=sancov-module \
  -Cllvm-args=-sanitizer-coverage-level=4 \
  -Cllvm-args=-sanitizer-coverage-inline-8bit-counters \
  -Cllvm-args=-sanitizer-coverage-pc-table \
  -Cllvm-args=-sanitizer-coverage-trace-compares \
  --cfg fuzzing -Cdebug-assertions -Coverflow-checks" \
  cargo build --release --target "$host" -p evident-fuzz --bin "$target"

seeds=("seeds/$target" "regressions/$target")
existing=()
for d in "${seeds[@]}"; do [ -d "$d" ] && existing+=("$d"); done
mkdir -p "corpus/$target" "artifacts/$target"
exec "target/$host/release/$target" "corpus/$target" "${existing[@]}" \
  -artifact_prefix="artifacts/$target/" "$@"
