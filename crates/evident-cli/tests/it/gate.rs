//! `evident gate` through the real binary: the README's example, JSON and JUnit output,
//! exit codes, recording, and that no secret from the environment is ever printed.

use serde_json::Value;
use std::path::{Path, PathBuf};

use crate::support::{evident_in, git, run, workspace};

#[test]
fn the_readme_example_verifies_and_its_twin_is_refuted() {
    let tmp = tempfile::tempdir().unwrap();
    let contract = workspace().join("examples/billing/contract.toml");
    let junit = tmp.path().join("junit.xml");
    let (code, out, err) = run(evident_in(tmp.path())
        .arg("gate")
        .arg(&contract)
        .arg(workspace().join("examples/billing/claim.json"))
        .arg("--junit")
        .arg(&junit));
    assert_eq!(code, 0, "{out}\n{err}");
    assert!(out.contains("verdict   VERIFIED"), "{out}");
    assert!(out.contains(r#"gate check "unit-tests" ran in"#), "{out}");
    assert!(err.contains("recorded as #1"), "{err}");
    let xml = std::fs::read_to_string(&junit).unwrap();
    assert!(
        xml.contains(r#"name="zip-4471""#) && xml.contains(r#"name="verdict""#),
        "{xml}"
    );

    let (code, out, _) = run(evident_in(tmp.path())
        .arg("gate")
        .arg(workspace().join("examples/billing/contract-4472.toml"))
        .arg(workspace().join("examples/billing/claim-refuted.json"))
        .arg("--json"));
    assert_eq!(code, 1, "{out}");
    let doc: Value = serde_json::from_str(&out).unwrap();
    assert_eq!(doc["verdict"]["state"], "refuted");
    // The agent's own "independent" readback did not count: it carries no signature.
    assert_eq!(
        doc["verdict"]["findings"][0]["code"],
        "unauthenticated_independence"
    );
    let checks = doc["gate"]["checks"].as_array().unwrap();
    assert_eq!(checks.len(), 3);
    let zip = checks.iter().find(|c| c["check_id"] == "zip-4472").unwrap();
    assert_eq!(zip["observed"]["billing_zip"], "10002");
    let evidence = doc["evidence"].as_array().unwrap();
    assert_eq!(evidence.len(), 4, "the agent's item plus one per check");
    assert!(
        evidence[1]["verifier"]["id"]
            .as_str()
            .unwrap()
            .starts_with("evident/")
    );
    // The owner's policy replaced the claim's (which had none).
    assert_eq!(doc["policy"]["id"], "billing-4472");
}

fn write(dir: &Path, name: &str, text: &str) -> PathBuf {
    let p = dir.join(name);
    std::fs::write(&p, text).unwrap();
    p
}

fn claim_file(dir: &Path) -> PathBuf {
    let at = time::OffsetDateTime::now_utc() - time::Duration::seconds(30);
    let at = at
        .format(&time::format_description::well_known::Rfc3339)
        .unwrap();
    write(
        dir,
        "claim.json",
        &format!(
            r#"{{"spec_version": "0.1", "task": {{"id": "t"}}, "mutations": [{{"id": "m1", "kind": "code_change", "target": "x", "at": "{at}"}}]}}"#
        ),
    )
}

#[test]
fn unverified_blocks_with_3_and_passes_with_0_under_warn() {
    let tmp = tempfile::tempdir().unwrap();
    let claim = claim_file(tmp.path());
    for (policy, code) in [("block", 3), ("warn", 0), ("record", 0)] {
        let contract = write(
            tmp.path(),
            "c.toml",
            &format!(
                "[policy]\non_unverified = \"{policy}\"\n[[check]]\nid = \"t\"\ncheck_type = \"test_run\"\ncovers = {{ kind = \"code_change\" }}\nsource = {{ command = {{ argv = [\"true\"] }} }}\n"
            ),
        );
        let (got, out, err) = run(evident_in(tmp.path())
            .arg("gate")
            .arg(&contract)
            .arg(&claim));
        assert_eq!(got, code, "{policy}: {out}\n{err}");
        assert!(out.contains("no test ran"), "{out}");
    }
}

#[test]
fn invalid_contracts_exit_2_naming_file_and_path() {
    let tmp = tempfile::tempdir().unwrap();
    let claim = claim_file(tmp.path());
    let contract = write(
        tmp.path(),
        "c.toml",
        "[policy]\n[[check]]\nid = \"t\"\ncheck_type = \"test_run\"\ncovers = { kind = \"code_change\" }\nsource = { command = { argv = [\"true\"], shel = true } }\n",
    );
    let (code, _, err) = run(evident_in(tmp.path())
        .arg("gate")
        .arg(&contract)
        .arg(&claim));
    assert_eq!(code, 2);
    assert!(
        err.contains("c.toml") && err.contains("check[0].source"),
        "{err}"
    );
    let (code, _, err) = run(evident_in(tmp.path())
        .arg("gate")
        .arg(tmp.path().join("none.toml"))
        .arg(&claim));
    assert_eq!(code, 2, "{err}");
}

/// Secrets live in environment variables the contract names; none may appear in the
/// report, in `--json`, on stderr, or in the ledger.
#[test]
fn no_secret_from_the_environment_is_ever_printed() {
    let tmp = tempfile::tempdir().unwrap();
    let claim = claim_file(tmp.path());
    let secret = "hunter2-S3CR3T-value";
    let mut contract = String::from("[policy]\nrequires = [\"test_run\"]\n");
    // A command that prints the secret, with output capture on: it must be scrubbed.
    contract.push_str(
        "[[check]]\nid = \"echo\"\ncheck_type = \"test_run\"\ncovers = { kind = \"code_change\" }\n[check.source.command]\nargv = [\"printenv\", \"TOKEN\"]\nenv = { TOKEN = { env = \"API_TOKEN\" } }\ncapture_output = true\n",
    );
    // An endpoint whose URL (with a password) comes from the environment, unreachable.
    contract.push_str(
        "[[check]]\nid = \"health\"\ncheck_type = \"endpoint_health\"\ncovers = { kind = \"code_change\" }\nsource = { http = { url_env = \"HEALTH_URL\", headers = { Authorization = { env = \"API_TOKEN\" } } } }\nexpected = { status = 200, body_contains = \"ok\" }\n",
    );
    // A database URL with a password: PostgreSQL when available, else an unreachable one.
    let pg = std::env::var("EVIDENT_TEST_POSTGRES_URL")
        .unwrap_or_else(|_| "postgres://postgres@127.0.0.1:1/test".into());
    let pg_with_secret = pg.replacen("postgres@", &format!("postgres:{secret}@"), 1);
    contract.push_str(
        "[[check]]\nid = \"db\"\ncheck_type = \"state_readback\"\ncovers = { kind = \"code_change\" }\nsource = { postgres = { url_env = \"DB_URL\", query = \"SELECT 1 AS one\" } }\nexpected = { one = 1 }\n",
    );
    let contract = write(tmp.path(), "c.toml", &contract);
    for json in [false, true] {
        let mut cmd = evident_in(tmp.path());
        cmd.arg("gate").arg(&contract).arg(&claim);
        if json {
            cmd.arg("--json");
        }
        cmd.env("API_TOKEN", secret)
            .env(
                "HEALTH_URL",
                format!("http://admin:{secret}@127.0.0.1:1/health"),
            )
            .env("DB_URL", &pg_with_secret);
        let (code, out, err) = run(&mut cmd);
        assert!(code == 3 || code == 1 || code == 0, "{code}: {err}");
        assert!(!out.contains(secret), "secret in stdout:\n{out}");
        assert!(!err.contains(secret), "secret in stderr:\n{err}");
        assert!(!out.contains("hunter2"), "partial secret in stdout:\n{out}");
    }
    let ledger = std::fs::read(tmp.path().join("ledger.db")).unwrap();
    assert!(
        !String::from_utf8_lossy(&ledger).contains(secret),
        "secret in the ledger"
    );
}

/// Signed gate evidence verifies under a trust list; one changed byte (a time) makes it
/// unauthenticated, and the verdict drops from verified to unverified.
#[test]
fn signed_evidence_under_a_trust_list() {
    let tmp = tempfile::tempdir().unwrap();
    let key = tmp.path().join("gate.key");
    let (code, _, err) = run(evident_in(tmp.path())
        .args(["key", "generate", "--id", "billing-gate", "--out"])
        .arg(&key));
    assert_eq!(code, 0, "{err}");
    let pubkey = tmp.path().join("gate.key.pub");
    assert!(pubkey.exists());

    let (code, out, err) = run(evident_in(tmp.path())
        .arg("gate")
        .arg(workspace().join("examples/billing/contract.toml"))
        .arg(workspace().join("examples/billing/claim.json"))
        .args(["--json", "--no-record", "--key"])
        .arg(&key));
    assert_eq!(code, 0, "{err}");
    let doc: Value = serde_json::from_str(&out).unwrap();
    let item = &doc["evidence"][1];
    assert_eq!(item["verifier"]["id"], "billing-gate");
    assert!(item["signature"]["signatures"].is_array(), "{item}");
    let signed = write(tmp.path(), "signed.json", &out);

    let verify = |file: &Path, trust: bool| {
        let mut cmd = evident_in(tmp.path());
        cmd.args(["verify", "--no-record", "--json"]).arg(file);
        if trust {
            cmd.arg("--trust").arg(&pubkey);
            cmd.arg("--policy")
                .arg(workspace().join("examples/billing/contract.toml"));
        }
        let (code, out, err) = run(&mut cmd);
        let v: Value = serde_json::from_str(&out).unwrap_or_else(|e| panic!("{e}: {err}"));
        (code, v)
    };
    let (code, v) = verify(&signed, true);
    assert_eq!(code, 0, "{v:#}");
    assert_eq!(v["verdict"]["state"], "verified");

    // Tamper with one byte of a signed item: its time.
    let mut forged = doc.clone();
    let at = forged["evidence"][1]["at"].as_str().unwrap().to_string();
    let last = at.chars().rev().find(|c| c.is_ascii_digit()).unwrap();
    let bumped = if last == '9' {
        '8'
    } else {
        char::from(last as u8 + 1)
    };
    let pos = at.rfind(last).unwrap();
    let mut at2 = at.clone();
    at2.replace_range(pos..pos + 1, &bumped.to_string());
    forged["evidence"][1]["at"] = Value::String(at2);
    let forged_file = write(
        tmp.path(),
        "forged.json",
        &serde_json::to_string(&forged).unwrap(),
    );
    let (code, v) = verify(&forged_file, true);
    assert_eq!(code, 3, "{v:#}");
    assert_eq!(v["verdict"]["state"], "unverified");
    assert_eq!(
        v["verdict"]["findings"][1]["code"],
        "unauthenticated_independence"
    );
    // Replayed into another claim (same mutation ids, another task): the items are bound
    // to the claim they were collected for, so they no longer count.
    let mut replayed = doc.clone();
    replayed["task"]["id"] = Value::String("billing-9999".into());
    let replayed_file = write(
        tmp.path(),
        "replayed.json",
        &serde_json::to_string(&replayed).unwrap(),
    );
    let (code, v) = verify(&replayed_file, true);
    assert_eq!(code, 3, "{v:#}");
    assert_eq!(
        v["verdict"]["findings"][1]["code"],
        "unauthenticated_independence"
    );
    // Without a trust list the same document verifies, and the report says why.
    let (code, v) = verify(&forged_file, false);
    assert_eq!(code, 0);
    let warnings = v["verdict"]["warnings"].to_string();
    assert!(warnings.contains("no trust list"), "{warnings}");
}

/// `--timeout` beyond what a duration or the clock can hold is a usage error or a very
/// long deadline, never a panic (exit 101).
#[test]
fn a_huge_timeout_is_not_a_panic() {
    let tmp = tempfile::tempdir().unwrap();
    std::fs::write(tmp.path().join("f.txt"), "x").unwrap();
    let contract = tmp.path().join("contract.toml");
    std::fs::write(
        &contract,
        "[policy]\nrequires = [\"state_readback\"]\n[[check]]\nid = \"f\"\ncheck_type = \"state_readback\"\ncovers = { id = \"m1\" }\nsource = { file = { path = \"f.txt\" } }\nexpected = { exists = true }\n",
    )
    .unwrap();
    let claim = tmp.path().join("claim.json");
    std::fs::write(
        &claim,
        r#"{"spec_version": "0.1", "task": {"id": "t"}, "mutations": [{"id": "m1", "kind": "state_write", "at": "2020-01-01T00:00:00Z"}]}"#,
    )
    .unwrap();
    for (timeout, want) in [("1e300", 2), ("1e19", 0), ("9.3e18", 0)] {
        let (code, out, err) = run(evident_in(tmp.path())
            .arg("gate")
            .arg(&contract)
            .arg(&claim)
            .args(["--no-record", "--timeout", timeout]));
        assert_eq!(code, want, "--timeout {timeout}: {out}\n{err}");
    }
}

/// `--jobs` past tokio's semaphore limit (2^61 - 1) is not a panic: there are never
/// more checks at once than checks.
#[test]
fn a_huge_jobs_count_is_not_a_panic() {
    let tmp = tempfile::tempdir().unwrap();
    std::fs::write(tmp.path().join("f.txt"), "x").unwrap();
    let contract = tmp.path().join("contract.toml");
    std::fs::write(
        &contract,
        "[policy]\nrequires = [\"state_readback\"]\n[[check]]\nid = \"f\"\ncheck_type = \"state_readback\"\ncovers = { id = \"m1\" }\nsource = { file = { path = \"f.txt\" } }\nexpected = { exists = true }\n",
    )
    .unwrap();
    let claim = tmp.path().join("claim.json");
    std::fs::write(
        &claim,
        r#"{"spec_version": "0.1", "task": {"id": "t"}, "mutations": [{"id": "m1", "kind": "state_write", "at": "2020-01-01T00:00:00Z"}]}"#,
    )
    .unwrap();
    for jobs in ["18446744073709551615", "2305843009213693952"] {
        let (code, out, err) = run(evident_in(tmp.path())
            .arg("gate")
            .arg(&contract)
            .arg(&claim)
            .args(["--no-record", "--jobs", jobs]));
        assert_eq!(code, 0, "--jobs {jobs}: {out}\n{err}");
    }
}

/// Re-verifying the gate's `--json` output with the owner's policy and trust list, at
/// the gate's decision time, gives the gate's verdict; and deleting `max_age_s` from
/// the document's policy no longer revives a day-old signed observation (before the
/// fix, `verify --trust` took the policy from the document the agent holds).
#[test]
fn the_gates_document_re_verifies_to_its_verdict_and_stays_stale_a_day_later() {
    let tmp = tempfile::tempdir().unwrap();
    let key = tmp.path().join("gate.key");
    let (code, _, err) = run(evident_in(tmp.path())
        .args(["key", "generate", "--id", "billing-gate", "--out"])
        .arg(&key));
    assert_eq!(code, 0, "{err}");
    let pubkey = tmp.path().join("gate.key.pub");
    for (contract, claim, state, exit) in [
        ("contract.toml", "claim.json", "verified", 0),
        ("contract-4472.toml", "claim-refuted.json", "refuted", 1),
    ] {
        let contract = workspace().join("examples/billing").join(contract);
        let (code, out, err) = run(evident_in(tmp.path())
            .arg("gate")
            .arg(&contract)
            .arg(workspace().join("examples/billing").join(claim))
            .args(["--json", "--no-record", "--key"])
            .arg(&key));
        assert_eq!(code, exit, "{err}");
        let mut doc: Value = serde_json::from_str(&out).unwrap();
        assert_eq!(doc["verdict"]["state"], state);
        assert!(doc["required_checks"].is_array(), "{doc:#}");
        let decided_at = doc["verdict"]["decided_at"].as_str().unwrap().to_string();
        let verify = |doc: &Value, now: &str, policy: bool| {
            let file = write(tmp.path(), "decided.json", &doc.to_string());
            let mut cmd = evident_in(tmp.path());
            cmd.args(["verify", "--no-record", "--json", "--now", now, "--trust"])
                .arg(&pubkey)
                .arg(&file);
            if policy {
                cmd.arg("--policy").arg(&contract);
            }
            let (code, out, err) = run(&mut cmd);
            (code, serde_json::from_str::<Value>(&out).ok(), err)
        };
        let (code, v, err) = verify(&doc, &decided_at, true);
        assert_eq!(code, exit, "{err}");
        assert_eq!(v.unwrap()["verdict"]["state"], state);

        // A day later, with max_age_s deleted from the document's policy.
        doc["policy"].as_object_mut().unwrap().remove("max_age_s");
        let later = time::OffsetDateTime::parse(
            &decided_at,
            &time::format_description::well_known::Rfc3339,
        )
        .unwrap()
            + time::Duration::days(1);
        let later = later
            .format(&time::format_description::well_known::Rfc3339)
            .unwrap();
        let (code, _, err) = verify(&doc, &later, false);
        assert_eq!(code, 2, "--trust without --policy: {err}");
        let (code, v, err) = verify(&doc, &later, true);
        if state == "verified" {
            assert_eq!(code, 3, "{err}");
            let v = v.unwrap();
            assert_eq!(v["verdict"]["state"], "unverified");
            assert!(
                v["verdict"]["findings"].to_string().contains("stale"),
                "{v:#}"
            );
        } else {
            // A stale contradiction is no longer evidence either way.
            assert_eq!(code, 3, "{err}");
        }
    }
}

/// `evident contract check`: errors the gate refuses (exit 1), warnings (exit 0), each
/// naming the file, line and the fix.
#[test]
fn contract_check_finds_owner_mistakes() {
    let tmp = tempfile::tempdir().unwrap();
    let check = |text: &str| {
        let file = write(tmp.path(), "c.toml", text);
        let (code, out, err) = run(evident_in(tmp.path())
            .args(["contract", "check"])
            .arg(&file));
        (code, format!("{out}{err}"))
    };
    let head = "[policy]\n[[check]]\nid = \"x\"\n";
    for (body, want) in [
        (
            "check_type = \"state_readback\"\ncovers = { id = \"m1\" }\nsource = { sqlite = { path = \"a.db\", query = \"SELECT 1\" } }\nexpected = { row_count = \"1\" }\n",
            "row_count as an integer",
        ),
        (
            "check_type = \"endpoint_health\"\ncovers = { id = \"m1\" }\nsource = { http = { url = \"http://127.0.0.1:1/\" } }\nexpected = { status = \"200\" }\n",
            "write 200",
        ),
        (
            "check_type = \"endpoint_health\"\ncovers = { id = \"m1\" }\nsource = { http = { url = \"http://127.0.0.1:1/\", headers = { Authorization = \"Bearer abc\" } } }\nexpected = { status = 200, body_contains = \"ok\" }\n",
            "{ env = \"VARIABLE\" }",
        ),
        (
            "check_type = \"state_readback\"\ncovers = { kind = \"\" }\napplies = \"when_covered\"\nsource = { file = { path = \"f\" } }\nexpected = { exists = true }\n",
            "can select no mutation",
        ),
    ] {
        let (code, out) = check(&format!("{head}{body}"));
        assert_eq!(code, 1, "{out}");
        assert!(
            out.contains("c.toml:") && out.contains(want),
            "{want}: {out}"
        );
    }
    for (body, want) in [
        (
            "check_type = \"state_readback\"\ncovers = { target = \"**\" }\nsource = { file = { path = \"f\" } }\nexpected = { exists = true }\n",
            "matches every target",
        ),
        (
            "check_type = \"state_readback\"\ncovers = { target = \"accounts/*\" }\nsource = { sqlite = { path = \"a.db\", query = \"SELECT zip FROM a WHERE id = ?1\", params = [\"4471\"] } }\nexpected = { zip = \"1\" }\n",
            "one fixed record",
        ),
        (
            "check_type = \"state_readback\"\ncovers = { kind = \"state_write\" }\nsource = { sqlite = { path = \"a.db\", query = \"SELECT zip FROM a WHERE id = '4471'\" } }\nexpected = { zip = \"1\" }\n",
            "by kind alone",
        ),
        (
            "check_type = \"endpoint_health\"\ncovers = { id = \"m1\" }\nsource = { http = { url = \"http://127.0.0.1:1/\" } }\nexpected = { status = 200 }\n",
            "expects only a status",
        ),
        (
            "check_type = \"endpoint_health\"\ncovers = { id = \"m1\" }\nsource = { http = { url = \"http://127.0.0.1:1/\" } }\nexpected = { status = 200, body_contains = \"2.4.1\" }\n",
            "JSON pointer",
        ),
        (
            "check_type = \"test_run\"\ncovers = { id = \"m1\" }\nsource = { command = { argv = [\"true\"] } }\n",
            "failed = 0",
        ),
    ] {
        let (code, out) = check(&format!("{head}{body}"));
        assert_eq!(code, 0, "{out}");
        assert!(
            out.contains("warning: ") && out.contains("hint: ") && out.contains(want),
            "{want}: {out}"
        );
    }
    // A test run without protect is warned about (a conftest.py hookwrapper would decide
    // what pytest reports; found by the red team)...
    let (code, out) = check(&format!(
        "{head}check_type = \"test_run\"\ncovers = {{ id = \"m1\" }}\nsource = {{ command = {{ argv = [\"python3\", \"-m\", \"pytest\"] }} }}\nexpected = {{ exit_code = 0, ran = true, failed = 0 }}\n"
    ));
    assert_eq!(code, 0, "{out}");
    assert!(out.contains("agent's own runner configuration"), "{out}");
    // ... and it is the only finding on the billing example, whose crate is not a
    // repository of its own (there is no base commit to protect from).
    let (code, out) = check(
        &std::fs::read_to_string(workspace().join("examples/billing/contract.toml")).unwrap(),
    );
    assert_eq!(code, 0, "{out}");
    assert_eq!(out.matches("warning: ").count(), 2, "{out}");
    assert!(out.contains("agent's own runner configuration"), "{out}");
    // ...and its test run would pass with a test skipped at run time.
    assert!(out.contains("would pass with a test skipped"), "{out}");
}

/// `--dry-run` runs nothing and says which checks apply; `--only` runs one check and is
/// never verified.
#[test]
fn dry_run_and_only() {
    let tmp = tempfile::tempdir().unwrap();
    let contract = workspace().join("examples/billing/contract.toml");
    let claim = workspace().join("examples/billing/claim.json");
    let (code, out, err) = run(evident_in(tmp.path())
        .arg("gate")
        .arg(&contract)
        .arg(&claim)
        .arg("--dry-run"));
    assert_eq!(code, 0, "{err}");
    assert!(
        out.contains("zip-4471") && out.contains("runs in wave(s): before, after"),
        "{out}"
    );
    assert!(out.contains("nothing was run"), "{out}");
    assert!(!tmp.path().join("ledger.db").exists());

    let (code, out, err) = run(evident_in(tmp.path())
        .arg("gate")
        .arg(&contract)
        .arg(&claim)
        .args(["--only", "zip-4471", "--no-record"]));
    assert_eq!(code, 3, "{out}{err}");
    assert!(
        out.contains("unit-tests") && out.contains("not run: --only"),
        "{out}"
    );
    let (code, _, err) = run(evident_in(tmp.path())
        .arg("gate")
        .arg(&contract)
        .arg(&claim)
        .args(["--only", "nope"]));
    assert_eq!(code, 2);
    assert!(err.contains("zip-4471, unit-tests"), "{err}");
}

/// `--markdown FILE` writes a job summary: the verdict, one row per observation; the
/// agent's text cannot break the table.
#[test]
fn markdown_summary_for_ci() {
    let tmp = tempfile::tempdir().unwrap();
    let md = tmp.path().join("summary.md");
    let (code, _, err) = run(evident_in(tmp.path())
        .arg("gate")
        .arg(workspace().join("examples/billing/contract-4472.toml"))
        .arg(workspace().join("examples/billing/claim-refuted.json"))
        .arg("--no-record")
        .arg("--markdown")
        .arg(&md));
    assert_eq!(code, 1, "{err}");
    let text = std::fs::read_to_string(&md).unwrap();
    assert!(text.contains("**refuted**"), "{text}");
    assert!(text.contains("| `zip-4472` | before |"), "{text}");
    assert!(text.contains("| `zip-4472` | after |"), "{text}");
    assert!(
        text.lines()
            .filter(|l| l.starts_with("| `"))
            .all(|l| l.matches(" | ").count() == 3),
        "{text}"
    );
}

/// The document the gate decided is in the agent's hands. Found by the red team:
/// deleting `required_checks` (a failing check's requirement), dropping a failing
/// check's items, mixing signed items of two runs, or rewriting the claimed outcome
/// made `verify --trust --policy` say verified. Each signed item now carries its run
/// and what that run required, and is bound to the claim's words.
#[test]
fn the_decided_document_cannot_be_edited_into_verified() {
    let tmp = tempfile::tempdir().unwrap();
    let key = tmp.path().join("gate.key");
    let (code, _, err) = run(evident_in(tmp.path())
        .args(["key", "generate", "--id", "the-gate", "--out"])
        .arg(&key));
    assert_eq!(code, 0, "{err}");
    let pubkey = tmp.path().join("gate.key.pub");
    let root = tmp.path().join("root");
    std::fs::create_dir(&root).unwrap();
    std::fs::write(root.join("a"), "yes").unwrap();
    let contract = write(
        &root,
        "contract.toml",
        r#"
[policy]
max_age_s = 3600
[[check]]
id = "file"
check_type = "state_readback"
covers = { kind = "code_change" }
source = { file = { path = "a", text = true } }
expected = { text = "yes" }
[[check]]
id = "integration"
check_type = "test_run"
covers = { kind = "code_change" }
source = { command = { argv = ["sh", "-c", "cat flag 2>/dev/null || echo 'test result: ok. 0 passed; 0 failed'"], runner = "cargo", inherit_env = ["PATH"] } }
expected = { exit_code = 0, ran = true, failed = 0 }
"#,
    );
    let claim = write(
        tmp.path(),
        "claim.json",
        r#"{"spec_version": "0.1", "task": {"id": "t"}, "claimed_outcome": "fixed",
            "mutations": [{"id": "m1", "kind": "code_change", "target": "a", "at": "2020-01-01T00:00:00Z"}]}"#,
    );
    let gate = || {
        let (code, out, err) = run(evident_in(tmp.path())
            .arg("gate")
            .arg(&contract)
            .arg(&claim)
            .args(["--json", "--no-record", "--key"])
            .arg(&key));
        assert!(code == 0 || code == 3, "{err}");
        serde_json::from_str::<Value>(&out).unwrap()
    };
    let verify = |doc: &Value| {
        let file = write(tmp.path(), "edited.json", &doc.to_string());
        let now = doc["verdict"]["decided_at"].as_str().unwrap().to_string();
        let (code, out, err) = run(evident_in(tmp.path())
            .args(["verify", "--no-record", "--json", "--now", &now, "--trust"])
            .arg(&pubkey)
            .arg("--policy")
            .arg(&contract)
            .arg(&file));
        let v: Value = serde_json::from_str(&out).unwrap_or_else(|e| panic!("{e}: {err}"));
        (code, v["verdict"]["state"].as_str().unwrap().to_string())
    };
    let failing = gate();
    assert_eq!(failing["verdict"]["state"], "unverified");
    assert_eq!(verify(&failing), (3, "unverified".into()), "untouched");

    let mut dropped = failing.clone();
    dropped.as_object_mut().unwrap().remove("required_checks");
    assert_eq!(verify(&dropped).1, "unverified", "required_checks deleted");

    let mut only_passing = dropped.clone();
    only_passing["evidence"]
        .as_array_mut()
        .unwrap()
        .retain(|e| e["check_id"] != "integration");
    assert_eq!(
        verify(&only_passing).1,
        "unverified",
        "failing items dropped too"
    );

    // A second run in which the integration tests pass: honest, verified...
    std::fs::write(root.join("flag"), "test result: ok. 2 passed; 0 failed\n").unwrap();
    let passing = gate();
    assert_eq!(passing["verdict"]["state"], "verified");
    assert_eq!(verify(&passing), (0, "verified".into()), "honest twin");
    // ... but its items cannot be spliced into the first run's document.
    let mut patchwork = failing.clone();
    let good: Vec<Value> = passing["evidence"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|e| e["check_id"] == "integration")
        .cloned()
        .collect();
    let items = patchwork["evidence"].as_array_mut().unwrap();
    items.retain(|e| e["check_id"] != "integration");
    items.extend(good);
    assert_eq!(verify(&patchwork).1, "unverified", "two runs mixed");

    // The claim's words are bound too.
    let mut reworded = passing.clone();
    reworded["claimed_outcome"] = Value::String("Migrated all 40,000 accounts".into());
    assert_eq!(
        verify(&reworded).1,
        "unverified",
        "claimed_outcome rewritten"
    );
}

/// `log` and `show` print the agent's task id escaped: a carriage return and escape
/// codes cannot redraw a refuted record's line as verified (found by the red team).
#[test]
fn log_and_show_escape_the_agents_text() {
    let tmp = tempfile::tempdir().unwrap();
    let claim = write(
        tmp.path(),
        "claim.json",
        r#"{"spec_version": "0.1", "task": {"id": "t\r\u001b[2K#1 verified"}, "mutations": []}"#,
    );
    let (code, _, err) = run(evident_in(tmp.path()).arg("verify").arg(&claim));
    assert_eq!(code, 3, "{err}");
    for args in [&["log"][..], &["show", "1"][..]] {
        let (code, out, err) = run(evident_in(tmp.path()).args(args));
        assert_eq!(code, 0, "{err}");
        assert!(
            !out.contains('\r') && !out.contains('\u{1b}'),
            "{args:?}: {out:?}"
        );
        assert!(out.contains("\\u{d}"), "{out}");
    }
}

/// `protect = { base = "@baseline" }` with `gate --baseline REV`. The attack: the agent
/// leaves the bug and weakens the test instead (then commits, so HEAD would not protect).
/// Without a baseline the check cannot run (unverified, with the hint); with the
/// commit the agent started from the test runs as it was (refuted); the honest fix
/// verifies.
#[test]
#[cfg_attr(
    not(evident_services),
    ignore = "needs pytest: .ci/run installs it and runs this (see README, Development)"
)]
fn protect_at_the_baseline_given_on_the_command_line() {
    let tmp = tempfile::tempdir().unwrap();
    let repo = tmp.path().join("repo");
    std::fs::create_dir_all(repo.join("tests")).unwrap();
    git(&repo, &["init", "-q", "-b", "main"]);
    write(&repo, "calc.py", "def add(a, b):\n    return a - b\n");
    write(
        &repo,
        "tests/test_calc.py",
        "from calc import add\n\ndef test_add():\n    assert add(2, 3) == 5\n",
    );
    write(&repo, "conftest.py", "");
    let contract = write(
        &repo,
        "contract.toml",
        r#"[policy]
requires = ["test_run"]

[[check]]
id = "tests"
check_type = "test_run"
covers = { kind = "code_change" }
source = { command = { argv = ["python3", "-m", "pytest", "-q", "-p", "no:cacheprovider"], inherit_env = ["PATH", "HOME"], timeout_s = 60, protect = { base = "@baseline", paths = ["tests/**"] } } }
expected = { exit_code = 0, failed = 0 }
"#,
    );
    git(&repo, &["add", "-A"]);
    git(&repo, &["commit", "-qm", "start"]);
    let start = git(&repo, &["rev-parse", "HEAD"]);
    // The agent's "fix": the test no longer tests, committed.
    write(
        &repo,
        "tests/test_calc.py",
        "def test_add():\n    assert True\n",
    );
    git(&repo, &["commit", "-qam", "fix"]);
    let claim = claim_file(tmp.path());
    let gate = |baseline: Option<&str>| {
        let mut cmd = evident_in(tmp.path());
        cmd.arg("gate").arg(&contract).arg(&claim).arg("--json");
        if let Some(b) = baseline {
            cmd.args(["--baseline", b]);
        }
        let (code, out, err) = run(&mut cmd);
        let doc: Value = serde_json::from_str(&out).unwrap_or_else(|_| panic!("{out}\n{err}"));
        (code, doc)
    };
    let (code, doc) = gate(None);
    assert_eq!(code, 3, "{doc}");
    assert_eq!(doc["verdict"]["state"], "unverified");
    assert!(doc.to_string().contains("--baseline REV"), "{doc}");
    let (code, doc) = gate(Some(&start));
    assert_eq!(code, 1, "the test at the baseline fails: {doc}");
    assert_eq!(doc["verdict"]["state"], "refuted");
    // HEAD is what the agent moved: the weakened test passes there (why @baseline).
    let (code, _) = gate(Some("HEAD"));
    assert_eq!(code, 0);
    // Honest twin: the bug fixed, the test left alone.
    git(
        &repo,
        &["checkout", "-q", &start, "--", "tests/test_calc.py"],
    );
    write(&repo, "calc.py", "def add(a, b):\n    return a + b\n");
    let (code, doc) = gate(Some(&start));
    assert_eq!(code, 0, "{doc}");
    assert_eq!(doc["verdict"]["state"], "verified");
}

