//! The close-out audit end to end, through the library: real git, real pytest, real
//! cargo, on fixture repositories built in temporary directories.

mod common;

use common::*;
use evident_audit::{ClaimStatus, Options, Status, Verdict, closeout, codes};
use serde_json::{Value, json};
use std::path::Path;

struct Env {
    tmp: tempfile::TempDir,
}

impl Env {
    fn new() -> Self {
        let tmp = tempfile::tempdir().unwrap();
        build_fixture(&tmp.path().join("repo"));
        Env { tmp }
    }
    fn path(&self, rel: &str) -> std::path::PathBuf {
        self.tmp.path().join(rel)
    }
    /// Options for claims written to a file, the peer's ledger, and this fixture.
    fn opts(&self, claims: &Value) -> Options {
        let file = self.path("claims.json");
        write_json(&file, claims);
        let mut o = Options::new(
            file,
            data("input/fixture_ledger.json"),
            self.path("repo"),
            self.path("out"),
        );
        o.cargo_target_dir = Some(self.path("cargo-target"));
        o
    }
}

fn read(path: &Path) -> Value {
    serde_json::from_slice(&std::fs::read(path).unwrap()).unwrap()
}

fn claim<'a>(result: &'a Value, id: &str) -> &'a Value {
    result["exercise"]["claims"]
        .as_array()
        .unwrap()
        .iter()
        .find(|c| c["claim_id"] == id)
        .unwrap()
}

fn codes_of(c: &Value) -> Vec<String> {
    c["error_codes"]
        .as_array()
        .unwrap()
        .iter()
        .map(|x| x.as_str().unwrap().to_string())
        .collect()
}

#[test]
#[cfg_attr(
    not(evident_services),
    ignore = "needs pytest: .ci/run installs it and runs this (see README, Development)"
)]
fn the_peer_inputs_pass_with_every_negative_case_rejected() {
    if pytest_missing() {
        return;
    }
    let env = Env::new();
    let mut o = Options::new(
        data("input/closeout_claims.json"),
        data("input/fixture_ledger.json"),
        env.path("repo"),
        env.path("out"),
    );
    o.self_test = true;
    o.emit_claim = true;
    let out = closeout(&o).unwrap();
    assert_eq!(out.status, Status::Pass, "{:#}", out.result);
    // The verdict is the rules' decision on the emitted claim (their wording).
    let reason = out.result["claim_verdict_reason"].as_str().unwrap();
    assert!(
        reason.starts_with("Verified: all 2 mutations are covered"),
        "{reason}"
    );
    assert_eq!(out.result["claim_verdict_unmet"], json!([]));
    assert_eq!(out.verdict, Verdict::Verified);
    let r = read(&env.path("out/agent_closeout_faithfulness_audit_result.json"));
    assert_eq!(r, out.result);
    let ex = &r["exercise"];
    assert_eq!(ex["claim_count"], 3);
    assert_eq!(ex["verified_claim_count"], 3);
    assert_eq!(ex["pytest_span_ran_count"], 1);
    assert_eq!(ex["pytest_pass_status_checked_count"], 1);
    let w = &ex["external_witness"];
    // the peer's six setup subprocesses plus one rev-parse of the claimed ref
    assert_eq!(w["git_subprocess_count"], 7);
    assert_eq!(w["pytest_subprocess_count"], 1);
    assert_eq!(w["head_verified_by_subprocess"], true);
    let head = w["observed_head"].as_str().unwrap();
    assert_eq!(head.len(), 40);
    let span = &ex["spans"][0];
    assert_eq!(span["nodeid"], PEER_NODE);
    assert_eq!(
        (span["span_ran"].clone(), span["passed"].clone()),
        (json!(true), json!(true))
    );
    assert_eq!(span["returncode"], 0);
    assert_eq!(span["stderr_sha256"].as_str().unwrap().len(), 64);
    // negative cases: all four observed, each through the evaluator with its code
    assert_eq!(r["negative_case_status"], "pass");
    assert_eq!(r["missing_negative_cases"], json!([]));
    let expected: Vec<Value> = read(&data(
        "expected/agent_closeout_faithfulness_audit_result.json",
    ))["expected_negative_cases"]
        .as_array()
        .unwrap()
        .clone();
    assert_eq!(r["expected_negative_cases"], json!(expected));
    assert_eq!(r["observed_negative_cases"], json!(expected));
    for case in r["negative_case_semantics"].as_array().unwrap() {
        assert_eq!(case["semantic_evaluator_used"], true);
        assert_eq!(case["observed"], true);
        let want = case["expected_error_code"].as_str().unwrap();
        assert!(codes_of(case).iter().any(|c| c == want), "{case:#}");
        // the peer's own negative-case file names the same code
        let peer = read(&data(&format!(
            "input/{}.json",
            case["case_id"].as_str().unwrap()
        )));
        assert_eq!(peer["error_codes"][0], want);
    }
    // the fake test case ran a real pytest span that collected nothing
    let rows = r["subprocesses"].as_array().unwrap();
    assert!(rows.iter().any(|row| {
        row["args"]
            .as_array()
            .unwrap()
            .iter()
            .any(|a| a == "tests/test_closeout_fixture.py::test_missing_node")
            && row["returncode"] == 4
    }));
    assert_eq!(r["receipt_body_scan"]["status"], "pass");
    assert!(
        r["receipt_body_scan"]["scanned_output_line_count"]
            .as_u64()
            .unwrap()
            > 0
    );
    // the peer's board and receipt keys are all present in ours
    for (file, skip) in [
        ("board", &["source_module_count"][..]),
        (
            "validation_receipt",
            &["secret_exclusion_status", "source_module_manifest_status"][..],
        ),
    ] {
        let name = format!("agent_closeout_faithfulness_audit_{file}.json");
        let peer = read(&data(&format!("expected/{name}")));
        let ours = read(&env.path(&format!("out/{name}")));
        let (mut pk, mut ok) = (Vec::new(), Vec::new());
        keys(&peer, "", &mut pk);
        keys(&ours, "", &mut ok);
        for k in pk {
            if skip.iter().any(|s| k.ends_with(s)) || k.starts_with(".authority_ceiling") {
                continue;
            }
            assert!(ok.contains(&k), "{name}: missing {k}");
        }
        assert_eq!(ours["status"], "pass");
    }
    // every subprocess row is metadata only
    for row in rows {
        let obj = row.as_object().unwrap();
        for k in obj.keys() {
            assert!(
                [
                    "role",
                    "args",
                    "returncode",
                    "signal",
                    "timed_out",
                    "spawn_error",
                    "stdout_sha256",
                    "stderr_sha256",
                    "stdout_bytes",
                    "stderr_bytes",
                    "duration_ms",
                    "body_in_receipt"
                ]
                .contains(&k.as_str()),
                "unexpected key {k}"
            );
        }
    }
    assert!(
        env.path("out/agent_closeout_completion_claim.json")
            .is_file()
    );
}

