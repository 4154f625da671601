//! `evident key`, `evident log`, `evident show` and `evident ledger` against real
//! ledgers (a SQLite file; PostgreSQL when `EVIDENT_TEST_POSTGRES_URL` is set).

use std::path::{Path, PathBuf};

use assert_cmd::Command;
use evident_ledger::{NewEntry, TrustList};
use serde_json::{Value, json};

fn evident() -> Command {
    let mut cmd = Command::cargo_bin("evident").unwrap();
    cmd.env_remove("EVIDENT_LEDGER");
    cmd
}

fn entry(task: &str, state: &str, reason: &str) -> NewEntry {
    NewEntry {
        kind: "verify".into(),
        task_id: Some(task.into()),
        state: state.into(),
        claim: json!({ "spec_version": "0.1", "task": { "id": task }, "mutations": [], "evidence": [] }),
        contract: Some(json!({ "env": { "API_TOKEN": "tok-very-secret-1" } })),
        verdict: json!({ "state": state, "unmet": [], "reason": reason }),
    }
}

/// A ledger with three records: t-a verified, t-b refuted, t-a unverified.
fn three(dir: &Path) -> (PathBuf, Vec<evident_ledger::Record>) {
    let path = dir.join("ledger.db");
    let ledger = evident_ledger::open(Some(path.to_str().unwrap())).unwrap();
    let recs = vec![
        ledger
            .append(entry("t-a", "verified", "MARKER-ONE"))
            .unwrap(),
        ledger
            .append(entry("t-b", "refuted", "MARKER-TWO"))
            .unwrap(),
        ledger
            .append(entry("t-a", "unverified", "MARKER-THREE"))
            .unwrap(),
    ];
    (path, recs)
}

fn stdout(out: &std::process::Output) -> String {
    String::from_utf8_lossy(&out.stdout).into_owned()
}

fn stderr(out: &std::process::Output) -> String {
    String::from_utf8_lossy(&out.stderr).into_owned()
}

#[test]
fn key_generate_writes_a_usable_pair_and_never_overwrites() {
    let dir = tempfile::tempdir().unwrap();
    let key_path = dir.path().join("gate.key");
    let out = evident()
        .args([
            "key",
            "generate",
            "--out",
            key_path.to_str().unwrap(),
            "--id",
            "gate-1",
        ])
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    let key = evident_ledger::Key::load(&key_path).unwrap();
    assert_eq!(key.id(), "gate-1");
    // The private half is never printed.
    let private: Value =
        serde_json::from_str(&std::fs::read_to_string(&key_path).unwrap()).unwrap();
    let secret = private["private_key"].as_str().unwrap();
    assert!(!stdout(&out).contains(secret) && !stderr(&out).contains(secret));
    assert!(stdout(&out).contains(&key.public_key_base64()));
    #[cfg(unix)]
    {
        use std::os::unix::fs::PermissionsExt as _;
        let mode = std::fs::metadata(&key_path).unwrap().permissions().mode() & 0o777;
        assert_eq!(mode, 0o600);
    }
    // The .pub file is a trust list that authenticates what the key signs.
    let pub_path = dir.path().join("gate.key.pub");
    let trust = TrustList::load(&pub_path).unwrap();
    let mut item =
        json!({ "covers": ["m1"], "verifier": { "id": "gate-1", "kind": "independent" } });
    evident_ledger::attach_signature(&mut item, &key).unwrap();
    assert_eq!(evident_ledger::authenticate(&item, &trust), Ok(()));

    // A second run refuses to overwrite.
    let before = std::fs::read(&key_path).unwrap();
    let out = evident()
        .args(["key", "generate", "--out", key_path.to_str().unwrap()])
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(2));
    assert!(stderr(&out).contains("already exists"), "{}", stderr(&out));
    assert_eq!(std::fs::read(&key_path).unwrap(), before);
}

