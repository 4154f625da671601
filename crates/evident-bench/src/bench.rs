//! The failure-injection benchmark (seed 001 v0.4): a scripted tool that fails in one
//! of eight ways, three policies for what the agent does about it, and the evaluator's
//! verdict on what each run's trace proves.
//!
//! Deterministic: run ids and per-run seeds are the peer's hashes of the configuration,
//! the policies are scripted, and nothing reads a clock, so two runs of one
//! configuration are byte-identical. Raw traces (what the tool reported) are kept apart
//! from what is derived from them: envelopes, cases, evaluations, run metadata,
//! metrics.

use std::path::{Path, PathBuf};

use serde::Serialize;
use serde_json::{Map, Value, json};
use sha2::{Digest, Sha256};

use evident_eval::adapt::{self, Format, Requirement};
use evident_eval::case::{Case, Event, parse_case};
use evident_eval::evaluate::{self, Status};
use evident_eval::metrics::Metrics;

use crate::config::BenchConfig;
use crate::json::{create, file_text, jsonl_text, line_text};
use crate::{Error, manifest};

/// The runner's name, recorded in every run and the manifest: the policies are
/// scripted, not a model.
pub const RUNNER: &str = "scripted-reference";
/// The runner's version, recorded beside [`RUNNER`].
pub const RUNNER_VERSION: &str = "1";

/// One planned run.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Planned {
    /// Names the run's files: group, scenario, repetition and a hash of the
    /// configuration, so a rerun names them alike.
    pub run_id: String,
    /// The policy ([`crate::config::GROUPS`]).
    pub group: &'static str,
    /// The injected failure ([`crate::config::BENCH_SCENARIOS`]).
    pub scenario: &'static str,
    /// Which repetition of the (group, scenario) pair, from 0.
    pub repetition: u64,
    /// The run's own seed, derived from the configuration's seed and the run id.
    pub seed: u64,
}

/// The run matrix: groups × scenarios × repetitions, in that nesting order.
/// `run_id = "{group}--{scenario}--r{rep}--" + sha256("{experiment}:{group}:{scenario}:{rep}:{seed}")[:12]`;
/// the run's seed is the first 8 bytes, big-endian, of `sha256("{seed}:{run_id}")`.
pub fn plan(cfg: &BenchConfig) -> Vec<Planned> {
    let mut out = Vec::new();
    for &group in &cfg.groups {
        for &scenario in &cfg.scenarios {
            for repetition in 0..cfg.repetitions {
                let identity = format!(
                    "{}:{group}:{scenario}:{repetition}:{}",
                    cfg.experiment_id, cfg.seed
                );
                let short = &hex::encode(Sha256::digest(identity.as_bytes()))[..12];
                let run_id = format!("{group}--{scenario}--r{repetition}--{short}");
                let d = Sha256::digest(format!("{}:{run_id}", cfg.seed).as_bytes());
                let mut first = [0u8; 8];
                first.copy_from_slice(&d[..8]);
                out.push(Planned {
                    run_id,
                    group,
                    scenario,
                    repetition,
                    seed: u64::from_be_bytes(first),
                });
            }
        }
    }
    out
}

/// One outcome of the scripted tool.
#[derive(Debug, Clone)]
struct ToolOutcome {
    success: bool,
    evidence: Map<String, Value>,
    retryable: bool,
    /// Happens on its own after the agent's last call (a rollback); always in the trace.
    automatic: bool,
}

impl ToolOutcome {
    fn new(success: bool, evidence: Value) -> Self {
        ToolOutcome {
            success,
            evidence: evidence.as_object().cloned().unwrap_or_default(),
            retryable: false,
            automatic: false,
        }
    }
}

/// Evidence that satisfies the requirement, with the peer's values.
fn complete_evidence(req: &Requirement, suffix: &str) -> Value {
    let mut m = Map::new();
    for f in &req.evidence_fields {
        let v = match f.as_str() {
            "message_id" => format!("msg-{suffix}"),
            "recipient" => "customer@example.com".into(),
            "path" => "/tmp/output".into(),
            "sha" => format!("sha-{suffix}"),
            other => format!("{other}-{suffix}"),
        };
        m.insert(f.clone(), Value::String(v));
    }
    Value::Object(m)
}