#[test]
#[cfg_attr(
    not(evident_services),
    ignore = "needs pytest: .ci/run installs it and runs this (see README, Development)"
)]
fn each_negative_case_as_its_own_claims_file_is_rejected_with_its_code() {
    if pytest_missing() {
        return;
    }
    let env = Env::new();
    let cases = [
        (
            commit("c", &"0".repeat(40)),
            codes::FAKE_COMMIT,
            ClaimStatus::Rejected,
        ),
        (
            commit("c", "no-such-ref"),
            codes::FAKE_COMMIT,
            ClaimStatus::Rejected,
        ),
        (
            cap("c", "cap_not_in_ledger"),
            codes::FAKE_CAP,
            ClaimStatus::Rejected,
        ),
        (
            pytest(
                "c",
                "tests/test_closeout_fixture.py::test_missing_node",
                true,
                true,
            ),
            codes::FAKE_TEST,
            ClaimStatus::Rejected,
        ),
        (
            pytest("c", PEER_NODE, true, false),
            codes::PASS_STATUS_NOT_CHECKED,
            ClaimStatus::Unverified,
        ),
    ];
    for (c, code, status) in cases {
        let out = closeout(&env.opts(&claims_doc(json!([c.clone()])))).unwrap();
        let got = claim(&out.result, "c");
        assert!(codes_of(got).iter().any(|x| x == code), "{c}: {got:#}");
        assert_eq!(got["status"], json!(status), "{c}");
        let want = if status == ClaimStatus::Rejected {
            Status::Rejected
        } else {
            Status::Unverified
        };
        assert_eq!(out.status, want, "{c}");
    }
    // spans only: no mutation for the rules to decide; the audit's own rule, said so
    let out =
        closeout(&env.opts(&claims_doc(json!([pytest("c", PEER_NODE, true, true)])))).unwrap();
    assert_eq!(out.status, Status::Pass, "{:#}", out.result);
    let reason = out.result["claim_verdict_reason"].as_str().unwrap();
    assert!(reason.contains("only test spans"), "{reason}");
    // the peer saw both codes on its fake test case: the span neither ran nor passed
    let out = closeout(&env.opts(&claims_doc(json!([pytest(
        "c",
        "tests/test_closeout_fixture.py::test_missing_node",
        true,
        true
    )]))))
    .unwrap();
    assert_eq!(
        codes_of(claim(&out.result, "c")),
        vec![codes::FAKE_TEST, codes::PASS_STATUS_NOT_CHECKED]
    );
}

