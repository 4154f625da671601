//! `evident belief` — not built yet.

/// Arguments of `evident belief`.
#[derive(clap::Args)]
pub struct Args {}

pub fn run(_args: Args) -> anyhow::Result<u8> {
    anyhow::bail!("`evident belief` is not built yet")
}
