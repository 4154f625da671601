//! The ledger against real stores: a SQLite file and the PostgreSQL server named by
//! `EVIDENT_TEST_POSTGRES_URL` (`#[ignore]`d unless built with
//! `--cfg evident_services`, as `.ci/run` does). Several tests run real processes: this test binary re-runs itself as a worker
//! (`worker_appends`), selected by environment variables.

use std::io::{BufRead as _, BufReader, Write as _};
use std::path::Path;
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use evident_ledger::{ErrorKind, Filter, NewEntry, open, open_existing};
use evident_sign::{Key, TrustList};
use serde_json::json;

const WORKER_LOCATION: &str = "EVIDENT_LEDGER_TEST_WORKER_LOCATION";
const WORKER_COUNT: &str = "EVIDENT_LEDGER_TEST_WORKER_COUNT";
const WORKER_TAG: &str = "EVIDENT_LEDGER_TEST_WORKER_TAG";

fn entry(task: &str, state: &str) -> NewEntry {
    NewEntry {
        kind: "verify".into(),
        task_id: Some(task.into()),
        state: state.into(),
        claim: json!({
            "spec_version": "0.1",
            "task": { "id": task },
            "mutations": [{ "id": "m1", "kind": "state_write", "target": "accounts/4471", "at": "2026-08-27T18:04:02Z" }],
            "evidence": [],
        }).into(),
        contract: Some(json!({
            "policy": { "id": "billing" },
            "check": [{ "id": "db", "source": { "postgres": { "url": "postgres://app:hunter2secret@db/billing" } } }]
        })),
        verdict: json!({ "state": state, "unmet": [], "reason": null }).into(),
        origin: None,
    }
}

/// Not a test on its own: when the worker variables are set, append COUNT records and
/// print `committed <id>` after each commit. Without them it does nothing.
#[test]
fn worker_appends() {
    let Ok(location) = std::env::var(WORKER_LOCATION) else {
        return;
    };
    let count: usize = std::env::var(WORKER_COUNT)
        .ok()
        .and_then(|c| c.parse().ok())
        .unwrap_or(usize::MAX);
    let tag = std::env::var(WORKER_TAG).unwrap_or_default();
    let ledger = open(Some(&location)).expect("worker opens the ledger");
    let mut out = std::io::stdout().lock();
    for i in 0..count {
        let r = ledger
            .append(entry(&format!("{tag}-{i}"), "verified"))
            .expect("worker appends");
        writeln!(out, "committed {}", r.id).unwrap();
        out.flush().unwrap();
    }
}

fn worker(location: &str, count: Option<usize>, tag: &str) -> Command {
    let mut cmd = Command::new(std::env::current_exe().unwrap());
    cmd.args([
        "--exact",
        "worker_appends",
        "--nocapture",
        "--test-threads=1",
    ])
    .env(WORKER_LOCATION, location)
    .env(WORKER_TAG, tag)
    .stdout(Stdio::piped())
    .stderr(Stdio::piped());
    if let Some(c) = count {
        cmd.env(WORKER_COUNT, c.to_string());
    }
    cmd
}

fn committed_ids(stdout: &str) -> Vec<u64> {
    stdout.lines().filter_map(committed_id).collect()
}

/// libtest may print `test worker_appends ... ` on the same line before the first one.
fn committed_id(line: &str) -> Option<u64> {
    let at = line.find("committed ")?;
    line[at + "committed ".len()..].trim().parse().ok()
}

/// 8 processes × 200 appends at once → one chain of 1,600 records that verifies.
fn eight_processes(location: &str) {
    let started = Instant::now();
    let children: Vec<_> = (0..8)
        .map(|p| {
            worker(location, Some(200), &format!("p{p}"))
                .spawn()
                .unwrap()
        })
        .collect();
    let mut all_ids = Vec::new();
    for child in children {
        let out = child.wait_with_output().unwrap();
        let stdout = String::from_utf8_lossy(&out.stdout);
        assert!(
            out.status.success(),
            "worker failed: {}\n{}",
            stdout,
            String::from_utf8_lossy(&out.stderr)
        );
        let ids = committed_ids(&stdout);
        assert_eq!(ids.len(), 200, "a worker committed {} records", ids.len());
        all_ids.extend(ids);
    }
    let elapsed = started.elapsed();
    all_ids.sort_unstable();
    assert_eq!(
        all_ids,
        (1..=1600).collect::<Vec<u64>>(),
        "ids are 1..=1600, each once"
    );
    let ledger = open_existing(Some(location)).unwrap();
    let report = ledger.verify().unwrap();
    assert_eq!(report.broken, None);
    assert_eq!(report.records, 1600);
    // Every worker's records are in the one chain.
    for p in 0..8 {
        let n = ledger
            .list(&Filter::default())
            .unwrap()
            .iter()
            .filter(|r| {
                r.task_id
                    .as_deref()
                    .is_some_and(|t| t.starts_with(&format!("p{p}-")))
            })
            .count();
        assert_eq!(n, 200, "worker p{p}");
    }
    println!(
        "8 processes x 200 appends on {}: {:.2?} ({:.0} appends/s under contention)",
        ledger.location(),
        elapsed,
        1600.0 / elapsed.as_secs_f64()
    );
}

