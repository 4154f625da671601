//! `evident ledger verify` and `evident ledger export`.

use anyhow::Context as _;
use std::io::Write as _;
use std::path::PathBuf;

use crate::exit;

/// Subcommands of `evident ledger`.
#[derive(clap::Subcommand)]
pub enum Command {
    /// Recompute every link of the chain and report the first broken record.
    ///
    /// Exit codes: 0 the chain verifies; 1 a record was edited, deleted or reordered
    /// (the first broken one is named), a record is not signed by a key of --trust, a
    /// record a --checkpoint names is gone or replaced, or --expect is no longer in the
    /// chain; 2 no ledger, an unreadable or untrusted checkpoint file, or invalid usage.
    #[command(verbatim_doc_comment)]
    Verify(VerifyArgs),
    /// Write every record as one JSON line (canonical JSON with its hash), in order.
    Export(ExportArgs),
}

#[derive(clap::Args)]
pub struct VerifyArgs {
    /// The ledger: a SQLite file or postgres://… (default: $EVIDENT_LEDGER, else the
    /// current repository's ledger, outside its working tree, at
    /// $XDG_STATE_HOME/evident/ledgers/NAME-HASH/ledger.db; without XDG_STATE_HOME
    /// ~/.local/state/evident/…, on macOS ~/Library/Application Support/evident/…).
    #[arg(long, value_name = "PATH|URL", conflicts_with = "export")]
    ledger: Option<String>,
    /// Verify an exported JSONL file offline instead of a ledger.
    #[arg(long, value_name = "FILE")]
    export: Option<PathBuf>,
    /// A record hash (or prefix) noted earlier that must still be in the chain: catches
    /// a ledger truncated or rewritten after that point.
    #[arg(long, value_name = "HASH")]
    expect: Option<String>,
    /// Also check that every record is stored in canonical form (slower).
    #[arg(long)]
    deep: bool,
    /// A trust list (JSON, TOML, or a `.pub` file): every record must be signed by a
    /// key it lists (the gate's `--key`), so a record appended by anyone else fails.
    #[arg(long, value_name = "FILE")]
    trust: Option<PathBuf>,
    /// A checkpoint file the gate wrote (`--checkpoint`): every head it names must still
    /// be in the chain, which catches a truncated tail or an older copy restored.
    /// Needs --trust (its lines must be signed by a listed key).
    #[arg(long, value_name = "FILE", requires = "trust")]
    checkpoint: Option<PathBuf>,
    /// Print the result as JSON.
    #[arg(long)]
    json: bool,
}

#[derive(clap::Args)]
pub struct ExportArgs {
    /// The ledger: a SQLite file or postgres://… (default: $EVIDENT_LEDGER, else the
    /// current repository's ledger, outside its working tree, at
    /// $XDG_STATE_HOME/evident/ledgers/NAME-HASH/ledger.db; without XDG_STATE_HOME
    /// ~/.local/state/evident/…, on macOS ~/Library/Application Support/evident/…).
    #[arg(long, value_name = "PATH|URL")]
    ledger: Option<String>,
    /// Write to this file instead of standard output.
    #[arg(long, value_name = "FILE")]
    out: Option<PathBuf>,
    /// Accepted for symmetry with the other commands: the export is always JSON Lines.
    #[arg(long)]
    #[allow(dead_code)]
    json: bool,
}

pub fn run(command: Command) -> anyhow::Result<u8> {
    match command {
        Command::Verify(a) => verify(a),
        Command::Export(a) => export(a),
    }
}

