# Shared helpers for the red16 attack scripts. Each attack script exits 1 when the
# attack WORKS (evident said verified / leaked / hung), 0 when evident held, 2 when
# the setup itself failed.
set -u
HERE="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
EVIDENT="${EVIDENT:-$HERE/../target/debug/evident}"
[ -x "$EVIDENT" ] || { echo "build evident first (cargo build -p evident)"; exit 2; }
W="$(mktemp -d /tmp/red16-XXXXXX)"
OWNER="$W/owner"; ROOT="$W/work"
mkdir -p "$OWNER" "$ROOT"
export EVIDENT_LEDGER="$OWNER/ledger.db"
trap 'rm -rf "$W"' EXIT
"$EVIDENT" key generate --id owner-gate --out "$OWNER/owner.key" >/dev/null || exit 2

now() { date -u -d "-1 sec" +%Y-%m-%dT%H:%M:%SZ; }

# claim TARGET... : a claim document with one state_write mutation per target.
claim() {
  local at ms="" i=0 t
  at="$(now)"
  for t in "$@"; do
    [ -n "$ms" ] && ms="$ms,"
    ms="$ms{\"id\":\"m$i\",\"kind\":\"${KIND:-state_write}\",\"target\":\"$t\",\"at\":\"$at\"}"
    i=$((i+1))
  done
  echo "{\"spec_version\":\"0.1\",\"task\":{\"id\":\"t\"},\"mutations\":[$ms]}" > "$OWNER/claim.json"
  echo "$OWNER/claim.json"
}

snapshot() { "$EVIDENT" snapshot "$ROOT/contract.toml" --out "$OWNER/before.json" --key "$OWNER/owner.key" >/dev/null || { echo "snapshot failed"; exit 2; }; }

# gate CLAIM [args]: runs the gate with --before, prints the JSON to $OWNER/out.json,
# returns its exit code.
gate() {
  local c="$1"; shift
  timeout "${GATE_TIMEOUT:-120}" "$EVIDENT" gate "$ROOT/contract.toml" "$c" --json --no-record --key "$OWNER/owner.key" --before "$OWNER/before.json" "$@" > "$OWNER/out.json" 2>"$OWNER/err.txt"
}

state() { python3 -c 'import json,sys; print(json.load(open(sys.argv[1]))["verdict"]["state"])' "$OWNER/out.json" 2>/dev/null || echo "?"; }

sqlite() { python3 -c 'import sqlite3,sys; c=sqlite3.connect(sys.argv[1]); c.executescript(sys.argv[2]); c.commit()' "$1" "$2"; }

verdict() { # NAME CODE: the standard ending
  local name="$1" code="$2" st; st="$(state)"
  echo "$name: gate exit $code, state $st"
  if [ "$code" = 0 ] && [ "$st" = verified ]; then echo "ATTACK WORKS: $name"; exit 1; fi
  echo "held: $name"; exit 0
}
