#!/usr/bin/env bash
# red11: the git witness. The agent owns the repository: its .git/config (and
# config.worktree, includes), .git/info/attributes and exclude, index flags, hooks,
# nested repositories. Each case leaves an uncommitted change and tries to make the
# owner's `clean = true` check verify; every case also plants a canary program in
# every config key that could run one. Works when a dirty tree verifies or a canary runs.
. "$(dirname "$0")/lib.sh"
CANARY="$W/canary"
cat > "$W/canary.sh" <<SH
#!/bin/sh
echo "\$0 \$*" >> "$CANARY"
cat
SH
chmod +x "$W/canary.sh"
C="$W/canary.sh"
works=0
fresh() {
  rm -rf "$ROOT"; mkdir -p "$ROOT"; cd "$ROOT" || exit 2
  git init -q . && git config user.email a@b && git config user.name a
  echo 'print(1)' > app.py; mkdir -p src; echo 'x = 1' > src/lib.py
  git add . && git commit -qm base
  cat > contract.toml <<'TOML'
[policy]
id = "p"
requires = ["state_readback"]

[[check]]
id = "clean"
check_type = "state_readback"
covers = { kind = "code_change" }
source = { git = { repo = "." } }
expected = { clean = true }
TOML
  # contract.toml itself is untracked: commit it so only the case's change is dirty.
  git add contract.toml && git commit -qm contract
}
plant() {
  # Canaries in every key that names a program (the hardening must blank each).
  for k in core.fsmonitor core.pager core.editor core.askPass core.sshCommand \
           core.gitProxy core.alternateRefsCommand credential.helper diff.external \
           gpg.program gpg.ssh.program gpg.ssh.defaultKeyCommand sequence.editor \
           interactive.diffFilter filter.x.clean filter.x.smudge filter.x.process \
           diff.x.textconv diff.x.command merge.x.driver core.hooksPath.ignored; do
    git config "$k" "$C $k"
  done
  git config filter.x.required true
  git config --unset core.hooksPath.ignored 2>/dev/null
  mkdir -p .git/hooks
  for h in post-index-change post-checkout pre-commit reference-transaction fsmonitor-watchman; do
    printf '#!/bin/sh\necho hook-%s >> %s\n' "$h" "$CANARY" > ".git/hooks/$h"; chmod +x ".git/hooks/$h"
  done
  printf '* filter=x diff=x merge=x\n' > .git/info/attributes
}
case_run() { # NAME: plant the canaries, gate, then judge
  plant; : > "$CANARY"
  local name="$1" code st
  c="$(KIND=code_change claim app.py)"
  "$EVIDENT" gate "$ROOT/contract.toml" "$c" --json --no-record > "$OWNER/out.json" 2>"$OWNER/err.txt"; code=$?
  st="$(state)"
  local why; why=$(python3 -c 'import json,sys; d=json.load(open(sys.argv[1])); e=[x for x in d["evidence"] if x.get("check_id")=="clean"]; print([(x.get("observed_value"), x.get("observation_error")) for x in e][-1:])' "$OWNER/out.json" 2>/dev/null | cut -c1-160)
  if [ "$code" = 0 ] && [ "$st" = verified ]; then echo "  WORKS $name: verified ($why)"; works=1; else echo "  held  $name: $st $why"; fi
  if [ -s "$CANARY" ]; then echo "  WORKS $name: canary ran: $(sort -u "$CANARY" | head -3 | tr '\n' ';')"; works=1; : > "$CANARY"; fi
}
fresh; echo 'print(2)' > app.py; git update-index --skip-worktree app.py; case_run skip-worktree
fresh; echo 'print(2)' > app.py; git update-index --assume-unchanged app.py; case_run assume-unchanged
fresh; echo 'print(2)' > app.py; touch -d '2020-01-01' app.py; git update-index --refresh >/dev/null 2>&1; git config core.ignoreStat true; git config core.checkStat minimal; git config core.trustctime false; case_run stat-cache
fresh; echo 'print(2)' > app.py; git worktree add -q "$W/shadow" HEAD 2>/dev/null; git config core.worktree "$W/shadow"; case_run core.worktree
fresh; echo 'print(2)' > app.py; git config extensions.worktreeConfig true; git config --worktree core.worktree "$W"; case_run config.worktree
fresh; echo 'print(2)' > app.py; printf '[core]\n\tworktree = %s\n' "$W" > .git/inc; git config include.path inc; case_run include-worktree
fresh; echo 'print(2)' > app.py; case_run filter-attr-dirty
fresh; echo evil > src/new.py; echo 'src/new.py' >> .git/info/exclude; case_run info-exclude
fresh; mkdir nested && git -C nested init -q && echo e > nested/e.py && git -C nested add . && git -C nested -c user.email=a@b -c user.name=a commit -qm x; case_run nested-repo
fresh; mkdir newdir && printf '*\n' > newdir/.gitignore && echo evil > newdir/evil.py; case_run self-ignoring-dir
fresh; printf 'src/*\n!src/lib.py\n' > .gitignore.tmp; echo evil > src/new.py; printf 'new.py\n.gitignore\n' > src/.gitignore; case_run untracked-gitignore
fresh; git config core.ignoreCase true; echo evil > APP.py; case_run ignorecase
fresh; git config core.sparseCheckout true; printf 'src/\n' > .git/info/sparse-checkout; echo 'print(2)' > app.py; case_run sparse-config
fresh; echo 'print(2)' > app.py; git config core.fileMode false; chmod +x src/lib.py; case_run filemode
fresh; ln -sf /nonexistent app.py.lnk; rm app.py; ln -s app.py.lnk app.py; case_run symlink-swap
fresh; h=$(git rev-parse HEAD); echo 'print(2)' > app.py; git add app.py; git -c core.hooksPath=/dev/null commit -qm fake; n=$(git rev-parse HEAD); git replace "$h" "$n" 2>/dev/null; git reset -q --soft "$h"; git reset -q; case_run replace-ref
# Honest twin: a clean tree with ordinary config (remote, branch, husky's hooksPath,
# Git LFS's filter) and every canary planted must still verify, no canary running.
fresh; git config remote.origin.url https://example.invalid/r.git; git config branch.main.remote origin
git config core.hooksPath .husky; git config filter.lfs.clean 'git-lfs clean -- %f'; git config filter.lfs.required true
plant; : > "$CANARY"
c="$(KIND=code_change claim app.py)"
"$EVIDENT" gate "$ROOT/contract.toml" "$c" --json --no-record > "$OWNER/out.json" 2>"$OWNER/err.txt"; code=$?
if [ "$code" = 0 ] && [ "$(state)" = verified ] && [ ! -s "$CANARY" ]; then echo "  twin  honest clean tree: verified"; else echo "  BROKEN twin: honest clean tree gave $(state) (exit $code)"; exit 2; fi
if [ "$works" = 1 ]; then echo "ATTACK WORKS: red11_git_witness"; exit 1; fi
echo "held: red11_git_witness"; exit 0
