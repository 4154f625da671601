//! `evident contract check CONTRACT`: an owner's mistakes, found before an agent is
//! judged by the contract.

use crate::input;
use evident_gate::Contract;
use std::path::PathBuf;

/// Work with an owner's contract.
#[derive(clap::Subcommand)]
pub enum Command {
    /// Find mistakes in a contract before an agent is judged by it.
    ///
    /// Errors (the gate refuses the contract, exit 1): an expectation no source of that
    /// kind can produce (`row_count = "1"`), an inline secret, a check that can never
    /// apply. Warnings (exit 0): a covers glob that matches every target, an
    /// endpoint_health check expecting only a status, a version substring later
    /// versions also contain, a test_run without `failed = 0`, a glob over many targets
    /// read back from one fixed record. Each finding names the file, line and the fix.
    Check(CheckArgs),
}

#[derive(clap::Args)]
pub struct CheckArgs {
    /// The contract (`.toml` or `.json`).
    pub contract: PathBuf,
    /// Print the findings as JSON: `{"errors": [...], "warnings": [...]}`.
    #[arg(long)]
    pub json: bool,
}

pub fn run(command: Command) -> anyhow::Result<u8> {
    let Command::Check(args) = command;
    let name = args.contract.display().to_string();
    let bytes = input::read_limited(&name)?;
    let (errors, warnings) = match Contract::parse(&bytes, &name) {
        Err(e) => {
            let instead = format!(", not a contract: evident verify {name}");
            let hint = crate::hint::contract_hint(&bytes, &name, &e.message, &instead);
            let mut error = serde_json::json!({
                "path": e.path,
                "line": e.pos.map(|p| p.line),
                "col": e.pos.map(|p| p.col),
                "message": e.message,
            });
            if let Some(h) = hint {
                error["hint"] = h.into();
            }
            (vec![error], Vec::new())
        }
        Ok(doc) => (Vec::new(), evident_gate::lint::lint(&doc)),
    };
    if args.json {
        let out = serde_json::json!({ "file": name, "errors": errors, "warnings": warnings });
        println!("{}", serde_json::to_string_pretty(&out)?);
    } else {
        for e in &errors {
            let at = match (e["line"].as_u64(), e["col"].as_u64()) {
                (Some(l), Some(c)) => format!("{name}:{l}:{c}"),
                _ => name.clone(),
            };
            println!(
                "error: {at}: at {}: {}",
                e["path"].as_str().unwrap_or_default(),
                e["message"].as_str().unwrap_or_default()
            );
            if let Some(h) = e["hint"].as_str() {
                println!("  hint: {h}");
            }
        }
        for w in &warnings {
            let at = match (w.line, w.col) {
                (Some(l), Some(c)) => format!("{name}:{l}:{c}"),
                _ => name.clone(),
            };
            println!("warning: {at}: at {}: {}", w.path, w.message);
            println!("  hint: {}", w.hint);
        }
        if errors.is_empty() && warnings.is_empty() {
            println!("{name}: no problems found");
        }
    }
    // Exit 1 on errors (as a linter does), 0 with only warnings.
    Ok(if errors.is_empty() {
        crate::exit::OK
    } else {
        crate::exit::REFUTED
    })
}
