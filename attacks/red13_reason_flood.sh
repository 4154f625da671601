#!/usr/bin/env bash
# Every change git shows that no call in the transcript names is a finding, and every
# finding went into the refusal reason: 20,000 untracked files the agent makes give a
# reason of megabytes on the hook's stdout — more than an agent takes as a hook's
# answer (an output it cannot use is a hook failure, and a failed hook lets the stop
# through). The reason is bounded: the first findings, then how many more.
. "$(dirname "$0")/red13_lib.sh"
setup_repo
hook claude-code "$(event SessionStart)" || exit 2
printf 'def add(a, b):\n    return 0\n' > "$REPO/calc.py"
mkdir "$REPO/gen" && (cd "$REPO/gen" && seq -f 'f%05g.txt' 1 "${N:-20000}" | xargs touch)
transcript
HOOK_KILL=300 hook claude-code "$(event Stop)" --timeout 240; d=$(decision)
size=$(stat -c %s "$W/out.json")
echo "answer $d, ${size} bytes on stdout"
[ "$size" -gt 200000 ] && works "the refusal reason grows without bound with the agent's files (${size} bytes)"
held "the reason is bounded"