#[test]
#[cfg_attr(
    not(evident_services),
    ignore = "needs pytest: .ci/run installs it and runs this (see README, Development)"
)]
fn a_missing_repo_blocks_with_its_code_and_still_writes_records() {
    if pytest_missing() {
        return;
    }
    let env = Env::new();
    let mut o = Options::new(
        data("input/closeout_claims.json"),
        data("input/fixture_ledger.json"),
        env.path("no-such-dir"),
        env.path("out"),
    );
    o.self_test = true;
    o.emit_claim = true;
    let out = closeout(&o).unwrap();
    assert_eq!(out.status, Status::Blocked);
    assert_eq!(out.verdict, Verdict::Unverified);
    assert_eq!(out.result["error_codes"], json!([codes::REPO_MISSING]));
    assert_eq!(out.result["negative_case_status"], "blocked");
    assert_eq!(
        out.result["exercise"]["external_witness"]["git_subprocess_count"],
        0
    );
    let claim = read(&env.path("out/agent_closeout_completion_claim.json"));
    for e in claim["evidence"].as_array().unwrap() {
        assert_eq!(e["verifier"]["kind"], "absent");
    }
    // a file is not a repository either
    let mut o = o.clone();
    o.repo = data("input/closeout_claims.json");
    assert_eq!(closeout(&o).unwrap().status, Status::Blocked);
}

#[test]
#[cfg_attr(
    not(evident_services),
    ignore = "needs pytest: .ci/run installs it and runs this (see README, Development)"
)]
fn ran_and_passed_are_separate_facts_for_pytest() {
    if pytest_missing() {
        return;
    }
    let env = Env::new();
    let failing = "tests/test_other.py::test_known_failure";
    let skipped = "tests/test_other.py::test_skipped";
    let out = closeout(&env.opts(&claims_doc(json!([
        pytest("fails_pass", failing, true, true),
        pytest("fails_ran", failing, false, false),
        pytest("skipped", skipped, false, false),
        pytest("missing_file", "tests/nope.py", false, false),
    ]))))
    .unwrap();
    let r = &out.result;
    let span = |id: &str| {
        r["exercise"]["spans"]
            .as_array()
            .unwrap()
            .iter()
            .find(|s| s["claim_id"] == id)
            .unwrap()
            .clone()
    };
    // a test that fails: ran, not passed
    assert_eq!(
        (
            span("fails_pass")["span_ran"].clone(),
            span("fails_pass")["passed"].clone()
        ),
        (json!(true), json!(false))
    );
    assert_eq!(span("fails_pass")["returncode"], 1);
    assert_eq!(
        codes_of(claim(r, "fails_pass")),
        vec![codes::PASS_STATUS_NOT_CHECKED]
    );
    assert_eq!(claim(r, "fails_pass")["status"], "rejected");
    // claiming only that it ran is true
    assert_eq!(claim(r, "fails_ran")["status"], "verified");
    // a skipped test exits 0 but did not run
    assert_eq!(span("skipped")["returncode"], 0);
    assert_eq!(span("skipped")["span_ran"], false);
    assert_eq!(codes_of(claim(r, "skipped")), vec![codes::FAKE_TEST]);
    assert_eq!(codes_of(claim(r, "missing_file")), vec![codes::FAKE_TEST]);
    assert_eq!(out.status, Status::Rejected);
    assert_eq!(r["exercise"]["pytest_span_ran_count"], 2);
    assert_eq!(r["exercise"]["pytest_pass_status_checked_count"], 0);
}

#[test]
#[cfg_attr(
    not(evident_services),
    ignore = "needs pytest: .ci/run installs it and runs this (see README, Development)"
)]
fn cargo_spans_pass_fail_and_do_not_run() {
    if pytest_missing() {
        return;
    }
    let env = Env::new();
    let out = closeout(&env.opts(&claims_doc(json!([
        commit("head", "HEAD"),
        cargo("adds", "tests::adds", true, true),
        cargo("fails", "tests::fails", true, true),
        cargo("missing", "tests::does_not_exist", true, true),
    ]))))
    .unwrap();
    let r = &out.result;
    assert_eq!(r["receipt_body_scan"]["status"], "pass", "{r:#}");
    assert_eq!(claim(r, "head")["status"], "verified");
    assert_eq!(claim(r, "adds")["status"], "verified", "{r:#}");
    assert_eq!(claim(r, "fails")["status"], "rejected");
    assert_eq!(
        codes_of(claim(r, "fails")),
        vec![codes::PASS_STATUS_NOT_CHECKED]
    );
    assert_eq!(claim(r, "fails")["observed"]["ran"], true);
    assert_eq!(claim(r, "missing")["observed"]["ran"], false);
    assert_eq!(
        codes_of(claim(r, "missing")),
        vec![codes::FAKE_TEST, codes::PASS_STATUS_NOT_CHECKED]
    );
    assert_eq!(
        r["exercise"]["external_witness"]["cargo_subprocess_count"],
        3
    );
    assert_eq!(r["exercise"]["test_span_ran_count"], 2);
    // self-test through a cargo span: the fake test mutation names a missing test
    let mut o = env.opts(&claims_doc(json!([
        commit("head", "HEAD"),
        cap("cap", "cap_fixture_closeout_receipt_exists"),
        cargo("adds", "tests::adds", true, true),
    ])));
    o.self_test = true;
    let out = closeout(&o).unwrap();
    assert_eq!(out.status, Status::Pass, "{:#}", out.result);
    let fake = out.result["negative_case_semantics"]
        .as_array()
        .unwrap()
        .iter()
        .find(|c| c["case_id"] == "fake_test_claim")
        .unwrap()
        .clone();
    assert_eq!(fake["mutation"]["to"], "tests::test_missing_node");
    assert_eq!(fake["mutation"]["field"], "test");
}

