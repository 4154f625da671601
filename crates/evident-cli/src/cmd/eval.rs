//! `evident eval` — not built yet.

/// Arguments of `evident eval`.
#[derive(clap::Args)]
pub struct Args {}

pub fn run(_args: Args) -> anyhow::Result<u8> {
    anyhow::bail!("`evident eval` is not built yet")
}
