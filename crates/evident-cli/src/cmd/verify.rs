//! `evident verify FILE|-`: recompute the verdict of a Completion Claim v0.1 document.

use crate::{input, report};
use anyhow::anyhow;
use evident_format::{Claim, OnUnverified, Policy};
use evident_rules::{Options, decide};
use serde_json::Value;

/// Recompute the verdict of a Completion Claim v0.1 document.
///
/// Any verdict written in the document is ignored. The document's own policy decides
/// the verdict unless --policy gives the owner's; the document's `on_unverified` never
/// lowers the exit code (the agent wrote it): unverified exits 3 unless
/// --on-unverified says otherwise. Exit codes: 0 verified (or unverified under
/// --on-unverified warn/record), 1 refuted, 3 unverified, 2 invalid input or usage.
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
    /// Needs --policy: a trust list means the owner is deciding.
    #[arg(long, value_name = "FILE")]
    pub trust: Option<std::path::PathBuf>,
    /// The owner's policy (a policy object: `requires`, `max_age_s`, `on_unverified`;
    /// JSON or TOML), replacing the document's.
    #[arg(long, value_name = "FILE")]
    pub policy: Option<std::path::PathBuf>,
    /// What an unverified verdict does to the exit code: block (exit 3), warn or record
    /// (exit 0). Overrides the --policy file's `on_unverified`.
    #[arg(long, value_name = "MODE")]
    pub on_unverified: Option<OnUnverifiedArg>,
    /// Sign the ledger record's hash with this key (from `evident key generate`), so
    /// `evident ledger verify --trust` can tell this record from one anyone else wrote.
    #[arg(long, value_name = "FILE")]
    pub key: Option<std::path::PathBuf>,
    /// Report a claim whose mutations are only partly covered as `partial` (an evident
    /// extension; exit 3 like unverified unless --on-unverified says otherwise).
    #[arg(long)]
    pub partial: bool,
    #[command(flatten)]
    pub record: crate::record::RecordArgs,
}

/// `--on-unverified`.
#[derive(Clone, Copy, clap::ValueEnum)]
pub enum OnUnverifiedArg {
    Block,
    Warn,
    Record,
}

impl From<OnUnverifiedArg> for OnUnverified {
    fn from(a: OnUnverifiedArg) -> Self {
        match a {
            OnUnverifiedArg::Block => OnUnverified::Block,
            OnUnverifiedArg::Warn => OnUnverified::Warn,
            OnUnverifiedArg::Record => OnUnverified::Record,
        }
    }
}

pub fn run(args: Args) -> anyhow::Result<u8> {
    if args.trust.is_some() && args.policy.is_none() {
        anyhow::bail!(
            "--trust needs --policy FILE: a trust list means the owner is deciding, so the owner's policy must replace the one the document carries\nhint: write the contract's [policy] as a file and pass it with --policy"
        );
    }
    let bytes = input::read_limited(&args.file)?;
    let name = if args.file == "-" {
        "<stdin>"
    } else {
        &args.file
    };
    let mut doc = Claim::parse(&bytes, name).map_err(|e| anyhow!("{e}"))?;
    let policy_source = match &args.policy {
        Some(path) => {
            let policy = load_policy(path)?;
            doc.claim.policy = Some(policy);
            format!(
                "from {} (the owner's), replacing the document's",
                path.display()
            )
        }
        None => "from the document (the agent's); its on_unverified does not lower the exit code"
            .to_string(),
    };
    drop(bytes); // a large claim is not held twice
    let key = match &args.key {
        Some(path) => Some(evident_ledger::sign::Key::load(path).map_err(|e| anyhow!("{e}"))?),
        None => None,
    };
    let decided_at = input::decision_time(args.now.as_deref())?;
    if args.partial {
        doc.claim.policy.get_or_insert_with(Policy::default).partial = Some(true);
    }
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
    if let (Some(obj), Some(p)) = (doc.raw.as_object_mut(), &doc.claim.policy)
        && args.policy.is_some()
    {
        obj.insert("policy".into(), serde_json::to_value(p)?);
    }
    if args.json {
        println!("{}", document_json(&doc.raw, &verdict, &warnings)?);
    } else {
        print!(
            "{}",
            report::render(&doc, &verdict, &warnings, &|_| Vec::new())
        );
        println!("policy    {policy_source}");
    }
    let raw = std::mem::take(&mut doc.raw);
    crate::record::record(&args.record, "verify", raw, None, &verdict, key.as_ref())?;
    // The document's own on_unverified is the agent's word: only the owner's policy
    // file or the command line may let an unverified claim through.
    let on_unverified = match (args.on_unverified, &args.policy) {
        (Some(a), _) => a.into(),
        (None, Some(_)) => doc
            .claim
            .policy
            .as_ref()
            .and_then(|p| p.on_unverified)
            .unwrap_or_default(),
        (None, None) => OnUnverified::Block,
    };
    Ok(report::exit_code(verdict.state, on_unverified))
}

/// Reads an owner's policy file (see [`evident_gate::contract::parse_policy`]).
pub fn load_policy(path: &std::path::Path) -> anyhow::Result<Policy> {
    let name = path.display().to_string();
    let bytes = input::read_limited(&name)?;
    evident_gate::contract::parse_policy(&bytes, &name).map_err(|e| anyhow!("{e}"))
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
