//! The records written to `--out`: result, board and validation receipt (the peer's
//! three files, fields where they make sense), all metadata-only, and the final scan
//! that proves no record carries an output body.

use crate::audit::{Audit, ClaimResult, ClaimStatus, NEGATIVE_CASES, Status};
use crate::codes;
use crate::emit::{VERIFIER_ID, rfc3339};
use crate::input::ClaimKind;
use serde_json::{Value, json};
use std::collections::BTreeSet;

/// The peer's name for this audit, kept in every record so its tools read ours.
pub const ORGAN_ID: &str = "agent_closeout_faithfulness_audit";
/// The result record's file name in `--out` (the peer's).
pub const RESULT_FILE: &str = "agent_closeout_faithfulness_audit_result.json";
/// The board (summary counts) record's file name in `--out` (the peer's).
pub const BOARD_FILE: &str = "agent_closeout_faithfulness_audit_board.json";
/// The validation receipt's file name in `--out` (the peer's).
pub const RECEIPT_FILE: &str = "agent_closeout_faithfulness_audit_validation_receipt.json";
/// The emitted Completion Claim's file name in `--out` (`--emit-claim`).
pub const CLAIM_FILE: &str = "agent_closeout_completion_claim.json";

/// Keys that would carry an output or file body; no record may use them.
pub const FORBIDDEN_BODY_KEYS: &[&str] = &[
    "stdout",
    "stderr",
    "output",
    "body",
    "raw_output",
    "source_excerpt",
    "content",
];

/// Output lines shorter than this are too generic to prove a body leaked.
pub const MIN_BODY_LINE_CHARS: usize = 12;

const ANTI_CLAIM: &str = "evident's close-out audit admits a commit, ledger-item or test-span claim only when an object it observed with real git, the ledger file and a real test runner backs it, and counts a pass only when the span exited zero with a passed test and the claim's pass status was checked. It does not prove the change is correct, that the ledger item's work was done, that tests other than the named span pass, or authorize a release.";

fn claim_fields(r: &ClaimResult) -> Value {
    let mut v = json!({
        "claim_id": r.claim.claim_id,
        "claim_type": r.claim.claim_type(),
        "status": r.status,
        "error_codes": r.codes.iter().map(|(c, _)| *c).collect::<Vec<_>>(),
        "observed": r.observed,
        "observed_at": rfc3339(r.observed_at),
        "body_in_receipt": false,
    });
    match &r.claim.kind {
        ClaimKind::Commit { commit_ref } => v["commit_ref"] = json!(commit_ref),
        ClaimKind::Cap { cap_id } => v["cap_id"] = json!(cap_id),
        ClaimKind::Span(s) => {
            v[s.runner.name_field()] = json!(s.name);
            v["expected_pass"] = json!(s.expected_pass);
            v["pass_status_checked"] = json!(s.pass_status_checked);
        }
    }
    v
}

