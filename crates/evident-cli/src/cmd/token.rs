//! `evident token new NAME`: a fresh bearer token for `evident serve`, shown once,
//! and the `[[token]]` entry (its SHA-256, never the token) for the tokens file.

use crate::exit;

/// Subcommands of `evident token`.
#[derive(clap::Subcommand)]
pub enum Command {
    /// Make a bearer token for `evident serve --tokens FILE`.
    ///
    /// Prints the token once (give it to the client; it is not stored anywhere) and
    /// the entry to add to the tokens file, which holds only its SHA-256. NAME is
    /// recorded in the ledger as who asked for each decision made with the token.
    #[command(verbatim_doc_comment)]
    New(NewArgs),
}

#[derive(clap::Args)]
pub struct NewArgs {
    /// The client's name (1-64 letters, digits, '_' or '-').
    name: String,
    /// Print {"name", "token", "sha256", "entry"} as JSON.
    #[arg(long)]
    json: bool,
}

pub fn run(command: Command) -> anyhow::Result<u8> {
    match command {
        Command::New(a) => new(a),
    }
}

fn new(a: NewArgs) -> anyhow::Result<u8> {
    if !evident_serve::auth::valid_token_name(&a.name) {
        anyhow::bail!(
            "{:?} is not a token name: use 1-64 letters, digits, '_' or '-', starting with a letter or digit",
            a.name
        );
    }
    let (token, sha256) = evident_serve::auth::new_token();
    let entry = format!("[[token]]\nname = \"{}\"\nsha256 = \"{sha256}\"\n", a.name);
    if a.json {
        println!(
            "{}",
            serde_json::to_string_pretty(&serde_json::json!({
                "name": a.name, "token": token, "sha256": sha256, "entry": entry,
            }))?
        );
    } else {
        println!("token (shown only now; give it to the client and keep it secret):");
        println!("{token}");
        println!();
        println!("add to the server's tokens file (--tokens FILE):");
        print!("{entry}");
    }
    Ok(exit::OK)
}
