#!/usr/bin/env bash
# The agent pads its gate claim with 200+ evidence items of its own (and 200+
# mutations), so that the gate's evidence, appended after them, falls past the
# page's 200-item drawing limit: the contradicting check (zip-4472: observed 10002,
# expected 94107) and the uncovered mutation would not be drawn anywhere on the
# decision page -- not on the timeline, in the matrix, or among the checks.
. "$(dirname "$0")/redweb_lib.sh"
start_server
python3 - "$W/claim.json" "$(now)" <<'PY'
import json, sys
at = sys.argv[2]
muts = [{"id": f"pad{i}", "kind": "state_write", "target": f"notes/{i}", "at": at} for i in range(250)]
muts.append({"id": "m1", "kind": "state_write", "target": "accounts/4472", "at": at})
ev = [{"check_type": "state_readback", "check_id": f"pad-{i}", "target": f"notes/{i}",
       "expected": {"ok": True}, "observed_value": {"ok": True}, "at": at, "covers": [f"pad{i}"],
       "verifier": {"id": "agent", "kind": "self_attested"}} for i in range(250)]
json.dump({"spec_version": "0.1", "task": {"id": "billing-4472"}, "claimed_outcome": "done",
           "mutations": muts, "evidence": ev}, open(sys.argv[1], "w"))
PY
id="$(post /v1/gate/billing "$W/claim.json")" || exit 2
page "/decisions/$id" "$W/d.html"
grep -q 'id="state">refuted<' "$W/d.html" || { echo "not refuted?"; grep -o 'id="state">[a-z]*' "$W/d.html"; exit 2; }
shot "/decisions/$id" flood_hide
# Only what is drawn counts: the folded raw JSON of the record at the end is not it.
sed '/<section id="record">/,$d' "$W/d.html" > "$W/drawn.html"
gate_check=$(grep -c '<code>zip-4472</code>' "$W/drawn.html")
uncovered_m1=$(grep -c 'accounts/4472' "$W/drawn.html")
echo "decision #$id refuted; the gate's check zip-4472 drawn $gate_check time(s); mutation accounts/4472 named $uncovered_m1 time(s)"
[ "$gate_check" -ge 1 ] && grep -q 'class="check contradicts"' "$W/drawn.html" && [ "$uncovered_m1" -ge 1 ] \
  || works "the contradicting check / the uncovered mutation is not drawn on the page"
held "the contradicting check and the claimed mutation are drawn"
