# Shared helpers for the red14b attacks on `evident serve` and `evident mcp`. Each
# script plays the agent: it holds one write token (`agent`), writes claims, files in
# its contract root and processes on loopback; never the contracts dir, --policy,
# --trust, other tokens or the server's environment. Exit 1 = the attack works, 0 =
# evident held, 2 = setup failed.
set -u
HERE="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
EVIDENT="${EVIDENT:-$HERE/../target/debug/evident}"
[ -x "$EVIDENT" ] || { echo "build evident first (cargo build -p evident)"; exit 2; }
W="$(mktemp -d /tmp/red14b-XXXXXX)"
OWNER="$W/owner"; CONTRACTS="$OWNER/contracts"; ROOT="$CONTRACTS"
mkdir -p "$CONTRACTS"
SERVE_PID=""
cleanup() { [ -n "$SERVE_PID" ] && kill "$SERVE_PID" 2>/dev/null; wait 2>/dev/null; rm -rf "$W"; }
trap cleanup EXIT

now() { date -u -d "-${1:-1} sec" +%Y-%m-%dT%H:%M:%SZ; }

# The owner's token file: `agent` (the token this script holds) and `owner`
# (OWNER_TOKEN: only ever used to play another client, never to attack).
tokens() {
  local j
  j="$("$EVIDENT" token new agent --json)" || exit 2
  TOKEN="$(python3 -c 'import json,sys; print(json.loads(sys.argv[1])["token"])' "$j")"
  python3 -c 'import json,sys; print(json.loads(sys.argv[1])["entry"])' "$j" > "$OWNER/tokens.toml"
  j="$("$EVIDENT" token new owner --json)" || exit 2
  OWNER_TOKEN="$(python3 -c 'import json,sys; print(json.loads(sys.argv[1])["token"])' "$j")"
  python3 -c 'import json,sys; print(json.loads(sys.argv[1])["entry"])' "$j" >> "$OWNER/tokens.toml"
}

# start_serve [ARGS…]: evident serve on a free loopback port; sets PORT, BASE, TOKEN.
start_serve() {
  tokens
  PORT="$(python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])')"
  BASE="http://127.0.0.1:$PORT"
  "$EVIDENT" serve --contracts "$CONTRACTS" --listen "127.0.0.1:$PORT" \
    --ledger "$OWNER/ledger.db" --tokens "$OWNER/tokens.toml" "$@" \
    > "$OWNER/serve.out" 2> "$OWNER/serve.err" &
  SERVE_PID=$!
  for _ in $(seq 100); do
    curl -fs "$BASE/healthz" >/dev/null 2>&1 && return 0
    sleep 0.1
  done
  echo "serve did not start"; cat "$OWNER/serve.err"; exit 2
}

# rss KB of the server
rss() { awk '/VmRSS/ {print $2}' "/proc/$SERVE_PID/status" 2>/dev/null || echo 0; }

# The MCP wire, raw (no SDK): python3 "$HERE/mcp_wire.py" …
MCPW="$HERE/mcp_wire.py"
