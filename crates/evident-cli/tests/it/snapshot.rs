//! Changes nobody claimed, through the real binary: `evident snapshot` before the
//! agent runs, the agent's changes, `evident gate --before`. SQLite, PostgreSQL and a
//! directory: an undeclared row change and an undeclared file keep the claim from
//! being verified; a declared change verifies; a forged, unsigned, stale or
//! other-contract snapshot is refused.
//!
//! The PostgreSQL test reads `EVIDENT_TEST_POSTGRES_URL` and is `#[ignore]`d unless
//! built with `--cfg evident_services` (as `.ci/run` does).

use assert_cmd::Command;
use serde_json::Value;
use std::path::{Path, PathBuf};

use crate::support::{evident_in, run};

fn sqlite(db: &Path, sql: &str) {
    let out = std::process::Command::new("python3")
        .args([
            "-c",
            "import sqlite3,sys; c=sqlite3.connect(sys.argv[1]); c.executescript(sys.argv[2]); c.commit()",
        ])
        .arg(db)
        .arg(sql)
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
}

/// The owner's side, outside the agent's tree: the key and the snapshot file.
struct World {
    tmp: tempfile::TempDir,
    root: PathBuf,
    key: PathBuf,
}

impl World {
    fn new() -> World {
        let tmp = tempfile::tempdir().unwrap();
        let root = tmp.path().join("work");
        std::fs::create_dir_all(root.join("config")).unwrap();
        let key = tmp.path().join("owner.key");
        let (code, _, err) = run(evident_in(tmp.path())
            .args(["key", "generate", "--id", "owner-gate", "--out"])
            .arg(&key));
        assert_eq!(code, 0, "{err}");
        World { tmp, root, key }
    }

    fn file(&self, name: &str, text: &str) -> PathBuf {
        let p = self.root.join(name);
        std::fs::write(&p, text).unwrap();
        p
    }

    fn claim(&self, targets: &[&str]) -> PathBuf {
        let kinded: Vec<(&str, &str)> = targets.iter().map(|t| ("state_write", *t)).collect();
        self.claim_kinds(&kinded)
    }

    /// A claim of one mutation per (kind, target).
    fn claim_kinds(&self, mutations: &[(&str, &str)]) -> PathBuf {
        let at = time::OffsetDateTime::now_utc() - time::Duration::seconds(1);
        let at = at
            .format(&time::format_description::well_known::Rfc3339)
            .unwrap();
        let ms: Vec<Value> = mutations
            .iter()
            .enumerate()
            .map(|(i, (k, t))| serde_json::json!({"id": format!("m{i}"), "kind": k, "target": t, "at": at}))
            .collect();
        let p = self.tmp.path().join("claim.json");
        std::fs::write(
            &p,
            serde_json::json!({"spec_version": "0.1", "task": {"id": "zip-4471"}, "mutations": ms})
                .to_string(),
        )
        .unwrap();
        p
    }

    fn snapshot(&self, contract: &Path) -> PathBuf {
        let out = self.tmp.path().join("before.json");
        let (code, stdout, err) = run(evident_in(self.tmp.path())
            .arg("snapshot")
            .arg(contract)
            .arg("--out")
            .arg(&out)
            .arg("--key")
            .arg(&self.key)
            .arg("--json"));
        assert_eq!(code, 0, "{stdout}\n{err}");
        out
    }

    fn gate(&self, contract: &Path, claim: &Path, before: Option<&Path>) -> (i32, Value, String) {
        let mut cmd = evident_in(self.tmp.path());
        cmd.arg("gate")
            .arg(contract)
            .arg(claim)
            .args(["--json", "--no-record", "--key"])
            .arg(&self.key);
        if let Some(b) = before {
            cmd.arg("--before").arg(b);
        }
        let (code, out, err) = run(&mut cmd);
        let doc: Value = serde_json::from_str(&out).unwrap_or_else(|e| panic!("{e}: {out}\n{err}"));
        (code, doc, out)
    }
}

fn snapshot_run<'a>(doc: &'a Value, id: &str) -> &'a Value {
    doc["gate"]["checks"]
        .as_array()
        .unwrap()
        .iter()
        .find(|c| c["check_id"] == format!("snapshot:{id}"))
        .unwrap_or_else(|| panic!("no snapshot:{id} run in {doc}"))
}

const SQLITE_CONTRACT: &str = r#"snapshot_max_age_s = 3600

[policy]
max_age_s = 300

[[check]]
id = "zip"
check_type = "state_readback"
covers = { target = "accounts/4471" }
source = { sqlite = { path = "billing.db", query = "SELECT billing_zip FROM accounts WHERE id = '4471'" } }
expected = { billing_zip = "94107" }

[[snapshot]]
id = "accounts"
source = { sqlite = { path = "billing.db", query = "SELECT id, billing_zip FROM accounts ORDER BY id" } }
target = "accounts/{id}"

[[snapshot]]
id = "config"
source = { files = { path = "config" } }
"#;

fn sqlite_world() -> (World, PathBuf) {
    let w = World::new();
    sqlite(
        &w.root.join("billing.db"),
        "CREATE TABLE accounts(id TEXT PRIMARY KEY, billing_zip TEXT); \
         INSERT INTO accounts VALUES ('4471', '10001'), ('4472', '10002'), ('4473', '10003');",
    );
    w.file("config/app.toml", "mode = 'live'\n");
    let contract = w.file("contract.toml", SQLITE_CONTRACT);
    (w, contract)
}

