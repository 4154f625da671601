#!/usr/bin/env bash
# Size and shape: claims within the server's 4 MiB body limit built to blow the page
# up or break its layout. (a) one evidence item with 250,000 expected keys (each key
# becomes a table row); (b) 200 mutations x 200 evidence items that each cover all
# of them (40,000 matrix cells, each repeating the finding's sentence, which quotes a
# 400-character verifier id); (c) unbroken
# 4,000-character strings in every field a heading, label or cell shows; (d) JSON
# nested 60 deep (30 objects of one-item arrays; serve refuses more than 64). Works when a page is over 10 MB, takes chromium over 60 s, or
# (c) makes the page scroll sideways at 390 px (only the matrix has its own box).
. "$(dirname "$0")/redweb_lib.sh"
start_server --body-limit 4194304
python3 - "$W" "$(now)" <<'PY'
import json, sys
w, at = sys.argv[1], sys.argv[2]
def base(task, muts, ev):
    return {"spec_version": "0.1", "task": {"id": task}, "mutations": muts, "evidence": ev}
m1 = [{"id": "m1", "kind": "state_write", "target": "accounts/4472", "at": at}]
keys = {f"k{i}": 0 for i in range(250000)}
json.dump(base("keys", m1, [{"check_type": "state_readback", "target": "accounts/4472", "expected": keys,
    "observed_value": {}, "at": at, "covers": ["m1"], "verifier": {"id": "v", "kind": "independent"}}]), open(f"{w}/a.json", "w"))
muts = [{"id": f"m{i}", "kind": "state_write", "target": f"t/{i}", "at": at} for i in range(200)]
ids = [m["id"] for m in muts]
ev = [{"check_type": "state_readback", "target": f"t/{i}", "expected": {"z": 1}, "observed_value": {"z": 1},
       "at": at, "covers": ids, "verifier": {"id": "v" * 400, "kind": "self_attested"}} for i in range(200)]
json.dump(base("matrix", muts, ev), open(f"{w}/b.json", "w"))
L = "W" * 4000
json.dump({"spec_version": "0.1", "task": {"id": "long" + L, "description": L, "requested_by": L}, "claimed_outcome": L,
    "mutations": [{"id": L, "kind": L, "target": L, "at": at}],
    "evidence": [{"check_type": L, "check_id": L, "target": L, "expected": {L: L}, "observed_value": {L: L, L + "x": L},
                  "observation_error": L, "at": at, "covers": [L], "verifier": {"id": L, "kind": "independent"}}],
    "policy": {"id": L, "requires": ["state_readback"]}}, open(f"{w}/c.json", "w"))
deep = "x"
for _ in range(30): deep = {"d": [deep]}
json.dump(base("deep", m1, [{"check_type": "state_readback", "target": "accounts/4472", "expected": {"d": deep},
    "observed_value": {"d": deep}, "at": at, "covers": ["m1"], "verifier": {"id": "v", "kind": "independent"}}]), open(f"{w}/d.json", "w"))
PY
fail=""
for x in a b c d; do
  ls -l "$W/$x.json" | awk '{printf "claim %s: %d bytes; ", "'$x'", $5}'
  id="$(post /v1/verify "$W/$x.json")" || exit 2
  t0=$(date +%s.%N); page "/decisions/$id" "$W/$x.html"; t1=$(date +%s.%N)
  size=$(stat -c %s "$W/$x.html")
  printf 'page #%s: %d bytes in %.2f s; ' "$id" "$size" "$(echo "$t1 - $t0" | bc)"
  [ "$size" -gt 10000000 ] && fail="$fail $x(page $size bytes)"
  if [ "$size" -lt 30000000 ]; then
    for wd in 390 1280; do
      t0=$(date +%s.%N)
      python3 - "$BASE/decisions/$id" "$SHOTS/bounded_${x}_$wd.png" "$wd" > "$W/sw" 2>&1 <<'PY' || fail="$fail $x(browser: $(tail -1 "$W/sw"))"
import sys
from playwright.sync_api import sync_playwright
url, png, width = sys.argv[1], sys.argv[2], int(sys.argv[3])
with sync_playwright() as p:
    b = p.chromium.launch(executable_path="/usr/bin/chromium", args=["--no-sandbox"])
    pg = b.new_page(viewport={"width": width, "height": 900})
    pg.goto(url, wait_until="load", timeout=60000)
    sw = pg.evaluate("document.documentElement.scrollWidth")
    pg.screenshot(path=png, timeout=60000)
    print(sw)
    b.close()
PY
      t1=$(date +%s.%N)
      sw=$(tail -1 "$W/sw")
      printf 'chromium %spx: scrollWidth %s, %.1f s; ' "$wd" "$sw" "$(echo "$t1 - $t0" | bc)"
      [ "$wd" = 390 ] && [ "$sw" -gt 390 ] 2>/dev/null && fail="$fail $x(scrolls sideways at 390 px: $sw)"
    done
  fi
  echo
done
[ -n "$fail" ] && works "unbounded or unreadable:$fail"
held "every page bounded and readable"
