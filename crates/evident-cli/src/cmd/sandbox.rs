//! `evident sandbox run|verify`: seed 001's confined file sandbox. Thin: everything
//! lives in `evident_bench::sandbox`.

use std::path::PathBuf;

use evident_bench::config::{SANDBOX_SCENARIOS, SandboxConfig};
use evident_bench::sandbox;

use crate::exit;

/// Subcommands of `evident sandbox`.
#[derive(clap::Subcommand)]
pub enum Command {
    /// Run the file-write scenarios (success, false_success, partial_write,
    /// timeout_before_write, timeout_after_write, rollback, path_traversal,
    /// symlink_escape) and decide each from the file's actual bytes.
    ///
    /// A scripted tool writes (or claims to write) the contract's file in a fresh
    /// root per scenario; the gate's file probe then reads it. The tool's receipt is
    /// stored but never counts. Writes and reads go through the file probe's
    /// safe-path layer, so `..` and symlinks out of the root are refused there. The
    /// output directory (new or empty) receives suite_config.json, runs/NAME/
    /// (contract, source_report, observation, case, evaluation, state/),
    /// results.jsonl, metrics.json, report.md and manifest.json. Exit codes: 0
    /// written and verified, 2 invalid configuration (file and JSON path named) or
    /// I/O error.
    Run(RunArgs),
    /// Check a suite's directory against its manifest (as `evident bench verify`).
    ///
    /// Exit codes: 0 intact, 1 some file changed, missing or added, 2 no readable
    /// manifest.
    Verify(crate::cmd::bench::VerifyArgs),
}

#[derive(clap::Args)]
pub struct RunArgs {
    /// The suite configuration (JSON: suite_id, generated_at, scenarios,
    /// contract {contract_id, path, content}).
    #[arg(long, value_name = "FILE")]
    pub config: String,
    /// Where to write the suite (must not exist, or be empty).
    #[arg(long, value_name = "DIR", required_unless_present = "dry_run")]
    pub output: Option<PathBuf>,
    /// One scenario instead of the configuration's list, or `all`.
    #[arg(long, value_name = "NAME|all", default_value = "all", value_parser = scenario_names())]
    pub scenario: String,
    /// Print the resolved suite without creating any file.
    #[arg(long)]
    pub dry_run: bool,
    /// Print the result as JSON.
    #[arg(long)]
    pub json: bool,
}

fn scenario_names() -> clap::builder::PossibleValuesParser {
    clap::builder::PossibleValuesParser::new(std::iter::once("all").chain(SANDBOX_SCENARIOS))
}

pub fn run(command: Command) -> anyhow::Result<u8> {
    match command {
        Command::Run(a) => run_suite(a),
        Command::Verify(a) => crate::cmd::bench::verify(&a.dir, a.json),
    }
}

fn run_suite(a: RunArgs) -> anyhow::Result<u8> {
    let bytes = crate::input::read_limited(&a.config)?;
    let mut cfg = SandboxConfig::parse(&a.config, &bytes)?;
    if a.scenario != "all" {
        cfg = cfg.only(&a.scenario)?;
    }
    if a.dry_run {
        let v = serde_json::json!({
            "suite_id": cfg.suite_id,
            "config_digest": cfg.digest()?,
            "contract_id": cfg.contract.contract_id,
            "path": cfg.contract.path,
            "scenarios": cfg.scenarios,
        });
        if a.json {
            println!("{}", serde_json::to_string_pretty(&v)?);
        } else {
            println!(
                "sandbox suite {}: contract {} writes {}; scenarios: {} (config digest {})",
                cfg.suite_id,
                cfg.contract.contract_id,
                cfg.contract.path,
                cfg.scenarios.join(", "),
                cfg.digest()?
            );
        }
        return Ok(exit::OK);
    }
    let Some(out) = &a.output else {
        anyhow::bail!("--output DIR is required (unless --dry-run)");
    };
    let r = sandbox::run(&cfg, out)?;
    if a.json {
        println!("{}", serde_json::to_string_pretty(&r)?);
        return Ok(exit::OK);
    }
    println!(
        "sandbox suite {}: {} scenarios, {} VERIFIED_COMPLETE, {} FAILED, {} UNVERIFIED; false-completion rate {:.3}",
        r.suite_id,
        r.total_scenarios,
        r.verified_complete,
        r.failed,
        r.unverified,
        r.false_completion_rate
    );
    for s in &r.scenarios {
        let claim = if s.completion_claimed {
            "claimed"
        } else {
            "not claimed"
        };
        let tool = if s.reported_success {
            "tool says success"
        } else {
            "tool says failure"
        };
        println!(
            "  {:<22} {:<18} {claim}, {tool}, file {}",
            s.scenario_id,
            s.status,
            if s.matches_contract {
                "matches"
            } else {
                "does not match"
            }
        );
        if let Some(r) = &s.refusal {
            println!("  {:<22} refused: {r}", "");
        }
    }
    println!(
        "written to {} ({} files in the manifest, verified)",
        r.output_dir.display(),
        r.manifest_files
    );
    Ok(exit::OK)
}
