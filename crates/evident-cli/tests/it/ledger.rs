//! `evident key`, `evident log`, `evident show` and `evident ledger` against real
//! ledgers (a SQLite file; PostgreSQL when `EVIDENT_TEST_POSTGRES_URL` is set).

use std::path::{Path, PathBuf};

use evident_ledger::NewEntry;
use evident_sign::TrustList;
use serde_json::{Value, json};

use crate::support::{evident_without_ledger, stderr, stdout};

fn entry(task: &str, state: &str, reason: &str) -> NewEntry {
    NewEntry {
        kind: "verify".into(),
        task_id: Some(task.into()),
        state: state.into(),
        claim: json!({ "spec_version": "0.1", "task": { "id": task }, "mutations": [], "evidence": [] }).into(),
        contract: Some(json!({ "env": { "API_TOKEN": "tok-very-secret-1" } })),
        verdict: json!({ "state": state, "unmet": [], "reason": reason }).into(),
        origin: None,
    }
}

/// A ledger with three records: t-a verified, t-b refuted, t-a unverified.
fn three(dir: &Path) -> (PathBuf, Vec<evident_ledger::Record>) {
    let path = dir.join("ledger.db");
    let ledger = evident_ledger::open(Some(path.to_str().unwrap())).unwrap();
    let recs = [
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
    // An append hands its record back without the claim; the stored records have it.
    let recs = recs.iter().map(|r| ledger.get(r.id).unwrap()).collect();
    (path, recs)
}

#[test]
fn key_generate_writes_a_usable_pair_and_never_overwrites() {
    let dir = tempfile::tempdir().unwrap();
    let key_path = dir.path().join("gate.key");
    let out = evident_without_ledger()
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
    let key = evident_sign::Key::load(&key_path).unwrap();
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
    evident_sign::attach_signature(&mut item, &key).unwrap();
    assert_eq!(evident_sign::authenticate(&item, &trust), Ok(()));

    // A second run refuses to overwrite.
    let before = std::fs::read(&key_path).unwrap();
    let out = evident_without_ledger()
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

    let out = evident_without_ledger()
        .args(["log", "--ledger", p])
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    let text = stdout(&out);
    assert_eq!(text.lines().count(), 3, "{text}");
    assert!(text.contains(&recs[1].hash[..12]));
    assert!(!text.contains("tok-very-secret-1"));

    let out = evident_without_ledger()
        .args(["log", "--ledger", p, "--state", "refuted"])
        .output()
        .unwrap();
    assert_eq!(stdout(&out).lines().count(), 1);
    assert!(stdout(&out).contains("t-b"));

    let out = evident_without_ledger()
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

    let out = evident_without_ledger()
        .args(["log", "--ledger", p, "--since", "2999-01-01", "--json"])
        .output()
        .unwrap();
    assert_eq!(
        serde_json::from_str::<Value>(&stdout(&out)).unwrap(),
        json!([])
    );
    let out = evident_without_ledger()
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
    let out = evident_without_ledger()
        .args(["log", "--ledger", p, "--limit", "1", "--json"])
        .output()
        .unwrap();
    assert_eq!(
        serde_json::from_str::<Value>(&stdout(&out)).unwrap()[0]["id"],
        json!(3)
    );

    let out = evident_without_ledger()
        .args(["log", "--ledger", p, "--since", "yesterday"])
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(2));
    assert!(stderr(&out).contains("--since"), "{}", stderr(&out));
}