#[test]
fn sqlite_eight_processes_build_one_chain() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("ledger.db");
    eight_processes(path.to_str().unwrap());
}

/// A unique PostgreSQL schema for one test, dropped afterwards (also on failure).
struct PgSchema {
    location: String,
    url: String,
    schema: String,
}

impl PgSchema {
    fn new(name: &str) -> Option<PgSchema> {
        // Only ignored tests (cfg evident_services) get here: unset is a failure.
        let url = std::env::var("EVIDENT_TEST_POSTGRES_URL")
            .expect("EVIDENT_TEST_POSTGRES_URL is not set (.ci/run sets it)");
        let nanos = std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .map(|d| d.subsec_nanos())
            .unwrap_or(0);
        let schema = format!("evident_test_{name}_{}_{nanos}", std::process::id());
        let sep = if url.contains('?') { '&' } else { '?' };
        Some(PgSchema {
            location: format!("{url}{sep}schema={schema}"),
            url,
            schema,
        })
    }
}

impl Drop for PgSchema {
    fn drop(&mut self) {
        if let Ok(l) = open(Some(&self.location)) {
            let _ = l.destroy();
        }
    }
}

#[test]
#[cfg_attr(
    not(evident_services),
    ignore = "needs PostgreSQL: .ci/run sets its address and runs this (see README, Development)"
)]
fn postgres_eight_processes_build_one_chain() {
    let Some(pg) = PgSchema::new("procs") else {
        return;
    };
    eight_processes(&pg.location);
}

#[test]
#[cfg_attr(
    not(evident_services),
    ignore = "needs PostgreSQL: .ci/run sets its address and runs this (see README, Development)"
)]
fn postgres_round_trip_and_tamper() {
    let Some(pg) = PgSchema::new("rt") else {
        return;
    };
    // Reading a schema that holds no ledger says so and creates nothing.
    let err = open_existing(Some(&pg.location)).unwrap_err();
    assert_eq!(err.kind, ErrorKind::Missing, "{err}");
    round_trip(&pg.location);
}

#[test]
fn sqlite_round_trip() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("sub/dir/ledger.db");
    // Reading a ledger that does not exist says so and creates nothing.
    let err = open_existing(Some(path.to_str().unwrap())).unwrap_err();
    assert_eq!(err.kind, ErrorKind::Missing);
    assert!(!path.exists());
    round_trip(path.to_str().unwrap());
}

fn round_trip(location: &str) {
    let ledger = open(Some(location)).unwrap();
    assert_eq!(ledger.verify().unwrap().records, 0);
    assert_eq!(ledger.head().unwrap(), None);
    let a = ledger.append(entry("t-a", "verified")).unwrap();
    let b = ledger.append(entry("t-b", "refuted")).unwrap();
    let c = ledger.append(entry("t-a", "unverified")).unwrap();
    assert_eq!((a.id, b.id, c.id), (1, 2, 3));
    assert_eq!(a.prev_hash, evident_ledger::GENESIS);
    assert_eq!(b.prev_hash, a.hash);
    assert_eq!(c.prev_hash, b.hash);
    assert_eq!(ledger.head().unwrap(), Some((3, c.hash.clone())));

    // No secret in what is stored.
    let got = ledger.get(1).unwrap();
    // An append hands back its record without the claim (a large claim is not held
    // again as a value); reading it back gives the claim as stored.
    assert_eq!(a.claim, serde_json::Value::Null);
    assert_eq!(a.verdict, serde_json::Value::Null);
    assert_eq!(got.claim["task"]["id"], "t-a");
    assert_eq!(got.verdict["state"], "verified");
    assert_eq!(
        evident_ledger::Record {
            claim: got.claim.clone(),
            verdict: got.verdict.clone(),
            ..a
        },
        got
    );
    assert!(!got.to_json().to_string().contains("hunter2secret"));
    assert!(got.claim_digest.starts_with("sha256:"));

    // Lookups.
    assert_eq!(ledger.find(&b.hash[..10]).unwrap().id, 2);
    assert_eq!(ledger.find("#3").unwrap().id, 3);
    assert_eq!(ledger.get(99).unwrap_err().kind, ErrorKind::NotFound);
    let by_task = ledger
        .list(&Filter {
            task_id: Some("t-a".into()),
            ..Filter::default()
        })
        .unwrap();
    assert_eq!(by_task.iter().map(|r| r.id).collect::<Vec<_>>(), vec![1, 3]);
    let refuted = ledger
        .list(&Filter {
            state: Some("refuted".into()),
            ..Filter::default()
        })
        .unwrap();
    assert_eq!(refuted.len(), 1);
    let none = ledger
        .list(&Filter {
            since: Some("2999-01-01T00:00:00.000000Z".into()),
            ..Filter::default()
        })
        .unwrap();
    assert!(none.is_empty());
    let newest = ledger
        .list(&Filter {
            limit: Some(2),
            newest_first: true,
            ..Filter::default()
        })
        .unwrap();
    assert_eq!(newest.iter().map(|r| r.id).collect::<Vec<_>>(), vec![3, 2]);

    // Summaries (no documents) agree with the full records.
    let full = ledger.list(&Filter::default()).unwrap();
    let sums = ledger.list_summaries(&Filter::default()).unwrap();
    assert_eq!(sums.len(), 3);
    for (s, r) in sums.iter().zip(&full) {
        let mut want = r.to_json();
        let m = want.as_object_mut().unwrap();
        for k in ["claim", "contract", "v"] {
            m.shift_remove(k);
        }
        assert_eq!(
            evident_sign::canonical_json(&s.to_json()),
            evident_sign::canonical_json(&want)
        );
    }
    let newest = ledger
        .list_summaries(&Filter {
            state: Some("refuted".into()),
            limit: Some(5),
            newest_first: true,
            ..Filter::default()
        })
        .unwrap();
    assert_eq!(newest.iter().map(|s| s.id).collect::<Vec<_>>(), vec![2]);

    // Export, then check the export offline.
    let mut buf = Vec::new();
    assert_eq!(ledger.export(&mut buf).unwrap(), 3);
    let report = evident_ledger::verify_export(BufReader::new(buf.as_slice())).unwrap();
    assert_eq!(report.broken, None);
    assert_eq!(report.records, 3);
    let edited = String::from_utf8(buf)
        .unwrap()
        .replacen("refuted", "verified", 1);
    let report = evident_ledger::verify_export(BufReader::new(edited.as_bytes())).unwrap();
    assert_eq!(report.broken.map(|b| b.id), Some(2));
    let r = ledger.verify().unwrap();
    assert_eq!((r.records, r.broken), (3, None));
}

