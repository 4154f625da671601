//! Running a contract against the world after an agent's claim.
//!
//! Data flows one way: contract + claim → probes (concurrently, bounded, under one
//! deadline) → evidence items appended to the claim → `decide` → outcome. The claim
//! contributes only its mutations and its own evidence; it never chooses a probe.

use crate::contract::{Check, Contract};
use evident_format::{
    Claim, ClaimDocument, Evidence, OnUnverified, Timestamp, Verifier, VerifierKind,
};
use evident_probes::{Context, Observation};
use evident_rules::{Options, Verdict, decide};
use serde::Serialize;
use serde_json::{Map, Value};
use std::sync::Arc;
use std::time::{Duration, Instant};

/// The verifier id the gate signs its evidence with: `evident/<version>`.
pub fn verifier_id() -> String {
    format!("evident/{}", env!("CARGO_PKG_VERSION"))
}

/// Called as each check finishes: its id, how many have finished, how many there are.
pub type Progress = Arc<dyn Fn(&str, usize, usize) + Send + Sync>;

/// How to run a gate.
#[derive(Clone)]
pub struct Settings {
    /// Checks running at once.
    pub jobs: usize,
    /// One deadline for all checks together; a check still running then is abandoned
    /// (its command's process group killed) and observes nothing.
    pub deadline: Duration,
    /// Where probes run and which environment they may read.
    pub context: Context,
    /// The `verifier.id` of the gate's evidence: [`verifier_id`] by default, or the id
    /// of the key that signs it (so a trust list can pair the id with the key).
    pub verifier_id: String,
    /// Told as each check finishes (the CLI draws a progress line on a terminal).
    pub progress: Option<Progress>,
}

/// What one check did: which mutations it covered, what it saw, how long it took.
#[derive(Debug, Clone, Serialize)]
pub struct CheckRun {
    pub check_id: String,
    pub check_type: String,
    /// Index of the evidence item this run produced in the decided claim.
    pub evidence: usize,
    pub target: String,
    pub covers: Vec<String>,
    pub expected: Map<String, Value>,
    /// The observed object, or `null` when nothing could be observed.
    pub observed: Value,
    /// Why nothing could be observed (timeout, refused connection, …).
    pub error: Option<String>,
    pub duration_ms: u64,
}

/// The gate's result: the claim with the gate's evidence added, and the verdict.
#[derive(Debug, Clone)]
pub struct Outcome {
    /// The claim document as given, with the gate's evidence appended and the
    /// contract's policy in place of the claim's.
    pub document: Value,
    pub claim: ClaimDocument,
    pub verdict: Verdict,
    pub runs: Vec<CheckRun>,
    pub on_unverified: OnUnverified,
    pub warnings: Vec<evident_format::Warning>,
}