/// The tool's outcomes for a scenario, in order. Every scenario but `success` injects
/// a failure.
fn outcomes(scenario: &str, req: &Requirement) -> Vec<ToolOutcome> {
    let complete = || ToolOutcome::new(true, complete_evidence(req, "ok"));
    let repaired = || ToolOutcome::new(true, complete_evidence(req, "repaired"));
    let fail = |kind: &str| ToolOutcome::new(false, json!({"error": kind}));
    match scenario {
        "success" => vec![complete()],
        "timeout" => {
            let mut t = fail("timeout");
            t.retryable = true;
            vec![t, repaired()]
        }
        "permission_denied" => vec![fail("permission_denied")],
        "partial_write" => vec![ToolOutcome::new(true, json!({"partial": true})), repaired()],
        "stale_read" => vec![ToolOutcome::new(true, json!({"stale": true})), repaired()],
        "malformed_success" => vec![ToolOutcome::new(true, json!({"status": "ok"})), repaired()],
        "tool_exception" => vec![fail("tool_exception")],
        _ => {
            let mut r = fail("rollback");
            r.automatic = true;
            vec![complete(), r]
        }
    }
}

/// Whether a scenario injects a failure (all but `success`): the runs recovery is
/// counted over.
pub(crate) fn injects_failure(scenario: &str) -> bool {
    scenario != "success"
}

/// Whether one outcome, alone, proves the requirement — asked of the evaluator itself
/// (a one-event case), so the policies and the verdict share one presence rule.
fn proves(req: &Requirement, o: &ToolOutcome) -> bool {
    let case = json!({
        "case_id": "outcome",
        "task": "outcome",
        "completion_claimed": false,
        "requirements": [{"action": req.action, "evidence_fields": req.evidence_fields}],
        "events": [{"action": req.action, "success": o.success, "evidence": o.evidence}],
    });
    let Ok(line) = serde_json::to_string(&case) else {
        return false;
    };
    parse_case(line.as_bytes())
        .map(|c| evaluate::evaluate(&c).status == Status::VerifiedComplete)
        .unwrap_or(false)
}

/// What one policy did with a scenario.
struct Played {
    consumed: Vec<ToolOutcome>,
    claimed: bool,
    refused: bool,
}

/// The scripted policies. `baseline` takes the first outcome and always claims.
/// `evidence_contract` claims a complete first outcome; after a retryable failure it
/// takes the second and claims only if that is complete; otherwise it refuses.
/// `verifier_feedback` is `evidence_contract` that also retries a success-shaped but
/// incomplete outcome.
fn play(group: &str, scenario: &[ToolOutcome], req: &Requirement) -> Played {
    let regular: Vec<&ToolOutcome> = scenario.iter().filter(|o| !o.automatic).collect();
    let first = regular[0];
    let mut consumed = vec![first.clone()];
    let retries = |o: &ToolOutcome| match group {
        "evidence_contract" => !o.success && o.retryable,
        _ => o.retryable || o.success,
    };
    let (claimed, refused) = if group == "baseline" || proves(req, first) {
        (true, false)
    } else if retries(first) && regular.len() > 1 {
        consumed.push(regular[1].clone());
        let ok = proves(req, regular[1]);
        (ok, !ok)
    } else {
        (false, true)
    };
    Played {
        consumed,
        claimed,
        refused,
    }
}

/// The run's raw record: metadata and the trace exactly as the tool reported it.
fn raw_record(cfg: &BenchConfig, p: &Planned) -> Value {
    let req = &cfg.requirement;
    let scenario = outcomes(p.scenario, req);
    let played = play(p.group, &scenario, req);
    let unnecessary = played.consumed[..played.consumed.len() - 1]
        .iter()
        .filter(|o| proves(req, o))
        .count();
    let automatic = scenario.iter().filter(|o| o.automatic);
    let events: Vec<Value> = played
        .consumed
        .iter()
        .chain(automatic)
        .enumerate()
        .map(|(i, o)| {
            json!({
                "source_event_id": format!("event-{}", i + 1),
                "action": req.action,
                "success": o.success,
                "evidence": o.evidence,
            })
        })
        .collect();
    json!({
        "run_id": p.run_id,
        "group": p.group,
        "scenario_id": p.scenario,
        "seed": p.seed,
        "runner": RUNNER,
        "runner_version": RUNNER_VERSION,
        "retry_count": played.consumed.len() - 1,
        "unnecessary_retry_count": unnecessary,
        "refused": played.refused,
        "elapsed_ms": null,
        "input_tokens": null,
        "output_tokens": null,
        "trace": {
            "trace_id": p.run_id,
            "task": cfg.task,
            "completion_claimed": played.claimed,
            "events": events,
        },
    })
}