/// Edit the store behind the ledger's back with plain SQL.
fn sql(path: &Path, statements: &[&str]) {
    use sqlx::Connection as _;
    let rt = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .unwrap();
    rt.block_on(async {
        let opts = sqlx::sqlite::SqliteConnectOptions::new().filename(path);
        let mut conn = sqlx::SqliteConnection::connect_with(&opts).await.unwrap();
        for s in statements {
            sqlx::query(sqlx::AssertSqlSafe(s.to_string()))
                .execute(&mut conn)
                .await
                .unwrap();
        }
        conn.close().await.unwrap();
    });
}

fn five_records(dir: &Path) -> std::path::PathBuf {
    let path = dir.join("ledger.db");
    let ledger = open(Some(path.to_str().unwrap())).unwrap();
    for i in 0..5 {
        ledger.append(entry(&format!("t{i}"), "verified")).unwrap();
    }
    assert_eq!(ledger.verify().unwrap().broken, None);
    path
}

fn first_break(path: &Path) -> (u64, String) {
    let ledger = open_existing(Some(path.to_str().unwrap())).unwrap();
    let b = ledger
        .verify()
        .unwrap()
        .broken
        .expect("the chain is broken");
    (b.id, b.reason)
}

#[test]
fn verify_catches_an_edited_record() {
    let dir = tempfile::tempdir().unwrap();
    let path = five_records(dir.path());
    // One byte of the verdict changed.
    sql(
        &path,
        &[
            "UPDATE records SET body = replace(body, '\"state\":\"verified\",\"unmet\"', '\"state\":\"verifiee\",\"unmet\"') WHERE id = 3",
        ],
    );
    let (id, why) = first_break(&path);
    assert_eq!(id, 3, "{why}");
    assert!(why.contains("edited"), "{why}");
}

#[test]
fn verify_catches_an_edited_and_rehashed_record() {
    let dir = tempfile::tempdir().unwrap();
    let path = five_records(dir.path());
    let ledger = open(Some(path.to_str().unwrap())).unwrap();
    let r3 = ledger.get(3).unwrap();
    drop(ledger);
    // Rewrite record 3 consistently (valid hash) — record 4 no longer follows it.
    let mut v = r3.to_json();
    v.as_object_mut().unwrap().shift_remove("hash");
    v["verdict"]["state"] = json!("refuted");
    let body = evident_sign::canonical_json(&v);
    let hash = evident_ledger::record::hash_body(&body);
    let stmt = format!(
        "UPDATE records SET body = '{}', hash = '{hash}' WHERE id = 3",
        body.replace('\'', "''")
    );
    sql(&path, &[&stmt]);
    let (id, why) = first_break(&path);
    assert_eq!(id, 4, "{why}");
    assert!(why.contains("does not follow"), "{why}");
}

#[test]
fn verify_catches_a_deleted_record() {
    let dir = tempfile::tempdir().unwrap();
    let path = five_records(dir.path());
    sql(&path, &["DELETE FROM records WHERE id = 2"]);
    let (id, why) = first_break(&path);
    assert_eq!(id, 2, "{why}");
    assert!(why.contains("missing"), "{why}");
}

