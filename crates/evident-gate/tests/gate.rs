//! The gate against the real world: SQLite files, PostgreSQL, MariaDB and Redis on this
//! machine, an HTTP server on 127.0.0.1, real git repositories, real `cargo test` and
//! `pytest` runs. Each probe: a match (verified), a contradiction (refuted), and its
//! failure modes (unverified with a specific reason).
//!
//! PostgreSQL, MariaDB and Redis tests read `EVIDENT_TEST_POSTGRES_URL`,
//! `EVIDENT_TEST_MYSQL_URL` and `EVIDENT_TEST_REDIS_URL` (set by `.ci/run`); they are
//! `#[ignore]`d unless built with `--cfg evident_services`, as `.ci/run` does.

use evident_format::{Claim, Timestamp};
use evident_gate::{Contract, Outcome, Settings};
use evident_rules::{Code, State};
use serde_json::{Value, json};
use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::{Duration, Instant};
use tokio::io::{AsyncReadExt, AsyncWriteExt};

/// A claim with one mutation per (id, kind, target), made `ago_s` seconds ago.
fn claim(mutations: &[(&str, &str, &str)], ago_s: i64) -> Claim2 {
    let at =
        Timestamp::from_instant(time::OffsetDateTime::now_utc() - time::Duration::seconds(ago_s));
    let ms: Vec<Value> = mutations
        .iter()
        .map(|(id, kind, target)| json!({"id": id, "kind": kind, "target": target, "at": at.as_str()}))
        .collect();
    Claim2(json!({
        "spec_version": "0.1",
        "task": {"id": "t-1"},
        "claimed_outcome": "done",
        "mutations": ms,
        "evidence": []
    }))
}

struct Claim2(Value);

async fn gate_env(
    contract_toml: &str,
    claim: &Claim2,
    root: &Path,
    env: BTreeMap<String, String>,
    deadline: Duration,
) -> Outcome {
    let contract = Contract::parse(contract_toml.as_bytes(), "contract.toml")
        .unwrap_or_else(|e| panic!("contract: {e}"));
    let doc = Claim::parse(&serde_json::to_vec(&claim.0).unwrap(), "claim.json").unwrap();
    let settings = Settings {
        jobs: 16,
        deadline,
        context: evident_probes::Context {
            root: root.to_path_buf(),
            env,
            ..Default::default()
        },
        verifier_id: evident_gate::verifier_id(),
        progress: None,
        only: None,
    };
    evident_gate::run::run(&contract.contract, doc, &settings, &|_| false, &|_| None).await
}

fn base_env() -> BTreeMap<String, String> {
    std::env::vars()
        .filter(|(k, _)| {
            [
                "PATH",
                "HOME",
                "CARGO_HOME",
                "RUSTUP_HOME",
                "RUSTUP_TOOLCHAIN",
            ]
            .contains(&k.as_str())
        })
        .collect()
}

async fn gate(contract_toml: &str, claim: &Claim2, root: &Path) -> Outcome {
    gate_env(
        contract_toml,
        claim,
        root,
        base_env(),
        Duration::from_secs(120),
    )
    .await
}

/// The first run of check `id` (its observation before the commands, for a readback).
fn run_of<'a>(o: &'a Outcome, id: &str) -> &'a evident_gate::CheckRun {
    o.runs
        .iter()
        .find(|r| r.check_id == id)
        .unwrap_or_else(|| panic!("no run of check {id:?}: {:#?}", o.runs))
}

/// The finding for the gate's first check.
fn first_gate_finding(o: &Outcome) -> (Code, String) {
    let i = o.runs[0].evidence;
    let f = &o.verdict.findings[i];
    (f.code, f.detail.clone())
}

fn assert_state(o: &Outcome, state: State) {
    assert_eq!(
        o.verdict.state, state,
        "reason: {}\nfindings: {:#?}\nruns: {:#?}",
        o.verdict.reason, o.verdict.findings, o.runs
    );
}

/// Unverified, with the first gate check's finding containing `why`.
fn assert_unverified_because(o: &Outcome, why: &str) {
    assert_state(o, State::Unverified);
    let (code, detail) = first_gate_finding(o);
    assert!(
        detail.to_lowercase().contains(&why.to_lowercase()),
        "expected {why:?} in the finding, got {code}: {detail}"
    );
}

/// A service's address. Tests that need one are `#[ignore]`d unless built with
/// `--cfg evident_services` (as `.ci/run` does): unset here is a failure.
fn env_url(name: &str) -> Option<String> {
    match std::env::var(name) {
        Ok(v) if !v.is_empty() => Some(v),
        _ => panic!("{name} is not set: this test needs that service (.ci/run sets it)"),
    }
}

fn unique(prefix: &str) -> String {
    let n = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .unwrap()
        .as_nanos();
    format!("{prefix}_{}_{}", std::process::id(), n % 1_000_000_000)
}

// ---------------------------------------------------------------- SQLite

fn sqlite_db(dir: &Path) {
    // The README example's database: accounts 4471 → 94107, 4472 → 10002.
    let example = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../examples/billing/billing.db");
    std::fs::copy(example, dir.join("billing.db")).unwrap();
}

fn sqlite_contract(expected_zip: &str, path: &str, query: &str) -> String {
    format!(
        r#"
[policy]
requires = ["state_readback"]
[[check]]
id = "zip"
check_type = "state_readback"
covers = {{ target = "accounts/4471" }}
source = {{ sqlite = {{ path = "{path}", query = "{query}", params = ["4471"] }} }}
expected = {{ billing_zip = "{expected_zip}" }}
"#
    )
}

const ZIP_QUERY: &str = "SELECT billing_zip FROM accounts WHERE id = ?1";

