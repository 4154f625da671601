//! The Completion Claim verdict (seed 000, as read in DESIGN.md "The verdict").
//!
//! [`decide`] is pure: the decision time is an argument and nothing is read from the
//! outside world. Every evidence item gets a [`Finding`] saying whether it was used
//! and, if not, why — so a person can see exactly what the verdict rests on.

use crate::compare::{Cmp, compare_object};
use evident_format::{CheckType, Claim, Evidence, Mutation, Timestamp, VerifierKind, Wave};
use serde::{Deserialize, Serialize};
use serde_json::Value;
use std::collections::{HashMap, HashSet};
use std::fmt;

/// The three outcomes of the spec.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum State {
    /// Every mutation covered by fresh, independent, matching evidence.
    Verified,
    /// Evidence missing, stale, early or self-attested: an unknown, not a failure.
    Unverified,
    /// Fresh independent evidence contradicts the claim.
    Refuted,
    /// evident extension, only under `policy.partial = true`: some mutations are
    /// covered by satisfying evidence, others are not (and nothing contradicts).
    /// Not done, like `unverified`, but with part of the work proven.
    Partial,
}

impl State {
    /// The wire name (`verified`, …), as serialized; for reports and exit-code mapping.
    pub fn as_str(self) -> &'static str {
        match self {
            State::Verified => "verified",
            State::Unverified => "unverified",
            State::Refuted => "refuted",
            State::Partial => "partial",
        }
    }
}

impl fmt::Display for State {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

/// Why an evidence item did or did not count.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum Code {
    /// Usable, and every expected key matched.
    Satisfies,
    /// Usable, and some expected key was contradicted.
    Contradicts,
    /// The agent's own check: recorded, never counted (rule 1).
    SelfAttested,
    /// Claims to be independent but carries no valid signature from a trusted key.
    UnauthenticatedIndependence,
    /// The check did not happen (rule 4).
    Absent,
    /// Covers no mutation, so it cannot speak for any (rule 2 could never be checked).
    CoversNothing,
    /// Dated after the decision: it cannot have been observed yet.
    FromTheFuture,
    /// Older than `policy.max_age_s` at decision time (rule 5).
    Stale,
    /// Not strictly after every mutation it covers (rule 2).
    PredatesMutation,
    /// `observed_value` is not an object: nothing was observed.
    NoObservation,
    /// The verifier tried and could not observe (evident's `observation_error`).
    ObservationFailed,
    /// `expected` is `{}`: it asserts nothing.
    EmptyExpected,
    /// The observation lacks some expected key: neither match nor contradiction.
    IncompleteObservation,
    /// `endpoint_health` expecting only `status`: a 200 that would be 200 either way.
    StatusOnly,
    /// The document names the contract's checks (`required_checks`) and this item is
    /// not an observation of one of them: when a contract decides, only its checks count.
    OutsideContract,
    /// A readback observed before and after the contract's commands saw different
    /// values in a key the expectation names: the agent's code changed the state.
    StateChanged,
}

impl Code {
    /// The wire name (`self_attested`, …), as serialized; reports show it per item.
    pub fn as_str(self) -> &'static str {
        match self {
            Code::Satisfies => "satisfies",
            Code::Contradicts => "contradicts",
            Code::SelfAttested => "self_attested",
            Code::UnauthenticatedIndependence => "unauthenticated_independence",
            Code::Absent => "absent",
            Code::CoversNothing => "covers_nothing",
            Code::FromTheFuture => "from_the_future",
            Code::Stale => "stale",
            Code::PredatesMutation => "predates_mutation",
            Code::NoObservation => "no_observation",
            Code::ObservationFailed => "observation_failed",
            Code::EmptyExpected => "empty_expected",
            Code::IncompleteObservation => "incomplete_observation",
            Code::StatusOnly => "status_only",
            Code::OutsideContract => "outside_contract",
            Code::StateChanged => "state_changed",
        }
    }
}

