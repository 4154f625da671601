//! Seed 001's case semantics, exactly as the peer evaluates them (see
//! `docs/eval.md`): the latest event per required action decides; a later success
//! recovers an earlier failure and a later failure or rollback overrides a success.
//!
//! Evaluation produces a compact [`Outcome`] without building any string, so the
//! `--metrics` path allocates nothing per requirement; reasons are written straight to
//! the output buffer only when a mode prints them.

use crate::case::{Case, Event, Requirement};
use crate::text::write_json_str;

/// The four outcomes, in the peer's declaration order.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum Status {
    /// Every requirement is proven: the only status that supports a completion claim.
    VerifiedComplete,
    /// Some requirements are proven, not all, and none failed.
    Partial,
    /// Nothing is proven and nothing failed (no events, or successes without their
    /// evidence).
    Unverified,
    /// The latest event of some requirement's action failed.
    Failed,
}

impl Status {
    /// Every status, in [`Status::index`] order (to iterate counts).
    pub const ALL: [Status; 4] = [
        Status::VerifiedComplete,
        Status::Partial,
        Status::Unverified,
        Status::Failed,
    ];

    /// The name in the output (`VERIFIED_COMPLETE`).
    pub fn as_str(self) -> &'static str {
        match self {
            Status::VerifiedComplete => "VERIFIED_COMPLETE",
            Status::Partial => "PARTIAL",
            Status::Unverified => "UNVERIFIED",
            Status::Failed => "FAILED",
        }
    }

    /// Its position in per-status counter arrays ([`crate::metrics::Metrics::status`]).
    pub fn index(self) -> usize {
        self as usize
    }
}

/// How one requirement came out.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ReqState {
    /// Latest event succeeded with every evidence field present.
    Proven,
    /// Latest event reports failure.
    Failed,
    /// No event with this action.
    NoEvent,
    /// Latest event succeeded but some evidence field is missing or empty.
    LacksEvidence,
}

/// The result of one case, without strings.
#[derive(Debug, Clone)]
pub struct Outcome {
    /// The case's status.
    pub status: Status,
    /// The case's `completion_claimed`, so metrics can compare claim and status.
    pub claimed: bool,
    /// Per requirement, in order: its state and the index of its latest event.
    pub states: Vec<(ReqState, Option<usize>)>,
    /// Some requirement recovered from an earlier failure (metrics `recovered`).
    pub recovered: bool,
    /// Some requirement regressed from an earlier proven event (metrics `regressed`).
    pub regressed: bool,
}

fn proves(case: &Case<'_>, req: &Requirement<'_>, ev: &Event<'_>) -> bool {
    ev.success && case.fields_of(req).iter().all(|f| case.has(ev, f))
}

/// Evaluates one case (steps 1–4 of the semantics, plus the trace counts).
pub fn evaluate(case: &Case<'_>) -> Outcome {
    let mut states = Vec::with_capacity(case.requirements.len());
    let (mut n_proven, mut any_failed) = (0usize, false);
    let (mut recovered, mut regressed) = (false, false);
    for req in &case.requirements {
        let latest = case.events.iter().rposition(|e| e.action == req.action);
        let state = match latest {
            None => ReqState::NoEvent,
            Some(i) => {
                let ev = &case.events[i];
                if !ev.success {
                    ReqState::Failed
                } else if proves(case, req, ev) {
                    ReqState::Proven
                } else {
                    ReqState::LacksEvidence
                }
            }
        };
        if let Some(i) = latest {
            // Earlier events of the same action, for recovered/regressed.
            let earlier = || case.events[..i].iter().filter(|e| e.action == req.action);
            match state {
                ReqState::Proven if !recovered => {
                    recovered = earlier().any(|e| !e.success);
                }
                ReqState::Failed if !regressed => {
                    regressed = earlier().any(|e| proves(case, req, e));
                }
                _ => {}
            }
        }
        match state {
            ReqState::Proven => n_proven += 1,
            ReqState::Failed => any_failed = true,
            _ => {}
        }
        states.push((state, latest));
    }
    let status = if n_proven == case.requirements.len() {
        Status::VerifiedComplete
    } else if any_failed {
        Status::Failed
    } else if n_proven > 0 {
        Status::Partial
    } else {
        Status::Unverified
    };
    Outcome {
        status,
        claimed: case.completion_claimed,
        states,
        recovered,
        regressed,
    }
}