/// Recovered (the benchmark's sense): the requirement's latest event proves it and some
/// earlier event of that action did not.
fn recovered(case: &Case<'_>) -> bool {
    let Some(req) = case.requirements.first() else {
        return false;
    };
    let evs: Vec<&Event<'_>> = case
        .events
        .iter()
        .filter(|e| e.action == req.action)
        .collect();
    let proves = |e: &Event<'_>| e.success && case.fields_of(req).iter().all(|f| case.has(e, f));
    match evs.split_last() {
        Some((last, earlier)) if !earlier.is_empty() => {
            proves(last) && earlier.iter().any(|e| !proves(e))
        }
        _ => false,
    }
}

/// What is kept of one run for the metrics.
struct Tallied {
    group: &'static str,
    scenario: &'static str,
    outcome: evaluate::Outcome,
    recovered: bool,
    unnecessary: bool,
    refused: bool,
}

fn ratio(n: u64, d: u64) -> Value {
    Value::from(if d == 0 { 0.0 } else { n as f64 / d as f64 })
}

fn base_metrics(runs: &[&Tallied]) -> Result<Value, Error> {
    let mut m = Metrics::default();
    for r in runs {
        m.add(&r.outcome);
    }
    serde_json::from_str(&m.to_json()).map_err(|e| Error(format!("metrics: {e}")))
}

fn summary(runs: &[&Tallied]) -> Result<Value, Error> {
    let n = runs.len() as u64;
    let injected = runs.iter().filter(|r| injects_failure(r.scenario)).count() as u64;
    let rec = runs
        .iter()
        .filter(|r| injects_failure(r.scenario) && r.recovered)
        .count() as u64;
    let unnecessary = runs.iter().filter(|r| r.unnecessary).count() as u64;
    let refusals = runs.iter().filter(|r| r.refused).count() as u64;
    let base = base_metrics(runs)?;
    Ok(json!({
        "total_runs": n,
        "injected_failure_runs": injected,
        "recovered_failure_runs": rec,
        "recovery_rate_given_injected_failure": ratio(rec, injected),
        "unnecessary_retry_runs": unnecessary,
        "unnecessary_retry_rate": ratio(unnecessary, n),
        "refusal_runs": refusals,
        "refusal_rate": ratio(refusals, n),
        // The scripted runner measures neither time nor tokens (limitations say so).
        "mean_elapsed_ms": null,
        "mean_input_tokens": null,
        "mean_output_tokens": null,
        "status_counts": base["status_counts"],
        "claim_counts": base["claim_counts"],
        "rates": base["rates"],
    }))
}

fn metrics(cfg: &BenchConfig, digest: &str, runs: &[Tallied]) -> Result<Value, Error> {
    let all: Vec<&Tallied> = runs.iter().collect();
    let mut groups = Map::new();
    for g in &cfg.groups {
        let sub: Vec<&Tallied> = runs.iter().filter(|r| r.group == *g).collect();
        groups.insert((*g).into(), summary(&sub)?);
    }
    let mut scenarios = Map::new();
    for s in &cfg.scenarios {
        let sub: Vec<&Tallied> = runs.iter().filter(|r| r.scenario == *s).collect();
        let mut counts = Map::new();
        for st in Status::ALL {
            let c = sub.iter().filter(|r| r.outcome.status == st).count();
            counts.insert(st.as_str().into(), Value::from(c));
        }
        scenarios.insert(
            (*s).into(),
            json!({
                "total_runs": sub.len(),
                "injected_failure": injects_failure(s),
                "recovered_failure_runs": sub.iter().filter(|r| r.recovered).count(),
                "status_counts": counts,
            }),
        );
    }
    Ok(json!({
        "schema_version": "1",
        "experiment_id": cfg.experiment_id,
        "config_digest": digest,
        "benchmark": base_metrics(&all)?,
        "experiment": summary(&all)?,
        "groups": groups,
        "scenarios": scenarios,
        "limitations": {
            "runner_type": RUNNER,
            "external_model_results": false,
            "timing_and_tokens_measured": false,
        },
    }))
}