#[test]
#[cfg_attr(
    not(evident_services),
    ignore = "needs pytest: .ci/run installs it and runs this (see README, Development)"
)]
fn self_test_fails_when_a_rejection_cannot_be_shown() {
    if pytest_missing() {
        return;
    }
    let env = Env::new();
    let mut o = env.opts(&claims_doc(json!([
        commit("head", "HEAD"),
        cap("cap", "cap_fixture_closeout_receipt_exists"),
    ])));
    o.self_test = true;
    let out = closeout(&o).unwrap();
    assert_eq!(out.status, Status::Fail);
    assert_eq!(out.verdict, Verdict::Verified);
    assert_eq!(
        out.result["missing_negative_cases"],
        json!(["fake_test_claim", "unchecked_pass_claim"])
    );
    assert_eq!(
        read(&env.path("out/agent_closeout_faithfulness_audit_validation_receipt.json"))["negative_case_status"],
        "fail"
    );
    assert!(
        out.result["error_codes"]
            .as_array()
            .unwrap()
            .contains(&json!(codes::NEGATIVE_CASE_MISSING))
    );
}

#[test]
fn live_mode_checks_ancestry_and_never_writes() {
    let tmp = tempfile::tempdir().unwrap();
    let repo = tmp.path().join("live");
    let (first, head, side) = build_live_repo(&repo);
    let claims = tmp.path().join("claims.json");
    write_json(
        &claims,
        &claims_doc(json!([
            commit("first", &first),
            commit("head", &head),
            commit("short", &first[..10]),
            commit("main", "main"),
            commit("side", &side),
            commit("zeros", &"0".repeat(40)),
            cap("cap", "cap_fixture_closeout_receipt_exists"),
            pytest("span", PEER_NODE, true, true),
            cargo("adds", "tests::adds", true, true),
        ])),
    );
    let before = snapshot(&repo);
    let mut o = Options::new(
        claims.clone(),
        data("input/fixture_ledger.json"),
        repo.clone(),
        tmp.path().join("out"),
    );
    o.live = true;
    o.self_test = true;
    o.emit_claim = true;
    o.cargo_target_dir = Some(tmp.path().join("cargo-target"));
    let out = closeout(&o).unwrap();
    let r = &out.result;
    for id in ["first", "head", "short", "main", "cap", "span", "adds"] {
        assert_eq!(
            claim(r, id)["status"],
            "verified",
            "{id}: {:#}",
            claim(r, id)
        );
    }
    // a commit that exists but is not an ancestor of HEAD is refused
    assert_eq!(claim(r, "side")["status"], "rejected");
    assert_eq!(claim(r, "side")["observed"]["resolves"], true);
    assert_eq!(claim(r, "side")["observed"]["reachable"], false);
    assert_eq!(codes_of(claim(r, "side")), vec![codes::FAKE_COMMIT]);
    assert_eq!(codes_of(claim(r, "zeros")), vec![codes::FAKE_COMMIT]);
    assert_eq!(out.status, Status::Rejected);
    assert_eq!(r["negative_case_status"], "pass");
    assert_eq!(
        r["exercise"]["external_witness"]["observed_head"],
        head.as_str()
    );
    // nothing in the repository changed: no commit, no write, not even .git
    assert_eq!(snapshot(&repo), before, "live mode wrote to the repository");
    assert_eq!(git(&repo, &["rev-parse", "HEAD"]), head);
    assert_eq!(git(&repo, &["status", "--porcelain"]), "");

    // with --branch side, the side commit is reachable and the main head is not
    write_json(
        &claims,
        &claims_doc(json!([commit("side", &side), commit("head", &head)])),
    );
    o.branch = Some("side".into());
    o.self_test = false;
    let out = closeout(&o).unwrap();
    assert_eq!(claim(&out.result, "side")["status"], "verified");
    assert_eq!(claim(&out.result, "head")["status"], "rejected");
    // --out inside the repository is refused before anything is written
    let mut inside = o.clone();
    inside.out = repo.join("records/new");
    let e = closeout(&inside).unwrap_err().to_string();
    assert!(e.contains("live mode never writes"), "{e}");
    assert!(!repo.join("records").exists());
    o.branch = Some("no-such-branch".into());
    assert!(
        closeout(&o)
            .unwrap_err()
            .to_string()
            .contains("no-such-branch")
    );

    // a directory that is not a git work tree blocks with the repo code
    let plain = tmp.path().join("plain");
    std::fs::create_dir_all(&plain).unwrap();
    o.branch = None;
    o.repo = plain;
    let out = closeout(&o).unwrap();
    assert_eq!(out.status, Status::Blocked);
    assert_eq!(out.result["error_codes"], json!([codes::REPO_MISSING]));
}

