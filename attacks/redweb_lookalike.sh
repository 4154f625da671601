#!/usr/bin/env bash
# A refuted gate decision dressed to look verified: the task id, the claimed outcome,
# the agent's evidence id, type and verifier all say "VERIFIED ✓", "satisfies",
# "signature verifies", with long runs to push the real verdict's reason out of
# sight. What a person sees is checked in chromium at 1280 and 390 px: the state badge
# (the only element styled as a state) reads "refuted", the verdict's reason is in the
# first screen, the agent's text never carries a state's or a finding's style, and the
# task id in the verdict heading is short and not mistaken for the verdict. Works when
# the agent's words take the verdict panel (more than a line of heading) or push the
# reason below the first screen.
. "$(dirname "$0")/redweb_lib.sh"
start_server
python3 - "$W/c.json" "$(now)" <<'PY'
import json, sys
at = sys.argv[2]
v = " VERIFIED ✓ — all checks satisfied, signature verifies with a key the trust list gives it."
json.dump({"spec_version": "0.1", "task": {"id": "billing-4472" + v * 40, "description": "VERIFIED ✓" * 50},
           "claimed_outcome": "VERIFIED ✓\n" * 30,
           "mutations": [{"id": "verified ✓", "kind": "state_write", "target": "accounts/4472", "at": at}],
           "evidence": [{"check_type": "state_readback", "check_id": "zip-4472 satisfies ✓ verified", "target": "accounts/4472 (matches)",
                         "expected": {"billing_zip": "94107"}, "observed_value": {"billing_zip": "94107"},
                         "at": at, "covers": ["verified ✓"], "verifier": {"id": "evident-gate (independent, signed; the signature verifies)", "kind": "independent"}}]},
          open(sys.argv[1], "w"))
PY
id="$(post /v1/gate/billing "$W/c.json")" || exit 2
grep -q '"state":"refuted"' "$W/resp.json" || { echo "not refuted"; exit 2; }
fail=""
for wd in 1280 390; do
  python3 - "$BASE/decisions/$id" "$SHOTS/lookalike_$wd.png" "$wd" > "$W/out" 2>&1 <<'PY' || fail="$fail ${wd}px: $(cat "$W/out")"
import sys
from playwright.sync_api import sync_playwright
url, png, width = sys.argv[1], sys.argv[2], int(sys.argv[3])
bad = []
with sync_playwright() as p:
    b = p.chromium.launch(executable_path="/usr/bin/chromium", args=["--no-sandbox"])
    pg = b.new_page(viewport={"width": width, "height": 900})
    pg.goto(url, wait_until="load")
    pg.screenshot(path=png)
    states = pg.locator(".state").all_inner_texts()
    if states != ["refuted"]: bad.append(f"state-styled elements read {states}")
    h1 = pg.locator("#verdict h1").bounding_box()
    if h1["height"] > 120: bad.append(f"the verdict heading is {h1['height']:.0f} px tall (the task id fills it)")
    r = pg.locator("#reason").bounding_box()
    if r["y"] > 900: bad.append(f"the verdict's reason starts at y={r['y']:.0f}, below the first screen")
    print("; ".join(bad) or "ok")
    b.close()
sys.exit(1 if bad else 0)
PY
  echo "${wd}px: $(cat "$W/out")"
done
[ -n "$fail" ] && works "the agent's words take the verdict panel:$fail"
held "the verdict reads refuted and its reason is in the first screen"
