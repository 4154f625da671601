//! `evident gate CONTRACT CLAIM`: run the owner's contract against the world now, add
//! what it observed as independent evidence, and decide the agent's claim.

use crate::{hint, input};
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
    /// Also write the decision as Markdown to this file (for a CI job summary, e.g.
    /// `$GITHUB_STEP_SUMMARY`).
    #[arg(long, value_name = "FILE")]
    pub markdown: Option<PathBuf>,
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
    /// The revision `protect = { base = "@baseline" }` stands for: the commit the agent
    /// started from, or the owner's branch (never one the agent can move). Without it,
    /// a check protected at `@baseline` observes nothing and the claim is unverified.
    #[arg(long, value_name = "REV")]
    pub baseline: Option<String>,
    /// The snapshot `evident snapshot` took before the agent ran (for a contract with
    /// `[[snapshot]]`): every change since must be claimed. It must be signed by
    /// `--key`'s key (or a `[[snapshot_signer]]` key), or unsigned and recorded in the
    /// ledger (`--ledger`, read even with --no-record); taken for this contract, and
    /// younger than `snapshot_max_age_s`.
    #[arg(long, value_name = "FILE")]
    pub before: Option<PathBuf>,
    #[command(flatten)]
    pub record: crate::output::RecordArgs,
}

pub fn run(args: Args) -> anyhow::Result<u8> {
    let contract_name = args.contract.display().to_string();
    let contract_bytes = input::read_limited(&contract_name)?;
    let contract = Contract::parse(&contract_bytes, &contract_name).map_err(|e| {
        let hint = hint::contract_hint(
            &contract_bytes,
            &contract_name,
            &e.message,
            "; the contract comes first: evident gate CONTRACT CLAIM",
        );
        hint::with_hint(e, hint)
    })?;
    let claim_bytes = input::read_limited(&args.claim)?;
    let claim_name = if args.claim == "-" {
        "<stdin>"
    } else {
        &args.claim
    };
    let claim = Claim::parse(&claim_bytes, claim_name).map_err(|e| {
        let hint = hint::looks_like_contract(&claim_bytes).map(|table| {
            format!(
                "{claim_name} looks like a contract (it has {table}); the claim comes second: evident gate CONTRACT CLAIM"
            )
        });
        hint::with_hint(e, hint)
    })?;
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
            print!(
                "{}",
                evident_pipeline::render::plan(&contract.contract, &plan)
            );
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
        Some(path) => Some(evident_sign::Key::load(path)?),
        None => None,
    };
    let before = match &args.before {
        Some(path) => {
            let name = path.display().to_string();
            let bytes = input::read_limited(&name)?;
            let parsed = evident_format::json::parse(&bytes)
                .map_err(|e| anyhow!("{name}: not a snapshot file: {}", e.message))?;
            Some(parsed.value)
        }
        None => None,
    };
    let settings = Settings {
        jobs: args.jobs.max(1),
        deadline,
        context: evident_probes::Context {
            baseline: args.baseline.clone(),
            ..evident_probes::Context::from_process(root)
        },
        verifier_id: evident_gate::verifier_id(),
        progress: progress_line(),
        only: args.only.clone(),
    };
    let decision = evident_pipeline::gate(evident_pipeline::GateRequest {
        contract: &contract,
        contract_name,
        claim,
        settings,
        key: key.as_ref(),
        key_path: args.key.as_deref(),
        recording: args.record.recording(),
        before,
    });
    crate::output::show(
        decision,
        &crate::output::Outputs {
            json: args.json,
            junit: args.junit.clone(),
            markdown: args.markdown.clone(),
            clock_now: false,
        },
    )
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
