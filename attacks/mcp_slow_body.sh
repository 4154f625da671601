#!/usr/bin/env bash
# The slowloris fix gives a request's *body* --request-timeout, but it is enforced
# where serve's own routes read their JSON; /mcp's body is read by the MCP SDK. POST
# /mcp with a valid token, `Content-Length: 4000`, then one byte every second: is the
# connection cut at --request-timeout, or do --max-connections such uploads lock
# every other client out?
. "$(dirname "$0")/serve_lib.sh"
start_serve --max-connections 4 --header-timeout 2 --request-timeout 2
python3 - "$PORT" "$TOKEN" <<'PY'
import socket, sys, threading, time, urllib.request, urllib.error
port, token = int(sys.argv[1]), sys.argv[2]
head = (f"POST /mcp HTTP/1.1\r\nHost: 127.0.0.1:{port}\r\nAuthorization: Bearer {token}\r\n"
        "Content-Type: application/json\r\nAccept: application/json, text/event-stream\r\n"
        "Content-Length: 4000\r\n\r\n").encode()
conns = []
for _ in range(4):
    s = socket.create_connection(("127.0.0.1", port)); s.sendall(head); conns.append(s)
cut = [False] * 4
def drip(i, s):
    for _ in range(12):
        try:
            s.sendall(b" ")
        except OSError:
            cut[i] = True; return
        time.sleep(1)
ts = [threading.Thread(target=drip, args=(i, s)) for i, s in enumerate(conns)]
[t.start() for t in ts]
time.sleep(8)  # four times the request deadline
try:
    code = urllib.request.urlopen(f"http://127.0.0.1:{port}/healthz", timeout=5).status
except urllib.error.HTTPError as e:
    code = e.code
except Exception as e:
    code = f"failed ({e})"
[t.join() for t in ts]
print(f"after 8 s of dripping: fresh GET /healthz -> {code}; uploads cut: {sum(cut)} of 4")
sys.exit(1 if code != 200 else 0)
PY
rc=$?
[ $rc = 1 ] && { echo "ATTACK WORKS: trickled /mcp bodies hold every connection past --request-timeout"; exit 1; }
[ $rc = 0 ] && { echo held; exit 0; }
exit 2