#[test]
fn verify_catches_a_deleted_and_renumbered_record() {
    let dir = tempfile::tempdir().unwrap();
    let path = five_records(dir.path());
    // Delete record 2 and shift the rest down so the ids have no gap.
    sql(
        &path,
        &[
            "DELETE FROM records WHERE id = 2",
            "UPDATE records SET id = id - 1 WHERE id > 2",
        ],
    );
    let (id, why) = first_break(&path);
    assert_eq!(id, 2, "{why}");
}

#[test]
fn verify_catches_reordered_records() {
    let dir = tempfile::tempdir().unwrap();
    let path = five_records(dir.path());
    // Swap records 2 and 4 (ids kept in place, contents moved).
    sql(
        &path,
        &[
            "UPDATE records SET id = -2 WHERE id = 2",
            "UPDATE records SET id = 2 WHERE id = 4",
            "UPDATE records SET id = 4 WHERE id = -2",
        ],
    );
    let (id, why) = first_break(&path);
    assert_eq!(id, 2, "{why}");
    assert!(why.contains("reordered"), "{why}");
}

#[test]
fn verify_catches_an_edited_column() {
    let dir = tempfile::tempdir().unwrap();
    let path = five_records(dir.path());
    sql(
        &path,
        &["UPDATE records SET state = 'refuted' WHERE id = 5"],
    );
    let (id, _) = first_break(&path);
    assert_eq!(id, 5);
}

/// A process killed with SIGKILL while appending leaves a ledger that verifies and
/// holds every record it reported committed.
#[test]
fn sigkill_mid_append_loses_nothing_committed() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("ledger.db");
    let location = path.to_str().unwrap().to_string();
    let mut reported: Vec<u64> = Vec::new();
    for round in 0..4 {
        let mut child = worker(&location, None, &format!("k{round}"))
            .spawn()
            .unwrap();
        let stdout = child.stdout.take().unwrap();
        let (tx, rx) = std::sync::mpsc::channel();
        let reader = std::thread::spawn(move || {
            for line in BufReader::new(stdout).lines().map_while(Result::ok) {
                if let Some(id) = committed_id(&line) {
                    let _ = tx.send(id);
                }
            }
        });
        // Wait until it is appending in a loop, then kill it at a varying moment.
        let first = rx
            .recv_timeout(Duration::from_secs(30))
            .expect("worker appends");
        reported.push(first);
        std::thread::sleep(Duration::from_millis(30 + 37 * round));
        child.kill().unwrap(); // SIGKILL on Unix
        child.wait().unwrap();
        reader.join().unwrap();
        reported.extend(rx.try_iter());
        let ledger = open_existing(Some(&location)).unwrap();
        let report = ledger.verify().unwrap();
        assert_eq!(report.broken, None, "round {round}");
        let head = report.head.map(|(id, _)| id).unwrap_or(0);
        let max_reported = reported.iter().copied().max().unwrap_or(0);
        assert!(
            head >= max_reported,
            "round {round}: the worker reported record {max_reported} committed, the ledger ends at {head}"
        );
        // The ledger is still writable after the crash.
        let r = ledger.append(entry("after-kill", "verified")).unwrap();
        assert_eq!(r.id, head + 1);
        reported.push(r.id);
    }
    assert!(
        reported.len() >= 8,
        "the workers appended before being killed"
    );
}

#[test]
fn forged_evidence_fails_and_signed_evidence_passes() {
    let key = Key::generate("evident-gate");
    let trust = TrustList::from_json(&key.to_public_json()).unwrap();
    let mut item = json!({
        "check_type": "test_run", "target": "cargo test",
        "expected": { "exit_code": 0 }, "observed_value": { "exit_code": 0 },
        "at": "2026-08-27T18:04:09Z", "covers": ["m1"],
        "verifier": { "id": "evident-gate", "kind": "independent" }
    });
    // A forged item: says independent, carries no signature.
    assert!(evident_sign::authenticate(&item, &trust).is_err());
    evident_sign::attach_signature(&mut item, &key).unwrap();
    assert_eq!(evident_sign::authenticate(&item, &trust), Ok(()));
    // Signed by a key the trust list does not hold.
    let mut forged = item.clone();
    evident_sign::attach_signature(&mut forged, &Key::generate("evident-gate")).unwrap();
    assert!(evident_sign::authenticate(&forged, &trust).is_err());
}

#[test]
fn bad_locations_are_named_without_passwords() {
    let err = open(Some("postgres://u:pa55word@127.0.0.1:1/db?schema=bad-name")).unwrap_err();
    assert_eq!(err.kind, ErrorKind::Location);
    assert!(!err.to_string().contains("pa55word"), "{err}");
    // An unreachable server: the message names the ledger, never the password.
    let err = open(Some("postgres://u:pa55word@127.0.0.1:1/db")).unwrap_err();
    assert!(!err.to_string().contains("pa55word"), "{err}");
    assert!(err.to_string().contains("127.0.0.1"), "{err}");
    let err = open(Some("mysql://x/y")).unwrap_err();
    assert_eq!(err.kind, ErrorKind::Location);
}