#[test]
fn a_declared_change_verifies() {
    let (w, contract) = sqlite_world();
    let (code, plan, _) = run(evident_in(w.tmp.path())
        .arg("gate")
        .arg(&contract)
        .arg(w.claim(&["accounts/4471"]))
        .arg("--dry-run"));
    assert_eq!(code, 0, "{plan}");
    assert!(
        plan.contains("snapshot:accounts (state_readback)"),
        "{plan}"
    );
    assert!(plan.contains("3 of 3 checks apply"), "{plan}");
    let before = w.snapshot(&contract);
    let text = std::fs::read_to_string(&before).unwrap();
    assert!(
        !text.contains("10001") && !text.contains("live"),
        "values in the snapshot: {text}"
    );
    sqlite(
        &w.root.join("billing.db"),
        "UPDATE accounts SET billing_zip = '94107' WHERE id = '4471';",
    );
    let (code, doc, out) = w.gate(&contract, &w.claim(&["accounts/4471"]), Some(&before));
    assert_eq!(code, 0, "{out}");
    assert_eq!(doc["verdict"]["state"], "verified", "{out}");
    let s = snapshot_run(&doc, "accounts");
    assert_eq!(s["observed"]["changes"], 1);
    assert_eq!(s["observed"]["unclaimed_changes"], 0);
    assert_eq!(s["observed"]["differences"][0]["target"], "accounts/4471");
}

#[test]
fn an_undeclared_row_change_is_not_verified() {
    let (w, contract) = sqlite_world();
    let before = w.snapshot(&contract);
    sqlite(
        &w.root.join("billing.db"),
        "UPDATE accounts SET billing_zip = '94107' WHERE id = '4471'; \
         UPDATE accounts SET billing_zip = '55555' WHERE id = '4472'; \
         DELETE FROM accounts WHERE id = '4473'; INSERT INTO accounts VALUES ('9999', '00000');",
    );
    let (code, doc, out) = w.gate(&contract, &w.claim(&["accounts/4471"]), Some(&before));
    assert_eq!(code, 3, "{out}");
    assert_eq!(doc["verdict"]["state"], "unverified");
    let s = snapshot_run(&doc, "accounts");
    assert_eq!(s["observed"]["unclaimed_changes"], 3, "{s}");
    let err = s["error"].as_str().unwrap();
    assert!(
        err.contains("changed but not claimed: accounts/4472 (changed), accounts/4473 (removed), accounts/9999 (added)"),
        "{err}"
    );
    assert!(!out.contains("55555"), "a value in the report: {out}");
    assert!(
        doc["verdict"]["unmet"]
            .as_array()
            .unwrap()
            .contains(&Value::from("check:snapshot:accounts")),
        "{out}"
    );
    // The decided document re-verifies to the same state: the finding is evidence.
    let decided = w.tmp.path().join("decided.json");
    std::fs::write(&decided, &out).unwrap();
    let (code, v, _) = run(evident_in(w.tmp.path())
        .args(["verify", "--no-record"])
        .arg(&decided));
    assert_eq!(code, 3, "{v}");
}

/// Attack (red16): rows whose ids spell the claimed one differently (`4471/`,
/// `./4471`, `4471//`) are added unclaimed. Their targets canonicalise to the claimed
/// `accounts/4471`, so they passed as claimed and the claim verified. Twin: such a
/// row already there and left alone does not stop the honest change verifying.
#[test]
fn a_row_spelling_the_claimed_target_differently_is_not_claimed() {
    let (w, contract) = sqlite_world();
    sqlite(
        &w.root.join("billing.db"),
        "INSERT INTO accounts VALUES ('4472/', '20002');",
    );
    let before = w.snapshot(&contract);
    sqlite(
        &w.root.join("billing.db"),
        "UPDATE accounts SET billing_zip = '94107' WHERE id = '4471';",
    );
    let (code, doc, out) = w.gate(&contract, &w.claim(&["accounts/4471"]), Some(&before));
    assert_eq!(code, 0, "honest twin: {out}");
    assert_eq!(doc["verdict"]["state"], "verified", "{out}");
    sqlite(
        &w.root.join("billing.db"),
        "INSERT INTO accounts VALUES ('4471/', '00000'), ('./4471', '00000'), ('4471//', '66666');",
    );
    let (code, doc, out) = w.gate(&contract, &w.claim(&["accounts/4471"]), Some(&before));
    assert_eq!(code, 3, "{out}");
    assert_eq!(doc["verdict"]["state"], "unverified", "{out}");
    let s = snapshot_run(&doc, "accounts");
    assert_eq!(s["observed"]["unclaimed_changes"], 3, "{s}");
    assert!(
        s["error"]
            .as_str()
            .unwrap()
            .contains("accounts/4471/ (added)"),
        "{s}"
    );
}

