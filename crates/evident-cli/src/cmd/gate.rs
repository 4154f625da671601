//! `evident gate CONTRACT CLAIM`: run the owner's contract against the world now, add
//! what it observed as independent evidence, and decide the agent's claim.

use crate::{input, report};
use anyhow::{Context as _, anyhow};
use evident_format::Claim;
use evident_gate::{Contract, Settings};
use std::path::{Path, PathBuf};
use std::time::Duration;

/// Run an owner's contract against the world and decide an agent's claim.
///
/// Every probe, target and expectation comes from CONTRACT (TOML or JSON; see
/// `evident schema contract`); CLAIM only says what the agent changed. The gate's
/// observations are added as independent evidence (verifier `evident/<version>`) and
/// the claim is decided under the contract's policy. The agent's own evidence is kept
/// but counts only when signed by a verifier the contract trusts.
///
/// Exit codes: 0 verified (or unverified under on_unverified warn/record), 1 refuted,
/// 3 unverified under block (the default), 2 invalid input or usage.
#[derive(clap::Args)]
pub struct Args {
    /// The owner's contract (`.toml` or `.json`).
    pub contract: PathBuf,
    /// The agent's Completion Claim v0.1 (JSON), or `-` for stdin.
    pub claim: String,
    /// Print the claim with the gate's evidence and the verdict as JSON.
    #[arg(long)]
    pub json: bool,
    /// Also write the outcome as JUnit XML to this file (for CI systems).
    #[arg(long, value_name = "FILE")]
    pub junit: Option<PathBuf>,
    /// Checks run at once.
    #[arg(long, default_value_t = 8, value_name = "N")]
    pub jobs: usize,
    /// One deadline for all checks together, in seconds.
    #[arg(long, default_value_t = 600.0, value_name = "SECONDS")]
    pub timeout: f64,
    /// Directory that paths in the contract are relative to (default: the contract's directory).
    #[arg(long, value_name = "DIR")]
    pub root: Option<PathBuf>,
    /// Sign each evidence item the gate collects with this key (from `evident key
    /// generate`); the items then carry the key's id as `verifier.id`.
    #[arg(long, value_name = "FILE")]
    pub key: Option<PathBuf>,
    /// Print which checks would run for this claim (and why each applies or not), in
    /// which wave, and what each expects; run nothing, record nothing.
    #[arg(long)]
    pub dry_run: bool,
    /// Run only this check (to debug a contract). The other checks stay unobserved, so
    /// the verdict is partial evidence and never `verified`.
    #[arg(long, value_name = "CHECK")]
    pub only: Option<String>,
    #[command(flatten)]
    pub record: crate::record::RecordArgs,
}

