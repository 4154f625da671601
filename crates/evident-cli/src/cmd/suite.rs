//! `evident suite belief`: seed 004's completion suite and evident's own tasks, run for
//! real in temporary directories. Thin: everything lives in `evident_belief_suite`.

use evident_belief_suite::suite;

use crate::exit;

/// Subcommands of `evident suite`.
#[derive(clap::Subcommand)]
pub enum Command {
    /// Run the completion-belief suite (the reference suite's 11 tasks and evident's own) against
    /// a real filesystem and print the parity table.
    ///
    /// Exit codes: 0 every verdict correct, no false completion, every posterior within
    /// 1e-6 of the reported one; 1 otherwise; 2 if the suite could not run.
    Belief(BeliefArgs),
}

/// Arguments of `evident suite belief`.
#[derive(clap::Args)]
pub struct BeliefArgs {
    /// Print every task's result (tool reports, items, belief) as JSON.
    #[arg(long)]
    pub json: bool,
}

pub fn run(command: Command) -> anyhow::Result<u8> {
    match command {
        Command::Belief(args) => {
            let report = suite::run_suite()?;
            if args.json {
                println!("{}", serde_json::to_string_pretty(&report)?);
            } else {
                print!("{}", suite::render_table(&report));
            }
            Ok(if report.summary.passed {
                exit::OK
            } else {
                exit::SUITE_FAILED
            })
        }
    }
}
