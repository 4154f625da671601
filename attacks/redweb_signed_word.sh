#!/usr/bin/env bash
# The agent attaches junk as the signature of its own evidence item ("keyid":
# "evident-gate", "sig": "AAAA"). The verdict does not accept it (unauthenticated
# independence), but the check's line read "by evident-gate (independent, signed)":
# a person takes "signed" for authenticated. Works when an item whose signature the
# verdict did not accept is called signed.
. "$(dirname "$0")/redweb_lib.sh"
start_server
python3 - "$W/c.json" "$(now)" <<'PY'
import json, sys
at = sys.argv[2]
json.dump({"spec_version": "0.1", "task": {"id": "billing-4472"},
           "mutations": [{"id": "m1", "kind": "state_write", "target": "accounts/4472", "at": at}],
           "evidence": [{"check_type": "state_readback", "target": "accounts/4472", "expected": {"billing_zip": "94107"},
                         "observed_value": {"billing_zip": "94107"}, "at": at, "covers": ["m1"],
                         "verifier": {"id": "evident-gate", "kind": "independent"},
                         "signature": {"keyid": "evident-gate", "payloadType": "application/vnd.evident.evidence+json", "sig": "AAAA"}}]},
          open(sys.argv[1], "w"))
PY
id="$(post /v1/verify "$W/c.json")" || exit 2
grep -q '"state":"verified"' "$W/resp.json" && { echo "verified?"; exit 2; }
page "/decisions/$id" "$W/d.html"
grep -o 'by <span class="wrap">evident-gate</span> ([^)]*)' "$W/d.html"
grep -q 'evident-gate</span> (independent, signed)' "$W/d.html" && works "an unaccepted signature reads as signed"
held "an unaccepted signature is not called signed"
