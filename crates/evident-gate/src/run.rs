//! Running a contract against the world after an agent's claim.
//!
//! Data flows one way: contract + claim → probes (concurrently, bounded, under one
//! deadline) → evidence items appended to the claim → `decide` → outcome. The claim
//! contributes only its mutations and its own evidence; it never chooses a probe.

use crate::contract::{Applies, Check, Contract};
use evident_format::{
    CheckType, Claim, ClaimDocument, Evidence, JsonText, OnUnverified, Timestamp, Verifier,
    VerifierKind, Wave,
};
use evident_probes::{Context, Observation, Source};
use evident_rules::{Options, Verdict, decide};
use serde::Serialize;
use serde_json::{Map, Value};
use std::collections::BTreeMap;
use std::sync::Arc;
use std::time::{Duration, Instant};

/// The verifier id the gate signs its evidence with: `evident/<version>`.
pub fn verifier_id() -> String {
    format!("evident/{}", env!("CARGO_PKG_VERSION"))
}

/// Called as each observation finishes: its check id, how many have finished, how
/// many there are.
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
    /// Run only this check (`gate --only`): the others stay unobserved, so the verdict
    /// is partial evidence and never `verified`.
    pub only: Option<String>,
}

/// What one observation of a check did: which mutations it covered, what it saw, how
/// long it took. A readback or endpoint check has two runs when the contract has
/// commands (before and after them).
#[derive(Debug, Clone, Serialize)]
pub struct CheckRun {
    /// The contract's id of the check that ran.
    pub check_id: String,
    /// The check's evidence kind (`test_run`, `readback`, …).
    pub check_type: String,
    /// Index of the evidence item this run produced in the decided claim.
    pub evidence: usize,
    /// What was observed, as outputs show it ([`Check::target`]).
    pub target: String,
    /// The ids of the claimed mutations this run's evidence speaks for.
    pub covers: Vec<String>,
    /// What the contract required the observation to show.
    pub expected: Map<String, Value>,
    /// The observed object, or `null` when nothing could be observed.
    pub observed: Value,
    /// Why nothing could be observed (timeout, refused connection, …).
    pub error: Option<String>,
    /// Before the commands, a command's own run, or after the commands.
    pub wave: Wave,
    /// How long the observation took, in milliseconds.
    pub duration_ms: u64,
}

/// What the gate will do with one check of the contract for a given claim.
#[derive(Debug, Clone, Serialize)]
pub struct Planned {
    /// The contract's id of the check.
    pub check_id: String,
    /// The check's evidence kind (`test_run`, `readback`, …).
    pub check_type: String,
    /// What it observes, as outputs show it ([`Check::target`]).
    pub target: String,
    /// The claimed mutations its evidence covers (may be empty: a task-level check).
    pub covers: Vec<String>,
    /// Whether the check applies to this claim (and so is required).
    pub applies: bool,
    /// Why it applies or not, in words.
    pub why: String,
    /// The waves it is observed in, in order (empty when it does not run).
    pub waves: Vec<Wave>,
}

/// The gate's result: the claim with the gate's evidence added, and the verdict.
#[derive(Debug, Clone)]
pub struct Outcome {
    /// The claim document as given, with the gate's evidence appended, the contract's
    /// policy in place of the claim's, and `required_checks` set.
    pub document: JsonText,
    /// The decided document read back as a typed claim, for rendering and recording.
    pub claim: ClaimDocument,
    /// What the rules decided, and why.
    pub verdict: Verdict,
    /// Every observation the gate made, in order.
    pub runs: Vec<CheckRun>,
    /// Every check of the contract and what was done with it.
    pub plan: Vec<Planned>,
    /// `gate --only`: only some checks ran, so the verdict cannot be `verified`.
    pub partial: bool,
    /// The contract's `on_unverified`: what the caller does with a verdict short of verified.
    pub on_unverified: OnUnverified,
    /// Things worth telling the owner that did not change the verdict.
    pub warnings: Vec<evident_format::Warning>,
}

