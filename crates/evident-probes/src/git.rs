//! git through the git binary (exact git behaviour), hardened so that nothing the
//! repository's owner wrote into its config runs or redirects what git reads: no system,
//! user or XDG config, no inherited `GIT_*` variables, and every key that names a program
//! or another place to read from overridden on the command line (`-c` wins over every
//! config file). What cannot be overridden (`core.worktree`) is refused. The gate, the
//! close-out audit and anything else that asks git about an agent's repository use
//! [`command`] / [`std_command`] and [`neutralise`] from here: one git witness.

use std::path::{Path, PathBuf};

use serde_json::{Map, Value};
use sha2::{Digest, Sha256};

use crate::command::{Finished, Launch, resolve_program, run};
use crate::error::ProbeError;
use crate::spec::GitSpec;
use crate::{Context, Object, paths};

/// Config set on every git command line. Each either names a program git would run
/// (blanked, or `:` for editors, which git never starts) or a file it would read
/// (`/dev/null`), or turns off a cache or index extension whose content the
/// repository's writer chooses. Keys with a user-chosen middle part (filter drivers,
/// diff drivers, ...) are found in the repository's config by [`neutralise`].
pub const OVERRIDES: &[(&str, &str)] = &[
    // Programs.
    ("core.fsmonitor", "false"),
    ("core.hooksPath", "/dev/null"),
    ("core.pager", "cat"),
    ("core.editor", ":"),
    ("sequence.editor", ":"),
    ("core.askPass", ""),
    ("core.sshCommand", ""),
    ("core.gitProxy", ""),
    ("core.alternateRefsCommand", ""),
    ("credential.helper", ""),
    ("diff.external", ""),
    ("gpg.program", ""),
    ("gpg.openpgp.program", ""),
    ("gpg.x509.program", ""),
    ("gpg.ssh.program", ""),
    ("gpg.ssh.defaultKeyCommand", ""),
    ("commit.gpgSign", "false"),
    ("tag.gpgSign", "false"),
    ("push.gpgSign", "false"),
    ("log.showSignature", "false"),
    ("merge.verifySignatures", "false"),
    ("gc.auto", "0"),
    ("maintenance.auto", "false"),
    ("submodule.recurse", "false"),
    ("fetch.recurseSubmodules", "false"),
    ("init.templateDir", ""),
    ("interactive.diffFilter", ""),
    ("core.useReplaceRefs", "false"),
    // No network and no remote helpers: only local paths may be cloned.
    ("protocol.allow", "never"),
    ("protocol.file.allow", "always"),
    // Files read from elsewhere.
    ("core.attributesFile", "/dev/null"),
    ("core.excludesFile", "/dev/null"),
    ("gpg.ssh.allowedSignersFile", "/dev/null"),
    // Caches and index settings that make git skip looking at the work tree.
    ("core.untrackedCache", "false"),
    ("core.splitIndex", "false"),
    ("core.ignoreStat", "false"),
    // Case-insensitive matching would hide an untracked `APP.py` beside `app.py`.
    ("core.ignoreCase", "false"),
    ("core.sparseCheckout", "false"),
    ("core.commitGraph", "false"),
    ("core.multiPackIndex", "false"),
    ("color.ui", "false"),
];

/// The environment git runs with; nothing else of the caller's environment reaches
/// it (`GIT_DIR`, `GIT_WORK_TREE`, `GIT_CONFIG_*`, `GIT_EXTERNAL_DIFF`, `HOME`,
/// `XDG_CONFIG_HOME`... are all left out).
pub const ENV: &[(&str, &str)] = &[
    ("GIT_CONFIG_NOSYSTEM", "1"),
    ("GIT_CONFIG_GLOBAL", "/dev/null"),
    ("GIT_ATTR_NOSYSTEM", "1"),
    // Objects as committed: replace refs and grafts would let the repository's writer
    // show another object under a committed id.
    ("GIT_NO_REPLACE_OBJECTS", "1"),
    ("GIT_GRAFT_FILE", "/dev/null"),
    ("GIT_TERMINAL_PROMPT", "0"),
    ("GIT_ASKPASS", ""),
    ("GIT_PROTOCOL_FROM_USER", "0"),
    // Observing never writes to the repository (no index refresh).
    ("GIT_OPTIONAL_LOCKS", "0"),
    ("GIT_ADVICE", "0"),
    ("LC_ALL", "C"),
];

/// The environment for git: [`ENV`] plus the absolute entries of `PATH` when given.
pub fn env(path: Option<&str>) -> Vec<(String, String)> {
    let mut v: Vec<(String, String)> = ENV
        .iter()
        .map(|(k, v)| (k.to_string(), v.to_string()))
        .collect();
    if let Some(p) = absolute_path(path) {
        v.push(("PATH".into(), p));
    }
    v
}

/// `PATH` without relative entries (`.`, `bin`, an empty one): those would find a
/// `git` (or a program git starts) in whatever directory git runs in — the
/// repository's.
pub fn absolute_path(path: Option<&str>) -> Option<String> {
    path.map(|p| {
        p.split(':')
            .filter(|d| d.starts_with('/'))
            .collect::<Vec<_>>()
            .join(":")
    })
}

/// Arguments placed before the subcommand: `--no-pager` and `-c key=value` for every
/// key of [`OVERRIDES`].
pub fn global_args() -> Vec<String> {
    let mut v = vec!["--no-pager".to_string()];
    for (k, val) in OVERRIDES {
        v.push("-c".into());
        v.push(format!("{k}={val}"));
    }
    v
}

/// A blocking git command in `dir`: cleared environment plus [`env`], [`global_args`]
/// already given; add the repository's [`neutralise`] arguments, then the subcommand.
pub fn std_command(program: &Path, dir: &Path, path: Option<&str>) -> std::process::Command {
    let mut c = std::process::Command::new(program);
    c.env_clear()
        .envs(env(path))
        .args(global_args())
        .current_dir(dir)
        .stdin(std::process::Stdio::null());
    c
}

/// [`std_command`] for tokio.
pub fn command(program: &Path, dir: &Path, path: Option<&str>) -> tokio::process::Command {
    std_command(program, dir, path).into()
}

/// Arguments that list the repository's effective config (includes followed) in the
/// form [`neutralise`] reads: run them with the hardened command in the repository.
pub const CONFIG_LIST_ARGS: &[&str] = &["config", "--null", "--list", "--includes"];

/// A repository config git cannot be told to ignore.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error(
    "the repository's config sets {key} ({why}); refused, since git would not read what it is asked about"
)]
pub struct Refusal {
    /// The key as git lists it (`core.worktree`).
    pub key: String,
    /// Why git would not then read what it is asked about, in words.
    pub why: &'static str,
}

/// Read the output of [`CONFIG_LIST_ARGS`] and return the `-c` arguments that blank
/// every key naming a program under a section the repository chose the name of
/// (`filter.<driver>.clean`, `diff.<driver>.textconv`, `merge.<driver>.driver`,
/// `credential.<url>.helper`, `remote.<name>.uploadpack` ...). Keys that cannot be
/// overridden are a [`Refusal`]: `core.worktree` points git at another work tree.
/// `include.path` / `includeIf.*.path` need nothing: what they include is listed here
/// and overridden like the rest, since the command line wins over every file.
pub fn neutralise(config_list: &[u8]) -> Result<Vec<String>, Refusal> {
    let mut out = Vec::new();
    for entry in config_list.split(|&b| b == 0).filter(|e| !e.is_empty()) {
        let entry = String::from_utf8_lossy(entry);
        let key = entry.split('\n').next().unwrap_or("");
        // Section and variable names are case-insensitive (git lists them lowercased);
        // a subsection keeps its case.
        let (section, rest) = key.split_once('.').unwrap_or((key, ""));
        let section = section.to_ascii_lowercase();
        let (sub, var) = match rest.rsplit_once('.') {
            Some((sub, var)) => (Some(sub), var.to_ascii_lowercase()),
            None => (None, rest.to_ascii_lowercase()),
        };
        if section == "core" && sub.is_none() && var == "worktree" {
            return Err(Refusal {
                key: "core.worktree".into(),
                why: "it points git at another work tree",
            });
        }
        let Some(sub) = sub else { continue };
        let blank = match section.as_str() {
            "filter" => matches!(var.as_str(), "clean" | "smudge" | "process"),
            "diff" => matches!(var.as_str(), "textconv" | "command"),
            "merge" => var == "driver",
            "credential" => var == "helper",
            "remote" => matches!(var.as_str(), "uploadpack" | "receivepack" | "vcs" | "proxy"),
            "difftool" | "mergetool" | "guitool" | "browser" | "man" => var == "cmd",
            "tar" => var == "command",
            "gpg" => var == "program",
            "http" => var == "proxy",
            _ => false,
        };
        let overridden = format!("{section}.{sub}.{var}");
        if blank && !out.iter().any(|a| a == &format!("{overridden}=")) {
            out.push("-c".to_string());
            out.push(format!("{overridden}="));
        }
        if section == "filter" && var == "required" {
            out.push("-c".to_string());
            out.push(format!("{overridden}=false"));
        }
    }
    Ok(out)
}

/// Largest blob a `git` source reads when it sets no `max_bytes` (64 MiB).
pub const DEFAULT_MAX_BLOB_BYTES: u64 = 64 * 1024 * 1024;
const KEEP: u64 = 64 * 1024;

struct Git {
    program: PathBuf,
    repo: PathBuf,
    env: Vec<(String, String)>,
    /// [`global_args`] plus the repository's [`neutralise`] arguments.
    args: Vec<String>,
}

impl Git {
    async fn run(&self, args: &[&str], keep: u64) -> Result<Finished, ProbeError> {
        self.run_env(args, keep, &[]).await
    }

