//! What an agent needs after a decision: the verdict, each unmet item, and for each
//! the evidence that is missing, not usable or contradicts — built from a
//! [`DecisionView`], so a decision just made and the same decision read back from the
//! ledger explain alike (held-out checks stay held out: the view has stripped them).

use evident_pipeline::view::{ContractRef, DecisionView};
use evident_rules::State;
use schemars::JsonSchema;
use serde::Serialize;
use serde_json::Value;

/// A decision, explained for the agent that asked.
#[derive(Debug, Clone, Serialize, JsonSchema)]
pub struct Explanation {
    /// The ledger record's id (pass it to `explain_decision`).
    pub decision_id: u64,
    /// `verified`, `refuted`, `unverified` or `partial`.
    pub state: State,
    /// `verified`, `refuted`, `blocked` (unverified, and the owner's policy blocks) or
    /// `allowed` (unverified, and the owner's policy lets it through).
    pub status: Option<String>,
    /// What to do next, in one sentence.
    pub next: String,
    /// The verdict's reason.
    pub reason: String,
    /// What stands between the claim and `verified` (empty when verified).
    pub unmet: Vec<Unmet>,
    /// The claim's `task.id`.
    pub task_id: Option<String>,
    /// The contract a gate ran: its name and digest.
    pub contract: Option<ContractRef>,
    /// Who asked (a token's name over HTTP; the local caller on stdio).
    pub asked_by: Option<String>,
    /// Through what (`mcp`, `http`, …).
    pub via: Option<String>,
    /// When it was recorded (UTC).
    pub time: String,
    /// The ledger record's hash.
    pub hash: String,
    /// Evidence items of held-out checks (they count; what they expect is not shown).
    pub held_out: usize,
    /// Warnings about the claim, when the decision was just made (not kept in the
    /// ledger, so `explain_decision` has none).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub warnings: Vec<String>,
}

/// One thing the claim still lacks.
#[derive(Debug, Clone, Serialize, JsonSchema)]
pub struct Unmet {
    /// The verdict's word for it: `check:ID` (a check of the contract), `mutation:ID`
    /// (a claimed change nothing verified), a check type the policy requires,
    /// `mutations` (the claim lists none) or `gate_run`.
    pub item: String,
    /// `missing` (no evidence of it), `not_usable` (evidence that does not count, see
    /// each item's `code`) or `contradicts` (the world shows otherwise).
    pub problem: Problem,
    /// What would meet it, in words.
    pub needs: String,
    /// The evidence items that speak to it and did not satisfy.
    pub evidence: Vec<EvidenceNote>,
}

/// How an unmet item falls short.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum Problem {
    /// No evidence of it.
    Missing,
    /// Evidence that does not count (stale, self-attested, not observed, …).
    NotUsable,
    /// Fresh independent evidence shows otherwise.
    Contradicts,
}

/// One evidence item, as the verdict saw it.
#[derive(Debug, Clone, Serialize, JsonSchema)]
pub struct EvidenceNote {
    /// Its index in the decided document's `evidence`.
    pub index: usize,
    /// The contract check that observed it (`held-out-N` for a held-out check).
    pub check_id: Option<String>,
    /// Its check type.
    pub check_type: String,
    /// What it observed.
    pub target: Option<String>,
    /// `before` or `after` the contract's commands, or a command's own run.
    pub wave: Option<String>,
    /// The verdict's code (`satisfies`, `contradicts`, `observation_failed`, …).
    pub code: String,
    /// Why, in one sentence.
    pub detail: String,
    /// What the observation had to show.
    pub expected: Value,
    /// What was observed (`null`: nothing could be observed).
    pub observed: Value,
    /// Why nothing could be observed.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub observation_error: Option<String>,
    /// A held-out check: expectation and observation are not shown.
    pub held_out: bool,
}