fn verify(a: VerifyArgs) -> anyhow::Result<u8> {
    let trust = match &a.trust {
        Some(path) => Some(evident_sign::TrustList::load(path)?),
        None => None,
    };
    let checkpoints = match (&a.checkpoint, &trust) {
        (Some(path), Some(trust)) => Some(evident_ledger::attest::read_checkpoints(path, trust)?),
        _ => None,
    };
    let checked_heads = checkpoints.as_ref().map_or(0, |c| c.heads.len());
    let options = evident_ledger::VerifyOptions {
        deep: a.deep,
        trust,
        checkpoints,
    };
    let signed = options.trust.is_some();
    let (report, shown, found_expect) = match &a.export {
        Some(path) => {
            let file = std::fs::File::open(path)
                .with_context(|| format!("cannot read {}", path.display()))?;
            let report = evident_ledger::verify_export_opts(std::io::BufReader::new(file), options)
                .with_context(|| format!("cannot read {}", path.display()))?;
            // An export holds every hash; look the expected one up by re-reading.
            let found = match &a.expect {
                Some(h) => Some(export_has_hash(path, h)?),
                None => None,
            };
            (report, path.display().to_string(), found)
        }
        None => {
            let ledger = evident_ledger::open_existing(a.ledger.as_deref())?;
            let report = ledger.verify_opts(options)?;
            let found = match &a.expect {
                Some(h) => Some(match ledger.find(h) {
                    Ok(r) => report.head.as_ref().is_some_and(|(id, _)| r.id <= *id),
                    Err(e) if e.kind == evident_ledger::ErrorKind::NotFound => false,
                    Err(e) => return Err(e.into()),
                }),
                None => None,
            };
            (report, ledger.location().to_string(), found)
        }
    };
    let ok = report.broken.is_none() && found_expect != Some(false);
    if a.json {
        let v = serde_json::json!({
            "ledger": shown,
            "ok": ok,
            "records": report.records,
            "head": report.head.as_ref().map(|(id, h)| serde_json::json!({"id": id, "hash": h})),
            "broken": report.broken.as_ref().map(|b| serde_json::json!({"id": b.id, "reason": b.reason})),
            "expect_found": found_expect,
            "signatures_checked": signed,
            "checkpoints_checked": checked_heads,
        });
        println!("{}", serde_json::to_string_pretty(&v)?);
    } else {
        match &report.broken {
            None => match &report.head {
                Some((id, h)) => println!(
                    "ledger {shown}: OK, {} records, head #{id} {h}{}",
                    report.records,
                    also(signed, checked_heads)
                ),
                None => println!("ledger {shown}: OK, empty"),
            },
            Some(b) => {
                println!("ledger {shown}: BROKEN at record {}: {}", b.id, b.reason);
                println!("{} records verified before it", report.records);
            }
        }
        if found_expect == Some(false) {
            println!(
                "the expected record {} is not in the verified chain: the ledger was truncated or rewritten",
                a.expect.as_deref().unwrap_or("")
            );
        }
    }
    Ok(if ok { exit::OK } else { exit::REFUTED })
}

/// What else an OK means: every record signed by a trusted key, checkpoints met.
fn also(signed: bool, checkpoints: usize) -> String {
    let mut parts = Vec::new();
    if signed {
        parts.push("every record signed by a trusted key".to_string());
    }
    if checkpoints > 0 {
        parts.push(format!("{checkpoints} checkpoints met"));
    }
    if parts.is_empty() {
        String::new()
    } else {
        format!("; {}", parts.join(", "))
    }
}

fn export_has_hash(path: &std::path::Path, prefix: &str) -> anyhow::Result<bool> {
    use std::io::BufRead as _;
    let prefix = prefix.trim().to_ascii_lowercase();
    if prefix.len() < 6 {
        anyhow::bail!("--expect needs at least 6 hex digits of a hash");
    }
    let file = std::fs::File::open(path)?;
    for line in std::io::BufReader::new(file).lines() {
        let v: serde_json::Value = match evident_ledger::depth::from_str(&line?) {
            Ok(v) => v,
            Err(_) => continue,
        };
        if v.get("hash")
            .and_then(|h| h.as_str())
            .is_some_and(|h| h.starts_with(&prefix))
        {
            return Ok(true);
        }
    }
    Ok(false)
}

fn export(a: ExportArgs) -> anyhow::Result<u8> {
    let ledger = evident_ledger::open_existing(a.ledger.as_deref())?;
    let n = match &a.out {
        Some(path) => {
            let file = std::fs::File::create(path)
                .with_context(|| format!("cannot write {}", path.display()))?;
            let mut w = std::io::BufWriter::new(file);
            let n = ledger.export(&mut w)?;
            w.flush()
                .with_context(|| format!("cannot write {}", path.display()))?;
            n
        }
        None => {
            let stdout = std::io::stdout();
            let mut w = std::io::BufWriter::new(stdout.lock());
            let n = ledger.export(&mut w)?;
            w.flush()?;
            n
        }
    };
    eprintln!("exported {n} records from ledger {}", ledger.location());
    Ok(exit::OK)
}
