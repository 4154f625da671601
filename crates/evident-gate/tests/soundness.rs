//! The owner's contract decides (issue "every check counts"): each attack an agent can
//! mount with only its own powers — its claim, its own evidence, its code run by the
//! contract's commands — as a test that failed before the fix, each with an honest twin
//! that must still verify. Then properties over random contracts and random worlds.
//!
//! The worlds are real: SQLite files (the README example's database), files on disk, a
//! real command (`sh`) rewriting the database while the gate runs.

use evident_format::{Claim, Timestamp};
use evident_gate::{Contract, Outcome, Settings};
use evident_rules::{Code, State};
use proptest::prelude::*;
use serde_json::{Value, json};
use std::collections::BTreeMap;
use std::path::Path;
use std::time::Duration;

fn claim(mutations: &[(&str, &str, &str)], evidence: Value) -> Value {
    let at = Timestamp::from_instant(time::OffsetDateTime::now_utc() - time::Duration::seconds(5));
    let ms: Vec<Value> = mutations
        .iter()
        .map(|(id, kind, target)| json!({"id": id, "kind": kind, "target": target, "at": at.as_str()}))
        .collect();
    json!({
        "spec_version": "0.1",
        "task": {"id": "billing-4472"},
        "claimed_outcome": "done",
        "mutations": ms,
        "evidence": evidence,
    })
}

fn settings(root: &Path) -> Settings {
    let env: BTreeMap<String, String> = std::env::vars().filter(|(k, _)| k == "PATH").collect();
    Settings {
        jobs: 4,
        deadline: Duration::from_secs(60),
        context: evident_probes::Context {
            root: root.to_path_buf(),
            env,
            ..Default::default()
        },
        verifier_id: evident_gate::verifier_id(),
        progress: None,
        only: None,
    }
}

/// Runs the gate; `trusted` says whether the agent's own items carry a valid signature
/// from a key the contract trusts (as `evident gate` would find with a trust list).
async fn gate_with(contract: &str, claim: &Value, root: &Path, trusted: bool) -> Outcome {
    let contract = Contract::parse(contract.as_bytes(), "contract.toml")
        .unwrap_or_else(|e| panic!("contract: {e}"));
    let doc = Claim::parse(&serde_json::to_vec(claim).unwrap(), "claim.json").unwrap();
    evident_gate::run::run(
        &contract.contract,
        doc,
        &settings(root),
        &move |_| trusted,
        &|_| None,
    )
    .await
}

async fn gate(contract: &str, claim: &Value, root: &Path) -> Outcome {
    gate_with(contract, claim, root, false).await
}

fn assert_state(o: &Outcome, state: State) {
    assert_eq!(
        o.verdict.state, state,
        "reason: {}\nunmet: {:?}\nfindings: {:#?}",
        o.verdict.reason, o.verdict.unmet, o.verdict.findings
    );
}

/// The README example's database (accounts 4471 → 94107, 4472 → 10002), with `sql`
/// applied (through the sqlite3 module of the machine's python3).
fn billing_db(dir: &Path, sql: &str) {
    let example = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../examples/billing/billing.db");
    std::fs::copy(example, dir.join("billing.db")).unwrap();
    if !sql.is_empty() {
        let status = std::process::Command::new("python3")
            .arg("-c")
            .arg("import sqlite3, sys; c = sqlite3.connect(sys.argv[1]); c.executescript(sys.argv[2]); c.commit()")
            .arg(dir.join("billing.db"))
            .arg(sql)
            .status()
            .expect("python3 runs");
        assert!(status.success());
    }
}

const ZIP_4472: &str = r#"
[policy]
requires = ["state_readback"]
max_age_s = 300

[[check]]
id = "zip-4472"
check_type = "state_readback"
covers = { target = "accounts/4472" }
source = { sqlite = { path = "billing.db", query = "SELECT billing_zip FROM accounts WHERE id = ?1", params = ["4472"] } }
expected = { billing_zip = "10001", row_count = 1 }
"#;

// ------------------------------------------------ 1. the mutation list decides nothing

/// The task was account 4472; the claim names 4471 (already right). The check for 4472
/// covers nothing claimed — before the fix it was ignored and the claim verified,
/// although the gate's own readback saw 4472 = 10002.
#[tokio::test]
async fn a_claim_naming_another_account_cannot_escape_the_check() {
    let dir = tempfile::tempdir().unwrap();
    billing_db(dir.path(), "");
    let c = claim(&[("m1", "state_write", "accounts/4471")], json!([]));
    let contract = format!(
        "{ZIP_4472}\n[[check]]\nid = \"zip-4471\"\ncheck_type = \"state_readback\"\ncovers = {{ target = \"accounts/4471\" }}\nsource = {{ sqlite = {{ path = \"billing.db\", query = \"SELECT billing_zip FROM accounts WHERE id = '4471'\" }} }}\nexpected = {{ billing_zip = \"94107\" }}\n"
    );
    let o = gate(&contract, &c, dir.path()).await;
    assert_state(&o, State::Refuted);
    assert!(
        o.verdict.reason.contains("zip-4472") && o.verdict.reason.contains("10002"),
        "{}",
        o.verdict.reason
    );
}

