#!/usr/bin/env bash
# The owner's contract checks the agent's app on loopback with the owner's token
# (`headers = { Authorization = { env = "API_TOKEN" } }`). The agent's app echoes the
# header it received back into what the check observes: the whole value (a JSON value
# and a response header), the token alone (the header value without "Bearer "), and
# base64, hex and reversed. Works when the header value or the token alone reaches the
# decision page or GET /v1/decisions/{id}. The transformed forms are reported, not
# counted: no reader can recognise every reversible transform of a value the agent's
# own server was sent (the agent has the token already; the ledger should not).
. "$(dirname "$0")/redweb_lib.sh"
SECRET="owner-tok-$(python3 -c 'import secrets; print(secrets.token_hex(12))')"
python3 - "$W/app.port" <<'PY' &
import base64, http.server, json, sys, urllib.parse
class H(http.server.BaseHTTPRequestHandler):
    def do_GET(self):
        a = self.headers.get("Authorization", "")
        t = a.split(" ", 1)[-1]
        body = json.dumps({"raw": a, "bare": t, "b64": base64.b64encode(t.encode()).decode(),
                           "hex": t.encode().hex(), "rev": t[::-1]}).encode()
        self.send_response(200)
        self.send_header("Content-Type", "application/json")
        self.send_header("X-Echo", a)
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)
    def log_message(self, *a): pass
s = http.server.HTTPServer(("127.0.0.1", 0), H)
open(sys.argv[1], "w").write(str(s.server_port))
s.serve_forever()
PY
APP_PID=$!
trap 'kill $APP_PID 2>/dev/null; cleanup' EXIT
for i in $(seq 50); do [ -s "$W/app.port" ] && break; sleep 0.1; done
cat > "$W/contracts/health.toml" <<TOML
[policy]
id = "health"
requires = ["endpoint_health"]
max_age_s = 300

[[check]]
id = "app-health"
check_type = "endpoint_health"
covers = { kind = "code_change" }
source = { http = { url = "http://127.0.0.1:$(cat "$W/app.port")/status", headers = { Authorization = { env = "API_TOKEN" } }, pointers = { raw = "/raw", bare = "/bare", b64 = "/b64", hex = "/hex", rev = "/rev" }, headers_observed = ["X-Echo"] } }
expected = { status = 200 }
TOML
API_TOKEN="Bearer $SECRET" start_server
python3 - "$W/c.json" "$(now)" <<'PY'
import json, sys
json.dump({"spec_version": "0.1", "task": {"id": "app-health"},
           "mutations": [{"id": "m1", "kind": "code_change", "target": "src/app.py", "at": sys.argv[2]}]}, open(sys.argv[1], "w"))
PY
id="$(post /v1/gate/health "$W/c.json")" || exit 2
page "/decisions/$id" "$W/d.html"
page "/v1/decisions/$id" "$W/d.json"
python3 - "$W" "$SECRET" <<'PY'
import base64, sys, urllib.parse
w, s = sys.argv[1], sys.argv[2]
counted = {"the header value": "Bearer " + s, "the token alone": s}
transformed = {"base64": base64.b64encode(s.encode()).decode(), "hex": s.encode().hex(), "reversed": s[::-1]}
found, seen = [], []
for name, f in (("page", "d.html"), ("JSON", "d.json")):
    text = open(f"{w}/{f}", encoding="utf-8").read()
    found += [f"{form} on the {name}" for form, v in counted.items() if v in text]
    seen += [f"{form} on the {name}" for form, v in transformed.items() if v in text]
print("found:", ", ".join(found) or "neither the header value nor the token alone")
print("transformed forms (a known limit, not counted):", ", ".join(seen) or "none")
sys.exit(1 if found else 0)
PY
rc=$?
grep -o "<dt><code>[a-z_-]*</code></dt><dd><code class=\"val\">[^<]*" "$W/d.html" | head -12; grep -o "\"headers\":{[^}]*}" "$W/d.json" | head -2; grep -o "\"json\":{[^}]*}" "$W/d.json" | head -2
[ $rc = 1 ] && works "the owner's token is on the page and in the JSON"
held "the owner's token is not on the page or in the JSON"
