//! Close-out audit (seed 002): an agent's "I committed the change, closed the ledger
//! item, and the test passed" is three claims; each is admitted only when an object
//! evident observes backs it — a commit read back with real git, a ledger row, a test
//! span run with the real runner — and "the test ran" and "the test passed" are kept
//! apart.
//!
//! The input formats, rejection codes and records follow the public implementation
//! `agent_closeout_faithfulness_audit` of github.com/wcook04/plectis (Apache-2.0);
//! see `docs/audit.md` for what evident does differently.

#![warn(missing_docs)]

pub mod audit;
pub mod emit;
pub mod input;
pub mod json;
pub mod process;
pub mod records;
pub mod spans;

pub use audit::{Audit, ClaimStatus, Options, Status, Verdict};

use serde_json::Value;
use std::path::{Path, PathBuf};

/// Rejection and blocking codes. The first five are the peer's, spelled exactly.
pub mod codes {
    /// The commit ref does not resolve, is not HEAD (fixture) or not reachable (live).
    pub const FAKE_COMMIT: &str = "CLOSEOUT_FAKE_COMMIT_CLAIM";
    /// The claimed ledger item (`cap_id`) is not in the task ledger.
    pub const FAKE_CAP: &str = "CLOSEOUT_FAKE_CAP_CLAIM";
    /// The claimed test span ran no test, or its `cwd` is not in the repository.
    pub const FAKE_TEST: &str = "CLOSEOUT_FAKE_TEST_CLAIM";
    /// Kept under the peer's name for every runner (pytest, cargo, go).
    /// A pass was claimed and the span did not pass, or its pass status was not checked.
    pub const PASS_STATUS_NOT_CHECKED: &str = "CLOSEOUT_PYTEST_PASS_STATUS_NOT_CHECKED";
    /// `--repo` is not a directory (or, live, not a git work tree): nothing to observe.
    pub const REPO_MISSING: &str = "CLOSEOUT_PUBLIC_FIXTURE_REPO_MISSING";
    // evident's own: conditions where nothing could be observed (blocked, never a match).
    /// A git step failed, timed out or could not start: the claim is blocked, not judged.
    pub const GIT_FAILED: &str = "CLOSEOUT_GIT_OBSERVATION_FAILED";
    /// No Python with pytest, or `cargo` / `go` could not start: blocked.
    pub const RUNNER_UNAVAILABLE: &str = "CLOSEOUT_TEST_RUNNER_UNAVAILABLE";
    /// A span outlived its timeout: blocked, since a hung test proves nothing.
    pub const RUNNER_TIMEOUT: &str = "CLOSEOUT_TEST_RUNNER_TIMEOUT";
    /// `--self-test`: a negative case came back without its code, so the evaluator lost a
    /// rejection (the audit fails).
    pub const NEGATIVE_CASE_MISSING: &str = "CLOSEOUT_NEGATIVE_CASE_MISSING";
    /// The final scan found an output body in a record: only the scan and verdict are written.
    pub const BODY_IN_RECORD: &str = "CLOSEOUT_BODY_IN_RECORD";
}

/// Why the audit could not run at all (as opposed to what it observed, which is a result).
#[derive(Debug, thiserror::Error)]
pub enum AuditError {
    /// A bad input file: names the file and the JSON path.
    #[error("{file}: {path}: {message}")]
    Input {
        /// The input file, as given.
        file: String,
        /// The JSON path of the offending value (`$` = the document).
        path: String,
        /// What is wrong, for a person.
        message: String,
    },
    /// A file or directory could not be read or written.
    #[error("{file}")]
    Io {
        /// The file (or `temporary directory`) the operation was on.
        file: String,
        /// The operating system's error.
        #[source]
        source: std::io::Error,
    },
    /// Options that cannot be used as given (`--branch` without `--live` or naming no
    /// commit, `--out` inside a live repository), in one sentence.
    #[error("{0}")]
    Usage(String),
}

/// What `closeout` did.
#[derive(Debug)]
pub struct Outcome {
    /// The overall outcome, which the CLI maps to its exit code.
    pub status: Status,
    /// The real claims' verdict in Completion Claim words (see [`Audit::verdict`]).
    pub verdict: Verdict,
    /// The result record as written.
    pub result: Value,
    /// Files written, in order: result, board, receipt, and the claim if emitted.
    pub written: Vec<PathBuf>,
    /// What the inputs held but the audit did not use, for the person running it.
    pub warnings: Vec<String>,
}

