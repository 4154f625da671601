//! The repository the hook tests (hook.rs, hook/red13.rs) drive: a real git
//! repository with a broken `calc.py`, its pytest test and the owner's contract
//! committed at the baseline, and the paths of the state directory and transcript.

use std::path::PathBuf;

use crate::support::git;

/// One test's world; the temporary directory lives as long as it does.
pub struct World {
    _tmp: tempfile::TempDir,
    /// The repository (canonical path).
    pub repo: PathBuf,
    /// The hook's state directory, outside the repository.
    pub state: PathBuf,
    /// Where the agent's transcript is written.
    pub transcript: PathBuf,
}

/// The world with `contract` as the owner's `.evident/contract.toml`, committed.
pub fn world(contract: &str) -> World {
    let tmp = tempfile::tempdir().unwrap();
    let repo = tmp.path().join("repo");
    std::fs::create_dir_all(repo.join("tests")).unwrap();
    std::fs::create_dir_all(repo.join(".evident")).unwrap();
    git(&repo, &["init", "-q", "-b", "main"]);
    std::fs::write(repo.join("calc.py"), "def add(a, b):\n    return a - b\n").unwrap();
    std::fs::write(
        repo.join("tests/test_calc.py"),
        "from calc import add\n\ndef test_add():\n    assert add(2, 3) == 5\n",
    )
    .unwrap();
    std::fs::write(repo.join("conftest.py"), "").unwrap();
    std::fs::write(repo.join(".gitignore"), "__pycache__/\n").unwrap();
    std::fs::write(repo.join(".evident/contract.toml"), contract).unwrap();
    git(&repo, &["add", "-A"]);
    git(&repo, &["commit", "-qm", "start"]);
    let repo = repo.canonicalize().unwrap();
    World {
        state: tmp.path().join("state"),
        transcript: tmp.path().join("transcript.jsonl"),
        _tmp: tmp,
        repo,
    }
}

/// A refused stop in Claude Code's protocol: its reason.
pub fn refused(v: &serde_json::Value) -> &str {
    assert_eq!(v["decision"], "block", "{v}");
    v["reason"].as_str().unwrap()
}
