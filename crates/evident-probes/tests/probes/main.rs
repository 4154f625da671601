//! Probe tests against real things: processes, a loopback HTTP server, files, SQLite,
//! PostgreSQL, MariaDB, Redis and git. Services come from EVIDENT_TEST_*_URL and are
//! skipped, with a printed reason, when unset.

mod command;
mod file;
mod git;
mod hermetic;
mod http;
mod postcondition;
mod protect;
mod redis;
mod runner_reports;
mod runners;
mod secrets;
mod server;
mod spec;
mod sql;
mod summary;

use std::path::Path;
use std::time::Duration;

use evident_probes::{Context, Object, Observation, ProbeError, Source, observe};

/// A secret that tests put in the environment and then look for in every output.
pub const SECRET: &str = "s3cr3t-Hunter2-9f8e7d";

/// The process environment plus test-only variables.
pub fn ctx(root: &Path) -> Context {
    let mut c = Context::from_process(root);
    c.env.insert("EVIDENT_TEST_SECRET".into(), SECRET.into());
    c
}

/// Parse a source the way a contract does (TOML inline table).
pub fn src(toml_text: &str) -> Source {
    #[derive(serde::Deserialize)]
    struct W {
        source: Source,
    }
    let w: W = toml::from_str(&format!("source = {toml_text}"))
        .unwrap_or_else(|e| panic!("bad test source {toml_text}: {e}"));
    w.source
}

pub async fn run(s: &Source, c: &Context, secs: f64) -> Observation {
    let o = observe(s, c, Duration::from_secs_f64(secs)).await;
    assert_no_secret(&o);
    o
}

/// The observation must not show the test secret anywhere.
pub fn assert_no_secret(o: &Observation) {
    let dbg = format!("{o:?}");
    assert!(!dbg.contains(SECRET), "secret leaked in {dbg}");
    if let Err(e) = &o.value {
        assert!(!e.to_string().contains(SECRET), "secret leaked in {e}");
    }
}

pub fn ok(o: Observation) -> Object {
    match o.value {
        Ok(v) => v,
        Err(e) => panic!("expected an observation, got error: {e}"),
    }
}

pub fn err(o: Observation) -> ProbeError {
    match o.value {
        Ok(v) => panic!("expected an error, got observation {v:?}"),
        Err(e) => e,
    }
}

/// `Some(url)` or print why the test is skipped.
/// A service's address. Tests that need one are `#[ignore]`d unless built with
/// `--cfg evident_services` (as `.ci/run` does), so an unset variable here is a
/// failure, never a silent pass.
pub fn service(var: &str) -> Option<String> {
    match std::env::var(var) {
        Ok(v) if !v.is_empty() => Some(v),
        _ => panic!("{var} is not set: this test needs that service (.ci/run sets it)"),
    }
}

/// A service's address if one is set (for a test that only adds a case with it).
pub fn service_if_set(var: &str) -> Option<String> {
    std::env::var(var).ok().filter(|v| !v.is_empty())
}

/// A name no parallel test run shares.
pub fn unique(prefix: &str) -> String {
    let nanos = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map(|d| d.subsec_nanos())
        .unwrap_or(0);
    static N: std::sync::atomic::AtomicU32 = std::sync::atomic::AtomicU32::new(0);
    let n = N.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
    format!("{prefix}_{}_{nanos}_{n}", std::process::id())
}
