//! `evident key generate`: write an Ed25519 key pair. The key file format is in
//! `evident_ledger::sign` and docs/ledger.md.

use std::path::PathBuf;

use crate::exit;

/// Subcommands of `evident key`.
#[derive(clap::Subcommand)]
pub enum Command {
    /// Write a new Ed25519 key pair: --out PATH (the private key, mode 0600) and
    /// PATH.pub (the public key, usable as a trust-list entry).
    ///
    /// The id is the `verifier.id` the key signs evidence as; a trust list pairs that
    /// id with the public key. Existing files are never overwritten. The private key is
    /// never printed.
    #[command(verbatim_doc_comment)]
    Generate(GenerateArgs),
}

#[derive(clap::Args)]
pub struct GenerateArgs {
    /// Where to write the private key (PATH.pub receives the public key).
    #[arg(long, value_name = "PATH")]
    out: PathBuf,
    /// The verifier id this key signs as.
    #[arg(long, value_name = "ID", default_value = "evident-gate")]
    id: String,
    /// Print the trust-list entry as JSON instead of the summary.
    #[arg(long)]
    json: bool,
}

pub fn run(command: Command) -> anyhow::Result<u8> {
    match command {
        Command::Generate(a) => generate(a),
    }
}

fn generate(a: GenerateArgs) -> anyhow::Result<u8> {
    if a.id.trim().is_empty() {
        anyhow::bail!("--id must not be empty");
    }
    let key = evident_sign::Key::generate(&a.id);
    let public = key.write_files(&a.out)?;
    if a.json {
        print!("{}", key.to_public_json());
    } else {
        println!(
            "private key: {} (mode 0600; keep it secret)",
            a.out.display()
        );
        println!("public key:  {}", public.display());
        println!("verifier id: {}", key.id());
        println!(
            "trust-list entry: {{\"id\": {}, \"public_key\": \"{}\"}}",
            serde_json::Value::String(key.id().to_string()),
            key.public_key_base64()
        );
    }
    Ok(exit::OK)
}
