//! The confined file sandbox (seed 001 v0.5): a scripted tool is asked to write one
//! file and reports what it likes; the verdict comes only from the file's actual bytes,
//! observed afterwards by the gate's own file probe.
//!
//! Every write, remove and read goes through `evident_probes::confined`, the file
//! probe's safe-path layer: a `..` path or a symlink that leads out of the scenario's
//! root is refused there, and the scenario records the refusal. Source reports,
//! observations, cases and evaluations are stored in separate files; the tool's receipt
//! never enters evidence.

use std::path::{Path, PathBuf};

use serde::Serialize;
use serde_json::{Value, json};

use evident_eval::case::parse_case;
use evident_eval::evaluate::{self, Status};
use evident_probes::{FileSpec, ProbeError, confined};

use crate::config::{FileContract, SandboxConfig};
use crate::json::{create, file_text, jsonl_text, line_text, sha256_hex};
use crate::{Error, bench, manifest};

/// The runner's name, recorded in the manifest: the tool is scripted, not a model.
pub const RUNNER: &str = "sandbox-scripted-reference";
/// The runner's version, recorded beside [`RUNNER`].
pub const RUNNER_VERSION: &str = "1";
const ACTION: &str = "verify_file_postcondition";
const TRUST_BASIS: &str = "independent_local_state";

/// One scenario's result.
#[derive(Debug, Clone, Serialize)]
pub struct ScenarioResult {
    /// The scenario ([`crate::config::SANDBOX_SCENARIOS`]).
    pub scenario_id: String,
    /// What the tool said (never evidence): compared with the observation, it shows
    /// how often a tool's receipt is wrong.
    pub reported_success: bool,
    /// Whether the scripted agent claimed completion.
    pub completion_claimed: bool,
    /// The file's observed bytes are the contract's.
    pub matches_contract: bool,
    /// The safe-path layer refused the tool's write (an escape attempt).
    pub security_rejected: bool,
    /// The evaluator's status name, decided from the observation alone.
    pub status: &'static str,
    /// The safe-path layer's refusal, when the tool's write was refused.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub refusal: Option<String>,
}

/// What the scripted tool did and said.
struct Played {
    attempted_path: String,
    reported_success: bool,
    reported_evidence: Value,
    completion_claimed: bool,
    error_kind: Option<&'static str>,
    refusal: Option<String>,
}

/// The receipt the tool reports (never evidence).
fn receipt(c: &FileContract, fabricated: bool) -> Value {
    let bytes = c.content.as_bytes();
    json!({"path": c.path, "size": bytes.len(), "sha256": sha256_hex(bytes), "fabricated": fabricated})
}

fn write(root: &Path, path: &str, bytes: &[u8]) -> Result<(), Error> {
    confined::write_file(root, path, bytes)
        .map_err(|e| Error::file(root, format!("the scenario's write failed: {e}")))
}

/// An escape attempt must be refused by the safe-path layer, and nothing may appear at
/// `outside`; anything else stops the suite.
fn refused_escape(
    result: Result<(), ProbeError>,
    outside: &Path,
    scenario: &str,
) -> Result<String, Error> {
    if outside.exists() {
        return Err(Error::file(
            outside,
            format!(
                "{scenario}: the write escaped the sandbox; this is a bug in the safe-path layer"
            ),
        ));
    }
    match result {
        Err(e @ ProbeError::PathEscape { .. }) => Ok(e.to_string()),
        Err(e) => Err(Error(format!(
            "{scenario}: the write failed, but not as an escape: {e}"
        ))),
        Ok(()) => Err(Error(format!(
            "{scenario}: the safe-path layer accepted an escaping write"
        ))),
    }
}

