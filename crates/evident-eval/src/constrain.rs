//! Evaluating the object form of requirements ([`crate::spec`]) against a trace's
//! calls: arguments, evidence values, counts and unrequested writes.
//!
//! Per requirement, a call *matches* when its action is the requirement's and its
//! arguments match (compared by `evident_rules::compare`, as the verdict compares an
//! expectation with an observation). Seed 001's rule holds per requirement: a failed
//! matching call overrides every earlier matching success, and a later success
//! recovers it. So a requirement's *candidates* are the successful matching calls
//! after its last failed matching call whose evidence satisfies it. Each successful
//! call accounts for at most one requirement: requirements (with `count` slots each)
//! are assigned candidates by a maximum bipartite matching — first greedily in call
//! order, then by augmenting paths — so the answer never depends on the order the
//! requirements are listed in. With `writes`, a successful call to a write action
//! that the matching left unassigned, and that is not a matching call of a
//! requirement it failed to prove, is an unrequested write: the case is FAILED.

use std::collections::VecDeque;

use evident_rules::compare::{Cmp, compare_object};
use serde_json::{Map, Value};

use crate::case::CaseError;
use crate::evaluate::{Evaluation, Status};
use crate::spec::{Need, Spec, parse_spec};
use crate::text::{py_blank, py_strip};

/// One call of the trace, in order.
#[derive(Debug, Clone, PartialEq)]
pub struct Call {
    /// The tool's name, matched against a requirement's action.
    pub action: String,
    /// The tool reported success (false for an unfinished call).
    pub success: bool,
    /// A call that never got its result (an interrupted turn): never a success.
    pub unfinished: bool,
    /// What the agent asked the tool to do (never evidence).
    pub arguments: Option<Map<String, Value>>,
    /// What the tool's result says it did.
    pub evidence: Map<String, Value>,
}

/// How one requirement came out.
#[derive(Debug, Clone, PartialEq)]
pub enum NeedState {
    /// Enough matching calls succeeded with the evidence it asks for.
    Proven,
    /// No call with this action at all.
    NoCall,
    /// Calls with this action, none with matching arguments; `why` is from the latest.
    NoMatch {
        /// The latest call with the action (an index into the case's calls).
        call: usize,
        /// Why its arguments do not match (the first difference), for the reason.
        why: String,
    },
    /// The latest matching call failed (or never finished).
    Failed {
        /// The failed call (an index into the case's calls).
        call: usize,
        /// It never got a result, rather than reporting a failure.
        unfinished: bool,
    },
    /// The latest successful matching call lacks evidence fields.
    LacksEvidence {
        /// That call (an index into the case's calls).
        call: usize,
        /// The evidence fields it does not carry.
        missing: Vec<String>,
    },
    /// The latest successful matching call's evidence contradicts the expected values.
    EvidenceMismatch {
        /// That call (an index into the case's calls).
        call: usize,
        /// The first value that differs, for the reason.
        why: String,
    },
    /// Fewer matching calls with sufficient evidence than `count` (after the matching).
    TooFew {
        /// Calls assigned to it by the matching.
        have: u64,
        /// Its `count`.
        need: u64,
    },
}

/// The result of one case in the object form.
#[derive(Debug, Clone, PartialEq)]
pub struct Verdict {
    /// The case's status (FAILED when there is an unrequested write).
    pub status: Status,
    /// Per requirement, in the spec's order.
    pub states: Vec<NeedState>,
    /// Indices of the calls that are unrequested writes.
    pub unrequested: Vec<usize>,
    /// A requirement was proven after a failed matching call (metrics `recovered`).
    pub recovered: bool,
    /// A requirement's latest matching call failed after an earlier one proved it
    /// (metrics `regressed`).
    pub regressed: bool,
}

/// Seed 001's presence rule for an evidence value.
fn counts(v: &Value) -> bool {
    match v {
        Value::Null => false,
        Value::String(s) => !py_blank(s),
        Value::Array(a) => !a.is_empty(),
        Value::Object(o) => !o.is_empty(),
        _ => true,
    }
}