/// Honest twin: 4472 really is 10001 and the claim names it.
#[tokio::test]
async fn the_honest_claim_for_the_task_verifies() {
    let dir = tempfile::tempdir().unwrap();
    billing_db(
        dir.path(),
        "UPDATE accounts SET billing_zip = '10001' WHERE id = '4472'",
    );
    let c = claim(&[("m1", "state_write", "accounts/4472")], json!([]));
    let o = gate(ZIP_4472, &c, dir.path()).await;
    assert_state(&o, State::Verified);
    assert!(o.warnings.is_empty(), "{:?}", o.warnings);
}

const NEW_ACCOUNT: &str = r#"
[policy]
requires = ["state_readback", "test_run"]

[[check]]
id = "account-4473-created"
check_type = "state_readback"
covers = { target = "accounts/4473" }
source = { sqlite = { path = "billing.db", query = "SELECT billing_zip FROM accounts WHERE id = '4473'" } }
expected = { row_count = 1, billing_zip = "60601" }

[[check]]
id = "unit"
check_type = "test_run"
covers = { kind = "code_change" }
source = { command = { argv = ["sh", "-c", "echo 'test result: ok. 3 passed; 0 failed; 0 ignored'"], runner = "cargo", inherit_env = ["PATH"] } }
expected = { exit_code = 0, ran = true, failed = 0 }
"#;

/// A claim that leaves its database write out (only the code change is claimed):
/// before the fix it verified with exit 0 while the readback saw row_count 0.
#[tokio::test]
async fn a_claim_that_omits_its_write_is_still_held_to_the_readback() {
    let dir = tempfile::tempdir().unwrap();
    billing_db(dir.path(), "");
    let c = claim(&[("m1", "code_change", "src/lib.rs")], json!([]));
    let o = gate(NEW_ACCOUNT, &c, dir.path()).await;
    assert_state(&o, State::Refuted);
    assert!(
        o.verdict.reason.contains("row_count"),
        "{}",
        o.verdict.reason
    );
}

/// Honest twin: the row exists; the claim lists both changes.
#[tokio::test]
async fn the_write_that_happened_verifies() {
    let dir = tempfile::tempdir().unwrap();
    billing_db(
        dir.path(),
        "INSERT INTO accounts VALUES ('4473', 'Initech', '60601')",
    );
    let c = claim(
        &[
            ("m1", "code_change", "src/lib.rs"),
            ("m2", "state_write", "accounts/4473"),
        ],
        json!([]),
    );
    let o = gate(NEW_ACCOUNT, &c, dir.path()).await;
    assert_state(&o, State::Verified);
}

/// `applies = "when_covered"`: a check for another kind of change does not apply, and
/// once it applies it is a requirement like any other.
#[tokio::test]
async fn a_conditional_check_applies_only_when_covered() {
    let dir = tempfile::tempdir().unwrap();
    billing_db(dir.path(), "");
    let contract = r#"
[policy]
[[check]]
id = "zip-4471"
check_type = "state_readback"
covers = { target = "accounts/4471" }
source = { sqlite = { path = "billing.db", query = "SELECT billing_zip FROM accounts WHERE id = '4471'" } }
expected = { billing_zip = "94107" }
[[check]]
id = "zip-4472"
check_type = "state_readback"
covers = { target = "accounts/4472" }
applies = "when_covered"
source = { sqlite = { path = "billing.db", query = "SELECT billing_zip FROM accounts WHERE id = '4472'" } }
expected = { billing_zip = "10001" }
"#;
    let only_4471 = claim(&[("m1", "state_write", "accounts/4471")], json!([]));
    let o = gate(contract, &only_4471, dir.path()).await;
    assert_state(&o, State::Verified);
    assert!(!o.plan[1].applies, "{:?}", o.plan[1]);
    assert_eq!(o.runs.len(), 1, "the check that does not apply is not run");

    let both = claim(
        &[
            ("m1", "state_write", "accounts/4471"),
            ("m2", "state_write", "accounts/4472"),
        ],
        json!([]),
    );
    let o = gate(contract, &both, dir.path()).await;
    assert_state(&o, State::Refuted);
}