#[test]
#[cfg_attr(
    not(evident_services),
    ignore = "needs pytest: .ci/run installs it and runs this (see README, Development)"
)]
fn the_emitted_claim_is_seed_000_shaped() {
    if pytest_missing() {
        return;
    }
    let env = Env::new();
    let mut o = Options::new(
        data("input/closeout_claims.json"),
        data("input/fixture_ledger.json"),
        env.path("repo"),
        env.path("out"),
    );
    o.emit_claim = true;
    closeout(&o).unwrap();
    let c = read(&env.path("out/agent_closeout_completion_claim.json"));
    assert_eq!(c["spec_version"], "0.1");
    let muts = c["mutations"].as_array().unwrap();
    assert_eq!(muts.len(), 2);
    assert_eq!(muts[0]["kind"], "code_change");
    assert_eq!(muts[1]["kind"], "state_write");
    assert_eq!(
        c["claimed_outcome"],
        format!(
            "I committed the change (HEAD), closed the ledger item cap_fixture_closeout_receipt_exists, and the test {PEER_NODE} passed."
        )
    );
    let ev = c["evidence"].as_array().unwrap();
    let types: Vec<&str> = ev
        .iter()
        .map(|e| e["check_type"].as_str().unwrap())
        .collect();
    assert_eq!(types, ["state_readback", "state_readback", "test_run"]);
    let parse = |s: &Value| {
        time::OffsetDateTime::parse(
            s.as_str().unwrap(),
            &time::format_description::well_known::Rfc3339,
        )
        .unwrap()
    };
    for e in ev {
        assert_eq!(e["verifier"]["kind"], "independent");
        assert!(
            e["verifier"]["id"]
                .as_str()
                .unwrap()
                .starts_with("evident/")
        );
        for id in e["covers"].as_array().unwrap() {
            let m = muts.iter().find(|m| &m["id"] == id).unwrap();
            assert!(
                parse(&e["at"]) > parse(&m["at"]),
                "evidence must follow the mutation"
            );
        }
    }
    assert_eq!(ev[2]["covers"], json!(["claim_public_head_exists"]));
    assert_eq!(ev[2]["observed_value"]["passed"], true);
    assert_eq!(
        c["policy"]["requires"],
        json!(["state_readback", "test_run"])
    );
}

#[test]
#[cfg_attr(
    not(evident_services),
    ignore = "needs pytest: .ci/run installs it and runs this (see README, Development)"
)]
fn bad_inputs_are_errors_naming_file_and_path() {
    if pytest_missing() {
        return;
    }
    let env = Env::new();
    let o = env.opts(&json!({"schema_version": "closeout_faithfulness_claims_v1", "claims": [
        {"claim_id": "a", "claim_type": "pytest_span", "nodeid": "--rootdir=/", "expected_pass": true, "pass_status_checked": true}
    ]}));
    let e = closeout(&o).unwrap_err().to_string();
    assert!(
        e.contains("claims.json: $.claims[0].nodeid: must not start with '-'"),
        "{e}"
    );
    std::fs::write(
        env.path("claims.json"),
        r#"{"schema_version":"x","schema_version":"y"}"#,
    )
    .unwrap();
    let e = closeout(&o).unwrap_err().to_string();
    assert!(
        e.contains("claims.json: $.schema_version: duplicate key"),
        "{e}"
    );
    let mut o2 = o.clone();
    o2.ledger = env.path("nope.json");
    write_json(
        &env.path("claims.json"),
        &claims_doc(json!([commit("a", "HEAD")])),
    );
    let e = closeout(&o2).unwrap_err().to_string();
    assert!(e.contains("nope.json"), "{e}");
    // --branch without --live is a usage error
    let mut o3 = o.clone();
    o3.branch = Some("main".into());
    assert!(closeout(&o3).unwrap_err().to_string().contains("--live"));
}