/// Which checks apply to `claim`, which mutations each covers, and when each runs.
/// A check applies unless it is `when_covered` and covers no claimed mutation.
pub fn plan(contract: &Contract, claim: &Claim, only: Option<&str>) -> Vec<Planned> {
    let mut planned: Vec<Planned> = contract
        .checks
        .iter()
        .map(|c| {
            // One compiled glob per check, not one per (check, mutation).
            let selector = c.covers.selector();
            let covers: Vec<String> = claim
                .mutations
                .iter()
                .filter(|m| selector.matches(m))
                .map(|m| m.id.clone())
                .collect();
            let (applies, why) = match (c.applies, covers.is_empty()) {
                (Applies::Always, true) => (
                    true,
                    "always applies; covers no claimed mutation, so it counts for the task only"
                        .to_string(),
                ),
                (Applies::Always, false) => (
                    true,
                    format!("always applies; covers {}", covers.join(", ")),
                ),
                (Applies::WhenCovered, false) => (
                    true,
                    format!("applies: covers claimed {}", covers.join(", ")),
                ),
                (Applies::WhenCovered, true) => (
                    false,
                    "not applicable: when_covered, and no claimed mutation matches its covers"
                        .to_string(),
                ),
            };
            Planned {
                check_id: c.id.clone(),
                check_type: c.check_type.as_str().into(),
                target: c.target(),
                covers,
                applies,
                why,
                waves: Vec::new(),
            }
        })
        .collect();
    let runs = |p: &Planned| p.applies && only.is_none_or(|o| o == p.check_id);
    let commands = contract
        .checks
        .iter()
        .zip(&planned)
        .any(|(c, p)| runs(p) && is_command(c));
    for (c, p) in contract.checks.iter().zip(planned.iter_mut()) {
        if !runs(p) {
            if p.applies {
                p.why.push_str(" (not run: --only)");
            }
            continue;
        }
        p.waves = match (&c.source, commands) {
            (Source::Command(_), _) => vec![Wave::Command],
            (Source::SignedBy(_), _) | (_, false) => vec![Wave::Before],
            (_, true) => vec![Wave::Before, Wave::After],
        };
    }
    // Each snapshot is a task-level requirement, compared once after everything ran.
    for s in &contract.snapshots {
        let id = snapshot_check_id(&s.id);
        let runs = only.is_none_or(|o| o == id);
        planned.push(Planned {
            check_id: id,
            check_type: CheckType::StateReadback.as_str().into(),
            target: format!("snapshot {}: {}", s.id, s.source.describe()),
            covers: Vec::new(),
            applies: true,
            why: if runs {
                "always applies: every change since the snapshot (gate --before) must be the target of a claimed mutation".into()
            } else {
                "always applies (not run: --only)".into()
            },
            waves: if runs {
                vec![if commands { Wave::After } else { Wave::Before }]
            } else {
                Vec::new()
            },
        });
    }
    planned
}

/// The check id a snapshot's comparison is recorded under.
pub fn snapshot_check_id(id: &str) -> String {
    format!("snapshot:{id}")
}

fn is_command(c: &Check) -> bool {
    matches!(c.source, Source::Command(_))
}

/// Runs every applicable check of `contract` now and decides `claim`.
///
/// Every check that applies is a requirement: it must satisfy, its contradiction
/// refutes, its observation error leaves the claim unverified. The agent's own
/// evidence never counts for a check the gate runs; it counts only through a check the
/// contract delegates (`source = { signed_by = "…" }`), where `authenticate(item)`
/// says whether the item carries a valid signature from that trusted verifier. `sign`
/// may attach a signature to each evidence item the gate collects.
pub async fn run(
    contract: &Contract,
    claim: ClaimDocument,
    settings: &Settings,
    authenticate: &(dyn Fn(&Value) -> bool + Sync),
    sign: &(dyn Fn(&Value) -> Option<Value> + Sync),
) -> Outcome {
    run_with_before(contract, claim, settings, None, authenticate, sign).await
}