/// `{x:.6f}`, as the peer's report prints rates.
fn fixed6(v: &Value) -> String {
    format!("{:.6}", v.as_f64().unwrap_or(0.0))
}

/// The run's own `report.md`: the peer's, byte for byte, but for the one command under
/// "Reproduce", which is evident's and reproduces this run from its own `config.json`
/// (the peer prints its example's paths whatever was run).
fn run_report(cfg: &BenchConfig, digest: &str, m: &Value) -> String {
    let e = &m["experiment"];
    format!(
        "# Controlled failure-injection benchmark\n\nGenerated at: {generated}\n\nThis run validates the experiment harness with deterministic **scripted reference policies**. It is not an external-model benchmark and makes no claim about OpenAI, Anthropic, or any other model.\n\n## Configuration\n\n- Experiment: `{id}`\n- Configuration digest: `{digest}`\n- Runner: `{RUNNER}`\n- Seed: `{seed}`\n- Repetitions: `{reps}`\n- Groups: {groups}\n- Scenarios: {scenarios}\n\n## Headline results\n\n- Total runs: {total}\n- Injected-failure runs: {injected}\n- Recovered failure runs: {recovered}\n- Recovery rate given injected failure: {rate}\n- Unnecessary retry runs: {unnecessary}\n- Refusal runs: {refusals}\n\n## Artifact boundary\n\nRaw traces, provenance envelopes, canonical cases, evaluations, run metadata and aggregate metrics are stored separately. Source-reported tool evidence is transformed deterministically but is not independent proof of external state, identity, authorisation or causality.\n\n## Reproduce\n\n```bash\n{reproduce}\n```\n",
        generated = cfg.generated_at,
        id = cfg.experiment_id,
        seed = cfg.seed,
        reps = cfg.repetitions,
        groups = cfg.groups.join(", "),
        scenarios = cfg.scenarios.join(", "),
        total = e["total_runs"],
        injected = e["injected_failure_runs"],
        recovered = e["recovered_failure_runs"],
        rate = fixed6(&e["recovery_rate_given_injected_failure"]),
        unnecessary = e["unnecessary_retry_runs"],
        refusals = e["refusal_runs"],
        reproduce = reproduce_command(cfg),
    )
}

/// The command under "Reproduce" in `report.md`, run from the output directory.
pub fn reproduce_command(cfg: &BenchConfig) -> String {
    format!(
        "evident bench run --config config.json --output ../{}-reproduced",
        crate::sandbox::safe_name(&cfg.experiment_id)
    )
}

/// The peer's limit on the output: it must not exist or be an empty directory.
pub(crate) fn prepare_output(dir: &Path, subdirs: &[&str]) -> Result<(), Error> {
    match std::fs::read_dir(dir) {
        Ok(mut entries) => {
            if entries.next().is_some() {
                return Err(Error::file(
                    dir,
                    "the output directory is not empty; hint: give a new or empty directory (a run never mixes with older files)",
                ));
            }
        }
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => {
            std::fs::create_dir_all(dir)
                .map_err(|e| Error::io(dir, "create the output directory", &e))?;
        }
        Err(e) => return Err(Error::io(dir, "read the output directory", &e)),
    }
    for s in subdirs {
        let p = dir.join(s);
        std::fs::create_dir(&p).map_err(|e| Error::io(&p, "create", &e))?;
    }
    Ok(())
}