#[test]
fn log_uses_evident_ledger_then_the_default_file() {
    let state = tempfile::tempdir().unwrap();
    let dir = tempfile::tempdir().unwrap();
    // The default is the repository's own ledger in the state directory, the same from
    // any directory of the repository.
    let repo = dir.path().canonicalize().unwrap().join("repo");
    std::fs::create_dir_all(repo.join("sub")).unwrap();
    crate::support::git(&repo, &["init", "-q"]);
    let env = |k: &str| (k == "XDG_STATE_HOME").then(|| state.path().display().to_string());
    let default = evident_ledger::place::default_ledger_in(&repo, &env).unwrap();
    assert!(default.starts_with(state.path().join("evident/ledgers")));
    evident_ledger::open(Some(default.to_str().unwrap()))
        .unwrap()
        .append(entry("t-default", "verified", "x"))
        .unwrap();
    for at in [repo.clone(), repo.join("sub")] {
        let out = evident_without_ledger()
            .current_dir(&at)
            .env("XDG_STATE_HOME", state.path())
            .args(["log"])
            .output()
            .unwrap();
        assert!(stdout(&out).contains("t-default"), "{}", stderr(&out));
        assert!(stderr(&out).is_empty(), "{}", stderr(&out));
    }

    let other = tempfile::tempdir().unwrap();
    let (p2, _) = three(other.path());
    let out = evident_without_ledger()
        .current_dir(&repo)
        .env("XDG_STATE_HOME", state.path())
        .env("EVIDENT_LEDGER", &p2)
        .args(["log"])
        .output()
        .unwrap();
    assert_eq!(stdout(&out).lines().count(), 3);

    // No ledger yet: nothing to list, nothing created, in the directory or the state.
    let empty = tempfile::tempdir().unwrap();
    let out = evident_without_ledger()
        .current_dir(empty.path())
        .env("XDG_STATE_HOME", state.path())
        .args(["log"])
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(0));
    assert!(stderr(&out).contains("no records"), "{}", stderr(&out));
    assert_eq!(std::fs::read_dir(empty.path()).unwrap().count(), 0);
    assert_eq!(
        std::fs::read_dir(state.path().join("evident/ledgers"))
            .unwrap()
            .count(),
        1,
        "only the repository's"
    );

    // Neither XDG_STATE_HOME nor HOME: no default, said so (exit 2), nothing written.
    let out = evident_without_ledger()
        .current_dir(empty.path())
        .env_remove("XDG_STATE_HOME")
        .env_remove("HOME")
        .args(["verify", "-", "--now", "2026-08-27T18:04:10Z"])
        .write_stdin(
            std::fs::read(crate::support::workspace().join("examples/claim-verified.json"))
                .unwrap(),
        )
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(2), "{}", stderr(&out));
    assert!(
        stderr(&out).contains("no state directory"),
        "{}",
        stderr(&out)
    );
    assert!(stderr(&out).contains("--ledger"), "{}", stderr(&out));
    assert_eq!(std::fs::read_dir(empty.path()).unwrap().count(), 0);
}

/// A `.evident/ledger.db` of earlier versions (the old default) is named on stderr,
/// once, with how to keep using it, while the default starts its own chain outside the
/// tree; never read or forked silently.
#[test]
fn an_old_default_ledger_in_the_directory_is_named_once() {
    let state = tempfile::tempdir().unwrap();
    let dir = tempfile::tempdir().unwrap();
    std::fs::create_dir_all(dir.path().join(".evident")).unwrap();
    let old = dir.path().join(".evident/ledger.db");
    evident_ledger::open(Some(old.to_str().unwrap()))
        .unwrap()
        .append(entry("t-old", "verified", "x"))
        .unwrap();
    let run = |args: &[&str]| {
        let out = evident_without_ledger()
            .current_dir(dir.path())
            .env("XDG_STATE_HOME", state.path())
            .args(args)
            .output()
            .unwrap();
        (out.status.code(), stdout(&out), stderr(&out))
    };
    let note = "note: the default ledger is now ";
    // Reading: the note (the old chain is not read), and no ledger is created.
    let (code, out, err) = run(&["log"]);
    assert_eq!(code, Some(0), "{err}");
    assert!(!out.contains("t-old"), "{out}");
    assert_eq!(err.matches(note).count(), 1, "{err}");
    assert!(err.contains("--ledger .evident/ledger.db"), "{err}");
    assert!(
        err.contains(&state.path().join("evident/ledgers").display().to_string()),
        "{err}"
    );
    // Named, the old ledger is used as before, without the note.
    let (_, out, err) = run(&["log", "--ledger", ".evident/ledger.db"]);
    assert!(out.contains("t-old"), "{out}{err}");
    assert!(!err.contains(note), "{err}");
    // The first decision recorded at the default: the note once more, then never.
    let claim = crate::support::workspace().join("examples/claim-verified.json");
    let verify = [
        "verify",
        claim.to_str().unwrap(),
        "--now",
        "2026-08-27T18:04:10Z",
    ];
    let (code, _, err) = run(&verify);
    assert_eq!(code, Some(0), "{err}");
    assert_eq!(err.matches(note).count(), 1, "{err}");
    assert!(err.contains("recorded as #1 in "), "{err}");
    let (code, _, err) = run(&verify);
    assert_eq!(code, Some(0), "{err}");
    assert!(!err.contains(note), "{err}");
    assert!(err.contains("recorded as #2 in "), "{err}");
    // The old file is untouched: still its one record.
    let l = evident_ledger::open_existing(Some(old.to_str().unwrap())).unwrap();
    assert_eq!(l.verify().unwrap().records, 1);
}