    async fn run_env(
        &self,
        args: &[&str],
        keep: u64,
        extra_env: &[(String, String)],
    ) -> Result<Finished, ProbeError> {
        let args: Vec<String> = self
            .args
            .iter()
            .cloned()
            .chain(args.iter().map(|s| s.to_string()))
            .collect();
        let mut env = self.env.clone();
        env.extend(extra_env.iter().cloned());
        run(Launch {
            program: self.program.clone(),
            args: &args,
            cwd: &self.repo,
            env,
            keep,
            parse: false,
            digest_scrub: None,
            sandbox: None,
        })
        .await
    }

    /// Read the repository's config and add what neutralises it; refuse what cannot be.
    async fn harden(&mut self) -> Result<(), ProbeError> {
        let f = self.run(CONFIG_LIST_ARGS, MAX_CONFIG).await?;
        if f.exit_code != Some(0) {
            return Err(failed("git config --list", &f));
        }
        if f.stdout.truncated {
            return Err(ProbeError::Git {
                reason: format!("the repository's config exceeds {MAX_CONFIG} bytes"),
            });
        }
        let extra = neutralise(&f.stdout.kept).map_err(|r| ProbeError::Git {
            reason: r.to_string(),
        })?;
        self.args.extend(extra);
        Ok(())
    }
}

/// Largest config listing read (includes followed).
const MAX_CONFIG: u64 = 4 * 1024 * 1024;

fn first_line(b: &[u8]) -> String {
    String::from_utf8_lossy(b)
        .lines()
        .find(|l| !l.trim().is_empty())
        .unwrap_or("no message")
        .trim()
        .to_string()
}

fn failed(what: &str, f: &Finished) -> ProbeError {
    ProbeError::Git {
        reason: format!(
            "{what} failed (exit {}): {}",
            f.exit_code.map_or("signal".to_string(), |c| c.to_string()),
            first_line(&f.stderr.kept)
        ),
    }
}

pub(crate) fn check_rev(rev: &str) -> Result<(), ProbeError> {
    if rev.is_empty() || rev.starts_with('-') || rev.contains('\0') || rev.contains(':') {
        return Err(ProbeError::invalid(format!(
            "rev {rev:?} is not a revision (empty, starts with '-', or contains ':' or NUL)"
        )));
    }
    Ok(())
}

pub(crate) async fn observe(
    spec: &GitSpec,
    ctx: &Context,
    limit: std::time::Duration,
) -> Result<Object, ProbeError> {
    let rev = spec.rev.as_deref().unwrap_or("HEAD");
    check_rev(rev)?;
    let file = match &spec.file {
        Some(f) => {
            let rel = paths::relative(f)?;
            Some(rel.to_string_lossy().into_owned())
        }
        None => None,
    };
    let repo = paths::existing(&ctx.root, spec.repo.as_deref().unwrap_or("."), true)?;
    let path_var = absolute_path(ctx.env.get("PATH").map(String::as_str));
    let path_var = path_var.as_deref();
    let program = resolve_program("git", &repo, path_var)?;
    let mut git = Git {
        program,
        repo,
        env: env(path_var),
        args: global_args(),
    };
    git.harden().await?;
    observe_with(&git, rev, file.as_deref(), spec, limit, &ctx.secrets).await
}

async fn observe_with(
    git: &Git,
    rev: &str,
    file: Option<&str>,
    spec: &GitSpec,
    limit: std::time::Duration,
    ctx_secrets: &crate::Scrubber,
) -> Result<Object, ProbeError> {
    let mut obj = Map::new();
    // Is this a repository at all? Otherwise "no such commit" would be a lie.
    let top = git.run(&["rev-parse", "--git-dir"], KEEP).await?;
    if top.exit_code != Some(0) {
        return Err(failed("git rev-parse --git-dir", &top));
    }
    let spec_rev = format!("{rev}^{{commit}}");
    let f = git
        .run(
            &[
                "rev-parse",
                "--verify",
                "--quiet",
                "--end-of-options",
                &spec_rev,
            ],
            KEEP,
        )
        .await?;
    let commit = match f.exit_code {
        Some(0) => Some(String::from_utf8_lossy(&f.stdout.kept).trim().to_string()),
        Some(1) => None,
        _ => return Err(failed("git rev-parse", &f)),
    };
    obj.insert("commit_exists".into(), Value::Bool(commit.is_some()));
    obj.insert(
        "commit".into(),
        commit.clone().map_or(Value::Null, Value::from),
    );

    let bare = git
        .run(&["rev-parse", "--is-bare-repository"], KEEP)
        .await?;
    if String::from_utf8_lossy(&bare.stdout.kept).trim() == "false" {
        let found = clean(git, Budget::of(limit), 0).await?;
        obj.insert("clean".into(), Value::Bool(!found.dirty));
        if found.dirty {
            found.insert_into(&mut obj, ctx_secrets);
        }
    }

    if let (Some(file), Some(commit)) = (file, &commit) {
        // Every object on the way (commit, trees, blob) is read and hashed here: the
        // object store is the writer's, and git does not check that a loose object or
        // a pack holds the content its id names.
        let sha256 = is_sha256(git).await?;
        let root = commit_tree(git, commit, sha256).await?;
        let Some(entry) = find_path(git, &root, file, sha256).await? else {
            obj.insert("file_exists".into(), Value::Bool(false));
            return Ok(obj);
        };
        let kind = match entry.mode {
            0o40000 => Some("directory"),
            0o160000 => Some("submodule"),
            _ => None,
        };
        if let Some(kind) = kind {
            return Err(ProbeError::Git {
                reason: format!("{file:?} at {commit} is a {kind}, not a file"),
            });
        }
        let max = spec.max_bytes.unwrap_or(DEFAULT_MAX_BLOB_BYTES);
        let s = git.run(&["cat-file", "-s", &entry.oid], KEEP).await?;
        let size: u64 = String::from_utf8_lossy(&s.stdout.kept)
            .trim()
            .parse()
            .map_err(|_| failed("git cat-file -s", &s))?;
        if size > max {
            return Err(ProbeError::Oversize {
                what: format!("{file:?} at {commit} ({size} bytes)"),
                limit: max,
            });
        }
        let blob = read_objects(
            git,
            std::slice::from_ref(&entry.oid),
            "blob",
            sha256,
            max + 4096,
        )
        .await?
        .remove(&entry.oid)
        .ok_or_else(|| git_err(format!("blob {} of {file:?} is missing", entry.oid)))?;
        obj.insert("file_exists".into(), Value::Bool(true));
        // As scrubbed of the contract's secrets, as the file probe's `sha256` is, so
        // the two still compare (and a committed password does not publish its hash).
        let mut digest = crate::command::StreamDigest::new(Some(ctx_secrets));
        digest.update(&blob);
        obj.insert("file_sha256".into(), Value::from(digest.finish()));
    }
    Ok(obj)
}

/// Largest listing read from git (`ls-tree -r`, `ls-files`).
const MAX_LIST: u64 = 256 * 1024 * 1024;
/// Submodules are examined this many levels deep; deeper ones are an error.
const MAX_DEPTH: usize = 4;

/// `git -C TOP ARGS…` as owned arguments (the clean check runs git at the top).
fn at_top(top: &str, args: &[&str]) -> Vec<String> {
    ["-C", top]
        .iter()
        .chain(args)
        .map(|s| s.to_string())
        .collect()
}

fn git_err(reason: impl Into<String>) -> ProbeError {
    ProbeError::Git {
        reason: reason.into(),
    }
}

/// Run git, require exit 0 and a complete output.
async fn listing(
    git: &Git,
    args: &[&str],
    env: &[(String, String)],
) -> Result<Vec<u8>, ProbeError> {
    let f = git.run_env(args, MAX_LIST, env).await?;
    if f.exit_code != Some(0) {
        return Err(failed(
            &format!(
                "git {}",
                args.iter().find(|a| !a.starts_with('-')).unwrap_or(&"")
            ),
            &f,
        ));
    }
    if f.stdout.truncated {
        return Err(git_err(format!(
            "git {} printed more than {MAX_LIST} bytes",
            args[0]
        )));
    }
    Ok(f.stdout.kept)
}

fn show(path: &[u8]) -> String {
    String::from_utf8_lossy(path).into_owned()
}

/// At most this many paths that differ are named ([`UNCLEAN_PATHS`]); the rest are
/// counted ([`UNCLEAN_MORE`]).
pub const MAX_UNCLEAN_NAMED: usize = 20;
/// The observed keys beside `clean = false` (defined with the words rules make of
/// them, [`evident_rules::unclean`]).
pub use evident_rules::unclean::{UNCLEAN_MORE, UNCLEAN_PATHS, UNCLEAN_STOPPED};

/// How long `clean` may take: past `deadline` it is an error (the caller's time limit
/// ends then too), and once the tree is known to be unclean the search for more paths
/// to name stops at `naming`, well before, so naming them never costs the verdict.
#[derive(Clone, Copy)]
struct Budget {
    deadline: std::time::Instant,
    naming: std::time::Instant,
}

impl Budget {
    fn of(limit: std::time::Duration) -> Budget {
        let now = std::time::Instant::now();
        Budget {
            deadline: now + limit,
            naming: now + limit * 3 / 4,
        }
    }
}

/// What makes the work tree unclean: the paths that differ from HEAD (staged, changed,
/// missing, in a submodule, untracked, a `.gitignore` that hides itself), the first
/// [`MAX_UNCLEAN_NAMED`] named in the order found and the rest counted.
#[derive(Default)]
struct Unclean {
    /// Not clean (a path was found).
    dirty: bool,
    named: Vec<Vec<u8>>,
    more: u64,
    /// Why the search stopped before every path was looked at, after the first.
    stopped: Option<String>,
    /// Staged paths, named once even when the work tree differs there too.
    staged: std::collections::HashSet<Vec<u8>>,
}