#[test]
fn an_undeclared_file_is_not_verified() {
    let (w, contract) = sqlite_world();
    let before = w.snapshot(&contract);
    sqlite(
        &w.root.join("billing.db"),
        "UPDATE accounts SET billing_zip = '94107' WHERE id = '4471';",
    );
    w.file("config/backdoor.toml", "allow_all = true\n");
    std::fs::write(w.root.join("config/app.toml"), "mode = 'debug'\n").unwrap();
    let (code, doc, out) = w.gate(&contract, &w.claim(&["accounts/4471"]), Some(&before));
    assert_eq!(code, 3, "{out}");
    let s = snapshot_run(&doc, "config");
    let err = s["error"].as_str().unwrap();
    assert!(
        err.contains("config/app.toml (changed), config/backdoor.toml (added)"),
        "{err}"
    );
    assert!(!out.contains("allow_all"), "{out}");
    // Claimed as file changes, the same two pass this snapshot; claimed as
    // state_writes (a kind no files snapshot takes) they do not.
    let (_, doc, out) = w.gate(
        &contract,
        &w.claim_kinds(&[
            ("state_write", "accounts/4471"),
            ("file_write", "config/app.toml"),
            ("code_change", "config/backdoor.toml"),
        ]),
        Some(&before),
    );
    assert_eq!(
        snapshot_run(&doc, "config")["observed"]["unclaimed_changes"],
        0,
        "{out}"
    );
    let (_, doc, out) = w.gate(
        &contract,
        &w.claim(&["accounts/4471", "config/app.toml", "config/backdoor.toml"]),
        Some(&before),
    );
    assert_eq!(
        snapshot_run(&doc, "config")["observed"]["unclaimed_changes"],
        2,
        "{out}"
    );
}

/// The contract of attacks/snap_cross_set_target.sh: rows `accounts/{id}` and the
/// files under `accounts/`, whose file `accounts/4471` has a row's name.
const CROSS_SET_CONTRACT: &str = r#"snapshot_max_age_s = 3600
[policy]
max_age_s = 300
[[check]]
id = "zip"
check_type = "state_readback"
covers = { target = "accounts/4471" }
source = { sqlite = { path = "billing.db", query = "SELECT billing_zip FROM accounts WHERE id = '4471'" } }
expected = { billing_zip = "94107" }
[[snapshot]]
id = "rows"
source = { sqlite = { path = "billing.db", query = "SELECT id, billing_zip FROM accounts ORDER BY id" } }
target = "accounts/{id}"
[[snapshot]]
id = "files"
source = { files = { path = "accounts" } }
"#;

/// Attack (attacks/snap_cross_set_target.sh): the claimed row `accounts/4471` also
/// excused the file `accounts/4471` the agent rewrote (one claimed target cleared
/// its name in every snapshot). A `state_write` names a row, not a file. Twin: the
/// file change claimed as a `file_write` too verifies.
#[test]
fn a_claimed_row_does_not_excuse_a_file_of_the_same_name() {
    let w = World::new();
    std::fs::create_dir_all(w.root.join("accounts")).unwrap();
    w.file("accounts/4471", "limit = 100\n");
    sqlite(
        &w.root.join("billing.db"),
        "CREATE TABLE accounts(id TEXT PRIMARY KEY, billing_zip TEXT); INSERT INTO accounts VALUES ('4471','10001');",
    );
    let contract = w.file("contract.toml", CROSS_SET_CONTRACT);
    let before = w.snapshot(&contract);
    sqlite(
        &w.root.join("billing.db"),
        "UPDATE accounts SET billing_zip='94107' WHERE id='4471';",
    );
    w.file("accounts/4471", "limit = 999999\n");
    let (code, doc, out) = w.gate(&contract, &w.claim(&["accounts/4471"]), Some(&before));
    assert_eq!(code, 3, "{out}");
    assert_eq!(doc["verdict"]["state"], "unverified", "{out}");
    assert_eq!(
        snapshot_run(&doc, "rows")["observed"]["unclaimed_changes"],
        0
    );
    let err = snapshot_run(&doc, "files")["error"].as_str().unwrap();
    assert!(err.contains("accounts/4471 (changed)"), "{err}");
    let (code, doc, out) = w.gate(
        &contract,
        &w.claim_kinds(&[
            ("state_write", "accounts/4471"),
            ("file_write", "accounts/4471"),
        ]),
        Some(&before),
    );
    assert_eq!(code, 0, "honest twin: {out}");
    assert_eq!(doc["verdict"]["state"], "verified", "{out}");
}

/// Two snapshots of one kind naming items alike (a table and its mirror): a
/// mutation of `accounts/4471` could mean either, so it claims neither. Twin: the
/// mirror declares its own kind, and a mutation of that kind claims it.
#[test]
fn a_target_two_snapshots_of_its_kind_name_claims_neither() {
    let w = World::new();
    sqlite(
        &w.root.join("billing.db"),
        "CREATE TABLE accounts(id TEXT PRIMARY KEY, billing_zip TEXT); INSERT INTO accounts VALUES ('4471','10001'); \
         CREATE TABLE mirror(id TEXT PRIMARY KEY, billing_zip TEXT); INSERT INTO mirror VALUES ('4471','10001');",
    );
    let mirror = "[[snapshot]]\nid = \"mirror\"\nsource = { sqlite = { path = \"billing.db\", query = \"SELECT id, billing_zip FROM mirror ORDER BY id\" } }\ntarget = \"accounts/{id}\"\n";
    let rows = CROSS_SET_CONTRACT
        .split("[[snapshot]]\nid = \"files\"")
        .next()
        .unwrap();
    let contract = w.file("contract.toml", &format!("{rows}{mirror}"));
    let before = w.snapshot(&contract);
    let change = "UPDATE accounts SET billing_zip='94107' WHERE id='4471'; UPDATE mirror SET billing_zip='00000' WHERE id='4471';";
    sqlite(&w.root.join("billing.db"), change);
    let (code, doc, out) = w.gate(&contract, &w.claim(&["accounts/4471"]), Some(&before));
    assert_eq!(code, 3, "{out}");
    let err = snapshot_run(&doc, "mirror")["error"].as_str().unwrap();
    assert!(
        err.contains("could mean the item of snapshots rows, mirror"),
        "{err}"
    );
    let kinded = w.file(
        "kinded.toml",
        &format!(
            "{rows}{}",
            mirror.replace("target =", "kinds = [\"mirror_write\"]\ntarget =")
        ),
    );
    sqlite(
        &w.root.join("billing.db"),
        "UPDATE accounts SET billing_zip='10001'; UPDATE mirror SET billing_zip='10001';",
    );
    let before = w.snapshot(&kinded);
    sqlite(&w.root.join("billing.db"), change);
    let (code, doc, out) = w.gate(
        &kinded,
        &w.claim_kinds(&[
            ("state_write", "accounts/4471"),
            ("mirror_write", "accounts/4471"),
        ]),
        Some(&before),
    );
    assert_eq!(code, 0, "honest twin: {out}");
    assert_eq!(doc["verdict"]["state"], "verified", "{out}");
}