#[test]
fn show_prints_one_record() {
    let dir = tempfile::tempdir().unwrap();
    let (path, recs) = three(dir.path());
    let p = path.to_str().unwrap();
    let out = evident_without_ledger()
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

    let out = evident_without_ledger()
        .args(["show", &recs[2].hash[..8], "--json", "--ledger", p])
        .output()
        .unwrap();
    let v: Value = serde_json::from_str(&stdout(&out)).unwrap();
    assert_eq!(v, recs[2].to_json());

    let out = evident_without_ledger()
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
    let out = evident_without_ledger()
        .args(["ledger", "verify", "--ledger", p])
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    assert!(stdout(&out).contains("OK, 3 records"), "{}", stdout(&out));
    assert!(stdout(&out).contains(&recs[2].hash));

    let out = evident_without_ledger()
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
    let out = evident_without_ledger()
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
    let out = evident_without_ledger()
        .args(["ledger", "export", "--ledger", p])
        .output()
        .unwrap();
    assert_eq!(stdout(&out), text);

    // The export verifies offline ...
    let e = export.to_str().unwrap();
    let out = evident_without_ledger()
        .args(["ledger", "verify", "--export", e])
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(0), "{}", stdout(&out));
    // ... an edited export does not ...
    let edited = dir.path().join("edited.jsonl");
    std::fs::write(&edited, text.replacen("MARKER-TWO", "MARKER-TWX", 1)).unwrap();
    let out = evident_without_ledger()
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
    let out = evident_without_ledger()
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
    let out = evident_without_ledger()
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
    let out = evident_without_ledger()
        .args(["ledger", "verify", "--ledger", missing.to_str().unwrap()])
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(2));
    assert!(stderr(&out).contains("none.db"), "{}", stderr(&out));
    assert!(!missing.exists());

    let out = evident_without_ledger()
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

    let out = evident_without_ledger()
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
#[cfg_attr(
    not(evident_services),
    ignore = "needs PostgreSQL: .ci/run sets its address and runs this (see README, Development)"
)]
fn postgres_ledger_through_the_cli() {
    let url = std::env::var("EVIDENT_TEST_POSTGRES_URL")
        .expect("EVIDENT_TEST_POSTGRES_URL is not set (.ci/run sets it)");
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
    let out = evident_without_ledger()
        .args(["ledger", "verify", "--ledger", &location])
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    assert!(stdout(&out).contains(&r.hash));
    let out = evident_without_ledger()
        .env("EVIDENT_LEDGER", &location)
        .args(["log", "--json"])
        .output()
        .unwrap();
    let v: Value = serde_json::from_str(&stdout(&out)).unwrap();
    assert_eq!(v[0]["task_id"], json!("pg-task"));
}

/// A contract root the agent controls (contract, the file it checks, claims) and an
/// owner's directory outside it (ledger, gate key, checkpoint file).
struct Setup {
    _tmp: tempfile::TempDir,
    repo: PathBuf,
    owner: PathBuf,
}

impl Setup {
    fn new() -> Setup {
        let tmp = tempfile::tempdir().unwrap();
        let repo = tmp.path().join("repo");
        let owner = tmp.path().join("owner");
        std::fs::create_dir_all(&repo).unwrap();
        std::fs::create_dir_all(&owner).unwrap();
        std::fs::write(repo.join("f.txt"), "x").unwrap();
        let contract = "[policy]\nrequires = [\"state_readback\"]\n[[check]]\nid = \"f\"\ncheck_type = \"state_readback\"\ncovers = { id = \"m1\" }\nsource = { file = { path = \"f.txt\" } }\nexpected = { exists = true }\n";
        std::fs::write(repo.join("contract.toml"), contract).unwrap();
        // The agent's own contract: nothing to check, and a policy that requires nothing.
        std::fs::write(
            repo.join("agent-contract.toml"),
            "[policy]\nrequires = []\n[[check]]\nid = \"f\"\ncheck_type = \"state_readback\"\ncovers = { id = \"m1\" }\nsource = { file = { path = \"f.txt\" } }\nexpected = { exists = true }\n",
        )
        .unwrap();
        std::fs::write(
            repo.join("claim.json"),
            r#"{"spec_version": "0.1", "task": {"id": "t-sign"}, "mutations": [{"id": "m1", "kind": "state_write", "at": "2020-01-01T00:00:00Z"}]}"#,
        )
        .unwrap();
        let out = evident_without_ledger()
            .args(["key", "generate", "--id", "evident-gate", "--out"])
            .arg(owner.join("gate.key"))
            .output()
            .unwrap();
        assert!(out.status.success(), "{}", stderr(&out));
        Setup {
            _tmp: tmp,
            repo,
            owner,
        }
    }

