//! `evident audit closeout` through the real binary: exit codes, records, and the
//! emitted Completion Claim decided by the real `evident verify`.

#[path = "../../../evident-audit/tests/common/mod.rs"]
mod common;

use common::*;
use serde_json::{Value, json};
use std::path::{Path, PathBuf};

use crate::support::{evident, workspace};

const RESULT: &str = "agent_closeout_faithfulness_audit_result.json";
const CLAIM: &str = "agent_closeout_completion_claim.json";

struct Fx {
    tmp: tempfile::TempDir,
}

impl Fx {
    fn new() -> Self {
        let tmp = tempfile::tempdir().unwrap();
        build_fixture(&tmp.path().join("repo"));
        Fx { tmp }
    }
    fn p(&self, rel: &str) -> PathBuf {
        self.tmp.path().join(rel)
    }
    /// Runs `evident audit closeout` on `claims` (a path) with the peer's ledger.
    fn audit(
        &self,
        claims: &Path,
        repo: &Path,
        out: &str,
        extra: &[&str],
    ) -> (i32, String, String) {
        let target = self.p("cargo-target");
        let o = evident()
            .args(["audit", "closeout", "--claims"])
            .arg(claims)
            .arg("--task-ledger")
            .arg(data("input/fixture_ledger.json"))
            .arg("--repo")
            .arg(repo)
            .arg("--out")
            .arg(self.p(out))
            .arg("--cargo-target-dir")
            .arg(&target)
            .args(extra)
            .output()
            .unwrap();
        (
            o.status.code().unwrap_or(-1),
            String::from_utf8_lossy(&o.stdout).into_owned(),
            String::from_utf8_lossy(&o.stderr).into_owned(),
        )
    }
    fn claims(&self, name: &str, claims: Value) -> PathBuf {
        let p = self.p(name);
        write_json(&p, &claims_doc(claims));
        p
    }
    fn result(&self, out: &str) -> Value {
        serde_json::from_slice(&std::fs::read(self.p(out).join(RESULT)).unwrap()).unwrap()
    }
}

/// Runs the real `evident verify` on the emitted claim at the audit's finish time.
fn verify(claim: &Path, now: &str) -> (i32, String) {
    let o = evident()
        .arg("verify")
        .arg(claim)
        .args(["--now", now, "--json"])
        .output()
        .unwrap();
    (
        o.status.code().unwrap_or(-1),
        format!(
            "{}{}",
            String::from_utf8_lossy(&o.stdout),
            String::from_utf8_lossy(&o.stderr)
        ),
    )
}

/// The audit's exit code, the emitted claim's verdict under `evident verify`, and
/// the audit's own claim verdict must agree.
fn assert_verify_agrees(fx: &Fx, out: &str, audit_code: i32) {
    let r = fx.result(out);
    let now = r["finished_at"].as_str().unwrap();
    let (code, text) = verify(&fx.p(out).join(CLAIM), now);
    let want = match r["claim_verdict"].as_str().unwrap() {
        "verified" => 0,
        "refuted" => 1,
        _ => 3,
    };
    assert_eq!(
        code, want,
        "evident verify disagrees with the audit: {text}"
    );
    if r["status"] != "fail" {
        assert_eq!(
            code, audit_code,
            "audit exit {audit_code}, verify exit {code}: {text}"
        );
    }
}

#[test]
fn help_documents_the_exit_codes() {
    let o = evident()
        .args(["audit", "closeout", "--help"])
        .output()
        .unwrap();
    let text = String::from_utf8_lossy(&o.stdout);
    assert!(o.status.success());
    for needle in [
        "Exit codes",
        "0  every claim admitted",
        "1  a claim was rejected",
        "2  invalid",
        "3  blocked",
        "--live",
        "--self-test",
        "--emit-claim",
    ] {
        assert!(text.contains(needle), "help lacks {needle:?}:\n{text}");
    }
}

