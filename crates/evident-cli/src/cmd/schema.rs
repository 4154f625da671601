//! `evident schema` — not built yet.

/// Arguments of `evident schema`.
#[derive(clap::Args)]
pub struct Args {}

pub fn run(_args: Args) -> anyhow::Result<u8> {
    anyhow::bail!("`evident schema` is not built yet")
}