    fn ledger(&self) -> String {
        self.owner.join("ledger.db").to_str().unwrap().to_string()
    }

    fn checkpoint(&self) -> PathBuf {
        self.owner.join("checkpoints.jsonl")
    }

    /// The owner's gate: signed records, a checkpoint after each.
    fn gate(&self) -> std::process::Output {
        let out = evident_without_ledger()
            .current_dir(&self.owner)
            .arg("gate")
            .arg(self.repo.join("contract.toml"))
            .arg(self.repo.join("claim.json"))
            .args(["--ledger", &self.ledger(), "--key"])
            .arg(self.owner.join("gate.key"))
            .arg("--checkpoint")
            .arg(self.checkpoint())
            .output()
            .unwrap();
        assert_eq!(
            out.status.code(),
            Some(0),
            "{}{}",
            stdout(&out),
            stderr(&out)
        );
        out
    }

    fn verify(&self, extra: &[&str]) -> std::process::Output {
        evident_without_ledger()
            .args(["ledger", "verify", "--ledger", &self.ledger(), "--trust"])
            .arg(self.owner.join("gate.key.pub"))
            .args(extra)
            .output()
            .unwrap()
    }

    fn verify_checkpoint(&self) -> std::process::Output {
        let cp = self.checkpoint();
        self.verify(&["--checkpoint", cp.to_str().unwrap()])
    }
}

/// The attack of issue 11: the agent appends a well-chained "verified" record made
/// with its own contract. The chain alone cannot tell; the gate's signature can.
#[test]
fn a_record_the_gate_did_not_sign_fails_ledger_verify_trust() {
    let s = Setup::new();
    s.gate();
    s.gate();
    // Honest twin: records the gate signed verify, checkpoints met.
    let out = s.verify_checkpoint();
    assert_eq!(
        out.status.code(),
        Some(0),
        "{}{}",
        stdout(&out),
        stderr(&out)
    );
    assert!(
        stdout(&out).contains("every record signed by a trusted key, 2 checkpoints met"),
        "{}",
        stdout(&out)
    );

    // The agent, which can write the ledger, gates its own claim under its own contract.
    let out = evident_without_ledger()
        .current_dir(&s.repo)
        .arg("gate")
        .arg(s.repo.join("agent-contract.toml"))
        .arg(s.repo.join("claim.json"))
        .args(["--ledger", &s.ledger()])
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    let chain_only = evident_without_ledger()
        .args(["ledger", "verify", "--ledger", &s.ledger()])
        .output()
        .unwrap();
    assert_eq!(chain_only.status.code(), Some(0), "the chain alone says OK");

    let out = s.verify(&[]);
    assert_eq!(out.status.code(), Some(1), "{}", stdout(&out));
    let text = stdout(&out);
    assert!(text.contains("BROKEN at record 3"), "{text}");
    assert!(text.contains("not signed"), "{text}");

    // Signed with a key of its own under the gate's id: still refused.
    let agent_key = s.repo.join("agent.key");
    let out = evident_without_ledger()
        .args(["key", "generate", "--id", "evident-gate", "--out"])
        .arg(&agent_key)
        .output()
        .unwrap();
    assert!(out.status.success());
    let s2 = Setup::new();
    s2.gate();
    let out = evident_without_ledger()
        .arg("verify")
        .arg(s2.repo.join("claim.json"))
        .args(["--ledger", &s2.ledger(), "--key"])
        .arg(&agent_key)
        .output()
        .unwrap();
    assert!(
        out.status.code().is_some_and(|c| c != 2),
        "{}",
        stderr(&out)
    );
    let out = s2.verify(&[]);
    assert_eq!(out.status.code(), Some(1), "{}", stdout(&out));
    assert!(stdout(&out).contains("record 2"), "{}", stdout(&out));
    assert!(stdout(&out).contains("does not verify"), "{}", stdout(&out));

    // `--json` says the same, and a signed `verify` record of the owner's key passes.
    let out = s.verify(&["--json"]);
    let v: Value = serde_json::from_str(&stdout(&out)).unwrap();
    assert_eq!(v["ok"], json!(false));
    assert_eq!(v["broken"]["id"], json!(3));
}