impl fmt::Display for Code {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

/// What the verdict made of one evidence item.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
pub struct Finding {
    /// Index into the document's `evidence`.
    pub evidence: usize,
    /// The item's `check_type`, copied so a finding reads without the document.
    pub check_type: String,
    /// True when the item decided something (it satisfies or contradicts).
    pub used: bool,
    /// Why the item did or did not count.
    pub code: Code,
    /// One human sentence.
    pub detail: String,
}

/// The decision, with the reason for every evidence item it did or did not use.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
pub struct Verdict {
    /// The outcome: `verified`, `unverified`, `refuted` or `partial`.
    pub state: State,
    /// Required check types not satisfied (policy order), then uncovered mutations as
    /// `mutation:<id>`, or `mutations` when the claim lists none. Empty unless unverified.
    pub unmet: Vec<String>,
    /// One human sentence.
    pub reason: String,
    /// When it was decided: the caller's argument, never read from a clock.
    #[schemars(with = "String")]
    pub decided_at: Timestamp,
    /// One finding per evidence item, in document order: what the verdict rests on.
    pub findings: Vec<Finding>,
    /// Under `policy.partial = true`: how many of the claim's mutations are covered by
    /// satisfying evidence, of how many.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub coverage: Option<Coverage>,
}

/// Covered vs total mutations, for a `partial` verdict.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, schemars::JsonSchema)]
pub struct Coverage {
    /// Mutations covered by satisfying evidence.
    pub covered: usize,
    /// Mutations the claim lists.
    pub total: usize,
}

/// Inputs to the decision besides the claim itself.
#[derive(Debug, Clone, Default)]
pub struct Options {
    /// With a trust list: for each evidence item, whether it carries a valid signature
    /// from a trusted key over exactly its content. `None` = no trust list configured,
    /// so `independent` is taken as asserted (the spec's behaviour).
    pub authenticated: Option<Vec<bool>>,
}

/// Decides a claim at `decided_at`. Any verdict written in the claim is ignored.
///
/// When the claim names the contract's checks (`required_checks`, written by the
/// gate), only authenticated independent evidence of those checks counts; every item
/// of a required check must satisfy (one failing observation is never outvoted by a
/// passing sibling), each required check needs at least one item, and an item of a
/// task-level check (empty `covers`) counts toward the required checks and check
/// types but covers no mutation.
pub fn decide(claim: &Claim, decided_at: &Timestamp, options: &Options) -> Verdict {
    let max_age_ns = claim
        .policy
        .as_ref()
        .and_then(|p| p.max_age_s)
        .map(|m| (m.0 * 1e9).round() as i128);
    let mut findings = Vec::with_capacity(claim.evidence.len());
    // By id, so each covered id is found at once (a claim may list thousands).
    let by_id: HashMap<&str, &Mutation> = claim
        .mutations
        .iter()
        .rev()
        .map(|m| (m.id.as_str(), m))
        .collect();
    let is_authenticated = |i: usize| {
        options
            .authenticated
            .as_ref()
            .is_none_or(|a| a.get(i).copied().unwrap_or(false))
    };
    // The checks required: those the gate's own signed items say their run required
    // (the document's `required_checks` is only a copy, which the holder could edit),
    // else the document's. Items of two runs cannot be mixed.
    let mut runs: Vec<&evident_format::GateRun> = Vec::new();
    for (i, e) in claim.evidence.iter().enumerate() {
        if let Some(r) = &e.run
            && e.verifier.kind == VerifierKind::Independent
            && is_authenticated(i)
            && !runs
                .iter()
                .any(|x| x.id == r.id && x.required_checks == r.required_checks)
        {
            runs.push(r);
        }
    }
    let mixed_runs = runs.len() > 1;
    let run = runs.first().copied().filter(|_| !mixed_runs);
    let required_list: Option<&[evident_format::RequiredCheck]> = match run {
        Some(r) => Some(&r.required_checks),
        None if mixed_runs => Some(&[]),
        None => claim.required_checks.as_deref(),
    };
    let required: Option<Vec<&str>> =
        required_list.map(|r| r.iter().map(|c| c.id.as_str()).collect());
    let mut checks: HashMap<&str, CheckTally> = required_list
        .iter()
        .copied()
        .flatten()
        .map(|c| {
            let tally = CheckTally {
                waves: c.waves.clone(),
                ..CheckTally::default()
            };
            (c.id.as_str(), tally)
        })
        .collect();
    let mut covered: HashSet<&str> = HashSet::new();
    let mut satisfied: HashSet<&str> = HashSet::new();
    let mut contradiction: Option<(usize, String)> = None;
    let mut self_contradiction: Option<(usize, String)> = None;

    for (i, e) in claim.evidence.iter().enumerate() {
        let authenticated = is_authenticated(i);
        // The check this item is an observation of, when the document names checks:
        // authenticated, independent, and of the run that decides (when there is one).
        let check = e
            .check_id
            .as_deref()
            .filter(|_| authenticated && e.verifier.kind == VerifierKind::Independent)
            .filter(|_| run.is_none_or(|r| e.run.as_ref().is_some_and(|x| x.id == r.id)))
            .and_then(|id| checks.get_key_value(id).map(|(k, _)| *k));
        let (code, detail) = if required.is_some() && check.is_none() {
            match judge(&by_id, e, decided_at, max_age_ns, authenticated, false) {
                found @ (Code::SelfAttested | Code::UnauthenticatedIndependence | Code::Absent, _) => found,
                _ => (
                    Code::OutsideContract,
                    "not an observation of a check the contract requires: when a contract decides, only its checks count".into(),
                ),
            }
        } else {
            judge(
                &by_id,
                e,
                decided_at,
                max_age_ns,
                authenticated,
                check.is_some(),
            )
        };
        match code {
            Code::Satisfies => {
                covered.extend(e.covers.iter().map(String::as_str));
                satisfied.insert(e.check_type.as_str());
            }
            Code::Contradicts if contradiction.is_none() => {
                contradiction = Some((i, detail.clone()));
            }
            Code::SelfAttested | Code::UnauthenticatedIndependence
                if self_contradiction.is_none() && detail.contains("contradicts") =>
            {
                self_contradiction = Some((i, detail.clone()));
            }
            _ => {}
        }
        if let Some(id) = check
            && let Some(t) = checks.get_mut(id)
        {
            t.items += 1;
            if code != Code::Satisfies && t.failed.is_none() {
                t.failed = Some(i);
            }
            if code == Code::Satisfies {
                match e.wave {
                    Some(Wave::Before) => t.before.push(i),
                    Some(Wave::After) => t.after.push(i),
                    _ => {}
                }
                if let Some(w) = e.wave {
                    t.seen.insert(w.as_str());
                }
            }
        }
        findings.push(Finding {
            evidence: i,
            check_type: e.check_type.clone(),
            used: matches!(code, Code::Satisfies | Code::Contradicts),
            code,
            detail,
        });
    }

    // A readback that satisfied before and after the commands must have seen the same
    // values in every key its expectation names; otherwise the agent's code moved the
    // state while the gate ran, and neither observation is the world's last word.
    for t in checks.values_mut() {
        if t.failed.is_some() {
            continue;
        }
        // Each item's values are read from their text once, not once a pair: an agent
        // can send hundreds of items of each wave (found by the red team: 26 s for
        // 400 × 400 when every pair parsed its three values again).
        let befores: Vec<Value> = t
            .before
            .iter()
            .map(|&b| claim.evidence[b].observed_value.to_value())
            .collect();
        let afters: Vec<(usize, Value, Value)> = t
            .after
            .iter()
            .map(|&a| {
                let e = &claim.evidence[a];
                (a, e.expected.to_value(), e.observed_value.to_value())
            })
            .collect();
        'pairs: for before in &befores {
            for (a, expected, after) in &afters {
                let a = *a;
                if let Some((path, was, is)) = named_difference(expected, before, after) {
                    findings[a].code = Code::StateChanged;
                    findings[a].used = false;
                    findings[a].detail = format!(
                        "the state changed while the gate ran: before the commands {path} was {}, after them {}",
                        short(&was),
                        short(&is),
                    );
                    t.failed = Some(a);
                    break 'pairs;
                }
            }
        }
    }
    // A contradiction observed after the commands, by a check that was satisfied
    // before them, is the agent's code changing the state: say so.
    if let Some((i, detail)) = &mut contradiction
        && claim.evidence[*i].wave == Some(Wave::After)
        && let Some(id) = claim.evidence[*i].check_id.as_deref()
        && checks.get(id).is_some_and(|t| !t.before.is_empty())
    {
        *detail = format!("the state changed while the gate ran: after the commands, {detail}");
    }

