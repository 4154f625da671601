//! `evident log` — not built yet.

/// Arguments of `evident log`.
#[derive(clap::Args)]
pub struct Args {}

pub fn run(_args: Args) -> anyhow::Result<u8> {
    anyhow::bail!("`evident log` is not built yet")
}
