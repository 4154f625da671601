//! `evident schema claim|contract`: the JSON Schema of a document, generated from the
//! Rust types (so it cannot drift from what the parser accepts; the copies checked in
//! under `schemas/` are compared with it by a test).

use clap::ValueEnum;

/// Print the JSON Schema of a document type (generated from the types evident parses).
#[derive(clap::Args)]
pub struct Args {
    /// Which document.
    pub document: Document,
    /// Accepted for symmetry with other commands: the schema is always JSON.
    #[arg(long)]
    pub json: bool,
}

/// The documents evident reads.
#[derive(Clone, Copy, ValueEnum)]
pub enum Document {
    /// A Completion Claim v0.1 (what `verify` and `gate` read from the agent).
    Claim,
    /// A gate contract (what the task's owner requires; TOML or JSON).
    Contract,
}

pub fn run(args: Args) -> anyhow::Result<u8> {
    println!("{}", schema_text(args.document)?);
    Ok(crate::exit::OK)
}

/// The schema as pretty JSON text.
pub fn schema_text(document: Document) -> anyhow::Result<String> {
    let schema = match document {
        Document::Claim => schemars::schema_for!(evident_format::Claim),
        Document::Contract => evident_gate::contract_schema(),
    };
    Ok(serde_json::to_string_pretty(&schema)?)
}
