//! Putting decisions on record (the ledger) and reading trust lists, shared by
//! `verify` and `gate`.

use anyhow::anyhow;
use evident_ledger::sign::TrustList;
use evident_rules::Verdict;
use serde_json::Value;

/// Where (and whether) a decision is recorded.
#[derive(clap::Args, Debug, Clone)]
pub struct RecordArgs {
    /// Do not append this decision to the ledger.
    #[arg(long)]
    pub no_record: bool,
    /// The ledger: a SQLite file path or `postgres://…` (default: $EVIDENT_LEDGER, else
    /// `.evident/ledger.db` in the current directory, created on first use).
    #[arg(long, value_name = "PATH|URL")]
    pub ledger: Option<String>,
}

/// Appends the decision to the ledger unless `--no-record`. A decision that cannot be
/// recorded is an error (exit 2): a verdict nobody can look up later cannot be audited.
pub fn record(
    args: &RecordArgs,
    kind: &str,
    claim: &Value,
    contract: Option<&Value>,
    verdict: &Verdict,
) -> anyhow::Result<()> {
    if args.no_record {
        return Ok(());
    }
    let ledger = evident_ledger::open(args.ledger.as_deref()).map_err(|e| anyhow!("{e}"))?;
    let mut claim = claim.clone();
    if let Some(obj) = claim.as_object_mut() {
        obj.remove("verdict");
    }
    let record = ledger
        .append(evident_ledger::NewEntry {
            kind: kind.to_string(),
            task_id: claim
                .pointer("/task/id")
                .and_then(Value::as_str)
                .map(str::to_string),
            state: verdict.state.as_str().to_string(),
            claim,
            contract: contract.cloned(),
            verdict: serde_json::to_value(verdict)?,
        })
        .map_err(|e| anyhow!("{e}"))?;
    eprintln!(
        "recorded as #{} in {} ({})",
        record.id,
        ledger.location(),
        record.hash
    );
    Ok(())
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
