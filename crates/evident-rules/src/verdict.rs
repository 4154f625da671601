//! The Completion Claim verdict (seed 000, as read in DESIGN.md "The verdict").
//!
//! [`decide`] is pure: the decision time is an argument and nothing is read from the
//! outside world. Every evidence item gets a [`Finding`] saying whether it was used
//! and, if not, why — so a person can see exactly what the verdict rests on.

use crate::compare::{Cmp, compare_object};
use evident_format::{CheckType, Claim, Evidence, Mutation, Timestamp, VerifierKind};
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
}

impl State {
    pub fn as_str(self) -> &'static str {
        match self {
            State::Verified => "verified",
            State::Unverified => "unverified",
            State::Refuted => "refuted",
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
}

impl Code {
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
    pub check_type: String,
    /// True when the item decided something (it satisfies or contradicts).
    pub used: bool,
    pub code: Code,
    /// One human sentence.
    pub detail: String,
}

/// The decision, with the reason for every evidence item it did or did not use.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
pub struct Verdict {
    pub state: State,
    /// Required check types not satisfied (policy order), then uncovered mutations as
    /// `mutation:<id>`, or `mutations` when the claim lists none. Empty unless unverified.
    pub unmet: Vec<String>,
    /// One human sentence.
    pub reason: String,
    #[schemars(with = "String")]
    pub decided_at: Timestamp,
    pub findings: Vec<Finding>,
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
    let mut covered: HashSet<&str> = HashSet::new();
    let mut satisfied: HashSet<&str> = HashSet::new();
    let mut contradiction: Option<(usize, String)> = None;
    let mut self_contradiction: Option<(usize, String)> = None;

    for (i, e) in claim.evidence.iter().enumerate() {
        let authenticated = options
            .authenticated
            .as_ref()
            .is_none_or(|a| a.get(i).copied().unwrap_or(false));
        let (code, detail) = judge(&by_id, e, decided_at, max_age_ns, authenticated);
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
        findings.push(Finding {
            evidence: i,
            check_type: e.check_type.clone(),
            used: matches!(code, Code::Satisfies | Code::Contradicts),
            code,
            detail,
        });
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
            format!("Refuted: independent evidence[{i}] contradicts the claim: {detail}."),
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
        (
            State::Verified,
            format!(
                "Verified: {} covered by fresh, independent evidence that matches{policy}.",
                plural(n, "mutation is", "mutations are")
            ),
        )
    } else {
        let mut reason = format!(
            "Unverified: nothing independent, fresh and matching shows {}.",
            describe_unmet(&unmet)
        );
        if let Some((i, detail)) = self_contradiction {
            reason.push_str(&format!(
                " Note: the agent's own evidence[{i}] contradicts its claim ({detail})."
            ));
        }
        (State::Unverified, reason)
    };

    Verdict {
        state,
        unmet,
        reason,
        decided_at: decided_at.clone(),
        findings,
    }
}

fn plural(n: usize, one: &str, many: &str) -> String {
    if n == 1 {
        format!("the 1 {one}")
    } else {
        format!("all {n} {many}")
    }
}

fn describe_unmet(unmet: &[String]) -> String {
    let parts: Vec<String> = unmet
        .iter()
        .map(|u| {
            if u == "mutations" {
                "any change (the claim lists no mutations)".to_string()
            } else if let Some(id) = u.strip_prefix("mutation:") {
                format!("mutation {id:?}")
            } else {
                format!("a passing {u} check")
            }
        })
        .collect();
    parts.join(", ")
}

/// The finding for one evidence item. The order of the tests only picks which reason
/// is reported; every reason before `compare` makes the item unusable.
fn judge(
    mutations: &HashMap<&str, &Mutation>,
    e: &Evidence,
    decided_at: &Timestamp,
    max_age_ns: Option<i128>,
    authenticated: bool,
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
    if e.covers.is_empty() {
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
    let Some(observed) = e.observed_value.as_object() else {
        return Err((
            Code::NoObservation,
            format!(
                "observed_value is {}, not an object: nothing was observed",
                evident_format::claim::json_type_name(&e.observed_value)
            ),
        ));
    };
    let expected = match e.expected.as_object() {
        Some(x) if !x.is_empty() => x,
        _ => {
            return Err((
                Code::EmptyExpected,
                "expected is empty: it asserts nothing".into(),
            ));
        }
    };
    let health = e.check_type == CheckType::EndpointHealth.as_str();
    Ok(match compare_object(expected, observed, health) {
        Cmp::Contradiction {
            path,
            expected,
            observed,
        } => (
            Code::Contradicts,
            format!("{path} expected {} but observed {}", short(&expected), short(&observed)),
        ),
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
