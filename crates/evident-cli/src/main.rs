//! `evident`: decides whether an AI agent's "done" is true, from evidence that the
//! world changed, not from the agent's words.
//!
//! Every subcommand lives in its own module under `cmd/` and returns the process exit
//! code; `main` only parses arguments and turns errors into exit code 2.

mod cmd;
mod exit;
mod hint;
mod input;
mod output;
mod stderr_hooks;

use clap::{Parser, Subcommand};

/// Decide whether an AI agent's "done" is true, from evidence that the world changed.
///
/// Exit codes: 0 verified (or unverified under on_unverified warn/record),
/// 1 refuted, 2 invalid input or usage, 3 unverified under on_unverified block.
#[derive(Parser)]
#[command(name = "evident", version, about, long_about, max_term_width = 100)]
struct Cli {
    #[command(subcommand)]
    command: Command,
}

#[derive(Subcommand)]
enum Command {
    Verify(cmd::verify::Args),
    Gate(cmd::gate::Args),
    /// Record the hashes of a contract's [[snapshot]] sets before the agent runs.
    Snapshot(cmd::snapshot::Args),
    Hook(cmd::hook::Args),
    Claim(cmd::claim::Args),
    Init(cmd::init::Args),
    /// Check an owner's contract for mistakes.
    #[command(subcommand)]
    Contract(cmd::contract::Command),
    /// Print the JSON Schema of a document type.
    Schema(cmd::schema::Args),
    /// Evaluate recorded agent traces in bulk (cases JSONL, or traces via --adapter).
    Eval(cmd::eval::Args),
    /// Turn an agent trace into an evaluation case.
    Adapt(cmd::adapt::Args),
    /// Compute the completion belief (posterior) from DID/SAW evidence items.
    Belief(cmd::belief::Args),
    /// Run a built-in suite against a real world.
    #[command(subcommand)]
    Suite(cmd::suite::Command),
    /// The failure-injection benchmark of trace evaluation: run it, verify a run, report on it.
    #[command(subcommand)]
    Bench(cmd::bench::Command),
    /// The confined file sandbox: file writes decided from the actual bytes.
    #[command(subcommand)]
    Sandbox(cmd::sandbox::Command),
    /// Audit an agent's close-out claims with real git and real test runners.
    #[command(subcommand)]
    Audit(cmd::audit::Command),
    /// Manage Ed25519 signing keys.
    #[command(subcommand)]
    Key(cmd::key::Command),
    /// List recorded decisions from the ledger.
    Log(cmd::log::Args),
    /// Show one recorded decision.
    Show(cmd::show::Args),
    /// Verify or export the ledger.
    #[command(subcommand)]
    Ledger(cmd::ledger::Command),
    Serve(cmd::serve::Args),
    Mcp(cmd::mcp::Args),
    /// Make bearer tokens for `evident serve`.
    #[command(subcommand)]
    Token(cmd::token::Command),
}

fn main() -> std::process::ExitCode {
    restore_default_sigpipe();
    let cli = match Cli::try_parse() {
        Ok(cli) => cli,
        Err(e) => {
            let code = if e.use_stderr() { exit::INVALID } else { 0 };
            let _ = e.print();
            return std::process::ExitCode::from(code);
        }
    };
    let result = match cli.command {
        Command::Verify(a) => cmd::verify::run(a),
        Command::Gate(a) => cmd::gate::run(a),
        Command::Snapshot(a) => cmd::snapshot::run(a),
        Command::Hook(a) => cmd::hook::run(a),
        Command::Claim(a) => cmd::claim::run(a),
        Command::Init(a) => cmd::init::run(a),
        Command::Contract(c) => cmd::contract::run(c),
        Command::Schema(a) => cmd::schema::run(a),
        Command::Eval(a) => cmd::eval::run(a),
        Command::Adapt(a) => cmd::adapt::run(a),
        Command::Belief(a) => cmd::belief::run(a),
        Command::Suite(c) => cmd::suite::run(c),
        Command::Bench(c) => cmd::bench::run(c),
        Command::Sandbox(c) => cmd::sandbox::run(c),
        Command::Audit(c) => cmd::audit::run(c),
        Command::Key(c) => cmd::key::run(c),
        Command::Log(a) => cmd::log::run(a),
        Command::Show(a) => cmd::show::run(a),
        Command::Ledger(c) => cmd::ledger::run(c),
        Command::Serve(a) => cmd::serve::run(a),
        Command::Mcp(a) => cmd::mcp::run(a),
        Command::Token(c) => cmd::token::run(c),
    };
    match result {
        Ok(code) => std::process::ExitCode::from(code),
        Err(e) => {
            // Messages quote the input (an unknown enum value, a bad timestamp): escape
            // its control characters so a document cannot drive the terminal.
            let shown = |s: &str| evident_pipeline::render::shown(s).into_owned();
            match e.downcast_ref::<hint::Hinted>() {
                Some(h) if e.chain().count() == 1 => {
                    eprintln!("error: {}\nhint: {}", shown(&h.error), shown(&h.hint));
                }
                _ => eprintln!("error: {}", shown(&format!("{e:#}"))),
            }
            std::process::ExitCode::from(exit::INVALID)
        }
    }
}

/// Rust ignores SIGPIPE, so `evident … | head` would panic on the first write after
/// `head` exits. Restoring the default makes evident end quietly, as Unix tools do.
#[allow(unsafe_code)]
fn restore_default_sigpipe() {
    // SAFETY: called once at start-up, before any thread exists; SIG_DFL is a valid
    // disposition for SIGPIPE.
    unsafe {
        libc::signal(libc::SIGPIPE, libc::SIG_DFL);
    }
}