#[test]
fn log_filters_and_prints_json() {
    let dir = tempfile::tempdir().unwrap();
    let (path, recs) = three(dir.path());
    let p = path.to_str().unwrap();

    let out = evident().args(["log", "--ledger", p]).output().unwrap();
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    let text = stdout(&out);
    assert_eq!(text.lines().count(), 3, "{text}");
    assert!(text.contains(&recs[1].hash[..12]));
    assert!(!text.contains("tok-very-secret-1"));

    let out = evident()
        .args(["log", "--ledger", p, "--state", "refuted"])
        .output()
        .unwrap();
    assert_eq!(stdout(&out).lines().count(), 1);
    assert!(stdout(&out).contains("t-b"));

    let out = evident()
        .args(["log", "--ledger", p, "--task", "t-a", "--json"])
        .output()
        .unwrap();
    let v: Value = serde_json::from_str(&stdout(&out)).unwrap();
    let ids: Vec<u64> = v
        .as_array()
        .unwrap()
        .iter()
        .map(|r| r["id"].as_u64().unwrap())
        .collect();
    assert_eq!(ids, vec![1, 3]);
    assert_eq!(v[0]["hash"], json!(recs[0].hash));

    let out = evident()
        .args(["log", "--ledger", p, "--since", "2999-01-01", "--json"])
        .output()
        .unwrap();
    assert_eq!(
        serde_json::from_str::<Value>(&stdout(&out)).unwrap(),
        json!([])
    );
    let out = evident()
        .args([
            "log",
            "--ledger",
            p,
            "--since",
            "1h",
            "--until",
            "2999-01-01T00:00:00Z",
            "--json",
        ])
        .output()
        .unwrap();
    assert_eq!(
        serde_json::from_str::<Value>(&stdout(&out))
            .unwrap()
            .as_array()
            .unwrap()
            .len(),
        3
    );
    let out = evident()
        .args(["log", "--ledger", p, "--limit", "1", "--json"])
        .output()
        .unwrap();
    assert_eq!(
        serde_json::from_str::<Value>(&stdout(&out)).unwrap()[0]["id"],
        json!(3)
    );

    let out = evident()
        .args(["log", "--ledger", p, "--since", "yesterday"])
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(2));
    assert!(stderr(&out).contains("--since"), "{}", stderr(&out));
}

#[test]
fn log_uses_evident_ledger_then_the_default_file() {
    let dir = tempfile::tempdir().unwrap();
    std::fs::create_dir_all(dir.path().join(".evident")).unwrap();
    let path = dir.path().join(".evident/ledger.db");
    evident_ledger::open(Some(path.to_str().unwrap()))
        .unwrap()
        .append(entry("t-default", "verified", "x"))
        .unwrap();
    let out = evident()
        .current_dir(dir.path())
        .args(["log"])
        .output()
        .unwrap();
    assert!(stdout(&out).contains("t-default"), "{}", stderr(&out));

    let other = tempfile::tempdir().unwrap();
    let (p2, _) = three(other.path());
    let out = evident()
        .current_dir(dir.path())
        .env("EVIDENT_LEDGER", &p2)
        .args(["log"])
        .output()
        .unwrap();
    assert_eq!(stdout(&out).lines().count(), 3);

    // No ledger yet: nothing to list, nothing created.
    let empty = tempfile::tempdir().unwrap();
    let out = evident()
        .current_dir(empty.path())
        .args(["log"])
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(0));
    assert!(stderr(&out).contains("no records"), "{}", stderr(&out));
    assert!(!empty.path().join(".evident").exists());
}

#[test]
fn show_prints_one_record() {
    let dir = tempfile::tempdir().unwrap();
    let (path, recs) = three(dir.path());
    let p = path.to_str().unwrap();
    let out = evident()
        .args(["show", "2", "--ledger", p])
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    let text = stdout(&out);
    assert!(
        text.contains("#2") && text.contains("refuted") && text.contains("MARKER-TWO"),
        "{text}"
    );
    assert!(!text.contains("tok-very-secret-1"), "{text}");

    let out = evident()
        .args(["show", &recs[2].hash[..8], "--json", "--ledger", p])
        .output()
        .unwrap();
    let v: Value = serde_json::from_str(&stdout(&out)).unwrap();
    assert_eq!(v, recs[2].to_json());

    let out = evident()
        .args(["show", "99", "--ledger", p])
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(2));
    assert!(stderr(&out).contains("no record 99"), "{}", stderr(&out));
}

