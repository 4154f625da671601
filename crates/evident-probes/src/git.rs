//! git through the git binary (exact git behaviour), with no user or system config, no
//! prompts and no optional locks, so observing never writes to the repository.

use std::path::PathBuf;

use serde_json::{Map, Value};

use crate::command::{Finished, Launch, resolve_program, run};
use crate::error::ProbeError;
use crate::spec::GitSpec;
use crate::{Context, Object, paths};

pub const DEFAULT_MAX_BLOB_BYTES: u64 = 64 * 1024 * 1024;
const KEEP: u64 = 64 * 1024;

struct Git {
    program: PathBuf,
    repo: PathBuf,
    env: Vec<(String, String)>,
}

impl Git {
    async fn run(&self, args: &[&str], keep: u64) -> Result<Finished, ProbeError> {
        // The repository's own config still applies (as a test run runs the repo's
        // own code); at least no fsmonitor hook is started by `git status`.
        let args: Vec<String> = ["-c", "core.fsmonitor=false"]
            .iter()
            .chain(args)
            .map(|s| s.to_string())
            .collect();
        run(Launch {
            program: self.program.clone(),
            args: &args,
            cwd: &self.repo,
            env: self.env.clone(),
            keep,
            parse: false,
        })
        .await
    }
}

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

pub async fn observe(spec: &GitSpec, ctx: &Context) -> Result<Object, ProbeError> {
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
    let mut env = vec![
        ("GIT_CONFIG_NOSYSTEM".to_string(), "1".to_string()),
        ("GIT_CONFIG_GLOBAL".to_string(), "/dev/null".to_string()),
        ("GIT_TERMINAL_PROMPT".to_string(), "0".to_string()),
        ("GIT_OPTIONAL_LOCKS".to_string(), "0".to_string()),
        // Objects as committed: replace refs would let the repository's owner show
        // another blob (or commit) under a committed id.
        ("GIT_NO_REPLACE_OBJECTS".to_string(), "1".to_string()),
        ("LC_ALL".to_string(), "C".to_string()),
    ];
    if let Some(p) = path_var {
        env.push(("PATH".to_string(), p.to_string()));
    }
    let git = Git { program, repo, env };
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
