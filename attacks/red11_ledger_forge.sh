#!/usr/bin/env bash
# red11: the ledger lies where the agent can write it (as `--ledger .evident/ledger.db`
# in its tree does; the default of earlier versions). The owner's gate signs with its key and checkpoints to a file the agent
# cannot write. The agent: (a) appends a "verified" record of its own contract,
# unsigned and signed with its own key; (b) edits the refuted record to verified and
# re-hashes; (c) truncates the refuted tail; (d) swaps in another ledger the same gate
# key signed (an earlier copy holding a verified record); (e) re-signs nothing, but
# moves a genuine signature onto its forged record. Works when `ledger verify --trust
# gate.pub --checkpoint cp` exits 0 on any of them.
. "$(dirname "$0")/lib.sh"
L="$ROOT/.evident/ledger.db"; CP="$OWNER/checkpoints.jsonl"; mkdir -p "$ROOT/.evident"
"$EVIDENT" key generate --id agent --out "$W/agent.key" >/dev/null || exit 2
PUB="$OWNER/owner.key.pub"; [ -f "$PUB" ] || PUB="$(ls "$OWNER"/*.pub | head -1)"
cat > "$ROOT/contract.toml" <<'TOML'
[policy]
id = "p"
requires = ["state_readback"]

[[check]]
id = "f"
check_type = "state_readback"
covers = { kind = "file_write" }
source = { file = { path = "out.txt", text = true } }
expected = { text = "done\n" }
TOML
mkdir -p "$W/own" && cat > "$W/own/contract.toml" <<'TOML'
[policy]
id = "p"
requires = ["state_readback"]

[[check]]
id = "f"
check_type = "state_readback"
covers = { kind = "file_write" }
source = { file = { path = "out.txt", text = true } }
expected = { text = "whatever\n" }
TOML
echo whatever > "$W/own/out.txt"; echo "not done" > "$ROOT/out.txt"
c="$(KIND=file_write claim out.txt)"
# An earlier honest, verified run of the same task, into another ledger (same key).
echo done > "$ROOT/out.txt"
"$EVIDENT" gate "$ROOT/contract.toml" "$c" --key "$OWNER/owner.key" --ledger "$W/earlier.db" >/dev/null 2>&1
echo "not done" > "$ROOT/out.txt"
# The owner's gate now: refuted, signed, checkpointed.
"$EVIDENT" gate "$ROOT/contract.toml" "$c" --key "$OWNER/owner.key" --ledger "$L" --checkpoint "$CP" >/dev/null 2>&1
vrf() { "$EVIDENT" ledger verify --ledger "$1" --trust "$PUB" --checkpoint "$CP" >"$OWNER/v.txt" 2>&1; }
vrf "$L" || { echo "setup: the honest ledger does not verify: $(cat "$OWNER/v.txt")"; exit 2; }
echo "  twin  honest ledger: $(head -c 160 "$OWNER/v.txt")"
works=0
try() { # NAME LEDGER
  if vrf "$2"; then echo "  WORKS $1: $(head -c 200 "$OWNER/v.txt")"; works=1; else echo "  held  $1: $(head -c 200 "$OWNER/v.txt")"; fi
}
cp "$L" "$W/a.db"; "$EVIDENT" gate "$W/own/contract.toml" "$c" --ledger "$W/a.db" >/dev/null 2>&1; try "append unsigned" "$W/a.db"
cp "$L" "$W/b.db"; "$EVIDENT" gate "$W/own/contract.toml" "$c" --key "$W/agent.key" --ledger "$W/b.db" >/dev/null 2>&1; try "append agent-signed" "$W/b.db"
cp "$L" "$W/c.db"; python3 - "$W/c.db" <<'PY'
import sqlite3, sys, json, hashlib
c = sqlite3.connect(sys.argv[1])
rid, body, sig = c.execute("select id, body, signature from records order by id desc limit 1").fetchone()
body = body.replace('"refuted"', '"verified"')
h = hashlib.sha256(body.encode()).hexdigest()
c.execute("update records set body=?, state='verified', hash=? where id=?", (body, h, rid)); c.commit()
PY
try "edit + rehash" "$W/c.db"
cp "$W/earlier.db" "$W/d.db"; try "swap in an earlier copy" "$W/d.db"
cp "$L" "$W/e.db"; python3 - "$W/e.db" <<'PY'
import sqlite3, sys
c = sqlite3.connect(sys.argv[1]); c.execute("delete from records where id = (select max(id) from records)"); c.commit()
PY
try "truncate the tail" "$W/e.db"
# A forged record carrying the genuine signature of the refuted one.
cp "$L" "$W/f.db"; "$EVIDENT" gate "$W/own/contract.toml" "$c" --ledger "$W/f.db" >/dev/null 2>&1
python3 - "$W/f.db" <<'PY'
import sqlite3, sys
c = sqlite3.connect(sys.argv[1])
rows = c.execute("select id, signature from records order by id").fetchall()
c.execute("update records set signature=? where id=?", (rows[-2][1], rows[-1][0])); c.commit()
PY
try "genuine signature moved" "$W/f.db"
if [ "$works" = 1 ]; then echo "ATTACK WORKS: red11_ledger_forge"; exit 1; fi
echo "held: red11_ledger_forge"; exit 0