#[test]
#[cfg_attr(
    not(evident_services),
    ignore = "needs pytest: .ci/run installs it and runs this (see README, Development)"
)]
fn the_peer_inputs_pass_and_verify_agrees() {
    if pytest_missing() {
        return;
    }
    let fx = Fx::new();
    let (code, stdout, stderr) = fx.audit(
        &data("input/closeout_claims.json"),
        &fx.p("repo"),
        "out",
        &["--self-test", "--emit-claim"],
    );
    assert_eq!(code, 0, "{stdout}{stderr}");
    assert!(
        stdout.contains("status: pass (claims verified)"),
        "{stdout}"
    );
    assert!(stdout.contains("self-test: pass (4 of 4"), "{stdout}");
    let r = fx.result("out");
    assert_eq!(r["exercise"]["verified_claim_count"], 3);
    assert_eq!(r["observed_negative_cases"].as_array().unwrap().len(), 4);
    // no record carries a body: the fixture's pytest summary line appears nowhere
    for f in std::fs::read_dir(fx.p("out")).unwrap() {
        let text = std::fs::read_to_string(f.unwrap().path()).unwrap();
        assert!(
            !text.contains("1 passed in"),
            "a record carries pytest output"
        );
        let mut all = Vec::new();
        keys(&serde_json::from_str(&text).unwrap(), "", &mut all);
        assert!(
            !all.iter()
                .any(|k| k.ends_with(".stdout") || k.ends_with(".stderr"))
        );
    }
    assert_verify_agrees(&fx, "out", code);
    // --json prints the result record
    let (code, stdout, _) = fx.audit(
        &data("input/closeout_claims.json"),
        &fx.p("repo"),
        "out2",
        &["--json"],
    );
    assert_eq!(code, 0);
    let printed: Value = serde_json::from_str(&stdout).unwrap();
    assert_eq!(printed["status"], "pass");
}

#[test]
#[cfg_attr(
    not(evident_services),
    ignore = "needs pytest: .ci/run installs it and runs this (see README, Development)"
)]
fn each_rejection_has_its_exit_code_and_verify_agrees() {
    if pytest_missing() {
        return;
    }
    let fx = Fx::new();
    let cases: [(&str, Value, i32, &str); 6] = [
        (
            "fake_commit",
            json!([
                commit("c", &"0".repeat(40)),
                pytest("t", PEER_NODE, true, true)
            ]),
            1,
            "CLOSEOUT_FAKE_COMMIT_CLAIM",
        ),
        (
            "fake_cap",
            json!([commit("c", "HEAD"), cap("k", "cap_not_in_ledger")]),
            1,
            "CLOSEOUT_FAKE_CAP_CLAIM",
        ),
        (
            "fake_test",
            json!([
                commit("c", "HEAD"),
                pytest(
                    "t",
                    "tests/test_closeout_fixture.py::test_missing_node",
                    true,
                    true
                )
            ]),
            1,
            "CLOSEOUT_FAKE_TEST_CLAIM",
        ),
        (
            "failing_test",
            json!([
                commit("c", "HEAD"),
                pytest("t", "tests/test_other.py::test_known_failure", true, true)
            ]),
            1,
            "CLOSEOUT_PYTEST_PASS_STATUS_NOT_CHECKED",
        ),
        (
            "unchecked_pass",
            json!([commit("c", "HEAD"), pytest("t", PEER_NODE, true, false)]),
            3,
            "CLOSEOUT_PYTEST_PASS_STATUS_NOT_CHECKED",
        ),
        (
            "cargo_missing",
            json!([commit("c", "HEAD"), cargo("t", "tests::nope", true, true)]),
            1,
            "CLOSEOUT_FAKE_TEST_CLAIM",
        ),
    ];
    for (name, claims, want, code_name) in cases {
        let file = fx.claims(&format!("{name}.json"), claims);
        let (code, stdout, stderr) = fx.audit(&file, &fx.p("repo"), name, &["--emit-claim"]);
        assert_eq!(code, want, "{name}: {stdout}{stderr}");
        assert!(stdout.contains(code_name), "{name}: {stdout}");
        assert_verify_agrees(&fx, name, code);
    }
}

#[test]
#[cfg_attr(
    not(evident_services),
    ignore = "needs pytest: .ci/run installs it and runs this (see README, Development)"
)]
fn a_missing_repo_blocks_with_exit_3_and_verify_agrees() {
    if pytest_missing() {
        return;
    }
    let fx = Fx::new();
    let (code, stdout, _) = fx.audit(
        &data("input/closeout_claims.json"),
        &fx.p("missing"),
        "out",
        &["--emit-claim", "--self-test"],
    );
    assert_eq!(code, 3, "{stdout}");
    assert!(
        stdout.contains("CLOSEOUT_PUBLIC_FIXTURE_REPO_MISSING"),
        "{stdout}"
    );
    assert_verify_agrees(&fx, "out", code);
}

#[test]
#[cfg_attr(
    not(evident_services),
    ignore = "needs pytest: .ci/run installs it and runs this (see README, Development)"
)]
fn a_lost_self_test_rejection_fails_the_audit() {
    if pytest_missing() {
        return;
    }
    let fx = Fx::new();
    let file = fx.claims("no_span.json", json!([commit("c", "HEAD")]));
    let (code, stdout, _) = fx.audit(&file, &fx.p("repo"), "out", &["--self-test"]);
    assert_eq!(code, 1, "{stdout}");
    assert!(stdout.contains("self-test: fail"), "{stdout}");
    assert!(
        stdout.contains("CLOSEOUT_NEGATIVE_CASE_MISSING"),
        "{stdout}"
    );
}