/// A check that covers no claimed mutation counts for the task only: it never covers a
/// mutation (a readback must not "cover" a code change), and a claim without any
/// mutation stays unverified.
#[tokio::test]
async fn a_task_level_check_covers_no_mutation() {
    let dir = tempfile::tempdir().unwrap();
    billing_db(
        dir.path(),
        "UPDATE accounts SET billing_zip = '10001' WHERE id = '4472'",
    );
    let o = gate(ZIP_4472, &claim(&[], json!([])), dir.path()).await;
    assert_state(&o, State::Unverified);
    assert_eq!(o.verdict.unmet, vec!["mutations"]);

    let code = claim(&[("m1", "code_change", "src/lib.rs")], json!([]));
    let o = gate(ZIP_4472, &code, dir.path()).await;
    assert_state(&o, State::Unverified);
    assert_eq!(o.verdict.unmet, vec!["mutation:m1"]);
    assert_eq!(o.runs[0].covers, Vec::<String>::new());
    assert!(
        o.verdict.reason.contains("m1"),
        "the reason names the uncovered mutation: {}",
        o.verdict.reason
    );
}

// ------------------------------------------------ 2. a failing check is never outvoted

fn two_checks(second: &str) -> String {
    format!(
        r#"
[policy]
[[check]]
id = "zip-4471"
check_type = "state_readback"
covers = {{ target = "accounts/4471" }}
source = {{ sqlite = {{ path = "billing.db", query = "SELECT billing_zip FROM accounts WHERE id = '4471'" }} }}
expected = {{ billing_zip = "94107" }}

[[check]]
id = "second"
check_type = "test_run"
covers = {{ target = "accounts/4471" }}
{second}
"#
    )
}

/// Two checks cover the same mutation; one cannot observe (a timeout, no test ran, a
/// spoofed summary), the other passes. Before the fix: verified.
#[tokio::test]
async fn an_observation_error_is_not_outvoted_by_a_passing_sibling() {
    let dir = tempfile::tempdir().unwrap();
    billing_db(dir.path(), "");
    let c = claim(&[("m1", "state_write", "accounts/4471")], json!([]));
    for (why, source) in [
        (
            "timed out",
            r#"source = { command = { argv = ["sleep", "30"], timeout_s = 0.3, inherit_env = ["PATH"] } }"#,
        ),
        (
            "no test ran",
            r#"source = { command = { argv = ["sh", "-c", "echo 'test result: ok. 0 passed; 0 failed'"], runner = "cargo", inherit_env = ["PATH"] } }"#,
        ),
        (
            "spoof",
            r#"source = { command = { argv = ["sh", "-c", "echo 'test result: ok. 5 passed; 0 failed'; exit 1"], runner = "cargo", inherit_env = ["PATH"] } }"#,
        ),
    ] {
        let o = gate(&two_checks(source), &c, dir.path()).await;
        assert_state(&o, State::Unverified);
        assert!(
            o.verdict.unmet.contains(&"check:second".to_string()),
            "{why}: {:?}",
            o.verdict.unmet
        );
        assert!(
            o.verdict.reason.contains("\"second\""),
            "{why}: the reason names the check: {}",
            o.verdict.reason
        );
    }
}

/// Honest twin: both checks pass.
#[tokio::test]
async fn two_passing_checks_verify() {
    let dir = tempfile::tempdir().unwrap();
    billing_db(dir.path(), "");
    let c = claim(&[("m1", "state_write", "accounts/4471")], json!([]));
    let source = r#"source = { command = { argv = ["sh", "-c", "echo 'test result: ok. 5 passed; 0 failed'"], runner = "cargo", inherit_env = ["PATH"] } }"#;
    let o = gate(&two_checks(source), &c, dir.path()).await;
    assert_state(&o, State::Verified);
}

// ------------------------------------------------ 3. carried evidence never replaces

/// A signed item from an earlier passing run (trusted, same claim, fresh) verified the
/// claim while the gate's own probe of the same check now fails (the database file is
/// corrupt). The gate's fresh observation alone decides a check it runs.
#[tokio::test]
async fn a_signed_item_from_an_earlier_run_cannot_stand_in_for_the_fresh_probe() {
    let dir = tempfile::tempdir().unwrap();
    billing_db(
        dir.path(),
        "UPDATE accounts SET billing_zip = '10001' WHERE id = '4472'",
    );
    let c = claim(&[("m1", "state_write", "accounts/4472")], json!([]));
    let first = gate(ZIP_4472, &c, dir.path()).await;
    assert_state(&first, State::Verified);
    // The agent keeps the gate's (signed) item and corrupts the database.
    let earlier = first.document.to_value()["evidence"][0].clone();
    std::fs::write(dir.path().join("billing.db"), b"not a database at all").unwrap();
    let mut replay = c.clone();
    replay["evidence"] = json!([earlier]);
    let o = gate_with(ZIP_4472, &replay, dir.path(), true).await;
    assert_state(&o, State::Unverified);
    assert!(o.verdict.unmet.contains(&"check:zip-4472".to_string()));
    assert_eq!(o.verdict.findings[0].code, Code::OutsideContract);
    assert!(
        o.verdict.findings[0]
            .detail
            .contains("agent's own signed evidence")
    );
}