/// Attack (attacks/snap_kind_lie.sh): the row `accounts/4472` rewritten and claimed
/// as a `file_write`, which a kind-wide check (`covers = { kind = "file_write" }`)
/// covers: the snapshot counted it claimed and the claim verified, though nothing
/// observed the row. A row is changed by a state write; a `file_write` names no row.
/// Twin: the honest claim of the one row verifies.
#[test]
fn a_row_change_claimed_as_a_file_write_is_not_claimed() {
    let w = World::new();
    sqlite(
        &w.root.join("billing.db"),
        "CREATE TABLE accounts(id TEXT PRIMARY KEY, billing_zip TEXT); INSERT INTO accounts VALUES ('4471','10001'),('4472','10002');",
    );
    w.file("build.txt", "ok\n");
    let contract = w.file(
        "contract.toml",
        &(CROSS_SET_CONTRACT
            .split("[[snapshot]]")
            .next()
            .unwrap()
            .replace(
                "[[check]]\nid = \"zip\"",
                "[[check]]\nid = \"build\"\ncheck_type = \"state_readback\"\ncovers = { kind = \"file_write\" }\nsource = { file = { path = \"build.txt\" } }\nexpected = { exists = true }\n[[check]]\nid = \"zip\"",
            )
            + "[[snapshot]]\nid = \"accounts\"\nsource = { sqlite = { path = \"billing.db\", query = \"SELECT id, billing_zip FROM accounts ORDER BY id\" } }\ntarget = \"accounts/{id}\"\n"),
    );
    let before = w.snapshot(&contract);
    sqlite(
        &w.root.join("billing.db"),
        "UPDATE accounts SET billing_zip='94107' WHERE id='4471';",
    );
    let (code, doc, out) = w.gate(&contract, &w.claim(&["accounts/4471"]), Some(&before));
    assert_eq!(code, 0, "honest twin: {out}");
    assert_eq!(doc["verdict"]["state"], "verified", "{out}");
    sqlite(
        &w.root.join("billing.db"),
        "UPDATE accounts SET billing_zip='00000' WHERE id='4472';",
    );
    let (code, doc, out) = w.gate(
        &contract,
        &w.claim_kinds(&[
            ("state_write", "accounts/4471"),
            ("file_write", "accounts/4472"),
        ]),
        Some(&before),
    );
    assert_eq!(code, 3, "{out}");
    assert_eq!(doc["verdict"]["state"], "unverified", "{out}");
    let err = snapshot_run(&doc, "accounts")["error"].as_str().unwrap();
    assert!(err.contains("accounts/4472 (changed)"), "{err}");
}

#[test]
fn forged_unsigned_stale_missing_and_foreign_snapshots_are_refused() {
    let (w, contract) = sqlite_world();
    let before = w.snapshot(&contract);
    sqlite(
        &w.root.join("billing.db"),
        "UPDATE accounts SET billing_zip = '94107' WHERE id = '4471'; \
         UPDATE accounts SET billing_zip = '55555' WHERE id = '4472';",
    );
    let claim = w.claim(&["accounts/4471"]);
    let refused = |file: Option<&Path>, why: &str| {
        let (code, doc, out) = w.gate(&contract, &claim, file);
        assert_eq!(code, 3, "{why}: {out}");
        let err = snapshot_run(&doc, "accounts")["error"]
            .as_str()
            .unwrap()
            .to_string();
        assert!(err.contains(why), "{why}: {err}");
    };
    // The agent rewrites the hash of the row it changed to what it is now.
    let mut forged: Value =
        serde_json::from_str(&std::fs::read_to_string(&before).unwrap()).unwrap();
    let now_snapshot = w.snapshot(&contract);
    let now: Value =
        serde_json::from_str(&std::fs::read_to_string(&now_snapshot).unwrap()).unwrap();
    forged["sets"]["accounts"]["accounts/4472"] = now["sets"]["accounts"]["accounts/4472"].clone();
    let f = w.tmp.path().join("forged.json");
    std::fs::write(&f, forged.to_string()).unwrap();
    refused(Some(&f), "signature does not verify");
    // Or drops the signature.
    forged.as_object_mut().unwrap().remove("signature");
    std::fs::write(&f, forged.to_string()).unwrap();
    refused(Some(&f), "unsigned");
    // Or signs it with a key of its own.
    let agent_key = w.tmp.path().join("agent.key");
    run(evident_in(w.tmp.path())
        .args(["key", "generate", "--id", "owner-gate", "--out"])
        .arg(&agent_key));
    let (code, _, err) = run(evident_in(w.tmp.path())
        .arg("snapshot")
        .arg(&contract)
        .arg("--out")
        .arg(&f)
        .arg("--key")
        .arg(&agent_key));
    assert_eq!(code, 0, "{err}");
    refused(Some(&f), "signature does not verify");
    // No snapshot at all.
    refused(None, "no snapshot was given");
    // A snapshot of another contract.
    let other = w.file(
        "other.toml",
        &SQLITE_CONTRACT.replace("ORDER BY id", "ORDER BY id DESC"),
    );
    let foreign = w.snapshot(&other);
    refused(Some(&foreign), "another contract");
    // A stale one.
    let short = w.file(
        "short.toml",
        &SQLITE_CONTRACT.replace("snapshot_max_age_s = 3600", "snapshot_max_age_s = 1"),
    );
    let old = w.snapshot(&short);
    std::thread::sleep(std::time::Duration::from_millis(2100));
    let (code, doc, out) = w.gate(&short, &claim, Some(&old));
    assert_eq!(code, 3, "{out}");
    let err = snapshot_run(&doc, "accounts")["error"].as_str().unwrap();
    assert!(err.contains("stale"), "{err}");
}

