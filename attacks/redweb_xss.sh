#!/usr/bin/env bash
# Markup, attribute breaks, javascript: links, template syntax and CSS/meta/base
# injection in every string of a claim the agent writes (task, outcome, mutation ids,
# kinds and targets, evidence ids, types, targets, verifiers, expected/observed keys
# and values, observation errors, policy id), posted both to /v1/verify and
# /v1/gate/billing. In chromium: no dialog, no request leaves the server, and the page
# holds only its own elements (one script, two links, its own forms and metas).
. "$(dirname "$0")/redweb_lib.sh"
start_server
python3 - "$W" "$(now)" <<'PY'
import json, sys
w, at = sys.argv[1], sys.argv[2]
bad = ('<script>alert(1)</script>"><img src=x onerror=alert(2)>\'><svg onload=alert(3)>'
       '<a href="javascript:alert(4)">go</a></pre></code></textarea><style>*{display:none}</style>'
       '<meta http-equiv="refresh" content="0;url=http://198.51.100.1/"><base href="http://198.51.100.1/">'
       '<link rel=stylesheet href=http://198.51.100.1/x.css><iframe src=javascript:alert(5)></iframe>'
       '{{7*7}}{%raw%}&lt;script&gt;alert(6)&lt;/script&gt;&#x3c;img src=x onerror=alert(7)&#x3e;')
def s(tag): return tag + bad
for kind, path in (("verify", "v.json"), ("gate", "g.json")):
    doc = {"spec_version": "0.1",
           "task": {"id": s("t"), "description": s("d\n"), "requested_by": s("r")},
           "claimed_outcome": s("o\n\n"),
           "mutations": [{"id": s("m"), "kind": "state_write", "target": s("accounts/4472"), "at": at},
                         {"id": "m2", "kind": s("k"), "target": "javascript:alert(8)", "at": at}],
           "evidence": [{"check_type": "state_readback", "check_id": s("c"), "target": s("x"),
                         "expected": {s("ek"): s("ev"), "billing_zip": "94107"},
                         "observed_value": {s("ek"): s("ov"), "billing_zip": "94107", s("extra"): [s("a")]},
                         "observation_error": s("err"),
                         "at": at, "covers": [s("m"), "m2"], "verifier": {"id": s("v"), "kind": "independent"}},
                        {"check_type": s("ty"), "check_id": "javascript:alert(9)", "target": "x",
                         "expected": {"a": 1}, "observed_value": s("not-an-object"),
                         "at": at, "covers": [], "verifier": {"id": "v", "kind": "self_attested"}}],
           "policy": {"id": s("p"), "requires": ["state_readback"], "max_age_s": 300},
           "verdict": {"state": "verified", "reason": s("fake")}}
    json.dump(doc, open(f"{w}/{path}", "w"))
PY
vid="$(post /v1/verify "$W/v.json")" || exit 2
gid="$(post /v1/gate/billing "$W/g.json")" || exit 2
fail=""
for p in "/decisions/$vid" "/decisions/$gid" "/?kind=verify" "/?kind=gate" "/?kind=gate&task=%3Cscript%3Ealert(1)%3C%2Fscript%3E" "/?state=%3Cimg%20src%3Dx%3E"; do
  name="xss_$(echo "$p" | tr -c 'a-z0-9' _ | head -c 40)"
  shot "$p" "$name"
  python3 - "$W/$name" "$p" <<'PY' || fail="$fail $p"
import json, sys
out, p = sys.argv[1], sys.argv[2]
dom = json.load(open(out + ".dom.json")); probs = open(out + ".problems").read().strip()
bad = []
probs = [l for l in probs.splitlines() if not (p.startswith('/?state=') and 'status of 400' in l)]
if probs: bad.append('; '.join(probs))
for k, most in (("script", 1), ("img", 0), ("svg", 0), ("iframe", 0), ("object", 0), ("style", 0), ("link", 2), ("meta", 3), ("base", 0), ("on_attrs", 0), ("style_attrs", 0)):
    if dom[k] > most: bad.append(f"{dom[k]} {k}")
if dom["foreign_links"]: bad.append(f"links out: {dom['foreign_links']}")
print(p, "->", "; ".join(bad) or "only the page's own markup", "| forms", dom["form"], "inputs", dom["input"])
sys.exit(1 if bad else 0)
PY
done
# The raw text must still be on the page, as text.
grep -q '&lt;script&gt;alert(1)&lt;/script&gt;' "$W/resp.json" 2>/dev/null
page "/decisions/$vid" "$W/v.html"
grep -q '&#60;script&#62;alert(1)' "$W/v.html" || { echo "the hostile text is not shown as text"; exit 2; }
[ -n "$fail" ] && works "markup from a claim string on$fail"
held "every claim string is shown as text"
