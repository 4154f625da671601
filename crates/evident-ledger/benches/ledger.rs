//! Ledger throughput: appends per second (SQLite, PostgreSQL) and `ledger verify`
//! records per second on a 100,000-record ledger.
//!
//! `cargo bench -p evident-ledger --bench ledger`
//!
//! Environment: `EVIDENT_BENCH_RECORDS` (default 100000) sizes the verify ledger;
//! `EVIDENT_BENCH_APPENDS` (default 5000) the append runs; PostgreSQL runs when
//! `EVIDENT_TEST_POSTGRES_URL` is set (in a schema of its own, dropped afterwards).

use std::time::Instant;

use evident_ledger::{NewEntry, open};
use serde_json::json;

fn env_usize(name: &str, default: usize) -> usize {
    std::env::var(name)
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(default)
}

/// A realistic decision: a claim with two mutations and three evidence items, a
/// contract and a verdict (about 2 KB of canonical JSON per record).
fn entry(i: usize) -> NewEntry {
    let task = format!("deploy-{i}");
    NewEntry {
        kind: if i.is_multiple_of(3) {
            "gate"
        } else {
            "verify"
        }
        .into(),
        task_id: Some(task.clone()),
        state: ["verified", "unverified", "refuted"][i % 3].into(),
        claim: json!({
            "spec_version": "0.1",
            "task": { "id": task, "description": "Update the billing address on account 4471", "requested_by": "user" },
            "claimed_outcome": "Updated the billing address on account 4471.",
            "mutations": [
                { "id": "m1", "kind": "state_write", "target": "accounts/4471", "at": "2026-08-27T18:04:02Z" },
                { "id": "m2", "kind": "code_change", "target": "src/billing.rs", "at": "2026-08-27T18:03:02Z" }
            ],
            "evidence": [
                { "check_type": "state_readback", "target": "accounts/4471", "expected": { "billing_zip": "94107" },
                  "observed_value": { "billing_zip": "94107" }, "at": "2026-08-27T18:04:09Z", "covers": ["m1"],
                  "verifier": { "id": "evident-gate", "kind": "independent" } },
                { "check_type": "test_run", "target": "cargo test -p billing", "expected": { "exit_code": 0 },
                  "observed_value": { "exit_code": 0, "passed": 42, "failed": 0, "ran": true }, "at": "2026-08-27T18:04:30Z",
                  "covers": ["m2"], "verifier": { "id": "evident-gate", "kind": "independent" } },
                { "check_type": "endpoint_health", "target": "https://api.example.com/healthz",
                  "expected": { "status": 200, "body_contains": "\"version\":\"1.4.2\"" },
                  "observed_value": { "status": 200, "body_contains": true }, "at": "2026-08-27T18:04:41Z",
                  "covers": ["m1"], "verifier": { "id": "ci/github-actions", "kind": "self_attested" } }
            ],
            "policy": { "id": "billing-write", "requires": ["state_readback", "test_run"], "max_age_s": 300 }
        }).into(),
        contract: Some(json!({
            "policy": { "id": "billing-write", "requires": ["state_readback", "test_run"], "max_age_s": 300, "on_unverified": "block" },
            "check": [
                { "id": "zip-readback", "check_type": "state_readback", "covers": { "target": "accounts/4471" },
                  "source": { "sqlite": { "path": "billing.db", "query": "SELECT billing_zip FROM accounts WHERE id = ?1", "params": ["4471"] } },
                  "expected": { "billing_zip": "94107" } },
                { "id": "unit", "check_type": "test_run", "covers": { "kind": "code_change" },
                  "command": ["cargo", "test", "-p", "billing"], "timeout_s": 600 }
            ]
        })),
        verdict: json!({
            "state": (["verified", "unverified", "refuted"][i % 3]),
            "unmet": [],
            "reason": "every mutation covered by fresh, independent, matching evidence",
            "decided_at": "2026-08-27T18:04:50Z"
        }).into(),
        origin: None,
    }
}

fn bench_appends(location: &str, n: usize) -> f64 {
    let ledger = open(Some(location)).expect("open");
    let start = Instant::now();
    for i in 0..n {
        ledger.append(entry(i)).expect("append");
    }
    let secs = start.elapsed().as_secs_f64();
    let rate = n as f64 / secs;
    println!(
        "append  {:<10} {n:>7} records in {secs:>7.2} s = {rate:>9.0} appends/s",
        if ledger.is_postgres() {
            "postgres"
        } else {
            "sqlite"
        }
    );
    rate
}

fn bench_verify(location: &str, n: usize) {
    let ledger = open(Some(location)).expect("open");
    let have = ledger
        .head()
        .expect("head")
        .map(|(id, _)| id as usize)
        .unwrap_or(0);
    if have < n {
        let start = Instant::now();
        for i in have..n {
            ledger.append(entry(i)).expect("append");
        }
        let secs = start.elapsed().as_secs_f64();
        println!(
            "fill    {:<10} {:>7} records in {secs:>7.2} s = {:>9.0} appends/s",
            if ledger.is_postgres() {
                "postgres"
            } else {
                "sqlite"
            },
            n - have,
            (n - have) as f64 / secs
        );
    }
    // Three plain runs (the first in a fresh process is the figure a user of
    // `evident ledger verify` sees), then one --deep run.
    for deep in [false, false, false, true] {
        let start = Instant::now();
        let report = ledger.verify_with(deep).expect("verify");
        let secs = start.elapsed().as_secs_f64();
        assert_eq!(report.broken, None);
        assert_eq!(report.records as usize, n);
        println!(
            "verify{} {:<10} {n:>7} records in {secs:>7.2} s = {:>9.0} records/s",
            if deep { "D" } else { " " },
            if ledger.is_postgres() {
                "postgres"
            } else {
                "sqlite"
            },
            n as f64 / secs
        );
    }
}

fn main() {
    // `cargo bench` passes --bench; `cargo test --benches` passes nothing: run small.
    let quick = !std::env::args().any(|a| a == "--bench");
    let records = if quick {
        500
    } else {
        env_usize("EVIDENT_BENCH_RECORDS", 100_000)
    };
    let appends = if quick {
        200
    } else {
        env_usize("EVIDENT_BENCH_APPENDS", 5_000)
    };
    let dir = tempfile::tempdir().expect("tempdir");

    let sqlite_append = dir.path().join("append.db");
    bench_appends(sqlite_append.to_str().unwrap_or("append.db"), appends);
    let sqlite_verify = dir.path().join("verify.db");
    bench_verify(sqlite_verify.to_str().unwrap_or("verify.db"), records);

    match std::env::var("EVIDENT_TEST_POSTGRES_URL") {
        Ok(url) => {
            let sep = if url.contains('?') { '&' } else { '?' };
            let location = format!("{url}{sep}schema=evident_bench_{}", std::process::id());
            let pg_verify = env_usize("EVIDENT_BENCH_PG_RECORDS", records.min(20_000));
            bench_appends(&location, appends.min(2_000));
            bench_verify(&location, pg_verify.max(appends.min(2_000)));
            if let Ok(l) = open(Some(&location)) {
                let _ = l.destroy();
            }
        }
        Err(_) => println!("postgres: skipped (EVIDENT_TEST_POSTGRES_URL is not set)"),
    }
}
