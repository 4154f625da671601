//! Where evident keeps what it writes for itself, outside any working tree: the state
//! directory (shared with the agent hooks' sessions and locks), and in it the default
//! ledger of each repository.
//!
//! A ledger inside the tree an agent edits is one the agent can write (append, cut its
//! tail), and an untracked file there makes a `git` check's `clean = true` refute an
//! honest claim; so when neither `--ledger` nor `$EVIDENT_LEDGER` names one, the ledger
//! is `<state>/ledgers/<key>/ledger.db`, one per repository.

use std::path::{Path, PathBuf};

/// The environment, as a function (the process's, or a hook's or test's own).
pub type Env<'a> = &'a dyn Fn(&str) -> Option<String>;

/// The process's environment, as an [`Env`].
pub fn process_env(name: &str) -> Option<String> {
    std::env::var(name).ok()
}

/// evident's state directory: `$XDG_STATE_HOME/evident` when that is an absolute path,
/// else the platform's — `~/Library/Application Support/evident` on macOS,
/// `~/.local/state/evident` elsewhere. `None` without an absolute `$HOME`. One
/// function for every caller: the default ledger here and the hooks' state
/// (`evident hook --state-dir` overrides it there).
pub fn state_dir(env: Env<'_>) -> Option<PathBuf> {
    if let Some(x) = env("XDG_STATE_HOME").filter(|x| x.starts_with('/')) {
        return Some(Path::new(&x).join("evident"));
    }
    let home = env("HOME").filter(|h| h.starts_with('/'))?;
    let base = if cfg!(target_os = "macos") {
        "Library/Application Support/evident"
    } else {
        ".local/state/evident"
    };
    Some(Path::new(&home).join(base))
}

/// The top directory of the git work tree `dir` (canonical) lies in: the nearest of
/// `dir` and its ancestors that holds a `.git` directory (with a `HEAD`) or a `.git`
/// file (`gitdir: …`, as linked worktrees and submodules have) — what `git rev-parse
/// --show-toplevel` prints for them. `dir` itself when it is in no work tree. git is
/// not run: the repository's config is the agent's to write, and the hardened git
/// witness (evident-probes) is not a dependency of the ledger.
pub fn repository_top(dir: &Path) -> PathBuf {
    let is_git = |d: &Path| {
        let dot = d.join(".git");
        match std::fs::symlink_metadata(&dot) {
            Ok(m) if m.is_dir() => dot.join("HEAD").exists(),
            Ok(m) if m.is_file() => std::fs::read(&dot).is_ok_and(|b| b.starts_with(b"gitdir:")),
            _ => false,
        }
    };
    dir.ancestors()
        .find(|d| is_git(d))
        .unwrap_or(dir)
        .to_path_buf()
}

/// The name of a repository's directory under `<state>/ledgers/`: its top directory's
/// name made safe (`[A-Za-z0-9._-]`, others as `-`, at most 40, no leading dot) for a
/// reader, then 16 hex digits of the SHA-256 of the canonical path, so two checkouts
/// with one name never share a ledger (`evident-3f9c0a…`).
pub fn repository_key(top: &Path) -> String {
    let name = top
        .file_name()
        .map(|n| n.to_string_lossy().into_owned())
        .unwrap_or_default();
    let slug: String = name
        .chars()
        .map(|c| {
            if c.is_ascii_alphanumeric() || matches!(c, '-' | '_' | '.') {
                c
            } else {
                '-'
            }
        })
        .take(40)
        .collect();
    let slug = slug.trim_start_matches(['.', '-']);
    let hex = crate::record::sha256_hex(top.as_os_str().as_encoded_bytes());
    let hash = String::from_utf8_lossy(&hex[..16]).into_owned();
    if slug.is_empty() {
        hash
    } else {
        format!("{slug}-{hash}")
    }
}

/// The default ledger for work in `dir` (canonical):
/// `<state>/ledgers/<repository_key(repository_top(dir))>/ledger.db`. `None` when
/// there is no state directory ([`state_dir`]).
pub fn default_ledger_in(dir: &Path, env: Env<'_>) -> Option<PathBuf> {
    let key = repository_key(&repository_top(dir));
    state_dir(env).map(|s| s.join("ledgers").join(key).join("ledger.db"))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn env_of(pairs: &[(&str, &str)]) -> impl Fn(&str) -> Option<String> {
        let pairs: Vec<(String, String)> = pairs
            .iter()
            .map(|(k, v)| (k.to_string(), v.to_string()))
            .collect();
        move |k| pairs.iter().find(|(n, _)| n == k).map(|(_, v)| v.clone())
    }

    #[test]
    fn the_state_directory_is_xdg_state_home_else_home() {
        let both = env_of(&[("XDG_STATE_HOME", "/x/state"), ("HOME", "/home/u")]);
        assert_eq!(state_dir(&both), Some(PathBuf::from("/x/state/evident")));
        // A relative XDG_STATE_HOME is ignored, as the XDG spec says.
        let rel = env_of(&[("XDG_STATE_HOME", "state"), ("HOME", "/home/u")]);
        let home = if cfg!(target_os = "macos") {
            "/home/u/Library/Application Support/evident"
        } else {
            "/home/u/.local/state/evident"
        };
        assert_eq!(state_dir(&rel), Some(PathBuf::from(home)));
        assert_eq!(state_dir(&env_of(&[("HOME", "u")])), None);
        assert_eq!(state_dir(&env_of(&[])), None);
    }

    #[test]
    fn the_key_is_a_readable_name_and_a_hash_of_the_path() {
        let a = repository_key(Path::new("/work/evident"));
        let b = repository_key(Path::new("/other/evident"));
        assert!(
            a.starts_with("evident-") && a.len() == "evident-".len() + 16,
            "{a}"
        );
        assert_ne!(a, b, "two checkouts with one name share no ledger");
        assert_eq!(a, repository_key(Path::new("/work/evident")));
        assert_eq!(repository_key(Path::new("/w/ü")).len(), 16);
        let odd = repository_key(Path::new("/w/.my repo"));
        assert!(odd.starts_with("my-repo-"), "{odd}");
        assert_eq!(repository_key(Path::new("/")).len(), 16);
    }

    #[test]
    fn the_top_is_the_nearest_directory_holding_dot_git() {
        let t = tempfile::tempdir().unwrap();
        let root = t.path().canonicalize().unwrap();
        let repo = root.join("repo");
        let sub = repo.join("a/b");
        std::fs::create_dir_all(&sub).unwrap();
        // Not a repository yet: the directory itself.
        assert_eq!(repository_top(&sub), sub);
        std::fs::create_dir_all(repo.join(".git")).unwrap();
        // A `.git` without HEAD is not a repository.
        assert_eq!(repository_top(&sub), sub);
        std::fs::write(repo.join(".git/HEAD"), "ref: refs/heads/main\n").unwrap();
        assert_eq!(repository_top(&sub), repo);
        assert_eq!(repository_top(&repo), repo);
        // A linked worktree (or submodule) has a `.git` file.
        let wt = sub.join("wt");
        std::fs::create_dir_all(&wt).unwrap();
        std::fs::write(wt.join(".git"), "gitdir: /elsewhere\n").unwrap();
        assert_eq!(repository_top(&wt), wt);
        let env = env_of(&[("XDG_STATE_HOME", "/s")]);
        let l = default_ledger_in(&sub, &env).unwrap();
        assert_eq!(
            l,
            Path::new("/s/evident/ledgers")
                .join(repository_key(&repo))
                .join("ledger.db")
        );
        assert_eq!(default_ledger_in(&repo, &env), Some(l));
    }
}
