//! Fixture repositories built in temporary directories, shared by the library tests
//! and the CLI tests (`crates/evident-cli/tests/it/audit.rs` includes this file).
#![allow(dead_code)]

use serde_json::{Value, json};
use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::process::Command;

pub fn data(rel: &str) -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("../evident-audit/tests/data/plectis")
        .join(rel)
}

fn write(path: &Path, text: &str) {
    std::fs::create_dir_all(path.parent().unwrap()).unwrap();
    std::fs::write(path, text).unwrap();
}

/// The peer's fixture, rebuilt: a tiny Python package with one passing pytest test,
/// plus a failing and a skipped test, and a tiny dependency-free Cargo crate in
/// `crate/` with one passing and one failing test.
pub fn build_fixture(root: &Path) {
    write(&root.join("micro_pkg/__init__.py"), "");
    write(
        &root.join("micro_pkg/arithmetic.py"),
        "def add(left, right):\n    return left + right\n",
    );
    write(
        &root.join("tests/test_closeout_fixture.py"),
        "from micro_pkg.arithmetic import add\n\n\ndef test_public_fixture_addition():\n    assert add(2, 3) == 5\n",
    );
    write(
        &root.join("tests/test_other.py"),
        "import pytest\nfrom micro_pkg.arithmetic import add\n\n\ndef test_known_failure():\n    assert add(2, 2) == 5\n\n\n@pytest.mark.skip(reason=\"fixture\")\ndef test_skipped():\n    assert True\n",
    );
    write(
        &root.join(".gitignore"),
        "target/\n__pycache__/\n.pytest_cache/\n",
    );
    write(
        &root.join("crate/Cargo.toml"),
        "[package]\nname = \"fxcrate\"\nversion = \"0.1.0\"\nedition = \"2021\"\n\n[workspace]\n",
    );
    write(
        &root.join("crate/src/lib.rs"),
        "pub fn add(a: u32, b: u32) -> u32 {\n    a + b\n}\n\n#[cfg(test)]\nmod tests {\n    #[test]\n    fn adds() {\n        assert_eq!(super::add(2, 3), 5);\n    }\n\n    #[test]\n    fn fails() {\n        assert_eq!(super::add(2, 2), 5);\n    }\n}\n",
    );
}

pub fn git(dir: &Path, args: &[&str]) -> String {
    let out = Command::new("git")
        .args([
            "-c",
            "user.name=t",
            "-c",
            "user.email=t@t.invalid",
            "-c",
            "commit.gpgsign=false",
        ])
        .args(args)
        .current_dir(dir)
        .env("GIT_CONFIG_GLOBAL", "/dev/null")
        .env("GIT_CONFIG_NOSYSTEM", "1")
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "git {args:?}: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    String::from_utf8(out.stdout).unwrap().trim().to_string()
}

/// A live repository: `main` with two commits (the fixture, then a change), and a
/// branch `side` with one commit that `main` does not contain. Returns
/// (first commit, head of main, side commit).
pub fn build_live_repo(root: &Path) -> (String, String, String) {
    build_fixture(root);
    git(root, &["init", "-q", "-b", "main"]);
    git(root, &["add", "."]);
    git(root, &["commit", "-q", "-m", "fixture"]);
    let first = git(root, &["rev-parse", "HEAD"]);
    write(&root.join("NOTES.md"), "second commit\n");
    git(root, &["add", "."]);
    git(root, &["commit", "-q", "-m", "second"]);
    let head = git(root, &["rev-parse", "HEAD"]);
    git(root, &["checkout", "-q", "-b", "side", &first]);
    write(&root.join("SIDE.md"), "side\n");
    git(root, &["add", "."]);
    git(root, &["commit", "-q", "-m", "side"]);
    let side = git(root, &["rev-parse", "HEAD"]);
    git(root, &["checkout", "-q", "main"]);
    (first, head, side)
}

/// Every file under `root` (including `.git`) with its size, mtime and content.
pub fn snapshot(root: &Path) -> BTreeMap<PathBuf, (u64, std::time::SystemTime, Vec<u8>)> {
    let mut out = BTreeMap::new();
    let mut stack = vec![root.to_path_buf()];
    while let Some(dir) = stack.pop() {
        for e in std::fs::read_dir(&dir).unwrap() {
            let e = e.unwrap();
            let meta = std::fs::symlink_metadata(e.path()).unwrap();
            if meta.is_dir() {
                out.insert(e.path(), (0, meta.modified().unwrap(), Vec::new()));
                stack.push(e.path());
            } else {
                let body = std::fs::read(e.path()).unwrap_or_default();
                out.insert(e.path(), (meta.len(), meta.modified().unwrap(), body));
            }
        }
    }
    out
}

pub fn claims_doc(claims: Value) -> Value {
    json!({"schema_version": "closeout_faithfulness_claims_v1", "body_in_receipt": false, "claims": claims})
}

pub fn commit(id: &str, r: &str) -> Value {
    json!({"claim_id": id, "claim_type": "commit", "commit_ref": r})
}

pub fn cap(id: &str, cap: &str) -> Value {
    json!({"claim_id": id, "claim_type": "task_ledger_cap", "cap_id": cap})
}

pub fn pytest(id: &str, nodeid: &str, expected_pass: bool, checked: bool) -> Value {
    json!({"claim_id": id, "claim_type": "pytest_span", "nodeid": nodeid,
           "expected_pass": expected_pass, "pass_status_checked": checked})
}

pub fn cargo(id: &str, test: &str, expected_pass: bool, checked: bool) -> Value {
    json!({"claim_id": id, "claim_type": "cargo_test_span", "test": test, "cwd": "crate",
           "expected_pass": expected_pass, "pass_status_checked": checked})
}

pub const PEER_NODE: &str = "tests/test_closeout_fixture.py::test_public_fixture_addition";

pub fn write_json(path: &Path, v: &Value) {
    std::fs::write(path, serde_json::to_string_pretty(v).unwrap()).unwrap();
}

/// Every object key in a JSON value, with its path.
pub fn keys(v: &Value, path: &str, out: &mut Vec<String>) {
    match v {
        Value::Object(m) => {
            for (k, x) in m {
                let p = format!("{path}.{k}");
                out.push(p.clone());
                keys(x, &p, out);
            }
        }
        Value::Array(a) => {
            for (i, x) in a.iter().enumerate() {
                keys(x, &format!("{path}[{i}]"), out);
            }
        }
        _ => {}
    }
}

/// The fixture's tests run with the real pytest. Where it is not installed (a laptop
/// with only Rust), say so and skip; `.ci/run` installs it, so CI always runs them.
pub fn pytest_missing() -> bool {
    let ok = std::process::Command::new("python3")
        .args(["-c", "import pytest"])
        .output()
        .is_ok_and(|o| o.status.success());
    if !ok {
        if cfg!(evident_services) {
            panic!("pytest is not installed (.ci/run installs it)");
        }
        eprintln!(
            "skipped: pytest is not installed (python3 -m pip install pytest; .ci/run installs it)"
        );
    }
    !ok
}
