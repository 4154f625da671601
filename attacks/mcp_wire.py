"""The MCP wire for the red14b attacks, raw JSON-RPC (no SDK, so malformed messages
can be sent): stdio against `evident mcp`, Streamable HTTP against `/mcp` under serve."""
import json, subprocess, threading, time, urllib.request, urllib.error, http.client

INIT = {"protocolVersion": "2025-06-18", "capabilities": {},
        "clientInfo": {"name": "red14b", "version": "0"}}


class Stdio:
    """`evident mcp …` on pipes; send() lines, wait for responses by id."""

    def __init__(self, argv, env=None):
        self.p = subprocess.Popen(argv, stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                                  stderr=subprocess.PIPE, env=env)
        self.by_id, self.other, self.lock = {}, [], threading.Lock()
        self.err = []
        threading.Thread(target=self._read, daemon=True).start()
        threading.Thread(target=lambda: self.err.extend(self.p.stderr), daemon=True).start()

    def _read(self):
        for line in self.p.stdout:
            try:
                v = json.loads(line)
            except ValueError:
                v = {"not_json": line[:200].decode("utf-8", "replace")}
            with self.lock:
                if isinstance(v, dict) and v.get("id") is not None and ("result" in v or "error" in v):
                    self.by_id[v["id"]] = v
                else:
                    self.other.append(v)

    def raw(self, data: bytes):
        self.p.stdin.write(data)
        self.p.stdin.flush()

    def send(self, msg):
        self.raw((json.dumps(msg) + "\n").encode())

    def call(self, i, method, params=None, timeout=60):
        m = {"jsonrpc": "2.0", "id": i, "method": method}
        if params is not None:
            m["params"] = params
        self.send(m)
        return self.wait(i, timeout)

    def wait(self, i, timeout=60):
        end = time.time() + timeout
        while time.time() < end:
            with self.lock:
                if i in self.by_id:
                    return self.by_id[i]
            if self.p.poll() is not None:
                time.sleep(0.2)
                with self.lock:
                    return self.by_id.get(i)
            time.sleep(0.02)
        return None

    def init(self):
        r = self.call(0, "initialize", INIT)
        self.send({"jsonrpc": "2.0", "method": "notifications/initialized"})
        return r

    def close(self):
        try:
            self.p.stdin.close()
        except Exception:
            pass
        try:
            self.p.wait(10)
        except Exception:
            self.p.kill()


def tool(name, args):
    return {"name": name, "arguments": args}


class Http:
    """One MCP session at BASE/mcp with a bearer token (the older handshake)."""

    def __init__(self, base, token, timeout=120):
        self.base, self.token, self.sid, self.timeout = base, token, None, timeout

    def post(self, msg):
        h = {"Content-Type": "application/json", "Accept": "application/json, text/event-stream",
             "Authorization": f"Bearer {self.token}", "MCP-Protocol-Version": "2025-06-18"}
        if self.sid:
            h["Mcp-Session-Id"] = self.sid
        req = urllib.request.Request(self.base + "/mcp", data=json.dumps(msg).encode(), headers=h)
        try:
            r = urllib.request.urlopen(req, timeout=self.timeout)
        except urllib.error.HTTPError as e:
            return e.code, [{"http_error": e.read().decode("utf-8", "replace")[:500]}]
        sid = r.headers.get("Mcp-Session-Id")
        if sid:
            self.sid = sid
        body = r.read().decode()
        out = []
        if r.headers.get("Content-Type", "").startswith("text/event-stream"):
            for line in body.splitlines():
                if line.startswith("data:") and line[5:].strip():
                    try:
                        out.append(json.loads(line[5:]))
                    except ValueError:
                        pass
        elif body.strip():
            out.append(json.loads(body))
        return r.status, out

    def init(self):
        s, out = self.post({"jsonrpc": "2.0", "id": 0, "method": "initialize", "params": INIT})
        self.post({"jsonrpc": "2.0", "method": "notifications/initialized"})
        return s, out

    def call(self, i, method, params=None):
        m = {"jsonrpc": "2.0", "id": i, "method": method}
        if params is not None:
            m["params"] = params
        s, out = self.post(m)
        for v in out:
            if isinstance(v, dict) and v.get("id") == i:
                return v
        return {"status": s, "out": out}


def result_of(resp):
    """(structuredContent or None, isError, text) of a tools/call response."""
    r = (resp or {}).get("result") or {}
    text = " ".join(c.get("text", "") for c in r.get("content", []) if isinstance(c, dict))
    return r.get("structuredContent"), bool(r.get("isError")), text
