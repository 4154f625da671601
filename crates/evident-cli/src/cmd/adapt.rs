//! `evident adapt` — not built yet.

/// Arguments of `evident adapt`.
#[derive(clap::Args)]
pub struct Args {}

pub fn run(_args: Args) -> anyhow::Result<u8> {
    anyhow::bail!("`evident adapt` is not built yet")
}