fn play(scenario: &str, c: &FileContract, run_dir: &Path, root: &Path) -> Result<Played, Error> {
    let content = c.content.as_bytes();
    let mut p = Played {
        attempted_path: c.path.clone(),
        reported_success: false,
        reported_evidence: json!({}),
        completion_claimed: false,
        error_kind: None,
        refusal: None,
    };
    let claim = |p: &mut Played, fabricated: bool| {
        p.reported_success = true;
        p.reported_evidence = receipt(c, fabricated);
        p.completion_claimed = true;
    };
    match scenario {
        "success" => {
            write(root, &c.path, content)?;
            claim(&mut p, false);
        }
        // Claims a write that never happened.
        "false_success" => claim(&mut p, true),
        "partial_write" => {
            // Half the characters (Python slices code points), at least one.
            let n = c.content.chars().count();
            let half: String = c.content.chars().take((n / 2).max(1)).collect();
            write(root, &c.path, half.as_bytes())?;
            claim(&mut p, true);
        }
        "timeout_before_write" => p.error_kind = Some("timeout"),
        // The tool timed out after the bytes landed: the state is what counts.
        "timeout_after_write" => {
            write(root, &c.path, content)?;
            p.error_kind = Some("timeout");
        }
        "rollback" => {
            write(root, &c.path, content)?;
            confined::remove_file(root, &c.path)
                .map_err(|e| Error::file(root, format!("rollback: {e}")))?;
            claim(&mut p, false);
        }
        "path_traversal" => {
            p.attempted_path = "../escape.txt".into();
            let r = confined::write_file(root, &p.attempted_path, content);
            p.refusal = Some(refused_escape(r, &run_dir.join("escape.txt"), scenario)?);
            p.error_kind = Some("security_rejection");
        }
        _ => {
            // symlink_escape: `link` in the root points at a directory outside it.
            p.attempted_path = "link/escape.txt".into();
            let outside = run_dir.join("state-outside");
            std::fs::create_dir(&outside).map_err(|e| Error::io(&outside, "create", &e))?;
            let outside_abs = outside
                .canonicalize()
                .map_err(|e| Error::io(&outside, "resolve", &e))?;
            let link = root.join("link");
            std::os::unix::fs::symlink(&outside_abs, &link)
                .map_err(|e| Error::io(&link, "create the symlink", &e))?;
            let r = confined::write_file(root, &p.attempted_path, content);
            let _ = std::fs::remove_file(&link);
            let verdict = refused_escape(r, &outside.join("escape.txt"), scenario);
            std::fs::remove_dir(&outside).map_err(|e| Error::io(&outside, "remove", &e))?;
            p.refusal = Some(verdict?);
            p.error_kind = Some("security_rejection");
        }
    }
    Ok(p)
}

/// The independent observation: the gate's file probe on the contract path, compared
/// with the contract's bytes by size and SHA-256. Reads at most the contract's size
/// (a larger file cannot match).
fn observe(c: &FileContract, root: &Path) -> Value {
    let bytes = c.content.as_bytes();
    let spec = FileSpec {
        path: c.path.clone(),
        text: false,
        contains: vec![],
        pointers: Default::default(),
        max_bytes: Some(bytes.len() as u64),
        postcondition: None,
    };
    observation_from(c, confined::observe_file(&spec, root))
}

/// Maps the probe's answer to the peer's observation record. An escape is a definite
/// "not confined"; an oversize file a definite mismatch; any other error is recorded
/// with `indeterminate: true` and yields no event (so the case is UNVERIFIED, never
/// decided from a failed read).
fn observation_from(c: &FileContract, probed: Result<evident_probes::Object, ProbeError>) -> Value {
    let want = c.content.as_bytes();
    let (confined_ok, exists, regular, size, sha, matches, error, indeterminate) = match probed {
        Ok(o) if o.get("exists") != Some(&Value::Bool(true)) => (
            true,
            false,
            false,
            Value::Null,
            Value::Null,
            false,
            Value::Null,
            false,
        ),
        Ok(o) if o.get("kind").and_then(Value::as_str) != Some("file") => (
            true,
            true,
            false,
            Value::Null,
            Value::Null,
            false,
            json!("Observed path is not a regular file."),
            false,
        ),
        Ok(o) => {
            let size = o.get("size").cloned().unwrap_or(Value::Null);
            let sha = o.get("sha256").cloned().unwrap_or(Value::Null);
            let matches = size.as_u64() == Some(want.len() as u64)
                && sha.as_str() == Some(sha256_hex(want).as_str());
            (true, true, true, size, sha, matches, Value::Null, false)
        }
        Err(e @ (ProbeError::PathEscape { .. } | ProbeError::DanglingSymlink { .. })) => (
            false,
            false,
            false,
            Value::Null,
            Value::Null,
            false,
            json!(e.to_string()),
            false,
        ),
        Err(e @ ProbeError::Oversize { .. }) => (
            true,
            true,
            true,
            Value::Null,
            Value::Null,
            false,
            json!(e.to_string()),
            false,
        ),
        Err(e) => (
            true,
            false,
            false,
            Value::Null,
            Value::Null,
            false,
            json!(e.to_string()),
            true,
        ),
    };
    let mut v = json!({
        "contract_id": c.contract_id,
        "path": c.path,
        "confined": confined_ok,
        "exists": exists,
        "regular_file": regular,
        "size": size,
        "sha256": sha,
        "matches_content": matches,
        "matches_contract": matches,
        "error": error,
        "trust_basis": TRUST_BASIS,
    });
    if indeterminate && let Some(o) = v.as_object_mut() {
        o.insert("indeterminate".into(), Value::Bool(true));
    }
    v
}