/// Honest twin: the same replayed item beside a healthy database verifies — because
/// of the fresh probe, not the item.
#[tokio::test]
async fn the_fresh_probe_of_a_healthy_database_verifies() {
    let dir = tempfile::tempdir().unwrap();
    billing_db(
        dir.path(),
        "UPDATE accounts SET billing_zip = '10001' WHERE id = '4472'",
    );
    let c = claim(&[("m1", "state_write", "accounts/4472")], json!([]));
    let first = gate(ZIP_4472, &c, dir.path()).await;
    let mut replay = c.clone();
    replay["evidence"] = json!([first.document.to_value()["evidence"][0].clone()]);
    let o = gate_with(ZIP_4472, &replay, dir.path(), true).await;
    assert_state(&o, State::Verified);
}

// ------------------------------------------------ 4. state is read after the agent's code

fn rewriting_command(sql: &str) -> String {
    format!(
        r#"{ZIP_4472}
[[check]]
id = "unit"
check_type = "test_run"
covers = {{ target = "accounts/4472" }}
source = {{ command = {{ argv = ["python3", "-c", "import sqlite3; c = sqlite3.connect('billing.db'); c.executescript(\"{sql}\"); c.commit(); print('test result: ok. 1 passed; 0 failed')"], runner = "cargo", inherit_env = ["PATH"] }} }}
expected = {{ exit_code = 0, ran = true, failed = 0 }}
"#
    )
}

/// A test command (the agent's code) rewrites the row after the readback. Before the
/// first fix: verified, and the world was left wrong; then the readback after the
/// commands caught it. Now the command runs in a snapshot of the tree, so the row it
/// rewrites is the snapshot's copy: the tree's database is never touched, and the
/// claim is decided on the row as it is.
#[tokio::test]
async fn a_test_command_cannot_rewrite_the_row_in_the_tree() {
    let dir = tempfile::tempdir().unwrap();
    billing_db(
        dir.path(),
        "UPDATE accounts SET billing_zip = '10001' WHERE id = '4472'",
    );
    let c = claim(&[("m1", "state_write", "accounts/4472")], json!([]));
    let contract = rewriting_command("UPDATE accounts SET billing_zip = '00000' WHERE id = '4472'");
    let o = gate(&contract, &c, dir.path()).await;
    assert_state(&o, State::Verified);
    let zips: Vec<&Value> = o
        .runs
        .iter()
        .map(|r| &r.observed["billing_zip"])
        .filter(|v| !v.is_null())
        .collect();
    assert!(
        !zips.is_empty() && zips.iter().all(|z| **z == json!("10001")),
        "{zips:?}"
    );
}

/// A change only in keys the expectation does not name (a column it does not check,
/// a nested field beside the one it checks) is shown and does not block.
#[tokio::test]
async fn a_change_in_an_unnamed_key_does_not_block() {
    let dir = tempfile::tempdir().unwrap();
    billing_db(
        dir.path(),
        "UPDATE accounts SET billing_zip = '10001' WHERE id = '4472'",
    );
    let c = claim(&[("m1", "state_write", "accounts/4472")], json!([]));
    let contract = rewriting_command("UPDATE accounts SET name = 'Globex 2' WHERE id = '4472'")
        .replace("SELECT billing_zip FROM", "SELECT billing_zip, name FROM");
    let o = gate(&contract, &c, dir.path()).await;
    assert_state(&o, State::Verified);
    // The command ran in a snapshot: it rewrote the snapshot's copy of the database,
    // never the tree's, so every readback sees the row as it was.
    let names: Vec<&Value> = o
        .runs
        .iter()
        .map(|r| &r.observed["name"])
        .filter(|v| !v.is_null())
        .collect();
    assert!(
        !names.is_empty() && names.iter().all(|n| **n == json!("Globex")),
        "{names:?}"
    );

    let json_contract = r#"
[policy]
[[check]]
id = "config"
check_type = "state_readback"
covers = { target = "config" }
source = { file = { path = "config.json", pointers = { flags = "/flags" } } }
expected = { json = { flags = { enabled = true } } }
[[check]]
id = "unit"
check_type = "test_run"
covers = { target = "config" }
source = { command = { argv = ["sh", "-c", "printf '{\"flags\": {\"enabled\": true, \"n\": 2}}' > config.json; echo 'test result: ok. 1 passed; 0 failed'"], runner = "cargo", inherit_env = ["PATH"] } }
"#;
    std::fs::write(
        dir.path().join("config.json"),
        r#"{"flags": {"enabled": true, "n": 1}}"#,
    )
    .unwrap();
    let c = claim(&[("m1", "state_write", "config")], json!([]));
    let o = gate(json_contract, &c, dir.path()).await;
    assert_state(&o, State::Verified);
    // ... and the named key turning false after the commands refutes, saying why.
    let flips = json_contract.replace(
        "\\\"enabled\\\": true, \\\"n\\\": 2",
        "\\\"enabled\\\": false",
    );
    assert_ne!(flips, json_contract);
    std::fs::write(
        dir.path().join("config.json"),
        r#"{"flags": {"enabled": true, "n": 1}}"#,
    )
    .unwrap();
    // ... and a command that would turn the named key false writes only its snapshot:
    // the tree's file, which the readback reads, is left as it was.
    let o = gate(&flips, &c, dir.path()).await;
    assert_state(&o, State::Verified);
    assert_eq!(
        std::fs::read_to_string(dir.path().join("config.json")).unwrap(),
        r#"{"flags": {"enabled": true, "n": 1}}"#
    );
}