/// The first reason the arguments do not match, or `None` when they do. A missing
/// argument is a mismatch (the call did not ask for it).
fn arguments_mismatch(
    want: &Map<String, Value>,
    got: Option<&Map<String, Value>>,
) -> Option<String> {
    let Some(got) = got else {
        return Some("the call has no arguments".into());
    };
    match compare_object(want, got, false) {
        Cmp::Match => None,
        Cmp::Missing(path) => Some(format!(
            "{path}: expected {}, observed nothing",
            show(&path, want_at(want, &path))
        )),
        Cmp::Contradiction {
            path,
            expected,
            observed,
        } => Some(format!(
            "{path}: expected {}, observed {}",
            show(&path, Some(&expected)),
            show(&path, Some(&observed))
        )),
    }
}

/// The expected value at a path written by `compare` (`a.b[2]`, `a["odd key"]`),
/// for a missing key's message.
fn want_at<'v>(want: &'v Map<String, Value>, path: &str) -> Option<&'v Value> {
    let mut cur: Option<&Value> = None;
    let mut rest = path;
    let mut root = true;
    while !rest.is_empty() {
        let key: Result<String, usize>;
        if let Some(r) = rest.strip_prefix("[\"") {
            let mut it = serde_json::Deserializer::from_str(&rest[1..]).into_iter::<String>();
            key = Ok(it.next()?.ok()?);
            rest = r.get(it.byte_offset() - 1..)?.strip_prefix(']')?;
        } else if let Some(r) = rest.strip_prefix('[') {
            let end = r.find(']')?;
            key = Err(r[..end].parse().ok()?);
            rest = &r[end + 1..];
        } else {
            let r = if root { rest } else { rest.strip_prefix('.')? };
            let end = r.find(['.', '[']).unwrap_or(r.len());
            key = Ok(r[..end].to_owned());
            rest = &r[end..];
        }
        cur = match (key, cur) {
            (Ok(k), None) if root => want.get(&k),
            (Ok(k), Some(Value::Object(o))) => o.get(&k),
            (Err(i), Some(Value::Array(a))) => a.get(i),
            _ => return None,
        };
        root = false;
    }
    cur
}

/// Names that hold credentials: their values are never printed.
fn secret_name(path: &str) -> bool {
    let p = path.to_ascii_lowercase();
    [
        "password",
        "passwd",
        "secret",
        "token",
        "api_key",
        "apikey",
        "authorization",
        "credential",
        "private_key",
        "passfile",
        "sslkey",
        "cookie",
    ]
    .iter()
    .any(|s| p.contains(s))
}

/// The most characters of one value a reason shows.
pub const SHOWN_CHARS: usize = 80;

/// A value for a reason: `***` under a credential-like name, a URL's password
/// replaced, cut to [`SHOWN_CHARS`] characters.
pub fn show(path: &str, v: Option<&Value>) -> String {
    let Some(v) = v else {
        return "nothing".into();
    };
    if secret_name(path) {
        return "***".into();
    }
    let mut s = v.to_string();
    // `scheme://user:password@host`: the password goes.
    if let Some(i) = s.find("://") {
        let tail = &s[i + 3..];
        if let Some((at, colon)) = tail
            .find('@')
            .and_then(|at| tail[..at].find(':').map(|c| (at, c)))
        {
            s = format!("{}{}:***{}", &s[..i + 3], &tail[..colon], &tail[at..]);
        }
    }
    if s.chars().count() > SHOWN_CHARS {
        format!("{}…", s.chars().take(SHOWN_CHARS - 1).collect::<String>())
    } else {
        s
    }
}

/// Why a call's evidence does not satisfy a requirement, or `None` when it does.
enum EvidenceProblem {
    Missing(Vec<String>),
    Mismatch(String),
}

fn evidence_problem(need: &Need, call: &Call) -> Option<EvidenceProblem> {
    let missing: Vec<String> = need
        .evidence_fields
        .iter()
        .filter(|f| !call.evidence.get(f.as_str()).is_some_and(counts))
        .cloned()
        .collect();
    if let Some(want) = &need.evidence {
        match compare_object(want, &call.evidence, false) {
            Cmp::Match => {}
            Cmp::Missing(path) => {
                let mut m = missing;
                if !m.contains(&path) {
                    m.push(path);
                }
                return Some(EvidenceProblem::Missing(m));
            }
            Cmp::Contradiction {
                path,
                expected,
                observed,
            } => {
                return Some(EvidenceProblem::Mismatch(format!(
                    "{path}: expected {}, observed {}",
                    show(&path, Some(&expected)),
                    show(&path, Some(&observed))
                )));
            }
        }
    }
    (!missing.is_empty()).then_some(EvidenceProblem::Missing(missing))
}