/// [`run`], with the snapshot taken before the agent ran (`gate --before`): `None`
/// when none was given, `Some(Err(why))` when the file was refused
/// ([`crate::snapshot::check`]). Either leaves every snapshot check unobserved, so a
/// contract with `[[snapshot]]` cannot verify without a good snapshot.
pub async fn run_with_before(
    contract: &Contract,
    claim: ClaimDocument,
    settings: &Settings,
    before: Option<&Result<crate::snapshot::Before, crate::snapshot::SnapshotError>>,
    authenticate: &(dyn Fn(&Value) -> bool + Sync),
    sign: &(dyn Fn(&Value) -> Option<Value> + Sync),
) -> Outcome {
    let mut warnings = claim.warnings.clone();
    let plan = plan(contract, &claim.claim, settings.only.as_deref());
    for (i, m) in claim.claim.mutations.iter().enumerate() {
        if let Some(t) = &m.target
            && crate::contract::canonical_target(t).is_none()
        {
            warnings.push(evident_format::Warning {
                file: Some(claim.file.clone()),
                path: format!("mutations[{i}].target"),
                pos: claim.spans.nearest(&format!("mutations[{i}].target")),
                message: format!(
                    "mutation {:?} has a target that can be read more than one way (a `..` segment, a control character, or text not in Unicode NFC): no check selects it, so it stays uncovered",
                    m.id
                ),
            });
        }
    }
    let partial = settings.only.is_some();
    if let Some(only) = &settings.only {
        warnings.push(evident_format::Warning {
            file: None,
            path: String::new(),
            pos: None,
            message: format!(
                "partial run (--only {only:?}): the other checks were not observed, so the verdict is partial evidence and never verified"
            ),
        });
    }
    let required: Vec<evident_format::RequiredCheck> = plan
        .iter()
        .filter(|p| p.applies)
        .map(|p| evident_format::RequiredCheck {
            id: p.check_id.clone(),
            waves: p.waves.clone(),
        })
        .collect();
    let binding = claim.claim.binding();
    // Every item of this run names it, with what it required, under its signature.
    let run = evident_format::GateRun {
        id: run_id(&binding),
        required_checks: required.clone(),
    };
    let run_json = serde_json::to_value(&run).unwrap_or(Value::Null);

    // Each wave after the one before: readbacks, endpoints and delegated checks; then
    // the commands (the agent's code); then the readbacks and endpoints again, so the
    // agent's code cannot have the last word on the state the gate reads.
    let wave_of = |w: Wave| -> Vec<usize> {
        (0..contract.checks.len())
            .filter(|&i| plan[i].waves.contains(&w))
            .collect()
    };
    let delegated = (0..contract.checks.len()).any(|i| {
        !plan[i].waves.is_empty() && matches!(contract.checks[i].source, Source::SignedBy(_))
    });
    let total: usize = plan.iter().map(|p| p.waves.len()).sum::<usize>() + usize::from(delegated);
    // Each probe scrubs the secrets it used; this scrubs every observation with the
    // secrets of every check, so one check cannot show another's secret. The probes
    // get them too, for the digests they publish (a file holding only a password).
    let mut scrub = evident_probes::Scrubber::default();
    for check in &contract.checks {
        check
            .source
            .register_secrets(&settings.context.env, &mut scrub);
    }
    for s in &contract.snapshots {
        s.source.register_secrets(&settings.context.env, &mut scrub);
    }
    let mut clock = Observer::new(settings, total);
    clock.secrets = scrub.clone();
    let mut observed: Vec<(usize, Wave, Observation, Duration)> = Vec::new();
    let head = if delegated {
        let git = Source::Git(evident_probes::GitSpec {
            repo: None,
            rev: None,
            file: None,
            max_bytes: None,
        });
        clock
            .wave(&[("(commit for delegated checks)".into(), git)])
            .await
            .pop()
    } else {
        None
    };
    evident_probes::reaper::adopt_orphans();
    for w in [Wave::Before, Wave::Command, Wave::After] {
        if w == Wave::After {
            // Nothing the commands started may touch the state the after-wave reads.
            evident_probes::reaper::kill_escaped_exclusive().await;
        }
        // Another gate of this process must not take this wave's daemons for orphans.
        let _wave = if w == Wave::Command && !wave_of(w).is_empty() {
            Some(evident_probes::reaper::command_wave().await)
        } else {
            None
        };
        let idx = wave_of(w);
        let sources: Vec<(String, Source)> = idx
            .iter()
            .map(|&i| {
                (
                    contract.checks[i].id.clone(),
                    probe_source(&contract.checks[i]),
                )
            })
            .collect();
        for (i, (obs, took)) in idx.into_iter().zip(clock.wave(&sources).await) {
            observed.push((i, w, obs, took));
        }
    }

    evident_probes::reaper::kill_escaped_exclusive().await;
    let snapshot_runs = compare_snapshots(contract, &claim.claim, &plan, settings, before).await;

    let own = claim.claim.evidence.len();
    // The decided document: the claim's text with the gate's items appended (once, at
    // the end) and the owner's policy set; never built as one value.
    let mut document = claim.raw.clone();
    let mut items = Vec::new();
    let mut typed: Claim = claim.claim.clone();
    let mut runs = Vec::new();
    let verifier = settings.verifier_id.clone();
    // A check's last observation, for the freshness of a pull request's state.
    let last_of: std::collections::HashMap<usize, usize> = observed
        .iter()
        .enumerate()
        .map(|(k, (ci, ..))| (*ci, k))
        .collect();
    for (k, (ci, wave, mut obs, took)) in observed.into_iter().enumerate() {
        let check = &contract.checks[ci];
        // The reference's freshness rule: a pull request's state read more than 60 s
        // before the decision says nothing about it now. The last observation counts
        // (an earlier wave is older by the commands' run time, and must only agree).
        if matches!(check.source, Source::GithubPr(_))
            && last_of.get(&ci) == Some(&k)
            && obs.value.is_ok()
            && let Some(e) =
                evident_probes::github::stale_at(obs.completed_at, time::OffsetDateTime::now_utc())
        {
            obs.value = Err(e);
        }
        let ids = plan[ci].covers.clone();
        let expected = check
            .expected
            .clone()
            .or_else(|| check.source.default_expected())
            .unwrap_or_default();
        let mut at = Timestamp::from_instant(obs.completed_at);
        let mut extra = Map::new();
        let (observed, error) = if let Source::SignedBy(signer) = &check.source {
            match delegated_item(&claim, check, signer, &binding, head.as_ref(), authenticate) {
                Ok((index, item)) => {
                    at = item.at.clone();
                    extra.insert(
                        "delegated".into(),
                        serde_json::json!({ "signer": signer, "evidence": index }),
                    );
                    (
                        scrub.scrub_value(item.observed_value.to_value()),
                        item.observation_error.as_ref().map(|e| scrub.scrub(e)),
                    )
                }
                Err(NotDelegated(why)) => (Value::Null, Some(why)),
            }
        } else {
            match obs.value {
                Ok(obj) => {
                    let error = no_test_ran(check, &obj)
                        .or_else(|| server_error(check, &expected, &obj))
                        .or_else(|| cut_output(&expected, &obj));
                    (scrub.scrub_value(Value::Object(obj)), error)
                }
                Err(e) => (Value::Null, Some(scrub.scrub(&check.error_text(&e)))),
            }
        };
        let mut item = serde_json::json!({
            "check_type": check.check_type.as_str(),
            "target": check.target(),
            "expected": Value::Object(expected.clone()),
            "observed_value": observed.clone(),
            "at": at.as_str(),
            "covers": ids.clone(),
            "verifier": { "id": verifier, "kind": "independent" },
            "check_id": check.id,
            "bound_to": binding,
            "wave": wave.as_str(),
            "run": run_json,
        });
        if let Some(err) = &error {
            item["observation_error"] = Value::String(err.clone());
        }
        if let Some(obj) = item.as_object_mut() {
            obj.extend(extra);
        }
        if let Some(sig) = sign(&item) {
            item["signature"] = sig;
        }
        typed.evidence.push(Evidence {
            check_type: check.check_type.as_str().into(),
            target: Some(check.target()),
            expected: Value::Object(expected.clone()).into(),
            observed_value: observed.clone().into(),
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
            wave: Some(wave),
            run: Some(run.clone()),
        });
        items.push(item);
        runs.push(CheckRun {
            check_id: check.id.clone(),
            check_type: check.check_type.as_str().into(),
            evidence: own + k,
            target: check.target(),
            covers: ids,
            expected,
            observed,
            error,
            wave,
            duration_ms: u64::try_from(took.as_millis()).unwrap_or(u64::MAX),
        });
    }

    for (pi, observed, error, took) in snapshot_runs {
        let p = &plan[pi];
        let Some(&wave) = p.waves.first() else {
            continue;
        };
        let expected: Map<String, Value> = [("unclaimed_changes".to_string(), Value::from(0))]
            .into_iter()
            .collect();
        let observed = scrub.scrub_value(observed);
        let error = error.map(|e| scrub.scrub(&e));
        let at = Timestamp::now();
        let mut item = serde_json::json!({
            "check_type": p.check_type,
            "target": p.target,
            "expected": Value::Object(expected.clone()),
            "observed_value": observed.clone(),
            "at": at.as_str(),
            "covers": [],
            "verifier": { "id": verifier, "kind": "independent" },
            "check_id": p.check_id,
            "bound_to": binding,
            "wave": wave.as_str(),
            "run": run_json,
        });
        if let Some(err) = &error {
            item["observation_error"] = Value::String(err.clone());
        }
        if let Some(sig) = sign(&item) {
            item["signature"] = sig;
        }
        typed.evidence.push(Evidence {
            check_type: p.check_type.clone(),
            target: Some(p.target.clone()),
            expected: Value::Object(expected.clone()).into(),
            observed_value: observed.clone().into(),
            at,
            covers: Vec::new(),
            verifier: Verifier {
                id: verifier.clone(),
                kind: VerifierKind::Independent,
            },
            observation_error: error.clone(),
            signature: item.get("signature").cloned(),
            bound_to: Some(binding.clone()),
            check_id: Some(p.check_id.clone()),
            wave: Some(wave),
            run: Some(run.clone()),
        });
        items.push(item);
        runs.push(CheckRun {
            check_id: p.check_id.clone(),
            check_type: p.check_type.clone(),
            evidence: own + runs.len(),
            target: p.target.clone(),
            covers: Vec::new(),
            expected,
            observed,
            error,
            wave,
            duration_ms: u64::try_from(took.as_millis()).unwrap_or(u64::MAX),
        });
    }

    // The owner's policy and checks decide, not the agent's.
    typed.policy = Some(contract.policy.clone());
    typed.required_checks = Some(required.clone());
    // The contract's extension types (dom_assertion) are declared in the decided
    // document, or reading it back would refuse its own policy.
    for ext in contract.extensions() {
        if !typed.extensions.iter().any(|e| e == ext) {
            typed.extensions.push(ext.to_string());
        }
    }
    document.push_items("evidence", &items);
    drop(items);
    document.set(
        "policy",
        &serde_json::to_value(&contract.policy).unwrap_or(Value::Null),
    );
    document.set("required_checks", &serde_json::json!(required));
    if !typed.extensions.is_empty() {
        document.set("extensions", &serde_json::json!(typed.extensions));
    }
    document.remove("verdict");

    // The agent's own items never count for a check the gate runs: only the gate's
    // items are authenticated (a delegated check copies its signer's item into one).
    let mut authenticated = vec![false; own];
    authenticated.extend(std::iter::repeat_n(true, runs.len()));

    // Decide after every observation completed: decided_at ≥ every `at`.
    let decided_at = Timestamp::now();
    let mut verdict = decide(
        &typed,
        &decided_at,
        &Options {
            authenticated: Some(authenticated),
        },
    );
    // A signed item of the agent's is recorded, and the finding says why it did not
    // count (it is not unauthenticated: the gate simply never takes it).
    let raw_items: Vec<&str> = claim.raw.items("evidence").collect();
    for f in verdict.findings.iter_mut().filter(|f| f.evidence < own) {
        let signed = raw_items
            .get(f.evidence)
            .is_some_and(|t| authenticate(&evident_format::json::value_of(t)));
        if signed && f.code == evident_rules::Code::UnauthenticatedIndependence {
            f.code = evident_rules::Code::OutsideContract;
            f.detail = "the agent's own signed evidence: a check the gate runs is decided by this run's observation alone (only a signed_by check accepts a signer's item)".into();
        }
    }
    if partial && verdict.state == evident_rules::State::Verified {
        verdict.state = evident_rules::State::Unverified;
        verdict.unmet = plan
            .iter()
            .filter(|p| p.applies && p.waves.is_empty())
            .map(|p| format!("check:{}", p.check_id))
            .collect();
        verdict.reason = format!(
            "Unverified: a partial run (--only) observed only some checks; {} not observed, so this is partial evidence, never verified.",
            verdict.unmet.join(", ")
        );
    }
    let on_unverified = contract.policy.on_unverified.unwrap_or_default();
    // What is shown and recorded is scrubbed too: an agent may have pasted a secret of
    // the contract (a connection string, a token) into its own claim.
    scrub_outputs(&scrub, &mut typed, &mut verdict, &mut warnings);
    let document = scrub.scrub_text(document);
    let claim = ClaimDocument {
        file: claim.file,
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
        plan,
        partial,
        on_unverified,
        warnings,
    }
}

