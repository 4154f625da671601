//! The evaluator: prepare the repository (fixture copy + real commit, or the live
//! repository read-only), then check each claim against what git, the ledger and the
//! test runner show. The same `evaluate_claim` serves the real claims and every
//! `--self-test` mutation.
//!
//! By topic: `model` (options and results), `workspace` (the temporary directory,
//! the prepared repository and the git runner), `checks` (one claim against what is
//! observed), `selftest` (the negative cases) and `verdict` (results to verdict and
//! status). This file holds [`run`], which drives them in order.

mod checks;
mod model;
mod selftest;
mod verdict;
mod workspace;

pub use model::{Audit, ClaimResult, ClaimStatus, Options, SpanResult, Status, Verdict, now};
pub use selftest::{NEGATIVE_CASES, NegativeCase, mutate};

use crate::AuditError;
use crate::codes;
use crate::input::Claims;
use checks::evaluate_claim;
use workspace::{Workspace, prepare_fixture, prepare_live};

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
    let mut ws = Workspace::new(opts)?;
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
            audit.negative_cases = selftest::run_cases(&mut ws, &claims, &ledger);
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
