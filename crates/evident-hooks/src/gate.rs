//! The one place the hook runs the gate and records its decision (so switching to a
//! shared pipeline is a change here only).

use crate::error::{HookError, json};
use std::path::{Path, PathBuf};

use std::time::Duration;

use evident_format::{Claim, OnUnverified};
use evident_gate::ContractDocument;
use evident_rules::{Code, State};
use serde_json::Value;

/// How [`decide`] runs the gate and where it records (from the hook's options).
pub struct Options {
    /// Checks observed at once.
    pub jobs: usize,
    /// Time for every check together; what is not observed by then is unverified.
    pub deadline: Duration,
    /// SQLite path or `postgres://…`.
    pub ledger: String,
    /// `--no-record`: decide without writing to the ledger.
    pub no_record: bool,
    /// The gate's signing key (`--key`): signs its evidence and the ledger record's hash.
    pub key: Option<PathBuf>,
    /// The session's baseline commit: what `protect = { base = "@baseline" }` means.
    pub baseline: String,
    /// The snapshot taken at session start, for a contract with `[[snapshot]]`.
    pub before: Option<Value>,
}

/// What the hook needs of the gate's decision to answer the agent.
pub struct Decision {
    /// Verified, unverified or refuted: with `on_unverified`, whether the stop goes through.
    pub state: State,
    /// The contract's `on_unverified`: refuse, warn or record when not verified.
    pub on_unverified: OnUnverified,
    /// The verdict's reason, then each unmet check with what it observed.
    pub explanation: String,
    /// `#N in LOCATION (hash)` when recorded.
    pub record: Option<String>,
}

/// Run `contract` against the work tree at `root` for `claim`, decide, and record,
/// through the shared pipeline (`evident_pipeline::gate`, as `evident gate` does).
pub fn decide(
    contract: &ContractDocument,
    contract_name: &str,
    claim: Value,
    root: &Path,
    opts: &Options,
) -> Result<Decision, HookError> {
    let bytes = serde_json::to_vec(&claim).map_err(json("the built claim"))?;
    let claim = Claim::parse(&bytes, "<built claim>").map_err(HookError::from)?;
    let key = match &opts.key {
        Some(p) => Some(evident_sign::Key::load(p).map_err(HookError::from)?),
        None => None,
    };
    let settings = evident_gate::Settings {
        jobs: opts.jobs.max(1),
        deadline: opts.deadline,
        context: evident_probes::Context {
            baseline: Some(opts.baseline.clone()),
            ..evident_probes::Context::from_process(root)
        },
        verifier_id: evident_gate::verifier_id(),
        progress: None,
        only: None,
    };
    let decision = evident_pipeline::gate(evident_pipeline::GateRequest {
        contract,
        contract_name: contract_name.to_string(),
        claim,
        settings,
        key: key.as_ref(),
        key_path: opts.key.as_deref(),
        recording: evident_pipeline::record::Recording {
            off: opts.no_record,
            ledger: Some(opts.ledger.clone()),
            checkpoint: None,
            ..Default::default()
        },
        before: opts.before.clone(),
    })
    .map_err(HookError::from)?;
    // The verdict's words and each check's error can hold the agent's text (a path,
    // a command's output): shown with control characters escaped, so only evident's
    // own newlines separate the lines the agent and the user read.
    let shown = |t: &str| evident_pipeline::render::shown(t).into_owned();
    let mut explanation = shown(&decision.verdict.reason);
    for run in &decision.runs {
        let finding = decision
            .verdict
            .findings
            .iter()
            .find(|f| f.evidence == run.evidence);
        if finding.is_some_and(|f| f.code == Code::Satisfies) {
            continue;
        }
        let observed = match &run.error {
            Some(e) => format!("could not observe: {}", shown(e)),
            None => format!("observed {}", short(&run.observed)),
        };
        explanation.push_str(&format!(
            "\n- check {:?} ({}, {}): {observed}; it needs {}{}",
            run.check_id,
            run.check_type,
            run.target,
            short(&Value::Object(run.expected.clone())),
            finding.map_or(String::new(), |f| format!(" ({})", shown(&f.detail))),
        ));
    }
    Ok(Decision {
        state: decision.verdict.state,
        on_unverified: decision.on_unverified,
        explanation,
        record: decision
            .record
            .as_ref()
            .map(|r| format!("#{} in {} ({})", r.id, r.location, r.hash)),
    })
}

/// A JSON value in at most 300 characters.
fn short(v: &Value) -> String {
    let s = v.to_string();
    if s.chars().count() > 300 {
        format!("{}…", s.chars().take(300).collect::<String>())
    } else {
        s
    }
}