    let mut unmet = Vec::new();
    if let Some(policy) = &claim.policy {
        for t in &policy.requires {
            let name = t.as_str().to_string();
            if !satisfied.contains(t.as_str()) && !unmet.contains(&name) {
                unmet.push(name);
            }
        }
    }
    for id in required.iter().flatten() {
        let t = &checks[id];
        let name = format!("check:{id}");
        if (t.items == 0 || t.failed.is_some() || t.missing_wave().is_some())
            && !unmet.contains(&name)
        {
            unmet.push(name);
        }
    }
    if mixed_runs {
        unmet.push("gate_run".to_string());
    }
    if claim.mutations.is_empty() {
        unmet.push("mutations".to_string());
    }
    for m in &claim.mutations {
        if !covered.contains(m.id.as_str()) {
            unmet.push(format!("mutation:{}", m.id));
        }
    }

    let (state, reason) = if let Some((i, detail)) = contradiction {
        unmet.clear();
        (
            State::Refuted,
            format!(
                "Refuted: {} contradicts the claim: {detail}.",
                source_name(claim, i)
            ),
        )
    } else if unmet.is_empty() {
        let n = claim.mutations.len();
        let policy = match claim.policy.as_ref().map(|p| p.requires.as_slice()) {
            Some([]) | None => String::new(),
            Some(req) => format!(
                " and the policy's required checks ({}) are satisfied",
                req.iter()
                    .map(|t| t.as_str())
                    .collect::<Vec<_>>()
                    .join(", ")
            ),
        };
        let contract = match required.as_deref() {
            Some(ids) if !ids.is_empty() => {
                format!("; every check of the contract ({}) passed", ids.join(", "))
            }
            _ => String::new(),
        };
        (
            State::Verified,
            format!(
                "Verified: {} covered by fresh, independent evidence that matches{policy}{contract}.",
                plural(n, "mutation is", "mutations are")
            ),
        )
    } else {
        let mut reason = format!(
            "Unverified: {}.",
            first_cause(claim, &unmet, &checks, &findings)
        );
        if unmet.len() > 1 {
            reason.push_str(&format!(" Also unmet: {}.", unmet[1..].join(", ")));
        }
        if let Some((i, detail)) = self_contradiction {
            reason.push_str(&format!(
                " Note: the agent's own evidence[{i}] contradicts its claim ({detail})."
            ));
        }
        (State::Unverified, reason)
    };
    // Partial coverage as its own state, only when the policy opts in.
    let partial_on = claim.policy.as_ref().and_then(|p| p.partial) == Some(true);
    let total = claim.mutations.len();
    let n_covered = claim
        .mutations
        .iter()
        .filter(|m| covered.contains(m.id.as_str()))
        .count();
    let (state, reason, coverage) = match state {
        State::Unverified if partial_on && n_covered > 0 && n_covered < total => (
            State::Partial,
            format!(
                "Partial: {n_covered} of {total} mutations are covered by fresh, independent evidence that matches. {}",
                reason.trim_start_matches("Unverified: ")
            ),
            Some(Coverage {
                covered: n_covered,
                total,
            }),
        ),
        _ if partial_on => (
            state,
            reason,
            Some(Coverage {
                covered: n_covered,
                total,
            }),
        ),
        _ => (state, reason, None),
    };

