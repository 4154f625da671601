//! `evident claim --from AGENT TRANSCRIPT`: the Completion Claim built from what git
//! shows changed, cross-checked with the agent's transcript.

use std::path::PathBuf;

use evident_hooks::agent::TranscriptFormat;

/// Build a Completion Claim from observation: every path differing between the base
/// and the working tree (committed or not, untracked included, ignored excluded) is a
/// `code_change` mutation; the transcript gives the task and the claimed outcome, and
/// what it shows written but git does not (and the reverse) is listed under
/// `x_observed.findings`. git runs hardened (no repository config program runs).
#[derive(clap::Args)]
pub struct Args {
    /// The transcript's format: claude-code, codex or atif.
    #[arg(long = "from", value_name = "FORMAT", value_parser = parse_format)]
    pub from: TranscriptFormat,
    /// The transcript (Claude Code session JSONL or stream-json; Codex rollout JSONL or
    /// `codex exec --json`; an ATIF trajectory JSON).
    pub transcript: PathBuf,
    /// The repository (default: the current directory).
    #[arg(long, value_name = "DIR", default_value = ".")]
    pub repo: PathBuf,
    /// The base revision (default: the merge-base of HEAD with the default branch).
    #[arg(long, value_name = "REV")]
    pub base: Option<String>,
}

/// `--from` names no transcript format evident reads.
#[derive(Debug, thiserror::Error)]
#[error("unknown transcript format {0:?}; expected claude-code, codex or atif")]
struct UnknownFormat(String);

fn parse_format(s: &str) -> Result<TranscriptFormat, UnknownFormat> {
    match s {
        "claude-code" => Ok(TranscriptFormat::ClaudeCode),
        "codex" => Ok(TranscriptFormat::Codex),
        "atif" => Ok(TranscriptFormat::Atif),
        other => Err(UnknownFormat(other.to_string())),
    }
}

pub fn run(args: Args) -> anyhow::Result<u8> {
    let env = |k: &str| std::env::var(k).ok();
    let claim = evident_hooks::claim_from(
        args.from,
        &args.transcript,
        &args.repo,
        args.base.as_deref(),
        &env,
    )?;
    println!("{}", serde_json::to_string_pretty(&claim)?);
    Ok(crate::exit::OK)
}