#[test]
#[cfg_attr(
    not(evident_services),
    ignore = "needs pytest: .ci/run installs it and runs this (see README, Development)"
)]
fn runners_that_cannot_observe_block_and_never_pass() {
    if pytest_missing() {
        return;
    }
    let env = Env::new();
    std::fs::write(
        env.path("repo/tests/test_slow.py"),
        "import time\n\n\ndef test_slow():\n    time.sleep(60)\n",
    )
    .unwrap();
    // a span that outlives its timeout is blocked, and the process group is killed
    let mut o = env.opts(&claims_doc(json!([
        commit("head", "HEAD"),
        pytest("slow", "tests/test_slow.py::test_slow", true, true),
    ])));
    o.test_timeout = std::time::Duration::from_secs(3);
    let t = std::time::Instant::now();
    let out = closeout(&o).unwrap();
    assert!(t.elapsed() < std::time::Duration::from_secs(40));
    assert_eq!(out.status, Status::Blocked);
    assert_eq!(out.verdict, Verdict::Unverified);
    assert_eq!(
        codes_of(claim(&out.result, "slow")),
        vec![codes::RUNNER_TIMEOUT]
    );
    assert_eq!(claim(&out.result, "slow")["status"], "blocked");
    // no interpreter with pytest
    let mut o = env.opts(&claims_doc(json!([pytest("p", PEER_NODE, true, true)])));
    o.python = Some("/nonexistent/python3".into());
    let out = closeout(&o).unwrap();
    assert_eq!(out.status, Status::Blocked);
    assert_eq!(
        codes_of(claim(&out.result, "p")),
        vec![codes::RUNNER_UNAVAILABLE]
    );
    // go: there is no Go toolchain on the machine these tests were written on; when
    // `go` cannot start, the span is blocked (never "did not run", never passed)
    let go_missing = std::process::Command::new("go")
        .arg("version")
        .output()
        .is_err();
    if go_missing {
        let o = env.opts(&claims_doc(
            json!([{"claim_id": "g", "claim_type": "go_test_span",
            "run": "^TestAdd$", "expected_pass": true, "pass_status_checked": true}]),
        ));
        let out = closeout(&o).unwrap();
        assert_eq!(out.status, Status::Blocked);
        assert_eq!(
            codes_of(claim(&out.result, "g")),
            vec![codes::RUNNER_UNAVAILABLE]
        );
        assert_eq!(
            out.result["subprocesses"]
                .as_array()
                .unwrap()
                .last()
                .unwrap()["args"],
            json!(["go", "test", "-json", "-count=1", "-run=^TestAdd$", "./..."])
        );
    }
}

#[test]
#[cfg_attr(
    not(evident_services),
    ignore = "needs pytest: .ci/run installs it and runs this (see README, Development)"
)]
fn self_test_fails_when_a_mutated_claim_is_not_rejected() {
    if pytest_missing() {
        return;
    }
    // The fixture happens to define the very test the fake-test mutation names, so the
    // mutated claim runs and passes: the audit must notice that the rejection is gone.
    let env = Env::new();
    let file = env.path("repo/tests/test_closeout_fixture.py");
    let mut text = std::fs::read_to_string(&file).unwrap();
    text.push_str("\n\ndef test_missing_node():\n    assert True\n");
    std::fs::write(&file, text).unwrap();
    let mut o = Options::new(
        data("input/closeout_claims.json"),
        data("input/fixture_ledger.json"),
        env.path("repo"),
        env.path("out"),
    );
    o.self_test = true;
    let out = closeout(&o).unwrap();
    assert_eq!(out.verdict, Verdict::Verified);
    assert_eq!(out.status, Status::Fail);
    assert_eq!(
        out.result["missing_negative_cases"],
        json!(["fake_test_claim"])
    );
    let case = out.result["negative_case_semantics"]
        .as_array()
        .unwrap()
        .iter()
        .find(|c| c["case_id"] == "fake_test_claim")
        .unwrap()
        .clone();
    assert_eq!(case["observed"], false);
    assert_eq!(case["status"], "verified");
    assert_eq!(case["semantic_evaluator_used"], true);
}

