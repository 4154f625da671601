//! Where the audit observes: the temporary directory, the fixture copy committed with
//! real git or the live repository read in place (and its clean clone for spans), and
//! the hardened git runner every observation goes through.

use super::model::Options;
use crate::AuditError;
use crate::codes;
use crate::process::{self, Ran, Row, Spec};
use std::path::{Path, PathBuf};

/// One run's place to observe from: the options, the prepared repository, and every
/// program run so far (rows, and bodies for the final scan).
pub(super) struct Workspace<'o> {
    pub(super) opts: &'o Options,
    /// Where commit claims are resolved (the copy, or the live repository).
    pub(super) git_cwd: PathBuf,
    pub(super) head: String,
    pub(super) branch_oid: String,
    /// Where spans run: the committed copy, or a clean clone of the live HEAD.
    pub(super) span_root: Option<PathBuf>,
    /// Live mode: `--repo` relative to the work tree's top level.
    pub(super) live_offset: PathBuf,
    pub(super) live_toplevel: PathBuf,
    pub(super) tmp: tempfile::TempDir,
    pub(super) python: Option<Option<String>>,
    pub(super) rows: Vec<Row>,
    pub(super) bodies: Vec<Vec<u8>>,
    /// The repository's `neutralise` arguments (live mode), on every git call.
    pub(super) git_args: Vec<String>,
    /// Set when a live-mode clone failed: spans are then blocked.
    pub(super) clone_failed: Option<CloneFailed>,
    /// Live mode: the repository is a shallow clone (history is cut off).
    pub(super) shallow: bool,
}

impl<'o> Workspace<'o> {
    /// A fresh temporary directory and nothing prepared yet.
    pub(super) fn new(opts: &'o Options) -> Result<Self, AuditError> {
        let tmp = tempfile::Builder::new()
            .prefix("evident-audit-")
            .tempdir()
            .map_err(|source| AuditError::Io {
                file: "temporary directory".into(),
                source,
            })?;
        Ok(Workspace {
            opts,
            git_cwd: opts.repo.clone(),
            head: String::new(),
            branch_oid: String::new(),
            span_root: None,
            live_offset: PathBuf::new(),
            live_toplevel: PathBuf::new(),
            tmp,
            python: None,
            rows: Vec::new(),
            bodies: Vec::new(),
            clone_failed: None,
            git_args: Vec::new(),
            shallow: false,
        })
    }

    pub(super) fn keep(&mut self, ran: &Ran, body: bool) {
        self.rows.push(ran.row.clone());
        if body {
            self.bodies.push(ran.stdout.clone());
            self.bodies.push(ran.stderr.clone());
        }
    }

    /// Runs git hardened as the gate's git probe runs it (`evident_probes::git`: no
    /// system or user config, no inherited `GIT_*` variables, `GIT_NO_REPLACE_OBJECTS`,
    /// every program-naming key overridden, the repository's own ones blanked by
    /// `neutralise`) through the shared command runner. The row lists only `args`.
    pub(super) fn git(&mut self, role: &str, cwd: &Path, args: &[&str], body: bool) -> Ran {
        let path = std::env::var("PATH").ok();
        let mut argv = evident_probes::git::global_args();
        argv.extend(self.git_args.iter().cloned());
        argv.extend(args.iter().map(|s| s.to_string()));
        let ran = process::run(Spec {
            role,
            program: "git",
            args: argv,
            shown: Some(args.iter().map(|s| s.to_string()).collect()),
            cwd,
            env: evident_probes::git::env(path.as_deref()),
            timeout: self.opts.git_timeout,
            reap: false,
        });
        self.keep(&ran, body);
        ran
    }
}

pub(super) fn why(ran: &Ran) -> String {
    if let Some(e) = &ran.row.spawn_error {
        format!("`{}` could not start: {e}", ran.row.args[0])
    } else if ran.row.timed_out {
        format!("`{}` timed out", ran.row.args.join(" "))
    } else {
        match ran.row.returncode {
            Some(c) => format!("`{}` exited {c}", ran.row.args.join(" ")),
            None => format!("`{}` was killed by a signal", ran.row.args.join(" ")),
        }
    }
}