/// Per requirement: its argument-matching calls and its candidates.
struct Matches {
    same: Vec<usize>,
    matching: Vec<usize>,
    last_fail: Option<usize>,
    candidates: Vec<usize>,
}

/// Evaluates the object form.
pub fn evaluate_spec(spec: &Spec, calls: &[Call]) -> Verdict {
    let mut per: Vec<Matches> = Vec::with_capacity(spec.requirements.len());
    for need in &spec.requirements {
        let same: Vec<usize> = (0..calls.len())
            .filter(|&i| calls[i].action == need.action)
            .collect();
        let matching: Vec<usize> = same
            .iter()
            .copied()
            .filter(|&i| match &need.arguments {
                None => true,
                Some(want) => arguments_mismatch(want, calls[i].arguments.as_ref()).is_none(),
            })
            .collect();
        let last_fail = matching.iter().rev().copied().find(|&i| !calls[i].success);
        let candidates = matching
            .iter()
            .copied()
            .filter(|&i| last_fail.is_none_or(|f| i > f))
            .filter(|&i| evidence_problem(need, &calls[i]).is_none())
            .collect();
        per.push(Matches {
            same,
            matching,
            last_fail,
            candidates,
        });
    }
    let caps: Vec<u64> = spec.requirements.iter().map(Need::count).collect();
    let cands: Vec<&[usize]> = per.iter().map(|m| m.candidates.as_slice()).collect();
    let (owner, filled) = max_matching(&cands, &caps, calls.len());

    let mut states = Vec::with_capacity(per.len());
    let (mut recovered, mut regressed) = (false, false);
    let mut exempt = vec![false; calls.len()];
    for ((need, m), &have) in spec.requirements.iter().zip(&per).zip(&filled) {
        let want = need.count();
        let proves = |i: usize| calls[i].success && evidence_problem(need, &calls[i]).is_none();
        let state = if have == want {
            // Proven after a failed matching call: a recovered retry.
            recovered |= m.last_fail.is_some();
            NeedState::Proven
        } else {
            // Calls that match this unproven requirement are its problem, not
            // unrequested writes.
            for &i in &m.matching {
                exempt[i] = true;
            }
            match (m.same.last(), m.matching.last()) {
                (None, _) => NeedState::NoCall,
                (Some(&latest), None) => NeedState::NoMatch {
                    call: latest,
                    why: need
                        .arguments
                        .as_ref()
                        .and_then(|w| arguments_mismatch(w, calls[latest].arguments.as_ref()))
                        .unwrap_or_default(),
                },
                (_, Some(&latest)) if !calls[latest].success => {
                    regressed |= m.matching.iter().any(|&i| i < latest && proves(i));
                    NeedState::Failed {
                        call: latest,
                        unfinished: calls[latest].unfinished,
                    }
                }
                (_, Some(&latest)) if (m.candidates.len() as u64) < want => {
                    match evidence_problem(need, &calls[latest]) {
                        Some(EvidenceProblem::Missing(f)) => NeedState::LacksEvidence {
                            call: latest,
                            missing: f,
                        },
                        Some(EvidenceProblem::Mismatch(why)) => {
                            NeedState::EvidenceMismatch { call: latest, why }
                        }
                        None => NeedState::TooFew { have, need: want },
                    }
                }
                _ => NeedState::TooFew { have, need: want },
            }
        };
        states.push(state);
    }
    let unrequested: Vec<usize> = (0..calls.len())
        .filter(|&i| {
            let c = &calls[i];
            (c.success || c.unfinished)
                && spec.is_write(&c.action)
                && owner[i].is_none()
                && !exempt[i]
        })
        .collect();
    let n_proven = states.iter().filter(|s| **s == NeedState::Proven).count();
    let any_failed = states.iter().any(|s| matches!(s, NeedState::Failed { .. }));
    let status = if n_proven == states.len() && unrequested.is_empty() {
        Status::VerifiedComplete
    } else if any_failed || !unrequested.is_empty() {
        Status::Failed
    } else if n_proven > 0 {
        Status::Partial
    } else {
        Status::Unverified
    };
    Verdict {
        status,
        states,
        unrequested,
        recovered,
        regressed,
    }
}