    Verdict {
        state,
        unmet,
        reason,
        decided_at: decided_at.clone(),
        findings,
        coverage,
    }
}

/// What the decision saw of one required check.
#[derive(Default)]
struct CheckTally {
    /// The waves the gate observed the check in: each needs a satisfying item.
    waves: Vec<Wave>,
    /// The waves a satisfying item was seen in.
    seen: HashSet<&'static str>,
    /// Items of the check (authenticated, independent, with its `check_id`).
    items: usize,
    /// The first item that did not satisfy.
    failed: Option<usize>,
    /// Satisfying items observed before / after the commands.
    before: Vec<usize>,
    after: Vec<usize>,
}

impl CheckTally {
    /// A wave the check was observed in that has no satisfying item.
    fn missing_wave(&self) -> Option<Wave> {
        self.waves
            .iter()
            .copied()
            .find(|w| !self.seen.contains(w.as_str()))
    }
}

/// `check "zip" (state_readback accounts/4471)` or `evidence[3]`, for reasons.
fn source_name(claim: &Claim, i: usize) -> String {
    let e = &claim.evidence[i];
    match &e.check_id {
        Some(id) => format!(
            "check {id:?} ({} {})",
            e.check_type,
            e.target.as_deref().unwrap_or("-")
        ),
        None => format!("independent evidence[{i}]"),
    }
}