impl Unclean {
    fn add(&mut self, path: &[u8]) {
        self.dirty = true;
        if self.staged.contains(path) {
            return;
        }
        if self.named.len() < MAX_UNCLEAN_NAMED {
            self.named.push(path.to_vec());
        } else {
            self.more += 1;
        }
    }

    fn add_staged(&mut self, path: &[u8]) {
        self.add(path);
        self.staged.insert(path.to_vec());
    }

    /// A submodule's findings, their paths already under the submodule's.
    fn merge(&mut self, inner: Unclean) {
        self.dirty |= inner.dirty;
        for p in &inner.named {
            self.add(p);
        }
        self.more += inner.more;
        if let Some(why) = inner.stopped {
            self.stop(why);
        }
    }

    fn stop(&mut self, why: impl Into<String>) {
        self.stopped.get_or_insert_with(|| why.into());
    }

    /// Once the tree is known to be unclean, whatever goes wrong next only ends the
    /// search for more paths to name: the result (`clean = false`) stands. Before that,
    /// it is the observation's error, as it always was.
    fn soft<T>(&mut self, r: Result<T, ProbeError>) -> Result<Option<T>, ProbeError> {
        match r {
            Ok(v) => Ok(Some(v)),
            Err(e) if self.dirty => {
                self.stop(e.to_string());
                Ok(None)
            }
            Err(e) => Err(e),
        }
    }

    /// Whether to go on looking: always while nothing is found; after that, while the
    /// naming budget lasts.
    fn go_on(&mut self, budget: Budget) -> bool {
        if self.dirty && std::time::Instant::now() > budget.naming {
            self.stop("the rest of the tree was not looked at in time");
            return false;
        }
        true
    }

    /// The observed keys: [`UNCLEAN_PATHS`] (scrubbed of the contract's secrets),
    /// [`UNCLEAN_MORE`], and [`UNCLEAN_STOPPED`] when the search stopped early.
    fn insert_into(&self, obj: &mut Map<String, Value>, secrets: &crate::Scrubber) {
        let named = self
            .named
            .iter()
            .map(|p| Value::from(secrets.scrub(&show(p))))
            .collect();
        obj.insert(UNCLEAN_PATHS.into(), Value::Array(named));
        obj.insert(UNCLEAN_MORE.into(), Value::from(self.more));
        if let Some(why) = &self.stopped {
            obj.insert(UNCLEAN_STOPPED.into(), Value::from(secrets.scrub(why)));
        }
    }
}

/// Is the work tree exactly the commit at HEAD: no staged change, no tracked file whose
/// content, type or executable bit differs, none missing, no untracked file? Computed
/// without trusting the index's flags or stat cache (which the repository's writer
/// sets) and without running any filter: content is hashed here, raw, and compared with
/// HEAD's blobs. `.gitignore` files are honoured, but only committed ones (an untracked
/// `.gitignore` that hides itself makes the tree unclean); `.git/info/exclude` and
/// `core.excludesFile` are not read. Refused (an error): skip-worktree entries (sparse
/// checkouts), and a differing file whose attributes name a content conversion git
/// would apply (a filter other than LFS, `text`, `eol`, `ident`...), since whether it
/// is clean depends on a program or rule this probe does not run — unless another path
/// already made the tree unclean.
///
/// Returns the paths that make it unclean ([`Unclean`]; clean when none). Every step
/// runs even after the first difference, to name the others, but from then on an
/// error or the naming budget only stops the search ([`Unclean::soft`]): whether the
/// tree is clean, and every error that decides it, is as if the probe had stopped at
/// the first difference.
async fn clean(git: &Git, budget: Budget, depth: usize) -> Result<Unclean, ProbeError> {
    let mut found = Unclean::default();
    let top = listing(git, &["rev-parse", "--show-toplevel"], &[]).await?;
    let top = PathBuf::from(
        String::from_utf8_lossy(&top)
            .trim_end_matches(['\n', '\r'])
            .to_string(),
    );
    let top_s = top.to_string_lossy().into_owned();
    let at = |args: &[&str]| at_top(&top_s, args);
    let run_at = |args: Vec<String>, env: Vec<(String, String)>| async move {
        let refs: Vec<&str> = args.iter().map(String::as_str).collect();
        listing(git, &refs, &env).await
    };
    let format = run_at(at(&["rev-parse", "--show-object-format"]), vec![]).await?;
    let sha256 = String::from_utf8_lossy(&format).trim() == "sha256";
    let head = git
        .run(
            &[
                "-C",
                &top_s,
                "rev-parse",
                "--verify",
                "--quiet",
                "HEAD^{commit}",
            ],
            KEEP,
        )
        .await?;
    let head = match head.exit_code {
        Some(0) => Some(
            String::from_utf8_lossy(&head.stdout.kept)
                .trim()
                .to_string(),
        ),
        Some(1) => None,
        _ => return Err(failed("git rev-parse HEAD", &head)),
    };

    // The index: flags first, then staged changes.
    let flags = run_at(at(&["ls-files", "-z", "-v"]), vec![]).await?;
    // With an unborn HEAD every entry is a staged change.
    let mut index_paths: Vec<&[u8]> = Vec::new();
    for e in flags.split(|&b| b == 0).filter(|e| !e.is_empty()) {
        let path = match e {
            [tag, b' ', path @ ..] => {
                if *tag == b'S' || *tag == b's' {
                    return Err(git_err(format!(
                        "{} is marked skip-worktree in the index (sparse checkout or update-index --skip-worktree): whether it is clean cannot be told",
                        show(path)
                    )));
                }
                path
            }
            _ => e,
        };
        if head.is_none() {
            index_paths.push(path);
        }
    }
    match &head {
        Some(_) => {
            let f = git
                .run(
                    &[
                        "-C",
                        &top_s,
                        "diff-index",
                        "--cached",
                        "--exit-code",
                        "--name-only",
                        "-z",
                        "--no-ext-diff",
                        "--no-textconv",
                        "HEAD",
                        "--",
                    ],
                    MAX_LIST,
                )
                .await?;
            match f.exit_code {
                Some(0) => {}
                Some(1) => {
                    for p in f.stdout.kept.split(|&b| b == 0).filter(|p| !p.is_empty()) {
                        found.add_staged(p);
                    }
                    // Differences with no name printed (cannot be): still unclean.
                    found.dirty = true;
                    if f.stdout.truncated {
                        found.stop(format!("the staged paths exceed {MAX_LIST} bytes"));
                    }
                }
                _ => return Err(failed("git diff-index --cached", &f)),
            }
        }
        None => index_paths.iter().for_each(|p| found.add_staged(p)),
    }
    drop(index_paths);

    // Tracked files, compared with HEAD's blobs by content.
    if !found.go_on(budget) {
        return Ok(found);
    }
    let tracked = match &head {
        Some(commit) => {
            let tree = async {
                let root = commit_tree(git, commit, sha256).await?;
                walk_tree(git, &root, sha256).await
            };
            match found.soft(tree.await)? {
                Some(t) => t,
                None => return Ok(found),
            }
        }
        None => Vec::new(),
    };
    let top_c = top.clone();
    let already = found.dirty;
    let compared = tokio::task::spawn_blocking(move || {
        compare_tree(&top_c, &tracked, sha256, budget, already)
    })
    .await
    .map_err(|e| git_err(format!("comparing the work tree failed: {e}")));
    let Some(compared) = found.soft(compared.and_then(|c| c))? else {
        return Ok(found);
    };
    for p in &compared.missing {
        found.add(p);
    }
    if let Some(why) = compared.stopped {
        found.stop(why);
        return Ok(found);
    }
    if !compared.differs.is_empty() {
        let r = dirty_after_conversion(git, &top, &top_s, &compared.differs, &mut found).await;
        found.soft(r)?;
    }
    for (path, oid) in &compared.gitlinks {
        if !found.go_on(budget) {
            return Ok(found);
        }
        let r = submodule_unclean(git, &top, path, oid, budget, depth).await;
        if let Some(inner) = found.soft(r)? {
            found.merge(inner);
        }
    }

    // Untracked files: everything not in HEAD (a private index built from it), minus
    // what committed .gitignore files ignore.
    if !found.go_on(budget) {
        return Ok(found);
    }
    let r = untracked(git, &top_s, head.is_some(), &mut found).await;
    found.soft(r)?;
    Ok(found)
}

/// Adds the untracked paths (and untracked `.gitignore` files that hide themselves).
async fn untracked(
    git: &Git,
    top_s: &str,
    has_head: bool,
    found: &mut Unclean,
) -> Result<(), ProbeError> {
    let at = |args: &[&str]| at_top(top_s, args);
    let run_at = |args: Vec<String>, env: Vec<(String, String)>| async move {
        let refs: Vec<&str> = args.iter().map(String::as_str).collect();
        listing(git, &refs, &env).await
    };
    let tmp = tempfile::Builder::new()
        .prefix("evident-git-")
        .tempdir()
        .map_err(|e| {
            git_err(format!(
                "cannot make a temporary index: {}",
                paths::io_reason(&e)
            ))
        })?;
    let index = tmp.path().join("index");
    let env = vec![(
        "GIT_INDEX_FILE".to_string(),
        index.to_string_lossy().into_owned(),
    )];
    if has_head {
        run_at(at(&["read-tree", "HEAD"]), env.clone()).await?;
    } else {
        run_at(at(&["read-tree", "--empty"]), env.clone()).await?;
    }
    let others = git
        .run_env(
            &[
                "-C",
                top_s,
                "ls-files",
                "-z",
                "--others",
                "--exclude-per-directory=.gitignore",
            ],
            MAX_LIST,
            &env,
        )
        .await?;
    if others.exit_code != Some(0) {
        return Err(failed("git ls-files --others", &others));
    }
    if others.stdout.total > 0 {
        let kept = &others.stdout.kept;
        // A listing cut short ends in a partial name: only whole ones are named.
        let whole = match kept.iter().rposition(|&b| b == 0) {
            Some(i) => &kept[..i],
            None => &[][..],
        };
        for p in whole.split(|&b| b == 0).filter(|p| !p.is_empty()) {
            found.add(p);
        }
        found.dirty = true;
        if others.stdout.truncated {
            found.stop(format!(
                "the list of untracked files exceeds {MAX_LIST} bytes"
            ));
        }
    }
    let ignored = run_at(
        at(&[
            "ls-files",
            "-z",
            "--others",
            "--ignored",
            "--directory",
            "--exclude-per-directory=.gitignore",
        ]),
        env,
    )
    .await?;
    // Every tracked .gitignore is in the private index, so one listed here is
    // untracked, and it hides itself: its rules are not the committed ones.
    for p in ignored
        .split(|&b| b == 0)
        .filter(|p| *p == b".gitignore" || p.ends_with(b"/.gitignore"))
    {
        found.add(p);
    }
    Ok(())
}