pub fn run(args: Args) -> anyhow::Result<u8> {
    let contract_name = args.contract.display().to_string();
    let contract_bytes = input::read_limited(&contract_name)?;
    let contract = Contract::parse(&contract_bytes, &contract_name).map_err(|e| anyhow!("{e}"))?;
    let claim_bytes = input::read_limited(&args.claim)?;
    let claim_name = if args.claim == "-" {
        "<stdin>"
    } else {
        &args.claim
    };
    let claim = Claim::parse(&claim_bytes, claim_name).map_err(|e| anyhow!("{e}"))?;
    if let Some(only) = &args.only
        && !contract.contract.checks.iter().any(|c| &c.id == only)
    {
        let ids: Vec<&str> = contract
            .contract
            .checks
            .iter()
            .map(|c| c.id.as_str())
            .collect();
        return Err(anyhow!(
            "--only {only:?}: {contract_name} has no check with that id (its checks: {})",
            ids.join(", ")
        ));
    }
    if args.dry_run {
        let plan = evident_gate::run::plan(&contract.contract, &claim.claim, args.only.as_deref());
        if args.json {
            println!(
                "{}",
                serde_json::to_string_pretty(&serde_json::json!({ "checks": plan }))?
            );
        } else {
            print!("{}", report::render_plan(&contract.contract, &plan));
        }
        return Ok(crate::exit::OK);
    }
    let deadline = Duration::try_from_secs_f64(args.timeout)
        .ok()
        .filter(|d| !d.is_zero() && args.timeout > 0.0)
        .ok_or_else(|| {
            anyhow!("--timeout must be a positive number of seconds (at most about 1.8e19)")
        })?;
    let root = match &args.root {
        Some(r) => r.clone(),
        None => args
            .contract
            .parent()
            .map(Path::to_path_buf)
            .filter(|p| !p.as_os_str().is_empty())
            .unwrap_or_else(|| PathBuf::from(".")),
    };
    let root = root
        .canonicalize()
        .with_context(|| format!("{}: the contract root does not exist", root.display()))?;
    let key = match &args.key {
        Some(path) => Some(evident_ledger::sign::Key::load(path).map_err(|e| anyhow!("{e}"))?),
        None => None,
    };
    let trust = crate::record::trust_list(&contract.contract.trust)?;
    let placement = crate::record::placement_warnings(&args.record, args.key.as_deref(), &root);
    let settings = Settings {
        jobs: args.jobs.max(1),
        deadline,
        context: evident_probes::Context::from_process(root),
        verifier_id: key
            .as_ref()
            .map_or_else(evident_gate::verifier_id, |k| k.id().to_string()),
        progress: progress_line(),
        only: args.only.clone(),
    };
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()
        .context("cannot start the async runtime")?;
    let authenticate = |item: &serde_json::Value| {
        trust
            .as_ref()
            .is_some_and(|t| evident_ledger::sign::authenticate(item, t).is_ok())
    };
    let sign = |item: &serde_json::Value| {
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

    if let Some(path) = &args.junit {
        std::fs::write(path, evident_gate::junit::render(&outcome))
            .with_context(|| format!("{}: cannot write the JUnit report", path.display()))?;
    }
    let mut warnings = report::decision_warnings(&outcome.claim, &outcome.verdict, true);
    warnings.extend(outcome.warnings.iter().cloned());
    warnings.extend(placement);
    if args.json {
        let mut doc = serde_json::from_str::<serde_json::Value>(
            &crate::cmd::verify::document_json(&outcome.document, &outcome.verdict, &warnings)?,
        )?;
        doc["gate"] = serde_json::json!({
            "verifier": settings.verifier_id,
            "contract": contract_name,
            "checks": outcome.runs,
            "plan": outcome.plan,
            "partial": outcome.partial,
        });
        println!("{}", serde_json::to_string_pretty(&doc)?);
    } else {
        let notes = |i: usize| {
            outcome
                .runs
                .iter()
                .filter(|r| r.evidence == i)
                .map(|r| {
                    let when = match r.wave {
                        evident_format::Wave::Before => ", before the commands",
                        evident_format::Wave::After => ", after the commands",
                        evident_format::Wave::Command => "",
                    };
                    format!(
                        "gate check {:?} ran in {} ms{when}",
                        r.check_id, r.duration_ms
                    )
                })
                .collect()
        };
        print!(
            "{}",
            report::render(&outcome.claim, &outcome.verdict, &warnings, &notes)
        );
        let skipped: Vec<&evident_gate::Planned> =
            outcome.plan.iter().filter(|p| p.waves.is_empty()).collect();
        if !skipped.is_empty() {
            println!("\nchecks not run");
            for p in skipped {
                println!(
                    "  {} — {}",
                    report::shown(&p.check_id),
                    report::shown(&p.why)
                );
            }
        }
    }
    crate::record::record(
        &args.record,
        "gate",
        std::mem::take(&mut outcome.document),
        Some(&contract.raw),
        &outcome.verdict,
        key.as_ref(),
    )?;
    Ok(report::exit_code(
        outcome.verdict.state,
        outcome.on_unverified,
    ))
}

/// On a terminal, a one-line count of finished checks on stderr (erased at the end),
/// so a long test run does not look like a hang. Nothing when stderr is redirected.
fn progress_line() -> Option<evident_gate::run::Progress> {
    use std::io::{IsTerminal, Write};
    if !std::io::stderr().is_terminal() {
        return None;
    }
    Some(std::sync::Arc::new(
        |id: &str, done: usize, total: usize| {
            let mut err = std::io::stderr().lock();
            let _ = write!(
                err,
                "\r\x1b[2Kgate: {done}/{total} checks finished (last: {id})"
            );
            if done == total {
                let _ = write!(err, "\r\x1b[2K");
            }
            let _ = err.flush();
        },
    ))
}
