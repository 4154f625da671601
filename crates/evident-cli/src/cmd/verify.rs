//! `evident verify FILE|-`: recompute the verdict of a Completion Claim v0.1 document.

use crate::{input, report};
use anyhow::anyhow;
use evident_format::Claim;
use evident_rules::{Options, decide};
use serde_json::Value;

/// Recompute the verdict of a Completion Claim v0.1 document.
///
/// Any verdict written in the document is ignored. Exit codes: 0 verified (or
/// unverified under on_unverified warn/record), 1 refuted, 3 unverified under block
/// (the default), 2 invalid input.
#[derive(clap::Args)]
pub struct Args {
    /// The claim document (JSON), or `-` for stdin.
    pub file: String,
    /// Decision time, RFC 3339 (default: the system clock).
    #[arg(long, value_name = "RFC3339")]
    pub now: Option<String>,
    /// Print the whole document with the recomputed verdict as JSON.
    #[arg(long)]
    pub json: bool,
    /// A trust list (`{"verifiers": [{"id", "public_key"}]}`, JSON or TOML). With it,
    /// evidence that calls itself independent counts only when signed by a listed key
    /// over exactly its content; otherwise it is treated as self-attested.
    #[arg(long, value_name = "FILE")]
    pub trust: Option<std::path::PathBuf>,
    #[command(flatten)]
    pub record: crate::record::RecordArgs,
}

pub fn run(args: Args) -> anyhow::Result<u8> {
    let bytes = input::read_limited(&args.file)?;
    let name = if args.file == "-" {
        "<stdin>"
    } else {
        &args.file
    };
    let doc = Claim::parse(&bytes, name).map_err(|e| anyhow!("{e}"))?;
    let decided_at = input::decision_time(args.now.as_deref())?;
    let options = match &args.trust {
        None => Options::default(),
        Some(path) => {
            let trust = evident_ledger::sign::TrustList::load(path).map_err(|e| anyhow!("{e}"))?;
            let items = doc.raw.get("evidence").and_then(Value::as_array);
            let binding = doc.claim.binding();
            Options {
                authenticated: Some(
                    items
                        .map(|a| {
                            a.iter()
                                .map(|item| {
                                    evident_ledger::sign::authenticate(item, &trust).is_ok()
                                        && evident_gate::run::bound_here(item, &binding)
                                })
                                .collect()
                        })
                        .unwrap_or_default(),
                ),
            }
        }
    };
    let verdict = decide(&doc.claim, &decided_at, &options);
    let warnings = report::decision_warnings(&doc, &verdict, options.authenticated.is_some());
    if args.json {
        println!("{}", document_json(&doc.raw, &verdict, &warnings)?);
    } else {
        print!(
            "{}",
            report::render(&doc, &verdict, &warnings, &|_| Vec::new())
        );
    }
    crate::record::record(&args.record, "verify", &doc.raw, None, &verdict)?;
    let on_unverified = doc
        .claim
        .policy
        .as_ref()
        .and_then(|p| p.on_unverified)
        .unwrap_or_default();
    Ok(report::exit_code(verdict.state, on_unverified))
}

/// The document as given, with `verdict` replaced by the recomputed one (plus the
/// warnings, so a JSON reader sees what a person would).
pub fn document_json(
    raw: &Value,
    verdict: &evident_rules::Verdict,
    warnings: &[evident_format::Warning],
) -> anyhow::Result<String> {
    let mut out = raw.clone();
    let mut v = serde_json::to_value(verdict)?;
    if let Some(obj) = v.as_object_mut() {
        obj.insert("warnings".into(), serde_json::to_value(warnings)?);
    }
    if let Some(obj) = out.as_object_mut() {
        obj.insert("verdict".into(), v);
    }
    Ok(serde_json::to_string_pretty(&out)?)
}
