//! `evident hook AGENT`: the coding agent's stop hook (and session-start and
//! subagent-stop hooks). See docs/agents.md.

use std::io::{Read, Write};
use std::path::PathBuf;
use std::time::Duration;

use evident_hooks::agent::Agent;

/// Run as a coding agent's hook: read its event JSON on stdin, run the owner's contract
/// against what changed since the session's baseline, and answer in the agent's
/// protocol on stdout (always exit 0: agents let a stop through on any other code).
///
/// AGENT: claude-code, codex, cursor, gemini or copilot. The contract is `--contract`
/// (outside the working tree) or `.evident/contract.toml` read at the baseline commit.
#[derive(clap::Args)]
pub struct Args {
    /// The agent whose protocol is spoken.
    #[arg(value_parser = parse_agent)]
    pub agent: Agent,
    /// The owner's contract, outside the working tree (default: .evident/contract.toml
    /// at the session's baseline commit).
    #[arg(long, value_name = "PATH")]
    pub contract: Option<PathBuf>,
    /// Where session baselines, decisions and locks are kept (default:
    /// $XDG_STATE_HOME/evident or ~/.local/state/evident); never inside the tree.
    #[arg(long, value_name = "DIR")]
    pub state_dir: Option<PathBuf>,
    /// The ledger: a SQLite file or postgres://… (default: $EVIDENT_LEDGER, else ledger.db in
    /// the state directory, where the agent cannot write it).
    #[arg(long, value_name = "PATH|URL")]
    pub ledger: Option<String>,
    /// Do not record decisions.
    #[arg(long)]
    pub no_record: bool,
    /// Sign the gate's evidence and records with this key.
    #[arg(long, value_name = "FILE")]
    pub key: Option<PathBuf>,
    /// Checks run at once.
    #[arg(long, default_value_t = 8, value_name = "N")]
    pub jobs: usize,
    /// One deadline for all checks, in seconds; keep it below the agent's hook timeout.
    #[arg(long, default_value_t = 540.0, value_name = "SECONDS")]
    pub timeout: f64,
    /// The event this command is registered for (`evident init` passes it for
    /// Copilot CLI, whose camelCase payloads do not name the event: agentStop,
    /// subagentStop or sessionStart). A payload that names another event is refused.
    #[arg(long, value_name = "NAME")]
    pub event: Option<String>,
}

/// `--agent` names no agent evident has hooks for.
#[derive(Debug, thiserror::Error)]
#[error("unknown agent {0:?}; expected claude-code, codex, cursor, gemini or copilot")]
pub struct UnknownAgent(String);

pub fn parse_agent(s: &str) -> Result<Agent, UnknownAgent> {
    Agent::parse(s).ok_or_else(|| UnknownAgent(s.to_string()))
}

pub fn run(args: Args) -> anyhow::Result<u8> {
    let clock = std::time::Instant::now();
    let mut stdin = Vec::new();
    let read = std::io::stdin()
        .take(16 * 1024 * 1024 + 1)
        .read_to_end(&mut stdin);
    let opts = evident_hooks::Options {
        contract: args.contract,
        state_dir: args.state_dir,
        ledger: args.ledger,
        no_record: args.no_record,
        key: args.key,
        jobs: args.jobs,
        deadline: Duration::try_from_secs_f64(args.timeout)
            .ok()
            .filter(|d| !d.is_zero())
            .unwrap_or(Duration::from_secs(540)),
        event: args.event,
    };
    if let Err(e) = read {
        stdin = format!("{{\"evident_error\": {:?}}}", e.to_string()).into_bytes();
    }
    // The hook answers before the agent's timeout whatever happens inside it: the
    // work runs on its own thread, and past the deadline plus a grace the stop is
    // refused here and the process ends (an agent lets a timed-out hook's stop through).
    let agent = args.agent;
    let limit = opts.deadline + evident_hooks::grace(opts.deadline);
    let (tx, rx) = std::sync::mpsc::channel();
    let (work_stdin, work_opts) = (stdin.clone(), opts.clone());
    std::thread::spawn(move || {
        let env = |k: &str| std::env::var(k).ok();
        let _ = tx.send(evident_hooks::run(agent, &work_stdin, &work_opts, &env));
    });
    let (out, log, overdue) = match rx.recv_timeout(limit.saturating_sub(clock.elapsed())) {
        Ok((out, log)) => (out, log, false),
        Err(_) => {
            let (out, log) = evident_hooks::overdue(agent, &stdin, &opts);
            (out, log, true)
        }
    };
    for l in log {
        eprintln!("{}", evident_pipeline::render::shown(&l));
    }
    let mut o = std::io::stdout().lock();
    let _ = o.write_all(out.as_bytes());
    let _ = o.flush();
    if overdue {
        // The worker is still running: end the process (exit code 0, as every answer).
        std::process::exit(i32::from(crate::exit::OK));
    }
    Ok(crate::exit::OK)
}
