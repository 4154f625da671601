//! `evident mcp`: the MCP server on stdio (crate evident-mcp).

use anyhow::{Context as _, anyhow};
use std::path::PathBuf;

/// Serve the verifier to an MCP client (Claude Code, an IDE, an agent framework) on
/// stdin/stdout.
///
/// Tools: list_contracts and get_contract (what the owner will check; held-out checks
/// only counted, secrets never shown), submit_claim (a claim under a contract → the
/// verdict, each unmet item and the evidence that is missing or contradicts; recorded
/// in the ledger) and explain_decision (a ledger id → the same explanation). The agent
/// names a contract; it never uploads one or names a path: contracts are only ever
/// DIR/NAME.toml or DIR/NAME.json, run with the file's own directory as root. stdout
/// carries only the protocol; logs go to stderr (EVIDENT_LOG=debug for more). The same
/// server runs as Streamable HTTP at /mcp under `evident serve`, behind its bearer
/// tokens. See docs/mcp.md.
#[derive(clap::Args)]
pub struct Args {
    /// The directory of contracts served (NAME.toml / NAME.json).
    #[arg(long, value_name = "DIR")]
    pub contracts: PathBuf,
    /// The ledger: a SQLite file or postgres://… (default: $EVIDENT_LEDGER, else the
    /// current directory's repository's ledger, outside its working tree, at
    /// $XDG_STATE_HOME/evident/ledgers/NAME-HASH/ledger.db; without XDG_STATE_HOME
    /// ~/.local/state/evident/…, on macOS ~/Library/Application Support/evident/…). Keep it
    /// where the agent cannot write.
    #[arg(long, value_name = "PATH|URL")]
    pub ledger: Option<String>,
    /// The owner's policy a claim submitted without a contract is decided under (from
    /// its own evidence; JSON or TOML). Without it such a claim is refused: a
    /// document's own policy is the agent's and never decides.
    #[arg(long, value_name = "FILE")]
    pub policy: Option<PathBuf>,
    /// The owner's trust list for a claim submitted without a contract, as `evident
    /// verify --trust` reads it; without it nothing such a claim calls independent is
    /// authenticated, so it cannot verify on its own say-so. Needs --policy.
    #[arg(long, value_name = "FILE")]
    pub trust: Option<PathBuf>,
    /// Sign each gate's evidence and each record's hash with this key.
    #[arg(long, value_name = "FILE")]
    pub key: Option<PathBuf>,
    /// The name recorded in the ledger as who asked (default: $USER, else "local").
    /// Over stdio nothing authenticates the caller: whoever starts the process asks.
    #[arg(long = "as", value_name = "NAME")]
    pub caller: Option<String>,
    /// Deadline of each gate (all its checks), in seconds.
    #[arg(long, default_value_t = 600.0, value_name = "SECONDS")]
    pub gate_timeout: f64,
    /// Checks running at once within a gate.
    #[arg(long, default_value_t = 8, value_name = "N")]
    pub jobs: usize,
}

pub fn run(a: Args) -> anyhow::Result<u8> {
    evident_serve::init_logging();
    let mut cfg = evident_mcp::Config::open(&a.contracts, a.ledger.as_deref())?;
    if let Some(path) = &a.policy {
        cfg.policy = Some((
            path.display().to_string(),
            crate::cmd::verify::load_policy(path)?,
        ));
    }
    if let Some(path) = &a.trust {
        if a.policy.is_none() {
            return Err(anyhow!(
                "--trust needs --policy FILE: a claim without a contract is decided only under the owner's policy"
            ));
        }
        cfg.trust = Some(evident_sign::TrustList::load(path)?);
    }
    if let Some(path) = &a.key {
        cfg.key = Some(evident_sign::Key::load(path)?);
        cfg.key_path = Some(path.clone());
    }
    let caller = match a.caller {
        Some(n) if evident_pipeline::catalog::valid_name(&n) => n,
        Some(n) => {
            return Err(anyhow!(
                "--as {n:?}: not a name (1-64 letters, digits, '_' or '-', starting with a letter or digit)"
            ));
        }
        None => std::env::var("USER")
            .ok()
            .filter(|u| evident_pipeline::catalog::valid_name(u))
            .unwrap_or_else(|| "local".into()),
    };
    cfg.local_caller = Some(caller);
    cfg.gate_timeout = std::time::Duration::try_from_secs_f64(a.gate_timeout)
        .ok()
        .filter(|d| !d.is_zero())
        .ok_or_else(|| anyhow!("--gate-timeout must be a positive number of seconds"))?;
    if a.jobs == 0 {
        return Err(anyhow!("--jobs must be at least 1"));
    }
    cfg.jobs = a.jobs;
    evident_serve::tracing::info!(
        contracts = %cfg.catalog.dir().display(),
        ledger = %cfg.decisions.location(),
        "evident mcp on stdio"
    );
    let rt = tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()
        .context("cannot start the runtime")?;
    rt.block_on(evident_mcp::serve_stdio(cfg))?;
    Ok(crate::exit::OK)
}