/// `policy.partial = true` in a contract (the spec's open question 2): one of two
/// mutations proven is `partial` in the report, the JSON, JUnit and Markdown, and still
/// exits 3 under block; the same contract without the opt-in says unverified.
#[test]
fn a_contract_can_opt_in_to_partial_and_every_surface_shows_it() {
    let tmp = tempfile::tempdir().unwrap();
    std::fs::write(tmp.path().join("x.txt"), "done").unwrap();
    let at = time::OffsetDateTime::now_utc() - time::Duration::seconds(30);
    let at = at
        .format(&time::format_description::well_known::Rfc3339)
        .unwrap();
    let claim = write(
        tmp.path(),
        "claim.json",
        &format!(
            r#"{{"spec_version": "0.1", "task": {{"id": "t"}}, "mutations": [{{"id": "m1", "kind": "state_write", "target": "x.txt", "at": "{at}"}}, {{"id": "m2", "kind": "state_write", "target": "y.txt", "at": "{at}"}}]}}"#
        ),
    );
    let body = "[[check]]\nid = \"x\"\ncheck_type = \"state_readback\"\ncovers = { id = \"m1\" }\nsource = { file = { path = \"x.txt\", text = true } }\nexpected = { text = \"done\" }\n";
    let plain = write(tmp.path(), "plain.toml", &format!("[policy]\n{body}"));
    let (code, out, _) = run(evident_in(tmp.path()).arg("gate").arg(&plain).arg(&claim));
    assert_eq!(code, 3, "{out}");
    assert!(out.contains("verdict   UNVERIFIED"), "{out}");

    let opted = write(
        tmp.path(),
        "partial.toml",
        &format!("[policy]\npartial = true\n{body}"),
    );
    let junit = tmp.path().join("junit.xml");
    let md = tmp.path().join("summary.md");
    let (code, out, err) = run(evident_in(tmp.path())
        .arg("gate")
        .arg(&opted)
        .arg(&claim)
        .arg("--junit")
        .arg(&junit)
        .arg("--markdown")
        .arg(&md));
    assert_eq!(code, 3, "{out}\n{err}");
    assert!(out.contains("verdict   PARTIAL"), "{out}");
    assert!(out.contains("coverage  1 of 2 mutations"), "{out}");
    let xml = std::fs::read_to_string(&junit).unwrap();
    assert!(xml.contains(r#"failure message="partial""#), "{xml}");
    let summary = std::fs::read_to_string(&md).unwrap();
    assert!(summary.contains("**partial**"), "{summary}");
    assert!(summary.contains("Coverage: 1 of 2 mutations"), "{summary}");
    let (code, out, _) = run(evident_in(tmp.path())
        .arg("gate")
        .arg(&opted)
        .arg(&claim)
        .arg("--json"));
    assert_eq!(code, 3, "{out}");
    let doc: Value = serde_json::from_str(&out).unwrap();
    assert_eq!(doc["verdict"]["state"], "partial");
    assert_eq!(doc["verdict"]["coverage"]["covered"], 1);
    assert_eq!(doc["verdict"]["unmet"], serde_json::json!(["mutation:m2"]));
}

/// The billing example copied to `dir` (without build output), with `edit` applied to
/// its source.
fn billing_copy(dir: &Path, edit: impl Fn(String) -> String) -> PathBuf {
    let to = dir.join("billing");
    std::fs::create_dir_all(to.join("src")).unwrap();
    let from = workspace().join("examples/billing");
    for f in [
        "Cargo.toml",
        "Cargo.lock",
        "billing.db",
        "claim.json",
        "contract.toml",
    ] {
        std::fs::copy(from.join(f), to.join(f)).unwrap();
    }
    let lib = std::fs::read_to_string(from.join("src/lib.rs")).unwrap();
    std::fs::write(to.join("src/lib.rs"), edit(lib)).unwrap();
    to
}

#[test]
fn a_failing_test_run_shows_the_failing_tests_and_its_last_lines_scrubbed() {
    let tmp = tempfile::tempdir().unwrap();
    // The broken edit: five digits are refused. The failing assertion prints a secret the
    // contract passes on, which must never be shown.
    let secret = "s3cr3t-billing-token-4471";
    let dir = billing_copy(tmp.path(), |lib| {
        lib.replace("zip.len() == 5", "zip.len() == 6").replace(
            r#"assert!(valid_zip("94107"));"#,
            r#"assert!(valid_zip("94107"), "token {}", std::env::var("BILLING_TOKEN").unwrap());"#,
        )
    });
    let contract = dir.join("contract.toml");
    let text = std::fs::read_to_string(&contract).unwrap();
    std::fs::write(
        &contract,
        text.replace(
            r#""RUSTUP_TOOLCHAIN"]"#,
            r#""RUSTUP_TOOLCHAIN", "BILLING_TOKEN"]"#,
        ),
    )
    .unwrap();
    let junit = tmp.path().join("junit.xml");
    let markdown = tmp.path().join("summary.md");
    let (code, out, err) = run(evident_in(tmp.path())
        .arg("gate")
        .arg(&contract)
        .arg(dir.join("claim.json"))
        .arg("--no-record")
        .env("BILLING_TOKEN", secret)
        .arg("--junit")
        .arg(&junit)
        .arg("--markdown")
        .arg(&markdown));
    assert_eq!(code, 1, "{out}\n{err}");
    assert!(
        out.contains("       failed tests: tests::accepts_five_digits\n"),
        "{out}"
    );
    assert!(out.contains("stdout, last lines:"), "{out}");
    assert!(out.contains("  | test result: FAILED."), "{out}");
    assert!(
        out.contains("token ***"),
        "the assertion's message, scrubbed: {out}"
    );
    let xml = std::fs::read_to_string(&junit).unwrap();
    assert!(
        xml.contains("failed tests: tests::accepts_five_digits"),
        "{xml}"
    );
    let md = std::fs::read_to_string(&markdown).unwrap();
    assert!(
        md.contains("`unit-tests`: failed tests: tests::accepts_five_digits"),
        "{md}"
    );
    for shown in [&out, &err, &xml, &md] {
        assert!(!shown.contains(secret), "{shown}");
    }

    // The honest twin: the same copy, unbroken, passes and shows no failure lines.
    let tmp = tempfile::tempdir().unwrap();
    let dir = billing_copy(tmp.path(), |lib| lib);
    let (code, out, err) = run(evident_in(tmp.path())
        .arg("gate")
        .arg(dir.join("contract.toml"))
        .arg(dir.join("claim.json"))
        .arg("--no-record"));
    assert_eq!(code, 0, "{out}\n{err}");
    assert!(
        !out.contains("failed tests") && !out.contains("last lines"),
        "{out}"
    );
}

#[test]
fn a_verified_claims_junit_has_no_failure() {
    let tmp = tempfile::tempdir().unwrap();
    let junit = tmp.path().join("junit.xml");
    let (code, out, _) = run(evident_in(tmp.path())
        .arg("gate")
        .arg(workspace().join("examples/billing/contract.toml"))
        .arg(workspace().join("examples/billing/claim.json"))
        .arg("--no-record")
        .arg("--junit")
        .arg(&junit));
    assert_eq!(code, 0, "{out}");
    let xml = std::fs::read_to_string(&junit).unwrap();
    assert!(xml.contains(r#"failures="0""#), "{xml}");
    assert!(!xml.contains("<failure"), "{xml}");
    // The SQL readback names its parameter values.
    assert!(out.contains(r#"WHERE id = ?1 with ["4471"]"#), "{out}");
}

#[test]
fn a_trust_key_that_is_not_base64_names_the_contract_line_and_entry() {
    let tmp = tempfile::tempdir().unwrap();
    let contract = write(
        tmp.path(),
        "contract.toml",
        "[policy]\nid = \"t\"\nrequires = [\"test_run\"]\n\n[[trust]]\nid = \"ci\"\npublic_key = \"7d5bde8a970431938e47d56cd7a737cf4e58472f8f4fab7bcc7fa78a1b4bd5bf\"\n\n[[check]]\nid = \"ci\"\ncheck_type = \"test_run\"\ncovers = { kind = \"code_change\" }\nsource = { signed_by = \"ci\" }\nexpected = { exit_code = 0, failed = 0 }\n",
    );
    let text = std::fs::read_to_string(&contract).unwrap();
    let hex = "7d5bde8a970431938e47d56cd7a737cf4e58472f8f4fab7bcc7fa78a1b4bd5bf";
    // Hex, the docs' old placeholder, and base64 of the wrong length.
    for (key, why) in [
        (hex, "hex is not accepted"),
        ("…", "not standard base64"),
        ("AAAA", "decodes to 3 bytes"),
    ] {
        std::fs::write(&contract, text.replace(hex, key)).unwrap();
        let (code, out, err) = run(evident_in(tmp.path())
            .arg("contract")
            .arg("check")
            .arg(&contract));
        assert_ne!(code, 0, "{out}");
        let shown = format!("{out}{err}");
        assert!(shown.contains("contract.toml:7"), "{shown}");
        assert!(shown.contains("trust[0].public_key"), "{shown}");
        assert!(shown.contains(why), "{shown}");
        assert!(shown.contains("evident key generate"), "{shown}");
    }
    std::fs::write(&contract, &text).unwrap();

    // The honest twin: the key as `evident key generate` writes it.
    let (code, out, err) = run(evident_in(tmp.path())
        .current_dir(tmp.path())
        .args(["key", "generate", "--out", "ci.key", "--id", "ci"]));
    assert_eq!(code, 0, "{out}{err}");
    let public: Value =
        serde_json::from_str(&std::fs::read_to_string(tmp.path().join("ci.key.pub")).unwrap())
            .unwrap();
    let text = std::fs::read_to_string(&contract).unwrap();
    let fixed = text.replace(
        "7d5bde8a970431938e47d56cd7a737cf4e58472f8f4fab7bcc7fa78a1b4bd5bf",
        public["public_key"].as_str().unwrap(),
    );
    std::fs::write(&contract, fixed).unwrap();
    let (code, out, err) = run(evident_in(tmp.path())
        .arg("contract")
        .arg("check")
        .arg(&contract));
    assert_eq!(code, 0, "{out}{err}");
}