#[derive(Clone)]
struct Tracked {
    mode: u32,
    oid: String,
    path: Vec<u8>,
}

#[derive(Default)]
struct Compared {
    /// Tracked paths that are gone, or have a directory on their way that is not one.
    missing: Vec<Vec<u8>>,
    /// Why the comparison stopped early: after a path was found missing (or the tree
    /// was already unclean), an error or the naming budget ends it, not the probe.
    stopped: Option<String>,
    /// Tracked paths whose raw content, type or mode differs from HEAD.
    differs: Vec<Tracked>,
    /// Submodules: path and the commit HEAD records.
    gitlinks: Vec<(Vec<u8>, String)>,
}

/// git's object id of a blob with this content.
pub(crate) fn blob_id(content: &[u8], sha256: bool) -> String {
    object_id("blob", content, sha256)
}

/// Open a work-tree file that was seen as a regular file: without following a symlink
/// and without blocking (a FIFO put there meanwhile would block the open forever),
/// and only if it still is a regular file.
fn open_regular(path: &Path) -> std::io::Result<std::fs::File> {
    use rustix::fs::{Mode, OFlags};
    let fd = rustix::fs::open(
        path,
        OFlags::RDONLY | OFlags::NOFOLLOW | OFlags::NONBLOCK | OFlags::CLOEXEC,
        Mode::empty(),
    )?;
    let f = std::fs::File::from(fd);
    if !f.metadata()?.is_file() {
        return Err(std::io::Error::other("not a regular file any more"));
    }
    Ok(f)
}

/// The same id, streaming a file (any size) instead of holding it.
pub(crate) fn file_blob_id(
    path: &Path,
    len: u64,
    sha256: bool,
    copy_to: Option<(&Path, u32)>,
) -> std::io::Result<String> {
    use std::io::{Read, Write};
    let mut f = open_regular(path)?;
    let mut out = match copy_to {
        Some((to, mode)) => {
            use std::os::unix::fs::OpenOptionsExt;
            Some(
                std::fs::OpenOptions::new()
                    .write(true)
                    .create_new(true)
                    .mode(if mode == 0o100755 { 0o755 } else { 0o644 })
                    .open(to)?,
            )
        }
        None => None,
    };
    let header = format!("blob {len}\0");
    let mut buf = vec![0u8; 256 * 1024];
    let mut s2 = Sha256::new();
    let mut s1 = {
        use sha1::Digest as _;
        sha1::Sha1::new()
    };
    let mut feed = |b: &[u8]| {
        if sha256 {
            s2.update(b);
        } else {
            use sha1::Digest as _;
            s1.update(b);
        }
    };
    feed(header.as_bytes());
    let mut read = 0u64;
    loop {
        let n = f.read(&mut buf)?;
        if n == 0 {
            break;
        }
        read += n as u64;
        feed(&buf[..n]);
        if let Some(o) = out.as_mut() {
            o.write_all(&buf[..n])?;
        }
    }
    if read != len {
        // Changed while being read: not the content that was measured.
        return Ok(String::new());
    }
    Ok(if sha256 {
        hex::encode(s2.finalize())
    } else {
        use sha1::Digest as _;
        hex::encode(s1.finalize())
    })
}

fn compare_tree(
    top: &Path,
    entries: &[Tracked],
    sha256: bool,
    budget: Budget,
    already_unclean: bool,
) -> Result<Compared, ProbeError> {
    use std::os::unix::ffi::OsStrExt;
    use std::os::unix::fs::PermissionsExt;
    let mut out = Compared::default();
    let mut dirs_ok: std::collections::HashSet<Vec<u8>> = std::collections::HashSet::new();
    let io = |p: &[u8], e: std::io::Error| {
        git_err(format!("cannot read {}: {}", show(p), paths::io_reason(&e)))
    };
    // Once the tree is known to be unclean, what goes wrong only stops the comparison.
    let fail = |out: &mut Compared, e: ProbeError| -> Result<(), ProbeError> {
        if already_unclean || !out.missing.is_empty() {
            out.stopped.get_or_insert_with(|| e.to_string());
            Ok(())
        } else {
            Err(e)
        }
    };
    for e in entries {
        let now = std::time::Instant::now();
        if now > budget.deadline
            || (now > budget.naming && (already_unclean || !out.missing.is_empty()))
        {
            fail(&mut out, git_err("the work tree was not compared in time"))?;
            return Ok(out);
        }
        // Every directory on the way must be a real directory, not a symlink.
        let mut parents_ok = true;
        for (i, _) in e.path.iter().enumerate().filter(|(_, b)| **b == b'/') {
            let dir = &e.path[..i];
            if dirs_ok.contains(dir) {
                continue;
            }
            match std::fs::symlink_metadata(top.join(std::ffi::OsStr::from_bytes(dir))) {
                Ok(m) if m.is_dir() => {
                    dirs_ok.insert(dir.to_vec());
                }
                _ => {
                    parents_ok = false;
                    break;
                }
            }
        }
        let full = top.join(std::ffi::OsStr::from_bytes(&e.path));
        let meta = match (parents_ok, std::fs::symlink_metadata(&full)) {
            (false, _) => {
                out.missing.push(e.path.clone());
                continue;
            }
            (true, Err(err)) if err.kind() == std::io::ErrorKind::NotFound => {
                out.missing.push(e.path.clone());
                continue;
            }
            (true, Err(err)) => {
                fail(&mut out, io(&e.path, err))?;
                return Ok(out);
            }
            (true, Ok(m)) => m,
        };
        let same = match e.mode {
            0o100644 | 0o100755 => {
                let exec = meta.permissions().mode() & 0o100 != 0;
                meta.is_file()
                    && exec == (e.mode == 0o100755)
                    && match file_blob_id(&full, meta.len(), sha256, None) {
                        Ok(id) => id == e.oid,
                        Err(x) => {
                            fail(&mut out, io(&e.path, x))?;
                            return Ok(out);
                        }
                    }
            }
            0o120000 => {
                meta.file_type().is_symlink()
                    && match std::fs::read_link(&full) {
                        Ok(target) => blob_id(target.as_os_str().as_bytes(), sha256) == e.oid,
                        Err(x) => {
                            fail(&mut out, io(&e.path, x))?;
                            return Ok(out);
                        }
                    }
            }
            0o160000 if meta.is_dir() => {
                out.gitlinks.push((e.path.clone(), e.oid.clone()));
                true
            }
            _ => false,
        };
        if !same {
            out.differs.push(e.clone());
        }
    }
    Ok(out)
}

/// Attributes under which git converts content between the blob and the work tree.
const CONVERSIONS: &[&str] = &[
    "filter",
    "text",
    "eol",
    "crlf",
    "ident",
    "working-tree-encoding",
];

/// For tracked files whose raw content differs from HEAD: adds to `found` each that is
/// unclean — every one without a conversion, and under `filter=lfs` one whose LFS
/// object is not the file (one whose object is the file is clean). One under a
/// conversion this probe does not run is an error while nothing else made the tree
/// unclean, and is left unnamed after that (whether it differs cannot be told).
async fn dirty_after_conversion(
    git: &Git,
    top: &Path,
    top_s: &str,
    differs: &[Tracked],
    found: &mut Unclean,
) -> Result<(), ProbeError> {
    let mut attrs: std::collections::HashMap<Vec<u8>, Vec<(String, String)>> = Default::default();
    for chunk in differs.chunks(500) {
        let mut args: Vec<String> = ["-C", top_s, "check-attr", "-z"]
            .iter()
            .map(|s| s.to_string())
            .collect();
        args.extend(CONVERSIONS.iter().map(|s| s.to_string()));
        args.push("--".into());
        args.extend(chunk.iter().map(|e| show(&e.path)));
        let refs: Vec<&str> = args.iter().map(String::as_str).collect();
        let out = listing(git, &refs, &[]).await?;
        let fields: Vec<&[u8]> = out.split(|&b| b == 0).collect();
        for f in fields.chunks(3).filter(|f| f.len() == 3) {
            let value = show(f[2]);
            if value != "unspecified" && !(value == "unset" && f[1] != b"filter") {
                attrs
                    .entry(f[0].to_vec())
                    .or_default()
                    .push((show(f[1]), value));
            }
        }
    }
    for e in differs {
        let Some(conv) = attrs.get(&e.path) else {
            found.add(&e.path);
            continue;
        };
        if let [(name, value)] = conv.as_slice()
            && name == "filter"
            && value == "lfs"
            && e.mode != 0o120000
        {
            match found.soft(lfs_same(git, top, e).await)? {
                Some(true) => {}
                Some(false) => found.add(&e.path),
                None => return Ok(()),
            }
            continue;
        }
        if found.dirty {
            continue;
        }
        let named: Vec<String> = conv.iter().map(|(n, v)| format!("{n}={v}")).collect();
        return Err(git_err(format!(
            "{} differs from HEAD as stored, and its attributes ({}) name a conversion this probe does not run: whether it is clean cannot be told",
            show(&e.path),
            named.join(", ")
        )));
    }
    Ok(())
}