/// Runs every check of `contract` now and decides `claim`.
///
/// `authenticate(i, item)` says whether the agent's own evidence item `i` carries a
/// valid signature from a verifier the contract trusts. Items that call themselves
/// `independent` without one are treated as self-attested
/// (`unauthenticated_independence`): in a gate the agent never supplies its own proof.
/// `sign` may attach a signature to each evidence item the gate collects.
pub async fn run(
    contract: &Contract,
    claim: ClaimDocument,
    settings: &Settings,
    authenticate: &(dyn Fn(&Value) -> bool + Sync),
    sign: &(dyn Fn(&Value) -> Option<Value> + Sync),
) -> Outcome {
    let mut warnings = claim.warnings.clone();
    let covers: Vec<Vec<String>> = contract
        .checks
        .iter()
        .map(|c| {
            // One compiled glob per check, not one per (check, mutation).
            let selector = c.covers.selector();
            claim
                .claim
                .mutations
                .iter()
                .filter(|m| selector.matches(m))
                .map(|m| m.id.clone())
                .collect()
        })
        .collect();
    for (i, (check, ids)) in contract.checks.iter().zip(&covers).enumerate() {
        if ids.is_empty() {
            warnings.push(evident_format::Warning {
                path: format!("check[{i}].covers"),
                pos: None,
                message: format!(
                    "check {:?} covers none of the claimed mutations: its evidence cannot count",
                    check.id
                ),
            });
        }
    }

    let observations = observe_all(&contract.checks, settings).await;
    // Each probe scrubs the secrets it used; this scrubs every observation with the
    // secrets of every check, so one check cannot show another's secret.
    let mut scrub = evident_probes::Scrubber::default();
    for check in &contract.checks {
        check
            .source
            .register_secrets(&settings.context.env, &mut scrub);
    }

    let own = claim.claim.evidence.len();
    let mut document = claim.raw.clone();
    let mut typed: Claim = claim.claim.clone();
    let mut runs = Vec::new();
    let verifier = settings.verifier_id.clone();
    let binding = claim.claim.binding();
    for (k, ((check, ids), (obs, took))) in contract
        .checks
        .iter()
        .zip(covers)
        .zip(observations)
        .enumerate()
    {
        let mut expected = check
            .expected
            .clone()
            .or_else(|| check.source.default_expected())
            .unwrap_or_default();
        if expected.is_empty() {
            expected = Map::new();
        }
        let (observed, error) = match obs.value {
            Ok(obj) => {
                let error = no_test_ran(check, &obj)
                    .or_else(|| server_error(check, &expected, &obj))
                    .or_else(|| cut_output(&expected, &obj));
                (scrub.scrub_value(Value::Object(obj)), error)
            }
            Err(e) => (Value::Null, Some(scrub.scrub(&e.to_string()))),
        };
        let at = Timestamp::from_instant(obs.completed_at);
        let mut item = serde_json::json!({
            "check_type": check.check_type.as_str(),
            "target": check.source.target(),
            "expected": Value::Object(expected.clone()),
            "observed_value": observed.clone(),
            "at": at.as_str(),
            "covers": ids.clone(),
            "verifier": { "id": verifier, "kind": "independent" },
            "check_id": check.id,
            "bound_to": binding,
        });
        if let Some(err) = &error {
            item["observation_error"] = Value::String(err.clone());
        }
        if let Some(sig) = sign(&item) {
            item["signature"] = sig;
        }
        typed.evidence.push(Evidence {
            check_type: check.check_type.as_str().into(),
            target: Some(check.source.target()),
            expected: Value::Object(expected.clone()),
            observed_value: observed.clone(),
            at,
            covers: ids.clone(),
            verifier: Verifier {
                id: verifier.clone(),
                kind: VerifierKind::Independent,
            },
            observation_error: error.clone(),
            signature: item.get("signature").cloned(),
            bound_to: Some(binding.clone()),
            check_id: Some(check.id.clone()),
        });
        push_evidence(&mut document, item);
        runs.push(CheckRun {
            check_id: check.id.clone(),
            check_type: check.check_type.as_str().into(),
            evidence: own + k,
            target: check.source.target(),
            covers: ids,
            expected,
            observed,
            error,
            duration_ms: u64::try_from(took.as_millis()).unwrap_or(u64::MAX),
        });
    }

    // The owner's policy decides, not the agent's.
    typed.policy = Some(contract.policy.clone());
    if let Some(obj) = document.as_object_mut() {
        obj.insert(
            "policy".into(),
            serde_json::to_value(&contract.policy).unwrap_or(Value::Null),
        );
        obj.remove("verdict");
    }

    let mut authenticated: Vec<bool> = claim
        .raw
        .get("evidence")
        .and_then(Value::as_array)
        .map(|items| {
            items
                .iter()
                .map(|item| authenticate(item) && bound_here(item, &binding))
                .collect()
        })
        .unwrap_or_default();
    authenticated.resize(own, false);
    authenticated.extend(std::iter::repeat_n(true, runs.len()));

    // Decide after every observation completed: decided_at ≥ every `at`.
    let decided_at = Timestamp::now();
    let verdict = decide(
        &typed,
        &decided_at,
        &Options {
            authenticated: Some(authenticated),
        },
    );
    let on_unverified = contract.policy.on_unverified.unwrap_or_default();
    // What is shown and recorded is scrubbed too: an agent may have pasted a secret of
    // the contract (a connection string, a token) into its own claim.
    let mut verdict = verdict;
    scrub_outputs(&scrub, &mut typed, &mut verdict, &mut warnings);
    let document = scrub.scrub_value(document);
    let claim = ClaimDocument {
        claim: typed,
        raw: document.clone(),
        spans: claim.spans,
        warnings: Vec::new(),
    };
    Outcome {
        document,
        claim,
        verdict,
        runs,
        on_unverified,
        warnings,
    }
}