#[test]
fn ledger_verify_and_export_round_trip() {
    let dir = tempfile::tempdir().unwrap();
    let (path, recs) = three(dir.path());
    let p = path.to_str().unwrap();
    let out = evident()
        .args(["ledger", "verify", "--ledger", p])
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    assert!(stdout(&out).contains("OK, 3 records"), "{}", stdout(&out));
    assert!(stdout(&out).contains(&recs[2].hash));

    let out = evident()
        .args([
            "ledger",
            "verify",
            "--deep",
            "--json",
            "--ledger",
            p,
            "--expect",
            &recs[1].hash,
        ])
        .output()
        .unwrap();
    let v: Value = serde_json::from_str(&stdout(&out)).unwrap();
    assert_eq!(v["ok"], json!(true));
    assert_eq!(v["head"]["id"], json!(3));

    let export = dir.path().join("ledger.jsonl");
    let out = evident()
        .args([
            "ledger",
            "export",
            "--ledger",
            p,
            "--out",
            export.to_str().unwrap(),
        ])
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    let text = std::fs::read_to_string(&export).unwrap();
    let lines: Vec<Value> = text
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect();
    assert_eq!(lines.len(), 3);
    assert_eq!(lines[1], recs[1].to_json());
    // The same to standard output.
    let out = evident()
        .args(["ledger", "export", "--ledger", p])
        .output()
        .unwrap();
    assert_eq!(stdout(&out), text);

    // The export verifies offline ...
    let e = export.to_str().unwrap();
    let out = evident()
        .args(["ledger", "verify", "--export", e])
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(0), "{}", stdout(&out));
    // ... an edited export does not ...
    let edited = dir.path().join("edited.jsonl");
    std::fs::write(&edited, text.replacen("MARKER-TWO", "MARKER-TWX", 1)).unwrap();
    let out = evident()
        .args(["ledger", "verify", "--export", edited.to_str().unwrap()])
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(1));
    assert!(
        stdout(&out).contains("BROKEN at record 2"),
        "{}",
        stdout(&out)
    );
    // ... and a truncated one is caught by the hash noted earlier.
    let cut = dir.path().join("cut.jsonl");
    let first_two: String = text.lines().take(2).map(|l| format!("{l}\n")).collect();
    std::fs::write(&cut, first_two).unwrap();
    let out = evident()
        .args([
            "ledger",
            "verify",
            "--export",
            cut.to_str().unwrap(),
            "--expect",
            &recs[2].hash[..16],
        ])
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(1), "{}", stdout(&out));
    assert!(stdout(&out).contains("truncated"), "{}", stdout(&out));
}

/// One byte of a stored record changed in the SQLite file itself.
#[test]
fn ledger_verify_names_the_edited_record_and_exits_1() {
    let dir = tempfile::tempdir().unwrap();
    let (path, _) = three(dir.path());
    assert!(
        !dir.path().join("ledger.db-wal").exists(),
        "closed cleanly, WAL checkpointed"
    );
    let mut bytes = std::fs::read(&path).unwrap();
    let needle = b"MARKER-TWO";
    let at = bytes
        .windows(needle.len())
        .position(|w| w == needle)
        .expect("the record is in the file");
    bytes[at + needle.len() - 1] = b'X';
    std::fs::write(&path, bytes).unwrap();
    let out = evident()
        .args(["ledger", "verify", "--ledger", path.to_str().unwrap()])
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(1), "{}", stdout(&out));
    assert!(
        stdout(&out).contains("BROKEN at record 2"),
        "{}",
        stdout(&out)
    );
    assert!(
        stdout(&out).contains("1 records verified before it"),
        "{}",
        stdout(&out)
    );
}

#[test]
fn missing_ledgers_and_bad_locations_exit_2_without_passwords() {
    let dir = tempfile::tempdir().unwrap();
    let missing = dir.path().join("none.db");
    let out = evident()
        .args(["ledger", "verify", "--ledger", missing.to_str().unwrap()])
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(2));
    assert!(stderr(&out).contains("none.db"), "{}", stderr(&out));
    assert!(!missing.exists());

    let out = evident()
        .args([
            "log",
            "--ledger",
            "postgres://evident:pw-do-not-print@127.0.0.1:1/db",
        ])
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(2));
    let all = format!("{}{}", stdout(&out), stderr(&out));
    assert!(!all.contains("pw-do-not-print"), "{all}");
    assert!(all.contains("127.0.0.1"), "{all}");

    let out = evident()
        .env(
            "EVIDENT_LEDGER",
            "postgres://evident:pw-do-not-print@127.0.0.1:1/db",
        )
        .args(["ledger", "export"])
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(2));
    let all = format!("{}{}", stdout(&out), stderr(&out));
    assert!(!all.contains("pw-do-not-print"), "{all}");
}

#[test]
fn postgres_ledger_through_the_cli() {
    let Ok(url) = std::env::var("EVIDENT_TEST_POSTGRES_URL") else {
        println!("skipped: EVIDENT_TEST_POSTGRES_URL is not set (CI sets it; see .ci/run)");
        return;
    };
    let sep = if url.contains('?') { '&' } else { '?' };
    let location = format!("{url}{sep}schema=evident_cli_test_{}", std::process::id());
    struct DropSchema(String);
    impl Drop for DropSchema {
        fn drop(&mut self) {
            if let Ok(l) = evident_ledger::open(Some(&self.0)) {
                let _ = l.destroy();
            }
        }
    }
    let _cleanup = DropSchema(location.clone());
    let ledger = evident_ledger::open(Some(&location)).unwrap();
    let r = ledger.append(entry("pg-task", "verified", "pg")).unwrap();
    let out = evident()
        .args(["ledger", "verify", "--ledger", &location])
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    assert!(stdout(&out).contains(&r.hash));
    let out = evident()
        .env("EVIDENT_LEDGER", &location)
        .args(["log", "--json"])
        .output()
        .unwrap();
    let v: Value = serde_json::from_str(&stdout(&out)).unwrap();
    assert_eq!(v[0]["task_id"], json!("pg-task"));
}