/// Reads every snapshot's set again and compares it with the one taken before:
/// (plan index, observed, error, duration) for each snapshot that runs.
async fn compare_snapshots(
    contract: &Contract,
    claim: &Claim,
    plan: &[Planned],
    settings: &Settings,
    before: Option<&Result<crate::snapshot::Before, crate::snapshot::SnapshotError>>,
) -> Vec<(usize, Value, Option<String>, Duration)> {
    // Every set is read first: which item a mutation names depends on every set's
    // names (crate::snapshot::claims).
    let base = contract.checks.len();
    type Read<'b> = Result<
        (&'b BTreeMap<String, String>, BTreeMap<String, String>),
        crate::snapshot::SnapshotError,
    >;
    let mut reads: Vec<Option<(Duration, Read<'_>)>> = Vec::new();
    for (k, s) in contract.snapshots.iter().enumerate() {
        if plan.get(base + k).is_none_or(|p| p.waves.is_empty()) {
            reads.push(None);
            continue;
        }
        let started = Instant::now();
        let result = match before {
            None => Err(
                "no snapshot was given: the contract declares [[snapshot]], so the gate needs --before FILE from `evident snapshot` taken before the agent ran".into(),
            ),
            Some(Err(why)) => Err(format!("the snapshot was refused: {why}").into()),
            Some(Ok(b)) => match b.sets.get(&s.id) {
                None => Err(format!("the snapshot has no set {:?}", s.id).into()),
                Some(then) => {
                    let limit = settings.deadline.min(Duration::from_secs(600));
                    crate::snapshot::read(s, &settings.context, limit)
                        .await
                        .map(|now| (then, now))
                }
            },
        };
        reads.push(Some((started.elapsed(), result)));
    }
    let names: crate::snapshot::Names<'_> = reads
        .iter()
        .map(|r| match r {
            Some((_, Ok((then, now)))) => {
                Some(then.keys().chain(now.keys()).map(String::as_str).collect())
            }
            _ => None,
        })
        .collect();
    let mutations: Vec<(&str, &str)> = claim
        .mutations
        .iter()
        .filter_map(|m| Some((m.kind.as_str(), m.target.as_deref()?)))
        .collect();
    let claimed = crate::snapshot::claims(&contract.snapshots, &names, &mutations);
    let mut out = Vec::new();
    for (k, r) in reads.iter().enumerate() {
        let Some((took, result)) = r else { continue };
        match result {
            Ok((then, now)) => {
                let diffs = crate::snapshot::differences(then, now, &claimed[k]);
                let (obs, err) = crate::snapshot::observation(&diffs);
                out.push((base + k, Value::Object(obs), err, *took));
            }
            Err(e) => out.push((base + k, Value::Null, Some(e.to_string()), *took)),
        }
    }
    out
}

/// A run id: unique per run (time, process, a counter), tied to the claim.
fn run_id(binding: &str) -> String {
    use std::sync::atomic::{AtomicU64, Ordering};
    static COUNTER: AtomicU64 = AtomicU64::new(0);
    let n = COUNTER.fetch_add(1, Ordering::Relaxed);
    let now = time::OffsetDateTime::now_utc().unix_timestamp_nanos();
    let tail = binding
        .get(binding.len().saturating_sub(12)..)
        .unwrap_or_default();
    format!("{now:x}-{:x}-{n:x}-{tail}", std::process::id())
}

/// The source a check's probe observes, with what its expectation asks about adopted.
fn probe_source(check: &Check) -> Source {
    let mut source = check.source.clone();
    if let Some(e) = &check.expected {
        source.adopt_expected(e);
    }
    source
}

evident_format::message_error! {
    /// Why no evidence item may stand for a delegated check: an observation error
    /// (unverified, never verified). A leaf: the message is all.
    struct NotDelegated;
}

/// For a delegated check: the agent's evidence item signed by `signer` that is bound
/// to this claim and to the commit the gate sees in a clean tree, newest first. Why
/// none qualifies, otherwise (an observation error: unverified, never verified).
fn delegated_item<'a>(
    claim: &'a ClaimDocument,
    check: &Check,
    signer: &str,
    binding: &str,
    head: Option<&(Observation, Duration)>,
    authenticate: &(dyn Fn(&Value) -> bool + Sync),
) -> Result<(usize, &'a Evidence), NotDelegated> {
    let commit = match head.map(|(o, _)| &o.value) {
        Some(Ok(obj)) if obj.get("clean") == Some(&Value::Bool(true)) => obj
            .get("commit")
            .and_then(Value::as_str)
            .map(str::to_string),
        Some(Ok(_)) => {
            return Err(format!(
                "delegated to {signer:?}: the working tree has changes beyond its HEAD commit, so no signed observation of a commit can speak for it"
            ).into());
        }
        Some(Err(e)) => {
            return Err(format!(
                "delegated to {signer:?}: the gate could not read the commit it sees ({e}); a delegated check needs the root to be a clean git work tree"
            ).into());
        }
        None => None,
    };
    let Some(commit) = commit else {
        return Err(format!(
            "delegated to {signer:?}: the root's git repository has no HEAD commit"
        )
        .into());
    };
    let raw: Vec<&str> = claim.raw.items("evidence").collect();
    let mut by_signer = 0;
    let mut best: Option<(usize, &Evidence)> = None;
    for (i, e) in claim.claim.evidence.iter().enumerate() {
        if e.verifier.id != signer || e.verifier.kind != VerifierKind::Independent {
            continue;
        }
        // The signer's item for this check: its id and type, not any item it signed.
        if e.check_id.as_deref() != Some(check.id.as_str())
            || e.check_type != check.check_type.as_str()
        {
            continue;
        }
        by_signer += 1;
        let item = raw.get(i).map(|t| evident_format::json::value_of(t));
        let signed = item.as_ref().is_some_and(authenticate);
        let bound = e.bound_to.as_deref() == Some(binding);
        let same_commit = item
            .as_ref()
            .and_then(|x| x.get("commit"))
            .and_then(Value::as_str)
            .is_some_and(|c| c == commit);
        if signed && bound && same_commit && best.is_none_or(|(_, b)| e.at > b.at) {
            best = Some((i, e));
        }
    }
    best.ok_or_else(|| {
        NotDelegated(format!(
            "delegated to {signer:?}: no evidence item in the claim is signed by it for check {:?} ({}), bound to this claim (bound_to) and to commit {commit} ({by_signer} such item(s) name the signer)",
            check.id,
            check.check_type.as_str()
        ))
    })
}

/// Runs observations wave by wave under one deadline, at most `jobs` at once.
struct Observer<'s> {
    settings: &'s Settings,
    limit: Arc<tokio::sync::Semaphore>,
    deadline: Instant,
    finished: Arc<std::sync::atomic::AtomicUsize>,
    total: usize,
    /// The contract's secrets, handed to every probe ([`evident_probes::Context::secrets`]).
    secrets: evident_probes::Scrubber,
}

