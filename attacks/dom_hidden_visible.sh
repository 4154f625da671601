#!/usr/bin/env bash
# `visible` and `text` against a page that shows a person something else: the
# expected text "Paid" is in the element, but the person sees nothing or "Pending"
# (scale(0), clip-path, off-screen, transparent colour, ::after content over a
# zero-size text, an opaque overlay, a zero-size clipping parent, a shadow host
# without a slot). Works if any such check observes text "Paid" and visible true.
. "$(dirname "$0")/lib.sh"
PAGE=18826
mkdir -p "$W/site"
page() { echo "<html><body><h1>Order 4471</h1>$2</body></html>" > "$W/site/$1.html"; }
page scale '<div id="status" style="transform:scale(0)">Paid</div><div>Pending</div>'
page clip '<div id="status" style="clip-path:inset(50%)">Paid</div><div>Pending</div>'
page offscreen '<div id="status" style="position:absolute;left:-10000px">Paid</div><div>Pending</div>'
page transparent '<div id="status" style="color:transparent">Paid</div><div>Pending</div>'
page after '<style>#status{font-size:0} #status::after{content:"Pending";font-size:16px}</style><div id="status">Paid</div>'
page overlay '<div id="status">Paid</div><div style="position:fixed;inset:0;background:#fff;z-index:9">Pending</div>'
page zeroparent '<div style="width:0;height:0;overflow:hidden"><div id="status">Paid</div></div><div>Pending</div>'
page shadow '<div id="host"><div id="status">Paid</div></div><script>document.getElementById("host").attachShadow({mode:"closed"}).innerHTML="Pending"</script>'
page decoy '<div id="status" style="position:absolute;left:-10000px">Paid</div><div id="status">Pending</div>'
python3 -m http.server "$PAGE" --bind 127.0.0.1 --directory "$W/site" >/dev/null 2>&1 &
P1=$!; sleep 1
{
echo '[policy]'; echo 'max_age_s = 300'
for p in scale clip offscreen transparent after overlay zeroparent shadow decoy; do
cat <<T
[[check]]
id = "$p"
check_type = "dom_assertion"
covers = { kind = "browser_action" }
source = { browser = { url = "http://127.0.0.1:$PAGE/$p.html", selector = "#status", timeout_s = 20 } }
expected = { text = "Paid", visible = true }
T
done
} > "$ROOT/contract.toml"
KIND=browser_action C="$(claim orders/4471)"
timeout 300 "$EVIDENT" gate "$ROOT/contract.toml" "$C" --json --no-record --jobs 2 > "$OWNER/out.json" 2>"$OWNER/err.txt"; code=$?
kill $P1
echo "gate exit $code state $(state)"
python3 - "$OWNER/out.json" <<'PY'
import json,sys
d=json.load(open(sys.argv[1])); bad=0
for c in d["gate"]["checks"]:
    o=c.get("observed") or {}
    fooled = o.get("text")=="Paid" and o.get("visible") is True
    bad |= fooled
    print("%-12s text=%r visible=%r error=%s %s" % (c["check_id"], o.get("text"), o.get("visible"), str(c.get("error"))[:80], "FOOLED" if fooled else ""))
sys.exit(1 if bad else 0)
PY
r=$?
[ $r = 1 ] && { echo "ATTACK WORKS: dom_hidden_visible (a person sees no 'Paid', the gate sees it visible)"; exit 1; }
echo "held: dom_hidden_visible"; exit 0