/// A Git LFS pointer blob (`version https://git-lfs.github.com/spec/v1`, `oid
/// sha256:…`, `size N`) whose object is the file in the work tree: clean, as git-lfs's
/// own clean filter would say, without running it.
async fn lfs_same(git: &Git, top: &Path, e: &Tracked) -> Result<bool, ProbeError> {
    use std::os::unix::ffi::OsStrExt;
    let s = git.run(&["cat-file", "-s", &e.oid], KEEP).await?;
    let small = String::from_utf8_lossy(&s.stdout.kept)
        .trim()
        .parse::<u64>()
        .is_ok_and(|n| n <= 1024);
    if s.exit_code != Some(0) || !small {
        return Ok(false);
    }
    let sha256 = e.oid.len() == 64;
    let Some(pointer) = read_objects(git, std::slice::from_ref(&e.oid), "blob", sha256, 1024)
        .await?
        .remove(&e.oid)
    else {
        return Ok(false);
    };
    let text = String::from_utf8_lossy(&pointer).into_owned();
    let mut lines = text.lines();
    if lines.next() != Some("version https://git-lfs.github.com/spec/v1") {
        return Ok(false);
    }
    let (mut oid, mut size) = (None, None);
    for l in lines {
        if let Some(o) = l.strip_prefix("oid sha256:") {
            oid = Some(o.to_string());
        } else if let Some(s) = l.strip_prefix("size ") {
            size = s.parse::<u64>().ok();
        }
    }
    let (Some(oid), Some(size)) = (oid, size) else {
        return Ok(false);
    };
    let path = top.join(std::ffi::OsStr::from_bytes(&e.path));
    let digest = tokio::task::spawn_blocking(move || -> std::io::Result<(u64, String)> {
        use std::io::Read;
        let mut f = open_regular(&path)?;
        let mut h = Sha256::new();
        let mut buf = vec![0u8; 256 * 1024];
        let mut n = 0u64;
        loop {
            let k = f.read(&mut buf)?;
            if k == 0 {
                break;
            }
            n += k as u64;
            h.update(&buf[..k]);
        }
        Ok((n, hex::encode(h.finalize())))
    })
    .await
    .map_err(|x| git_err(format!("hashing failed: {x}")))?;
    Ok(matches!(digest, Ok((n, d)) if n == size && d == oid))
}

/// A submodule is clean when it is not checked out (an empty directory, as git sees
/// it) or its checked-out commit is the one HEAD records and its own tree is clean.
/// What makes it unclean: the submodule's path itself (another commit, not a
/// repository), or the paths inside it that differ, under its path.
async fn submodule_unclean(
    git: &Git,
    top: &Path,
    path: &[u8],
    oid: &str,
    budget: Budget,
    depth: usize,
) -> Result<Unclean, ProbeError> {
    use std::os::unix::ffi::OsStrExt;
    let mut found = Unclean::default();
    let dir = top.join(std::ffi::OsStr::from_bytes(path));
    let empty = std::fs::read_dir(&dir)
        .map(|mut d| d.next().is_none())
        .unwrap_or(false);
    if empty {
        return Ok(found);
    }
    if !dir.join(".git").exists() {
        found.add(path);
        return Ok(found);
    }
    if depth >= MAX_DEPTH {
        return Err(git_err(format!(
            "submodules nest deeper than {MAX_DEPTH} levels at {}",
            show(path)
        )));
    }
    let mut sub = Git {
        program: git.program.clone(),
        repo: dir,
        env: git.env.clone(),
        args: global_args(),
    };
    sub.harden().await?;
    let head = sub
        .run(&["rev-parse", "--verify", "--quiet", "HEAD^{commit}"], KEEP)
        .await?;
    if head.exit_code != Some(0) || String::from_utf8_lossy(&head.stdout.kept).trim() != oid {
        found.add(path);
        return Ok(found);
    }
    let inner = Box::pin(clean(&sub, budget, depth + 1)).await?;
    found.dirty = inner.dirty;
    for p in &inner.named {
        let mut full = path.to_vec();
        full.push(b'/');
        full.extend_from_slice(p);
        found.add(&full);
    }
    found.more += inner.more;
    found.stopped = inner.stopped.map(|why| format!("in {}: {why}", show(path)));
    Ok(found)
}

async fn is_sha256(git: &Git) -> Result<bool, ProbeError> {
    let f = listing(git, &["rev-parse", "--show-object-format"], &[]).await?;
    Ok(String::from_utf8_lossy(&f).trim() == "sha256")
}

/// git's id of an object of this type and content.
pub(crate) fn object_id(kind: &str, content: &[u8], sha256: bool) -> String {
    let header = format!("{kind} {}\0", content.len());
    if sha256 {
        let mut h = Sha256::new();
        h.update(header.as_bytes());
        h.update(content);
        hex::encode(h.finalize())
    } else {
        use sha1::Digest as _;
        let mut h = sha1::Sha1::new();
        h.update(header.as_bytes());
        h.update(content);
        hex::encode(h.finalize())
    }
}

/// Read objects with `git cat-file --batch` and check that each hashes to its id and
/// has the type asked for. A missing object is left out of the map; one whose content
/// does not match its id is an error (the object store was altered).
async fn read_objects(
    git: &Git,
    oids: &[String],
    kind: &str,
    sha256: bool,
    max_total: u64,
) -> Result<std::collections::HashMap<String, Vec<u8>>, ProbeError> {
    use tokio::io::{AsyncReadExt, AsyncWriteExt};
    let mut out = std::collections::HashMap::new();
    if oids.is_empty() {
        return Ok(out);
    }
    let mut cmd = tokio::process::Command::new(&git.program);
    cmd.env_clear()
        .envs(git.env.iter().map(|(k, v)| (k.as_str(), v.as_str())))
        .args(&git.args)
        .args(["cat-file", "--batch"])
        .current_dir(&git.repo)
        .stdin(std::process::Stdio::piped())
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::null())
        .kill_on_drop(true);
    let mut child = cmd.spawn().map_err(|e| ProbeError::Spawn {
        program: git.program.display().to_string(),
        reason: paths::io_reason(&e),
    })?;
    let mut stdin = child
        .stdin
        .take()
        .ok_or_else(|| git_err("no stdin for git cat-file"))?;
    let mut stdout = child
        .stdout
        .take()
        .ok_or_else(|| git_err("no stdout for git cat-file"))?;
    let input: Vec<u8> = oids
        .iter()
        .flat_map(|o| format!("{o}\n").into_bytes())
        .collect();
    let write = async move {
        let r = stdin.write_all(&input).await;
        drop(stdin);
        r
    };
    let read = async {
        let mut buf = Vec::new();
        let limit = max_total.saturating_add(oids.len() as u64 * 128);
        (&mut stdout)
            .take(limit + 1)
            .read_to_end(&mut buf)
            .await
            .map(|_| (buf, limit))
    };
    let (w, r) = tokio::join!(write, read);
    let (buf, limit) =
        r.map_err(|e| git_err(format!("reading git cat-file: {}", paths::io_reason(&e))))?;
    let status = child
        .wait()
        .await
        .map_err(|e| git_err(paths::io_reason(&e)))?;
    if buf.len() as u64 > limit {
        return Err(git_err(format!("objects read exceed {max_total} bytes")));
    }
    w.map_err(|e| git_err(format!("writing to git cat-file: {}", paths::io_reason(&e))))?;
    if !status.success() {
        return Err(git_err(format!("git cat-file --batch failed ({status})")));
    }
    let bad = || git_err("git cat-file --batch printed something that is not an object");
    let mut rest = &buf[..];
    for oid in oids {
        let nl = rest.iter().position(|&b| b == b'\n').ok_or_else(bad)?;
        let header = std::str::from_utf8(&rest[..nl]).map_err(|_| bad())?;
        rest = &rest[nl + 1..];
        let parts: Vec<&str> = header.split(' ').collect();
        match parts.as_slice() {
            [id, "missing"] if id == oid => continue,
            [id, t, size] if id == oid => {
                let size: usize = size.parse().map_err(|_| bad())?;
                if rest.len() < size + 1 {
                    return Err(bad());
                }
                let content = &rest[..size];
                rest = &rest[size + 1..];
                if object_id(t, content, sha256) != *oid {
                    return Err(git_err(format!(
                        "object {oid} does not hash to its id: the repository's object store was altered"
                    )));
                }
                if *t != kind {
                    return Err(git_err(format!("object {oid} is a {t}, not a {kind}")));
                }
                out.insert(oid.clone(), content.to_vec());
            }
            _ => return Err(bad()),
        }
    }
    Ok(out)
}

/// The root tree of a commit, read from the verified commit object.
async fn commit_tree(git: &Git, commit: &str, sha256: bool) -> Result<String, ProbeError> {
    let c = read_objects(git, &[commit.to_string()], "commit", sha256, MAX_LIST)
        .await?
        .remove(commit)
        .ok_or_else(|| git_err(format!("commit {commit} is missing")))?;
    let first = c.split(|&b| b == b'\n').next().unwrap_or(b"");
    let tree = std::str::from_utf8(first)
        .ok()
        .and_then(|l| l.strip_prefix("tree "))
        .filter(|t| t.len() == if sha256 { 64 } else { 40 })
        .ok_or_else(|| git_err(format!("commit {commit} names no tree")))?;
    Ok(tree.to_string())
}