/// The nearest directory at or above `repo` that holds a `.git`.
fn work_tree_root(repo: &Path) -> Option<PathBuf> {
    let mut dir = std::fs::canonicalize(repo).ok()?;
    loop {
        if dir.join(".git").exists() {
            return Some(dir);
        }
        if !dir.pop() {
            return None;
        }
    }
}

/// `path` made absolute through its nearest existing ancestor (symlinks resolved).
fn absolute(path: &Path) -> PathBuf {
    let mut rest = Vec::new();
    let mut p = path.to_path_buf();
    if p.is_relative()
        && let Ok(cwd) = std::env::current_dir()
    {
        p = cwd.join(p);
    }
    loop {
        if let Ok(c) = std::fs::canonicalize(&p) {
            let mut out = c;
            for part in rest.iter().rev() {
                out.push(part);
            }
            return out;
        }
        match (p.file_name().map(|f| f.to_os_string()), p.parent()) {
            (Some(name), Some(parent)) => {
                rest.push(name);
                p = parent.to_path_buf();
            }
            _ => return path.to_path_buf(),
        }
    }
}

fn write_json(path: &Path, v: &Value) -> Result<(), AuditError> {
    let mut text = serde_json::to_string_pretty(v).unwrap_or_else(|_| "{}".into());
    text.push('\n');
    std::fs::write(path, text).map_err(|source| AuditError::Io {
        file: path.display().to_string(),
        source,
    })
}

/// Runs the audit, scans the records for bodies, and writes them to `opts.out`.
pub fn closeout(opts: &Options) -> Result<Outcome, AuditError> {
    if opts.live
        && let Some(top) = work_tree_root(&opts.repo)
        && absolute(&opts.out).starts_with(&top)
    {
        return Err(AuditError::Usage(format!(
            "--out {} is inside the repository {}: live mode never writes to the repository",
            opts.out.display(),
            top.display()
        )));
    }
    std::fs::create_dir_all(&opts.out).map_err(|source| AuditError::Io {
        file: opts.out.display().to_string(),
        source,
    })?;
    let a = audit::run(opts)?;
    let result_path = opts.out.join(records::RESULT_FILE);
    let board_path = opts.out.join(records::BOARD_FILE);
    let receipt_path = opts.out.join(records::RECEIPT_FILE);
    let claim_path = opts.out.join(records::CLAIM_FILE);
    let mut written = vec![
        result_path.clone(),
        board_path.clone(),
        receipt_path.clone(),
    ];
    if opts.emit_claim {
        written.push(claim_path.clone());
    }
    let paths: Vec<String> = written.iter().map(|p| p.display().to_string()).collect();
    let claim_shown = opts.emit_claim.then(|| claim_path.display().to_string());
    let (mut result, mut board, mut receipt) = records::build(&a, &paths, claim_shown.as_deref());
    let claim = opts.emit_claim.then(|| emit::claim_document(&a));
    let scan = {
        let mut recs: Vec<(&str, &Value)> = vec![
            ("result", &result),
            ("board", &board),
            ("receipt", &receipt),
        ];
        if let Some(c) = &claim {
            recs.push(("claim", c));
        }
        let inputs: Vec<String> = a.rows.iter().flat_map(|r| r.args.iter().cloned()).collect();
        records::scan(&recs, &a.bodies, &inputs)
    };
    let mut status = a.status();
    if scan.pass() {
        result["receipt_body_scan"] = scan.to_json();
    } else {
        // Never write a record that carries a body: write the scan and the verdict only.
        status = Status::Fail;
        result = serde_json::json!({
            "schema_version": "agent_closeout_faithfulness_audit_receipt_v1",
            "organ_id": records::ORGAN_ID,
            "status": "fail",
            "error_codes": [codes::BODY_IN_RECORD],
            "receipt_body_scan": scan.to_json(),
            "receipt_paths": paths,
            "body_in_receipt": false,
        });
        board["status"] = "fail".into();
        board["counts"] = serde_json::json!({});
        receipt["receipt_body_scan_status"] = "fail".into();
        receipt["status"] = "fail".into();
    }
    write_json(&result_path, &result)?;
    write_json(&board_path, &board)?;
    write_json(&receipt_path, &receipt)?;
    if let Some(c) = &claim {
        if scan.pass() {
            write_json(&claim_path, c)?;
        } else {
            written.pop();
        }
    }
    Ok(Outcome {
        status,
        verdict: a.verdict(),
        result,
        written,
        warnings: a.warnings,
    })
}
