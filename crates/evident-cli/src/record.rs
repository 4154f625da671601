//! Putting decisions on record (the ledger) and reading trust lists, shared by
//! `verify` and `gate`.

use std::path::{Path, PathBuf};

use anyhow::anyhow;
use evident_format::Warning;
use evident_ledger::sign::{Key, TrustList};
use evident_rules::Verdict;
use serde_json::Value;

/// Where (and whether) a decision is recorded.
#[derive(clap::Args, Debug, Clone)]
pub struct RecordArgs {
    /// Do not append this decision to the ledger.
    #[arg(long)]
    pub no_record: bool,
    /// The ledger: a SQLite file path or `postgres://…` (default: $EVIDENT_LEDGER, else
    /// `.evident/ledger.db` in the current directory, created on first use). Keep it
    /// outside the agent's working tree.
    #[arg(long, value_name = "PATH|URL")]
    pub ledger: Option<String>,
    /// After recording, append a checkpoint of the ledger's head (its record count and
    /// hash, signed with --key) to this file, kept where the ledger's writers cannot
    /// rewrite it; `evident ledger verify --checkpoint` then detects a truncated tail
    /// or an older copy restored.
    #[arg(long, value_name = "FILE", requires = "key")]
    pub checkpoint: Option<PathBuf>,
}

/// Appends the decision to the ledger unless `--no-record`, the record's hash signed
/// with `key` when given (and a checkpoint written with `--checkpoint`). A decision
/// that cannot be recorded is an error (exit 2): a verdict nobody can look up later
/// cannot be audited. The claim is taken by value: a large one is not copied.
pub fn record(
    args: &RecordArgs,
    kind: &str,
    mut claim: Value,
    contract: Option<&Value>,
    verdict: &Verdict,
    key: Option<&Key>,
) -> anyhow::Result<()> {
    if args.no_record {
        return Ok(());
    }
    let ledger = evident_ledger::open(args.ledger.as_deref()).map_err(|e| anyhow!("{e}"))?;
    if let Some(obj) = claim.as_object_mut() {
        obj.remove("verdict");
    }
    let task_id = claim
        .pointer("/task/id")
        .and_then(Value::as_str)
        .map(str::to_string);
    let record = ledger
        .append_signed(
            evident_ledger::NewEntry {
                kind: kind.to_string(),
                task_id,
                state: verdict.state.as_str().to_string(),
                claim,
                contract: contract.cloned(),
                verdict: serde_json::to_value(verdict)?,
            },
            key,
        )
        .map_err(|e| anyhow!("{e}"))?;
    let signed = key.map_or(String::new(), |k| format!(", signed by {}", k.id()));
    eprintln!(
        "recorded as #{} in {} ({}{signed})",
        record.id,
        ledger.location(),
        record.hash
    );
    if let (Some(path), Some(key)) = (&args.checkpoint, key) {
        let cp = evident_ledger::Checkpoint::sign(ledger.location(), record.id, &record.hash, key);
        evident_ledger::attest::append_checkpoint(path, &cp).map_err(|e| anyhow!("{e}"))?;
    }
    Ok(())
}

/// Warnings (also printed on stderr) for a ledger, checkpoint file or signing key that
/// lies inside `root`, the contract root where the agent can write: an agent that can
/// write the ledger can append to it or cut its tail, one that can write the
/// checkpoint file can roll it back with the ledger, and one that can read the key can
/// sign as the gate.
pub fn placement_warnings(args: &RecordArgs, key: Option<&Path>, root: &Path) -> Vec<Warning> {
    let mut out = Vec::new();
    let mut warn = |path: &str, message: String| {
        eprintln!("warning: {message}");
        out.push(Warning {
            path: path.to_string(),
            pos: None,
            message,
        });
    };
    if !args.no_record
        && let Some(ledger) = evident_ledger::sqlite_path(args.ledger.as_deref())
        && inside(&ledger, root)
    {
        warn(
            "ledger",
            format!(
                "the ledger {} lies inside the contract root {}, where the agent can write: it could append records or remove them; put the ledger outside the working tree (--ledger, $EVIDENT_LEDGER) or in PostgreSQL with an append-only role (docs/ledger.md)",
                ledger.display(),
                root.display()
            ),
        );
    }
    if let Some(cp) = &args.checkpoint
        && inside(cp, root)
    {
        warn(
            "checkpoint",
            format!(
                "the checkpoint file {} lies inside the contract root {}, where the agent can write: it could roll it back together with the ledger; keep it where only the gate can write",
                cp.display(),
                root.display()
            ),
        );
    }
    if let Some(k) = key
        && inside(k, root)
    {
        warn(
            "key",
            format!(
                "the signing key {} lies inside the contract root {}, where the agent can read it and sign as the gate; keep it outside the working tree",
                k.display(),
                root.display()
            ),
        );
    }
    out
}

/// Is `path` (which need not exist yet) inside `root` (canonical)? Relative paths are
/// taken from the current directory; symbolic links in the existing part are followed.
fn inside(path: &Path, root: &Path) -> bool {
    let abs = if path.is_absolute() {
        path.to_path_buf()
    } else {
        match std::env::current_dir() {
            Ok(cwd) => cwd.join(path),
            Err(_) => return false,
        }
    };
    // Canonicalize the longest existing ancestor, then add back the rest.
    let mut existing = abs.as_path();
    let mut rest = Vec::new();
    loop {
        if let Ok(real) = existing.canonicalize() {
            let mut full = real;
            for part in rest.iter().rev() {
                full.push(part);
            }
            return full.starts_with(root);
        }
        match (existing.parent(), existing.file_name()) {
            (Some(parent), Some(name)) => {
                rest.push(name.to_os_string());
                existing = parent;
            }
            _ => return abs.starts_with(root),
        }
    }
}

/// The trust list a contract embeds, if any.
pub fn trust_list(
    entries: &[evident_gate::contract::TrustedVerifier],
) -> anyhow::Result<Option<TrustList>> {
    if entries.is_empty() {
        return Ok(None);
    }
    let value = serde_json::json!({ "verifiers": entries });
    TrustList::from_value(&value)
        .map(Some)
        .map_err(|e| anyhow!("contract trust list: {e}"))
}