/// The canonical case: evidence only from the observation (never the receipt).
fn case_value(c: &FileContract, scenario: &str, claimed: bool, obs: &Value) -> Value {
    let events = if obs.get("indeterminate") == Some(&Value::Bool(true)) {
        vec![]
    } else {
        vec![json!({
            "action": ACTION,
            "success": obs["matches_contract"],
            "evidence": {
                "path": obs["path"],
                "size": obs["size"],
                "sha256": obs["sha256"],
                "trust_basis": obs["trust_basis"],
                "exists": obs["exists"],
                "regular_file": obs["regular_file"],
                "matches_content": obs["matches_content"],
                "confined": obs["confined"],
                "error": obs["error"],
            },
            "sequence": 0,
        })]
    };
    json!({
        "case_id": format!("{}--{scenario}", c.contract_id),
        "task": format!("Write the contracted content to {}.", c.path),
        "completion_claimed": claimed,
        "requirements": [{"action": ACTION, "evidence_fields": ["path", "size", "sha256", "trust_basis"]}],
        "events": events,
    })
}

fn sandbox_metrics(results: &[ScenarioResult]) -> Value {
    let count = |f: &dyn Fn(&ScenarioResult) -> bool| results.iter().filter(|r| f(r)).count();
    let verified = |r: &ScenarioResult| r.status == Status::VerifiedComplete.as_str();
    let claimed = count(&|r| r.completion_claimed);
    let false_completion = count(&|r| r.completion_claimed && !verified(r));
    let mut status_counts = serde_json::Map::new();
    for s in Status::ALL {
        status_counts.insert(s.as_str().into(), json!(count(&|r| r.status == s.as_str())));
    }
    let mut scenarios = serde_json::Map::new();
    for r in results {
        scenarios.insert(
            r.scenario_id.clone(),
            json!({
                "status": r.status,
                "reported_success": r.reported_success,
                "completion_claimed": r.completion_claimed,
                "matches_contract": r.matches_contract,
                "security_rejected": r.security_rejected,
            }),
        );
    }
    json!({
        "schema_version": "1",
        "total_scenarios": results.len(),
        "status_counts": status_counts,
        "claimed_completion": claimed,
        "false_completion": false_completion,
        "false_completion_rate": if claimed == 0 { 0.0 } else { false_completion as f64 / claimed as f64 },
        "independently_verified_completion": count(&verified),
        "silent_verified_completion": count(&|r| !r.completion_claimed && verified(r)),
        "source_observation_agreement": count(&|r| r.reported_success == r.matches_contract),
        "source_false_positive": count(&|r| r.reported_success && !r.matches_contract),
        "source_false_negative": count(&|r| !r.reported_success && r.matches_contract),
        "security_rejection": count(&|r| r.security_rejected),
        "scenarios": scenarios,
        "limitations": {
            "external_model_results": false,
            "observation_scope": "independent_local_file_state",
            "os_level_adversarial_isolation": false,
        },
    })
}