const CLAIM_WITHOUT_PROOF: &str = "The agent claimed completion without proving every requirement.";
const SILENT_COMPLETION: &str =
    "The task is evidenced as complete even though no completion claim was made.";

/// Calls `f` with each reason, in the peer's order (step 5).
pub fn for_each_reason(case: &Case<'_>, out: &Outcome, mut f: impl FnMut(&str)) {
    let mut buf = String::new();
    for (req, (state, latest)) in case.requirements.iter().zip(&out.states) {
        buf.clear();
        let a = &*req.action;
        match state {
            ReqState::NoEvent => {
                buf.push_str("No event recorded for required action '");
                buf.push_str(a);
                buf.push_str("'.");
            }
            ReqState::Failed => {
                buf.push_str("Latest event for '");
                buf.push_str(a);
                buf.push_str("' reports failure.");
            }
            ReqState::LacksEvidence => {
                buf.push_str("Action '");
                buf.push_str(a);
                buf.push_str("' succeeded but lacks required evidence: ");
                let ev = latest.map(|i| &case.events[i]);
                let mut first = true;
                for field in case.fields_of(req) {
                    if ev.is_some_and(|e| case.has(e, field)) {
                        continue;
                    }
                    if !first {
                        buf.push_str(", ");
                    }
                    first = false;
                    buf.push_str(field);
                }
                buf.push('.');
            }
            ReqState::Proven => {
                buf.push_str("Action '");
                buf.push_str(a);
                buf.push_str("' has successful, sufficient evidence.");
            }
        }
        f(&buf);
    }
    if out.claimed && out.status != Status::VerifiedComplete {
        f(CLAIM_WITHOUT_PROOF);
    } else if !out.claimed && out.status == Status::VerifiedComplete {
        f(SILENT_COMPLETION);
    }
}

/// The peer's result object as an owned value (for library users and tests).
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize)]
pub struct Evaluation {
    /// The case's `case_id`, to match the result with its input line.
    pub case_id: String,
    /// The [`Status`] name.
    pub status: &'static str,
    /// Required actions whose latest event succeeded with all their evidence.
    pub proven_actions: Vec<String>,
    /// Required actions with no event, or whose latest success lacks evidence.
    pub missing_actions: Vec<String>,
    /// Required actions whose latest event failed.
    pub failed_actions: Vec<String>,
    /// One sentence per requirement, then one on the claim when it disagrees.
    pub reasons: Vec<String>,
    /// Object-form requirements only: the actions of the unrequested writes.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub unrequested_writes: Option<Vec<String>>,
}

/// Evaluates a case into the peer's result object.
pub fn evaluation(case: &Case<'_>) -> Evaluation {
    let out = evaluate(case);
    let mut reasons = Vec::new();
    for_each_reason(case, &out, |r| reasons.push(r.to_owned()));
    let pick = |want: fn(ReqState) -> bool| {
        case.requirements
            .iter()
            .zip(&out.states)
            .filter(|(_, (s, _))| want(*s))
            .map(|(r, _)| r.action.to_string())
            .collect::<Vec<_>>()
    };
    Evaluation {
        case_id: case.case_id.to_string(),
        status: out.status.as_str(),
        proven_actions: pick(|s| s == ReqState::Proven),
        missing_actions: pick(|s| matches!(s, ReqState::NoEvent | ReqState::LacksEvidence)),
        failed_actions: pick(|s| s == ReqState::Failed),
        reasons,
        unrequested_writes: None,
    }
}

/// The punctuation of a result object: indented as an element of the top-level
/// `--json` array, or compact on one line (`--jsonl`).
struct Layout {
    open: &'static str,
    sep_key: &'static str,
    nl_key: &'static str,
    close: &'static str,
    item_nl: &'static str,
    item_close: &'static str,
}

impl Layout {
    fn new(pretty: bool) -> Layout {
        if pretty {
            Layout {
                open: "  {\n    ",
                sep_key: ",\n    ",
                nl_key: ": ",
                close: "\n  }",
                item_nl: "\n      ",
                item_close: "\n    ]",
            }
        } else {
            Layout {
                open: "{",
                sep_key: ",",
                nl_key: ":",
                close: "}",
                item_nl: "",
                item_close: "]",
            }
        }
    }