/// The three records (result, board, validation receipt) before the body scan.
pub fn build(
    a: &Audit,
    receipt_paths: &[String],
    claim_path: Option<&str>,
) -> (Value, Value, Value) {
    let status = a.status();
    let (verdict, verdict_reason, verdict_unmet) = a.decision();
    let exercise_rows = &a.rows[..a.exercise_rows.min(a.rows.len())];
    let count_prog = |rows: &[crate::process::Row], prog: &str| {
        rows.iter()
            .filter(|r| r.args.first().is_some_and(|p| p == prog))
            .count()
    };
    let count_role =
        |rows: &[crate::process::Row], role: &str| rows.iter().filter(|r| r.role == role).count();
    let spans: Vec<_> = a.results.iter().filter_map(|r| r.span.clone()).collect();
    // The peer's span rows name the test `nodeid` and the interpreter `pytest_runner`.
    let span_rows: Vec<Value> = a
        .results
        .iter()
        .filter_map(|r| match (&r.claim.kind, &r.span) {
            (ClaimKind::Span(claim), Some(s)) => {
                let mut v = serde_json::to_value(s).unwrap_or(Value::Null);
                v[claim.runner.name_field()] = json!(s.name);
                if claim.runner == crate::input::Runner::Pytest {
                    v["pytest_runner"] = json!(s.program);
                }
                Some(v)
            }
            _ => None,
        })
        .collect();
    let verified_claim_count = a
        .results
        .iter()
        .filter(|r| match &r.claim.kind {
            ClaimKind::Span(_) => r.span.as_ref().is_some_and(|s| s.span_ran),
            _ => r.status == ClaimStatus::Verified,
        })
        .count();
    let ran = spans.iter().filter(|s| s.span_ran).count();
    let checked = spans
        .iter()
        .filter(|s| s.pass_status_checked && s.passed)
        .count();
    let py = spans.iter().filter(|s| s.runner == "pytest");
    let py_ran = py.clone().filter(|s| s.span_ran).count();
    let py_checked = py.filter(|s| s.pass_status_checked && s.passed).count();

    let mut error_codes = BTreeSet::new();
    let mut findings = Vec::new();
    if let Some((code, message)) = &a.blocked {
        error_codes.insert(*code);
        findings.push(json!({"error_code": code, "message": message}));
    }
    for r in &a.results {
        for (code, message) in &r.codes {
            error_codes.insert(*code);
            findings.push(json!({
                "error_code": code,
                "message": message,
                "claim_id": r.claim.claim_id,
            }));
        }
    }
    let missing = a.missing_negative_cases();
    for c in &a.negative_cases {
        if !c.observed {
            findings.push(json!({
                "error_code": codes::NEGATIVE_CASE_MISSING,
                "case_id": c.case_id,
                "expected": c.expected_code,
                "observed": c.result.as_ref().map(|r| r.codes.iter().map(|(c, _)| *c).collect::<Vec<_>>()),
                "message": c.reason.clone().unwrap_or_default(),
            }));
        }
    }
    if !missing.is_empty() {
        error_codes.insert(codes::NEGATIVE_CASE_MISSING);
    }
    let negative_case_status = if !a.options.self_test {
        "not_run"
    } else if a.blocked.is_some() {
        "blocked"
    } else if missing.is_empty() {
        "pass"
    } else {
        "fail"
    };
    let semantics: Vec<Value> = a
        .negative_cases
        .iter()
        .map(|c| {
            json!({
                "case_id": c.case_id,
                "expected_error_code": c.expected_code,
                "mutation": c.mutation.as_ref().map(|(id, field, from, to)| json!({
                    "claim_id": id, "field": field, "from": from, "to": to,
                })),
                "error_codes": c.result.as_ref().map(|r| r.codes.iter().map(|(c, _)| *c).collect::<Vec<_>>()).unwrap_or_default(),
                "status": c.result.as_ref().map(|r| json!(r.status)).unwrap_or(json!("not_applicable")),
                "observed": c.observed,
                "observation": c.result.as_ref().and_then(|r| r.observed.clone()),
                "reason": c.reason,
                "semantic_evaluator_used": c.result.is_some(),
                "body_in_receipt": false,
            })
        })
        .collect();
    let observed: Vec<&str> = a
        .negative_cases
        .iter()
        .filter(|c| c.observed)
        .map(|c| c.case_id)
        .collect();
    let expected: Vec<&str> = if a.options.self_test {
        NEGATIVE_CASES.iter().map(|(id, _)| *id).collect()
    } else {
        Vec::new()
    };
    let mode = if a.options.live { "live" } else { "fixture" };
    let exercise_status = match verdict {
        crate::audit::Verdict::Verified => "pass",
        crate::audit::Verdict::Refuted => "rejected",
        crate::audit::Verdict::Unverified => {
            if status == Status::Blocked {
                "blocked"
            } else {
                "unverified"
            }
        }
    };
    let result = json!({
        "schema_version": "agent_closeout_faithfulness_audit_receipt_v1",
        "organ_id": ORGAN_ID,
        "validator_id": format!("{VERIFIER_ID} audit closeout"),
        "status": status.as_str(),
        "claim_verdict": verdict,
        // The rules' reason (evident_rules::decide on the emitted claim document).
        "claim_verdict_reason": verdict_reason,
        "claim_verdict_unmet": verdict_unmet,
        "mode": mode,
        "input_mode": if a.options.live { "live_repository" } else { "fixture_input" },
        "created_at": rfc3339(a.started_at),
        "finished_at": rfc3339(a.finished_at),
        "inputs": {
            "claims": a.options.claims.display().to_string(),
            "ledger": a.options.ledger.display().to_string(),
            "repo": a.options.repo.display().to_string(),
            "reachable_from": if a.options.live { json!(a.branch) } else { Value::Null },
        },
        "anti_claim": ANTI_CLAIM,
        "authority_ceiling": {
            "authority_ceiling": "closeout_evidence_existence_and_test_span_witness_only",
            "cap_closed_without_fixture_ledger_row_authorized": false,
            "commit_landed_without_head_match_authorized": false,
            "live_repo_mutation_authorized": false,
            "pytest_pass_claim_without_exit_zero_authorized": false,
            "release_authorized": false,
        },
        "input_count": a.claims.len(),
        "error_codes": error_codes.iter().collect::<Vec<_>>(),
        "exercise": {
            "claim_ceiling": "verified means the evidence object exists or the span ran; pass requires exit zero with a passed test and a checked pass status",
            "status": exercise_status,
            "claim_count": a.claims.len(),
            "verified_claim_count": verified_claim_count,
            "pytest_span_ran_count": py_ran,
            "pytest_pass_status_checked_count": py_checked,
            "test_span_ran_count": ran,
            "test_pass_status_checked_count": checked,
            "external_witness": {
                "git_subprocess_count": count_prog(exercise_rows, "git"),
                "pytest_subprocess_count": count_role(exercise_rows, "pytest_span"),
                "cargo_subprocess_count": count_role(exercise_rows, "cargo_test_span"),
                "go_subprocess_count": count_role(exercise_rows, "go_test_span"),
                "head_verified_by_subprocess": a.head.is_some(),
                "observed_head": a.head,
                "body_in_receipt": false,
            },
            "claims": a.results.iter().map(claim_fields).collect::<Vec<_>>(),
            "spans": span_rows,
        },
        "findings": findings,
        "expected_negative_cases": expected,
        "observed_negative_cases": observed,
        "missing_negative_cases": missing,
        "negative_case_status": negative_case_status,
        "negative_case_semantics": semantics,
        "semantic_negative_case_evaluator_used": a.options.self_test && a.blocked.is_none(),
        "subprocesses": a.rows,
        "warnings": a.warnings,
        "receipt_paths": receipt_paths,
        "emitted_claim": claim_path,
        "body_in_receipt": false,
    });
    let board = json!({
        "schema_version": "agent_closeout_faithfulness_audit_board_v1",
        "organ_id": ORGAN_ID,
        "title": "Agent closeout faithfulness audit",
        "status": status.as_str(),
        "verdict": verdict,
        "mode": mode,
        "anti_claim": ANTI_CLAIM,
        "counts": {
            "input_count": a.claims.len(),
            "claim_count": a.claims.len(),
            "verified_claim_count": verified_claim_count,
            "finding_count": result["findings"].as_array().map_or(0, |f| f.len()),
            "observed_negative_case_count": observed.len(),
            "expected_negative_case_count": expected.len(),
            "subprocess_count": a.rows.len(),
        },
        "body_in_receipt": false,
    });
    let receipt = json!({
        "schema_version": "agent_closeout_faithfulness_audit_validation_receipt_v1",
        "organ_id": ORGAN_ID,
        "validator_id": format!("{VERIFIER_ID} audit closeout"),
        "anti_claim": ANTI_CLAIM,
        "exercise_status": exercise_status,
        "negative_case_status": negative_case_status,
        "receipt_body_scan_status": "pass",
        "status": status.as_str(),
        "body_in_receipt": false,
    });
    (result, board, receipt)
}

