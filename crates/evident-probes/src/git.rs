//! git through the git binary (exact git behaviour), hardened so that nothing the
//! repository's owner wrote into its config runs or redirects what git reads: no system,
//! user or XDG config, no inherited `GIT_*` variables, and every key that names a program
//! or another place to read from overridden on the command line (`-c` wins over every
//! config file). What cannot be overridden (`core.worktree`) is refused. The gate, the
//! close-out audit and anything else that asks git about an agent's repository use
//! [`command`] / [`std_command`] and [`neutralise`] from here: one git witness.

use std::path::{Path, PathBuf};

use serde_json::{Map, Value};

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

/// The environment for git: [`ENV`] plus `PATH` when given.
pub fn env(path: Option<&str>) -> Vec<(String, String)> {
    let mut v: Vec<(String, String)> = ENV
        .iter()
        .map(|(k, v)| (k.to_string(), v.to_string()))
        .collect();
    if let Some(p) = path {
        v.push(("PATH".into(), p.into()));
    }
    v
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
            "difftool" | "mergetool" => var == "cmd",
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

pub(crate) async fn observe(spec: &GitSpec, ctx: &Context) -> Result<Object, ProbeError> {
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
    let path_var = ctx.env.get("PATH").map(String::as_str);
    let program = resolve_program("git", &repo, path_var)?;
    let mut git = Git {
        program,
        repo,
        env: env(path_var),
        args: global_args(),
    };
    git.harden().await?;
    observe_with(&git, rev, file.as_deref(), spec).await
}

async fn observe_with(
    git: &Git,
    rev: &str,
    file: Option<&str>,
    spec: &GitSpec,
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
        let st = git
            .run(
                &["status", "--porcelain=v1", "--untracked-files=normal"],
                KEEP,
            )
            .await?;
        if st.exit_code != Some(0) {
            return Err(failed("git status", &st));
        }
        obj.insert("clean".into(), Value::Bool(st.stdout.total == 0));
    }

    if let (Some(file), Some(commit)) = (file, &commit) {
        let object = format!("{commit}:{file}");
        let t = git.run(&["cat-file", "-t", &object], KEEP).await?;
        if t.exit_code != Some(0) {
            obj.insert("file_exists".into(), Value::Bool(false));
            return Ok(obj);
        }
        let kind = String::from_utf8_lossy(&t.stdout.kept).trim().to_string();
        if kind != "blob" {
            return Err(ProbeError::Git {
                reason: format!("{file:?} at {commit} is a {kind}, not a file"),
            });
        }
        let max = spec.max_bytes.unwrap_or(DEFAULT_MAX_BLOB_BYTES);
        let s = git.run(&["cat-file", "-s", &object], KEEP).await?;
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
        let b = git.run(&["cat-file", "blob", &object], 0).await?;
        if b.exit_code != Some(0) {
            return Err(failed("git cat-file blob", &b));
        }
        obj.insert("file_exists".into(), Value::Bool(true));
        obj.insert("file_sha256".into(), Value::from(b.stdout.sha256.clone()));
    }
    Ok(obj)
}
