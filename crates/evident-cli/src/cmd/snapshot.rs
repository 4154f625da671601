//! `evident snapshot CONTRACT --out FILE [--key KEY]`: record, before the agent runs,
//! the hash of every item of the contract's `[[snapshot]]` sets, signed with the key
//! or else recorded in the ledger, for `evident gate --before FILE` to compare with
//! (docs/snapshots.md).

use crate::{hint, input};
use anyhow::{Context as _, anyhow};
use evident_gate::Contract;
use std::path::{Path, PathBuf};
use std::time::Duration;

/// Record the state a contract's [[snapshot]] sets hold now, before the agent runs.
///
/// Each row, key or file is stored as its target (from the snapshot's `target`
/// template) and the sha256 of its content — never its value. With --key (from
/// `evident key generate`) the file is signed; without, its hash is recorded in the
/// ledger (--ledger, $EVIDENT_LEDGER), which the gate reads. `evident gate --before
/// FILE` refuses a file that is signed by a key it does not trust for snapshots (its
/// own `--key` or the contract's [[snapshot_signer]]), unsigned and not recorded in its
/// ledger, taken for another contract, or older than `snapshot_max_age_s`. Keep the key
/// and the ledger where the agent cannot reach them.
///
/// Exit codes: 0 written, 2 invalid input or a set that could not be read.
#[derive(clap::Args)]
pub struct Args {
    /// The owner's contract (`.toml` or `.json`) with `[[snapshot]]` entries.
    pub contract: PathBuf,
    /// Where to write the snapshot (JSON).
    #[arg(long, value_name = "FILE")]
    pub out: PathBuf,
    /// Sign the snapshot with this key (from `evident key generate`). Without it, the
    /// snapshot's hash is recorded in the ledger instead.
    #[arg(long, value_name = "FILE")]
    pub key: Option<PathBuf>,
    /// The ledger that records an unsigned snapshot: a SQLite file path or `postgres://…`
    /// (default: $EVIDENT_LEDGER, else the current repository's ledger, outside its working
    /// tree, at $XDG_STATE_HOME/evident/ledgers/NAME-HASH/ledger.db; without XDG_STATE_HOME
    /// ~/.local/state/evident/…, on macOS ~/Library/Application Support/evident/…); the one
    /// the gate reads. Keep it where the agent cannot write.
    #[arg(long, value_name = "PATH|URL", conflicts_with = "key")]
    pub ledger: Option<String>,
    /// Directory that paths in the contract are relative to (default: the contract's
    /// directory).
    #[arg(long, value_name = "DIR")]
    pub root: Option<PathBuf>,
    /// Time limit for each set, in seconds.
    #[arg(long, default_value_t = 600.0, value_name = "SECONDS")]
    pub timeout: f64,
    /// Print a JSON summary (sets and item counts, never hashes or values).
    #[arg(long)]
    pub json: bool,
}

pub fn run(args: Args) -> anyhow::Result<u8> {
    let contract_name = args.contract.display().to_string();
    let bytes = input::read_limited(&contract_name)?;
    let contract = Contract::parse(&bytes, &contract_name).map_err(|e| {
        let hint = hint::contract_hint(
            &bytes,
            &contract_name,
            &e.message,
            "; snapshot reads the owner's contract: evident snapshot CONTRACT --out FILE",
        );
        hint::with_hint(e, hint)
    })?;
    if contract.contract.snapshots.is_empty() {
        return Err(anyhow!(
            "{contract_name}: the contract declares no [[snapshot]] (add one: id, source, target)"
        ));
    }
    let limit = Duration::try_from_secs_f64(args.timeout)
        .ok()
        .filter(|d| !d.is_zero())
        .ok_or_else(|| anyhow!("--timeout must be a positive number of seconds"))?;
    let key = match &args.key {
        Some(k) => Some(evident_sign::Key::load(k)?),
        None => None,
    };
    let root = match &args.root {
        Some(r) => r.clone(),
        None => args
            .contract
            .parent()
            .map(Path::to_path_buf)
            .filter(|p| !p.as_os_str().is_empty())
            .unwrap_or_else(|| PathBuf::from(".")),
    };
    let root = root
        .canonicalize()
        .with_context(|| format!("{}: the contract root does not exist", root.display()))?;
    let ctx = evident_probes::Context::from_process(root);
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()?;
    let doc = runtime
        .block_on(evident_gate::snapshot::take(
            &contract.contract,
            &ctx,
            limit,
            key.as_ref().map_or("evident-snapshot", |k| k.id()),
        ))
        .map_err(|e| {
            let mut scrub = evident_probes::Scrubber::default();
            for s in &contract.contract.snapshots {
                s.source.register_secrets(&ctx.env, &mut scrub);
            }
            anyhow!("{contract_name}: {}", scrub.scrub(&e.0))
        })?;
    drop(runtime);
    let mut doc = doc;
    let record = match &key {
        Some(k) => {
            evident_sign::attach_signature(&mut doc, k)?;
            None
        }
        None => Some(
            evident_pipeline::record_snapshot(&doc, args.ledger.as_deref())
                .context("cannot record the snapshot in the ledger")?,
        ),
    };
    let text = serde_json::to_string_pretty(&doc)? + "\n";
    std::fs::write(&args.out, text)
        .with_context(|| format!("{}: cannot write the snapshot", args.out.display()))?;
    let counts: Vec<(String, usize)> = doc["sets"]
        .as_object()
        .map(|m| {
            m.iter()
                .map(|(k, v)| (k.clone(), v.as_object().map_or(0, |o| o.len())))
                .collect()
        })
        .unwrap_or_default();
    if args.json {
        let sets: serde_json::Map<String, serde_json::Value> = counts
            .iter()
            .map(|(k, n)| (k.clone(), serde_json::json!({ "items": n })))
            .collect();
        println!(
            "{}",
            serde_json::to_string_pretty(&serde_json::json!({
                "out": args.out.display().to_string(),
                "taken_at": doc["taken_at"],
                "signed_by": key.as_ref().map(|k| k.id()),
                "recorded": record.as_ref().map(|(id, at)| serde_json::json!({ "id": id, "ledger": at })),
                "sets": sets,
            }))?
        );
    } else {
        for (k, n) in &counts {
            println!("snapshot {k}: {n} item(s)");
        }
        let how = match (&key, &record) {
            (Some(k), _) => format!("signed by {}", k.id()),
            (None, Some((id, at))) => format!("recorded in the ledger {at} as record #{id}"),
            (None, None) => "unsigned".into(),
        };
        println!(
            "written to {} ({how}); pass it to `evident gate --before` after the agent ran",
            args.out.display(),
        );
    }
    Ok(crate::exit::OK)
}
