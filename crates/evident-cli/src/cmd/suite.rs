//! `evident suite` — not built yet.

/// Subcommands of `evident suite`.
#[derive(clap::Subcommand)]
pub enum Command {}

pub fn run(command: Command) -> anyhow::Result<u8> {
    match command {}
}