#[test]
#[cfg_attr(
    not(evident_services),
    ignore = "needs PostgreSQL: .ci/run sets its address and runs this (see README, Development)"
)]
fn postgres_rows_undeclared_and_declared() {
    let url = std::env::var("EVIDENT_TEST_POSTGRES_URL").expect(
        "EVIDENT_TEST_POSTGRES_URL is not set: this test needs PostgreSQL (.ci/run sets it)",
    );
    let table = format!(
        "snap_{}_{}",
        std::process::id(),
        time::OffsetDateTime::now_utc().unix_timestamp_nanos() % 1_000_000_000
    );
    let psql = |sql: &str| {
        let out = std::process::Command::new("psql")
            .args([url.as_str(), "-v", "ON_ERROR_STOP=1", "-qc", sql])
            .output()
            .unwrap();
        assert!(
            out.status.success(),
            "psql: {}",
            String::from_utf8_lossy(&out.stderr)
        );
    };
    psql(&format!(
        "CREATE TABLE {table} (id int PRIMARY KEY, billing_zip text); INSERT INTO {table} VALUES (4471, '10001'), (4472, '10002');"
    ));
    let w = World::new();
    let contract = w.file(
        "contract.toml",
        &format!(
            r#"[policy]

[[check]]
id = "zip"
check_type = "state_readback"
covers = {{ target = "accounts/4471" }}
source = {{ postgres = {{ url_env = "BILLING_DB", query = "SELECT billing_zip FROM {table} WHERE id = 4471" }} }}
expected = {{ billing_zip = "94107" }}

[[snapshot]]
id = "accounts"
source = {{ postgres = {{ url_env = "BILLING_DB", query = "SELECT id, billing_zip FROM {table} ORDER BY id" }} }}
target = "accounts/{{id}}"
"#
        ),
    );
    let with_db = |cmd: &mut Command| {
        cmd.env("BILLING_DB", &url);
    };
    let out = w.tmp.path().join("before.json");
    let mut cmd = evident_in(w.tmp.path());
    with_db(&mut cmd);
    let (code, _, err) = run(cmd
        .arg("snapshot")
        .arg(&contract)
        .arg("--out")
        .arg(&out)
        .arg("--key")
        .arg(&w.key));
    assert_eq!(code, 0, "{err}");
    psql(&format!(
        "UPDATE {table} SET billing_zip = '94107' WHERE id = 4471;"
    ));
    let gate = |targets: &[&str]| {
        let mut cmd = evident_in(w.tmp.path());
        with_db(&mut cmd);
        let (code, stdout, err) = run(cmd
            .arg("gate")
            .arg(&contract)
            .arg(w.claim(targets))
            .args(["--json", "--no-record", "--key"])
            .arg(&w.key)
            .arg("--before")
            .arg(&out));
        let doc: Value =
            serde_json::from_str(&stdout).unwrap_or_else(|e| panic!("{e}: {stdout}\n{err}"));
        (code, doc)
    };
    let (code, doc) = gate(&["accounts/4471"]);
    assert_eq!(code, 0, "{doc}");
    assert_eq!(doc["verdict"]["state"], "verified");
    psql(&format!(
        "UPDATE {table} SET billing_zip = '55555' WHERE id = 4472;"
    ));
    let (code, doc) = gate(&["accounts/4471"]);
    assert_eq!(code, 3, "{doc}");
    let err = snapshot_run(&doc, "accounts")["error"]
        .as_str()
        .unwrap()
        .to_string();
    assert!(err.contains("accounts/4472 (changed)"), "{err}");
    assert!(!doc.to_string().contains("55555"));
    psql(&format!("DROP TABLE {table};"));
}

