#!/usr/bin/env bash
# Get another request's decision through `Idempotency-Key`: `easy` verifies without
# the work (note.txt absent is what it wants), `files` needs note.txt, which the agent
# never wrote. The agent's requests: (1) the key of its own `easy` gate reused on
# `files` with the same body; (2) the key another client (the owner's token) used for
# a verified `easy` gate, sent by the agent to `files` and to `easy`; (3) the same key
# on /v1/verify; (4) 8 racing requests, one key, `easy` and `files` bodies mixed.
# Works if any `files` answer is verified.
. "$(dirname "$0")/serve_lib.sh"
mk() { printf '[policy]\nid = "%s"\nrequires = ["state_readback"]\n\n[[check]]\nid = "note"\ncheck_type = "state_readback"\ncovers = { target = "note.txt" }\nsource = { file = { path = "note.txt" } }\nexpected = { exists = %s }\n' "$1" "$2" > "$CONTRACTS/$1.toml"; }
mk easy false; mk files true
cat > "$OWNER/policy.json" <<'P'
{"id": "owner", "requires": ["state_readback"]}
P
start_serve --policy "$OWNER/policy.json"
CLAIM="{\"spec_version\":\"0.1\",\"task\":{\"id\":\"i\"},\"mutations\":[{\"id\":\"m1\",\"kind\":\"file_write\",\"target\":\"note.txt\",\"at\":\"$(now 2)\"}],\"evidence\":[]}"
post() { # TOKEN PATH KEY -> "code state id"
  curl -s -o "$W/r.json" -w '%{http_code}' -X POST "$BASE$2" -H "Authorization: Bearer $1" \
    -H 'Content-Type: application/json' -H "Idempotency-Key: $3" --data "$CLAIM" > "$W/code"
  echo "$(cat "$W/code") $(python3 -c 'import json,sys; d=json.load(open(sys.argv[1])); print(d.get("verdict",{}).get("state", d.get("type","?")), d.get("id","-"))' "$W/r.json" 2>/dev/null)"
}
bad=0
check() { echo "  $1: $2"; case "$1" in files*) case "$2" in *" verified "*) bad=1;; esac;; esac; }
check "easy  agent k1" "$(post "$TOKEN" /v1/gate/easy k1)"
check "files agent k1" "$(post "$TOKEN" /v1/gate/files k1)"
check "easy  owner k2" "$(post "$OWNER_TOKEN" /v1/gate/easy k2)"
check "files agent k2" "$(post "$TOKEN" /v1/gate/files k2)"
check "easy  agent k2" "$(post "$TOKEN" /v1/gate/easy k2)"
check "verify agent k1" "$(post "$TOKEN" /v1/verify k1)"
for i in $(seq 8); do
  if [ $((i % 2)) = 0 ]; then c=files; else c=easy; fi
  ( r="$(curl -s -X POST "$BASE/v1/gate/$c" -H "Authorization: Bearer $TOKEN" -H 'Content-Type: application/json' -H 'Idempotency-Key: race' --data "$CLAIM")"
    echo "$c $(python3 -c 'import json,sys; d=json.loads(sys.argv[1]); print(d.get("verdict",{}).get("state", d.get("type")), (d.get("contract") or {}).get("name"))' "$r")" ) >> "$W/race" &
  racers="${racers:-} $!"
done
wait $racers
while read -r c st name; do
  echo "  race $c -> $st ($name)"
  [ "$c" = files ] && [ "$st" = verified ] && bad=1
  [ "$st" = verified ] && [ "$name" != "$c" ] && [ "$name" != None ] && bad=1
done < "$W/race"
[ $bad = 1 ] && { echo "ATTACK WORKS: a files request got a verified decision"; exit 1; }
echo "held"; exit 0
