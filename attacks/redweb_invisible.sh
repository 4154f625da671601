#!/usr/bin/env bash
# Invisible and direction-changing characters the terminal rule (controls, bidi
# overrides and isolates) lets through: zero-width space/joiners, word joiner, BOM,
# soft hyphen, LRM/RLM/ALM, line/paragraph separators, Hangul filler, Mongolian vowel
# separator, tag characters, combining grapheme joiner. The agent records decisions
# for task ids with one of them inside `billing-4472`: on the list and the decision
# page they read exactly as the real task, so a person cannot tell which decision is
# whose (e.g. one gated under another contract that passes) and the exact `task=`
# filter never finds them. Works when any of them reaches the page as itself instead
# of as `\u{..}`.
. "$(dirname "$0")/redweb_lib.sh"
start_server
CHARS="200b 200c 200d 2060 feff ad 200e 200f 61c 2028 2029 3164 180e e0041 34f"
python3 - "$W" "$(now)" $CHARS <<'PY'
import json, sys
w, at, chars = sys.argv[1], sys.argv[2], sys.argv[3:]
def doc(task, zip_seen):
    return {"spec_version": "0.1", "task": {"id": task}, "claimed_outcome": "Set the ZIP of 4472.",
            "mutations": [{"id": "m1", "kind": "state_write", "target": "accounts/4472", "at": at}],
            "evidence": [{"check_type": "state_readback", "target": "accounts/4472",
                          "expected": {"billing_zip": "94107"}, "observed_value": {"billing_zip": zip_seen},
                          "at": at, "covers": ["m1"], "verifier": {"id": "gitreal-gate/0.3", "kind": "independent"}}]}
json.dump(doc("billing-4472", "10002"), open(f"{w}/real.json", "w"))
for c in chars:
    json.dump(doc("billing" + chr(int(c, 16)) + "-4472", "94107"), open(f"{w}/fake-{c}.json", "w"))
PY
post /v1/gate/billing "$W/real.json" >/dev/null || exit 2
shown=""
for c in $CHARS; do
  id="$(post /v1/gate/billing "$W/fake-$c.json")" || exit 2
  page "/decisions/$id" "$W/d.html"
  python3 - "$W/d.html" "$c" <<'PY' || shown="$shown U+$c"
import sys, re
html, c = open(sys.argv[1], encoding="utf-8").read(), int(sys.argv[2], 16)
sys.exit(1 if chr(c) in html else 0)
PY
done
shot "/?kind=gate&limit=100" invisible_list
echo "gate list: $(grep -c 'billing-4472' "$W/invisible_list.txt") row(s) read exactly billing-4472; the real one is 1"
[ -n "$shown" ] && works "shown as themselves (invisible on the page):$shown"
held "every invisible or direction-changing character is shown as \\u{..}"
