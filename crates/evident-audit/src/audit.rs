//! The evaluator: prepare the repository (fixture copy + real commit, or the live
//! repository read-only), then check each claim against what git, the ledger and the
//! test runner show. The same `evaluate_claim` serves the real claims and every
//! `--self-test` mutation.

use crate::input::{Claim, ClaimKind, Claims, Ledger, Runner, SpanClaim};
use crate::process::{self, Ran, Row, Spec};
use crate::spans::{self, Summary};
use crate::{AuditError, codes};
use serde::Serialize;
use serde_json::{Value, json};
use std::path::{Path, PathBuf};
use std::time::Duration;
use time::OffsetDateTime;

/// Everything `evident audit closeout` needs.
#[derive(Debug, Clone)]
pub struct Options {
    /// The agent's claims file (`closeout_faithfulness_claims_v1`).
    pub claims: PathBuf,
    /// The task ledger the cap claims are looked up in (`closeout_fixture_ledger_v1`),
    /// not evident's decision ledger.
    pub ledger: PathBuf,
    /// The repository the claims are about: a fixture directory, or with `live` a git
    /// work tree.
    pub repo: PathBuf,
    /// Where the records go (created if missing); in live mode never inside the repository.
    pub out: PathBuf,
    /// Audit the repository in place, read-only, instead of a committed copy.
    pub live: bool,
    /// Live mode: commits must be reachable from this ref (default `HEAD`).
    pub branch: Option<String>,
    /// Run the four negative cases through the evaluator.
    pub self_test: bool,
    /// Also write a Completion Claim v0.1 document.
    pub emit_claim: bool,
    /// Python interpreter for pytest spans (default: first of python3, python).
    pub python: Option<String>,
    /// CARGO_TARGET_DIR for cargo spans (default: inside the audit's temp dir).
    pub cargo_target_dir: Option<PathBuf>,
    /// How long one test span may run before it is killed and the claim blocked.
    pub test_timeout: Duration,
    /// How long one git call may run; a hung git blocks the audit instead of stalling it.
    pub git_timeout: Duration,
}

impl Options {
    /// Fixture mode with nothing optional: no self-test, no claim, 600 s a span, 120 s a
    /// git call.
    pub fn new(claims: PathBuf, ledger: PathBuf, repo: PathBuf, out: PathBuf) -> Self {
        Options {
            claims,
            ledger,
            repo,
            out,
            live: false,
            branch: None,
            self_test: false,
            emit_claim: false,
            python: None,
            cargo_target_dir: None,
            test_timeout: Duration::from_secs(600),
            git_timeout: Duration::from_secs(120),
        }
    }
}

/// The state of one claim after the audit.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum ClaimStatus {
    /// An observed object backs the claim.
    Verified,
    /// An observation contradicts the claim.
    Rejected,
    /// Nothing contradicts it, but the claim is not admitted (pass status unchecked).
    Unverified,
    /// The audit could not observe (repo missing, git or runner failed or timed out).
    Blocked,
}

/// The audit's overall outcome.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum Status {
    /// Every claim admitted (and, with `--self-test`, every negative case rejected).
    Pass,
    /// An observation contradicts a claim.
    Rejected,
    /// Nothing contradicts, but some claim is not admitted (a pass whose status was not
    /// checked, for one).
    Unverified,
    /// The audit could not observe: the repository is missing, or git or a runner failed.
    Blocked,
    /// `--self-test` lost a rejection, or a record failed the no-body scan.
    Fail,
}

impl Status {
    /// The name written in the records (`pass`, `rejected`, …).
    pub fn as_str(self) -> &'static str {
        match self {
            Status::Pass => "pass",
            Status::Rejected => "rejected",
            Status::Unverified => "unverified",
            Status::Blocked => "blocked",
            Status::Fail => "fail",
        }
    }
}

