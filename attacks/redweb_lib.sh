# Shared helpers for the redweb attack scripts (the web page over the ledger). Each
# script plays the agent: it writes claim documents (every string in them) and posts
# them with the agent's write token; the contracts, the policy, the server's key and
# environment are the owner's. It starts a real `evident serve` on 127.0.0.1 with a
# temp contracts dir and SQLite ledger, reads the page over HTTP and, where what a
# person sees matters, in Debian's headless chromium (python playwright), saving
# screenshots to /tmp/redweb/. Exit 1 = the attack works, 0 = evident held, 2 = setup
# failed.
set -u
HERE="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
EVIDENT="${EVIDENT:-$HERE/../target/debug/evident}"
[ -x "$EVIDENT" ] || { echo "build evident first (cargo build -p evident)"; exit 2; }
W="$(mktemp -d /tmp/redweb-XXXXXX)"
SHOTS="${SHOTS:-/tmp/redweb}"
mkdir -p "$SHOTS" "$W/contracts"
SERVER_PID=""
cleanup() { [ -n "$SERVER_PID" ] && kill "$SERVER_PID" 2>/dev/null; wait 2>/dev/null; rm -rf "$W"; }
trap cleanup EXIT

# The owner's side: a refuting SQLite contract "billing" (account 4472's zip is 10002,
# the contract expects 94107), a policy, a token for the agent, the server's key.
python3 - "$W" <<'PY' || exit 2
import sqlite3, sys, hashlib, secrets, json
w = sys.argv[1]
c = sqlite3.connect(f"{w}/contracts/billing.db")
c.executescript("CREATE TABLE accounts(id TEXT PRIMARY KEY, billing_zip TEXT); INSERT INTO accounts VALUES('4472','10002');")
c.commit()
open(f"{w}/contracts/billing.toml", "w").write('''
[policy]
id = "billing"
requires = ["state_readback"]
max_age_s = 300
on_unverified = "block"

[[check]]
id = "zip-4472"
check_type = "state_readback"
covers = { target = "accounts/4472" }
source = { sqlite = { path = "billing.db", query = "SELECT billing_zip FROM accounts WHERE id = ?1", params = ["4472"] } }
expected = { billing_zip = "94107", row_count = 1 }
''')
tok = "evt_" + secrets.token_hex(32)
open(f"{w}/token", "w").write(tok)
open(f"{w}/tokens.toml", "w").write(f'[[token]]\nname = "agent"\nsha256 = "{hashlib.sha256(tok.encode()).hexdigest()}"\n')
open(f"{w}/policy.json", "w").write(json.dumps({"id": "owner", "requires": ["state_readback"], "max_age_s": 300, "on_unverified": "block"}))
PY
TOKEN="$(cat "$W/token")"
"$EVIDENT" key generate --id evident-server --out "$W/server.key" >/dev/null || exit 2

start_server() {
  "$EVIDENT" serve --contracts "$W/contracts" --listen 127.0.0.1:0 --ledger "$W/ledger.db" \
    --tokens "$W/tokens.toml" --policy "$W/policy.json" --key "$W/server.key" "$@" \
    </dev/null >/dev/null 2>"$W/serve.log" &
  SERVER_PID=$!
  local i
  for i in $(seq 1 100); do
    BASE="$(grep -o 'listen=[0-9.:]*' "$W/serve.log" | head -1 | cut -d= -f2)"
    [ -n "$BASE" ] && { BASE="http://$BASE"; return 0; }
    sleep 0.1
  done
  echo "server did not start:"; cat "$W/serve.log"; exit 2
}

now() { date -u -d "${1:--2 sec}" +%Y-%m-%dT%H:%M:%SZ; }

# post PATH FILE: POSTs the claim with the agent's token; prints the record id.
post() {
  curl -s -o "$W/resp.json" -w '%{http_code}' -X POST "$BASE$1" \
    -H "Authorization: Bearer $TOKEN" -H 'Content-Type: application/json' \
    --data-binary @"$2" > "$W/code" || { echo "post failed"; exit 2; }
  python3 -c 'import json,sys; print(json.load(open(sys.argv[1]))["id"])' "$W/resp.json" 2>/dev/null \
    || { echo "no decision for $2: HTTP $(cat "$W/code") $(head -c 600 "$W/resp.json")" >&2; exit 2; }
}

# page PATH OUT: the page as curl sees it (headers in OUT.h).
page() { curl -s -D "$2.h" -o "$2" "$BASE$1" || { echo "GET $1 failed"; exit 2; }; }

# shot PATH NAME [WIDTH]: a full-page screenshot in chromium; prints the visible text
# of the page to $W/NAME.txt and the CSP violations / dialogs / failed requests to
# $W/NAME.problems.
shot() {
  python3 - "$BASE$1" "$SHOTS/$2.png" "$W/$2" "${3:-1280}" <<'PY' || { echo "browser failed"; exit 2; }
import sys
from playwright.sync_api import sync_playwright
url, png, out, width = sys.argv[1], sys.argv[2], sys.argv[3], int(sys.argv[4])
probs = []
with sync_playwright() as p:
    b = p.chromium.launch(executable_path="/usr/bin/chromium", args=["--no-sandbox"])
    pg = b.new_page(viewport={"width": width, "height": 900})
    pg.on("console", lambda m: probs.append(f"console {m.type}: {m.text}"))
    pg.on("pageerror", lambda e: probs.append(f"page error: {e}"))
    pg.on("dialog", lambda d: (probs.append(f"dialog: {d.message}"), d.dismiss()))
    pg.on("request", lambda r: "127.0.0.1" not in r.url and not r.url.startswith("data:") and probs.append(f"request out: {r.url}"))
    pg.goto(url, wait_until="load", timeout=60000)
    pg.wait_for_timeout(300)
    open(out + ".problems", "w").write("\n".join(probs))
    # What markup the page holds beyond its own: elements a claim string could have
    # made, event-handler and style attributes, links that leave the page's origin.
    dom = pg.evaluate("""() => {
      const n = s => document.querySelectorAll(s).length;
      const attrs = [...document.querySelectorAll('*')].flatMap(e => [...e.attributes].map(a => a.name))
      return {script: n('script'), img: n('img'), svg: n('svg'), iframe: n('iframe'), object: n('object, embed'),
        style: n('style'), link: n('link'), meta: n('meta'), base: n('base'), form: n('form'), input: n('input, textarea, button'),
        on_attrs: attrs.filter(a => a.startsWith('on')).length, style_attrs: n('[style]'),
        foreign_links: [...document.querySelectorAll('a[href]')].map(a => a.href).filter(h => !h.startsWith(location.origin + '/')),
        title: document.title};
    }""")
    import json
    open(out + ".dom.json", "w").write(json.dumps(dom))
    # After the DOM is read: taking a screenshot adds attributes of its own.
    pg.screenshot(path=png, timeout=60000)
    open(out + ".txt", "w").write(pg.locator("body").inner_text())
    b.close()
PY
}

works() { echo "ATTACK WORKS: $1"; exit 1; }
held() { echo "held: $1"; exit 0; }
