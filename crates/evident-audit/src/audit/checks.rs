//! The checks: one claim (commit, ledger item or test span) against what git, the task
//! ledger and the test runner show.

use super::model::{ClaimResult, ClaimStatus, SpanResult, now};
use super::workspace::{Workspace, is_oid, live_span_root, why};
use crate::codes;
use crate::input::{Claim, ClaimKind, Ledger, Runner, SpanClaim};
use crate::process::{self, Spec};
use crate::spans::{self, Summary};
use serde_json::json;
use std::path::Path;

/// Checks one claim. Used for the real claims and for every negative case.
pub(super) fn evaluate_claim(ws: &mut Workspace, ledger: &Ledger, claim: &Claim) -> ClaimResult {
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