impl<'s> Observer<'s> {
    fn new(settings: &'s Settings, total: usize) -> Self {
        // Never more permits than observations (tokio's semaphore panics past 2^61 - 1).
        let jobs = settings.jobs.clamp(1, total.max(1));
        // A deadline past what the clock can represent means no deadline in practice.
        let now = Instant::now();
        let deadline = now
            .checked_add(settings.deadline)
            .or_else(|| now.checked_add(Duration::from_secs(100 * 365 * 86_400)))
            .unwrap_or(now);
        Observer {
            settings,
            limit: Arc::new(tokio::sync::Semaphore::new(jobs)),
            deadline,
            finished: Arc::new(std::sync::atomic::AtomicUsize::new(0)),
            total,
            secrets: evident_probes::Scrubber::default(),
        }
    }

    /// Observes every source of one wave concurrently; results in the given order.
    async fn wave(&mut self, sources: &[(String, Source)]) -> Vec<(Observation, Duration)> {
        let mut ctx = self.settings.context.clone();
        ctx.secrets = self.secrets.clone();
        let ctx = Arc::new(ctx);
        let tasks: Vec<_> = sources
            .iter()
            .map(|(id, source)| {
                let (source, id) = (source.clone(), id.clone());
                let (limit, ctx, finished) =
                    (self.limit.clone(), ctx.clone(), self.finished.clone());
                let (progress, deadline, total) =
                    (self.settings.progress.clone(), self.deadline, self.total);
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
            })
            .collect();
        let mut out = Vec::with_capacity(tasks.len());
        for task in tasks {
            out.push(match task.await {
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
        out
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
    let v = |x: &mut JsonText| *x = scrub.scrub_value(x.to_value()).into();
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
        *x = scrub.scrub_value(x.take());
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
    let is_http = matches!(
        check.source,
        evident_probes::Source::Http(_) | evident_probes::Source::Browser(_)
    );
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
