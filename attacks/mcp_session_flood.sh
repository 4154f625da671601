#!/usr/bin/env bash
# MCP sessions never closed: each `initialize` at /mcp (the older handshake) opens a
# session the server keeps (a task, channels, the handler) until the client DELETEs
# it or it idles out (rmcp: 5 minutes). One token, one kept-alive connection, N
# initializes and no DELETE: how many sessions does the server hold at once, and
# what do they cost? Works when the server keeps more sessions open than
# --max-connections (the most a client may hold open at once) and its memory grows
# with them.
. "$(dirname "$0")/serve_lib.sh"
N="${N:-3000}"
start_serve --max-connections 64
before="$(rss)"
python3 - "$PORT" "$TOKEN" "$N" <<'PY' > "$W/sids"
import http.client, json, sys
port, token, n = int(sys.argv[1]), sys.argv[2], int(sys.argv[3])
c = http.client.HTTPConnection("127.0.0.1", port, timeout=30)
init = json.dumps({"jsonrpc": "2.0", "id": 0, "method": "initialize", "params": {
    "protocolVersion": "2025-06-18", "capabilities": {}, "clientInfo": {"name": "flood", "version": "0"}}})
for i in range(n):
    c.request("POST", "/mcp", init, {"Authorization": f"Bearer {token}", "Content-Type": "application/json",
              "Accept": "application/json, text/event-stream"})
    r = c.getresponse(); r.read()
    sid = r.getheader("Mcp-Session-Id")
    if r.status != 200 or not sid:
        print("refused at", i, r.status, file=sys.stderr)
        break
    print(sid)
PY
opened="$(wc -l < "$W/sids")"
sleep 1
after="$(rss)"
# Are the first ones still alive? (tools/list on the first session)
alive="$(python3 - "$PORT" "$TOKEN" "$(head -1 "$W/sids")" <<'PY'
import http.client, json, sys
port, token, sid = int(sys.argv[1]), sys.argv[2], sys.argv[3]
c = http.client.HTTPConnection("127.0.0.1", port, timeout=30)
h = {"Authorization": f"Bearer {token}", "Content-Type": "application/json",
     "Accept": "application/json, text/event-stream", "Mcp-Session-Id": sid, "MCP-Protocol-Version": "2025-06-18"}
c.request("POST", "/mcp", json.dumps({"jsonrpc": "2.0", "method": "notifications/initialized"}), h); c.getresponse().read()
c.request("POST", "/mcp", json.dumps({"jsonrpc": "2.0", "id": 1, "method": "tools/list"}), h)
r = c.getresponse(); print("yes" if r.status == 200 and b"submit_claim" in r.read() else "no")
PY
)"
echo "sessions opened: $opened of $N; first still alive: $alive; RSS ${before} KB -> ${after} KB ($(( (after-before) / (opened>0?opened:1) )) KB a session)"
# Held when the sessions stop at --max-mcp-sessions (default 256, about 18 MB).
if [ "$opened" -gt 256 ] && [ "$alive" = yes ]; then
  echo "ATTACK WORKS: $opened MCP sessions held open by one client (--max-connections 64)"; exit 1
fi
echo "held: sessions stop at --max-mcp-sessions ($opened)"; exit 0