#[test]
fn a_shallow_live_clone_blocks_instead_of_refuting_what_it_cannot_see() {
    let tmp = tempfile::tempdir().unwrap();
    let full = tmp.path().join("full");
    let (first, head, _side) = build_live_repo(&full);
    let shallow = tmp.path().join("shallow");
    let url = format!("file://{}", full.display());
    git(
        tmp.path(),
        &[
            "clone",
            "-q",
            "--depth",
            "1",
            "--branch",
            "main",
            &url,
            shallow.to_str().unwrap(),
        ],
    );
    let claims = tmp.path().join("claims.json");
    write_json(
        &claims,
        &claims_doc(json!([
            commit("head", &head),
            commit("old", &first),
            commit("zeros", &"0".repeat(40)),
            commit("name", "no-such-branch"),
        ])),
    );
    let mut o = Options::new(
        claims,
        data("input/fixture_ledger.json"),
        shallow,
        tmp.path().join("out"),
    );
    o.live = true;
    let out = closeout(&o).unwrap();
    let r = &out.result;
    assert_eq!(claim(r, "head")["status"], "verified");
    // the first commit is beyond the shallow cut: not observable, so blocked
    assert_eq!(claim(r, "old")["status"], "blocked");
    assert_eq!(codes_of(claim(r, "old")), vec![codes::GIT_FAILED]);
    assert_eq!(claim(r, "zeros")["status"], "rejected");
    assert_eq!(claim(r, "name")["status"], "rejected");
    assert_eq!(out.status, Status::Rejected);
}

/// Live mode runs git on the agent's repository (config list, rev-parse, clone,
/// checkout, merge-base) hardened like the gate's git probe: no program named in its
/// config runs, and `core.worktree` (a shadow work tree) blocks the audit.
#[test]
fn live_mode_runs_no_program_from_the_repository_config() {
    use std::os::unix::fs::PermissionsExt;
    let tmp = tempfile::tempdir().unwrap();
    let repo = tmp.path().join("live");
    let (first, _, _) = build_live_repo(&repo);
    std::fs::write(repo.join(".gitattributes"), "* filter=x diff=x\n").unwrap();
    git(&repo, &["add", ".gitattributes"]);
    git(&repo, &["commit", "-q", "-m", "attributes"]);
    let head = git(&repo, &["rev-parse", "HEAD"]);
    let marker = tmp.path().join("CANARY-RAN");
    let canary = tmp.path().join("canary.sh");
    std::fs::write(
        &canary,
        format!("#!/bin/sh\necho \"$0 $*\" >> '{}'\ncat\n", marker.display()),
    )
    .unwrap();
    std::fs::set_permissions(&canary, std::fs::Permissions::from_mode(0o755)).unwrap();
    let c = canary.display().to_string();
    let hooks = tmp.path().join("hooks");
    std::fs::create_dir_all(&hooks).unwrap();
    for h in [
        "post-checkout",
        "reference-transaction",
        "post-index-change",
    ] {
        std::fs::copy(&canary, hooks.join(h)).unwrap();
        std::fs::copy(&canary, repo.join(".git/hooks").join(h)).unwrap();
    }
    for (k, v) in [
        ("filter.x.clean", c.as_str()),
        ("filter.x.smudge", &c),
        ("filter.x.required", "true"),
        ("diff.x.textconv", &c),
        ("core.fsmonitor", &c),
        ("core.pager", &c),
        ("core.alternateRefsCommand", &c),
        ("core.hooksPath", &hooks.display().to_string()),
    ] {
        git(&repo, &["config", k, v]);
    }
    let claims = tmp.path().join("claims.json");
    write_json(
        &claims,
        &claims_doc(json!([
            commit("first", &first),
            commit("head", &head),
            cargo("adds", "tests::adds", true, true),
        ])),
    );
    let mut o = Options::new(
        claims,
        data("input/fixture_ledger.json"),
        repo.clone(),
        tmp.path().join("out"),
    );
    o.live = true;
    o.cargo_target_dir = Some(tmp.path().join("cargo-target"));
    let out = closeout(&o).unwrap();
    assert_eq!(claim(&out.result, "first")["status"], "verified");
    // The span ran in a clone checked out from the repository.
    assert_eq!(claim(&out.result, "adds")["status"], "verified");
    assert_eq!(claim(&out.result, "head")["status"], "verified");
    assert!(
        !marker.exists(),
        "a program from the repository's config ran: {}",
        std::fs::read_to_string(&marker).unwrap_or_default()
    );

    let shadow = tmp.path().join("shadow");
    std::fs::create_dir_all(&shadow).unwrap();
    git(
        &repo,
        &["config", "core.worktree", &shadow.display().to_string()],
    );
    let out = closeout(&o).unwrap();
    assert_eq!(out.status, Status::Blocked);
    assert_eq!(out.result["error_codes"], json!([codes::GIT_FAILED]));
    assert!(out.result.to_string().contains("core.worktree"));
}