#[test]
fn the_blocking_api_works_inside_another_runtime_and_across_threads() {
    fn send_sync<T: Send + Sync>() {}
    send_sync::<evident_ledger::Ledger>();
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("ledger.db");
    let ledger = std::sync::Arc::new(open(Some(path.to_str().unwrap())).unwrap());
    // From async code on a multi-threaded runtime (as `evident gate` calls it).
    let rt = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .unwrap();
    let l2 = ledger.clone();
    let id = rt.block_on(async move { l2.append(entry("in-runtime", "verified")).unwrap().id });
    assert_eq!(id, 1);
    // From several threads of one process at once.
    let threads: Vec<_> = (0..4)
        .map(|t| {
            let l = ledger.clone();
            std::thread::spawn(move || {
                for i in 0..25 {
                    l.append(entry(&format!("th{t}-{i}"), "verified")).unwrap();
                }
            })
        })
        .collect();
    for t in threads {
        t.join().unwrap();
    }
    let report = ledger.verify().unwrap();
    assert_eq!((report.records, report.broken), (101, None));
}

/// Kill a worker with SIGKILL at exactly one point: its record inserted, the write lock
/// (SQLite) or advisory lock (PostgreSQL) held, COMMIT not yet sent. The ledger keeps
/// every committed record, drops the uncommitted one, verifies, and the next append
/// (from another process) is not blocked by the dead one's lock.
fn kill_between_insert_and_commit(location: &str) {
    let out = worker(location, Some(3), "before").output().unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let mut child = worker(location, Some(1), "doomed")
        .env(evident_ledger::TEST_PAUSE_ENV, "60000")
        .spawn()
        .unwrap();
    let stderr = child.stderr.take().unwrap();
    let (tx, rx) = std::sync::mpsc::channel();
    let reader = std::thread::spawn(move || {
        for line in BufReader::new(stderr).lines().map_while(Result::ok) {
            if line.contains("record 4 inserted, pausing before commit") {
                let _ = tx.send(());
            }
        }
    });
    rx.recv_timeout(Duration::from_secs(60))
        .expect("the worker reached the point between INSERT and COMMIT");
    child.kill().unwrap(); // SIGKILL on Unix
    child.wait().unwrap();
    reader.join().unwrap();

    let started = Instant::now();
    let out = worker(location, Some(1), "after").output().unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert_eq!(
        committed_ids(&String::from_utf8_lossy(&out.stdout)),
        vec![4]
    );
    assert!(
        started.elapsed() < Duration::from_secs(30),
        "the dead process's lock was released"
    );
    let ledger = open_existing(Some(location)).unwrap();
    let report = ledger.verify().unwrap();
    assert_eq!((report.records, report.broken), (4, None));
    assert_eq!(ledger.get(4).unwrap().task_id.as_deref(), Some("after-0"));
    assert!(
        ledger.list(&Filter::default()).unwrap().iter().all(|r| !r
            .task_id
            .as_deref()
            .unwrap_or("")
            .starts_with("doomed")),
        "the uncommitted record is gone"
    );
}

#[test]
fn sqlite_sigkill_between_insert_and_commit() {
    let dir = tempfile::tempdir().unwrap();
    kill_between_insert_and_commit(dir.path().join("ledger.db").to_str().unwrap());
}

#[test]
#[cfg_attr(
    not(evident_services),
    ignore = "needs PostgreSQL: .ci/run sets its address and runs this (see README, Development)"
)]
fn postgres_sigkill_between_insert_and_commit() {
    let Some(pg) = PgSchema::new("kill") else {
        return;
    };
    kill_between_insert_and_commit(&pg.location);
}

/// Run statements on the test PostgreSQL server as its admin user.
fn pg_admin(url: &str, statements: &[String]) {
    use sqlx::Connection as _;
    let rt = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .unwrap();
    rt.block_on(async {
        let mut conn = sqlx::PgConnection::connect(url).await.unwrap();
        for s in statements {
            sqlx::query(sqlx::AssertSqlSafe(s.clone()))
                .execute(&mut conn)
                .await
                .unwrap();
        }
        conn.close().await.unwrap();
    });
}

/// A shared ledger is created once; machines that append need only SELECT and INSERT
/// (no CREATE privilege): opening an existing ledger runs no DDL.
#[test]
#[cfg_attr(
    not(evident_services),
    ignore = "needs PostgreSQL: .ci/run sets its address and runs this (see README, Development)"
)]
fn postgres_a_role_that_may_only_read_and_insert_can_append() {
    let Some(pg) = PgSchema::new("role") else {
        return;
    };
    let admin = open(Some(&pg.location)).unwrap();
    admin.append(entry("by-admin", "verified")).unwrap();
    let role = pg.schema.replace("evident_test_", "evident_appender_");
    struct DropRole(String, String);
    impl Drop for DropRole {
        fn drop(&mut self) {
            let r = &self.1;
            pg_admin(
                &self.0,
                &[format!("DROP OWNED BY {r}"), format!("DROP ROLE {r}")],
            );
        }
    }
    pg_admin(
        &pg.url,
        &[
            format!("CREATE ROLE {role} LOGIN"),
            format!("GRANT USAGE ON SCHEMA {} TO {role}", pg.schema),
            format!("GRANT SELECT, INSERT ON {}.records TO {role}", pg.schema),
        ],
    );
    let _drop_role = DropRole(pg.url.clone(), role.clone());
    let mut url = url::Url::parse(&pg.location).unwrap();
    url.set_username(&role).unwrap();
    let as_role = open(Some(url.as_str())).unwrap();
    let r = as_role.append(entry("by-appender", "verified")).unwrap();
    assert_eq!(r.id, 2);
    assert_eq!(as_role.verify().unwrap().broken, None);
    // The role cannot rewrite history.
    let mut denied = false;
    {
        use sqlx::Connection as _;
        let rt = tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .build()
            .unwrap();
        rt.block_on(async {
            let mut conn = sqlx::PgConnection::connect(url.as_str()).await.unwrap();
            let q = format!("UPDATE {}.records SET state = 'refuted'", pg.schema);
            denied = sqlx::query(sqlx::AssertSqlSafe(q))
                .execute(&mut conn)
                .await
                .is_err();
        });
    }
    assert!(denied, "UPDATE is not granted");
}