/// The verdict on the real claims, in the words of Completion Claim v0.1.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum Verdict {
    /// Every claim is backed by an observed object.
    Verified,
    /// An observation contradicts a claim.
    Refuted,
    /// Not proven either way (blocked, unchecked, or the emitted document refused).
    Unverified,
}

/// What one span run showed.
#[derive(Debug, Clone, Serialize)]
pub struct SpanResult {
    /// The claim the span belongs to.
    pub claim_id: String,
    /// `pytest`, `cargo` or `go`.
    pub runner: &'static str,
    /// pytest node id / cargo test name / go -run pattern.
    pub name: String,
    /// The program's basename (`python3`, `cargo`, `go`).
    pub program: String,
    /// The claim says the test passed (not only that it ran).
    pub expected_pass: bool,
    /// The claim says its pass status was checked; without it a pass is not admitted.
    pub pass_status_checked: bool,
    /// Observed: a test executed (not merely collected, skipped or not found).
    pub span_ran: bool,
    /// Observed: it ran, exited zero and a test passed.
    pub passed: bool,
    /// The runner's exit code; `None` when it never started, timed out or was killed.
    pub returncode: Option<i32>,
    /// The shared summary parser's counts and whether a summary was read.
    pub counts: Summary,
    /// Hex SHA-256 of stdout: identifies the output without recording it.
    pub stdout_sha256: String,
    /// Hex SHA-256 of stderr, for the same reason.
    pub stderr_sha256: String,
    /// Always false: the record carries no output body (the peer's field).
    pub body_in_receipt: bool,
}

