//! `--emit-claim`: the audit written as a Completion Claim v0.1 document (seed 000).
//!
//! Commit and ledger claims are the mutations (`code_change`, `state_write`), each
//! covered by a `state_readback` the audit made; test spans are `test_run` evidence
//! covering the commit mutations. All evidence is `independent` (evident collected
//! it), or `absent` when the audit could not observe. Mutations are dated at the
//! audit's start and evidence at the moment each observation finished, so evidence
//! is strictly later than every mutation it covers. `evident verify` on this document
//! decides the same way as the audit's `claim_verdict` when the claims name a commit or
//! a ledger item: [`decide`] is how the audit gets it.

use crate::audit::{Audit, ClaimResult, ClaimStatus};
use crate::input::{Claim, ClaimKind, SpanClaim};
use serde_json::{Value, json};
use time::OffsetDateTime;
use time::format_description::well_known::Rfc3339;

/// The `verifier.id` of the audit's evidence (and its records' validator): evident and
/// its version, so a record says which audit observed.
pub const VERIFIER_ID: &str = concat!("evident/", env!("CARGO_PKG_VERSION"));

/// A time as the records and the emitted claim write it (RFC 3339, UTC).
pub fn rfc3339(t: OffsetDateTime) -> String {
    t.format(&Rfc3339)
        .unwrap_or_else(|_| "1970-01-01T00:00:00Z".into())
}

fn span_target(s: &SpanClaim) -> String {
    let mut t = format!("{} {}", s.runner.label(), s.name);
    if let Some(p) = &s.package {
        t.push_str(&format!(" (package {p})"));
    }
    if let Some(c) = &s.cwd {
        t.push_str(&format!(" (in {c})"));
    }
    t
}

fn target(claim: &Claim) -> String {
    match &claim.kind {
        ClaimKind::Commit { commit_ref } => format!("git:{commit_ref}"),
        ClaimKind::Cap { cap_id } => format!("ledger:{cap_id}"),
        ClaimKind::Span(s) => span_target(s),
    }
}

fn expected(claim: &Claim, live: bool) -> Value {
    match &claim.kind {
        ClaimKind::Commit { .. } if live => json!({"resolves": true, "reachable": true}),
        ClaimKind::Commit { .. } => json!({"resolves": true, "is_head": true}),
        ClaimKind::Cap { .. } => json!({"present": true}),
        ClaimKind::Span(s) if s.expected_pass => json!({"ran": true, "passed": true}),
        ClaimKind::Span(_) => json!({"ran": true}),
    }
}

fn sentence(claims: &[Claim]) -> String {
    let parts: Vec<String> = claims
        .iter()
        .map(|c| match &c.kind {
            ClaimKind::Commit { commit_ref } => format!("committed the change ({commit_ref})"),
            ClaimKind::Cap { cap_id } => format!("closed the ledger item {cap_id}"),
            ClaimKind::Span(s) if s.expected_pass => format!("the test {} passed", s.name),
            ClaimKind::Span(s) => format!("the test {} ran", s.name),
        })
        .collect();
    let text = match parts.split_last() {
        None => String::new(),
        Some((last, [])) => last.clone(),
        Some((last, rest)) => format!("{}, and {last}", rest.join(", ")),
    };
    match text.strip_prefix("the test") {
        Some(rest) => format!("The test{rest}."),
        None => format!("I {text}."),
    }
}

