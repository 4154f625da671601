//! `evident key` — not built yet.

/// Subcommands of `evident key`.
#[derive(clap::Subcommand)]
pub enum Command {}

pub fn run(command: Command) -> anyhow::Result<u8> {
    match command {}
}