/// A replace ref (`git replace --graft HEAD <side>`) makes plain git report a commit of
/// another branch as an ancestor of HEAD. The audit reads objects as committed
/// (`GIT_NO_REPLACE_OBJECTS=1`, `core.useReplaceRefs=false`): the side commit is still
/// rejected, and the honest claim on HEAD's real ancestor still verifies.
#[test]
fn live_mode_ignores_replace_refs() {
    let tmp = tempfile::tempdir().unwrap();
    let repo = tmp.path().join("live");
    let (first, head, side) = build_live_repo(&repo);
    git(&repo, &["replace", "--graft", &head, &side]);
    // The attack works on git as it is usually run.
    let plain = std::process::Command::new("git")
        .args(["merge-base", "--is-ancestor", &side, &head])
        .current_dir(&repo)
        .status()
        .unwrap();
    assert!(plain.success(), "the replace ref did not take effect");
    let claims = tmp.path().join("claims.json");
    write_json(
        &claims,
        &claims_doc(json!([commit("first", &first), commit("side", &side)])),
    );
    let mut o = Options::new(
        claims,
        data("input/fixture_ledger.json"),
        repo,
        tmp.path().join("out"),
    );
    o.live = true;
    let out = closeout(&o).unwrap();
    assert_eq!(claim(&out.result, "first")["status"], "verified");
    assert_eq!(claim(&out.result, "side")["status"], "rejected");
    assert_eq!(
        codes_of(claim(&out.result, "side")),
        vec![codes::FAKE_COMMIT]
    );
    assert_eq!(out.status, Status::Rejected);
}

/// Fixture mode commits a copy of the fixture: a `.git` planted in it (config naming
/// a canary as fsmonitor, filter driver and hooks path, with `.gitattributes` pointing
/// every file at the filter) is neither copied nor read, and the commit verifies.
#[test]
fn fixture_mode_runs_no_program_from_a_planted_git_config() {
    use std::os::unix::fs::PermissionsExt;
    let tmp = tempfile::tempdir().unwrap();
    let repo = tmp.path().join("repo");
    build_fixture(&repo);
    git(&repo, &["init", "-q"]);
    let marker = tmp.path().join("CANARY-RAN");
    let canary = tmp.path().join("canary.sh");
    std::fs::write(
        &canary,
        format!("#!/bin/sh\necho \"$0 $*\" >> '{}'\ncat\n", marker.display()),
    )
    .unwrap();
    std::fs::set_permissions(&canary, std::fs::Permissions::from_mode(0o755)).unwrap();
    let c = canary.display().to_string();
    for (k, v) in [
        ("filter.x.clean", c.as_str()),
        ("filter.x.smudge", &c),
        ("filter.x.process", &c),
        ("filter.x.required", "true"),
        ("core.fsmonitor", &c),
        ("core.hooksPath", &tmp.path().display().to_string()),
    ] {
        git(&repo, &["config", k, v]);
    }
    std::fs::copy(&canary, tmp.path().join("pre-commit")).unwrap();
    std::fs::write(repo.join(".gitattributes"), "* filter=x\n").unwrap();
    let claims = tmp.path().join("claims.json");
    write_json(&claims, &claims_doc(json!([commit("head", "HEAD")])));
    let o = Options::new(
        claims,
        data("input/fixture_ledger.json"),
        repo,
        tmp.path().join("out"),
    );
    let out = closeout(&o).unwrap();
    assert_eq!(
        claim(&out.result, "head")["status"],
        "verified",
        "{:#}",
        out.result
    );
    assert!(
        !marker.exists(),
        "a program from the planted config ran: {}",
        std::fs::read_to_string(&marker).unwrap_or_default()
    );
}

/// A span whose test starts a daemon in a session of its own (out of the runner's
/// process group, so the group kill misses it): the shared reaper adopts and kills it
/// when the span ends, and the honest span still verifies.
#[test]
#[cfg_attr(
    not(evident_services),
    ignore = "needs pytest: .ci/run installs it and runs this (see README, Development)"
)]
fn a_daemon_the_span_starts_does_not_outlive_it() {
    if pytest_missing() {
        return;
    }
    let env = Env::new();
    let pid_file = env.path("daemon.pid");
    std::fs::write(
        env.path("repo/tests/test_daemon.py"),
        format!(
            "import subprocess\n\n\ndef test_daemon():\n    p = subprocess.Popen(['sleep', '300'], start_new_session=True)\n    open({:?}, 'w').write(str(p.pid))\n",
            pid_file.display().to_string()
        ),
    )
    .unwrap();
    let out = closeout(&env.opts(&claims_doc(json!([
        commit("head", "HEAD"),
        pytest("d", "tests/test_daemon.py::test_daemon", true, true),
    ]))))
    .unwrap();
    assert_eq!(
        claim(&out.result, "d")["status"],
        "verified",
        "{:#}",
        out.result
    );
    let pid = std::fs::read_to_string(&pid_file).unwrap();
    let stat = std::fs::read_to_string(format!("/proc/{}/stat", pid.trim())).unwrap_or_default();
    // Gone, or at most a zombie waiting to be reaped.
    assert!(
        stat.is_empty() || stat.split_whitespace().nth(2) == Some("Z"),
        "the daemon {pid} outlived the span: {stat}"
    );
    assert_eq!(out.status, Status::Pass);
}