#[test]
fn verify_reports_a_value_that_is_not_text_as_a_broken_record() {
    let dir = tempfile::tempdir().unwrap();
    let path = five_records(dir.path());
    sql(&path, &["UPDATE records SET state = X'FF00' WHERE id = 3"]);
    let (id, why) = first_break(&path);
    assert_eq!(id, 3, "{why}");
    let dir = tempfile::tempdir().unwrap();
    let path = five_records(dir.path());
    sql(&path, &["UPDATE records SET body = X'7B22FF' WHERE id = 4"]);
    let (id, why) = first_break(&path);
    assert_eq!(id, 4, "{why}");
}

fn signed_round_trip(location: &str) {
    let gate = Key::from_seed("evident-gate", [5; 32]);
    let trust = TrustList {
        verifiers: vec![gate.trusted()],
    };
    let ledger = open(Some(location)).unwrap();
    for i in 0..3 {
        let r = ledger
            .append_signed(entry(&format!("s{i}"), "verified"), Some(&gate))
            .unwrap();
        assert_eq!(
            r.signature.as_ref().unwrap()["verifier"],
            json!("evident-gate")
        );
    }
    let opts = || evident_ledger::VerifyOptions {
        trust: Some(trust.clone()),
        ..Default::default()
    };
    let r = ledger.verify_opts(opts()).unwrap();
    assert_eq!((r.records, r.broken), (3, None));
    assert!(ledger.get(2).unwrap().signature.is_some());
    // Someone without the key appends: the chain holds, the trust check does not.
    ledger.append(entry("intruder", "verified")).unwrap();
    assert_eq!(ledger.verify().unwrap().broken, None);
    let b = ledger.verify_opts(opts()).unwrap().broken.unwrap();
    assert_eq!(b.id, 4);
    // A checkpoint of head 4 is met; one of a head the ledger no longer reaches is not.
    let head = ledger.head().unwrap().unwrap();
    let cp = evident_ledger::Expectations {
        heads: vec![(head.0, head.1.clone(), "cp".into())],
    };
    let r = ledger
        .verify_opts(evident_ledger::VerifyOptions {
            checkpoints: Some(cp),
            ..Default::default()
        })
        .unwrap();
    assert_eq!(r.broken, None);
    let cp = evident_ledger::Expectations {
        heads: vec![(9, "ab".repeat(32), "cp".into())],
    };
    let b = ledger
        .verify_opts(evident_ledger::VerifyOptions {
            checkpoints: Some(cp),
            ..Default::default()
        })
        .unwrap()
        .broken
        .unwrap();
    assert_eq!(b.id, 5);
    assert!(b.reason.contains("truncated"), "{}", b.reason);
}

#[test]
fn sqlite_signed_records() {
    let dir = tempfile::tempdir().unwrap();
    signed_round_trip(dir.path().join("l.db").to_str().unwrap());
}

#[test]
#[cfg_attr(
    not(evident_services),
    ignore = "needs PostgreSQL: .ci/run sets its address and runs this (see README, Development)"
)]
fn postgres_signed_records() {
    let Some(pg) = PgSchema::new("signed") else {
        return;
    };
    signed_round_trip(&pg.location);
}

/// A ledger created before record signatures (no `signature` column) still reads and
/// verifies; the first writer that opens it adds the column, and signs from then on.
#[test]
fn sqlite_a_ledger_from_before_signatures_gains_the_column() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("old.db");
    let p = path.to_str().unwrap();
    open(Some(p))
        .unwrap()
        .append(entry("old", "verified"))
        .unwrap();
    sql(&path, &["ALTER TABLE records DROP COLUMN signature"]);
    let reader = open_existing(Some(p)).unwrap();
    assert_eq!(reader.verify().unwrap().records, 1);
    assert_eq!(reader.get(1).unwrap().signature, None);
    drop(reader);
    let gate = Key::from_seed("evident-gate", [5; 32]);
    let writer = open(Some(p)).unwrap();
    let r = writer
        .append_signed(entry("new", "verified"), Some(&gate))
        .unwrap();
    assert_eq!(r.id, 2);
    assert!(writer.get(2).unwrap().signature.is_some());
    assert_eq!(writer.verify().unwrap().broken, None);
}

