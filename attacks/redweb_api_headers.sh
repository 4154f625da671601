#!/usr/bin/env bash
# The same header checks as redweb_headers.sh, on what evident-serve answers itself
# beside the page: the decision JSON a browser can be sent to (agent text in it: the
# claim's markup), the list JSON, and paths no route serves (the 404 problem). Each must say Content-Security-Policy default-src 'self' with
# frame-ancestors 'none' (no framing), X-Content-Type-Options: nosniff; the pages and
# the decision JSON must not be cached (Cache-Control: no-store). No header may carry
# agent text (a task id with CR/LF and a header line in it).
. "$(dirname "$0")/redweb_lib.sh"
start_server
python3 - "$W/c.json" "$(now)" <<'PY'
import json, sys
json.dump({"spec_version": "0.1", "task": {"id": "t\r\nSet-Cookie: pwned=1\r\nX-Agent: 1"},
           "mutations": [], "evidence": []}, open(sys.argv[1], "w"))
PY
id="$(post /v1/verify "$W/c.json")" || exit 2
fail=""
for p in "/v1/decisions/$id" "/v1/decisions" "/v1/decisions?task=x" "/nope" "/decisions/$id/"; do
  page "$p" "$W/h"
  code=$(head -1 "$W/h.h" | cut -d' ' -f2)
  ct=$(grep -i '^content-type:' "$W/h.h" | tr -d '\r' | cut -d' ' -f2-)
  miss=""
  grep -qi "^content-security-policy: default-src '\(self\|none\)'.*frame-ancestors 'none'" "$W/h.h" || miss="$miss csp"
  grep -qi '^x-content-type-options: nosniff' "$W/h.h" || miss="$miss nosniff"
  case "$p" in /assets/*) ;; *) grep -qi '^cache-control: .*no-store' "$W/h.h" || miss="$miss no-store";; esac
  grep -qi '^set-cookie\|^x-agent' "$W/h.h" && miss="$miss INJECTED-HEADER"
  echo "$p -> $code $ct${miss:+  MISSING:$miss}"
  [ -n "$miss" ] && fail="$fail $p($miss )"
done
[ -n "$fail" ] && works "headers missing on:$fail"
held "every API response carries CSP (no framing), nosniff and no-store"