/// A test starts a daemon in a session of its own (`setsid`, escaping the process
/// group kill) that rewrites the state after the gate's last readback. Found by the
/// red team: the gate said verified and the row was left wrong. Nothing a command
/// starts may outlive the commands' wave.
#[tokio::test]
async fn a_daemon_started_by_a_test_does_not_outlive_the_commands() {
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(dir.path().join("state"), "good").unwrap();
    let contract = r#"
[policy]
[[check]]
id = "state"
check_type = "state_readback"
covers = { target = "state" }
source = { file = { path = "state", text = true } }
expected = { text = "good" }
[[check]]
id = "unit"
check_type = "test_run"
covers = { target = "state" }
source = { command = { argv = ["sh", "-c", "setsid sh -c 'sleep 1.5; echo bad > state' > /dev/null 2>&1 < /dev/null & sleep 0.3; echo 'test result: ok. 1 passed; 0 failed'"], runner = "cargo", inherit_env = ["PATH"] } }
"#;
    let c = claim(&[("m1", "state_write", "state")], json!([]));
    let o = gate(contract, &c, dir.path()).await;
    assert_state(&o, State::Verified);
    tokio::time::sleep(Duration::from_millis(2500)).await;
    assert_eq!(
        std::fs::read_to_string(dir.path().join("state")).unwrap(),
        "good",
        "the daemon outlived the gate and rewrote the state"
    );
}

/// Honest twin: the command reads but does not write.
#[tokio::test]
async fn a_test_command_that_leaves_the_row_alone_verifies() {
    let dir = tempfile::tempdir().unwrap();
    billing_db(
        dir.path(),
        "UPDATE accounts SET billing_zip = '10001' WHERE id = '4472'",
    );
    let c = claim(&[("m1", "state_write", "accounts/4472")], json!([]));
    let o = gate(&rewriting_command("SELECT 1"), &c, dir.path()).await;
    assert_state(&o, State::Verified);
    let waves: Vec<&str> = o.runs.iter().map(|r| r.wave.as_str()).collect();
    assert_eq!(waves, ["before", "command", "after"]);
}

// ------------------------------------------------ reasons a person can act on

#[tokio::test]
async fn the_reason_names_the_check_what_it_saw_and_what_would_satisfy_it() {
    let dir = tempfile::tempdir().unwrap();
    let contract = r#"
[policy]
[[check]]
id = "lockfile-gone"
check_type = "state_readback"
covers = { target = "deploy.lock" }
source = { sqlite = { path = "missing.db", query = "SELECT 1" } }
expected = { row_count = 1 }
"#;
    let c = claim(&[("m1", "state_write", "deploy.lock")], json!([]));
    let o = gate(contract, &c, dir.path()).await;
    assert_state(&o, State::Unverified);
    let r = &o.verdict.reason;
    assert!(r.contains("\"lockfile-gone\""), "{r}");
    assert!(r.contains("missing.db"), "what it saw: {r}");
    assert!(r.contains("row_count"), "what would satisfy it: {r}");
    assert!(
        !r.contains("nothing independent, fresh and matching"),
        "{r}"
    );
}

// ------------------------------------------------ delegation to a trusted signer

/// A git repository in `dir` with `file` committed; returns the commit id.
fn committed_repo(dir: &Path, file: &str, content: &str) -> String {
    let git = |args: &[&str]| {
        let out = std::process::Command::new("git")
            .args(args)
            .current_dir(dir)
            .env("GIT_CONFIG_GLOBAL", "/dev/null")
            .env("GIT_CONFIG_NOSYSTEM", "1")
            .output()
            .unwrap();
        assert!(out.status.success(), "{out:?}");
        String::from_utf8(out.stdout).unwrap().trim().to_string()
    };
    git(&["init", "-q", "-b", "main"]);
    std::fs::write(dir.join(file), content).unwrap();
    git(&["add", "."]);
    git(&[
        "-c",
        "user.name=t",
        "-c",
        "user.email=t@t",
        "commit",
        "-qm",
        "x",
    ]);
    git(&["rev-parse", "HEAD"])
}