/// Honest twin across the other paths: `verify --key` records and an export verify
/// under the trust list; `show --json` carries the signature.
#[test]
fn signed_records_verify_from_the_store_and_from_an_export() {
    let s = Setup::new();
    s.gate();
    let out = evident_without_ledger()
        .arg("verify")
        .arg(s.repo.join("claim.json"))
        .args(["--ledger", &s.ledger(), "--key"])
        .arg(s.owner.join("gate.key"))
        .output()
        .unwrap();
    assert!(
        stderr(&out).contains("signed by evident-gate"),
        "{}",
        stderr(&out)
    );
    let out = s.verify(&[]);
    assert_eq!(out.status.code(), Some(0), "{}", stdout(&out));
    let export = s.owner.join("export.jsonl");
    let out = evident_without_ledger()
        .args(["ledger", "export", "--ledger", &s.ledger(), "--out"])
        .arg(&export)
        .output()
        .unwrap();
    assert!(out.status.success());
    let out = evident_without_ledger()
        .args(["ledger", "verify", "--export"])
        .arg(&export)
        .arg("--trust")
        .arg(s.owner.join("gate.key.pub"))
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(0), "{}", stdout(&out));
    let out = evident_without_ledger()
        .args(["show", "2", "--json", "--ledger", &s.ledger()])
        .output()
        .unwrap();
    let v: Value = serde_json::from_str(&stdout(&out)).unwrap();
    assert_eq!(v["signature"]["verifier"], json!("evident-gate"));
    // An export whose signature was removed fails under the trust list.
    let text = std::fs::read_to_string(&export).unwrap();
    let mut lines: Vec<Value> = text
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect();
    lines[1].as_object_mut().unwrap().remove("signature");
    let stripped = s.owner.join("stripped.jsonl");
    std::fs::write(
        &stripped,
        lines
            .iter()
            .map(|l| evident_sign::canonical_json(l) + "\n")
            .collect::<String>(),
    )
    .unwrap();
    let out = evident_without_ledger()
        .args(["ledger", "verify", "--export"])
        .arg(&stripped)
        .arg("--trust")
        .arg(s.owner.join("gate.key.pub"))
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(1), "{}", stdout(&out));
    assert!(stdout(&out).contains("record 2"), "{}", stdout(&out));
}

fn sqlite(db: &str, sql: &str) {
    let out = std::process::Command::new("python3")
        .args([
            "-c",
            "import sqlite3,sys; c=sqlite3.connect(sys.argv[1]); c.execute(sys.argv[2]); c.commit()",
            db,
            sql,
        ])
        .output()
        .unwrap();
    assert!(out.status.success(), "{}", stderr(&out));
}

/// Copy a SQLite ledger (and its WAL files, when present) from `from` to `to`.
fn copy_db(from: &str, to: &str) {
    for ext in ["", "-wal", "-shm"] {
        let (f, t) = (format!("{from}{ext}"), format!("{to}{ext}"));
        let _ = std::fs::remove_file(&t);
        if Path::new(&f).exists() {
            std::fs::copy(&f, &t).unwrap();
        }
    }
}