#[tokio::test]
async fn sqlite_match_contradiction_and_failures() {
    let dir = tempfile::tempdir().unwrap();
    sqlite_db(dir.path());
    let c = claim(&[("m1", "state_write", "accounts/4471")], 5);
    let o = gate(
        &sqlite_contract("94107", "billing.db", ZIP_QUERY),
        &c,
        dir.path(),
    )
    .await;
    assert_state(&o, State::Verified);
    assert_eq!(o.runs[0].observed["billing_zip"], "94107");

    let o = gate(
        &sqlite_contract("10001", "billing.db", ZIP_QUERY),
        &c,
        dir.path(),
    )
    .await;
    assert_state(&o, State::Refuted);

    let o = gate(
        &sqlite_contract("94107", "missing.db", ZIP_QUERY),
        &c,
        dir.path(),
    )
    .await;
    assert_state(&o, State::Unverified);
    assert!(o.runs[0].error.is_some());

    let o = gate(
        &sqlite_contract("94107", "billing.db", "SELECT nope FROM nowhere"),
        &c,
        dir.path(),
    )
    .await;
    assert_state(&o, State::Unverified);
    assert!(o.runs[0].error.is_some());

    // A path that escapes the root is refused with the contract, before anything runs.
    assert_refused(
        &sqlite_contract("94107", "../billing.db", ZIP_QUERY),
        "escape",
    );
}

/// The contract is refused when read, with `why` in the message (exit 2 in the CLI):
/// what can be known wrong without touching the world never reaches a probe.
fn assert_refused(contract: &str, why: &str) -> String {
    let e = Contract::parse(contract.as_bytes(), "contract.toml")
        .err()
        .unwrap_or_else(|| panic!("the contract should be refused ({why})"))
        .to_string();
    assert!(e.contains(why), "expected {why:?} in {e}");
    e
}

// ---------------------------------------------------------------- PostgreSQL / MariaDB

fn sql_contract(kind: &str, table: &str, placeholder: &str, expected: &str) -> String {
    format!(
        r#"
[policy]
requires = ["state_readback"]
[[check]]
id = "row"
check_type = "state_readback"
covers = {{ kind = "state_write" }}
source = {{ {kind} = {{ url_env = "DB_URL", query = "SELECT zip FROM {table} WHERE id = {placeholder}", params = [4471] }} }}
expected = {expected}
"#
    )
}

async fn sql_suite(kind: &str, url: &str, placeholder: &str, exec: impl Fn(&str)) {
    let table = unique("evident_gate");
    exec(&format!(
        "CREATE TABLE {table} (id INTEGER PRIMARY KEY, zip VARCHAR(10))"
    ));
    exec(&format!("INSERT INTO {table} VALUES (4471, '94107')"));
    let dir = tempfile::tempdir().unwrap();
    let c = claim(&[("m1", "state_write", "accounts/4471")], 5);
    let env = |u: &str| {
        let mut e = base_env();
        e.insert("DB_URL".into(), u.to_string());
        e
    };
    let run = |expected: &'static str, u: String| {
        let contract = sql_contract(kind, &table, placeholder, expected);
        let root = dir.path().to_path_buf();
        let c = &c;
        let e = env(&u);
        async move { gate_env(&contract, c, &root, e, Duration::from_secs(30)).await }
    };
    assert_state(
        &run(r#"{ zip = "94107", row_count = 1 }"#, url.into()).await,
        State::Verified,
    );
    assert_state(
        &run(r#"{ zip = "10001" }"#, url.into()).await,
        State::Refuted,
    );
    // An absence goal.
    exec(&format!("DELETE FROM {table} WHERE id = 4471"));
    assert_state(
        &run(r#"{ row_count = 0 }"#, url.into()).await,
        State::Verified,
    );
    assert_state(
        &run(r#"{ row_count = 1 }"#, url.into()).await,
        State::Refuted,
    );
    // Unreachable server, bad query: unverified.
    let unreachable = url.replace(":5432", ":1").replace(":3306", ":1");
    let o = run(r#"{ row_count = 0 }"#, unreachable).await;
    assert_state(&o, State::Unverified);
    let bad = {
        let contract = format!(
            "[policy]\n[[check]]\nid = \"q\"\ncheck_type = \"state_readback\"\ncovers = {{ kind = \"state_write\" }}\nsource = {{ {kind} = {{ url_env = \"DB_URL\", query = \"SELECT no_such_column FROM {table}\" }} }}\nexpected = {{ row_count = 0 }}\n"
        );
        gate_env(&contract, &c, dir.path(), env(url), Duration::from_secs(30)).await
    };
    assert_state(&bad, State::Unverified);
    assert!(bad.runs[0].error.is_some());
    exec(&format!("DROP TABLE {table}"));
}

#[tokio::test]
#[cfg_attr(
    not(evident_services),
    ignore = "needs PostgreSQL: .ci/run sets its address and runs this (see README, Development)"
)]
async fn postgres_readback() {
    let Some(url) = env_url("EVIDENT_TEST_POSTGRES_URL") else {
        return;
    };
    let exec = |sql: &str| {
        let out = Command::new("psql")
            .args([url.as_str(), "-v", "ON_ERROR_STOP=1", "-qc", sql])
            .output()
            .unwrap();
        assert!(
            out.status.success(),
            "psql: {}",
            String::from_utf8_lossy(&out.stderr)
        );
    };
    sql_suite("postgres", &url, "$1", exec).await;
}

#[tokio::test]
#[cfg_attr(
    not(evident_services),
    ignore = "needs MariaDB: .ci/run sets its address and runs this (see README, Development)"
)]
async fn mysql_readback() {
    let Some(url) = env_url("EVIDENT_TEST_MYSQL_URL") else {
        return;
    };
    let u = url::Url::parse(&url).unwrap();
    let (host, port, user, db) = (
        u.host_str().unwrap().to_string(),
        u.port().unwrap_or(3306).to_string(),
        u.username().to_string(),
        u.path().trim_start_matches('/').to_string(),
    );
    let exec = |sql: &str| {
        let out = Command::new("mariadb")
            .args(["-h", &host, "-P", &port, "-u", &user, &db, "-e", sql])
            .output()
            .unwrap();
        assert!(
            out.status.success(),
            "mariadb: {}",
            String::from_utf8_lossy(&out.stderr)
        );
    };
    sql_suite("mysql", &url, "?", exec).await;
}