/// The entries of a tree object (already hashed against its id), under `prefix`.
pub(crate) fn tree_entries(
    content: &[u8],
    sha256: bool,
    prefix: &[u8],
) -> Result<Vec<TreeFile>, ProbeError> {
    Ok(parse_tree_object(content, sha256, prefix)?
        .into_iter()
        .map(|t| TreeFile {
            mode: t.mode,
            oid: t.oid,
            path: t.path,
        })
        .collect())
}

/// Parse a tree object: `mode SP name NUL id` entries.
fn parse_tree_object(
    content: &[u8],
    sha256: bool,
    prefix: &[u8],
) -> Result<Vec<Tracked>, ProbeError> {
    let idlen = if sha256 { 32 } else { 20 };
    let bad = || git_err("a tree object is malformed");
    let mut v = Vec::new();
    let mut rest = content;
    while !rest.is_empty() {
        let sp = rest.iter().position(|&b| b == b' ').ok_or_else(bad)?;
        let mode = std::str::from_utf8(&rest[..sp]).map_err(|_| bad())?;
        let mode = u32::from_str_radix(mode, 8).map_err(|_| bad())?;
        rest = &rest[sp + 1..];
        let nul = rest.iter().position(|&b| b == 0).ok_or_else(bad)?;
        let name = &rest[..nul];
        if name.is_empty() || name.contains(&b'/') || name == b"." || name == b".." {
            return Err(bad());
        }
        rest = &rest[nul + 1..];
        if rest.len() < idlen {
            return Err(bad());
        }
        let oid = hex::encode(&rest[..idlen]);
        rest = &rest[idlen..];
        // Canonical modes, as git reads them (old trees hold 100664 and the like).
        let mode = match mode & 0o170000 {
            0o100000 if mode & 0o100 != 0 => 0o100755,
            0o100000 => 0o100644,
            0o040000 => 0o40000,
            other => other,
        };
        let mut path = prefix.to_vec();
        if !path.is_empty() {
            path.push(b'/');
        }
        path.extend_from_slice(name);
        v.push(Tracked { mode, oid, path });
    }
    Ok(v)
}

/// Every file, symlink and submodule under a tree (what `git ls-tree -r` lists), from
/// verified tree objects, read a level at a time.
async fn walk_tree(git: &Git, root: &str, sha256: bool) -> Result<Vec<Tracked>, ProbeError> {
    let mut files = Vec::new();
    let mut level: Vec<(String, Vec<u8>)> = vec![(root.to_string(), Vec::new())];
    while !level.is_empty() {
        let oids: Vec<String> = level.iter().map(|(o, _)| o.clone()).collect();
        let trees = read_objects(git, &oids, "tree", sha256, MAX_LIST).await?;
        let mut next = Vec::new();
        for (oid, prefix) in &level {
            let content = trees
                .get(oid)
                .ok_or_else(|| git_err(format!("tree {oid} is missing")))?;
            for e in parse_tree_object(content, sha256, prefix)? {
                if e.mode == 0o40000 {
                    next.push((e.oid, e.path));
                } else {
                    files.push(e);
                }
            }
        }
        level = next;
    }
    Ok(files)
}

/// The entry at `path` under a tree, walking verified trees; `None` when absent.
async fn find_path(
    git: &Git,
    root: &str,
    path: &str,
    sha256: bool,
) -> Result<Option<Tracked>, ProbeError> {
    let parts: Vec<&str> = path
        .split('/')
        .filter(|p| !p.is_empty() && *p != ".")
        .collect();
    let mut entry = Tracked {
        mode: 0o40000,
        oid: root.to_string(),
        path: Vec::new(),
    };
    for part in parts {
        if entry.mode != 0o40000 {
            return Ok(None);
        }
        let trees = read_objects(
            git,
            std::slice::from_ref(&entry.oid),
            "tree",
            sha256,
            MAX_LIST,
        )
        .await?;
        let content = trees
            .get(&entry.oid)
            .ok_or_else(|| git_err(format!("tree {} is missing", entry.oid)))?;
        match parse_tree_object(content, sha256, &entry.path)?
            .into_iter()
            .find(|e| e.path.rsplit(|&b| b == b'/').next() == Some(part.as_bytes()))
        {
            Some(e) => entry = e,
            None => return Ok(None),
        }
    }
    Ok(Some(entry))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn neutralise_blanks_named_drivers_and_refuses_worktree() {
        let list =
            b"core.bare\nfalse\0filter.LFS.clean\ngit-lfs clean\0filter.LFS.required\ntrue\0\
diff.x.textconv\nexec\0merge.m.driver\nx\0credential.https://h.example.helper\nstore\0\
remote.origin.url\nhttps://h\0remote.origin.uploadpack\nx\0tar.tgz.command\ngzip\0\
user.name\nDev\0core.hooksPath\n.husky\0boolkey.x\0";
        let args = neutralise(list).unwrap();
        let pairs: Vec<&str> = args.iter().skip(1).step_by(2).map(String::as_str).collect();
        assert_eq!(
            pairs,
            [
                "filter.LFS.clean=",
                "filter.LFS.required=false",
                "diff.x.textconv=",
                "merge.m.driver=",
                "credential.https://h.example.helper=",
                "remote.origin.uploadpack=",
                "tar.tgz.command=",
            ]
        );
        assert!(args.iter().step_by(2).all(|a| a == "-c"));
        let e = neutralise(b"core.WorkTree\n/elsewhere\0").unwrap_err();
        assert_eq!(e.key, "core.worktree");
        assert!(e.to_string().contains("core.worktree"));
    }

    /// At most [`MAX_UNCLEAN_NAMED`] paths are named and the rest counted; a staged
    /// path is named once; after the first path an error only stops the search,
    /// before it the error stands; the observed keys are scrubbed.
    #[test]
    fn unclean_paths_are_named_counted_and_soft_after_the_first() {
        let mut u = Unclean::default();
        assert!(u.soft::<()>(Err(git_err("before"))).is_err());
        u.add_staged(b"staged.txt");
        for i in 0..30 {
            u.add(format!("f{i:02}").as_bytes());
        }
        u.add(b"staged.txt");
        assert!(u.dirty);
        assert_eq!(u.named.len(), MAX_UNCLEAN_NAMED);
        assert_eq!(u.named[0], b"staged.txt");
        assert_eq!(u.named[19], b"f18");
        assert_eq!(u.more, 11);
        assert!(matches!(u.soft::<()>(Err(git_err("after"))), Ok(None)));
        assert!(matches!(u.soft::<()>(Err(git_err("later"))), Ok(None)));
        let mut secrets = crate::Scrubber::default();
        secrets.add("f00-secret-value");
        u.named[1] = b"f00-secret-value".to_vec();
        let mut obj = Map::new();
        u.insert_into(&mut obj, &secrets);
        assert_eq!(obj[UNCLEAN_PATHS].as_array().unwrap().len(), 20);
        assert!(
            !obj[UNCLEAN_PATHS][1].as_str().unwrap().contains("secret"),
            "{obj:?}"
        );
        assert_eq!(obj[UNCLEAN_MORE], 11);
        assert!(
            obj[UNCLEAN_STOPPED].as_str().unwrap().contains("after"),
            "{obj:?}"
        );

        // A submodule's findings, already under its path.
        let mut inner = Unclean::default();
        inner.add(b"sub/x");
        inner.more = 2;
        let mut outer = Unclean::default();
        outer.merge(inner);
        assert!(outer.dirty);
        assert_eq!(outer.named, [b"sub/x".to_vec()]);
        assert_eq!(outer.more, 2);
    }

    #[test]
    fn relative_path_entries_are_dropped() {
        assert_eq!(
            absolute_path(Some(".:/usr/bin::bin:/bin")).as_deref(),
            Some("/usr/bin:/bin")
        );
        let e = env(Some("./x:/usr/bin"));
        assert!(e.contains(&("PATH".to_string(), "/usr/bin".to_string())));
        assert!(!e.iter().any(|(k, _)| k == "HOME" || k == "GIT_DIR"));
    }

    #[test]
    fn tree_objects_parse_and_ids_hash() {
        // "100644 a\0<20 bytes>" + "40000 d\0<20 bytes>"
        let mut t = b"100664 a\0".to_vec();
        t.extend([0x11; 20]);
        t.extend(b"40000 d\0");
        t.extend([0x22; 20]);
        let e = parse_tree_object(&t, false, b"top").unwrap();
        assert_eq!(e[0].path, b"top/a");
        assert_eq!(e[0].mode, 0o100644);
        assert_eq!(e[1].mode, 0o40000);
        assert_eq!(e[1].oid, "22".repeat(20));
        assert!(parse_tree_object(b"100644 ../x\0", false, b"").is_err());
        // The empty blob's well-known ids.
        assert_eq!(
            blob_id(b"", false),
            "e69de29bb2d1d6434b8b29ae775ad8c2e48c5391"
        );
        assert_eq!(
            blob_id(b"", true),
            "473a0f4c3be8a93681a267e3b1e9a7dcda1185436fe141f7749120a303721813"
        );
    }
}
/// One file of a commit's tree, from verified objects.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct TreeFile {
    /// Canonical mode (`0o100644`, `0o100755`, `0o120000`, `0o160000`).
    pub mode: u32,
    /// The blob's (or submodule commit's) object id, hex.
    pub oid: String,
    /// Repository-relative, `/`-separated, raw bytes.
    pub path: Vec<u8>,
}

/// How a path differs between a commit and the work tree.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
pub enum Change {
    /// Present in the work tree, absent from the commit.
    Added,
    /// In both, with other content or mode.
    Modified,
    /// In the commit, gone from the work tree.
    Deleted,
}

/// What [`Witness::changes`] saw.
#[derive(Debug, Clone)]
pub struct Changes {
    /// Every path that differs between the commit and the work tree (committed since
    /// or not, untracked included, files the work tree's `.gitignore` files ignore
    /// excluded), sorted.
    pub changed: Vec<(Vec<u8>, Change)>,
    /// `sha256:` over every non-ignored path of the work tree with its mode and
    /// content id: equal hashes mean the same tree content.
    pub tree_hash: String,
}

