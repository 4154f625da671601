//! The one place the hook runs the gate and records its decision (so switching to a
//! shared pipeline is a change here only).

use std::path::{Path, PathBuf};
use std::time::Duration;

use evident_format::{Claim, OnUnverified};
use evident_gate::ContractDocument;
use evident_rules::{Code, State};
use serde_json::Value;

pub struct Options {
    pub jobs: usize,
    pub deadline: Duration,
    /// SQLite path or `postgres://…`.
    pub ledger: String,
    pub no_record: bool,
    pub key: Option<PathBuf>,
}

pub struct Decision {
    pub state: State,
    pub on_unverified: OnUnverified,
    /// The verdict's reason, then each unmet check with what it observed.
    pub explanation: String,
    /// `#N in LOCATION (hash)` when recorded.
    pub record: Option<String>,
}

/// Run `contract` against the work tree at `root` for `claim`, decide, and record.
pub fn decide(
    contract: &ContractDocument,
    claim: Value,
    root: &Path,
    opts: &Options,
) -> Result<Decision, String> {
    let bytes = serde_json::to_vec(&claim).map_err(|e| e.to_string())?;
    let claim = Claim::parse(&bytes, "<built claim>").map_err(|e| e.to_string())?;
    let key = match &opts.key {
        Some(p) => Some(evident_ledger::sign::Key::load(p).map_err(|e| e.to_string())?),
        None => None,
    };
    let trust = if contract.contract.trust.is_empty() {
        None
    } else {
        let value = serde_json::json!({ "verifiers": contract.contract.trust });
        Some(
            evident_ledger::sign::TrustList::from_value(&value)
                .map_err(|e| format!("contract trust list: {e}"))?,
        )
    };
    let settings = evident_gate::Settings {
        jobs: opts.jobs.max(1),
        deadline: opts.deadline,
        context: evident_probes::Context::from_process(root),
        verifier_id: key
            .as_ref()
            .map_or_else(evident_gate::verifier_id, |k| k.id().to_string()),
        progress: None,
        only: None,
    };
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .map_err(|e| format!("cannot start the async runtime: {e}"))?;
    let authenticate = |item: &Value| {
        trust
            .as_ref()
            .is_some_and(|t| evident_ledger::sign::authenticate(item, t).is_ok())
    };
    let sign = |item: &Value| {
        key.as_ref()
            .and_then(|k| evident_ledger::sign::sign_evidence(item, k).ok())
    };
    let mut outcome = runtime.block_on(evident_gate::run::run(
        &contract.contract,
        claim,
        &settings,
        &authenticate,
        &sign,
    ));
    let mut explanation = outcome.verdict.reason.clone();
    for run in &outcome.runs {
        let finding = outcome
            .verdict
            .findings
            .iter()
            .find(|f| f.evidence == run.evidence);
        let ok = finding.is_some_and(|f| f.code == Code::Satisfies);
        if ok {
            continue;
        }
        let observed = match &run.error {
            Some(e) => format!("could not observe: {e}"),
            None => format!("observed {}", short(&run.observed)),
        };
        explanation.push_str(&format!(
            "\n- check {:?} ({}, {}): {observed}; it needs {}{}",
            run.check_id,
            run.check_type,
            run.target,
            short(&Value::Object(run.expected.clone())),
            finding.map_or(String::new(), |f| format!(" ({})", f.detail)),
        ));
    }
    let record = if opts.no_record {
        None
    } else {
        let ledger = evident_ledger::open(Some(&opts.ledger)).map_err(|e| e.to_string())?;
        let mut doc = std::mem::take(&mut outcome.document);
        if let Some(o) = doc.as_object_mut() {
            o.remove("verdict");
        }
        let task_id = doc
            .pointer("/task/id")
            .and_then(Value::as_str)
            .map(str::to_string);
        let r = ledger
            .append_signed(
                evident_ledger::NewEntry {
                    kind: "hook".into(),
                    task_id,
                    state: outcome.verdict.state.as_str().to_string(),
                    claim: doc,
                    contract: Some(contract.raw.clone()),
                    verdict: serde_json::to_value(&outcome.verdict).map_err(|e| e.to_string())?,
                },
                key.as_ref(),
            )
            .map_err(|e| format!("the decision could not be recorded: {e}"))?;
        Some(format!("#{} in {} ({})", r.id, ledger.location(), r.hash))
    };
    Ok(Decision {
        state: outcome.verdict.state,
        on_unverified: outcome.on_unverified,
        explanation,
        record,
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
