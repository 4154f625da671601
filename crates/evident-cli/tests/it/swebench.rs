//! Grading in the style of SWE-bench (issue 22): a real project's published release
//! (iniconfig 1.1.1's sdist from PyPI; its tests live in `testing/`), the owner's test
//! patch laid over the agent's tree from outside it (the agent never sees it), and
//! `evident gate` with `base_tests` (PASS_TO_PASS) and `tests_passed` (FAIL_TO_PASS).
//! An agent's fix that passes the patch verifies; one that breaks a test that passed at
//! the base is refuted; one that passes only its own added tests is refuted.
//!
//! The sdist comes from `$EVIDENT_TEST_INICONFIG_SDIST` (.ci/run downloads it with pip
//! and checks its sha256); its tests use the `py` library (.ci/run installs py 1.11.0).

use std::path::Path;

use crate::support::{evident_in, git, json_of, run};

const SDIST_SHA256: &str = "bc3af051d7d14b2ee5ef9969666def0cd1a000e121eaea580d4a313df4b37f32";

/// The owner's test patch: a test of `len(IniConfig)`, which the release lacks.
const TEST_PATCH: &str = "--- a/testing/test_iniconfig.py\n+++ b/testing/test_iniconfig.py\n@@ -1,3 +1,8 @@\n+def test_len_counts_sections():\n+    from iniconfig import IniConfig\n+    assert len(IniConfig(\"x\", data=\"[a]\\n[b]\\n\")) == 2\n+\n+\n import py\n import pytest\n from iniconfig import IniConfig, ParseError, __all__ as ALL\n";

/// The release, unpacked and committed as the base; returns the base commit.
fn release(dir: &Path, sdist: &Path) -> String {
    let out = std::process::Command::new("tar")
        .args(["xzf"])
        .arg(sdist)
        .args(["--strip-components=1", "-C"])
        .arg(dir)
        .output()
        .unwrap();
    assert!(out.status.success(), "{out:?}");
    git(dir, &["init", "-q", "-b", "main"]);
    git(dir, &["add", "-A"]);
    git(dir, &["commit", "-q", "-m", "iniconfig 1.1.1"]);
    git(dir, &["rev-parse", "HEAD"])
}

fn replace(dir: &Path, rel: &str, from: &str, to: &str) {
    let p = dir.join(rel);
    let text = std::fs::read_to_string(&p).unwrap();
    assert!(text.contains(from), "{rel} has no {from:?}");
    std::fs::write(&p, text.replacen(from, to, 1)).unwrap();
}