/// A check delegated to a signer accepts that signer's item only when it is bound to
/// this claim and to the commit the gate sees, and meets the contract's expectation.
#[tokio::test]
async fn a_delegated_check_needs_the_signers_item_for_this_claim_and_commit() {
    let dir = tempfile::tempdir().unwrap();
    let head = committed_repo(dir.path(), "app.py", "print(1)\n");
    let contract = r#"
[policy]
max_age_s = 600
[[trust]]
id = "ci/github-actions"
public_key = "AAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAA="
[[check]]
id = "ci"
check_type = "test_run"
covers = { kind = "code_change" }
source = { signed_by = "ci/github-actions" }
expected = { exit_code = 0, failed = 0 }
"#;
    let base = claim(&[("m1", "code_change", "app.py")], json!([]));
    let binding = Claim::parse(&serde_json::to_vec(&base).unwrap(), "c.json")
        .unwrap()
        .claim
        .binding();
    let item = |commit: &str, bound: &str, failed: u64| {
        json!({
            "check_type": "test_run", "target": "pytest",
            "expected": {"exit_code": 0}, "observed_value": {"exit_code": 0, "failed": failed},
            "at": Timestamp::now().as_str(), "covers": ["m1"],
            "verifier": {"id": "ci/github-actions", "kind": "independent"},
            "bound_to": bound, "commit": commit, "check_id": "ci",
        })
    };
    let with = |e: Value| {
        let mut c = base.clone();
        c["evidence"] = json!([e]);
        c
    };
    // Honest: the signer's item for this claim and this commit.
    let o = gate_with(contract, &with(item(&head, &binding, 0)), dir.path(), true).await;
    assert_state(&o, State::Verified);
    // Not signed by a trusted key.
    let o = gate_with(contract, &with(item(&head, &binding, 0)), dir.path(), false).await;
    assert_state(&o, State::Unverified);
    // Another commit.
    let other = "0".repeat(40);
    let o = gate_with(contract, &with(item(&other, &binding, 0)), dir.path(), true).await;
    assert_state(&o, State::Unverified);
    assert!(o.verdict.reason.contains(&head), "{}", o.verdict.reason);
    // Another claim.
    let o = gate_with(
        contract,
        &with(item(&head, "sha256:00", 0)),
        dir.path(),
        true,
    )
    .await;
    assert_state(&o, State::Unverified);
    // The contract's expectation decides, not the signer's.
    let o = gate_with(contract, &with(item(&head, &binding, 2)), dir.path(), true).await;
    assert_state(&o, State::Refuted);
    // A change beyond the signed commit.
    std::fs::write(dir.path().join("app.py"), "print(2)\n").unwrap();
    let o = gate_with(contract, &with(item(&head, &binding, 0)), dir.path(), true).await;
    assert_state(&o, State::Unverified);
}

/// A signer's item for another check (a lint run it signed) does not stand in for the
/// delegated check (found by the red team: any item of the signer was taken).
#[tokio::test]
async fn a_delegated_check_takes_only_the_signers_item_for_that_check() {
    let dir = tempfile::tempdir().unwrap();
    let head = committed_repo(dir.path(), "a", "1");
    let contract = r#"
[policy]
[[trust]]
id = "ci"
public_key = "AAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAA="
[[check]]
id = "unit-tests"
check_type = "test_run"
covers = { kind = "code_change" }
source = { signed_by = "ci" }
expected = { exit_code = 0, failed = 0 }
"#;
    let base = claim(&[("m1", "code_change", "a")], json!([]));
    let binding = Claim::parse(&serde_json::to_vec(&base).unwrap(), "c.json")
        .unwrap()
        .claim
        .binding();
    let item = |check: &str| {
        json!({
            "check_type": "test_run", "target": "ci",
            "expected": {"exit_code": 0}, "observed_value": {"exit_code": 0, "failed": 0},
            "at": Timestamp::now().as_str(), "covers": ["m1"],
            "verifier": {"id": "ci", "kind": "independent"},
            "bound_to": binding, "commit": head, "check_id": check,
        })
    };
    let mut c = base.clone();
    c["evidence"] = json!([item("lint")]);
    let o = gate_with(contract, &c, dir.path(), true).await;
    assert_state(&o, State::Unverified);
    c["evidence"] = json!([item("unit-tests")]);
    let o = gate_with(contract, &c, dir.path(), true).await;
    assert_state(&o, State::Verified);
}

