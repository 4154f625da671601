//! What the audit is asked (`Options`) and what it found: each claim's status and
//! observation, the span runs, and the `Audit` that records are built from.

use super::selftest::NegativeCase;
use crate::input::Claim;
use crate::process::Row;
use crate::spans::Summary;
use serde::Serialize;
use serde_json::Value;
use std::path::PathBuf;
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
    /// The `--self-test` cases, in [`NEGATIVE_CASES`](super::NEGATIVE_CASES) order (empty without it).
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