/// The suite's `report.md`: the peer's, but for the one command under "Reproduce".
fn suite_report(cfg: &SandboxConfig, digest: &str, m: &Value) -> String {
    format!(
        "# Independent sandbox postcondition suite\n\nGenerated at: {generated}\n\nThis deterministic suite verifies local file state independently from source-reported tool receipts. It is **not external-model** performance evidence and does not provide production identity, authorization, remote-state proof, or adversarial OS isolation.\n\n## Configuration\n\n- Suite: `{suite}`\n- Configuration digest: `{digest}`\n- Contract: `{contract}`\n- Path: `{path}`\n- Scenarios: {scenarios}\n\n## Headline results\n\n- Total scenarios: {total}\n- Independently verified completions: {verified}\n- False completions: {false_c}\n- False-completion rate: {rate:.6}\n- Silent independently verified completions: {silent}\n- Source false positives: {fp}\n- Source false negatives: {fneg}\n- Security rejections: {sec}\n\n## Evidence boundary\n\nRaw source reports, independent observations, canonical cases and evaluations are stored separately. Canonical evidence is derived only from the local observer. Source-reported hashes or success flags cannot satisfy the verifier.\n\n## Reproduce\n\n```bash\n{reproduce}\n```\n",
        generated = cfg.generated_at,
        suite = cfg.suite_id,
        contract = cfg.contract.contract_id,
        path = cfg.contract.path,
        scenarios = cfg.scenarios.join(", "),
        total = m["total_scenarios"],
        verified = m["independently_verified_completion"],
        false_c = m["false_completion"],
        rate = m["false_completion_rate"].as_f64().unwrap_or(0.0),
        silent = m["silent_verified_completion"],
        fp = m["source_false_positive"],
        fneg = m["source_false_negative"],
        sec = m["security_rejection"],
        reproduce = reproduce_command(cfg),
    )
}

/// The command under "Reproduce" in `report.md`, run from the output directory.
pub fn reproduce_command(cfg: &SandboxConfig) -> String {
    format!(
        "evident sandbox run --config suite_config.json --output ../{}-reproduced --scenario all",
        safe_name(&cfg.suite_id)
    )
}

pub(crate) fn safe_name(s: &str) -> String {
    s.replace(
        |c: char| !c.is_ascii_alphanumeric() && c != '-' && c != '_' && c != '.',
        "_",
    )
}

/// What `sandbox run` reports.
#[derive(Debug, Clone, Serialize)]
pub struct SandboxRun {
    /// Where the suite's files are.
    pub output_dir: PathBuf,
    /// The configuration's `suite_id`.
    pub suite_id: String,
    /// SHA-256 of the resolved configuration, to tell two runs' configurations apart.
    pub config_digest: String,
    /// Scenarios run.
    pub total_scenarios: usize,
    /// Scenarios whose observed file verifies the contract.
    pub verified_complete: u64,
    /// Scenarios whose observation contradicts the contract.
    pub failed: u64,
    /// Scenarios left undecided (the file could not be read).
    pub unverified: u64,
    /// Claims not verified complete, over all claims.
    pub false_completion_rate: f64,
    /// Scenarios whose write the safe-path layer refused.
    pub security_rejection: u64,
    /// Each scenario's result, in the configuration's order.
    pub scenarios: Vec<ScenarioResult>,
    /// Files the manifest lists (all but itself), checked after writing.
    pub manifest_files: usize,
    /// The manifest verified after writing (a run that does not is an error instead).
    pub manifest_verified: bool,
}