/// The Completion Claim v0.1 document for this audit.
pub fn claim_document(a: &Audit) -> Value {
    let live = a.options.live;
    let t0 = a.started_at;
    let later = |t: OffsetDateTime| {
        if t > t0 {
            t
        } else {
            t0 + time::Duration::microseconds(1)
        }
    };
    let mutations: Vec<Value> = a
        .claims
        .iter()
        .filter_map(|c| {
            let kind = match &c.kind {
                ClaimKind::Commit { .. } => "code_change",
                ClaimKind::Cap { .. } => "state_write",
                ClaimKind::Span(_) => return None,
            };
            Some(json!({
                "id": c.claim_id,
                "kind": kind,
                "target": target(c),
                "at": rfc3339(t0),
            }))
        })
        .collect();
    let commit_ids: Vec<&str> = a
        .claims
        .iter()
        .filter(|c| matches!(c.kind, ClaimKind::Commit { .. }))
        .map(|c| c.claim_id.as_str())
        .collect();
    let all_ids: Vec<&str> = mutations.iter().filter_map(|m| m["id"].as_str()).collect();
    let span_covers: Vec<&str> = if commit_ids.is_empty() {
        all_ids
    } else {
        commit_ids
    };
    let evidence: Vec<Value> = a
        .claims
        .iter()
        .enumerate()
        .map(|(i, c)| {
            let r: Option<&ClaimResult> = a.results.get(i);
            let check_type = match c.kind {
                ClaimKind::Span(_) => "test_run",
                _ => "state_readback",
            };
            let covers: Vec<&str> = match (&c.kind, r.map(|r| r.status)) {
                // The agent did not check its pass: the audit's own run is recorded
                // but is not promoted into the agent's claim.
                (ClaimKind::Span(_), Some(ClaimStatus::Unverified)) => vec![],
                (ClaimKind::Span(_), _) => span_covers.clone(),
                _ => vec![c.claim_id.as_str()],
            };
            let (kind, observed, at) = match r {
                Some(r) if r.status != ClaimStatus::Blocked && r.observed.is_some() => (
                    "independent",
                    r.observed.clone().unwrap_or(Value::Null),
                    later(r.observed_at),
                ),
                _ => ("absent", Value::Null, later(a.finished_at)),
            };
            let mut e = json!({
                "check_type": check_type,
                "target": target(c),
                "expected": expected(c, live),
                "observed_value": observed,
                "at": rfc3339(at),
                "covers": covers,
                "verifier": {"id": VERIFIER_ID, "kind": kind},
            });
            if kind == "absent" {
                // evident's extension: why the audit could not observe.
                let why = match (&a.blocked, r) {
                    (Some((code, message)), _) => format!("{code}: {message}"),
                    (None, Some(r)) => r
                        .codes
                        .iter()
                        .map(|(code, message)| format!("{code}: {message}"))
                        .collect::<Vec<_>>()
                        .join("; "),
                    (None, None) => "not observed".into(),
                };
                e["observation_error"] = json!(why);
            }
            e
        })
        .collect();
    let mut requires = Vec::new();
    if a.claims
        .iter()
        .any(|c| !matches!(c.kind, ClaimKind::Span(_)))
    {
        requires.push("state_readback");
    }
    if a.claims
        .iter()
        .any(|c| matches!(c.kind, ClaimKind::Span(_)))
    {
        requires.push("test_run");
    }
    let file = a
        .options
        .claims
        .file_name()
        .map(|f| f.to_string_lossy().into_owned())
        .unwrap_or_default();
    json!({
        "spec_version": "0.1",
        "task": {
            "id": "closeout-audit",
            "description": format!("Close-out claims in {file}, audited by evident audit closeout ({} mode)", if live { "live" } else { "fixture" }),
            "requested_by": "evident audit closeout",
        },
        "claimed_outcome": sentence(&a.claims),
        "mutations": mutations,
        "evidence": evidence,
        "policy": {
            "id": "evident-audit-closeout",
            "requires": requires,
            "on_unverified": "block",
        },
    })
}

/// File name the claim document is read under when the audit decides it.
const DECIDED_AS: &str = "agent_closeout_completion_claim.json";

/// The audit's verdict: [`claim_document`] read back with evident-format's strict
/// claim reader and decided by `evident_rules::decide` at the audit's finish, exactly
/// as `evident verify --now <finished_at>` decides the emitted document — so the two
/// agree by construction. `Err` (a document the reader refuses) leaves the claims
/// unverified.
pub fn decide(a: &Audit) -> Result<evident_rules::Verdict, evident_format::Error> {
    let doc = claim_document(a);
    let bytes = serde_json::to_vec(&doc).unwrap_or_default();
    let parsed = evident_format::Claim::parse(&bytes, DECIDED_AS)?;
    let at = evident_format::Timestamp::from_instant(a.finished_at);
    Ok(evident_rules::decide(
        &parsed.claim,
        &at,
        &evident_rules::Options::default(),
    ))
}
