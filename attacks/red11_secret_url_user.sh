#!/usr/bin/env bash
# red11: a token given as a URL's user name (`https://TOKEN@host`, GitHub's form; or
# Stripe's `https://KEY:@host`). The owner's contract reads the agent's app with
# url_env; reqwest sends the user name as Basic `TOKEN:`, and the app echoes it into
# the JSON field the check reads. Works when the token shows in --json, the report
# or the ledger.
. "$(dirname "$0")/lib.sh"
PORT=$((20000 + RANDOM % 20000))
cat > "$W/echo.py" <<'PY'
import http.server, json, base64, sys
class H(http.server.BaseHTTPRequestHandler):
    def do_GET(self):
        a = self.headers.get("Authorization", "")
        dec = base64.b64decode(a[6:]).decode() if a.startswith("Basic ") else ""
        body = json.dumps({"v": dec.split(":")[0], "raw": a}).encode()
        self.send_response(200); self.send_header("Content-Type", "application/json"); self.end_headers(); self.wfile.write(body)
    def log_message(self, *a): pass
http.server.HTTPServer(("127.0.0.1", int(sys.argv[1])), H).serve_forever()
PY
python3 "$W/echo.py" "$PORT" & SRV=$!
trap 'kill $SRV 2>/dev/null; rm -rf "$W"' EXIT
sleep 0.5
cat > "$ROOT/contract.toml" <<'TOML'
[policy]
id = "p"
requires = ["state_readback"]

[[check]]
id = "api"
check_type = "state_readback"
covers = { kind = "state_write" }
source = { http = { url_env = "HOOK_URL", pointers = { v = "/v", raw = "/raw" } } }
expected = { status = 200, json = { v = "ok" } }
TOML
TOKEN=ghp_Zq8TokenSecretValue0000
leaked=0
for u in "http://$TOKEN@127.0.0.1:$PORT/" "http://$TOKEN:@127.0.0.1:$PORT/"; do
  c="$(claim accounts/1)"
  HOOK_URL="$u" "$EVIDENT" gate "$ROOT/contract.toml" "$c" --json --key "$OWNER/owner.key" > "$OWNER/out.json" 2>"$OWNER/err.txt"
  HOOK_URL="$u" "$EVIDENT" gate "$ROOT/contract.toml" "$c" --key "$OWNER/owner.key" > "$OWNER/out.txt" 2>&1
  n=$(cat "$OWNER/out.json" "$OWNER/err.txt" "$OWNER/out.txt" | grep -c "Zq8TokenSecret\|Z2hwX1pxOFRva2VuU2VjcmV0")
  l=$("$EVIDENT" ledger export --ledger "$EVIDENT_LEDGER" 2>/dev/null | grep -c "Zq8TokenSecret\|Z2hwX1pxOFRva2VuU2VjcmV0")
  echo "$u: token in output lines: $n, in ledger export: $l"
  [ "$n" != 0 ] || [ "$l" != 0 ] && leaked=1
done
if [ "$leaked" = 1 ]; then echo "ATTACK WORKS: red11_secret_url_user"; exit 1; fi
echo "held: red11_secret_url_user"; exit 0