/// Explains a served decision.
pub fn explain(view: &DecisionView) -> Explanation {
    let evidence: &[Value] = view
        .document
        .get("evidence")
        .and_then(Value::as_array)
        .map_or(&[], Vec::as_slice);
    let findings: &[Value] = view
        .verdict
        .get("findings")
        .and_then(Value::as_array)
        .map_or(&[], Vec::as_slice);
    let finding = |i: usize| {
        findings
            .iter()
            .find(|f| f.get("evidence").and_then(Value::as_u64) == Some(i as u64))
    };
    let code = |i: usize| {
        finding(i)
            .and_then(|f| f.get("code"))
            .and_then(Value::as_str)
            .unwrap_or("absent")
            .to_string()
    };
    let note = |i: usize| {
        let e = &evidence[i];
        let s = |k: &str| e.get(k).and_then(Value::as_str).map(str::to_string);
        EvidenceNote {
            index: i,
            check_id: s("check_id"),
            check_type: s("check_type").unwrap_or_default(),
            target: s("target"),
            wave: s("wave"),
            code: code(i),
            detail: finding(i)
                .and_then(|f| f.get("detail"))
                .and_then(Value::as_str)
                .unwrap_or("")
                .to_string(),
            expected: e.get("expected").cloned().unwrap_or(Value::Null),
            observed: e.get("observed_value").cloned().unwrap_or(Value::Null),
            observation_error: s("observation_error"),
            held_out: e.get("held_out") == Some(&Value::Bool(true)),
        }
    };
    // The items matching `pick` that did not satisfy.
    let failing = |pick: &dyn Fn(&Value) -> bool| -> (usize, Vec<EvidenceNote>) {
        let all: Vec<usize> = (0..evidence.len())
            .filter(|&i| pick(&evidence[i]))
            .collect();
        let notes = all
            .iter()
            .filter(|&&i| code(i) != "satisfies")
            .map(|&i| note(i))
            .collect();
        (all.len(), notes)
    };
    let problem_of = |seen: usize, notes: &[EvidenceNote]| {
        if notes
            .iter()
            .any(|n| n.code == "contradicts" || n.code == "state_changed")
        {
            Problem::Contradicts
        } else if seen == 0 {
            Problem::Missing
        } else {
            Problem::NotUsable
        }
    };
    let mut unmet = Vec::new();
    if view.state == State::Refuted {
        // The verdict clears `unmet` when refuted: what refutes are the contradicting
        // items, one entry per check.
        let mut seen_checks: Vec<String> = Vec::new();
        for f in findings {
            let Some(i) = f
                .get("evidence")
                .and_then(Value::as_u64)
                .map(|i| i as usize)
            else {
                continue;
            };
            let c = f.get("code").and_then(Value::as_str).unwrap_or("");
            if i >= evidence.len()
                || f.get("used") != Some(&Value::Bool(true))
                || !(c == "contradicts" || c == "state_changed")
            {
                continue;
            }
            let n = note(i);
            let item = match &n.check_id {
                Some(id) => format!("check:{id}"),
                None => format!("evidence[{i}]"),
            };
            if seen_checks.contains(&item) {
                continue;
            }
            seen_checks.push(item.clone());
            let needs = needs_observation(&n);
            unmet.push(Unmet {
                item,
                problem: Problem::Contradicts,
                needs,
                evidence: vec![n],
            });
        }
    } else {
        for u in view
            .verdict
            .get("unmet")
            .and_then(Value::as_array)
            .into_iter()
            .flatten()
            .filter_map(Value::as_str)
        {
            let entry = if let Some(id) = u.strip_prefix("check:") {
                let (seen, notes) =
                    failing(&|e| e.get("check_id").and_then(Value::as_str) == Some(id));
                let problem = problem_of(seen, &notes);
                let needs = match (problem, notes.first()) {
                    (Problem::Missing, _) | (_, None) => format!(
                        "the contract's check {id:?} made no observation that counts; submit again so the gate observes it"
                    ),
                    (_, Some(n)) => needs_observation(n),
                };
                Unmet {
                    item: u.to_string(),
                    problem,
                    needs,
                    evidence: notes,
                }
            } else if let Some(id) = u.strip_prefix("mutation:") {
                let (seen, notes) = failing(&|e| {
                    e.get("covers")
                        .and_then(Value::as_array)
                        .is_some_and(|c| c.iter().any(|m| m.as_str() == Some(id)))
                });
                Unmet {
                    item: u.to_string(),
                    problem: problem_of(seen, &notes),
                    needs: format!(
                        "a check of the contract must observe mutation {id:?} after it was made: claim only changes the contract's checks cover (get_contract shows each check's covers), or ask the owner for a check that covers this one"
                    ),
                    evidence: notes,
                }
            } else if u == "mutations" {
                Unmet {
                    item: u.to_string(),
                    problem: Problem::Missing,
                    needs: "the claim lists no mutations: name each change you made (id, kind, target, at)".into(),
                    evidence: Vec::new(),
                }
            } else if u == "gate_run" {
                Unmet {
                    item: u.to_string(),
                    problem: Problem::NotUsable,
                    needs: "the document mixes observations of several gate runs: submit the claim without the gate's evidence so one run decides".into(),
                    evidence: Vec::new(),
                }
            } else {
                let (seen, notes) =
                    failing(&|e| e.get("check_type").and_then(Value::as_str) == Some(u));
                Unmet {
                    item: u.to_string(),
                    problem: problem_of(seen, &notes),
                    needs: format!(
                        "the policy requires fresh, independent {u} evidence that matches its expectation"
                    ),
                    evidence: notes,
                }
            };
            unmet.push(entry);
        }
    }
    let next = match (view.state, view.status.as_deref()) {
        (State::Verified, _) => "Verified: the claim stands; you may report the task as done.".to_string(),
        (State::Refuted, _) => "Refuted: the world contradicts the claim. Do not report the task as done; fix what each unmet check observed, then call submit_claim again.".to_string(),
        (_, Some("allowed")) => "Not verified, though the owner's policy lets it through: say plainly that it is unverified; meet the unmet items to verify it.".to_string(),
        _ => "Not verified: do not report the task as done; meet each unmet item (see needs), then call submit_claim again.".to_string(),
    };
    Explanation {
        decision_id: view.id,
        state: view.state,
        status: view.status.clone(),
        next,
        reason: view
            .verdict
            .get("reason")
            .and_then(Value::as_str)
            .unwrap_or("")
            .to_string(),
        unmet,
        task_id: view.task_id.clone(),
        contract: view.contract.clone(),
        asked_by: view.asked_by.clone(),
        via: view.via.clone(),
        time: view.time.clone(),
        hash: view.hash.clone(),
        held_out: view.held_out,
        warnings: view
            .warnings
            .iter()
            .map(|w| {
                if w.path.is_empty() {
                    w.message.clone()
                } else {
                    format!("{}: {}", w.path, w.message)
                }
            })
            .collect(),
    }
}

/// What would satisfy one failing observation.
fn needs_observation(n: &EvidenceNote) -> String {
    let what = n.check_id.as_deref().unwrap_or("the check");
    if n.held_out {
        return format!(
            "held-out check {what} did not pass; what it expects is the owner's and not shown"
        );
    }
    let target = n.target.as_deref().unwrap_or("-");
    match &n.observation_error {
        Some(err) => format!(
            "check {what} could not observe {target} ({err}); it needs an observation showing {}",
            n.expected
        ),
        None => format!(
            "check {what} must observe {target} showing {}; it observed {}",
            n.expected, n.observed
        ),
    }
}