/// A maximum assignment of calls to requirement slots: `cands[r]` are the calls
/// requirement `r` may take, `caps[r]` how many it needs. Returns each call's owner
/// and each requirement's number of assigned calls. Greedy in call order first, then
/// a breadth-first augmenting path for each slot still open (no recursion, so a long
/// trace cannot overflow the stack).
fn max_matching(
    cands: &[&[usize]],
    caps: &[u64],
    n_calls: usize,
) -> (Vec<Option<usize>>, Vec<u64>) {
    let mut owner: Vec<Option<usize>> = vec![None; n_calls];
    let mut filled = vec![0u64; cands.len()];
    for (r, cs) in cands.iter().enumerate() {
        for &c in cs.iter() {
            if filled[r] == caps[r] {
                break;
            }
            if owner[c].is_none() {
                owner[c] = Some(r);
                filled[r] += 1;
            }
        }
    }
    for r in 0..cands.len() {
        while filled[r] < caps[r] {
            if !augment(r, cands, &mut owner) {
                break;
            }
            filled[r] += 1;
        }
    }
    (owner, filled)
}

/// Finds a path start → c1 → owner(c1) → c2 → … ending at a free call, and flips
/// it: every requirement on the path trades the call it was reached through for the
/// next one, and `start` gains one.
fn augment(start: usize, cands: &[&[usize]], owner: &mut [Option<usize>]) -> bool {
    // For each call reached: the requirement that reached it.
    let mut parent: Vec<Option<usize>> = vec![None; owner.len()];
    // For each requirement reached: the call (it owns) through which it was reached.
    let mut came_from: Vec<Option<usize>> = vec![None; cands.len()];
    let mut seen_req = vec![false; cands.len()];
    let mut queue = VecDeque::from([start]);
    seen_req[start] = true;
    while let Some(r) = queue.pop_front() {
        for &c in cands[r] {
            if parent[c].is_some() || owner[c] == Some(r) {
                continue;
            }
            parent[c] = Some(r);
            match owner[c] {
                None => {
                    let mut c = c;
                    while let Some(r) = parent[c] {
                        owner[c] = Some(r);
                        match came_from[r] {
                            Some(prev) if r != start => c = prev,
                            _ => break,
                        }
                    }
                    return true;
                }
                Some(r2) if !seen_req[r2] => {
                    seen_req[r2] = true;
                    came_from[r2] = Some(c);
                    queue.push_back(r2);
                }
                Some(_) => {}
            }
        }
    }
    false
}

/// The reasons, in order: one per requirement, each unrequested write, then the
/// claim line (seed 001's wording where seed 001 has one).
pub fn reasons(spec: &Spec, calls: &[Call], v: &Verdict, claimed: bool) -> Vec<String> {
    let mut out = Vec::with_capacity(v.states.len() + v.unrequested.len() + 1);
    for (need, state) in spec.requirements.iter().zip(&v.states) {
        let a = &need.action;
        out.push(match state {
            NeedState::Proven if need.count() > 1 => format!(
                "Action '{a}' has {} successful matching calls with sufficient evidence.",
                need.count()
            ),
            NeedState::Proven => format!("Action '{a}' has successful, sufficient evidence."),
            NeedState::NoCall => format!("No event recorded for required action '{a}'."),
            NeedState::NoMatch { call, why } => format!(
                "No call to '{a}' has the required arguments; the latest (events[{call}]): {why}."
            ),
            NeedState::Failed {
                call,
                unfinished: true,
            } => format!(
                "Latest matching call to '{a}' (events[{call}]) never got a result: an unfinished call is not a success."
            ),
            NeedState::Failed { call, .. } => {
                format!("Latest matching event for '{a}' (events[{call}]) reports failure.")
            }
            NeedState::LacksEvidence { missing, call } => format!(
                "Action '{a}' succeeded (events[{call}]) but lacks required evidence: {}.",
                missing.join(", ")
            ),
            NeedState::EvidenceMismatch { call, why } => format!(
                "Action '{a}' succeeded (events[{call}]) but its evidence does not match: {why}."
            ),
            NeedState::TooFew { have, need } => format!(
                "Action '{a}' needs {need} successful matching call{} with sufficient evidence; {have} found{}.",
                if *need == 1 { "" } else { "s" },
                if spec.requirements.iter().filter(|n| n.action == *a).count() > 1 {
                    " (each call accounts for one requirement)"
                } else {
                    ""
                }
            ),
        });
    }
    for &i in &v.unrequested {
        let c = &calls[i];
        out.push(if c.unfinished {
            format!(
                "Unrequested write: '{}' (events[{i}]) never got a result and no requirement accounts for it; it may have run.",
                c.action
            )
        } else {
            format!(
                "Unrequested write: '{}' (events[{i}]) succeeded and no requirement accounts for it.",
                c.action
            )
        });
    }
    if claimed && v.status != Status::VerifiedComplete {
        out.push("The agent claimed completion without proving every requirement.".into());
    } else if !claimed && v.status == Status::VerifiedComplete {
        out.push(
            "The task is evidenced as complete even though no completion claim was made.".into(),
        );
    }
    out
}