pub(super) type Prepared = Result<(), (&'static str, String)>;

/// Fixture mode: copy the repository (without `.git`) to a temporary directory and
/// commit it with real git: init, two config calls, add, commit, rev-parse HEAD.
pub(super) fn prepare_fixture(ws: &mut Workspace) -> Prepared {
    let copy = ws.tmp.path().join("repo");
    if let Err(e) = copy_tree(&ws.opts.repo, &copy) {
        return Err((
            codes::REPO_MISSING,
            format!("{}: could not copy: {e}", ws.opts.repo.display()),
        ));
    }
    let steps: [(&str, &[&str]); 5] = [
        ("git_init", &["init", "--quiet"]),
        ("git_config", &["config", "user.name", "evident audit"]),
        (
            "git_config",
            &["config", "user.email", "audit@evident.invalid"],
        ),
        ("git_add", &["add", "."]),
        (
            "git_commit",
            &[
                "commit",
                "--quiet",
                "--no-verify",
                "--no-gpg-sign",
                "-m",
                "evident audit closeout fixture",
            ],
        ),
    ];
    for (role, args) in steps {
        let ran = ws.git(role, &copy, args, true);
        if !ran.ok() {
            return Err((codes::GIT_FAILED, why(&ran)));
        }
    }
    // rev-parse output is the observation itself (the HEAD id), not a body.
    let ran = ws.git("git_rev_parse_head", &copy, &["rev-parse", "HEAD"], false);
    let head = ran.stdout_text().trim().to_string();
    if !ran.ok() || !is_oid(&head) {
        return Err((codes::GIT_FAILED, why(&ran)));
    }
    ws.head = head.clone();
    ws.branch_oid = head;
    ws.git_cwd = copy.clone();
    ws.span_root = Some(copy);
    Ok(())
}

/// Live mode: read HEAD (and `--branch`) of the repository in place. Nothing is
/// written to it; spans later run in a clean clone of HEAD in a temporary directory.
pub(super) fn prepare_live(ws: &mut Workspace) -> Result<Prepared, AuditError> {
    let repo = ws.opts.repo.clone();
    // The repository's config: blank every program it names, refuse what git cannot
    // be told to ignore (core.worktree). Its listing is not a body to keep.
    let ran = ws.git(
        "git_config_list",
        &repo,
        evident_probes::git::CONFIG_LIST_ARGS,
        false,
    );
    if !ran.ok() {
        return Ok(Err((
            codes::GIT_FAILED,
            format!(
                "{}: cannot read the git config ({})",
                repo.display(),
                why(&ran)
            ),
        )));
    }
    match evident_probes::git::neutralise(&ran.stdout) {
        Ok(args) => ws.git_args = args,
        Err(refusal) => {
            return Ok(Err((
                codes::GIT_FAILED,
                format!("{}: {refusal}", repo.display()),
            )));
        }
    }
    let ran = ws.git(
        "git_show_toplevel",
        &repo,
        &["rev-parse", "--show-toplevel"],
        false,
    );
    if !ran.ok() {
        return Ok(Err((
            codes::REPO_MISSING,
            format!("{}: not a git work tree ({})", repo.display(), why(&ran)),
        )));
    }
    let top = PathBuf::from(ran.stdout_text().trim_end_matches(['\n', '\r']));
    let canon = std::fs::canonicalize(&repo).unwrap_or(repo.clone());
    let top_canon = std::fs::canonicalize(&top).unwrap_or(top.clone());
    ws.live_offset = canon
        .strip_prefix(&top_canon)
        .map(Path::to_path_buf)
        .unwrap_or_default();
    ws.live_toplevel = top_canon;
    let ran = ws.git(
        "git_rev_parse_head",
        &repo,
        &["rev-parse", "--verify", "--quiet", "HEAD^{commit}"],
        false,
    );
    let head = ran.stdout_text().trim().to_string();
    if !ran.ok() || !is_oid(&head) {
        return Ok(Err((
            codes::GIT_FAILED,
            format!("HEAD does not resolve to a commit ({})", why(&ran)),
        )));
    }
    let ran = ws.git(
        "git_is_shallow",
        &repo,
        &["rev-parse", "--is-shallow-repository"],
        false,
    );
    ws.shallow = ran.ok() && ran.stdout_text().trim() == "true";
    ws.head = head.clone();
    ws.branch_oid = head;
    if let Some(b) = ws.opts.branch.clone() {
        let spec = format!("{b}^{{commit}}");
        let ran = ws.git(
            "git_rev_parse_branch",
            &repo,
            &[
                "rev-parse",
                "--verify",
                "--quiet",
                "--end-of-options",
                &spec,
            ],
            false,
        );
        let oid = ran.stdout_text().trim().to_string();
        if !ran.ok() || !is_oid(&oid) {
            return Err(AuditError::Usage(format!(
                "--branch {b}: does not resolve to a commit in {}",
                repo.display()
            )));
        }
        ws.branch_oid = oid;
    }
    Ok(Ok(()))
}

evident_format::message_error! {
    /// Why HEAD could not be cloned and checked out for the spans: git's own words. Kept,
    /// so every span after the first is told the same without cloning again.
    pub(super) struct CloneFailed;
}

/// Live mode: clone the repository (read-only for the source) and check out HEAD.
pub(super) fn live_span_root(ws: &mut Workspace) -> Result<PathBuf, CloneFailed> {
    if let Some(r) = &ws.span_root {
        return Ok(r.clone());
    }
    if let Some(e) = &ws.clone_failed {
        return Err(e.clone());
    }
    let clone = ws.tmp.path().join("clone");
    let top = ws.live_toplevel.to_string_lossy().into_owned();
    let dest = clone.to_string_lossy().into_owned();
    let tmp = ws.tmp.path().to_path_buf();
    let ran = ws.git(
        "git_clone",
        &tmp,
        &[
            "clone",
            "--quiet",
            "--no-hardlinks",
            "--no-checkout",
            "--",
            &top,
            &dest,
        ],
        true,
    );
    let result = if ran.ok() {
        let head = ws.head.clone();
        let ran = ws.git(
            "git_checkout",
            &clone,
            &[
                "-c",
                "advice.detachedHead=false",
                "checkout",
                "--quiet",
                "--detach",
                &head,
            ],
            true,
        );
        if ran.ok() {
            Ok(clone.join(&ws.live_offset))
        } else {
            Err(CloneFailed(why(&ran)))
        }
    } else {
        Err(CloneFailed(why(&ran)))
    };
    match &result {
        Ok(r) => ws.span_root = Some(r.clone()),
        Err(e) => ws.clone_failed = Some(e.clone()),
    }
    result
}

pub(super) fn is_oid(s: &str) -> bool {
    (s.len() == 40 || s.len() == 64) && s.bytes().all(|b| b.is_ascii_hexdigit())
}

/// Copies a directory tree, skipping `.git`; symlinks are copied as links.
fn copy_tree(from: &Path, to: &Path) -> std::io::Result<()> {
    std::fs::create_dir_all(to)?;
    for entry in std::fs::read_dir(from)? {
        let entry = entry?;
        let name = entry.file_name();
        if name == ".git" {
            continue;
        }
        let src = entry.path();
        let dst = to.join(&name);
        let ft = entry.file_type()?;
        if ft.is_dir() {
            copy_tree(&src, &dst)?;
        } else if ft.is_file() {
            std::fs::copy(&src, &dst)?;
        } else if ft.is_symlink() {
            #[cfg(unix)]
            std::os::unix::fs::symlink(std::fs::read_link(&src)?, &dst)?;
        }
    }
    Ok(())
}