/// The first blocking cause in words: which check, what it saw, what would satisfy
/// it; else which required type or mutation nothing speaks for.
fn first_cause(
    claim: &Claim,
    unmet: &[String],
    checks: &HashMap<&str, CheckTally>,
    findings: &[Finding],
) -> String {
    // A check that observed and failed says the most; then a check never observed.
    let failed = unmet.iter().find_map(|u| {
        let id = u.strip_prefix("check:")?;
        let i = checks.get(id)?.failed?;
        Some((id, i))
    });
    if let Some((id, i)) = failed {
        let e = &claim.evidence[i];
        return format!(
            "check {id:?} ({} {}) did not pass: {}; it needs an observation showing {}",
            e.check_type,
            e.target.as_deref().unwrap_or("-"),
            findings[i].detail,
            short(&e.expected.to_value())
        );
    }
    let Some(first) = unmet.first() else {
        return "nothing was decided".into();
    };
    if let Some(id) = first.strip_prefix("check:") {
        return match checks.get(id).and_then(CheckTally::missing_wave) {
            Some(w) if checks[id].items > 0 => format!(
                "check {id:?} of the contract has no authenticated observation from the {} wave",
                w.as_str()
            ),
            _ => format!("check {id:?} of the contract was not observed (no evidence of it)"),
        };
    }
    if first == "gate_run" {
        return "the document mixes signed observations of several gate runs; a decision rests on one run's observations (re-run the gate)".into();
    }
    if first == "mutations" {
        return "the claim lists no mutations, so nothing ties it to a change in the world".into();
    }
    if let Some(id) = first.strip_prefix("mutation:") {
        let m = claim.mutations.iter().find(|m| m.id == id);
        let what = m.map_or(String::new(), |m| {
            format!(" ({} {})", m.kind, m.target.as_deref().unwrap_or("-"))
        });
        return format!(
            "nothing independent, fresh and matching covers mutation {id:?}{what}: a check must observe it after it was made"
        );
    }
    // A required check type: say why the nearest item of that type did not count.
    match findings.iter().find(|f| f.check_type == *first) {
        Some(f) => format!(
            "no fresh, independent {first} evidence satisfies its expectation: evidence[{}] is {} ({})",
            f.evidence, f.code, f.detail
        ),
        None => format!("no {first} evidence was given, and the policy requires one"),
    }
}

/// The first path, among the keys `expected` names, where `before` and `after`
/// differ, with the two values there (`null` where a key is missing).
fn named_difference(
    expected: &Value,
    before: &Value,
    after: &Value,
) -> Option<(String, Value, Value)> {
    fn walk(
        expected: &Value,
        before: &Value,
        after: &Value,
        path: String,
    ) -> Option<(String, Value, Value)> {
        match (expected, before, after) {
            (Value::Object(want), Value::Object(b), Value::Object(a)) => {
                want.iter().find_map(|(k, w)| {
                    let p = evident_format::json::push_key(&path, k);
                    match (b.get(k), a.get(k)) {
                        (None, None) => None,
                        (Some(bv), Some(av)) => walk(w, bv, av, p),
                        (bv, av) => Some((
                            p,
                            bv.cloned().unwrap_or(Value::Null),
                            av.cloned().unwrap_or(Value::Null),
                        )),
                    }
                })
            }
            _ => (!same_value(before, after)).then(|| (path, before.clone(), after.clone())),
        }
    }
    walk(expected, before, after, String::new())
}

/// JSON equality with numbers by exact value.
fn same_value(a: &Value, b: &Value) -> bool {
    matches!(
        crate::compare::compare_value(a, b, String::new()),
        Cmp::Match
    ) && matches!(
        crate::compare::compare_value(b, a, String::new()),
        Cmp::Match
    )
}

fn plural(n: usize, one: &str, many: &str) -> String {
    if n == 1 {
        format!("the 1 {one}")
    } else {
        format!("all {n} {many}")
    }
}