/// The result object of a case in the object form (seed 001's shape, plus
/// `unrequested_writes`).
pub fn evaluation(
    case_id: &str,
    spec: &Spec,
    calls: &[Call],
    claimed: bool,
) -> (Evaluation, Verdict) {
    let v = evaluate_spec(spec, calls);
    let pick = |want: fn(&NeedState) -> bool| {
        spec.requirements
            .iter()
            .zip(&v.states)
            .filter(|(_, s)| want(s))
            .map(|(n, _)| n.action.clone())
            .collect::<Vec<_>>()
    };
    let e = Evaluation {
        case_id: case_id.to_owned(),
        status: v.status.as_str(),
        proven_actions: pick(|s| *s == NeedState::Proven),
        missing_actions: pick(|s| !matches!(s, NeedState::Proven | NeedState::Failed { .. })),
        failed_actions: pick(|s| matches!(s, NeedState::Failed { .. })),
        reasons: reasons(spec, calls, &v, claimed),
        unrequested_writes: Some(
            v.unrequested
                .iter()
                .map(|&i| calls[i].action.clone())
                .collect(),
        ),
    };
    (e, v)
}

/// A case line whose `requirements` is the object form, read in full (the fast
/// reader has already checked the case-level members and the events' shape).
#[derive(Debug, Clone)]
pub struct ObjectCase {
    /// `case_id` after `strip()`.
    pub case_id: String,
    /// Whether the agent said it was done.
    pub completion_claimed: bool,
    /// The object-form requirements.
    pub spec: Spec,
    /// The events, in order, with their arguments kept apart from their evidence.
    pub calls: Vec<Call>,
}