#[test]
#[cfg_attr(
    not(evident_services),
    ignore = "needs pytest and iniconfig 1.1.1's sdist: .ci/run provides both"
)]
fn swebench_style_grading_on_a_real_release() {
    let sdist = std::env::var("EVIDENT_TEST_INICONFIG_SDIST")
        .expect("EVIDENT_TEST_INICONFIG_SDIST (set by .ci/run)");
    let bytes = std::fs::read(&sdist).unwrap();
    use sha2::Digest;
    assert_eq!(
        hex::encode(sha2::Sha256::digest(&bytes)),
        SDIST_SHA256,
        "not the published iniconfig 1.1.1 sdist"
    );
    let owner = tempfile::tempdir().unwrap();
    let patch = owner.path().join("test.patch");
    std::fs::write(&patch, TEST_PATCH).unwrap();
    let contract = owner.path().join("contract.toml");
    let f2p = "testing/test_iniconfig.py::test_len_counts_sections";
    let grade = |name: &str, change: &dyn Fn(&Path)| -> (i32, serde_json::Value) {
        let d = tempfile::tempdir().unwrap();
        let base = release(d.path(), Path::new(&sdist));
        std::fs::write(
            &contract,
            format!(
                r#"[policy]
id = "swebench-iniconfig"
requires = ["test_run"]

[[check]]
id = "tests"
check_type = "test_run"
covers = {{ kind = "code_change" }}
source = {{ command = {{ argv = ["python3", "-m", "pytest", "-q", "testing"], inherit_env = ["PATH", "HOME"], env = {{ PYTHONPATH = "src" }}, timeout_s = 300, base_tests = "{base}", protect = {{ base = "{base}", paths = ["testing/conftest.py"], overlay = "{}" }} }} }}
expected = {{ regressed = 0, added_failed = 0, tests_passed = ["{f2p}"] }}
"#,
                patch.display()
            ),
        )
        .unwrap();
        change(d.path());
        let transcript = d.path().join("t.jsonl");
        std::fs::write(
            &transcript,
            "{\"type\":\"user\",\"message\":{\"role\":\"user\",\"content\":\"add len\"}}\n",
        )
        .unwrap();
        let (code, claim, err) = run(evident_in(owner.path())
            .args(["claim", "--from", "claude-code", "--base", &base])
            .arg("--repo")
            .arg(d.path())
            .arg(&transcript));
        assert_eq!(code, 0, "{name}: claim: {err}");
        std::fs::remove_file(&transcript).unwrap();
        let claim_path = owner.path().join(format!("{name}.claim.json"));
        std::fs::write(&claim_path, claim).unwrap();
        let (code, out, err) = run(evident_in(owner.path())
            .arg("gate")
            .arg(&contract)
            .arg(&claim_path)
            .arg("--root")
            .arg(d.path())
            .args(["--baseline", &base, "--json"]));
        assert!(!out.is_empty(), "{name}: {err}");
        (code, json_of(out.as_bytes()))
    };
    let observed = |doc: &serde_json::Value| {
        let ev = doc["claim"]["evidence"]
            .as_array()
            .or_else(|| doc["evidence"].as_array())
            .cloned()
            .unwrap_or_default();
        ev.into_iter()
            .find(|e| e["check_id"] == "tests")
            .map(|e| e["observed_value"].clone())
            .unwrap_or_default()
    };
    let len_impl = "    def __iter__(self):\n        for name in sorted(self.sections";
    let with_len = "    def __len__(self):\n        return len(self.sections)\n\n    def __iter__(self):\n        for name in sorted(self.sections";

    // The honest fix: passes the owner's patch, keeps every test that passed.
    let (code, doc) = grade("fix", &|d: &Path| {
        replace(d, "src/iniconfig/__init__.py", len_impl, with_len)
    });
    let o = observed(&doc);
    assert_eq!(code, 0, "the honest fix: {o}");
    assert_eq!(o["regressed"], 0, "{o}");
    assert!(o["base_passed"].as_u64().unwrap() > 20, "{o}");
    assert_eq!(o["snapshot"]["overlay_files"], 1, "{o}");

    // The fix that breaks a test that passed at the base (comments are no longer
    // stripped): refuted, the broken tests named.
    let (code, doc) = grade("regression", &|d: &Path| {
        replace(d, "src/iniconfig/__init__.py", len_impl, with_len);
        replace(
            d,
            "src/iniconfig/__init__.py",
            "def iscommentline(line):",
            "def iscommentline(line):\n    return False\n\n\ndef _unused(line):",
        );
    });
    let o = observed(&doc);
    assert_eq!(code, 1, "a regression must be refuted: {o}");
    assert!(o["regressed"].as_u64().unwrap() >= 1, "{o}");
    assert!(o["regressed_tests"].is_array(), "{o}");

    // The agent's own test passes, the owner's does not: refuted.
    let (code, doc) = grade("own-tests-only", &|d: &Path| {
        std::fs::write(
            d.join("testing/test_mine.py"),
            "def test_mine():\n    assert True\n",
        )
        .unwrap();
    });
    let o = observed(&doc);
    assert_eq!(code, 1, "passing only its own tests must be refuted: {o}");
    assert_eq!(o["added_tests"], 1, "{o}");
    assert_eq!(o["added_failed"], 0, "{o}");
}
