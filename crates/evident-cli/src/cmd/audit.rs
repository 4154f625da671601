//! `evident audit` — not built yet.

/// Subcommands of `evident audit`.
#[derive(clap::Subcommand)]
pub enum Command {}

pub fn run(command: Command) -> anyhow::Result<u8> {
    match command {}
}