/// The finding for one evidence item. The order of the tests only picks which reason
/// is reported; every reason before `compare` makes the item unusable.
fn judge(
    mutations: &HashMap<&str, &Mutation>,
    e: &Evidence,
    decided_at: &Timestamp,
    max_age_ns: Option<i128>,
    authenticated: bool,
    task_level: bool,
) -> (Code, String) {
    let comparison = compare(e);
    let says = |prefix: &str| match &comparison {
        Ok((Code::Contradicts, d)) => {
            format!("{prefix}; its observation contradicts expected: {d}")
        }
        _ => prefix.to_string(),
    };
    match e.verifier.kind {
        VerifierKind::SelfAttested => {
            return (
                Code::SelfAttested,
                says(&format!(
                    "self-attested by {:?}: recorded, never counted",
                    e.verifier.id
                )),
            );
        }
        VerifierKind::Absent => {
            return (
                Code::Absent,
                "marked absent: the check did not happen".into(),
            );
        }
        VerifierKind::Independent if !authenticated => {
            return (
                Code::UnauthenticatedIndependence,
                says(&format!(
                    "claims to be independent ({:?}) but carries no valid signature from a trusted key: treated as self-attested",
                    e.verifier.id
                )),
            );
        }
        VerifierKind::Independent => {}
    }
    if e.covers.is_empty() && !task_level {
        return (
            Code::CoversNothing,
            "covers no mutation, so it can speak for none".into(),
        );
    }
    if e.at > *decided_at {
        return (
            Code::FromTheFuture,
            format!(
                "dated {} after the decision time {}: it cannot have been observed yet",
                e.at, decided_at
            ),
        );
    }
    if let Some(max) = max_age_ns {
        let age = (decided_at.instant() - e.at.instant()).whole_nanoseconds();
        if age > max {
            return (
                Code::Stale,
                format!(
                    "observed {} before the decision, more than max_age_s allows",
                    seconds(age)
                ),
            );
        }
    }
    for id in &e.covers {
        if let Some(m) = mutations.get(id.as_str())
            && e.at <= m.at
        {
            return (
                Code::PredatesMutation,
                format!(
                    "observed at {}, not strictly after mutation {:?} at {}",
                    e.at, m.id, m.at
                ),
            );
        }
    }
    match comparison {
        Ok(found) => found,
        Err(found) => found,
    }
}

fn seconds(ns: i128) -> String {
    let s = ns as f64 / 1e9;
    if s.fract() == 0.0 {
        format!("{s:.0} s")
    } else {
        format!("{s:.3} s")
    }
}

/// Compares the item's observation with its expectation. `Ok` carries a satisfying or
/// contradicting result (or status-only/incomplete); `Err` means no comparison could
/// be made at all.
#[allow(clippy::result_large_err)]
fn compare(e: &Evidence) -> Result<(Code, String), (Code, String)> {
    if let Some(err) = observation_error(e) {
        return Err((
            Code::ObservationFailed,
            format!("the verifier could not observe: {err}"),
        ));
    }
    let Some(observed) = e.observed_value.to_object() else {
        return Err((
            Code::NoObservation,
            format!(
                "observed_value is {}, not an object: nothing was observed",
                e.observed_value.type_name()
            ),
        ));
    };
    let expected = match e.expected.to_object() {
        Some(x) if !x.is_empty() => x,
        _ => {
            return Err((
                Code::EmptyExpected,
                "expected is empty: it asserts nothing".into(),
            ));
        }
    };
    let health = e.check_type == CheckType::EndpointHealth.as_str();
    Ok(match compare_object(&expected, &observed, health) {
        Cmp::Contradiction {
            path,
            expected,
            observed: seen,
        } => {
            let mut detail =
                format!("{path} expected {} but observed {}", short(&expected), short(&seen));
            // A git tree that is not clean: which paths made it so.
            if path == "clean"
                && let Some(paths) = crate::unclean::summary(&observed, 300)
            {
                detail.push_str(&format!(" (differs from HEAD at {paths})"));
            }
            (Code::Contradicts, detail)
        }
        Cmp::Missing(path) => (
            Code::IncompleteObservation,
            format!("the observation does not include {path}: neither match nor contradiction"),
        ),
        Cmp::Match if health && expected.len() == 1 && expected.contains_key("status") => (
            Code::StatusOnly,
            "expects only a status: a 200 that would be 200 either way is not evidence about this change".into(),
        ),
        Cmp::Match => (Code::Satisfies, "every expected key matched".into()),
    })
}

/// evident's extension: a verifier that tried and failed says why in `observation_error`.
fn observation_error(e: &Evidence) -> Option<&str> {
    e.observation_error.as_deref()
}

/// A value for a one-line message, cut to a readable length.
fn short(v: &Value) -> String {
    let s = v.to_string();
    if s.chars().count() > 80 {
        format!("{}…", s.chars().take(79).collect::<String>())
    } else {
        s
    }
}
