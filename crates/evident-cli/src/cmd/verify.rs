//! `evident verify FILE|-`: recompute the verdict of a Completion Claim v0.1 document.

use crate::{hint, input};
use evident_format::{Claim, OnUnverified, Policy};

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
    /// Also write the decision as Markdown to this file (for a CI job summary, e.g.
    /// `$GITHUB_STEP_SUMMARY`).
    #[arg(long, value_name = "FILE")]
    pub markdown: Option<std::path::PathBuf>,
    #[command(flatten)]
    pub record: crate::output::RecordArgs,
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
        return Err(hint::with_hint(
            "--trust needs --policy FILE: a trust list means the owner is deciding, so the owner's policy must replace the one the document carries",
            Some("write the contract's [policy] as a file (or pass the contract itself) with --policy".into()),
        ));
    }
    let bytes = input::read_limited(&args.file)?;
    let name = if args.file == "-" {
        "<stdin>"
    } else {
        &args.file
    };
    // The file is dropped once checked, before typing: a large claim is not held
    // twice (its compact text and typed view are what the decision needs).
    let checked = evident_format::json::check(&bytes).map_err(|e| {
        let hint = hint::looks_like_contract(&bytes).map(|table| {
            format!(
                "{name} looks like a contract (it has {table}), not a claim: decide a claim under it with evident gate {name} CLAIM, or evident verify CLAIM --policy {name}"
            )
        });
        hint::with_hint(
            evident_format::Error {
                file: name.to_string(),
                path: e.path,
                pos: Some(e.pos),
                message: e.message,
            },
            hint,
        )
    })?;
    drop(bytes);
    let document = Claim::from_checked(checked, name)?;
    let policy = match &args.policy {
        Some(path) => Some((path.display().to_string(), load_policy(path)?)),
        None => None,
    };
    let trust = match &args.trust {
        Some(path) => Some(evident_sign::TrustList::load(path)?),
        None => None,
    };
    let key = match &args.key {
        Some(path) => Some(evident_sign::Key::load(path)?),
        None => None,
    };
    let now = match &args.now {
        Some(_) => Some(input::decision_time(args.now.as_deref())?),
        None => None,
    };
    let decision = evident_pipeline::verify(evident_pipeline::VerifyRequest {
        document,
        now,
        trust,
        policy,
        on_unverified: args.on_unverified.map(Into::into),
        partial: args.partial,
        recording: args.record.recording(),
        key: key.as_ref(),
    });
    crate::output::show(
        decision,
        &crate::output::Outputs {
            json: args.json,
            junit: None,
            markdown: args.markdown.clone(),
            clock_now: args.now.is_none(),
        },
    )
}

/// Reads an owner's policy file (see [`evident_gate::contract::parse_policy`]).
pub fn load_policy(path: &std::path::Path) -> anyhow::Result<Policy> {
    let name = path.display().to_string();
    let bytes = input::read_limited(&name)?;
    evident_gate::contract::parse_policy(&bytes, &name).map_err(|e| {
        let hint = hint::did_you_mean(&e.message);
        hint::with_hint(e, hint)
    })
}