/// One policy's headline, for the command's output.
#[derive(Debug, Clone, Serialize)]
pub struct GroupLine {
    /// The policy.
    pub group: String,
    /// Its runs.
    pub runs: u64,
    /// Runs where it claimed completion.
    pub claimed: u64,
    /// Claims not verified complete: the figure the benchmark exists to show.
    pub false_completion: u64,
    /// `false_completion / claimed` (0 when it never claimed).
    pub false_completion_rate: f64,
    /// Runs where it refused to claim.
    pub refusals: u64,
    /// Runs with an injected failure whose last outcome proves the requirement after an
    /// earlier one did not.
    pub recovered_failure_runs: u64,
    /// Runs whose scenario injects a failure.
    pub injected_failure_runs: u64,
}

/// What `bench run` reports.
#[derive(Debug, Clone, Serialize)]
pub struct BenchRun {
    /// Where the run's files are.
    pub output_dir: PathBuf,
    /// The configuration's `experiment_id`.
    pub experiment_id: String,
    /// SHA-256 of the resolved configuration, to tell two runs' configurations apart.
    pub config_digest: String,
    /// Runs made (groups × scenarios × repetitions).
    pub total_runs: u64,
    /// Runs whose scenario injects a failure.
    pub injected_failure_runs: u64,
    /// Of those, runs whose last outcome proves the requirement after an earlier one
    /// did not.
    pub recovered_failure_runs: u64,
    /// Claims not verified complete, over all claims, across every policy.
    pub false_completion_rate: f64,
    /// Each policy's headline, in the configuration's order.
    pub groups: Vec<GroupLine>,
    /// Files the manifest lists (all but itself), checked after writing.
    pub manifest_files: usize,
    /// The manifest verified after writing (a run that does not is an error instead).
    pub manifest_verified: bool,
}

/// Policy headlines from a `metrics.json` value, in the given group order.
pub fn group_lines(m: &Value, groups: &[&str]) -> Vec<GroupLine> {
    let n = |v: &Value| v.as_u64().unwrap_or(0);
    groups
        .iter()
        .map(|g| {
            let s = &m["groups"][*g];
            GroupLine {
                group: (*g).into(),
                runs: n(&s["total_runs"]),
                claimed: n(&s["claim_counts"]["claimed_completion"]),
                false_completion: n(&s["claim_counts"]["false_completion"]),
                false_completion_rate: s["rates"]["false_completion_rate"].as_f64().unwrap_or(0.0),
                refusals: n(&s["refusal_runs"]),
                recovered_failure_runs: n(&s["recovered_failure_runs"]),
                injected_failure_runs: n(&s["injected_failure_runs"]),
            }
        })
        .collect()
}