/// A git tree: a commit the agent made adds a file no mutation names.
#[test]
fn a_git_tree_snapshot_sees_an_unclaimed_commit() {
    let w = World::new();
    let git = |args: &[&str]| {
        let out = std::process::Command::new("git")
            .args([
                "-c",
                "user.name=t",
                "-c",
                "user.email=t@t",
                "-c",
                "commit.gpgsign=false",
            ])
            .args(args)
            .current_dir(&w.root)
            .output()
            .unwrap();
        assert!(
            out.status.success(),
            "{}",
            String::from_utf8_lossy(&out.stderr)
        );
    };
    git(&["init", "-q"]);
    w.file("app.py", "print('v1')\n");
    git(&["add", "."]);
    git(&["commit", "-qm", "start"]);
    let contract = w.file(
        "contract.toml",
        "[policy]\n\n[[snapshot]]\nid = \"tree\"\nsource = { git = { rev = \"HEAD\" } }\n",
    );
    // The contract itself is in the tree: commit it before the snapshot.
    git(&["add", "."]);
    git(&["commit", "-qm", "contract"]);
    let before = w.snapshot(&contract);
    w.file("app.py", "print('v2')\n");
    w.file("cron.py", "import os\n");
    git(&["add", "."]);
    git(&["commit", "-qm", "agent"]);
    // A file is changed by a code change (a `state_write` of app.py names no file).
    let (code, doc, out) = w.gate(
        &contract,
        &w.claim_kinds(&[("code_change", "app.py")]),
        Some(&before),
    );
    assert_eq!(code, 3, "{out}");
    let s = snapshot_run(&doc, "tree");
    assert_eq!(s["observed"]["unclaimed_changes"], 1, "{s}");
    assert!(
        s["error"].as_str().unwrap().contains("cron.py (added)"),
        "{s}"
    );
}

/// Redis keys by pattern: an unclaimed key change is found; the value never shown.
#[test]
#[cfg_attr(
    not(evident_services),
    ignore = "needs Redis: .ci/run sets its address and runs this (see README, Development)"
)]
fn redis_keys_undeclared_change() {
    let url = std::env::var("EVIDENT_TEST_REDIS_URL")
        .expect("EVIDENT_TEST_REDIS_URL is not set: this test needs Redis (.ci/run sets it)");
    let prefix = format!(
        "snap{}x{}",
        std::process::id(),
        time::OffsetDateTime::now_utc().unix_timestamp_nanos() % 1_000_000_000
    );
    let cli = |args: &[&str]| {
        let out = std::process::Command::new("redis-cli")
            .args(["-u", url.as_str()])
            .args(args)
            .output()
            .unwrap();
        assert!(
            out.status.success(),
            "{}",
            String::from_utf8_lossy(&out.stderr)
        );
    };
    cli(&["SET", &format!("{prefix}:a"), "one"]);
    cli(&["SET", &format!("{prefix}:b"), "two"]);
    let w = World::new();
    let contract = w.file(
        "contract.toml",
        &format!("[policy]\n\n[[snapshot]]\nid = \"kv\"\nsource = {{ redis = {{ url_env = \"KV\", pattern = \"{prefix}:*\" }} }}\n"),
    );
    let out = w.tmp.path().join("before.json");
    let (code, _, err) = run(evident_in(w.tmp.path())
        .env("KV", &url)
        .arg("snapshot")
        .arg(&contract)
        .arg("--out")
        .arg(&out)
        .arg("--key")
        .arg(&w.key));
    assert_eq!(code, 0, "{err}");
    cli(&["SET", &format!("{prefix}:a"), "ONE-secret-value"]);
    cli(&["SET", &format!("{prefix}:b"), "TWO-secret-value"]);
    let (code, stdout, err) = run(evident_in(w.tmp.path())
        .env("KV", &url)
        .arg("gate")
        .arg(&contract)
        .arg(w.claim(&[&format!("{prefix}:a")]))
        .args(["--json", "--no-record", "--key"])
        .arg(&w.key)
        .arg("--before")
        .arg(&out));
    assert_eq!(code, 3, "{stdout}\n{err}");
    let doc: Value = serde_json::from_str(&stdout).unwrap();
    let s = snapshot_run(&doc, "kv");
    assert_eq!(s["observed"]["unclaimed_changes"], 1, "{s}");
    assert!(
        s["error"]
            .as_str()
            .unwrap()
            .contains(&format!("{prefix}:b (changed)")),
        "{s}"
    );
    assert!(!stdout.contains("secret-value"));
    cli(&["DEL", &format!("{prefix}:a"), &format!("{prefix}:b")]);
}

impl World {
    /// `evident snapshot` without a key: the file is unsigned and its hash recorded in
    /// the ledger at `ledger` (the gate's, `ledger.db` beside the key, by default).
    fn snapshot_recorded(&self, contract: &Path, out: &str, ledger: Option<&Path>) -> PathBuf {
        let out = self.tmp.path().join(out);
        let mut cmd = evident_in(self.tmp.path());
        if let Some(l) = ledger {
            cmd.env("EVIDENT_LEDGER", l);
        }
        let (code, stdout, err) = run(cmd
            .arg("snapshot")
            .arg(contract)
            .arg("--out")
            .arg(&out)
            .arg("--json"));
        assert_eq!(code, 0, "{stdout}\n{err}");
        let v: Value = serde_json::from_str(&stdout).unwrap();
        assert!(v["recorded"]["id"].as_u64().is_some(), "{stdout}");
        assert!(v["signed_by"].is_null(), "{stdout}");
        out
    }
}