/// Runs the suite into `out` (new or empty), writes the manifest and checks it.
pub fn run(cfg: &SandboxConfig, out: &Path) -> Result<SandboxRun, Error> {
    let digest = cfg.digest()?;
    bench::prepare_output(out, &["runs"])?;
    create(&out.join("suite_config.json"), &file_text(&cfg.to_value())?)?;
    let c = &cfg.contract;
    let mut results = Vec::new();
    for &scenario in &cfg.scenarios {
        let run_dir = out.join("runs").join(scenario);
        let root = run_dir.join("state");
        std::fs::create_dir_all(&root).map_err(|e| Error::io(&root, "create", &e))?;
        let played = play(scenario, c, &run_dir, &root)?;
        let report = json!({
            "scenario_id": scenario,
            "attempted_path": played.attempted_path,
            "reported_success": played.reported_success,
            "reported_evidence": played.reported_evidence,
            "completion_claimed": played.completion_claimed,
            "source_event_id": format!("source-{scenario}"),
            "error_kind": played.error_kind,
        });
        let obs = observe(c, &root);
        let case = case_value(c, scenario, played.completion_claimed, &obs);
        // Evaluated from its own JSONL line, as `evident eval` reads it.
        let line = line_text(&case)?;
        let parsed =
            parse_case(line.as_bytes()).map_err(|e| Error(format!("{scenario}: case: {e}")))?;
        let evaluation = evaluate::evaluation(&parsed);
        let status = evaluate::evaluate(&parsed).status.as_str();
        create(&run_dir.join("contract.json"), &file_text(&c.to_value())?)?;
        create(&run_dir.join("source_report.json"), &file_text(&report)?)?;
        create(&run_dir.join("observation.json"), &file_text(&obs)?)?;
        create(&run_dir.join("case.json"), &file_text(&case)?)?;
        let ev = serde_json::to_value(&evaluation).map_err(|e| Error(e.to_string()))?;
        create(&run_dir.join("evaluation.json"), &file_text(&ev)?)?;
        results.push(ScenarioResult {
            scenario_id: scenario.into(),
            reported_success: played.reported_success,
            completion_claimed: played.completion_claimed,
            matches_contract: obs["matches_contract"] == true,
            security_rejected: played.refusal.is_some(),
            status,
            refusal: played.refusal,
        });
    }
    let lines: Vec<Value> = results
        .iter()
        .map(|r| {
            json!({
                "scenario_id": r.scenario_id,
                "reported_success": r.reported_success,
                "completion_claimed": r.completion_claimed,
                "matches_contract": r.matches_contract,
                "security_rejected": r.security_rejected,
                "status": r.status,
            })
        })
        .collect();
    create(&out.join("results.jsonl"), &jsonl_text(&lines)?)?;
    let m = sandbox_metrics(&results);
    create(&out.join("metrics.json"), &file_text(&m)?)?;
    create(&out.join("report.md"), &suite_report(cfg, &digest, &m))?;
    let header = json!({
        "schema_version": "1",
        "suite_id": cfg.suite_id,
        "config_digest": digest,
        "generated_at": cfg.generated_at,
        "runner": RUNNER,
        "runner_version": RUNNER_VERSION,
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
    let n = |k: &str| m["status_counts"][k].as_u64().unwrap_or(0);
    Ok(SandboxRun {
        output_dir: out.to_path_buf(),
        suite_id: cfg.suite_id.clone(),
        config_digest: digest,
        total_scenarios: results.len(),
        verified_complete: n("VERIFIED_COMPLETE"),
        failed: n("FAILED"),
        unverified: n("UNVERIFIED"),
        false_completion_rate: m["false_completion_rate"].as_f64().unwrap_or(0.0),
        security_rejection: m["security_rejection"].as_u64().unwrap_or(0),
        scenarios: results,
        manifest_files: files,
        manifest_verified: true,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn contract() -> FileContract {
        FileContract {
            contract_id: "c".into(),
            path: "out/f.txt".into(),
            content: "hello\n".into(),
            schema_version: "1".into(),
        }
    }

    fn status_of(obs: &Value, claimed: bool) -> &'static str {
        let case = case_value(&contract(), "s", claimed, obs);
        let line = line_text(&case).unwrap();
        evaluate::evaluate(&parse_case(line.as_bytes()).unwrap())
            .status
            .as_str()
    }

    #[test]
    fn a_failed_read_is_unverified_never_decided() {
        let obs = observation_from(
            &contract(),
            Err(ProbeError::Io {
                path: "out/f.txt".into(),
                reason: "permission denied".into(),
            }),
        );
        assert_eq!(obs["indeterminate"], true);
        assert_eq!(status_of(&obs, true), "UNVERIFIED");
    }

    #[test]
    fn an_escape_or_an_oversize_file_is_a_definite_failure() {
        let esc = observation_from(
            &contract(),
            Err(ProbeError::PathEscape {
                path: "out/f.txt".into(),
                via: evident_probes::Escape::Symlink,
            }),
        );
        assert_eq!(esc["confined"], false);
        assert_eq!(status_of(&esc, true), "FAILED");
        let big = observation_from(
            &contract(),
            Err(ProbeError::Oversize {
                what: "file".into(),
                limit: 6,
            }),
        );
        assert_eq!(big["matches_contract"], false);
        assert_eq!(status_of(&big, true), "FAILED");
    }

    #[test]
    fn only_the_observed_bytes_verify() {
        let t = tempfile::tempdir().unwrap();
        let c = contract();
        assert_eq!(status_of(&observe(&c, t.path()), true), "FAILED");
        confined::write_file(t.path(), &c.path, b"hello\n").unwrap();
        assert_eq!(status_of(&observe(&c, t.path()), true), "VERIFIED_COMPLETE");
        confined::write_file(t.path(), &c.path, b"hello\n\n").unwrap();
        assert_eq!(status_of(&observe(&c, t.path()), true), "FAILED");
        confined::write_file(t.path(), &c.path, b"hellO\n").unwrap();
        assert_eq!(status_of(&observe(&c, t.path()), true), "FAILED");
    }
}
