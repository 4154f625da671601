#!/usr/bin/env bash
# red11: the memory bound against a claim shaped by the agent. The repository's own
# benchmark (crates/evident-cli/tests/it/memory.rs) uses 75,000 ordinary evidence items
# (12× the file at peak, docs/ledger.md). The agent's claim is the same size (31 MB)
# but its one evidence item's observed_value holds 15.5 million zeros — every JSON
# value costs a serde_json::Value and more per copy. Works when `verify --no-record`
# peaks above 4× the file size (the issue's bound). Run against a release build for
# the time figure (a debug build is ~30× slower).
. "$(dirname "$0")/lib.sh"
python3 - "$W/claim.json" <<'PY'
import json, sys
at = "2026-12-01T16:00:00Z"
doc = {"spec_version": "0.1", "task": {"id": "t"},
       "mutations": [{"id": "m1", "kind": "state_write", "target": "a", "at": at}],
       "evidence": [{"check_type": "state_readback", "target": "a", "expected": {"v": 1},
                     "observed_value": {"v": 1, "big": None}, "at": at, "covers": ["m1"],
                     "verifier": {"id": "x", "kind": "independent"}}],
       "policy": {"id": "d", "requires": ["state_readback"], "max_age_s": 300}}
s = json.dumps(doc).replace('"big": null', '"big": [' + ",".join(["0"] * 15_500_000) + "]")
open(sys.argv[1], "w").write(s)
PY
size=$(stat -c %s "$W/claim.json")
/usr/bin/time -f "%e %M" "$EVIDENT" verify "$W/claim.json" --now 2026-12-01T16:00:05Z --no-record > /dev/null 2> "$W/time.txt"
read -r secs kb < <(tail -1 "$W/time.txt")
ratio=$(( kb * 1024 / size ))
echo "claim $((size / 1000000)) MB: $secs s, peak RSS $((kb / 1024)) MiB (${ratio}× the file)"
if [ "$ratio" -gt 4 ]; then echo "ATTACK WORKS: red11_claim_memory"; exit 1; fi
echo "held: red11_claim_memory"; exit 0