/// On PostgreSQL an append-only role cannot add the column: unsigned appends go on,
/// a signed one is refused with the statement its owner must run.
#[test]
#[cfg_attr(
    not(evident_services),
    ignore = "needs PostgreSQL: .ci/run sets its address and runs this (see README, Development)"
)]
fn postgres_an_old_table_refuses_signed_appends_from_a_role_that_cannot_alter_it() {
    let Some(pg) = PgSchema::new("oldtable") else {
        return;
    };
    let admin = open(Some(&pg.location)).unwrap();
    admin.append(entry("old", "verified")).unwrap();
    pg_admin(
        &pg.url,
        &[format!(
            "ALTER TABLE {}.records DROP COLUMN signature",
            pg.schema
        )],
    );
    drop(admin);
    let role = pg.schema.replace("evident_test_", "evident_old_");
    pg_admin(
        &pg.url,
        &[
            format!("CREATE ROLE {role} LOGIN"),
            format!("GRANT USAGE ON SCHEMA {} TO {role}", pg.schema),
            format!("GRANT SELECT, INSERT ON {}.records TO {role}", pg.schema),
        ],
    );
    struct DropRole(String, String);
    impl Drop for DropRole {
        fn drop(&mut self) {
            let r = &self.1;
            pg_admin(
                &self.0,
                &[format!("DROP OWNED BY {r}"), format!("DROP ROLE {r}")],
            );
        }
    }
    let _drop_role = DropRole(pg.url.clone(), role.clone());
    let mut url = url::Url::parse(&pg.location).unwrap();
    url.set_username(&role).unwrap();
    let gate = Key::from_seed("evident-gate", [5; 32]);
    let as_role = open(Some(url.as_str())).unwrap();
    let e = as_role
        .append_signed(entry("signed", "verified"), Some(&gate))
        .unwrap_err();
    assert!(e.message.contains("ADD COLUMN signature"), "{e}");
    assert_eq!(as_role.append(entry("plain", "verified")).unwrap().id, 2);
    assert_eq!(as_role.verify().unwrap().broken, None);
    drop(as_role);
    // The owner opens it to write: the column is added, and signed appends work.
    let owner = open(Some(&pg.location)).unwrap();
    let r = owner
        .append_signed(entry("signed", "verified"), Some(&gate))
        .unwrap();
    assert_eq!(r.id, 3);
    assert_eq!(owner.verify().unwrap().broken, None);
}

/// `origin` is part of the hashed body (an edit breaks the chain), summaries carry it,
/// a batch is one valid stretch of chain, an [`evident_ledger::Appender`] groups
/// concurrent appends into valid records, and `before_id` pages newest first.
fn origin_batches_and_paging(location: &str) {
    let ledger = open(Some(location)).unwrap();
    let mut e = entry("t-o", "verified");
    e.origin = Some(json!({"via": "http", "asked_by": "ci", "token": "hunter2secret"}));
    let first = ledger.append(e).unwrap();
    assert_eq!(
        first.origin.as_ref().unwrap()["asked_by"],
        json!("ci"),
        "{:?}",
        first.origin
    );
    let got = ledger.get(first.id).unwrap();
    assert_eq!(got.origin, first.origin);
    assert!(
        !got.to_json().to_string().contains("hunter2secret"),
        "secrets in origin are removed"
    );
    let batch: Vec<(NewEntry, Option<Key>)> = (0..5)
        .map(|i| (entry(&format!("t-b{i}"), "unverified"), None))
        .collect();
    let recs = ledger.append_batch(batch).unwrap();
    assert_eq!(
        recs.iter().map(|r| r.id).collect::<Vec<_>>(),
        (first.id + 1..=first.id + 5).collect::<Vec<_>>()
    );
    assert_eq!(recs[0].prev_hash, first.hash);
    let appender = evident_ledger::Appender::spawn(open(Some(location)).unwrap(), 64).unwrap();
    std::thread::scope(|s| {
        for t in 0..8 {
            let a = appender.clone();
            s.spawn(move || {
                for i in 0..25 {
                    let mut e = entry(&format!("t-{t}-{i}"), "verified");
                    e.origin = Some(json!({"via": "http", "asked_by": format!("w{t}")}));
                    let r = a.append(e, None).unwrap();
                    assert_eq!(r.task_id.as_deref(), Some(format!("t-{t}-{i}").as_str()));
                }
            });
        }
    });
    let report = ledger.verify_with(true).unwrap();
    assert_eq!(report.broken, None);
    assert_eq!(report.records, first.id + 5 + 200);
    let sums = ledger
        .list_summaries(&Filter {
            task_id: Some("t-o".into()),
            ..Filter::default()
        })
        .unwrap();
    assert_eq!(sums[0].origin, first.origin);
    // Paging newest first: pages of 7 cover everything once, in order.
    let mut seen = Vec::new();
    let mut before = None;
    loop {
        let page = ledger
            .list_summaries(&Filter {
                before_id: before,
                limit: Some(7),
                newest_first: true,
                ..Filter::default()
            })
            .unwrap();
        let Some(last) = page.last() else { break };
        before = Some(last.id);
        seen.extend(page.iter().map(|s| s.id));
    }
    let want: Vec<u64> = (1..=report.records).rev().collect();
    assert_eq!(seen, want);
    // Editing the origin breaks the record.
    if !location.starts_with("postgres") {
        sql(
            Path::new(location),
            &[&format!(
                "UPDATE records SET body = replace(body, '\"asked_by\":\"ci\"', '\"asked_by\":\"admin\"') WHERE id = {}",
                first.id
            )],
        );
        let b = ledger.verify().unwrap().broken.unwrap();
        assert_eq!(b.id, first.id, "{}", b.reason);
    }
}