    /// `{"case_id": …, "status": …` (the members every result starts with).
    fn head(&self, buf: &mut Vec<u8>, case_id: &str, status: &str) {
        buf.extend_from_slice(self.open.as_bytes());
        buf.extend_from_slice(b"\"case_id\"");
        buf.extend_from_slice(self.nl_key.as_bytes());
        write_json_str(buf, case_id, false);
        buf.extend_from_slice(self.sep_key.as_bytes());
        buf.extend_from_slice(b"\"status\"");
        buf.extend_from_slice(self.nl_key.as_bytes());
        buf.push(b'"');
        buf.extend_from_slice(status.as_bytes());
        buf.push(b'"');
    }

    /// `, "key": [items…]`, with the items given one at a time.
    fn list<'s>(&self, buf: &mut Vec<u8>, key: &str, items: impl Iterator<Item = &'s str>) {
        self.list_start(buf, key);
        let mut n = 0;
        for item in items {
            self.item(buf, &mut n, item);
        }
        self.list_end(buf, n);
    }

    fn list_start(&self, buf: &mut Vec<u8>, key: &str) {
        buf.extend_from_slice(self.sep_key.as_bytes());
        buf.push(b'"');
        buf.extend_from_slice(key.as_bytes());
        buf.push(b'"');
        buf.extend_from_slice(self.nl_key.as_bytes());
        buf.push(b'[');
    }

    fn item(&self, buf: &mut Vec<u8>, n: &mut usize, item: &str) {
        buf.extend_from_slice(if *n > 0 { b"," } else { b"" });
        buf.extend_from_slice(self.item_nl.as_bytes());
        write_json_str(buf, item, false);
        *n += 1;
    }

    fn list_end(&self, buf: &mut Vec<u8>, n: usize) {
        if n > 0 {
            buf.extend_from_slice(self.item_close.as_bytes());
        } else {
            buf.push(b']');
        }
    }
}

/// Writes the result object: compact on one line (`pretty = false`, for `--jsonl`) or
/// indented as an element of the top-level `--json` array (`pretty = true`).
pub fn write_result_json(buf: &mut Vec<u8>, case: &Case<'_>, out: &Outcome, pretty: bool) {
    let l = Layout::new(pretty);
    l.head(buf, &case.case_id, out.status.as_str());
    type Pick = fn(ReqState) -> bool;
    let lists: [(&str, Pick); 3] = [
        ("proven_actions", |s| s == ReqState::Proven),
        ("missing_actions", |s| {
            matches!(s, ReqState::NoEvent | ReqState::LacksEvidence)
        }),
        ("failed_actions", |s| s == ReqState::Failed),
    ];
    for (key, want) in lists {
        let items = case
            .requirements
            .iter()
            .zip(&out.states)
            .filter(|(_, (s, _))| want(*s))
            .map(|(r, _)| &*r.action);
        l.list(buf, key, items);
    }
    l.list_start(buf, "reasons");
    let mut n = 0;
    for_each_reason(case, out, |r| l.item(buf, &mut n, r));
    l.list_end(buf, n);
    buf.extend_from_slice(l.close.as_bytes());
}

/// Writes an owned result object in the same layout as [`write_result_json`]
/// (object-form cases; `unrequested_writes` after `reasons` when present).
pub fn write_evaluation_json(buf: &mut Vec<u8>, e: &Evaluation, pretty: bool) {
    let l = Layout::new(pretty);
    l.head(buf, &e.case_id, e.status);
    l.list(
        buf,
        "proven_actions",
        e.proven_actions.iter().map(String::as_str),
    );
    l.list(
        buf,
        "missing_actions",
        e.missing_actions.iter().map(String::as_str),
    );
    l.list(
        buf,
        "failed_actions",
        e.failed_actions.iter().map(String::as_str),
    );
    l.list(buf, "reasons", e.reasons.iter().map(String::as_str));
    if let Some(u) = &e.unrequested_writes {
        l.list(buf, "unrequested_writes", u.iter().map(String::as_str));
    }
    buf.extend_from_slice(l.close.as_bytes());
}