// ---------------------------------------------------------------- Redis

#[tokio::test]
#[cfg_attr(
    not(evident_services),
    ignore = "needs Redis: .ci/run sets its address and runs this (see README, Development)"
)]
async fn redis_readback() {
    let Some(url) = env_url("EVIDENT_TEST_REDIS_URL") else {
        return;
    };
    let key = unique("evident:gate");
    let u = url::Url::parse(&url).unwrap();
    let (host, port) = (
        u.host_str().unwrap().to_string(),
        u.port().unwrap_or(6379).to_string(),
    );
    let cli = |args: &[&str]| {
        let out = Command::new("redis-cli")
            .args(["-h", &host, "-p", &port])
            .args(args)
            .output()
            .unwrap();
        assert!(out.status.success());
    };
    cli(&["SET", &key, "94107"]);
    let contract = |op: &str, expected: &str| {
        format!(
            "[policy]\n[[check]]\nid = \"k\"\ncheck_type = \"state_readback\"\ncovers = {{ kind = \"state_write\" }}\nsource = {{ redis = {{ url_env = \"REDIS_URL\", op = \"{op}\", key = \"{key}\" }} }}\nexpected = {expected}\n"
        )
    };
    let dir = tempfile::tempdir().unwrap();
    let c = claim(&[("m1", "state_write", "cache/zip")], 5);
    let mut env = base_env();
    env.insert("REDIS_URL".into(), url.clone());
    let run = |op: &str, expected: &str, env: BTreeMap<String, String>| {
        let contract = contract(op, expected);
        let root = dir.path().to_path_buf();
        let c = &c;
        async move { gate_env(&contract, c, &root, env, Duration::from_secs(30)).await }
    };
    assert_state(
        &run("get", r#"{ value = "94107" }"#, env.clone()).await,
        State::Verified,
    );
    assert_state(
        &run("get", r#"{ value = "10001" }"#, env.clone()).await,
        State::Refuted,
    );
    cli(&["DEL", &key]);
    assert_state(
        &run("exists", "{ exists = false }", env.clone()).await,
        State::Verified,
    );
    let mut bad = env.clone();
    bad.insert("REDIS_URL".into(), "redis://127.0.0.1:1".into());
    assert_state(
        &run("exists", "{ exists = false }", bad).await,
        State::Unverified,
    );
}

// ---------------------------------------------------------------- HTTP

/// A tiny HTTP/1.1 server on 127.0.0.1 with the routes the tests need.
async fn http_server() -> String {
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let addr = listener.local_addr().unwrap();
    tokio::spawn(async move {
        loop {
            let Ok((mut sock, _)) = listener.accept().await else {
                return;
            };
            tokio::spawn(async move {
                let mut buf = vec![0u8; 8192];
                let mut n = 0;
                while !buf[..n].windows(4).any(|w| w == b"\r\n\r\n") {
                    match sock.read(&mut buf[n..]).await {
                        Ok(0) | Err(_) => return,
                        Ok(k) => n += k,
                    }
                }
                let req = String::from_utf8_lossy(&buf[..n]).to_string();
                let path = req.split_whitespace().nth(1).unwrap_or("/").to_string();
                let (status, extra, body): (&str, &str, Vec<u8>) = match path.as_str() {
                    "/health" => (
                        "200 OK",
                        "",
                        br#"{"status":"ok","version":"1.4.2"}"#.to_vec(),
                    ),
                    "/plain" => ("200 OK", "", b"ok".to_vec()),
                    "/down" => ("500 Internal Server Error", "", b"boom".to_vec()),
                    "/moved" => ("302 Found", "Location: /health\r\n", Vec::new()),
                    "/big" => ("200 OK", "", vec![b'x'; 2 * 1024 * 1024]),
                    "/slow" => {
                        tokio::time::sleep(Duration::from_secs(5)).await;
                        ("200 OK", "", b"late".to_vec())
                    }
                    "/fifty" => {
                        tokio::time::sleep(Duration::from_millis(50)).await;
                        ("200 OK", "", br#"{"version":"1.4.2"}"#.to_vec())
                    }
                    _ => ("404 Not Found", "", Vec::new()),
                };
                let head = format!(
                    "HTTP/1.1 {status}\r\nContent-Length: {}\r\nContent-Type: application/json\r\nConnection: close\r\n{extra}\r\n",
                    body.len()
                );
                let _ = sock.write_all(head.as_bytes()).await;
                let _ = sock.write_all(&body).await;
            });
        }
    });
    format!("http://{addr}")
}

fn http_contract(url: &str, expected: &str, extra: &str) -> String {
    format!(
        r#"
[policy]
requires = ["endpoint_health"]
[[check]]
id = "health"
check_type = "endpoint_health"
covers = {{ kind = "deploy" }}
source = {{ http = {{ url = "{url}"{extra} }} }}
expected = {expected}
"#
    )
}

#[tokio::test]
async fn endpoint_health_match_contradiction_and_failures() {
    let base = http_server().await;
    let dir = tempfile::tempdir().unwrap();
    let c = claim(&[("m1", "deploy", "api")], 5);
    let run = |path: &str, expected: &str, extra: &str| {
        let contract = http_contract(&format!("{base}{path}"), expected, extra);
        let root = dir.path().to_path_buf();
        let c = &c;
        async move { gate(&contract, c, &root).await }
    };
    let version = r#"{ status = 200, body_contains = "\"version\":\"1.4.2\"" }"#;
    assert_state(&run("/health", version, "").await, State::Verified);
    let o = run(
        "/health",
        r#"{ status = 200, body_contains = "1.4.3" }"#,
        "",
    )
    .await;
    assert_state(&o, State::Refuted);
    assert_eq!(o.runs[0].observed["body_contains"], false);
    // A 5xx is the server failing to answer: unverified with the reason, not refuted.
    let o = run("/down", version, "").await;
    assert_unverified_because(&o, "HTTP 500 (a server error)");
    assert_eq!(
        o.runs[0].observed["status"], 500,
        "the status stays visible"
    );
    // An owner who expects the error status gets an ordinary comparison.
    assert_state(
        &run("/down", r#"{ status = 500, body_contains = "boom" }"#, "").await,
        State::Verified,
    );
    // A status-only expectation cannot satisfy (and a 500 is a server error).
    assert_unverified_because(
        &run("/plain", "{ status = 200 }", "").await,
        "expects only a status",
    );
    assert_unverified_because(&run("/down", "{ status = 200 }", "").await, "server error");
    // A 404 is an answer: it contradicts.
    assert_state(&run("/nowhere", version, "").await, State::Refuted);
    // JSON pointers.
    let o = run(
        "/health",
        r#"{ status = 200, json = { v = "1.4.2" } }"#,
        r#", pointers = { v = "/version" }"#,
    )
    .await;
    assert_state(&o, State::Verified);
    // Failure modes: unverified, with a specific reason.
    assert_unverified_because(&run("/moved", version, "").await, "redirect");
    assert_unverified_because(&run("/big", version, "").await, "limit");
    let t = Instant::now();
    assert_unverified_because(
        &run("/slow", version, ", timeout_s = 0.5").await,
        "timed out",
    );
    assert!(
        t.elapsed() < Duration::from_secs(3),
        "timeout not honoured: {:?}",
        t.elapsed()
    );
    let refused = http_contract("http://127.0.0.1:1/health", version, "");
    assert_unverified_because(&gate(&refused, &c, dir.path()).await, "refused");
}

/// The issue's figure: 100 endpoint checks against a server that answers after 50 ms
/// finish well under a second, because they run concurrently.
#[tokio::test]
async fn a_hundred_slow_endpoint_checks_run_concurrently() {
    let base = http_server().await;
    let dir = tempfile::tempdir().unwrap();
    let mut contract = String::from("[policy]\nrequires = [\"endpoint_health\"]\n");
    for i in 0..100 {
        contract.push_str(&format!(
            "[[check]]\nid = \"h{i}\"\ncheck_type = \"endpoint_health\"\ncovers = {{ kind = \"deploy\" }}\nsource = {{ http = {{ url = \"{base}/fifty\" }} }}\nexpected = {{ status = 200, body_contains = \"1.4.2\" }}\n"
        ));
    }
    let c = claim(&[("m1", "deploy", "api")], 5);
    let parsed = Contract::parse(contract.as_bytes(), "c.toml").unwrap();
    let doc = Claim::parse(&serde_json::to_vec(&c.0).unwrap(), "claim.json").unwrap();
    let settings = Settings {
        jobs: 100,
        deadline: Duration::from_secs(30),
        context: evident_probes::Context {
            root: dir.path().into(),
            env: base_env(),
            ..Default::default()
        },
        verifier_id: evident_gate::verifier_id(),
        progress: None,
        only: None,
    };
    let t = Instant::now();
    let o = evident_gate::run::run(&parsed.contract, doc, &settings, &|_| false, &|_| None).await;
    let took = t.elapsed();
    assert_state(&o, State::Verified);
    assert_eq!(o.runs.len(), 100);
    eprintln!("100 endpoint checks (50 ms each, 100 at once): {took:?}");
    assert!(
        took < Duration::from_millis(1500),
        "took {took:?}: not concurrent"
    );
}

// ---------------------------------------------------------------- git and files

fn git(dir: &Path, args: &[&str]) -> String {
    let out = Command::new("git")
        .args([
            "-c",
            "user.name=t",
            "-c",
            "user.email=t@t",
            "-c",
            "commit.gpgsign=false",
        ])
        .args(args)
        .current_dir(dir)
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "git {args:?}: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    String::from_utf8_lossy(&out.stdout).trim().to_string()
}

#[tokio::test]
async fn git_and_file_readback() {
    let dir = tempfile::tempdir().unwrap();
    let repo = dir.path().join("repo");
    std::fs::create_dir(&repo).unwrap();
    git(&repo, &["init", "-q", "-b", "main"]);
    std::fs::write(repo.join("app.txt"), "version 2\n").unwrap();
    git(&repo, &["add", "."]);
    git(&repo, &["commit", "-qm", "v2"]);
    let head = git(&repo, &["rev-parse", "HEAD"]);
    let c = claim(&[("m1", "code_change", "repo/app.txt")], 5);
    let git_contract = |expected: &str| {
        format!(
            "[policy]\n[[check]]\nid = \"g\"\ncheck_type = \"state_readback\"\ncovers = {{ kind = \"code_change\" }}\nsource = {{ git = {{ repo = \"repo\", rev = \"main\" }} }}\nexpected = {expected}\n"
        )
    };
    let o = gate(
        &git_contract(&format!("{{ commit = \"{head}\", clean = true }}")),
        &c,
        dir.path(),
    )
    .await;
    assert_state(&o, State::Verified);
    std::fs::write(repo.join("app.txt"), "uncommitted\n").unwrap();
    let o = gate(&git_contract("{ clean = true }"), &c, dir.path()).await;
    assert_state(&o, State::Refuted);

    // Files: content, absence goal, escapes through `..` and a symlink.
    let file_contract = |path: &str, expected: &str| {
        format!(
            "[policy]\n[[check]]\nid = \"f\"\ncheck_type = \"state_readback\"\ncovers = {{ kind = \"code_change\" }}\nsource = {{ file = {{ path = \"{path}\", contains = [\"uncommitted\"] }} }}\nexpected = {expected}\n"
        )
    };
    let o = gate(
        &file_contract(
            "repo/app.txt",
            "{ exists = true, contains = { uncommitted = true } }",
        ),
        &c,
        dir.path(),
    )
    .await;
    assert_state(&o, State::Verified);
    let o = gate(
        &file_contract("repo/lock", "{ exists = false }"),
        &c,
        dir.path(),
    )
    .await;
    assert_state(&o, State::Verified);
    assert_refused(
        &file_contract("../etc/passwd", "{ exists = true }"),
        "escape",
    );
    std::os::unix::fs::symlink("/etc", dir.path().join("link")).unwrap();
    let o = gate(
        &file_contract("link/passwd", "{ exists = true }"),
        &c,
        dir.path(),
    )
    .await;
    assert_unverified_because(&o, "escape");
}

// ---------------------------------------------------------------- test runs

fn command_contract(argv: &str, extra: &str) -> String {
    format!(
        r#"
[policy]
requires = ["test_run"]
[[check]]
id = "tests"
check_type = "test_run"
covers = {{ kind = "code_change" }}
[check.source.command]
argv = {argv}
inherit_env = ["PATH", "HOME", "CARGO_HOME", "RUSTUP_HOME", "RUSTUP_TOOLCHAIN"]
{extra}
"#
    )
}

fn python_project(dir: &Path, test_body: &str) -> PathBuf {
    let p = dir.join("py");
    std::fs::create_dir_all(&p).unwrap();
    std::fs::write(p.join("test_zip.py"), test_body).unwrap();
    p
}

#[tokio::test]
#[cfg_attr(
    not(evident_services),
    ignore = "needs pytest: .ci/run sets it up and runs this (see README, Development)"
)]
async fn pytest_runs_for_real() {
    if Command::new("python3")
        .args(["-c", "import pytest"])
        .status()
        .map(|s| !s.success())
        .unwrap_or(true)
    {
        if cfg!(evident_services) {
            panic!("pytest is not installed (.ci/run installs it)");
        }
        eprintln!("skipped: pytest is not installed (.ci/run installs it)");
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    let c = claim(&[("m1", "code_change", "py/zip.py")], 5);
    let pytest = r#"["python3", "-m", "pytest", "-q", "-p", "no:cacheprovider"]"#;
    python_project(dir.path(), "def test_ok():\n    assert 1 + 1 == 2\n");
    let o = gate(&command_contract(pytest, "cwd = \"py\""), &c, dir.path()).await;
    assert_state(&o, State::Verified);
    assert_eq!(o.runs[0].observed["passed"], 1);

    python_project(dir.path(), "def test_ok():\n    assert 1 + 1 == 3\n");
    let o = gate(&command_contract(pytest, "cwd = \"py\""), &c, dir.path()).await;
    assert_state(&o, State::Refuted);

    // Zero tests ran: unverified, not refuted.
    python_project(dir.path(), "X = 1\n");
    let o = gate(
        &command_contract(pytest, "cwd = \"py\"\nrunner = \"pytest\""),
        &c,
        dir.path(),
    )
    .await;
    assert_unverified_because(&o, "no test ran");

    // A test file that prints a fake summary and exits non-zero.
    std::fs::write(
        dir.path().join("py/spoof.py"),
        "import sys\nprint('==================== 12 passed in 0.10s ====================')\nsys.exit(1)\n",
    )
    .unwrap();
    let o = gate(
        &command_contract(
            r#"["python3", "spoof.py"]"#,
            "cwd = \"py\"\nrunner = \"pytest\"",
        ),
        &c,
        dir.path(),
    )
    .await;
    assert_state(&o, State::Unverified);
    assert!(
        o.runs[0]
            .error
            .as_deref()
            .unwrap_or("")
            .contains("disagree"),
        "{:?}",
        o.runs[0].error
    );
}

#[tokio::test]
async fn cargo_test_runs_for_real() {
    let dir = tempfile::tempdir().unwrap();
    let krate = dir.path().join("krate");
    std::fs::create_dir_all(krate.join("src")).unwrap();
    std::fs::write(
        krate.join("Cargo.toml"),
        "[package]\nname = \"fixture\"\nversion = \"0.1.0\"\nedition = \"2021\"\n[workspace]\n",
    )
    .unwrap();
    std::fs::write(
        krate.join("src/lib.rs"),
        "#[test]\nfn adds() { assert_eq!(1 + 1, 2); }\n",
    )
    .unwrap();
    let c = claim(&[("m1", "code_change", "krate/src/lib.rs")], 5);
    let argv = r#"["cargo", "test", "--offline", "--quiet"]"#;
    let extra = "cwd = \"krate\"\nenv = { CARGO_TARGET_DIR = \"target\" }";
    let o = gate(&command_contract(argv, extra), &c, dir.path()).await;
    assert_state(&o, State::Verified);
    assert_eq!(o.runs[0].observed["runner"], "cargo");
    assert_eq!(o.runs[0].observed["passed"], 1);
}

#[tokio::test]
async fn command_failures_are_unverified() {
    let dir = tempfile::tempdir().unwrap();
    let c = claim(&[("m1", "code_change", "x")], 5);
    let o = gate(
        &command_contract(r#"["no-such-command-evident"]"#, ""),
        &c,
        dir.path(),
    )
    .await;
    assert_unverified_because(&o, "not found");
    // A timeout kills the whole process group quickly.
    let t = Instant::now();
    let o = gate(
        &command_contract(r#"["sh", "-c", "sleep 30 & sleep 30"]"#, "timeout_s = 0.5"),
        &c,
        dir.path(),
    )
    .await;
    assert_unverified_because(&o, "timed out");
    assert!(t.elapsed() < Duration::from_secs(5), "{:?}", t.elapsed());
    // The overall deadline applies too.
    let t = Instant::now();
    let o = gate_env(
        &command_contract(r#"["sleep", "30"]"#, ""),
        &c,
        dir.path(),
        base_env(),
        Duration::from_millis(500),
    )
    .await;
    assert_unverified_because(&o, "timed out");
    assert!(t.elapsed() < Duration::from_secs(5), "{:?}", t.elapsed());
}

// ---------------------------------------------------------------- rules the gate adds

#[tokio::test]
async fn mutations_dated_in_the_future_stay_unverified() {
    let dir = tempfile::tempdir().unwrap();
    sqlite_db(dir.path());
    let c = claim(&[("m1", "state_write", "accounts/4471")], -3600);
    let o = gate(
        &sqlite_contract("94107", "billing.db", ZIP_QUERY),
        &c,
        dir.path(),
    )
    .await;
    assert_state(&o, State::Unverified);
    assert_eq!(first_gate_finding(&o).0, Code::PredatesMutation);
}

#[tokio::test]
async fn the_agents_own_independent_evidence_does_not_count_without_a_signature() {
    let dir = tempfile::tempdir().unwrap();
    sqlite_db(dir.path());
    // The contract covers nothing the agent claimed; the agent supplies its own
    // "independent" readback. Without a trusted signature it cannot verify.
    let mut c = claim(&[("m1", "state_write", "accounts/9999")], 5);
    let now = Timestamp::now();
    c.0["evidence"] = json!([{
        "check_type": "state_readback", "target": "accounts/9999",
        "expected": {"billing_zip": "1"}, "observed_value": {"billing_zip": "1"},
        "at": now.as_str(), "covers": ["m1"],
        "verifier": {"id": "definitely-independent", "kind": "independent"}
    }]);
    let o = gate(
        &sqlite_contract("94107", "billing.db", ZIP_QUERY),
        &c,
        dir.path(),
    )
    .await;
    assert_state(&o, State::Unverified);
    assert_eq!(
        o.verdict.findings[0].code,
        Code::UnauthenticatedIndependence
    );
    // The contract's readback (of another account) is a task-level requirement and
    // passes; nothing speaks for the agent's mutation.
    assert_eq!(o.verdict.unmet, vec!["mutation:m1"]);
}

#[test]
fn contract_errors_name_the_path() {
    let cases = [
        (
            "[policy]\n[[check]]\nid = \"a\"\ncheck_type = \"test_run\"\ncovers = { kind = \"x\" }\nsource = { command = { argv = [\"true\"] } }\nexpeced = { exit_code = 0 }\n",
            "check[0].expeced",
        ),
        (
            "[policy]\n[[check]]\nid = \"a\"\ncheck_type = \"test_run\"\ncovers = { kind = \"x\" }\nsource = { sqlite = { path = \"a.db\", query = \"select 1\" } }\nexpected = { a = 1 }\n",
            "check[0].source",
        ),
        (
            "[policy]\n[[check]]\nid = \"a\"\ncheck_type = \"state_readback\"\ncovers = { kind = \"x\" }\nsource = { file = { path = \"f\" } }\n",
            "check[0].expected",
        ),
        (
            "[policy]\n[[check]]\nid = \"a\"\ncheck_type = \"state_readback\"\ncovers = {}\nsource = { file = { path = \"f\" } }\nexpected = { exists = true }\n",
            "check[0].covers",
        ),
        ("[policy]\nrequires = [\"dom\"]\n", "policy.requires[0]"),
        (
            "[policy]\non_unverified = \"ignore\"\n",
            "policy.on_unverified",
        ),
        (
            "[[check]]\nid = \"a\"\ncheck_type = \"test_run\"\ncovers = { kind = \"x\" }\nsource = { command = { argv = [\"true\"] } }\n",
            "policy",
        ),
    ];
    for (text, path) in cases {
        let e = Contract::parse(text.as_bytes(), "c.toml").unwrap_err();
        assert_eq!(e.path, path, "{e}");
        assert!(e.to_string().starts_with("c.toml:"), "{e}");
        assert!(e.pos.is_some(), "no line and column: {e}");
    }
    // The position is the offending value's (or its table's) line.
    let e = Contract::parse(cases[0].0.as_bytes(), "c.toml").unwrap_err();
    assert_eq!(e.pos.map(|p| p.line), Some(7), "{e}");
    let dup = "[policy]\n[[check]]\nid = \"a\"\ncheck_type = \"test_run\"\ncovers = { kind = \"x\" }\nsource = { command = { argv = [\"true\"] } }\n[[check]]\nid = \"a\"\ncheck_type = \"test_run\"\ncovers = { kind = \"x\" }\nsource = { command = { argv = [\"true\"] } }\n";
    assert_eq!(
        Contract::parse(dup.as_bytes(), "c.toml").unwrap_err().path,
        "check[1].id"
    );
    let json_dup = br#"{"policy": {"id": "a", "id": "b"}}"#;
    let e = Contract::parse(json_dup, "c.json").unwrap_err();
    assert_eq!(e.path, "policy");
    assert!(e.message.contains("duplicate"), "{e}");
}

/// A field the claim's lenient policy type would ignore is refused in a contract (and
/// in `verify --policy`) with the names that are valid there, read from the schema.
#[test]
fn an_unknown_policy_field_lists_the_valid_ones() {
    let valid = "expected one of `id`, `requires`, `max_age_s`, `on_unverified`, `partial`";
    let e = Contract::parse(b"[policy]\nrequirs = []\n", "c.toml").unwrap_err();
    assert_eq!(e.path, "policy.requirs");
    assert_eq!(e.message, format!("unknown field `requirs`, {valid}"));
    for (text, file, path) in [
        (&b"[policy]\nmax_age = 3\n"[..], "p.toml", "policy.max_age"),
        (b"max_age = 3\n", "p.toml", "max_age"),
        (br#"{"max_age": 3}"#, "p.json", "max_age"),
    ] {
        let e = evident_gate::contract::parse_policy(text, file).unwrap_err();
        assert_eq!(e.path, path, "{e}");
        assert_eq!(
            e.message,
            format!("unknown field `max_age`, {valid}"),
            "{e}"
        );
        assert!(e.pos.is_some(), "{e}");
    }
}

/// A password written inline in a URL is refused with the contract (an owner's
/// mistake `contract check` reports), and the password is never shown.
#[test]
fn an_inline_password_is_refused_and_never_shown() {
    let contract = http_contract(
        "http://user:pa55word-inline@127.0.0.1:1/health",
        "{ status = 200, body_contains = \"x\" }",
        "",
    );
    let e = assert_refused(&contract, "password");
    assert!(!e.contains("pa55word-inline"), "{e}");
}

/// A secret the contract names for one check (here an API token passed to a command)
/// must not show through another check that happens to observe it (a config file read
/// as text, a command that prints it): every secret of the contract is scrubbed from
/// every observation and error, not only from the check that named it.
#[tokio::test]
async fn a_secret_named_by_one_check_never_shows_through_another() {
    const TOKEN: &str = "tok-6e1f0a9c-cross-check";
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(
        dir.path().join("config.txt"),
        format!("api_token={TOKEN}\n"),
    )
    .unwrap();
    let c = claim(&[("m1", "state_write", "config")], 5);
    let contract = r#"
[policy]
requires = ["state_readback"]

[[check]]
id = "uses-token"
check_type = "test_run"
covers = { id = "m1" }
source = { command = { argv = ["/bin/true"], env = { API_TOKEN = { env = "GATE_API_TOKEN" } } } }

[[check]]
id = "config-text"
check_type = "state_readback"
covers = { id = "m1" }
source = { file = { path = "config.txt", text = true } }
expected = { exists = true }

[[check]]
id = "prints-config"
check_type = "test_run"
covers = { id = "m1" }
source = { command = { argv = ["cat config.txt; echo 'test result: ok. 1 passed; 0 failed;'"], shell = true, runner = "cargo", capture_output = true } }

[[check]]
id = "fails-with-it"
check_type = "state_readback"
covers = { id = "m1" }
source = { file = { path = "config.txt", pointers = { t = "/t" } } }
expected = { json = { t = "x" } }
"#;
    let mut env = base_env();
    env.insert("GATE_API_TOKEN".into(), TOKEN.into());
    let o = gate_env(contract, &c, dir.path(), env, Duration::from_secs(60)).await;
    // The file and the command did observe it (as ***).
    assert_eq!(
        run_of(&o, "config-text").observed["text"],
        json!("api_token=***\n")
    );
    assert!(
        run_of(&o, "prints-config").observed["stdout"]
            .as_str()
            .unwrap()
            .contains("api_token=***")
    );
    // (JUnit, rendered by evident-pipeline from these, is checked through the binary
    // in crates/evident-cli/tests/secrets.rs.)
    let shown = format!("{} {:?} {:?}", o.document, o.runs, o.verdict);
    assert!(!shown.contains(TOKEN), "{shown}");
}

/// `body_contains` in `expected` must be the text the probe looks for. The probe
/// observes a boolean for its own substring; compared with another expected string,
/// an `endpoint_health` check was satisfied by the wrong text (verified while nobody
/// looked for it) and a `state_readback` check was refuted (a string never equals the
/// observed `true`). Both are contract errors that name the path.
#[test]
fn body_contains_must_be_the_text_the_probe_looks_for() {
    let contract = |check_type: &str, source_extra: &str, expected: &str| {
        format!(
            "[policy]\nrequires = []\n[[check]]\nid = \"h\"\ncheck_type = \"{check_type}\"\ncovers = {{ id = \"m1\" }}\nsource = {{ http = {{ url = \"http://127.0.0.1:1/health\"{source_extra} }} }}\nexpected = {expected}\n"
        )
    };
    let e = Contract::parse(
        contract(
            "endpoint_health",
            ", body_contains = \"ok\"",
            "{ status = 200, body_contains = \"1.4.2\" }",
        )
        .as_bytes(),
        "c.toml",
    )
    .unwrap_err();
    assert_eq!(e.path, "check[0].expected.body_contains", "{e}");
    let e = Contract::parse(
        contract("state_readback", "", "{ body_contains = \"1.4.1\" }").as_bytes(),
        "c.toml",
    )
    .unwrap_err();
    assert_eq!(e.path, "check[0].expected.body_contains", "{e}");
    // Still accepted: the same text in both places, a text only in expected (adopted
    // by the probe), and a state_readback expecting the observed boolean.
    for (t, extra, expected) in [
        (
            "endpoint_health",
            ", body_contains = \"ok\"",
            "{ status = 200, body_contains = \"ok\" }",
        ),
        (
            "endpoint_health",
            "",
            "{ status = 200, body_contains = \"ok\" }",
        ),
        (
            "endpoint_health",
            ", body_contains = \"ok\"",
            "{ status = 200, body_contains = true }",
        ),
        (
            "state_readback",
            ", body_contains = \"ok\"",
            "{ body_contains = true }",
        ),
    ] {
        Contract::parse(contract(t, extra, expected).as_bytes(), "c.toml")
            .unwrap_or_else(|e| panic!("{t} {extra} {expected}: {e}"));
    }
}

/// TOML has `nan` and `inf`; JSON has no such number. Read as `null`, an expectation
/// `{ zip = nan }` was met by a NULL column. They are errors that name the path.
#[test]
fn toml_nan_and_inf_are_refused_not_read_as_null() {
    for v in ["nan", "+inf", "-inf"] {
        let toml = format!(
            "[policy]\nrequires = []\n[[check]]\nid = \"z\"\ncheck_type = \"state_readback\"\ncovers = {{ id = \"m1\" }}\nsource = {{ sqlite = {{ path = \"b.db\", query = \"SELECT zip FROM a\" }} }}\nexpected = {{ zip = {v} }}\n"
        );
        let e = Contract::parse(toml.as_bytes(), "c.toml").unwrap_err();
        assert_eq!(e.path, "check[0].expected.zip", "{v}: {e}");
        assert!(e.message.contains("not a JSON number"), "{v}: {e}");
    }
}

/// An agent that pasted a secret of the contract into its own claim (a connection
/// string in its outcome, a token in its evidence) must not get the gate to print or
/// record it: the decided claim, the verdict and the warnings are scrubbed too.
#[tokio::test]
async fn a_secret_the_agent_pasted_into_its_claim_is_not_shown() {
    const TOKEN: &str = "tok-agent-pasted-77aa01";
    let dir = tempfile::tempdir().unwrap();
    let mut c = claim(&[("m1", "state_write", "config")], 5);
    c.0["claimed_outcome"] = json!(format!("connected with {TOKEN}"));
    c.0["mutations"][0]["target"] = json!(format!("db/{TOKEN}"));
    c.0[format!("x_{TOKEN}")] = json!(1);
    c.0["evidence"] = json!([{
        "check_type": "state_readback",
        "target": TOKEN,
        "expected": {"k": "v"},
        "observed_value": {"k": TOKEN},
        "at": c.0["mutations"][0]["at"].clone(),
        "covers": ["m1"],
        "verifier": {"id": "agent", "kind": "self_attested"}
    }]);
    let contract = r#"
[policy]
requires = ["test_run"]

[[check]]
id = "uses-token"
check_type = "test_run"
covers = { id = "m1" }
source = { command = { argv = ["/bin/true"], env = { API_TOKEN = { env = "GATE_API_TOKEN" } } } }
"#;
    let mut env = base_env();
    env.insert("GATE_API_TOKEN".into(), TOKEN.into());
    let o = gate_env(contract, &c, dir.path(), env, Duration::from_secs(60)).await;
    let shown = format!(
        "{} {:?} {:?} {:?}",
        o.document, o.claim.claim, o.verdict, o.warnings
    );
    assert!(!shown.contains(TOKEN), "{shown}");
    assert!(shown.contains("connected with ***"), "{shown}");
}

/// Captured output is cut at `max_output_bytes`. An expectation on `stdout` compared
/// with the kept prefix would be met by output that goes on to say something else:
/// when the stream was cut, the expectation cannot be checked (unverified).
#[tokio::test]
async fn an_expectation_on_cut_output_cannot_be_met_by_its_prefix() {
    let dir = tempfile::tempdir().unwrap();
    let c = claim(&[("m1", "code_change", "src")], 5);
    let contract = |max: u64| {
        format!(
            r#"
[policy]
requires = ["test_run"]

[[check]]
id = "out"
check_type = "test_run"
covers = {{ id = "m1" }}
source = {{ command = {{ argv = ["printf 'OK\nFAIL: 2 tests hidden\n3 passed in 0.01s\n'"], shell = true, capture_output = true, max_output_bytes = {max} }} }}
expected = {{ exit_code = 0, ran = true, stdout = "OK\n" }}
"#
        )
    };
    let o = gate(&contract(3), &c, dir.path()).await;
    assert_unverified_because(&o, "cut");
    // Not cut: compared whole, and the whole differs.
    let o = gate(&contract(1 << 20), &c, dir.path()).await;
    assert_state(&o, State::Refuted);
}

/// Which mutations a check covers is worked out with its glob compiled once: compiled
/// per (check, mutation), 50,000 claimed mutations against five glob checks took 49 s
/// (debug) before a single probe ran.
#[tokio::test]
async fn many_mutations_against_glob_covers_are_matched_quickly() {
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(dir.path().join("f.txt"), "x").unwrap();
    let n = 20_000;
    let targets: Vec<(String, String)> = (0..n)
        .map(|i| (format!("m{i}"), format!("accounts/{i}")))
        .collect();
    let refs: Vec<(&str, &str, &str)> = targets
        .iter()
        .map(|(id, t)| (id.as_str(), "state_write", t.as_str()))
        .collect();
    let c = claim(&refs, 5);
    let mut contract = String::from("[policy]\nrequires = [\"state_readback\"]\n");
    for d in 0..5 {
        contract.push_str(&format!(
            "[[check]]\nid = \"c{d}\"\ncheck_type = \"state_readback\"\ncovers = {{ target = \"accounts/*{d}\" }}\nsource = {{ file = {{ path = \"f.txt\" }} }}\nexpected = {{ exists = true }}\n"
        ));
    }
    let started = Instant::now();
    let o = gate(&contract, &c, dir.path()).await;
    let took = started.elapsed();
    for r in &o.runs {
        assert_eq!(r.covers.len(), n / 10, "{}", r.check_id);
    }
    assert!(o.runs[3].covers.contains(&"m13".to_string()));
    assert!(took < Duration::from_secs(8), "took {took:?}");
}

/// Readbacks run before any command: a test command runs the agent's code, which must
/// not be able to write the state a readback is reading.
#[tokio::test]
async fn readbacks_finish_before_any_command_starts() {
    let base = http_server().await;
    let dir = tempfile::tempdir().unwrap();
    let c = claim(&[("m1", "code_change", "app")], 5);
    // The command writes the moment it started (ns since the epoch) to /dev/shm (a
    // sandboxed run writes only its snapshot and /dev); the readback takes 50 ms, so if
    // both ran at once the command would start long before it ends.
    let started_file = format!("/dev/shm/evident-gate-test-{}-started", std::process::id());
    let started = &started_file;
    let contract = format!(
        r#"
[policy]
[[check]]
id = "tests"
check_type = "test_run"
covers = {{ kind = "code_change" }}
source = {{ command = {{ argv = ["sh", "-c", "date +%s%N > {started}; echo '1 passed in 0.01s'"], runner = "pytest", inherit_env = ["PATH"] }} }}
[[check]]
id = "api"
check_type = "state_readback"
covers = {{ kind = "code_change" }}
source = {{ http = {{ url = "{base}/fifty" }} }}
expected = {{ status = 200 }}
"#
    );
    let o = gate(&contract, &c, dir.path()).await;
    assert_state(&o, State::Verified);
    let started: i128 = std::fs::read_to_string(&started_file)
        .unwrap()
        .trim()
        .parse()
        .unwrap();
    let readback_done = o.claim.claim.evidence[run_of(&o, "api").evidence]
        .at
        .instant()
        .unix_timestamp_nanos();
    assert!(
        readback_done <= started,
        "the command started {} ms before the readback finished",
        (readback_done - started) / 1_000_000
    );
}
