//! `evident init AGENT`: set evident up as a coding agent's stop hook.

use anyhow::Context as _;
use std::path::PathBuf;

use evident_hooks::agent::Agent;

/// Write a starter `.evident/contract.toml` detected from the repository (cargo,
/// pytest, npm test, go test; kept if one exists) and register evident's hooks in the
/// agent's settings file, merged with the hooks already there. Idempotent. The hook
/// names this evident binary by absolute path; its timeout is above the gate's
/// deadline. Commit the contract: the hook reads it at the session's baseline commit.
#[derive(clap::Args)]
pub struct Args {
    /// claude-code, codex, cursor, gemini or copilot.
    #[arg(value_parser = crate::cmd::hook::parse_agent)]
    pub agent: Agent,
    /// The repository (default: the current directory).
    #[arg(long, value_name = "DIR", default_value = ".")]
    pub repo: PathBuf,
    /// Print what would be written; write nothing.
    #[arg(long)]
    pub print: bool,
}

pub fn run(args: Args) -> anyhow::Result<u8> {
    let root = args
        .repo
        .canonicalize()
        .with_context(|| args.repo.display().to_string())?;
    let binary = std::env::current_exe()
        .and_then(|p| p.canonicalize())
        .context("cannot find the evident binary's path")?;
    // The registered command runs this file at every stop: inside the working tree
    // (an in-tree virtualenv, node_modules, a build directory) the agent could replace
    // it with a program that allows every stop — at once, while a changed settings
    // file waits for the user's review in some agents.
    if binary.starts_with(&root) {
        anyhow::bail!(
            "this evident binary ({}) lies inside the repository {}, where the agent can replace it; hint: install evident outside the working tree and run that one's init",
            binary.display(),
            root.display()
        );
    }
    let plan = evident_hooks::init::plan(args.agent, &root, &binary)?;
    for (path, text) in plan {
        if args.print {
            println!("--- {}\n{text}", path.display());
            continue;
        }
        if std::fs::read_to_string(&path).ok().as_deref() == Some(text.as_str()) {
            println!("unchanged {}", path.display());
            continue;
        }
        if let Some(dir) = path.parent() {
            std::fs::create_dir_all(dir)?;
        }
        std::fs::write(&path, &text).with_context(|| path.display().to_string())?;
        println!("wrote {}", path.display());
    }
    Ok(crate::exit::OK)
}