/// The hardened git witness for callers outside the probes (the coding-agent hook's
/// claim builder): the same cleared environment, overrides and refusals as the `git`
/// source, and every object read hashed against its id.
pub struct Witness {
    git: Git,
    sha256: bool,
}

impl Witness {
    /// Open the repository containing `dir` (its config read and neutralised;
    /// `core.worktree` refused).
    pub async fn open(dir: &Path, path_var: Option<&str>) -> Result<Witness, ProbeError> {
        let program = resolve_program("git", dir, path_var)?;
        let mut git = Git {
            program,
            repo: dir.to_path_buf(),
            env: env(path_var),
            args: global_args(),
        };
        git.harden().await?;
        let top = listing(&git, &["rev-parse", "--show-toplevel"], &[]).await?;
        let top = String::from_utf8_lossy(&top)
            .trim_end_matches(['\n', '\r'])
            .to_string();
        git.repo = PathBuf::from(top);
        let sha256 = is_sha256(&git).await?;
        Ok(Witness { git, sha256 })
    }

    /// The work tree's top directory.
    pub fn top(&self) -> &Path {
        &self.git.repo
    }

    /// The commit `rev` names, or `None` when it names none.
    pub async fn resolve(&self, rev: &str) -> Result<Option<String>, ProbeError> {
        check_rev(rev)?;
        let spec = format!("{rev}^{{commit}}");
        let f = self
            .git
            .run(
                &[
                    "rev-parse",
                    "--verify",
                    "--quiet",
                    "--end-of-options",
                    &spec,
                ],
                KEEP,
            )
            .await?;
        match f.exit_code {
            Some(0) => Ok(Some(
                String::from_utf8_lossy(&f.stdout.kept).trim().to_string(),
            )),
            Some(1) => Ok(None),
            _ => Err(failed("git rev-parse", &f)),
        }
    }

    /// The merge-base of two commits, if any.
    pub async fn merge_base(&self, a: &str, b: &str) -> Result<Option<String>, ProbeError> {
        check_rev(a)?;
        check_rev(b)?;
        let f = self
            .git
            .run(&["merge-base", "--end-of-options", a, b], KEEP)
            .await?;
        match f.exit_code {
            Some(0) => Ok(Some(
                String::from_utf8_lossy(&f.stdout.kept).trim().to_string(),
            )),
            Some(1) => Ok(None),
            _ => Err(failed("git merge-base", &f)),
        }
    }

    /// The content of `path` at `commit` (`None` when absent), every object on the way
    /// verified; larger than `max` bytes is an error.
    pub async fn file_at(
        &self,
        commit: &str,
        path: &str,
        max: u64,
    ) -> Result<Option<Vec<u8>>, ProbeError> {
        let root = commit_tree(&self.git, commit, self.sha256).await?;
        let Some(entry) = find_path(&self.git, &root, path, self.sha256).await? else {
            return Ok(None);
        };
        if entry.mode == 0o40000 || entry.mode == 0o160000 {
            return Err(git_err(format!("{path:?} at {commit} is not a file")));
        }
        let mut objects = read_objects(
            &self.git,
            std::slice::from_ref(&entry.oid),
            "blob",
            self.sha256,
            max,
        )
        .await?;
        Ok(objects.remove(&entry.oid))
    }

    /// Every file of `commit`'s tree, from verified objects.
    pub async fn files_at(&self, commit: &str) -> Result<Vec<TreeFile>, ProbeError> {
        let root = commit_tree(&self.git, commit, self.sha256).await?;
        Ok(walk_tree(&self.git, &root, self.sha256)
            .await?
            .into_iter()
            .map(|t| TreeFile {
                mode: t.mode,
                oid: t.oid,
                path: t.path,
            })
            .collect())
    }

    /// What differs between `commit` and the work tree, by content hashed here (no
    /// index flag, stat cache or filter is trusted or run). Files absent at `commit`
    /// are listed by git against a private index built from `commit`, minus what the
    /// work tree's `.gitignore` files ignore (`.git/info/exclude` and
    /// `core.excludesFile` are not read); an edited `.gitignore` is itself a change.
    pub async fn changes(&self, commit: &str) -> Result<Changes, ProbeError> {
        self.changes_copied(Some(commit), None)
            .await
            .map(|(changes, _)| changes)
    }

    /// [`Witness::changes`], every file of the claimed tree written into `copy` as it
    /// is read for its id: the snapshot holds exactly what [`Changes::tree_hash`]
    /// covers, by construction (`commit` `None`: a repository without commits).
    pub async fn snapshot(
        &self,
        commit: Option<&str>,
        copy: Copier,
    ) -> Result<(Changes, Copier), ProbeError> {
        let (changes, copy) = self.changes_copied(commit, Some(copy)).await?;
        Ok((changes, copy.expect("the copier comes back")))
    }

    async fn changes_copied(
        &self,
        commit: Option<&str>,
        copy: Option<Copier>,
    ) -> Result<(Changes, Option<Copier>), ProbeError> {
        let base = match commit {
            Some(c) => self.files_at(c).await?,
            None => Vec::new(),
        };
        let tmp = tempfile::Builder::new()
            .prefix("evident-git-")
            .tempdir()
            .map_err(|e| {
                git_err(format!(
                    "cannot make a temporary index: {}",
                    paths::io_reason(&e)
                ))
            })?;
        let index = tmp.path().join("index");
        let env = vec![(
            "GIT_INDEX_FILE".to_string(),
            index.to_string_lossy().into_owned(),
        )];
        match commit {
            Some(c) => listing(&self.git, &["read-tree", c], &env).await?,
            None => listing(&self.git, &["read-tree", "--empty"], &env).await?,
        };
        let others = listing(
            &self.git,
            &[
                "ls-files",
                "-z",
                "--others",
                "--exclude-per-directory=.gitignore",
            ],
            &env,
        )
        .await?;
        let mut others: Vec<Vec<u8>> = others
            .split(|&b| b == 0)
            .filter(|p| !p.is_empty())
            .map(<[u8]>::to_vec)
            .collect();
        // A new .gitignore can ignore itself (`*`): it would hide itself and what it
        // ignores from the claim and the tree's hash, so a change there would reuse
        // the last decision. Such a .gitignore is a change, and every file it hides is
        // hashed into the tree (not claimed: caches such as .pytest_cache/ do this).
        let ignored = listing(
            &self.git,
            &[
                "ls-files",
                "-z",
                "--others",
                "--ignored",
                "--directory",
                "--exclude-per-directory=.gitignore",
            ],
            &env,
        )
        .await?;
        let mut hidden: Vec<Vec<u8>> = Vec::new();
        for gi in ignored
            .split(|&b| b == 0)
            .filter(|p| *p == b".gitignore" || p.ends_with(b"/.gitignore"))
        {
            let dir = &gi[..gi.len() - b".gitignore".len()];
            let mut args: Vec<&str> = vec![
                "ls-files",
                "-z",
                "--others",
                "--ignored",
                "--exclude-per-directory=.gitignore",
                "--",
            ];
            let dir_s = std::str::from_utf8(dir).map_err(|_| {
                git_err(format!(
                    "{}.gitignore ignores itself and its directory's name is not UTF-8",
                    show(dir)
                ))
            })?;
            let spec = format!(":(literal){dir_s}");
            if !dir.is_empty() {
                args.push(&spec);
            }
            let under = listing(&self.git, &args, &env).await?;
            hidden.extend(
                under
                    .split(|&b| b == 0)
                    .filter(|p| !p.is_empty() && *p != gi)
                    .map(<[u8]>::to_vec),
            );
            others.push(gi.to_vec());
        }
        hidden.sort();
        hidden.dedup();
        let top = self.git.repo.clone();
        let sha256 = self.sha256;
        tokio::task::spawn_blocking(move || {
            let mut copy = copy;
            let changes = diff_work_tree(&top, &base, &others, &hidden, sha256, copy.as_mut())?;
            Ok((changes, copy))
        })
        .await
        .map_err(|e| git_err(format!("comparing the work tree failed: {e}")))?
    }
}

/// The current mode and content id of a work-tree path, `None` when absent (or below
/// a symlinked directory). Directories holding a repository count as submodules.
fn current(
    top: &Path,
    path: &[u8],
    sha256: bool,
    copy: Option<&mut Copier>,
) -> Result<Option<(u32, String)>, ProbeError> {
    use std::os::unix::ffi::OsStrExt;
    use std::os::unix::fs::PermissionsExt;
    let io = |e: std::io::Error| {
        git_err(format!(
            "cannot read {}: {}",
            show(path),
            paths::io_reason(&e)
        ))
    };
    let mut dir = top.to_path_buf();
    let parts: Vec<&[u8]> = path.split(|&b| b == b'/').collect();
    for part in &parts[..parts.len().saturating_sub(1)] {
        dir.push(std::ffi::OsStr::from_bytes(part));
        match std::fs::symlink_metadata(&dir) {
            Ok(m) if m.is_dir() => {}
            Ok(_) => return Ok(None),
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(None),
            Err(e) => return Err(io(e)),
        }
    }
    let full = top.join(std::ffi::OsStr::from_bytes(path));
    let meta = match std::fs::symlink_metadata(&full) {
        Ok(m) => m,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(None),
        Err(e) => return Err(io(e)),
    };
    if meta.file_type().is_symlink() {
        let target = std::fs::read_link(&full).map_err(io)?;
        if let Some(c) = copy {
            c.symlink(path, &target)?;
        }
        return Ok(Some((
            0o120000,
            blob_id(target.as_os_str().as_bytes(), sha256),
        )));
    }
    if meta.is_dir() {
        return Ok(Some((0o160000, String::new())));
    }
    let mode = if meta.permissions().mode() & 0o100 != 0 {
        0o100755
    } else {
        0o100644
    };
    let dest = match copy {
        Some(c) => c.file_dest(top, path, meta.len())?,
        None => None,
    };
    Ok(Some((
        mode,
        file_blob_id(
            &full,
            meta.len(),
            sha256,
            dest.as_deref().map(|p| (p, mode)),
        )
        .map_err(io)?,
    )))
}

