//! `evident eval`: evaluate recorded agent traces in bulk (seed 001). The work is in
//! `evident_eval::run`; this module only maps arguments.

use std::path::PathBuf;

use evident_eval::adapt::Format;
use evident_eval::engine::Mode;
use evident_eval::run::{EvalRequest, eval, input_size};

use crate::stderr_hooks::StderrHooks;

/// Arguments of `evident eval`.
///
/// Reads case JSONL (one case per line) and prints each case's status: VERIFIED_COMPLETE,
/// PARTIAL, UNVERIFIED or FAILED. The first bad line stops the run with PATH:LINE and exit
/// code 2. See docs/eval.md.
#[derive(clap::Args)]
pub struct Args {
    /// A case JSONL file, or - for standard input. With --adapter: trace files and
    /// directories (a directory contributes its *.json files).
    #[arg(value_name = "CASES.jsonl|-", default_value = "-")]
    pub inputs: Vec<PathBuf>,
    /// Print the result objects as one indented JSON array.
    #[arg(long, group = "mode")]
    pub json: bool,
    /// Print one compact result object per line, as each chunk finishes.
    #[arg(long, group = "mode")]
    pub jsonl: bool,
    /// Print claim-quality metrics only (case ids must be unique).
    #[arg(long, group = "mode")]
    pub metrics: bool,
    /// Report every bad line on stderr and evaluate the rest (exit code 2 at the end).
    #[arg(long)]
    pub keep_going: bool,
    /// Worker threads (default: one per core; at most 1024).
    #[arg(long, value_name = "N", default_value_t = 0, value_parser = thread_count)]
    pub threads: usize,
    /// Read trace files through this adapter instead of case JSONL.
    #[arg(long, value_name = "FORMAT", value_parser = format_names(), requires = "requirements")]
    pub adapter: Option<String>,
    /// The owner's requirements for traces read with --adapter: a JSON array of
    /// {action, evidence_fields} or the object form {"requirements": [...], "writes": [...]}.
    #[arg(long, value_name = "FILE", requires = "adapter")]
    pub requirements: Option<PathBuf>,
    /// openai-chat: a tool result whose content starts with TEXT is a failed call
    /// (repeatable; without it every result is a success).
    #[arg(long, value_name = "TEXT", requires = "adapter", value_parser = error_prefix)]
    pub error_prefix: Vec<String>,
    /// openai-chat: whether the agent claimed completion, when the trace does not record
    /// it (never read from the agent's words).
    #[arg(long, value_name = "true|false", requires = "adapter")]
    pub claimed: Option<bool>,
    /// Never draw the progress line (it is drawn only when stderr is a terminal).
    #[arg(long)]
    pub no_progress: bool,
}

/// `--threads` is not a number from 0 to [`evident_eval::engine::MAX_THREADS`].
#[derive(Debug, thiserror::Error)]
#[error("expected a number of threads from 0 (one per core) to {max}")]
struct BadThreads {
    max: usize,
}

/// 0 (one per core) to [`evident_eval::engine::MAX_THREADS`].
fn thread_count(s: &str) -> Result<usize, BadThreads> {
    let max = evident_eval::engine::MAX_THREADS;
    match s.parse::<usize>() {
        Ok(n) if n <= max => Ok(n),
        _ => Err(BadThreads { max }),
    }
}

pub(crate) fn error_prefix(s: &str) -> Result<String, evident_eval::adapt::AdaptError> {
    evident_eval::adapt::check_error_prefix(s).map(|_| s.to_owned())
}

pub(crate) fn format_names() -> clap::builder::PossibleValuesParser {
    clap::builder::PossibleValuesParser::new(Format::ALL.map(Format::name))
}

pub fn run(args: Args) -> anyhow::Result<u8> {
    let mode = match (args.json, args.jsonl, args.metrics) {
        (true, _, _) => Mode::Json,
        (_, true, _) => Mode::Jsonl,
        (_, _, true) => Mode::Metrics,
        _ => Mode::Plain,
    };
    let adapter = match (args.adapter, args.requirements) {
        (Some(name), Some(reqs)) => {
            let format =
                Format::parse(&name).ok_or_else(|| anyhow::anyhow!("unknown adapter {name}"))?;
            Some((format, reqs))
        }
        _ => None,
    };
    let req = EvalRequest {
        inputs: args.inputs,
        mode,
        keep_going: args.keep_going,
        threads: args.threads,
        adapter,
        adapt_options: evident_eval::adapt::AdaptOptions {
            error_prefixes: args.error_prefix,
            claimed: args.claimed,
        },
    };
    let stdout = std::io::stdout();
    let mut out = std::io::BufWriter::with_capacity(1 << 20, stdout.lock());
    let mut hooks = StderrHooks::new(!args.no_progress, input_size(&req));
    let finished = eval(&req, &mut out, &mut hooks);
    hooks.clear();
    // Exit 2 when the run finished but skipped bad lines or traces (--keep-going).
    Ok(if finished?.complete() { 0 } else { 2 })
}