/// Scrubs every free-text part of the decided claim, the verdict and the warnings.
fn scrub_outputs(
    scrub: &evident_probes::Scrubber,
    claim: &mut Claim,
    verdict: &mut Verdict,
    warnings: &mut [evident_format::Warning],
) {
    let s = |x: &mut String| *x = scrub.scrub(x);
    let o = |x: &mut Option<String>| {
        if let Some(v) = x {
            *v = scrub.scrub(v);
        }
    };
    let v = |x: &mut Value| *x = scrub.scrub_value(x.take());
    s(&mut claim.task.id);
    o(&mut claim.task.description);
    o(&mut claim.task.requested_by);
    o(&mut claim.claimed_outcome);
    for m in &mut claim.mutations {
        s(&mut m.id);
        s(&mut m.kind);
        o(&mut m.target);
    }
    for e in &mut claim.evidence {
        s(&mut e.check_type);
        o(&mut e.target);
        v(&mut e.expected);
        v(&mut e.observed_value);
        e.covers.iter_mut().for_each(s);
        s(&mut e.verifier.id);
        o(&mut e.observation_error);
    }
    if let Some(p) = &mut claim.policy {
        o(&mut p.id);
    }
    if let Some(x) = &mut claim.verdict {
        v(x);
    }
    verdict.unmet.iter_mut().for_each(s);
    s(&mut verdict.reason);
    for f in &mut verdict.findings {
        s(&mut f.check_type);
        s(&mut f.detail);
    }
    for w in warnings {
        s(&mut w.path);
        s(&mut w.message);
    }
}

/// A signed item that names the claim it was collected for must name this one; an item
/// without a binding is judged by its signature alone.
pub fn bound_here(item: &Value, binding: &str) -> bool {
    match item.get("bound_to") {
        None => true,
        Some(b) => b.as_str() == Some(binding),
    }
}

/// A test run in which no test ran says nothing about the code either way: it is an
/// observation that cannot satisfy, not a contradiction (unverified, not refuted).
/// The observed `ran: false` stays visible in the evidence.
fn no_test_ran(check: &Check, observed: &Map<String, Value>) -> Option<String> {
    let is_test = check.check_type == evident_format::CheckType::TestRun;
    (is_test && observed.get("ran") == Some(&Value::Bool(false))).then(|| {
        "no test ran: the runner reported zero tests (or no summary was found), so the run says nothing about the change".to_string()
    })
}

/// An HTTP 5xx is the server failing to answer, not an answer about the change (a
/// restarting service, an overloaded proxy): the observation cannot satisfy or refute,
/// so the verdict is unverified with the reason (issue 3). An owner who expects a 5xx
/// (`expected.status` in 500–599) gets an ordinary comparison.
fn server_error(
    check: &Check,
    expected: &Map<String, Value>,
    observed: &Map<String, Value>,
) -> Option<String> {
    let is_5xx = |v: Option<&Value>| {
        v.and_then(Value::as_u64)
            .is_some_and(|s| (500..600).contains(&s))
    };
    let is_http = matches!(check.source, evident_probes::Source::Http(_));
    (is_http && is_5xx(observed.get("status")) && !is_5xx(expected.get("status"))).then(|| {
        format!(
            "the service answered HTTP {} (a server error), which is not an observation of the change",
            observed.get("status").map(Value::to_string).unwrap_or_default()
        )
    })
}