/// What the no-body scan found.
#[derive(Debug, Clone, Default)]
pub struct Scan {
    /// JSON paths (`result.exercise.stdout`) of keys that name a body.
    pub forbidden_body_keys: Vec<String>,
    /// JSON paths of strings that contain a line of captured output.
    pub body_hits: Vec<String>,
    /// How many records were scanned: shows the scan looked at all of them.
    pub scanned_record_count: usize,
    /// How many distinct output lines were searched for (long enough to prove a leak).
    pub scanned_output_line_count: usize,
}

impl Scan {
    /// True when no record names or carries a body; otherwise only the scan and the
    /// verdict are written.
    pub fn pass(&self) -> bool {
        self.forbidden_body_keys.is_empty() && self.body_hits.is_empty()
    }
    /// The scan as the result record's `receipt_body_scan`.
    pub fn to_json(&self) -> Value {
        json!({
            "status": if self.pass() { "pass" } else { "fail" },
            "forbidden_body_keys": self.forbidden_body_keys,
            "body_hits": self.body_hits,
            "forbidden_key_names": FORBIDDEN_BODY_KEYS,
            "min_body_line_chars": MIN_BODY_LINE_CHARS,
            "scanned_record_count": self.scanned_record_count,
            "scanned_output_line_count": self.scanned_output_line_count,
            "body_in_receipt": false,
        })
    }
}

