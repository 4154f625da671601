//! `evident gate` — not built yet.

/// Arguments of `evident gate`.
#[derive(clap::Args)]
pub struct Args {}

pub fn run(_args: Args) -> anyhow::Result<u8> {
    anyhow::bail!("`evident gate` is not built yet")
}