#[test]
fn sqlite_origin_batches_and_paging() {
    let dir = tempfile::tempdir().unwrap();
    origin_batches_and_paging(dir.path().join("l.db").to_str().unwrap());
}

#[test]
#[cfg_attr(
    not(evident_services),
    ignore = "needs PostgreSQL: .ci/run sets its address and runs this (see README, Development)"
)]
fn postgres_origin_batches_and_paging() {
    let Some(pg) = PgSchema::new("origin") else {
        return;
    };
    origin_batches_and_paging(&pg.location);
}

/// A batch larger than one INSERT statement holds (64 rows) is still one valid,
/// contiguous stretch of chain, in order.
#[test]
fn sqlite_a_large_batch_spans_several_inserts() {
    let dir = tempfile::tempdir().unwrap();
    let location = dir.path().join("l.db");
    let ledger = open(Some(location.to_str().unwrap())).unwrap();
    ledger.append(entry("first", "verified")).unwrap();
    let batch: Vec<(NewEntry, Option<Key>)> = (0..150)
        .map(|i| (entry(&format!("b{i}"), "verified"), None))
        .collect();
    let recs = ledger.append_batch(batch).unwrap();
    assert_eq!(
        recs.iter().map(|r| r.id).collect::<Vec<_>>(),
        (2..=151).collect::<Vec<u64>>()
    );
    for (i, r) in recs.iter().enumerate() {
        assert_eq!(ledger.get(r.id).unwrap().task_id, Some(format!("b{i}")));
    }
    let report = ledger.verify_with(true).unwrap();
    assert_eq!((report.records, report.broken), (151, None));
}

/// `n` arrays, one inside the other.
fn nested(n: usize) -> serde_json::Value {
    let mut v = json!([]);
    for _ in 1..n {
        v = json!([v]);
    }
    v
}

/// The writer and the readers agree on how deep a record may nest: a record at the
/// limit is appended and read back by every reader (get, list, deep verify, export
/// and its check); one level deeper is refused before anything is stored, by the
/// ledger and by the group-commit writer, which still records the entry handed to
/// it beside the refused one.
#[test]
fn records_nest_as_deep_as_the_readers_read_and_no_deeper() {
    let dir = tempfile::tempdir().unwrap();
    let location = dir.path().join("ledger.db").display().to_string();
    let l = open(Some(&location)).unwrap();
    let max = evident_ledger::depth::MAX_DEPTH;
    // The body holds the claim one level down.
    let mut at_limit = entry("deep", "verified");
    at_limit.claim.set("x", &nested(max - 2));
    let r = l.append(at_limit).unwrap();
    let back = l.get(r.id).unwrap();
    assert_eq!(back.claim["x"], nested(max - 2));
    assert_eq!(l.list(&Filter::default()).unwrap().len(), 1);
    assert_eq!(l.list_summaries(&Filter::default()).unwrap().len(), 1);
    assert_eq!(l.verify_with(true).unwrap().broken, None);
    let mut export = Vec::new();
    l.export(&mut export).unwrap();
    let v = evident_ledger::verify_export(&export[..]).unwrap();
    assert_eq!((v.records, v.broken), (1, None));

    let mut too_deep = entry("deeper", "verified");
    too_deep.claim.set("x", &nested(max - 1));
    let e = l.append(too_deep.clone()).unwrap_err();
    assert_eq!(e.kind, ErrorKind::Refused, "{e}");
    assert!(e.message.contains(&max.to_string()), "{e}");
    let mut in_verdict = entry("deeper", "verified");
    in_verdict.verdict.set("x", &nested(max));
    assert_eq!(l.append(in_verdict).unwrap_err().kind, ErrorKind::Refused);

    let appender = evident_ledger::Appender::spawn(open(Some(&location)).unwrap(), 64).unwrap();
    std::thread::scope(|s| {
        let refused = s.spawn(|| appender.append(too_deep, None));
        let honest = s.spawn(|| appender.append(entry("honest", "verified"), None));
        assert_eq!(
            refused.join().unwrap().unwrap_err().kind,
            ErrorKind::Refused
        );
        assert_eq!(honest.join().unwrap().unwrap().id, 2);
    });
    assert_eq!(l.verify_with(true).unwrap().records, 2);
}
