//! `evident bench run|verify|report`: seed 001's failure-injection benchmark. Thin:
//! everything lives in `evident_bench`.

use std::path::{Path, PathBuf};

use evident_bench::config::BenchConfig;
use evident_bench::{bench, manifest, report};

use crate::exit;

/// Subcommands of `evident bench`.
#[derive(clap::Subcommand)]
pub enum Command {
    /// Run the failure-injection benchmark: three scripted policies (baseline,
    /// evidence_contract, verifier_feedback) × eight injected tool failures ×
    /// repetitions, each run's trace judged by the evaluator.
    ///
    /// Deterministic: the same configuration writes byte-identical files. The output
    /// directory must be new or empty; it receives config.json, raw_traces/ (what the
    /// tool reported), envelopes/, cases.jsonl, evaluations.jsonl, runs.jsonl,
    /// metrics.json, report.md and manifest.json (SHA-256 of every file), which is
    /// checked before the command ends. Exit codes: 0 written and verified, 2 invalid
    /// configuration (the message names the file and the JSON path) or I/O error.
    Run(RunArgs),
    /// Check a run's directory against its manifest: every listed file present with
    /// its SHA-256, no file the manifest does not list, no symlink, and the stored
    /// configuration hashing to the recorded digest. Reads sandbox suites too.
    ///
    /// Exit codes: 0 intact, 1 some file changed, missing or added (each is listed),
    /// 2 no readable manifest.
    Verify(VerifyArgs),
    /// Write a report for people from a verified run: Markdown and an SVG chart of the
    /// false-completion rate per policy with its counts. Written outside the run
    /// (default: DIR-report beside it), since a file added to the run fails verify.
    ///
    /// Exit codes: 0 written, 1 the run does not verify (no report), 2 invalid input.
    Report(ReportArgs),
}

#[derive(clap::Args)]
pub struct RunArgs {
    /// The benchmark configuration (JSON: experiment_id, seed, repetitions, groups,
    /// scenarios, task, requirements, generated_at).
    #[arg(long, value_name = "FILE")]
    pub config: String,
    /// Where to write the run (must not exist, or be empty).
    #[arg(long, value_name = "DIR", required_unless_present = "dry_run")]
    pub output: Option<PathBuf>,
    /// Print the run matrix (run ids and per-run seeds) without writing anything.
    #[arg(long)]
    pub dry_run: bool,
    /// Print the result as JSON.
    #[arg(long)]
    pub json: bool,
}

#[derive(clap::Args)]
pub struct VerifyArgs {
    /// The directory `evident bench run` (or `evident sandbox run`) wrote.
    pub dir: PathBuf,
    /// Print the result as JSON.
    #[arg(long)]
    pub json: bool,
}

#[derive(clap::Args)]
pub struct ReportArgs {
    /// The directory `evident bench run` wrote.
    pub dir: PathBuf,
    /// Where to write report.md and false-completion-rate.svg (default: DIR-report).
    #[arg(long, value_name = "OUT")]
    pub output: Option<PathBuf>,
    /// Print what was written as JSON.
    #[arg(long)]
    pub json: bool,
}

pub fn run(command: Command) -> anyhow::Result<u8> {
    match command {
        Command::Run(a) => run_bench(a),
        Command::Verify(a) => verify(&a.dir, a.json),
        Command::Report(a) => write_report(a),
    }
}

fn run_bench(a: RunArgs) -> anyhow::Result<u8> {
    let bytes = crate::input::read_limited(&a.config)?;
    let cfg = BenchConfig::parse(&a.config, &bytes)?;
    if a.dry_run {
        let plan = bench::plan(&cfg);
        if a.json {
            let v = serde_json::json!({
                "experiment_id": cfg.experiment_id,
                "config_digest": cfg.digest()?,
                "runner": bench::RUNNER,
                "runner_version": bench::RUNNER_VERSION,
                "runs": plan,
            });
            println!("{}", serde_json::to_string_pretty(&v)?);
        } else {
            println!(
                "benchmark {}: {} runs (config digest {})",
                cfg.experiment_id,
                plan.len(),
                cfg.digest()?
            );
            for p in &plan {
                println!("  {}  seed {}", p.run_id, p.seed);
            }
        }
        return Ok(exit::OK);
    }
    let Some(out) = &a.output else {
        anyhow::bail!("--output DIR is required (unless --dry-run)");
    };
    let r = bench::run(&cfg, out)?;
    if a.json {
        println!("{}", serde_json::to_string_pretty(&r)?);
        return Ok(exit::OK);
    }
    println!(
        "benchmark {}: {} runs, {} with an injected failure, {} recovered",
        r.experiment_id, r.total_runs, r.injected_failure_runs, r.recovered_failure_runs
    );
    println!(
        "  {:<20} {:>5} {:>8} {:>6}  false-completion rate",
        "policy", "runs", "claimed", "false"
    );
    for g in &r.groups {
        println!(
            "  {:<20} {:>5} {:>8} {:>6}  {}",
            g.group,
            g.runs,
            g.claimed,
            g.false_completion,
            report::rate_label(g)
        );
    }
    println!(
        "written to {} ({} files in the manifest, verified)",
        r.output_dir.display(),
        r.manifest_files
    );
    Ok(exit::OK)
}

/// Shared with `evident sandbox verify`.
pub fn verify(dir: &Path, json: bool) -> anyhow::Result<u8> {
    let v = manifest::verify(dir)?;
    if json {
        println!("{}", serde_json::to_string_pretty(&v)?);
    } else if v.ok {
        println!(
            "{} {} in {}: intact ({} files match the manifest, nothing else is there)",
            v.kind,
            v.id,
            dir.display(),
            v.listed
        );
    } else {
        println!(
            "{} {} in {}: NOT intact ({} problem(s))",
            v.kind,
            v.id,
            dir.display(),
            v.problems.len()
        );
        for p in &v.problems {
            println!("  {}: {}", p.path, p.detail);
        }
    }
    Ok(if v.ok {
        exit::OK
    } else {
        exit::MANIFEST_MISMATCH
    })
}

fn write_report(a: ReportArgs) -> anyhow::Result<u8> {
    // A run that does not verify gets no report: say which files, exit 1.
    let check = manifest::verify(&a.dir)?;
    if !check.ok {
        verify(&a.dir, a.json)?;
        eprintln!("error: the run does not verify, so no report was written");
        return Ok(exit::MANIFEST_MISMATCH);
    }
    let out = a
        .output
        .clone()
        .unwrap_or_else(|| report::default_output(&a.dir));
    let w = report::write(&a.dir, &out)?;
    if a.json {
        println!("{}", serde_json::to_string_pretty(&w)?);
    } else {
        println!("wrote {} and {}", w.markdown.display(), w.chart.display());
        for g in &w.groups {
            println!("  {:<20} {}", g.group, report::rate_label(g));
        }
    }
    Ok(exit::OK)
}