/// A target written another way (`./x`, `x//y`, `x/`) is the same target; one that
/// can be read several ways (`..`, not NFC) is selected by no check, even by kind, so a
/// `when_covered` check cannot be dodged by spelling (found by the red team).
#[tokio::test]
async fn a_target_spelt_another_way_cannot_dodge_a_conditional_check() {
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(dir.path().join("applied"), "no").unwrap();
    let contract = r#"
[policy]
[[check]]
id = "migration-applied"
check_type = "state_readback"
covers = { target = "migrations/002.sql" }
applies = "when_covered"
source = { file = { path = "applied", text = true } }
expected = { text = "yes" }
[[check]]
id = "any-code"
check_type = "test_run"
covers = { kind = "code_change" }
source = { command = { argv = ["sh", "-c", "echo 'test result: ok. 1 passed; 0 failed'"], runner = "cargo", inherit_env = ["PATH"] } }
"#;
    for spelling in [
        "./migrations/002.sql",
        "migrations//002.sql",
        "migrations/002.sql/",
    ] {
        let c = claim(&[("m1", "code_change", spelling)], json!([]));
        let o = gate(contract, &c, dir.path()).await;
        assert_state(&o, State::Refuted);
    }
    for spelling in [
        "migrations/../migrations/002.sql",
        "migrations/002.sql\u{7}",
        "migrations/cafe\u{301}.sql",
    ] {
        let c = claim(&[("m1", "code_change", spelling)], json!([]));
        let o = gate(contract, &c, dir.path()).await;
        assert_state(&o, State::Unverified);
        assert_eq!(o.verdict.unmet, vec!["mutation:m1"], "{spelling}");
        assert!(!o.warnings.is_empty());
    }
    // Honest twin: the migration was applied.
    std::fs::write(dir.path().join("applied"), "yes").unwrap();
    let c = claim(&[("m1", "code_change", "migrations/002.sql")], json!([]));
    assert_state(&gate(contract, &c, dir.path()).await, State::Verified);
}

// ------------------------------------------------ --only

#[tokio::test]
async fn a_partial_run_is_never_verified() {
    let dir = tempfile::tempdir().unwrap();
    billing_db(
        dir.path(),
        "UPDATE accounts SET billing_zip = '10001' WHERE id = '4472'",
    );
    let contract = Contract::parse(ZIP_4472.as_bytes(), "c.toml").unwrap();
    let c = claim(&[("m1", "state_write", "accounts/4472")], json!([]));
    let doc = Claim::parse(&serde_json::to_vec(&c).unwrap(), "c.json").unwrap();
    let mut s = settings(dir.path());
    s.only = Some("zip-4472".into());
    let o = evident_gate::run::run(&contract.contract, doc, &s, &|_| false, &|_| None).await;
    assert!(o.partial || o.verdict.state != State::Verified);
    assert_eq!(o.verdict.state, State::Unverified, "{}", o.verdict.reason);
}

// ------------------------------------------------ properties: random contracts × worlds

/// A world: files `f0..f3` each absent or holding "a" or "b".
fn world() -> impl Strategy<Value = Vec<Option<bool>>> {
    proptest::collection::vec(proptest::option::of(any::<bool>()), 4)
}

#[derive(Debug, Clone)]
struct RandomCheck {
    file: usize,
    want_a: bool,
    when_covered: bool,
    kind: bool,
}

fn checks() -> impl Strategy<Value = Vec<RandomCheck>> {
    proptest::collection::vec(
        (0..4usize, any::<bool>(), any::<bool>(), any::<bool>()).prop_map(
            |(file, want_a, when_covered, kind)| RandomCheck {
                file,
                want_a,
                when_covered,
                kind,
            },
        ),
        0..4,
    )
}

fn contract_text(checks: &[RandomCheck]) -> String {
    let mut s = String::from("[policy]\nmax_age_s = 600\n");
    for (i, c) in checks.iter().enumerate() {
        let covers = if c.kind {
            "{ kind = \"state_write\" }".to_string()
        } else {
            format!("{{ target = \"f{}\" }}", c.file)
        };
        s.push_str(&format!(
            "[[check]]\nid = \"c{i}\"\ncheck_type = \"state_readback\"\ncovers = {covers}\n{}source = {{ file = {{ path = \"f{}\", text = true }} }}\nexpected = {{ text = \"{}\" }}\n",
            if c.when_covered { "applies = \"when_covered\"\n" } else { "" },
            c.file,
            if c.want_a { "a" } else { "b" },
        ));
    }
    s
}

fn random_claim(targets: &[usize], agent_items: usize) -> Value {
    let ms: Vec<(String, &str, String)> = targets
        .iter()
        .enumerate()
        .map(|(i, t)| (format!("m{i}"), "state_write", format!("f{t}")))
        .collect();
    let refs: Vec<(&str, &str, &str)> = ms
        .iter()
        .map(|(a, b, c)| (a.as_str(), *b, c.as_str()))
        .collect();
    let covers: Vec<String> = ms.iter().map(|m| m.0.clone()).collect();
    let evidence: Vec<Value> = (0..agent_items)
        .map(|k| {
            json!({
                "check_type": "state_readback", "target": "anything",
                "expected": {"text": "a"}, "observed_value": {"text": "a"},
                "at": Timestamp::now().as_str(), "covers": covers,
                "verifier": {"id": "ci", "kind": if k % 2 == 0 { "independent" } else { "self_attested" }},
                "check_id": format!("c{k}"),
            })
        })
        .collect();
    claim(&refs, json!(evidence))
}