#[test]
#[cfg_attr(
    not(evident_services),
    ignore = "needs pytest: .ci/run installs it and runs this (see README, Development)"
)]
fn invalid_input_is_exit_2_naming_file_and_path() {
    if pytest_missing() {
        return;
    }
    let fx = Fx::new();
    let bad = fx.p("bad.json");
    std::fs::write(&bad, r#"{"schema_version": "closeout_faithfulness_claims_v1", "claims": [{"claim_id": "a", "claim_type": "commit"}]}"#).unwrap();
    let (code, _, stderr) = fx.audit(&bad, &fx.p("repo"), "out", &[]);
    assert_eq!(code, 2);
    assert!(
        stderr.contains("bad.json: $.claims[0].commit_ref: missing"),
        "{stderr}"
    );
    let (code, _, stderr) = fx.audit(&fx.p("absent.json"), &fx.p("repo"), "out", &[]);
    assert_eq!(code, 2);
    assert!(stderr.contains("absent.json"), "{stderr}");
    // --branch needs --live
    let (code, _, _) = fx.audit(
        &data("input/closeout_claims.json"),
        &fx.p("repo"),
        "out",
        &["--branch", "main"],
    );
    assert_eq!(code, 2);
    let (code, _, _) = fx.audit(
        &data("input/closeout_claims.json"),
        &fx.p("repo"),
        "out",
        &["--timeout-s", "0"],
    );
    assert_eq!(code, 2);
}

#[test]
#[cfg_attr(
    not(evident_services),
    ignore = "needs pytest: .ci/run installs it and runs this (see README, Development)"
)]
fn live_mode_refuses_a_non_ancestor_and_never_writes() {
    if pytest_missing() {
        return;
    }
    let fx = Fx::new();
    let repo = fx.p("live");
    let (first, _head, side) = build_live_repo(&repo);
    let before = snapshot(&repo);
    let ok = fx.claims(
        "ok.json",
        json!([commit("c", &first), pytest("t", PEER_NODE, true, true)]),
    );
    let (code, stdout, stderr) = fx.audit(&ok, &repo, "ok", &["--live", "--emit-claim"]);
    assert_eq!(code, 0, "{stdout}{stderr}");
    assert_verify_agrees(&fx, "ok", code);
    let bad = fx.claims("bad.json", json!([commit("c", &side)]));
    let (code, stdout, _) = fx.audit(&bad, &repo, "bad", &["--live", "--emit-claim"]);
    assert_eq!(code, 1, "{stdout}");
    assert!(stdout.contains("not reachable from HEAD"), "{stdout}");
    assert_verify_agrees(&fx, "bad", code);
    let (code, stdout, _) = fx.audit(&bad, &repo, "side", &["--live", "--branch", "side"]);
    assert_eq!(code, 0, "{stdout}");
    assert_eq!(snapshot(&repo), before, "live mode wrote to the repository");
}

#[test]
fn the_task_ledger_is_not_called_ledger() {
    // `--ledger` is evident's decision ledger in every other command; here it is refused,
    // and clap points at the option meant.
    let out = evident()
        .args([
            "audit", "closeout", "--claims", "c.json", "--ledger", "l.json",
        ])
        .args(["--repo", ".", "--out", "records"])
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(2));
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(
        err.contains("--ledger") && err.contains("--task-ledger"),
        "{err}"
    );
}

/// The fixture shipped under examples/audit/ is the one the tests rebuild: it passes.
#[test]
#[cfg_attr(
    not(evident_services),
    ignore = "needs pytest (built with --cfg evident_services)"
)]
fn the_shipped_example_fixture_passes() {
    let ex = workspace().join("examples/audit");
    let tmp = tempfile::tempdir().unwrap();
    let out = evident()
        .args(["audit", "closeout", "--claims"])
        .arg(ex.join("closeout_claims.json"))
        .arg("--task-ledger")
        .arg(ex.join("fixture_ledger.json"))
        .arg("--repo")
        .arg(ex.join("fixture"))
        .arg("--out")
        .arg(tmp.path().join("records"))
        .arg("--self-test")
        .output()
        .unwrap();
    let text = String::from_utf8_lossy(&out.stdout);
    assert_eq!(
        out.status.code(),
        Some(0),
        "{text}{}",
        String::from_utf8_lossy(&out.stderr)
    );
    // The shipped inputs are the reference's, unchanged.
    for f in ["closeout_claims.json", "fixture_ledger.json"] {
        assert_eq!(
            std::fs::read(ex.join(f)).unwrap(),
            std::fs::read(data(&format!("input/{f}"))).unwrap(),
            "{f}"
        );
    }
}
