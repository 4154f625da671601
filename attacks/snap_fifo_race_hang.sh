#!/usr/bin/env bash
# A process the agent left running watches a snapshotted directory (inotify). When the
# gate's walk starts reading files, it renames a FIFO over a file the walk listed
# (readdir said: regular file) but has not opened yet. open(O_RDONLY) on a FIFO with
# no writer blocks; the set read times out, but the blocking thread never ends and
# dropping the runtime waits for it: the gate never exits.
. "$(dirname "$0")/lib.sh"
mkdir -p "$ROOT/config"
python3 - "$ROOT/config" <<'PY'
import os,sys
for i in range(1200): open(os.path.join(sys.argv[1], "f%04d" % i), "wb").write(b"x" * (3_000_000 if i < 30 else 1))
PY
cat > "$ROOT/contract.toml" <<'T'
snapshot_max_age_s = 3600
[policy]
max_age_s = 300
[[check]]
id = "done"
check_type = "state_readback"
covers = { target = "done.txt" }
source = { file = { path = "done.txt" } }
expected = { exists = true }
[[snapshot]]
id = "config"
source = { files = { path = "config" } }
T
snapshot
echo done > "$ROOT/done.txt"
python3 - "$ROOT/config" "$W" <<'PY' &
import os, sys, ctypes, struct
d, w = sys.argv[1], sys.argv[2]
order = os.listdir(d)                      # getdents order, as the walk sees it
victims = order[100:]
libc = ctypes.CDLL(None, use_errno=True)
fd = libc.inotify_init1(0)
IN_ACCESS, IN_OPEN = 0x1, 0x20
libc.inotify_add_watch(fd, d.encode(), IN_ACCESS | IN_OPEN)
for i, v in enumerate(victims): os.mkfifo(os.path.join(w, "fifo%d" % i))
open(os.path.join(w, "ready"), "w").close()
while True:
    buf = os.read(fd, 65536)
    off = 0; hit = False
    while off < len(buf):
        wd, mask, cookie, ln = struct.unpack_from("iIII", buf, off)
        name = buf[off+16:off+16+ln].rstrip(b"\0").decode()
        off += 16 + ln
        if name and name not in victims: hit = True
    if hit:
        for i, v in enumerate(victims): os.rename(os.path.join(w, "fifo%d" % i), os.path.join(d, v))
        open(os.path.join(w, "swapped"), "w").write("%d files from %s" % (len(victims), victims[0]))
        break
PY
SW=$!
while [ ! -e "$W/ready" ]; do sleep 0.2; done
start=$(date +%s)
GATE_TIMEOUT=90 gate "$(claim done.txt)" --timeout 15; code=$?
took=$(( $(date +%s) - start ))
kill $SW 2>/dev/null; wait $SW 2>/dev/null
echo "swapped: $(cat "$W/swapped" 2>/dev/null || echo none); gate exit $code after ${took}s (--timeout 15)"
if [ "$code" = 124 ]; then echo "ATTACK WORKS: snap_fifo_race_hang (gate still running after 90 s)"; exit 1; fi
python3 -c 'import json,sys; d=json.load(open(sys.argv[1])); [print(c["check_id"], str(c.get("error"))[:200]) for c in d["gate"]["checks"] if c["check_id"].startswith("snapshot")]' "$OWNER/out.json"
echo "held (no hang): exit $code state $(state)"; exit 0
