//! `evident show` — not built yet.

/// Arguments of `evident show`.
#[derive(clap::Args)]
pub struct Args {}

pub fn run(_args: Args) -> anyhow::Result<u8> {
    anyhow::bail!("`evident show` is not built yet")
}