/// Captured output cut at `max_output_bytes` is a prefix: an expectation on it would
/// be met by output that goes on to say something else, so it cannot be checked.
fn cut_output(expected: &Map<String, Value>, observed: &Map<String, Value>) -> Option<String> {
    ["stdout", "stderr"].into_iter().find_map(|name| {
        let cut = observed.get(&format!("{name}_truncated")) == Some(&Value::Bool(true));
        (cut && expected.contains_key(name)).then(|| {
            format!(
                "{name} was cut at max_output_bytes: an expectation on it cannot be checked against a prefix (raise max_output_bytes)"
            )
        })
    })
}

fn push_evidence(document: &mut Value, item: Value) {
    if let Some(obj) = document.as_object_mut() {
        let list = obj
            .entry("evidence")
            .or_insert_with(|| Value::Array(Vec::new()));
        if let Some(a) = list.as_array_mut() {
            a.push(item);
        }
    }
}

/// Runs every check, at most `jobs` at once, all under one deadline: readbacks and
/// endpoints first, then commands. Results come back in contract order.
async fn observe_all(checks: &[Check], settings: &Settings) -> Vec<(Observation, Duration)> {
    // Never more permits than checks (tokio's semaphore panics past 2^61 - 1).
    let jobs = settings.jobs.clamp(1, checks.len().max(1));
    let limit = Arc::new(tokio::sync::Semaphore::new(jobs));
    // A deadline past what the clock can represent means no deadline in practice.
    let now = Instant::now();
    let deadline = now
        .checked_add(settings.deadline)
        .or_else(|| now.checked_add(Duration::from_secs(100 * 365 * 86_400)))
        .unwrap_or(now);
    let ctx = Arc::new(settings.context.clone());
    let finished = Arc::new(std::sync::atomic::AtomicUsize::new(0));
    let total = checks.len();
    let spawn = |check: &Check| {
        let mut source = check.source.clone();
        if let Some(e) = &check.expected {
            source.adopt_expected(e);
        }
        let limit = limit.clone();
        let ctx = ctx.clone();
        let finished = finished.clone();
        let progress = settings.progress.clone();
        let id = check.id.clone();
        tokio::spawn(async move {
            let _permit = limit.acquire_owned().await;
            let started = Instant::now();
            let remaining = deadline.saturating_duration_since(started);
            let obs = if remaining.is_zero() {
                Observation {
                    value: Err(evident_probes::ProbeError::Timeout { limit_ms: 0 }),
                    completed_at: time::OffsetDateTime::now_utc(),
                }
            } else {
                evident_probes::observe(&source, &ctx, remaining).await
            };
            let done = finished.fetch_add(1, std::sync::atomic::Ordering::SeqCst) + 1;
            if let Some(p) = &progress {
                p(&id, done, total);
            }
            (obs, started.elapsed())
        })
    };
    // Two waves: every readback and endpoint check first, then the commands. A test
    // command runs the agent's own code, which could otherwise write the very state a
    // concurrent readback is reading.
    let mut out: Vec<Option<(Observation, Duration)>> = (0..checks.len()).map(|_| None).collect();
    for commands in [false, true] {
        let wave: Vec<_> = checks
            .iter()
            .enumerate()
            .filter(|(_, c)| matches!(c.source, evident_probes::Source::Command(_)) == commands)
            .map(|(i, c)| (i, spawn(c)))
            .collect();
        for (i, task) in wave {
            out[i] = Some(match task.await {
                Ok(r) => r,
                Err(e) => (
                    Observation {
                        value: Err(evident_probes::ProbeError::InvalidSpec {
                            reason: format!("the probe task failed: {e}"),
                        }),
                        completed_at: time::OffsetDateTime::now_utc(),
                    },
                    Duration::ZERO,
                ),
            });
        }
    }
    out.into_iter().flatten().collect()
}