/// Writes the plain line: `case_id` left-aligned in 22 columns (counted in characters,
/// as Python's format does), a space, the status.
pub fn write_plain_line(buf: &mut Vec<u8>, case_id: &str, status: Status) {
    buf.extend_from_slice(case_id.as_bytes());
    let width = case_id.chars().count();
    for _ in width..22 {
        buf.push(b' ');
    }
    buf.push(b' ');
    buf.extend_from_slice(status.as_str().as_bytes());
    buf.push(b'\n');
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::case::parse_case;

    fn eval(line: &str) -> Evaluation {
        evaluation(&parse_case(line.as_bytes()).unwrap())
    }

    #[test]
    fn retry_recovers_and_rollback_fails() {
        let recovered = r#"{"case_id":"r","task":"t","completion_claimed":true,"requirements":[{"action":"a","evidence_fields":["id"]}],"events":[{"action":"a","success":false},{"action":"a","success":true,"evidence":{"id":"1"}}]}"#;
        let c = parse_case(recovered.as_bytes()).unwrap();
        let o = evaluate(&c);
        assert_eq!(o.status, Status::VerifiedComplete);
        assert!(o.recovered && !o.regressed);
        let rollback = r#"{"case_id":"r","task":"t","completion_claimed":true,"requirements":[{"action":"a","evidence_fields":["id"]}],"events":[{"action":"a","success":true,"evidence":{"id":"1"}},{"action":"a","success":false}]}"#;
        let c = parse_case(rollback.as_bytes()).unwrap();
        let o = evaluate(&c);
        assert_eq!(o.status, Status::Failed);
        assert!(o.regressed && !o.recovered);
    }

    #[test]
    fn regressed_needs_an_earlier_proven_event() {
        // The earlier success lacked evidence, so it was never proven: not a regression.
        let line = r#"{"case_id":"r","task":"t","completion_claimed":true,"requirements":[{"action":"a","evidence_fields":["id"]}],"events":[{"action":"a","success":true},{"action":"a","success":false}]}"#;
        let c = parse_case(line.as_bytes()).unwrap();
        assert!(!evaluate(&c).regressed);
    }

    #[test]
    fn reasons_list_missing_fields_in_requirement_order() {
        let e = eval(
            r#"{"case_id":"x","task":"t","completion_claimed":false,"requirements":[{"action":"w","evidence_fields":["path","sha","size"]},{"action":"z"}],"events":[{"action":"w","success":true,"evidence":{"sha":"","size":0}},{"action":"z","success":true}]}"#,
        );
        assert_eq!(e.status, "PARTIAL");
        assert_eq!(
            e.reasons,
            vec![
                "Action 'w' succeeded but lacks required evidence: path, sha.",
                "Action 'z' has successful, sufficient evidence."
            ]
        );
        assert_eq!(e.missing_actions, vec!["w"]);
        assert_eq!(e.proven_actions, vec!["z"]);
    }

    #[test]
    fn pretty_and_compact_json_are_the_same_value() {
        let line = r#"{"case_id":"x\"y","task":"t","completion_claimed":true,"requirements":[{"action":"a"},{"action":"b"}],"events":[{"action":"b","success":false}]}"#;
        let c = parse_case(line.as_bytes()).unwrap();
        let o = evaluate(&c);
        let (mut p, mut q) = (Vec::new(), Vec::new());
        write_result_json(&mut p, &c, &o, true);
        write_result_json(&mut q, &c, &o, false);
        let pv: serde_json::Value = serde_json::from_slice(&p).unwrap();
        let qv: serde_json::Value = serde_json::from_slice(&q).unwrap();
        assert_eq!(pv, qv);
        assert_eq!(pv, serde_json::to_value(evaluation(&c)).unwrap());
        assert_eq!(pv["failed_actions"][0], "b");
        assert_eq!(pv["status"], "FAILED");
    }

    #[test]
    fn plain_pads_by_characters() {
        let mut b = Vec::new();
        write_plain_line(&mut b, "é", Status::Partial);
        assert_eq!(
            String::from_utf8(b).unwrap(),
            format!("é{} PARTIAL\n", " ".repeat(21))
        );
    }
}