/// The issue's "recorded in the ledger": without a key, `evident snapshot` records
/// the file's hash in the ledger and the gate accepts that unsigned file (twin), and
/// still refuses an edited one, one recorded in another ledger, one of another
/// contract and a stale one.
#[test]
fn an_unsigned_snapshot_counts_only_when_recorded_in_the_gates_ledger() {
    let (w, contract) = sqlite_world();
    let before = w.snapshot_recorded(&contract, "recorded.json", None);
    let text = std::fs::read_to_string(&before).unwrap();
    assert!(
        !text.contains("signature") && !text.contains("10001"),
        "{text}"
    );
    sqlite(
        &w.root.join("billing.db"),
        "UPDATE accounts SET billing_zip = '94107' WHERE id = '4471';",
    );
    let claim = w.claim(&["accounts/4471"]);
    let (code, doc, out) = w.gate(&contract, &claim, Some(&before));
    assert_eq!(code, 0, "honest twin: {out}");
    assert_eq!(doc["verdict"]["state"], "verified", "{out}");
    sqlite(
        &w.root.join("billing.db"),
        "UPDATE accounts SET billing_zip = '55555' WHERE id = '4472';",
    );
    let refused = |file: &Path, contract: &Path, why: &str| {
        let (code, doc, out) = w.gate(contract, &claim, Some(file));
        assert_eq!(code, 3, "{why}: {out}");
        let err = snapshot_run(&doc, "accounts")["error"].as_str().unwrap();
        assert!(err.contains(why), "{why}: {err}");
    };
    // The agent rewrites the changed row's hash in the recorded file.
    let now = w.snapshot_recorded(
        &contract,
        "now.json",
        Some(&w.tmp.path().join("scratch.db")),
    );
    let now: Value = serde_json::from_str(&std::fs::read_to_string(&now).unwrap()).unwrap();
    let mut edited: Value = serde_json::from_str(&text).unwrap();
    edited["sets"]["accounts"]["accounts/4472"] = now["sets"]["accounts"]["accounts/4472"].clone();
    let f = w.tmp.path().join("edited.json");
    std::fs::write(&f, edited.to_string()).unwrap();
    refused(&f, &contract, "not recorded in the gate's ledger");
    // Or takes one of the state now, recorded in a ledger of its own.
    let agents = w.snapshot_recorded(
        &contract,
        "agents.json",
        Some(&w.tmp.path().join("agent.db")),
    );
    refused(&agents, &contract, "not recorded in the gate's ledger");
    // A recorded snapshot of another contract.
    let other = w.file(
        "other.toml",
        &SQLITE_CONTRACT.replace("ORDER BY id", "ORDER BY id DESC"),
    );
    let foreign = w.snapshot_recorded(&other, "foreign.json", None);
    refused(&foreign, &contract, "another contract");
    // A recorded one past snapshot_max_age_s.
    let short = w.file(
        "short.toml",
        &SQLITE_CONTRACT.replace("snapshot_max_age_s = 3600", "snapshot_max_age_s = 1"),
    );
    let old = w.snapshot_recorded(&short, "old.json", None);
    std::thread::sleep(std::time::Duration::from_millis(2100));
    refused(&old, &short, "stale");
}

/// A `[[trust]]` key vouches for evidence (a CI runner's results), not for the state
/// before the agent ran: a snapshot it signed was accepted, so whoever can make that
/// signer sign (a CI job the agent's code runs) could hand the gate a snapshot of the
/// state after its changes. Refused now; twin: the same key named a
/// `[[snapshot_signer]]` signs snapshots.
#[test]
fn a_trust_key_does_not_sign_snapshots_a_snapshot_signer_does() {
    let (w, _) = sqlite_world();
    let ci_key = w.tmp.path().join("ci.key");
    let (code, _, err) = run(evident_in(w.tmp.path())
        .args(["key", "generate", "--id", "ci", "--out"])
        .arg(&ci_key));
    assert_eq!(code, 0, "{err}");
    let public = evident_sign::Key::load(&ci_key)
        .unwrap()
        .public_key_base64();
    let entry = |table: &str| format!("[[{table}]]\nid = \"ci\"\npublic_key = \"{public}\"\n");
    let trusted = w.file(
        "trusted.toml",
        &format!("{SQLITE_CONTRACT}{}", entry("trust")),
    );
    let signer = w.file(
        "signer.toml",
        &format!("{SQLITE_CONTRACT}{}", entry("snapshot_signer")),
    );
    let take = |contract: &Path, out: &str| {
        let out = w.tmp.path().join(out);
        let (code, _, err) = run(evident_in(w.tmp.path())
            .arg("snapshot")
            .arg(contract)
            .arg("--out")
            .arg(&out)
            .arg("--key")
            .arg(&ci_key));
        assert_eq!(code, 0, "{err}");
        out
    };
    let by_trust = take(&trusted, "trust.json");
    let by_signer = take(&signer, "signer.json");
    sqlite(
        &w.root.join("billing.db"),
        "UPDATE accounts SET billing_zip = '94107' WHERE id = '4471';",
    );
    let claim = w.claim(&["accounts/4471"]);
    let (code, doc, out) = w.gate(&trusted, &claim, Some(&by_trust));
    assert_eq!(code, 3, "{out}");
    let err = snapshot_run(&doc, "accounts")["error"].as_str().unwrap();
    assert!(err.contains("does not trust for snapshots"), "{err}");
    let (code, doc, out) = w.gate(&signer, &claim, Some(&by_signer));
    assert_eq!(code, 0, "twin: {out}");
    assert_eq!(doc["verdict"]["state"], "verified", "{out}");
}