/// Reads an object-form case line. Messages have no `PATH:LINE: ` prefix.
pub fn parse_object_case(line: &[u8]) -> Result<ObjectCase, CaseError> {
    let v = crate::pyjson::parse_strict(line).map_err(|e| format!("invalid JSON: {e}"))?;
    let Value::Object(mut o) = v else {
        return Err("Each case must be an object.".into());
    };
    let case_id = match o.get("case_id") {
        Some(Value::String(s)) if !py_blank(s) => py_strip(s).to_owned(),
        _ => return Err("A case requires non-empty 'case_id' and 'task'.".into()),
    };
    let completion_claimed = match o.get("completion_claimed") {
        Some(Value::Bool(b)) => *b,
        _ => return Err("'completion_claimed' must be boolean.".into()),
    };
    let spec = parse_spec(
        o.get("requirements").unwrap_or(&Value::Null),
        "requirements",
    )?;
    let events = match o.remove("events") {
        None => Vec::new(),
        Some(Value::Array(a)) => a,
        Some(_) => return Err("'events' must be a list.".into()),
    };
    let mut calls = Vec::with_capacity(events.len());
    for (i, e) in events.into_iter().enumerate() {
        let Value::Object(mut e) = e else {
            return Err(format!("events[{i}]: Each event must be an object.").into());
        };
        let action = match e.get("action") {
            Some(Value::String(s)) if !py_blank(s) => py_strip(s).to_owned(),
            _ => {
                return Err(
                    format!("events[{i}]: Each event requires a non-empty 'action'.").into(),
                );
            }
        };
        let success = match e.get("success") {
            Some(Value::Bool(b)) => *b,
            _ => {
                return Err(format!("events[{i}]: Each event requires boolean 'success'.").into());
            }
        };
        let evidence = match e.remove("evidence") {
            None => Map::new(),
            Some(Value::Object(m)) => m,
            Some(_) => return Err(format!("events[{i}]: 'evidence' must be an object.").into()),
        };
        let arguments = match e.remove("arguments") {
            None => None,
            Some(Value::Object(m)) => Some(m),
            Some(_) => return Err(format!("events[{i}]: 'arguments' must be an object.").into()),
        };
        let unfinished = match e.get("unfinished") {
            None | Some(Value::Bool(false)) => false,
            Some(Value::Bool(true)) if !success => true,
            Some(Value::Bool(true)) => {
                return Err(format!(
                    "events[{i}]: an unfinished event cannot have 'success': true"
                )
                .into());
            }
            Some(_) => return Err(format!("events[{i}]: 'unfinished' must be boolean.").into()),
        };
        calls.push(Call {
            action,
            success,
            unfinished,
            arguments,
            evidence,
        });
    }
    Ok(ObjectCase {
        case_id,
        completion_claimed,
        spec,
        calls,
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn spec(v: Value) -> Spec {
        parse_spec(&v, "").unwrap()
    }

    fn call(action: &str, success: bool, args: Value, evidence: Value) -> Call {
        Call {
            action: action.into(),
            success,
            unfinished: false,
            arguments: args.as_object().cloned(),
            evidence: evidence.as_object().cloned().unwrap_or_default(),
        }
    }

    fn run(s: &Spec, calls: &[Call]) -> (Status, Vec<String>) {
        let v = evaluate_spec(s, calls);
        (v.status, reasons(s, calls, &v, true))
    }

    #[test]
    fn arguments_must_match_and_the_reason_names_the_path() {
        let s = spec(json!({"requirements": [{"action": "book", "arguments":
            {"user": "mia", "flights": [{"n": "HAT136", "date": "2024-05-20"}, {"n": "HAT039", "date": "2024-05-20"}]}}]}));
        let good = json!({"user": "mia", "flights": [{"n": "HAT136", "date": "2024-05-20"}, {"n": "HAT039", "date": "2024-05-20"}], "extra": 1});
        let mut bad = good.clone();
        bad["flights"][1]["date"] = json!("2024-05-21");
        assert_eq!(
            run(&s, &[call("book", true, good.clone(), json!({}))]).0,
            Status::VerifiedComplete
        );
        let (st, r) = run(&s, &[call("book", true, bad, json!({}))]);
        assert_eq!(st, Status::Unverified);
        assert_eq!(
            r[0],
            "No call to 'book' has the required arguments; the latest (events[0]): flights[1].date: expected \"2024-05-20\", observed \"2024-05-21\"."
        );
        // Types are kept and numbers compare exactly.
        let s = spec(
            json!({"requirements": [{"action": "pay", "arguments": {"amount": 250, "zip": "94107"}}]}),
        );
        assert_eq!(
            run(
                &s,
                &[call(
                    "pay",
                    true,
                    json!({"amount": 250.0, "zip": "94107"}),
                    json!({})
                )]
            )
            .0,
            Status::VerifiedComplete
        );
        let (_, r) = run(
            &s,
            &[call(
                "pay",
                true,
                json!({"amount": 250, "zip": 94107}),
                json!({}),
            )],
        );
        assert!(
            r[0].contains("zip: expected \"94107\", observed 94107"),
            "{r:?}"
        );
        let (_, r) = run(&s, &[call("pay", true, json!({"zip": "94107"}), json!({}))]);
        assert!(
            r[0].contains("amount: expected 250, observed nothing"),
            "{r:?}"
        );
    }

    #[test]
    fn secrets_are_not_shown_and_long_values_are_cut() {
        let s = spec(
            json!({"requirements": [{"action": "login", "arguments": {"password": "hunter2", "note": "x".repeat(200), "dsn": "postgres://u:pw@h/db"}}]}),
        );
        let (_, r) = run(
            &s,
            &[call(
                "login",
                true,
                json!({"password": "hunter3", "note": "x".repeat(200), "dsn": "postgres://u:pw@h/db"}),
                json!({}),
            )],
        );
        assert!(
            r[0].contains("password: expected ***, observed ***"),
            "{r:?}"
        );
        assert!(!r[0].contains("hunter"));
        let (_, r) = run(
            &s,
            &[call(
                "login",
                true,
                json!({"password": "hunter2", "note": "y", "dsn": "postgres://u:pw@h/db"}),
                json!({}),
            )],
        );
        assert!(r[0].contains('…') && r[0].len() < 250, "{r:?}");
        assert_eq!(
            show("dsn", Some(&json!("postgres://u:secretpw@h/db"))),
            "\"postgres://u:***@h/db\""
        );
    }

    #[test]
    fn evidence_values_and_fields() {
        let s = spec(
            json!({"requirements": [{"action": "a", "evidence": {"status": "confirmed"}, "evidence_fields": ["id"]}]}),
        );
        assert_eq!(
            run(
                &s,
                &[call(
                    "a",
                    true,
                    json!({}),
                    json!({"status": "confirmed", "id": "1"})
                )]
            )
            .0,
            Status::VerifiedComplete
        );
        let (st, r) = run(
            &s,
            &[call(
                "a",
                true,
                json!({}),
                json!({"status": "pending", "id": "1"}),
            )],
        );
        assert_eq!(st, Status::Unverified);
        assert!(
            r[0].contains("status: expected \"confirmed\", observed \"pending\""),
            "{r:?}"
        );
        let (_, r) = run(
            &s,
            &[call(
                "a",
                true,
                json!({}),
                json!({"status": "confirmed", "id": " "}),
            )],
        );
        assert!(r[0].ends_with("lacks required evidence: id."), "{r:?}");
    }

    #[test]
    fn count_later_failure_and_recovery() {
        let s = spec(json!({"requirements": [{"action": "a", "count": 2}]}));
        let ok = || call("a", true, json!({}), json!({}));
        let bad = || call("a", false, json!({}), json!({}));
        assert_eq!(run(&s, &[ok(), ok()]).0, Status::VerifiedComplete);
        let (st, r) = run(&s, &[ok()]);
        assert_eq!(st, Status::Unverified);
        assert!(r[0].contains("needs 2 successful matching calls"), "{r:?}");
        // A later failure overrides the earlier successes…
        assert_eq!(run(&s, &[ok(), ok(), bad()]).0, Status::Failed);
        // …and only successes after it count.
        assert_eq!(run(&s, &[ok(), bad(), ok()]).0, Status::Unverified);
        let v = evaluate_spec(&s, &[ok(), bad(), ok(), ok()]);
        assert_eq!(v.status, Status::VerifiedComplete);
        assert!(v.recovered && !v.regressed);
        let v = evaluate_spec(&s, &[ok(), ok(), bad()]);
        assert!(v.regressed && !v.recovered);
    }

    #[test]
    fn maximum_matching_not_first_fit() {
        // r0 accepts calls 0 and 1 (any arguments); r1 only call 0. First fit would
        // give call 0 to r0 and leave r1 without; the maximum matching proves both.
        let s = spec(
            json!({"requirements": [{"action": "a"}, {"action": "a", "arguments": {"x": 1}}]}),
        );
        let calls = [
            call("a", true, json!({"x": 1}), json!({})),
            call("a", true, json!({"x": 2}), json!({})),
        ];
        assert_eq!(run(&s, &calls).0, Status::VerifiedComplete);
        // One call cannot account for two requirements.
        let (st, r) = run(&s, &calls[..1]);
        assert_eq!(st, Status::Partial);
        assert_eq!(
            r[1],
            "Action 'a' needs 1 successful matching call with sufficient evidence; 0 found (each call accounts for one requirement)."
        );
        // Longer chains of reassignment.
        let s = spec(json!({"requirements": [
            {"action": "a"}, {"action": "a", "arguments": {"k": [1]}}, {"action": "a", "arguments": {"k": [1], "j": 1}}]}));
        let calls = [
            call("a", true, json!({"k": [1], "j": 1}), json!({})),
            call("a", true, json!({"k": [1], "j": 2}), json!({})),
            call("a", true, json!({"k": [2]}), json!({})),
        ];
        assert_eq!(run(&s, &calls).0, Status::VerifiedComplete);
        let v = evaluate_spec(&s, &calls);
        assert!(v.unrequested.is_empty());
    }

    #[test]
    fn unrequested_writes_fail_the_case() {
        let s = spec(
            json!({"requirements": [{"action": "book", "arguments": {"id": 1}}], "writes": ["book", "cancel"]}),
        );
        let book = |id| call("book", true, json!({"id": id}), json!({}));
        assert_eq!(
            run(&s, &[book(1), call("search", true, json!({}), json!({}))]).0,
            Status::VerifiedComplete
        );
        let (st, r) = run(&s, &[book(1), call("cancel", true, json!({}), json!({}))]);
        assert_eq!(st, Status::Failed);
        assert_eq!(
            r[1],
            "Unrequested write: 'cancel' (events[1]) succeeded and no requirement accounts for it."
        );
        // Once too often.
        let (st, r) = run(&s, &[book(1), book(1)]);
        assert_eq!(st, Status::Failed);
        assert!(r[1].contains("events[1]"), "{r:?}");
        // A failed write changed nothing; a wrong one is unrequested.
        assert_eq!(
            run(&s, &[call("cancel", false, json!({}), json!({})), book(1)]).0,
            Status::VerifiedComplete
        );
        let (st, r) = run(&s, &[book(2)]);
        assert_eq!(st, Status::Failed);
        assert!(
            r[0].contains("id: expected 1, observed 2") && r[1].contains("events[0]"),
            "{r:?}"
        );
        // A success overridden by a later failure still happened: with the
        // requirement proven by a retry, it is an extra write (fail closed).
        let (st, r) = run(
            &s,
            &[
                book(1),
                call("book", false, json!({"id": 1}), json!({})),
                book(1),
            ],
        );
        assert_eq!(st, Status::Failed);
        assert!(r[1].contains("'book' (events[0])"), "{r:?}");
        // An unfinished write may have run.
        let mut c = call("cancel", false, json!({}), json!({}));
        c.unfinished = true;
        let (st, r) = run(&s, &[book(1), c]);
        assert_eq!(st, Status::Failed);
        assert!(r[1].contains("never got a result"), "{r:?}");
    }

    #[test]
    fn empty_requirements_with_writes() {
        let s = spec(json!({"requirements": [], "writes": ["cancel"]}));
        assert_eq!(
            run(&s, &[call("read", true, json!({}), json!({}))]).0,
            Status::VerifiedComplete
        );
        assert_eq!(run(&s, &[]).0, Status::VerifiedComplete);
        assert_eq!(
            run(&s, &[call("cancel", true, json!({}), json!({}))]).0,
            Status::Failed
        );
        assert_eq!(
            run(&s, &[call("cancel", false, json!({}), json!({}))]).0,
            Status::VerifiedComplete
        );
    }

    #[test]
    fn unfinished_latest_call_is_a_failure() {
        let s = spec(json!({"requirements": [{"action": "a"}]}));
        let mut c = call("a", false, json!({}), json!({}));
        c.unfinished = true;
        let (st, r) = run(&s, &[call("a", true, json!({}), json!({})), c]);
        assert_eq!(st, Status::Failed);
        assert!(r[0].contains("never got a result"), "{r:?}");
    }

    #[test]
    fn matching_is_maximum_on_a_crossing_chain() {
        // n requirements, requirement i accepts calls i and i+1; the greedy pass in
        // order takes call i+1 for nobody; a reversed order forces augmenting paths.
        let n = 30;
        let reqs: Vec<Value> = (0..n)
            .rev()
            .map(|i| json!({"action": "a", "arguments": {"k": [i, i + 1]}}))
            .collect();
        let s = spec(json!({"requirements": reqs}));
        let calls: Vec<Call> = (0..=n)
            .map(|i| {
                let mut c = call("a", true, json!({}), json!({}));
                // Call i carries every k that requirement i-1 or i accepts.
                c.arguments = None;
                c.action = "a".into();
                c.arguments = Some(json!({"k": [i, i + 1]}).as_object().unwrap().clone());
                c
            })
            .collect();
        assert_eq!(run(&s, &calls).0, Status::VerifiedComplete);
    }
}
