//! `evident verify` — not built yet.

/// Arguments of `evident verify`.
#[derive(clap::Args)]
pub struct Args {}

pub fn run(_args: Args) -> anyhow::Result<u8> {
    anyhow::bail!("`evident verify` is not built yet")
}