/// Runs the benchmark into `out` (new or empty), writes the manifest and checks it.
pub fn run(cfg: &BenchConfig, out: &Path) -> Result<BenchRun, Error> {
    let digest = cfg.digest()?;
    prepare_output(out, &["raw_traces", "envelopes"])?;
    create(&out.join("config.json"), &file_text(&cfg.to_value())?)?;
    let (mut cases, mut evaluations, mut runs) = (Vec::new(), Vec::new(), Vec::new());
    let mut tallied = Vec::new();
    for p in plan(cfg) {
        let raw = raw_record(cfg, &p);
        let raw_rel = format!("raw_traces/{}.json", p.run_id);
        create(&out.join(&raw_rel), &file_text(&raw)?)?;
        let env = adapt::adapt(
            Format::Generic,
            &raw["trace"],
            vec![cfg.requirement.clone()],
            &raw_rel,
        )
        .map_err(|e| Error(format!("{raw_rel}: {e}")))?;
        create(
            &out.join(format!("envelopes/{}.json", p.run_id)),
            &file_text(&env.envelope_value())?,
        )?;
        // The case is evaluated from its own JSONL line, as `evident eval` reads it.
        let case_value = env.case_value();
        let line = line_text(&case_value)?;
        let case = parse_case(line.as_bytes()).map_err(|e| Error(format!("{raw_rel}: {e}")))?;
        let outcome = evaluate::evaluate(&case);
        let evaluation = serde_json::to_value(evaluate::evaluation(&case))
            .map_err(|e| Error(format!("{raw_rel}: {e}")))?;
        tallied.push(Tallied {
            group: p.group,
            scenario: p.scenario,
            outcome,
            recovered: recovered(&case),
            unnecessary: raw["unnecessary_retry_count"].as_u64().unwrap_or(0) > 0,
            refused: raw["refused"] == true,
        });
        let mut meta = raw.clone();
        if let Some(o) = meta.as_object_mut() {
            o.remove("trace");
        }
        cases.push(case_value);
        evaluations.push(evaluation);
        runs.push(meta);
    }
    create(&out.join("cases.jsonl"), &jsonl_text(&cases)?)?;
    create(&out.join("evaluations.jsonl"), &jsonl_text(&evaluations)?)?;
    create(&out.join("runs.jsonl"), &jsonl_text(&runs)?)?;
    let m = metrics(cfg, &digest, &tallied)?;
    create(&out.join("metrics.json"), &file_text(&m)?)?;
    create(&out.join("report.md"), &run_report(cfg, &digest, &m))?;
    let header = json!({
        "schema_version": "1",
        "experiment_id": cfg.experiment_id,
        "config_digest": digest,
        "runner": RUNNER,
        "runner_version": RUNNER_VERSION,
        "generated_at": cfg.generated_at,
    });
    let files = manifest::write(out, header)?;
    let check = manifest::verify(out)?;
    if !check.ok {
        return Err(Error::file(
            out,
            format!(
                "the manifest just written does not verify: {}",
                check.problems_text()
            ),
        ));
    }
    let e = &m["experiment"];
    Ok(BenchRun {
        output_dir: out.to_path_buf(),
        experiment_id: cfg.experiment_id.clone(),
        config_digest: digest,
        total_runs: e["total_runs"].as_u64().unwrap_or(0),
        injected_failure_runs: e["injected_failure_runs"].as_u64().unwrap_or(0),
        recovered_failure_runs: e["recovered_failure_runs"].as_u64().unwrap_or(0),
        false_completion_rate: m["benchmark"]["rates"]["false_completion_rate"]
            .as_f64()
            .unwrap_or(0.0),
        groups: group_lines(&m, &cfg.groups),
        manifest_files: files,
        manifest_verified: true,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn req() -> Requirement {
        Requirement {
            action: "send_email".into(),
            evidence_fields: vec!["message_id".into(), "recipient".into()],
        }
    }

    #[test]
    fn the_evaluator_decides_what_an_outcome_proves() {
        let r = req();
        assert!(proves(
            &r,
            &ToolOutcome::new(true, complete_evidence(&r, "ok"))
        ));
        assert!(!proves(
            &r,
            &ToolOutcome::new(true, json!({"status": "ok"}))
        ));
        assert!(!proves(
            &r,
            &ToolOutcome::new(false, complete_evidence(&r, "ok"))
        ));
        assert!(!proves(
            &r,
            &ToolOutcome::new(true, json!({"message_id": " ", "recipient": "x"}))
        ));
    }

    #[test]
    fn policies_differ_only_where_the_peer_says() {
        let r = req();
        let claims = |g: &str, s: &str| {
            let p = play(g, &outcomes(s, &r), &r);
            (p.claimed, p.refused, p.consumed.len())
        };
        // baseline always claims, never retries.
        assert_eq!(claims("baseline", "timeout"), (true, false, 1));
        // evidence_contract retries a retryable failure, refuses an incomplete success.
        assert_eq!(claims("evidence_contract", "timeout"), (true, false, 2));
        assert_eq!(
            claims("evidence_contract", "partial_write"),
            (false, true, 1)
        );
        // verifier_feedback also retries the incomplete success.
        assert_eq!(
            claims("verifier_feedback", "partial_write"),
            (true, false, 2)
        );
        assert_eq!(
            claims("verifier_feedback", "tool_exception"),
            (false, true, 1)
        );
        // A rollback comes after the claim, whatever the policy.
        assert_eq!(claims("verifier_feedback", "rollback"), (true, false, 1));
    }

    #[test]
    fn other_evidence_fields_get_the_peer_values() {
        let r = Requirement {
            action: "w".into(),
            evidence_fields: vec!["path".into(), "sha".into(), "size".into()],
        };
        assert_eq!(
            complete_evidence(&r, "repaired"),
            json!({"path": "/tmp/output", "sha": "sha-repaired", "size": "size-repaired"})
        );
    }
}
