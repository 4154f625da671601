#!/usr/bin/env bash
# Slow readers: the slowloris fix bounds a client that is slow to *send* (headers
# within --header-timeout, the body within --request-timeout, no idle keep-alive). A
# client that sends its requests at once and then never *reads* (a tiny receive
# window, 200 pipelined GET /openapi.json) leaves the server's write stalled. Do such
# connections live on past every deadline, so that --max-connections of them lock
# every other client out?
. "$(dirname "$0")/serve_lib.sh"
start_serve --max-connections 8 --header-timeout 2 --request-timeout 2
python3 - "$PORT" <<'PY'
import socket, sys, time, urllib.request, urllib.error
port = int(sys.argv[1])
req = f"GET /openapi.json HTTP/1.1\r\nHost: 127.0.0.1:{port}\r\n\r\n".encode() * 200
held = []
for _ in range(8):
    s = socket.socket()
    s.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 4096)
    s.connect(("127.0.0.1", port))
    s.setblocking(False)
    sent = 0
    end = time.time() + 3
    while sent < len(req) and time.time() < end:
        try:
            sent += s.send(req[sent:])
        except BlockingIOError:
            time.sleep(0.01)
    held.append(s)
time.sleep(10)  # five times every deadline the server has
def still_open(s):
    try:
        b = s.recv(1, socket.MSG_PEEK)
        return len(b) > 0  # data waiting (not read): the server did not close it... yet
    except BlockingIOError:
        return True
    except OSError:
        return False
n_open = sum(1 for s in held if still_open(s))
try:
    code = urllib.request.urlopen(f"http://127.0.0.1:{port}/healthz", timeout=5).status
except urllib.error.HTTPError as e:
    code = e.code
except Exception as e:
    code = f"failed ({e})"
print(f"after 10 s: {n_open} of 8 stalled connections still open; a fresh GET /healthz -> {code}")
sys.exit(1 if code != 200 else 0)
PY
rc=$?
[ $rc = 1 ] && { echo "ATTACK WORKS: stalled readers hold every connection past every deadline"; exit 1; }
[ $rc = 0 ] && { echo held; exit 0; }
exit 2
