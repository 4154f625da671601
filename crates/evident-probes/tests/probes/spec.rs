//! The source format as a contract author writes it.

use evident_probes::{Source, redact_url};

#[test]
fn unknown_fields_and_kinds_are_rejected() {
    #[derive(Debug, serde::Deserialize)]
    #[allow(dead_code)]
    struct W {
        source: Source,
    }
    for bad in [
        r#"source = { file = { path = "x", pathh = "y" } }"#,
        r#"source = { ftp = { path = "x" } }"#,
        r#"source = { http = { url = "http://x", method = "POST" } }"#,
        r#"source = { redis = { url_env = "R", op = "del", key = "k" } }"#,
        r#"source = { command = { argv = ["x"], env = { A = { env = "B", extra = 1 } } } }"#,
    ] {
        assert!(toml::from_str::<W>(bad).is_err(), "{bad}");
    }
    // JSON works the same way.
    let s: Source = serde_json::from_str(
        r#"{"sqlite": {"path": "billing.db", "query": "SELECT billing_zip FROM accounts WHERE id = ?1", "params": ["4471"]}}"#,
    )
    .unwrap();
    assert_eq!(s.kind(), "sqlite");
    assert!(serde_json::from_str::<Source>(r#"{"git": {"repo": ".", "bogus": 1}}"#).is_err());
}

#[test]
fn targets_are_printable() {
    let s: Source = serde_json::from_str(
        r#"{"postgres": {"url_env": "BILLING_DB", "query": "SELECT zip\n  FROM accounts WHERE id = $1", "params": [4471]}}"#,
    )
    .unwrap();
    assert_eq!(
        s.target(),
        "postgres $BILLING_DB: SELECT zip FROM accounts WHERE id = $1 with [4471]"
    );
    let s: Source =
        serde_json::from_str(r#"{"command": {"argv": ["cargo", "test", "-p", "billing"]}}"#)
            .unwrap();
    assert_eq!(s.target(), "cargo test -p billing");
    assert_eq!(redact_url("https://u:pw@h/p"), "https://u:***@h/p");
}

#[test]
fn json_schema_is_generated() {
    let schema = schemars::schema_for!(Source);
    let text = serde_json::to_string(&schema).unwrap();
    for kind in [
        "command", "http", "file", "sqlite", "postgres", "mysql", "redis", "git",
    ] {
        assert!(
            text.contains(&format!("\"{kind}\"")),
            "{kind} missing from schema"
        );
    }
}

#[test]
fn validate_rejects_bad_sources_before_running() {
    let bad = [
        r#"{"command": {"argv": []}}"#,
        r#"{"command": {"argv": ["a", "b"], "shell": true}}"#,
        r#"{"command": {"argv": ["x"], "cwd": "../up"}}"#,
        r#"{"command": {"argv": ["x"], "timeout_s": 0}}"#,
        r#"{"command": {"argv": ["x"], "runner": "junit"}}"#,
        r#"{"http": {"url": "http://u:pw@h/"}}"#,
        r#"{"http": {"url": "http://h/", "url_env": "U"}}"#,
        r#"{"http": {}}"#,
        r#"{"http": {"url": "file:///etc/passwd"}}"#,
        r#"{"http": {"url": "http://h/", "method": "HEAD", "body_contains": "x"}}"#,
        r#"{"http": {"url": "http://h/", "pointers": {"a": "no-slash"}}}"#,
        r#"{"file": {"path": "/etc/passwd"}}"#,
        r#"{"file": {"path": "x", "max_bytes": 0}}"#,
        r#"{"sqlite": {"path": "../x.db", "query": "SELECT 1"}}"#,
        r#"{"postgres": {"url_env": "X", "query": "SELECT 1", "max_rows": 0}}"#,
        r#"{"git": {"rev": "-p"}}"#,
        r#"{"git": {"file": "../x"}}"#,
    ];
    for b in bad {
        let s: Source = serde_json::from_str(b).unwrap_or_else(|e| panic!("{b}: {e}"));
        assert!(s.validate().is_err(), "{b} should be invalid");
    }
    let good: Source = serde_json::from_str(r#"{"http": {"url_env": "HEALTH_URL"}}"#).unwrap();
    assert!(good.validate().is_ok());
}

#[test]
fn context_debug_hides_env_values() {
    let mut c = evident_probes::Context::default();
    c.env.insert("TOKEN".into(), crate::SECRET.into());
    let dbg = format!("{c:?}");
    assert!(
        dbg.contains("TOKEN") && !dbg.contains(crate::SECRET),
        "{dbg}"
    );
}