fn run_world(world: &[Option<bool>], contract: &str, claim: &Value, trusted: bool) -> Outcome {
    let dir = tempfile::tempdir().unwrap();
    for (i, f) in world.iter().enumerate() {
        if let Some(a) = f {
            std::fs::write(dir.path().join(format!("f{i}")), if *a { "a" } else { "b" }).unwrap();
        }
    }
    let rt = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .unwrap();
    rt.block_on(gate_with(contract, claim, dir.path(), trusted))
}

fn sorted(mut v: Vec<String>) -> Vec<String> {
    v.sort();
    v
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 48, ..ProptestConfig::default() })]

    /// Adding a check never turns a verdict that is not `verified` into `verified`
    /// by masking anything: a refutation stays a refutation, every unmet check stays
    /// unmet, and the only way the added check can lead to `verified` is by covering a
    /// mutation that nothing covered (the owner saying how it is observed — and then
    /// the new check itself must pass).
    #[test]
    fn adding_a_check_never_masks_a_failure(
        w in world(), cs in checks(), extra in checks(), targets in proptest::collection::vec(0..4usize, 0..3)
    ) {
        let c = random_claim(&targets, 0);
        let before = run_world(&w, &contract_text(&cs), &c, false);
        let mut more = cs.clone();
        more.extend(extra);
        let after = run_world(&w, &contract_text(&more), &c, false);
        if before.verdict.state == State::Refuted {
            prop_assert_eq!(after.verdict.state, State::Refuted);
        }
        for u in before.verdict.unmet.iter().filter(|u| !u.starts_with("mutation:")) {
            prop_assert!(after.verdict.state != State::Verified && (after.verdict.state == State::Refuted || after.verdict.unmet.contains(u)),
                "{u} was unmet and no longer is: {}", after.verdict.reason);
        }
        if before.verdict.state != State::Verified && after.verdict.state == State::Verified {
            prop_assert!(before.verdict.unmet.iter().all(|u| u.starts_with("mutation:")), "{:?}", before.verdict.unmet);
        }
    }

    /// Evidence the agent carries (signed by a trusted key or not, naming the
    /// contract's check ids or not) never changes the verdict of the gate's checks.
    #[test]
    fn the_agents_evidence_never_changes_the_verdict(
        w in world(), cs in checks(), targets in proptest::collection::vec(0..4usize, 0..3),
        n in 1..4usize, trusted in any::<bool>()
    ) {
        let contract = contract_text(&cs);
        let plain = run_world(&w, &contract, &random_claim(&targets, 0), false);
        let carried = run_world(&w, &contract, &random_claim(&targets, n), trusted);
        prop_assert_eq!(plain.verdict.state, carried.verdict.state);
        prop_assert_eq!(&plain.verdict.unmet, &carried.verdict.unmet);
    }

    /// The order of the checks never matters.
    #[test]
    fn the_order_of_checks_never_matters(
        w in world(), cs in checks(), targets in proptest::collection::vec(0..4usize, 0..3)
    ) {
        let c = random_claim(&targets, 0);
        let forward = run_world(&w, &contract_text(&cs), &c, false);
        let mut reversed = cs.clone();
        reversed.reverse();
        // Ids follow positions: rename so the same check keeps its id.
        let n = cs.len();
        let text = contract_text(&reversed);
        let renamed = (0..n).fold(text, |t, i| t.replace(&format!("id = \"c{i}\""), &format!("id = \"x{}\"", n - 1 - i)));
        let backward = run_world(&w, &renamed, &c, false);
        prop_assert_eq!(forward.verdict.state, backward.verdict.state);
        let unmet = |v: &[String]| sorted(v.iter().map(|u| u.replace("check:c", "check:x")).collect());
        prop_assert_eq!(unmet(&forward.verdict.unmet), unmet(&backward.verdict.unmet));
    }

    /// The gate's decided document, re-read and re-decided at the gate's decision time
    /// with the gate's items authenticated (as `verify --trust --policy` would find
    /// them), gives the gate's verdict.
    #[test]
    fn re_verifying_the_gates_document_gives_its_verdict(
        w in world(), cs in checks(), targets in proptest::collection::vec(0..4usize, 0..3),
        n in 0..3usize
    ) {
        let o = run_world(&w, &contract_text(&cs), &random_claim(&targets, n), true);
        let doc = Claim::parse(&serde_json::to_vec(&o.document).unwrap(), "gate.json").unwrap();
        let own = doc.claim.evidence.len() - o.runs.len();
        let mut authenticated = vec![false; own];
        authenticated.extend(std::iter::repeat_n(true, o.runs.len()));
        let again = evident_rules::decide(
            &doc.claim,
            &o.verdict.decided_at,
            &evident_rules::Options { authenticated: Some(authenticated) },
        );
        prop_assert_eq!(again.state, o.verdict.state);
        prop_assert_eq!(again.unmet, o.verdict.unmet.clone());
    }
}
