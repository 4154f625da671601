//! `evident adapt`: turn one agent trace into a canonical case (or a provenance
//! envelope). The work is in `evident_eval::run`; this module only maps arguments.

use std::path::PathBuf;

use evident_eval::adapt::Format;
use evident_eval::run::{AdaptRequest, adapt};

use crate::stderr_hooks::StderrHooks;

/// Arguments of `evident adapt`.
///
/// Formats: generic, openai (a tool_call/tool_result record list), anthropic (Messages API), openai-responses
/// (Responses API items), mcp (JSON-RPC tools/call log), otel (OTLP/JSON GenAI spans),
/// openai-chat (Chat Completions message lists), claude-code (session transcript or
/// stream-json JSONL; needs --claimed), codex (rollout or `codex exec --json` JSONL; needs
/// --claimed), atif (Harbor's trajectory format v1.0–v1.8; needs --claimed).
/// See docs/eval.md for each format and its success rule.
#[derive(clap::Args)]
pub struct Args {
    /// The trace format.
    #[arg(value_name = "FORMAT", value_parser = super::eval::format_names())]
    pub format: String,
    /// The trace file, or - for standard input.
    #[arg(value_name = "TRACE")]
    pub trace: PathBuf,
    /// The owner's requirements: a non-empty JSON array of {action, evidence_fields}, or
    /// the object form {"requirements": [...], "writes": [...]}.
    #[arg(value_name = "REQUIREMENTS")]
    pub requirements: PathBuf,
    /// A stable reference to the raw trace (a run id, a path in an artifact store).
    #[arg(long, value_name = "REF")]
    pub source_ref: String,
    /// Print the provenance envelope (sequence, source_event_id, source) instead of the case.
    #[arg(long)]
    pub envelope: bool,
    /// openai-chat: a tool result whose content starts with TEXT is a failed call
    /// (repeatable; without it every result is a success).
    #[arg(long, value_name = "TEXT", value_parser = super::eval::error_prefix)]
    pub error_prefix: Vec<String>,
    /// openai-chat, claude-code, codex, atif: whether the agent claimed completion, when
    /// the trace does not record it (never read from the agent's words).
    #[arg(long, value_name = "true|false")]
    pub claimed: Option<bool>,
    /// Print it on one line: a case line `evident eval -` reads (`adapt … --jsonl | evident
    /// eval -`). Without it the JSON is indented, as the reference implementation prints it.
    #[arg(long)]
    pub jsonl: bool,
    /// Accepted for symmetry with the other commands: the output is always JSON.
    #[arg(long)]
    pub json: bool,
}

pub fn run(args: Args) -> anyhow::Result<u8> {
    let format = Format::parse(&args.format)
        .ok_or_else(|| anyhow::anyhow!("unknown format {}", args.format))?;
    let req = AdaptRequest {
        format,
        trace: args.trace,
        requirements: args.requirements,
        source_ref: args.source_ref,
        envelope: args.envelope,
        jsonl: args.jsonl,
        adapt_options: evident_eval::adapt::AdaptOptions {
            error_prefixes: args.error_prefix,
            claimed: args.claimed,
        },
    };
    let stdout = std::io::stdout();
    adapt(&req, &mut stdout.lock(), &mut StderrHooks::new(false, None))?;
    Ok(0)
}
