#!/usr/bin/env bash
# Pages that try to hang or crash the gate: an alert() loop, a window.open flood, a
# first match whose outerHTML is 48 MB (over the 32 MiB DevTools message cap), a
# document that never finishes loading (a dripping body), a same-origin reload loop,
# a print() dialog, a fork-bomb of iframes, memory exhaustion. Each check has
# timeout_s = 10. Works if the gate runs past 120 s, exits other than 0/1/3, panics,
# or says verified.
. "$(dirname "$0")/lib.sh"
PAGE=18836
mkdir -p "$W/site"
page() { echo "<html><body>$2</body></html>" > "$W/site/$1.html"; }
page alert '<script>setTimeout(()=>{document.body.innerHTML="<div id=status>Paid</div>"; for(;;) alert(1)}, 0)</script>'
page popups '<script>for (let i=0;i<500;i++) window.open("/popups.html?"+i)</script><div id="status">Pending</div>'
page huge '<script>document.body.innerHTML = "<div id=status>Paid" + "x".repeat(48*1024*1024) + "</div>"</script>'
page reload '<div id="status">Paid</div><script>location.reload()</script>'
page print '<div id="status">Paid</div><script>print()</script>'
page frames '<script>function f(d){ for(let i=0;i<4;i++){ const x=document.createElement("iframe"); x.src="/frames.html?"+Math.random(); document.body.appendChild(x);} } f()</script><div id="status">Pending</div>'
page memory '<script>const a=[]; for(;;) a.push(new Array(1e7).fill(1))</script><div id="status">Paid</div>'
python3 - "$W/site" "$PAGE" <<'PY' &
import http.server, sys, functools, time
root, port = sys.argv[1], int(sys.argv[2])
class H(http.server.SimpleHTTPRequestHandler):
    def log_message(self, *a): pass
    def do_GET(self):
        if self.path.startswith("/drip"):
            self.send_response(200); self.send_header("Content-Type","text/html"); self.end_headers()
            self.wfile.write(b"<html><body><div id=status>Paid</div>"); self.wfile.flush()
            try:
                while True: time.sleep(1); self.wfile.write(b" "); self.wfile.flush()
            except Exception: return
        super().do_GET()
http.server.ThreadingHTTPServer(("127.0.0.1", port), functools.partial(H, directory=root)).serve_forever()
PY
P1=$!; sleep 1
{
echo '[policy]'; echo 'max_age_s = 300'
for p in alert popups huge reload print frames memory drip; do
url="http://127.0.0.1:$PAGE/$p.html"; [ $p = drip ] && url="http://127.0.0.1:$PAGE/drip"
cat <<T
[[check]]
id = "$p"
check_type = "dom_assertion"
covers = { kind = "browser_action" }
source = { browser = { url = "$url", selector = "#status", timeout_s = 10 } }
expected = { text = "Paid" }
T
done
} > "$ROOT/contract.toml"
KIND=browser_action C="$(claim orders/4471)"
start=$(date +%s)
timeout 120 "$EVIDENT" gate "$ROOT/contract.toml" "$C" --json --no-record --jobs 2 --timeout 60 > "$OWNER/out.json" 2>"$OWNER/err.txt"; code=$?
took=$(( $(date +%s) - start ))
kill $P1
sleep 2; left=$(pgrep -f "evident-browser-" | wc -l)
echo "gate exit $code state $(state) in ${took}s; chromium processes left: $left"
python3 -c 'import json,sys; d=json.load(open(sys.argv[1])); [print("%-8s" % c["check_id"], (c.get("observed") or {}).get("text","")[:20] if c.get("observed") else "", str(c.get("error"))[:150]) for c in d["gate"]["checks"]]' "$OWNER/out.json"
grep -i panic "$OWNER/err.txt" && code=101
case "$code" in 0) [ "$(state)" = verified ] && { echo "ATTACK WORKS: dom_hang (verified)"; exit 1; };; 1|3) ;; *) echo "ATTACK WORKS: dom_hang (exit $code)"; exit 1;; esac
[ "$left" -gt 0 ] && { echo "ATTACK WORKS: dom_hang (browser processes left)"; exit 1; }
echo "held: dom_hang"; exit 0