/// Deleting the newest record keeps every remaining signature valid; the signed
/// checkpoint (kept outside the agent's reach) is what notices.
#[test]
fn a_truncated_tail_fails_against_the_checkpoint() {
    if std::process::Command::new("python3")
        .args(["-c", "import sqlite3"])
        .status()
        .map_or(true, |s| !s.success())
    {
        println!("skipped: python3 with sqlite3 is needed to edit the ledger");
        return;
    }
    let s = Setup::new();
    for _ in 0..3 {
        s.gate();
    }
    assert_eq!(s.verify_checkpoint().status.code(), Some(0));
    sqlite(&s.ledger(), "DELETE FROM records WHERE id = 3");
    let out = s.verify(&[]);
    assert_eq!(out.status.code(), Some(0), "signatures alone cannot tell");
    let out = s.verify_checkpoint();
    assert_eq!(out.status.code(), Some(1), "{}", stdout(&out));
    let text = stdout(&out);
    assert!(text.contains("record 3 is missing"), "{text}");
    assert!(text.contains("truncated"), "{text}");
    assert!(text.contains("held 3 records"), "{text}");
}

/// An older copy of the ledger put back (every record in it genuinely signed) fails
/// against the checkpoint; so does a forged line in the checkpoint file.
#[test]
fn a_restored_older_copy_fails_against_the_checkpoint() {
    let s = Setup::new();
    s.gate();
    let saved = s.owner.join("saved.db");
    copy_db(&s.ledger(), saved.to_str().unwrap());
    s.gate();
    s.gate();
    assert_eq!(s.verify_checkpoint().status.code(), Some(0));
    copy_db(saved.to_str().unwrap(), &s.ledger());
    let out = s.verify(&[]);
    assert_eq!(
        out.status.code(),
        Some(0),
        "the old copy is a valid signed chain"
    );
    let out = s.verify_checkpoint();
    assert_eq!(out.status.code(), Some(1), "{}", stdout(&out));
    assert!(
        stdout(&out).contains("record 2 is missing"),
        "{}",
        stdout(&out)
    );
    assert!(stdout(&out).contains("older copy"), "{}", stdout(&out));

    // Editing the checkpoint file to match the old copy breaks its signature.
    let text = std::fs::read_to_string(s.checkpoint()).unwrap();
    let first = text.lines().next().unwrap().to_string();
    let mut forged: Value = serde_json::from_str(text.lines().last().unwrap()).unwrap();
    forged["records"] = json!(1);
    std::fs::write(s.checkpoint(), format!("{first}\n{forged}\n")).unwrap();
    let out = s.verify_checkpoint();
    assert_eq!(out.status.code(), Some(2), "{}", stdout(&out));
    assert!(stderr(&out).contains(":2:"), "{}", stderr(&out));
    assert!(
        stderr(&out).contains("signature does not verify"),
        "{}",
        stderr(&out)
    );
    // Keeping only the first line (a rolled-back checkpoint file) passes: the file
    // must be kept where the agent cannot write (docs/ledger.md).
    std::fs::write(s.checkpoint(), format!("{first}\n")).unwrap();
    assert_eq!(s.verify_checkpoint().status.code(), Some(0));
}

/// The gate warns when its ledger (here `.evident/ledger.db`, the default of earlier
/// versions, named from the repository) lies inside the contract root; not when it
/// lies outside (the default now: see git_witness.rs).
#[test]
fn the_gate_warns_about_a_ledger_inside_the_contract_root() {
    let s = Setup::new();
    let out = evident_without_ledger()
        .current_dir(&s.repo)
        .args(["gate", "contract.toml", "claim.json", "--json"])
        .args(["--ledger", ".evident/ledger.db"])
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    assert!(s.repo.join(".evident/ledger.db").exists());
    let err = stderr(&out);
    assert!(err.contains("warning: the ledger"), "{err}");
    assert!(err.contains("inside the contract root"), "{err}");
    let v: Value = serde_json::from_str(&stdout(&out)).unwrap();
    let warnings = v["verdict"]["warnings"].to_string();
    assert!(warnings.contains("inside the contract root"), "{warnings}");

    // A key inside the root is named too.
    let inside_key = s.repo.join("gate.key");
    std::fs::copy(s.owner.join("gate.key"), &inside_key).unwrap();
    let out = evident_without_ledger()
        .current_dir(&s.owner)
        .arg("gate")
        .arg(s.repo.join("contract.toml"))
        .arg(s.repo.join("claim.json"))
        .args(["--ledger", &s.ledger(), "--key"])
        .arg(&inside_key)
        .output()
        .unwrap();
    assert!(stderr(&out).contains("signing key"), "{}", stderr(&out));

    // Twin: ledger, key and checkpoint outside the root: no placement warning.
    let out = s.gate();
    assert!(!stderr(&out).contains("warning:"), "{}", stderr(&out));
}