/// One claim's outcome.
#[derive(Debug, Clone)]
pub struct ClaimResult {
    /// The claim as checked (for a negative case, the mutated one).
    pub claim: Claim,
    /// What the audit made of it.
    pub status: ClaimStatus,
    /// Error codes with a message each (metadata only).
    pub codes: Vec<(&'static str, String)>,
    /// What was observed (no bodies): keys the emitted claim compares.
    pub observed: Option<Value>,
    /// When the observation finished: the emitted evidence item's `at`.
    pub observed_at: OffsetDateTime,
    /// The span run, for a test-span claim that got as far as running.
    pub span: Option<SpanResult>,
}

impl ClaimResult {
    /// Whether the check raised `code`: how `--self-test` sees a negative case caught.
    pub fn has(&self, code: &str) -> bool {
        self.codes.iter().any(|(c, _)| *c == code)
    }
}

/// One negative case of `--self-test`.
#[derive(Debug, Clone)]
pub struct NegativeCase {
    /// The case's name in [`NEGATIVE_CASES`] (`fake_commit_claim`, …).
    pub case_id: &'static str,
    /// The code the evaluator must raise for the mutated claim.
    pub expected_code: &'static str,
    /// The claim mutated and how; `None` when the claims have no row to mutate.
    pub mutation: Option<(String, &'static str, Value, Value)>,
    /// The evaluator's result on the mutated claim.
    pub result: Option<ClaimResult>,
    /// True when `expected_code` came back: the evaluator still catches this lie.
    pub observed: bool,
    /// Why the case was not observed, for the findings.
    pub reason: Option<String>,
}

/// The four mutations of SEMANTICS.md.
pub const NEGATIVE_CASES: [(&str, &str); 4] = [
    ("fake_cap_claim", codes::FAKE_CAP),
    ("fake_commit_claim", codes::FAKE_COMMIT),
    ("fake_test_claim", codes::FAKE_TEST),
    ("unchecked_pass_claim", codes::PASS_STATUS_NOT_CHECKED),
];

/// Everything the audit observed, before records are written.
pub struct Audit {
    /// What the audit was asked to do.
    pub options: Options,
    /// When it started: the emitted claim dates its mutations here, before any observation.
    pub started_at: OffsetDateTime,
    /// When it finished: the emitted claim is decided at this time.
    pub finished_at: OffsetDateTime,
    /// What the inputs held but the audit did not use (unknown fields), for the person.
    pub warnings: Vec<String>,
    /// The claims as read, in file order.
    pub claims: Vec<Claim>,
    /// Set when the audit stopped before any claim could be checked.
    pub blocked: Option<(&'static str, String)>,
    /// The commit id HEAD was read back as (the fixture's commit, or the live HEAD).
    pub head: Option<String>,
    /// The ref commit claims must be reachable from (`HEAD` unless `--branch`).
    pub branch: String,
    /// One result per claim, in the order of `claims`.
    pub results: Vec<ClaimResult>,
    /// The `--self-test` cases, in [`NEGATIVE_CASES`] order (empty without it).
    pub negative_cases: Vec<NegativeCase>,
    /// Every program run (git and runners), metadata only: the record of what was done.
    pub rows: Vec<Row>,
    /// How many of `rows` belong to the real claims (the rest are `--self-test`).
    pub exercise_rows: usize,
    /// Captured outputs, kept only for the final no-body scan.
    pub bodies: Vec<Vec<u8>>,
}

/// The audit's one clock: every time it records comes from here.
pub fn now() -> OffsetDateTime {
    OffsetDateTime::now_utc()
}

struct Workspace<'o> {
    opts: &'o Options,
    /// Where commit claims are resolved (the copy, or the live repository).
    git_cwd: PathBuf,
    head: String,
    branch_oid: String,
    /// Where spans run: the committed copy, or a clean clone of the live HEAD.
    span_root: Option<PathBuf>,
    /// Live mode: `--repo` relative to the work tree's top level.
    live_offset: PathBuf,
    live_toplevel: PathBuf,
    tmp: tempfile::TempDir,
    python: Option<Option<String>>,
    rows: Vec<Row>,
    bodies: Vec<Vec<u8>>,
    /// The repository's `neutralise` arguments (live mode), on every git call.
    git_args: Vec<String>,
    /// Set when a live-mode clone failed: spans are then blocked.
    clone_failed: Option<String>,
    /// Live mode: the repository is a shallow clone (history is cut off).
    shallow: bool,
}

impl Workspace<'_> {
    fn keep(&mut self, ran: &Ran, body: bool) {
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
    fn git(&mut self, role: &str, cwd: &Path, args: &[&str], body: bool) -> Ran {
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

fn why(ran: &Ran) -> String {
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

/// Runs the whole audit. Input errors (bad claims or ledger file) are returned as
/// errors; everything the world shows, including a missing repository, is a result.
pub fn run(opts: &Options) -> Result<Audit, AuditError> {
    let started_at = now();
    let Claims {
        claims,
        mut warnings,
    } = crate::input::read_claims(&opts.claims)?;
    let ledger = crate::input::read_ledger(&opts.ledger)?;
    warnings.extend(ledger.warnings.iter().cloned());
    if let Some(b) = &opts.branch {
        if !opts.live {
            return Err(AuditError::Usage(
                "--branch applies only with --live".into(),
            ));
        }
        if b.is_empty() || b.starts_with('-') || b.contains('\0') {
            return Err(AuditError::Usage(format!(
                "--branch {b:?}: not a usable ref name"
            )));
        }
    }
    let mut audit = Audit {
        options: opts.clone(),
        started_at,
        finished_at: started_at,
        warnings,
        claims: claims.clone(),
        blocked: None,
        head: None,
        branch: opts.branch.clone().unwrap_or_else(|| "HEAD".into()),
        results: Vec::new(),
        negative_cases: Vec::new(),
        rows: Vec::new(),
        exercise_rows: 0,
        bodies: Vec::new(),
    };
    if !opts.repo.is_dir() {
        audit.blocked = Some((
            codes::REPO_MISSING,
            format!("{}: not a directory", opts.repo.display()),
        ));
        audit.finished_at = now();
        return Ok(audit);
    }
    let tmp = tempfile::Builder::new()
        .prefix("evident-audit-")
        .tempdir()
        .map_err(|source| AuditError::Io {
            file: "temporary directory".into(),
            source,
        })?;
    let mut ws = Workspace {
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
    };
    let prepared = if opts.live {
        prepare_live(&mut ws)?
    } else {
        prepare_fixture(&mut ws)
    };
    if let Err((code, message)) = prepared {
        audit.blocked = Some((code, message));
    } else {
        audit.head = Some(ws.head.clone());
        for claim in &claims {
            let r = evaluate_claim(&mut ws, &ledger, claim);
            audit.results.push(r);
        }
        audit.exercise_rows = ws.rows.len();
        if opts.self_test {
            for (case_id, expected_code) in NEGATIVE_CASES {
                let case = match mutate(&claims, &ledger, case_id) {
                    None => NegativeCase {
                        case_id,
                        expected_code,
                        mutation: None,
                        result: None,
                        observed: false,
                        reason: Some(format!(
                            "the claims have no row this case can mutate ({})",
                            match case_id {
                                "fake_commit_claim" => "a commit claim",
                                "fake_cap_claim" => "a task_ledger_cap claim",
                                "fake_test_claim" => "a test span claim",
                                _ => "a test span claim with expected_pass true",
                            }
                        )),
                    },
                    Some((claim, mutation)) => {
                        let r = evaluate_claim(&mut ws, &ledger, &claim);
                        let observed = r.has(expected_code);
                        NegativeCase {
                            case_id,
                            expected_code,
                            mutation: Some(mutation),
                            reason: (!observed).then(|| {
                                format!(
                                    "the mutated claim came back {:?} without {expected_code}",
                                    r.status
                                )
                            }),
                            result: Some(r),
                            observed,
                        }
                    }
                };
                audit.negative_cases.push(case);
            }
        }
    }
    if audit.exercise_rows == 0 {
        audit.exercise_rows = ws.rows.len();
    }
    audit.rows = std::mem::take(&mut ws.rows);
    audit.bodies = std::mem::take(&mut ws.bodies);
    audit.finished_at = now();
    Ok(audit)
}

type Prepared = Result<(), (&'static str, String)>;

/// Fixture mode: copy the repository (without `.git`) to a temporary directory and
/// commit it with real git: init, two config calls, add, commit, rev-parse HEAD.
fn prepare_fixture(ws: &mut Workspace) -> Prepared {
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
fn prepare_live(ws: &mut Workspace) -> Result<Prepared, AuditError> {
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

/// Live mode: clone the repository (read-only for the source) and check out HEAD.
fn live_span_root(ws: &mut Workspace) -> Result<PathBuf, String> {
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
            Err(why(&ran))
        }
    } else {
        Err(why(&ran))
    };
    match &result {
        Ok(r) => ws.span_root = Some(r.clone()),
        Err(e) => ws.clone_failed = Some(e.clone()),
    }
    result
}

fn is_oid(s: &str) -> bool {
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

/// Checks one claim. Used for the real claims and for every negative case.
fn evaluate_claim(ws: &mut Workspace, ledger: &Ledger, claim: &Claim) -> ClaimResult {
    let mut r = ClaimResult {
        claim: claim.clone(),
        status: ClaimStatus::Blocked,
        codes: Vec::new(),
        observed: None,
        observed_at: now(),
        span: None,
    };
    match &claim.kind {
        ClaimKind::Commit { commit_ref } => check_commit(ws, commit_ref, &mut r),
        ClaimKind::Cap { cap_id } => {
            let row = ledger.find(cap_id);
            r.observed = Some(json!({
                "present": row.is_some(),
                "status": row.and_then(|c| c.status.clone()),
            }));
            if row.is_some() {
                r.status = ClaimStatus::Verified;
            } else {
                r.status = ClaimStatus::Rejected;
                r.codes.push((
                    codes::FAKE_CAP,
                    format!("cap_id \"{cap_id}\" is not in the ledger"),
                ));
            }
        }
        ClaimKind::Span(span) => check_span(ws, &claim.claim_id, span, &mut r),
    }
    r.observed_at = now();
    r
}

fn check_commit(ws: &mut Workspace, commit_ref: &str, r: &mut ClaimResult) {
    let spec = format!("{commit_ref}^{{commit}}");
    let cwd = ws.git_cwd.clone();
    let ran = ws.git(
        "git_resolve_commit",
        &cwd,
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
    let resolves = ran.ok() && is_oid(&oid);
    if !resolves && ran.row.returncode != Some(1) {
        r.codes.push((codes::GIT_FAILED, why(&ran)));
        return;
    }
    // In a shallow clone a full commit id that does not resolve may exist beyond the
    // cut: that is not an observation either way. (The all-zero id is git's "no
    // object" and never exists; a name that does not resolve is not affected.)
    let hexlike = commit_ref.len() >= 7 && commit_ref.bytes().all(|b| b.is_ascii_hexdigit());
    let null_oid = commit_ref.bytes().all(|b| b == b'0');
    if !resolves && ws.opts.live && ws.shallow && hexlike && !null_oid {
        r.codes.push((
            codes::GIT_FAILED,
            format!(
                "commit_ref \"{commit_ref}\" does not resolve, but the repository is shallow: \
                 it may exist beyond the cut (fetch the full history to decide)"
            ),
        ));
        return;
    }
    if !resolves {
        r.status = ClaimStatus::Rejected;
        r.observed = Some(if ws.opts.live {
            json!({"resolves": false, "reachable": false})
        } else {
            json!({"resolves": false, "is_head": false})
        });
        r.codes.push((
            codes::FAKE_COMMIT,
            format!("commit_ref \"{commit_ref}\" does not resolve to a commit"),
        ));
        return;
    }
    if !ws.opts.live {
        let is_head = oid.eq_ignore_ascii_case(&ws.head);
        r.observed = Some(json!({"resolves": true, "is_head": is_head, "oid": oid}));
        if is_head {
            r.status = ClaimStatus::Verified;
        } else {
            r.status = ClaimStatus::Rejected;
            r.codes.push((
                codes::FAKE_COMMIT,
                format!("commit_ref \"{commit_ref}\" is {oid}, not the observed HEAD"),
            ));
        }
        return;
    }
    let branch_oid = ws.branch_oid.clone();
    let ran = ws.git(
        "git_is_ancestor",
        &cwd,
        &["merge-base", "--is-ancestor", &oid, &branch_oid],
        false,
    );
    match ran.row.returncode {
        Some(0) | Some(1) => {
            let reachable = ran.row.returncode == Some(0);
            let branch = ws.opts.branch.clone().unwrap_or_else(|| "HEAD".into());
            r.observed = Some(json!({
                "resolves": true,
                "reachable": reachable,
                "oid": oid,
                "reachable_from": branch,
            }));
            if reachable {
                r.status = ClaimStatus::Verified;
            } else {
                r.status = ClaimStatus::Rejected;
                r.codes.push((
                    codes::FAKE_COMMIT,
                    format!("commit_ref \"{commit_ref}\" ({oid}) is not reachable from {branch}"),
                ));
            }
        }
        _ => r.codes.push((codes::GIT_FAILED, why(&ran))),
    }
}

/// Removed from the test runners' environment: they could turn a run into
/// `--collect-only` or load a plugin that rewrites the outcome.
const RUNNER_ENV_REMOVED: &[&str] = &["PYTEST_ADDOPTS", "PYTEST_PLUGINS"];

fn select_python(ws: &mut Workspace, cwd: &Path) -> Option<String> {
    if let Some(p) = &ws.python {
        return p.clone();
    }
    let candidates: Vec<String> = match &ws.opts.python {
        Some(p) => vec![p.clone()],
        None => vec!["python3".into(), "python".into()],
    };
    let mut found = None;
    for py in candidates {
        let ran = process::run(Spec {
            role: "pytest_probe",
            program: &py,
            args: vec!["-m".into(), "pytest".into(), "--version".into()],
            shown: None,
            cwd,
            env: process::inherited_env(
                RUNNER_ENV_REMOVED,
                &[("PYTHONDONTWRITEBYTECODE", "1".into())],
            ),
            timeout: ws.opts.git_timeout,
            reap: false,
        });
        ws.keep(&ran, true);
        if ran.ok() {
            found = Some(py);
            break;
        }
    }
    ws.python = Some(found.clone());
    found
}

fn check_span(ws: &mut Workspace, claim_id: &str, span: &SpanClaim, r: &mut ClaimResult) {
    let root = if ws.opts.live {
        match live_span_root(ws) {
            Ok(root) => root,
            Err(e) => {
                r.codes.push((
                    codes::GIT_FAILED,
                    format!("could not clone HEAD to run the span: {e}"),
                ));
                return;
            }
        }
    } else {
        match &ws.span_root {
            Some(root) => root.clone(),
            None => {
                r.codes
                    .push((codes::GIT_FAILED, "no prepared repository".into()));
                return;
            }
        }
    };
    let cwd = match &span.cwd {
        Some(c) => root.join(c),
        None => root,
    };
    let mut result = SpanResult {
        claim_id: claim_id.to_string(),
        runner: span.runner.label(),
        name: span.name.clone(),
        program: String::new(),
        expected_pass: span.expected_pass,
        pass_status_checked: span.pass_status_checked,
        span_ran: false,
        passed: false,
        returncode: None,
        counts: Summary::default(),
        stdout_sha256: process::sha256_hex(b""),
        stderr_sha256: process::sha256_hex(b""),
        body_in_receipt: false,
    };
    if cwd.is_dir() {
        let program = match span.runner {
            Runner::Pytest => match select_python(ws, &cwd) {
                Some(p) => p,
                None => {
                    r.codes.push((
                        codes::RUNNER_UNAVAILABLE,
                        "no Python interpreter answers `-m pytest --version`".into(),
                    ));
                    return;
                }
            },
            Runner::Cargo => "cargo".into(),
            Runner::Go => "go".into(),
        };
        let target = ws
            .opts
            .cargo_target_dir
            .clone()
            .unwrap_or_else(|| ws.tmp.path().join("cargo-target"));
        let env: Vec<(&str, String)> = match span.runner {
            Runner::Pytest => vec![("PYTHONDONTWRITEBYTECODE", "1".into())],
            Runner::Cargo => vec![
                ("CARGO_TARGET_DIR", target.to_string_lossy().into_owned()),
                ("CARGO_TERM_COLOR", "never".into()),
            ],
            Runner::Go => vec![],
        };
        let role = span.runner.claim_type();
        let ran = process::run(Spec {
            role,
            program: &program,
            args: spans::argv(span),
            shown: None,
            cwd: &cwd,
            env: process::inherited_env(RUNNER_ENV_REMOVED, &env),
            timeout: ws.opts.test_timeout,
            // No daemon of the test outlives it (the gate's rule).
            reap: true,
        });
        ws.keep(&ran, true);
        result.program = ran.row.args[0].clone();
        result.returncode = ran.row.returncode;
        result.stdout_sha256 = ran.row.stdout_sha256.clone();
        result.stderr_sha256 = ran.row.stderr_sha256.clone();
        if let Some(e) = &ran.row.spawn_error {
            r.codes.push((
                codes::RUNNER_UNAVAILABLE,
                format!("`{program}` could not start: {e}"),
            ));
            r.span = Some(result);
            return;
        }
        if ran.row.timed_out {
            r.codes.push((
                codes::RUNNER_TIMEOUT,
                format!(
                    "the span did not finish within {}s",
                    ws.opts.test_timeout.as_secs()
                ),
            ));
            r.span = Some(result);
            return;
        }
        result.counts = spans::summary(span.runner, &ran.parser);
        let (ran_, passed) = spans::judge(span.runner, ran.row.returncode, &result.counts);
        result.span_ran = ran_;
        result.passed = passed;
    }
    let where_ = span
        .cwd
        .as_deref()
        .map(|c| format!(" (in {c})"))
        .unwrap_or_default();
    if !cwd.is_dir() {
        r.codes.push((
            codes::FAKE_TEST,
            format!("the span's cwd{where_} is not a directory in the repository: nothing ran"),
        ));
    } else if !result.span_ran {
        r.codes.push((
            codes::FAKE_TEST,
            format!(
                "{} `{}`{where_} ran no test (exit {})",
                span.runner.label(),
                span.name,
                result
                    .returncode
                    .map(|c| c.to_string())
                    .unwrap_or_else(|| "none".into())
            ),
        ));
    }
    if span.expected_pass {
        if !span.pass_status_checked {
            r.codes.push((
                codes::PASS_STATUS_NOT_CHECKED,
                "the claim says the test passed but its pass status was not checked".into(),
            ));
        } else if !result.passed {
            r.codes.push((
                codes::PASS_STATUS_NOT_CHECKED,
                "the claim says the test passed but the span did not pass (exit zero with a passed test)"
                    .into(),
            ));
        }
    }
    let contradicted = !result.span_ran || (span.expected_pass && !result.passed);
    r.status = if contradicted {
        ClaimStatus::Rejected
    } else if span.expected_pass && !span.pass_status_checked {
        ClaimStatus::Unverified
    } else {
        ClaimStatus::Verified
    };
    let mut observed = json!({
        "exit_code": result.returncode,
        "ran": result.span_ran,
        "passed": result.passed,
        "tests_passed": result.counts.counts.passed,
        "tests_failed": result.counts.counts.failed,
        "tests_skipped": result.counts.counts.skipped,
    });
    if !result.counts.summary_read {
        observed["summary_read"] = json!(false);
    }
    r.observed = Some(observed);
    r.span = Some(result);
}

/// Applies one negative case to the first claim it fits. Returns the mutated claim
/// and `(claim_id, field, from, to)`.
#[allow(clippy::type_complexity)]
pub fn mutate(
    claims: &[Claim],
    ledger: &Ledger,
    case_id: &str,
) -> Option<(Claim, (String, &'static str, Value, Value))> {
    for claim in claims {
        let mut c = claim.clone();
        let id = claim.claim_id.clone();
        match (&mut c.kind, case_id) {
            (ClaimKind::Commit { commit_ref }, "fake_commit_claim") => {
                let from = json!(commit_ref.clone());
                *commit_ref = "0".repeat(40);
                let to = json!(commit_ref.clone());
                return Some((c, (id, "commit_ref", from, to)));
            }
            (ClaimKind::Cap { cap_id }, "fake_cap_claim") => {
                let from = json!(cap_id.clone());
                let mut missing = "cap_missing_from_fixture_ledger".to_string();
                while ledger.find(&missing).is_some() {
                    missing.push('_');
                }
                *cap_id = missing;
                let to = json!(cap_id.clone());
                return Some((c, (id, "cap_id", from, to)));
            }
            (ClaimKind::Span(span), "fake_test_claim") => {
                let from = json!(span.name.clone());
                span.name = match span.runner {
                    Runner::Pytest => match span.name.rsplit_once("::") {
                        Some((file, _)) => format!("{file}::test_missing_node"),
                        None => format!("{}::test_missing_node", span.name),
                    },
                    Runner::Cargo => match span.name.rsplit_once("::") {
                        Some((module, _)) => format!("{module}::test_missing_node"),
                        None => "test_missing_node".into(),
                    },
                    Runner::Go => "^TestMissingNode$".into(),
                };
                let to = json!(span.name.clone());
                let field = span.runner.name_field();
                return Some((c, (id, field, from, to)));
            }
            (ClaimKind::Span(span), "unchecked_pass_claim") if span.expected_pass => {
                let from = json!(span.pass_status_checked);
                span.pass_status_checked = false;
                return Some((c, (id, "pass_status_checked", from, json!(false))));
            }
            _ => {}
        }
    }
    None
}

impl Audit {
    /// The verdict on the real claims (seed 000's words). When the claims name a commit
    /// or a ledger item (the emitted Completion Claim has mutations), it is
    /// `evident_rules::decide` on that document (see [`crate::emit::decide`]): the
    /// verdict `evident verify` gives it, by construction. Claims of test spans only
    /// have no mutation, which the rules can never verify or refute (evidence that
    /// covers no mutation speaks for none), so there the audit's own rule decides: a
    /// contradiction refutes, every claim verified verifies (docs/audit.md, "The
    /// audit's verdict"). A refused document, and an audit that stopped before
    /// observing, are unverified.
    pub fn verdict(&self) -> Verdict {
        self.decision().0
    }

    /// [`Audit::verdict`] with its reason and the rules' unmet requirements.
    pub fn decision(&self) -> (Verdict, String, Vec<String>) {
        if let Some((code, message)) = &self.blocked {
            return (
                Verdict::Unverified,
                format!("{code}: {message}"),
                Vec::new(),
            );
        }
        let claims_a_mutation = self
            .claims
            .iter()
            .any(|c| !matches!(c.kind, ClaimKind::Span(_)));
        if !claims_a_mutation {
            return (
                self.span_only_verdict(),
                "only test spans are claimed (no mutation): decided by the audit's own rule, not by evident_rules::decide".into(),
                Vec::new(),
            );
        }
        match crate::emit::decide(self) {
            Ok(v) => {
                let verdict = match v.state {
                    evident_rules::State::Verified => Verdict::Verified,
                    evident_rules::State::Refuted => Verdict::Refuted,
                    evident_rules::State::Unverified | evident_rules::State::Partial => {
                        Verdict::Unverified
                    }
                };
                (verdict, v.reason, v.unmet)
            }
            Err(e) => (
                Verdict::Unverified,
                format!("the audit's claim document was refused: {e}"),
                Vec::new(),
            ),
        }
    }

    /// Claims of test spans only: a contradiction refutes, all verified verifies,
    /// anything else (not observed, pass unchecked) leaves them unverified.
    fn span_only_verdict(&self) -> Verdict {
        if self
            .results
            .iter()
            .any(|r| r.status == ClaimStatus::Rejected)
        {
            Verdict::Refuted
        } else if !self.results.is_empty()
            && self
                .results
                .iter()
                .all(|r| r.status == ClaimStatus::Verified)
        {
            Verdict::Verified
        } else {
            Verdict::Unverified
        }
    }

    /// The `--self-test` cases the evaluator did not reject: any makes the audit fail.
    pub fn missing_negative_cases(&self) -> Vec<&'static str> {
        if !self.options.self_test || self.blocked.is_some() {
            return Vec::new();
        }
        self.negative_cases
            .iter()
            .filter(|c| !c.observed)
            .map(|c| c.case_id)
            .collect()
    }

    /// The overall status before the record scan.
    pub fn status(&self) -> Status {
        if self.blocked.is_some() {
            return Status::Blocked;
        }
        if !self.missing_negative_cases().is_empty() {
            return Status::Fail;
        }
        match self.verdict() {
            Verdict::Verified => Status::Pass,
            Verdict::Refuted => Status::Rejected,
            Verdict::Unverified => {
                if self
                    .results
                    .iter()
                    .any(|r| r.status == ClaimStatus::Blocked)
                {
                    Status::Blocked
                } else {
                    Status::Unverified
                }
            }
        }
    }
}
