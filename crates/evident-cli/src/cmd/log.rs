//! `evident log`: list recorded decisions from the ledger.

use crate::exit;
use anyhow::Context as _;

/// Arguments of `evident log`.
#[derive(clap::Args)]
pub struct Args {
    /// Only records with this verdict state (verified, unverified, refuted, …).
    #[arg(long, value_name = "STATE")]
    state: Option<String>,
    /// Only records of this task id.
    #[arg(long, value_name = "TASK")]
    task: Option<String>,
    /// Only records of this kind (verify, gate, …).
    #[arg(long, value_name = "KIND")]
    kind: Option<String>,
    /// Only records at or after this time: RFC 3339, a date (2026-08-27) or an age (30m, 2h, 7d).
    #[arg(long, value_name = "TIME")]
    since: Option<String>,
    /// Only records before this time (same forms as --since).
    #[arg(long, value_name = "TIME")]
    until: Option<String>,
    /// Show at most N records, the newest.
    #[arg(long, value_name = "N")]
    limit: Option<u64>,
    /// Print a JSON array (each record without its documents; `evident show` has them).
    #[arg(long)]
    json: bool,
    /// The ledger: a SQLite file or postgres://… (default: $EVIDENT_LEDGER, else the
    /// current repository's ledger, outside its working tree, at
    /// $XDG_STATE_HOME/evident/ledgers/NAME-HASH/ledger.db; without XDG_STATE_HOME
    /// ~/.local/state/evident/…, on macOS ~/Library/Application Support/evident/…).
    #[arg(long, value_name = "PATH|URL")]
    ledger: Option<String>,
}

pub fn run(a: Args) -> anyhow::Result<u8> {
    let now = time::OffsetDateTime::now_utc();
    let bound = |flag: &str, v: &Option<String>| -> anyhow::Result<Option<String>> {
        v.as_deref()
            .map(|t| evident_ledger::parse_time_bound(t, now).with_context(|| flag.to_string()))
            .transpose()
    };
    let filter = evident_ledger::Filter {
        state: a.state,
        task_id: a.task,
        kind: a.kind,
        since: bound("--since", &a.since)?,
        until: bound("--until", &a.until)?,
        limit: a.limit,
        newest_first: a.limit.is_some(),
        ..Default::default()
    };
    let ledger = match evident_ledger::open_existing(a.ledger.as_deref()) {
        Ok(l) => l,
        Err(e) if e.kind == evident_ledger::ErrorKind::Missing => {
            if a.json {
                println!("[]");
            } else {
                eprintln!("no records: {e}");
            }
            return Ok(exit::OK);
        }
        Err(e) => return Err(e.into()),
    };
    let mut records = ledger.list_summaries(&filter)?;
    records.sort_by_key(|r| r.id);
    if a.json {
        let items: Vec<serde_json::Value> = records.iter().map(|r| r.to_json()).collect();
        println!("{}", serde_json::to_string_pretty(&items)?);
        return Ok(exit::OK);
    }
    if records.is_empty() {
        eprintln!("no matching records in ledger {}", ledger.location());
        return Ok(exit::OK);
    }
    for r in &records {
        println!(
            "#{:<6} {}  {:<7} {:<10} {}  {}",
            r.id,
            r.time,
            evident_pipeline::render::shown(&r.kind),
            evident_pipeline::render::shown(&r.state),
            r.hash.get(..12).unwrap_or(&r.hash),
            // The task id is the agent's text: escaped, so it cannot redraw the line.
            evident_pipeline::render::shown(r.task_id.as_deref().unwrap_or("-"))
        );
    }
    Ok(exit::OK)
}