/// Scans every record: no key may name a body, and no string may contain any line
/// (of at least [`MIN_BODY_LINE_CHARS`] characters) of any captured stdout/stderr.
/// A line that only echoes an input (it appears inside one of `inputs`, e.g. a test
/// name the runner prints back) proves nothing and is not searched for.
pub fn scan(records: &[(&str, &Value)], bodies: &[Vec<u8>], inputs: &[String]) -> Scan {
    let mut lines = BTreeSet::new();
    for b in bodies {
        for line in String::from_utf8_lossy(b).lines() {
            let t = line.trim();
            if t.chars().count() >= MIN_BODY_LINE_CHARS && !inputs.iter().any(|i| i.contains(t)) {
                lines.insert(t.to_string());
            }
        }
    }
    let lines: Vec<String> = lines.into_iter().collect();
    let mut s = Scan {
        scanned_record_count: records.len(),
        scanned_output_line_count: lines.len(),
        ..Scan::default()
    };
    for (name, v) in records {
        walk(name, v, &lines, &mut s);
    }
    s
}

fn walk(path: &str, v: &Value, lines: &[String], s: &mut Scan) {
    let hit = |text: &str| lines.iter().any(|l| text.contains(l.as_str()));
    match v {
        Value::String(t) if hit(t) => s.body_hits.push(path.to_string()),
        Value::Array(a) => {
            for (i, x) in a.iter().enumerate() {
                walk(&format!("{path}[{i}]"), x, lines, s);
            }
        }
        Value::Object(m) => {
            for (k, x) in m {
                let p = crate::json::push_key(path, k);
                if FORBIDDEN_BODY_KEYS.contains(&k.as_str()) {
                    s.forbidden_body_keys.push(p.clone());
                }
                if hit(k) {
                    s.body_hits.push(p.clone());
                }
                walk(&p, x, lines, s);
            }
        }
        _ => {}
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn scan_finds_planted_bodies_and_keys() {
        let body = b"tests/test_x.py::test_b FAILED - assert 0\nok\n".to_vec();
        let clean = json!({"a": {"b": ["fine", 1]}, "digest": "abc"});
        assert!(scan(&[("r", &clean)], std::slice::from_ref(&body), &[]).pass());
        let leaked = json!({"a": {"note": "x tests/test_x.py::test_b FAILED - assert 0 y"}});
        let s = scan(&[("r", &leaked)], std::slice::from_ref(&body), &[]);
        assert_eq!(s.body_hits, vec!["r.a.note"]);
        let keyed = json!({"rows": [{"stdout": ""}]});
        let s = scan(&[("r", &keyed)], &[], &[]);
        assert_eq!(s.forbidden_body_keys, vec!["r.rows[0].stdout"]);
        // short generic lines ("ok") are not treated as bodies
        let short = json!({"s": "ok"});
        assert!(scan(&[("r", &short)], std::slice::from_ref(&body), &[]).pass());
        // a runner echoing an input (a test name from the claims) is not a body
        let echo = b"failures:\n    tests::fails_here\n".to_vec();
        let named = json!({"test": "tests::fails_here"});
        assert!(!scan(&[("r", &named)], std::slice::from_ref(&echo), &[]).pass());
        assert!(scan(&[("r", &named)], &[echo], &["tests::fails_here".into()]).pass());
    }
}
