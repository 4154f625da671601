//! `evident show ID`: one recorded decision with its documents.

use crate::exit;

/// Arguments of `evident show`.
#[derive(clap::Args)]
pub struct Args {
    /// The record: its id (42 or #42) or a prefix of its hash (6+ hex digits).
    #[arg(value_name = "ID")]
    id: String,
    /// Print the record as JSON (exactly what `evident ledger export` writes for it).
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
    let ledger = evident_ledger::open_existing(a.ledger.as_deref())?;
    let r = ledger.find(&a.id)?;
    if a.json {
        println!("{}", serde_json::to_string_pretty(&r.to_json())?);
        return Ok(exit::OK);
    }
    println!("record     #{}", r.id);
    println!("time       {}", r.time);
    let shown = evident_pipeline::render::shown;
    println!("kind       {}", shown(&r.kind));
    println!("task       {}", shown(r.task_id.as_deref().unwrap_or("-")));
    println!("state      {}", shown(&r.state));
    println!("claim      {}", r.claim_digest);
    println!("contract   {}", r.contract_digest.as_deref().unwrap_or("-"));
    println!("prev_hash  {}", r.prev_hash);
    println!("hash       {}", r.hash);
    println!("\nverdict:\n{}", serde_json::to_string_pretty(&r.verdict)?);
    println!(
        "\nclaim (secrets removed):\n{}",
        serde_json::to_string_pretty(&r.claim)?
    );
    if let Some(c) = &r.contract {
        println!(
            "\ncontract (secrets removed):\n{}",
            serde_json::to_string_pretty(c)?
        );
    }
    Ok(exit::OK)
}
