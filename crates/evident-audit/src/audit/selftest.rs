//! `--self-test`: the four negative cases, each a mutation of a real claim that the
//! evaluator must reject with its code, run through the same checks as the real claims.

use super::checks::evaluate_claim;
use super::model::ClaimResult;
use super::workspace::Workspace;
use crate::codes;
use crate::input::{Claim, ClaimKind, Ledger, Runner};
use serde_json::{Value, json};

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

/// Runs every case of [`NEGATIVE_CASES`] through the evaluator, in order: each mutates
/// a real claim and must come back with its code.
pub(super) fn run_cases(
    ws: &mut Workspace,
    claims: &[Claim],
    ledger: &Ledger,
) -> Vec<NegativeCase> {
    let mut cases = Vec::new();
    for (case_id, expected_code) in NEGATIVE_CASES {
        let case = match mutate(claims, ledger, case_id) {
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
                let r = evaluate_claim(ws, ledger, &claim);
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
        cases.push(case);
    }
    cases
}
