#!/usr/bin/env bash
# Make the server read or run a contract outside --contracts: a contract the owner
# keeps beside the directory (`$OWNER/secret.toml`, check id `secretcnry`) named by
# path tricks in the URL (encoded dots and slashes, backslashes, NUL, double
# encoding, a trailing extension, case, full-width letters) on both routes that
# take a name, and as the `name` / `contract` argument of the MCP tools.
. "$(dirname "$0")/serve_lib.sh"
CHECK='check_type = "state_readback"
covers = { target = "note.txt" }
source = { file = { path = "note.txt" } }
expected = { exists = false }'
printf '[policy]\nid = "files"\nrequires = ["state_readback"]\n\n[[check]]\nid = "note"\n%s\n' "$CHECK" > "$CONTRACTS/files.toml"
printf '[policy]\nid = "secret"\nrequires = ["state_readback"]\n\n[[check]]\nid = "secretcnry"\n%s\n' "$CHECK" > "$OWNER/secret.toml"
cp "$OWNER/secret.toml" "$OWNER/secret.json"
start_serve
CLAIM="{\"spec_version\":\"0.1\",\"task\":{\"id\":\"n\"},\"mutations\":[{\"id\":\"m1\",\"kind\":\"file_write\",\"target\":\"note.txt\",\"at\":\"$(now 2)\"}],\"evidence\":[]}"
bad=0
for n in '..%2fsecret' '%2e%2e%2fsecret' '%2E%2E%2Fsecret' '..%5csecret' '%2e%2e/secret' \
         'secret%00' '%252e%252e%252fsecret' 'files%2f..%2f..%2fsecret' '..%2f..%2fowner%2fsecret' \
         'files.toml' 'files%2etoml' 'FILES' '%EF%BD%86iles' '%2fsecret' "$(printf 'x%.0s' $(seq 65))" \
         '..;%2fsecret' 'files%20' '%20files' 'files%0a' '.%2e%2fsecret'; do
  for route in "GET /v1/contracts/$n" "POST /v1/gate/$n"; do
    set -- $route
    out="$(curl -s --path-as-is -o "$W/body" -w '%{http_code}' -X "$1" "$BASE$2" \
      -H "Authorization: Bearer $TOKEN" -H 'Content-Type: application/json' --data "$CLAIM")"
    if grep -q secretcnry "$W/body" || { [ "$out" = 200 ] && [ "$n" != FILES ]; }; then
      echo "  $1 $2 -> $out: $(head -c 200 "$W/body")"; bad=1
    fi
    case "$out" in 400|404|405) ;; *) echo "  $1 $2 -> $out (unexpected)";; esac
  done
done
python3 - "$BASE" "$TOKEN" "$HERE" "$OWNER" "$CLAIM" <<'PY' || bad=1
import json, sys
base, token, here, owner, claim = sys.argv[1:]
sys.path.insert(0, here)
from mcp_wire import Http, tool, result_of
h = Http(base, token); h.init()
bad = 0
for i, n in enumerate(["../secret", "..\\secret", owner + "/secret", "secret\u0000", "files/../../secret",
                       "files.toml", "%2e%2e%2fsecret", "ｆiles", "", "x" * 100000]):
    for t, args in (("get_contract", {"name": n}), ("submit_claim", {"contract": n, "claim": json.loads(claim)})):
        r = h.call(10 * i + (t == "submit_claim"), "tools/call", tool(t, args))
        sc, err, text = result_of(r)
        blob = json.dumps(r)
        if "secretcnry" in blob or (sc and not err):
            print("  MCP", t, repr(n)[:40], "->", blob[:200]); bad = 1
sys.exit(bad)
PY
[ $bad = 1 ] && { echo "ATTACK WORKS: a contract outside --contracts was read"; exit 1; }
echo "held: every name refused (400/404), nothing outside --contracts read"; exit 0