/// Writes the snapshot of a claimed tree: every file [`Witness::snapshot`] reads for
/// its id is written beneath `dest` from the same bytes. Build outputs are never
/// brought in (they are rebuilt); a symlink that leaves the tree is refused.
pub struct Copier {
    dest: PathBuf,
    /// Only paths beneath this directory of the top (`sub/dir/`; empty: all) are copied:
    /// a contract's root inside a larger repository gets its own subtree.
    under: Vec<u8>,
    deadline: std::time::Instant,
    /// Files and symlinks written.
    pub files: u64,
    /// Bytes of the files written.
    pub bytes: u64,
    /// Claimed paths left out as build output (`__pycache__`, `*.pyc`, cargo's `target/`).
    pub left_out: Vec<String>,
}

/// Most bytes a snapshot may hold (a sparse 100 GB file would fill the disk).
const MAX_SNAPSHOT_BYTES: u64 = 8 * 1024 * 1024 * 1024;

impl Copier {
    /// A copier writing beneath `dest`, failing once `deadline` passes.
    pub fn new(dest: PathBuf, under: &Path, deadline: std::time::Instant) -> Copier {
        use std::os::unix::ffi::OsStrExt;
        let mut under = under.as_os_str().as_bytes().to_vec();
        if !under.is_empty() && !under.ends_with(b"/") {
            under.push(b'/');
        }
        Copier {
            dest,
            under,
            deadline,
            files: 0,
            bytes: 0,
            left_out: Vec::new(),
        }
    }

    fn target(&self, path: &[u8]) -> PathBuf {
        use std::os::unix::ffi::OsStrExt;
        self.dest.join(std::ffi::OsStr::from_bytes(path))
    }

    fn count(&mut self, bytes: u64) -> Result<(), ProbeError> {
        self.files += 1;
        self.bytes = self.bytes.saturating_add(bytes);
        if self.bytes > MAX_SNAPSHOT_BYTES {
            return Err(git_err(format!(
                "the claimed tree holds more than {MAX_SNAPSHOT_BYTES} bytes; refusing to copy it"
            )));
        }
        if std::time::Instant::now() > self.deadline {
            return Err(git_err("the time limit passed while copying the tree"));
        }
        Ok(())
    }

    /// Where a regular file of `len` bytes goes (its directories made), or `None` when
    /// it is a build output left out.
    fn file_dest(
        &mut self,
        top: &Path,
        path: &[u8],
        len: u64,
    ) -> Result<Option<PathBuf>, ProbeError> {
        if !path.starts_with(&self.under) {
            return Ok(None);
        }
        if is_build_output(top, path) {
            self.left_out.push(show(path));
            return Ok(None);
        }
        self.count(len)?;
        let to = self.target(path);
        if let Some(parent) = to.parent() {
            std::fs::create_dir_all(parent).map_err(|e| {
                git_err(format!(
                    "snapshot: cannot make the directory of {}: {}",
                    show(path),
                    paths::io_reason(&e)
                ))
            })?;
        }
        Ok(Some(to))
    }

    fn symlink(&mut self, path: &[u8], target: &Path) -> Result<(), ProbeError> {
        use std::os::unix::ffi::OsStrExt;
        if !path.starts_with(&self.under) {
            return Ok(());
        }
        if !symlink_stays_inside(path, target.as_os_str().as_bytes()) {
            return Err(git_err(format!(
                "{} is a symlink out of the tree (to {}); the snapshot does not follow it: make it relative and inside the tree, or leave it out",
                show(path),
                target.display()
            )));
        }
        self.count(0)?;
        let to = self.target(path);
        if let Some(parent) = to.parent() {
            let _ = std::fs::create_dir_all(parent);
        }
        std::os::unix::fs::symlink(target, &to).map_err(|e| {
            git_err(format!(
                "snapshot: cannot make the symlink {}: {}",
                show(path),
                paths::io_reason(&e)
            ))
        })
    }
}

/// Does a symlink at `path` (relative to the top) pointing at `target` resolve,
/// lexically, to a place inside the top?
pub(crate) fn symlink_stays_inside(path: &[u8], target: &[u8]) -> bool {
    if target.first() == Some(&b'/') || target.is_empty() {
        return false;
    }
    let mut depth: usize = path.split(|&b| b == b'/').count().saturating_sub(1);
    for part in target.split(|&b| b == b'/') {
        match part {
            b"" | b"." => {}
            b".." => match depth.checked_sub(1) {
                Some(d) => depth = d,
                None => return false,
            },
            _ => depth += 1,
        }
    }
    true
}

/// Build output a claimed tree may hold but a run never takes: Python's bytecode
/// (which Python would load in place of the source beside it) and a cargo package's
/// `target/` directory (whose artefacts cargo would link as fresh).
pub fn is_build_output(top: &Path, path: &[u8]) -> bool {
    use std::os::unix::ffi::OsStrExt;
    let parts: Vec<&[u8]> = path.split(|&b| b == b'/').collect();
    let Some(name) = parts.last() else {
        return false;
    };
    if name.ends_with(b".pyc") || name.ends_with(b".pyo") {
        return true;
    }
    parts.iter().enumerate().any(|(i, part)| {
        i + 1 < parts.len()
            && (*part == b"__pycache__"
                || (*part == b"target" && {
                    let dir = parts[..i].join(&b'/');
                    top.join(std::ffi::OsStr::from_bytes(&dir))
                        .join("Cargo.toml")
                        .is_file()
                }))
    })
}

/// Every file and symlink under the directory `dir` (a repository of its own), its
/// `.git` directories left out, with its mode and content id.
fn nested_files(
    top: &Path,
    dir: &[u8],
    sha256: bool,
    present: &mut Vec<(Vec<u8>, u32, String)>,
    mut copy: Option<&mut Copier>,
) -> Result<(), ProbeError> {
    use std::os::unix::ffi::OsStrExt;
    let root = dir.strip_suffix(b"/").unwrap_or(dir).to_vec();
    let mut stack = vec![root];
    while let Some(d) = stack.pop() {
        let full = top.join(std::ffi::OsStr::from_bytes(&d));
        let entries = std::fs::read_dir(&full).map_err(|e| {
            git_err(format!(
                "cannot read {}: {}",
                show(&d),
                paths::io_reason(&e)
            ))
        })?;
        for e in entries {
            let e = e.map_err(|e| {
                git_err(format!(
                    "cannot read {}: {}",
                    show(&d),
                    paths::io_reason(&e)
                ))
            })?;
            let name = e.file_name();
            if name.as_bytes() == b".git" {
                continue;
            }
            let mut rel = d.clone();
            rel.push(b'/');
            rel.extend_from_slice(name.as_bytes());
            let meta = std::fs::symlink_metadata(e.path()).map_err(|x| {
                git_err(format!(
                    "cannot read {}: {}",
                    show(&rel),
                    paths::io_reason(&x)
                ))
            })?;
            if meta.is_dir() {
                stack.push(rel);
            } else if let Some((mode, oid)) = current(top, &rel, sha256, copy.as_deref_mut())? {
                present.push((rel, mode, oid));
            }
        }
    }
    Ok(())
}

/// `hidden`: files a self-ignoring `.gitignore` hides, in the hash but not claimed.
fn diff_work_tree(
    top: &Path,
    base: &[TreeFile],
    others: &[Vec<u8>],
    hidden: &[Vec<u8>],
    sha256: bool,
    mut copy: Option<&mut Copier>,
) -> Result<Changes, ProbeError> {
    let mut changed = Vec::new();
    let mut present: Vec<(Vec<u8>, u32, String)> = Vec::new();
    for f in base {
        match current(top, &f.path, sha256, copy.as_deref_mut())? {
            None => changed.push((f.path.clone(), Change::Deleted)),
            // A submodule is compared by presence only (its own commits are its own);
            // a snapshot holds its files.
            Some((0o160000, _)) if f.mode == 0o160000 => {
                present.push((f.path.clone(), f.mode, f.oid.clone()));
                if let Some(c) = copy.as_deref_mut() {
                    nested_files(top, &f.path, sha256, &mut Vec::new(), Some(c))?;
                }
            }
            Some((mode, oid)) => {
                if mode != f.mode || oid != f.oid {
                    changed.push((f.path.clone(), Change::Modified));
                }
                present.push((f.path.clone(), mode, oid));
            }
        }
    }
    for p in others {
        if let Some((mode, oid)) = current(top, p, sha256, copy.as_deref_mut())? {
            changed.push((p.clone(), Change::Added));
            present.push((p.clone(), mode, oid));
            if mode == 0o160000 {
                // A repository the agent made in the tree (not a submodule of the
                // commit): its files are the agent's work too, so they are hashed, or a
                // change inside it would reuse the last decision.
                nested_files(top, p, sha256, &mut present, copy.as_deref_mut())?;
            }
        }
    }
    for p in hidden {
        if let Some((mode, oid)) = current(top, p, sha256, copy.as_deref_mut())? {
            present.push((p.clone(), mode, oid));
        }
    }
    changed.sort();
    changed.dedup();
    present.sort();
    present.dedup();
    let mut h = Sha256::new();
    for (path, mode, oid) in &present {
        h.update(path);
        h.update([0]);
        h.update(format!("{mode:o} {oid}\n").as_bytes());
    }
    Ok(Changes {
        changed,
        tree_hash: format!("sha256:{}", hex::encode(h.finalize())),
    })
}