/// Attack (attacks/sql_search_path_shadow.sh): PostgreSQL's default search_path is
/// `"$user", public`. The agent creates a schema named after the gate's role holding a
/// copy of `accounts` with the values the check expects: the readback and the
/// snapshot read the copy, the application keeps the old value (and a row the agent
/// rewrote). Every session is pinned to `public` now: the readback sees the real
/// table and refutes. Twin: the work done in `public.accounts` verifies. A scratch
/// database, so no other test's tables are shadowed.
#[test]
#[cfg_attr(
    not(evident_services),
    ignore = "needs PostgreSQL: .ci/run sets its address and runs this (see README, Development)"
)]
fn a_schema_named_after_the_gates_role_does_not_shadow_the_table() {
    let url = std::env::var("EVIDENT_TEST_POSTGRES_URL").expect(
        "EVIDENT_TEST_POSTGRES_URL is not set: this test needs PostgreSQL (.ci/run sets it)",
    );
    let db = format!(
        "evident_sp_{}_{}",
        std::process::id(),
        time::OffsetDateTime::now_utc().unix_timestamp_nanos() % 1_000_000_000
    );
    let psql = |url: &str, sql: &str| {
        let out = std::process::Command::new("psql")
            .args([url, "-v", "ON_ERROR_STOP=1", "-qAtc", sql])
            .output()
            .unwrap();
        assert!(
            out.status.success(),
            "psql: {}",
            String::from_utf8_lossy(&out.stderr)
        );
        String::from_utf8_lossy(&out.stdout).trim().to_string()
    };
    psql(&url, &format!("CREATE DATABASE {db}"));
    let (base, query) = url.split_once('?').unwrap_or((url.as_str(), ""));
    let (server, _) = base.rsplit_once('/').expect("a postgres://…/db URL");
    let scratch = if query.is_empty() {
        format!("{server}/{db}")
    } else {
        format!("{server}/{db}?{query}")
    };
    let role = psql(&scratch, "SELECT current_user");
    psql(
        &scratch,
        "CREATE TABLE public.accounts(id text PRIMARY KEY, billing_zip text); \
         INSERT INTO public.accounts VALUES ('4471', '10001'), ('4472', '10002');",
    );
    let w = World::new();
    let contract = w.file(
        "contract.toml",
        r#"snapshot_max_age_s = 3600
[policy]
max_age_s = 300
[[check]]
id = "zip"
check_type = "state_readback"
covers = { target = "accounts/4471" }
source = { postgres = { url_env = "BILLING_DB", query = "SELECT billing_zip FROM accounts WHERE id = '4471'" } }
expected = { billing_zip = "94107" }
[[snapshot]]
id = "accounts"
source = { postgres = { url_env = "BILLING_DB", query = "SELECT id, billing_zip FROM accounts ORDER BY id" } }
target = "accounts/{id}"
"#,
    );
    let before = w.tmp.path().join("before.json");
    let (code, _, err) = run(evident_in(w.tmp.path())
        .env("BILLING_DB", &scratch)
        .arg("snapshot")
        .arg(&contract)
        .arg("--out")
        .arg(&before)
        .arg("--key")
        .arg(&w.key));
    assert_eq!(code, 0, "{err}");
    let gate = || {
        let (code, stdout, err) = run(evident_in(w.tmp.path())
            .env("BILLING_DB", &scratch)
            .arg("gate")
            .arg(&contract)
            .arg(w.claim(&["accounts/4471"]))
            .args(["--json", "--no-record", "--key"])
            .arg(&w.key)
            .arg("--before")
            .arg(&before));
        let doc: Value =
            serde_json::from_str(&stdout).unwrap_or_else(|e| panic!("{e}: {stdout}\n{err}"));
        (code, doc)
    };
    // The agent: 4471 left undone in public, 4472 rewritten there; the shadow copy
    // shows what the gate expects.
    psql(
        &scratch,
        &format!(
            "UPDATE public.accounts SET billing_zip = '00000' WHERE id = '4472'; \
             CREATE SCHEMA \"{role}\"; \
             CREATE TABLE \"{role}\".accounts AS SELECT * FROM public.accounts; \
             UPDATE \"{role}\".accounts SET billing_zip = '94107' WHERE id = '4471'; \
             UPDATE \"{role}\".accounts SET billing_zip = '10002' WHERE id = '4472';"
        ),
    );
    let (code, doc) = gate();
    assert_eq!(code, 1, "{doc}");
    assert_eq!(doc["verdict"]["state"], "refuted", "{doc}");
    assert!(
        snapshot_run(&doc, "accounts")["error"]
            .as_str()
            .unwrap_or_default()
            .contains("accounts/4472 (changed)"),
        "{doc}"
    );
    // Twin: the work done in the real table.
    psql(
        &scratch,
        &format!(
            "DROP SCHEMA \"{role}\" CASCADE; \
             UPDATE public.accounts SET billing_zip = '10002' WHERE id = '4472'; \
             UPDATE public.accounts SET billing_zip = '94107' WHERE id = '4471';"
        ),
    );
    let (code, doc) = gate();
    assert_eq!(code, 0, "twin: {doc}");
    assert_eq!(doc["verdict"]["state"], "verified", "{doc}");
    psql(&url, &format!("DROP DATABASE {db}"));
}
