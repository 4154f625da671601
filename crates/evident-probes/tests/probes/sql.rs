use std::os::unix::fs::symlink;
use std::str::FromStr;

use evident_probes::{Escape, ProbeError};
use serde_json::json;
use sqlx::{Connection, Executor};

use crate::{SECRET, ctx, err, ok, run, service, service_if_set, src, unique};

async fn make_sqlite(path: &std::path::Path) {
    let opts =
        sqlx::sqlite::SqliteConnectOptions::from_str(&format!("sqlite://{}", path.display()))
            .unwrap()
            .create_if_missing(true);
    let mut c = sqlx::SqliteConnection::connect_with(&opts).await.unwrap();
    c.execute(
        "CREATE TABLE accounts (id INTEGER PRIMARY KEY, billing_zip TEXT, balance REAL, raw BLOB, note TEXT);
         INSERT INTO accounts VALUES (4471, '94107', 12.5, x'00ff', NULL);
         INSERT INTO accounts VALUES (4472, '10001', -1.0, NULL, 'b');
         INSERT INTO accounts VALUES (4473, '60601', 0, NULL, 'c');",
    )
    .await
    .unwrap();
    c.close().await.unwrap();
}

#[tokio::test]
async fn sqlite_match_contradiction_absence() {
    let d = tempfile::tempdir().unwrap();
    make_sqlite(&d.path().join("billing.db")).await;
    let c = ctx(d.path());
    let s = src(
        r#"{ sqlite = { path = "billing.db", query = "SELECT billing_zip, id, balance, raw, note FROM accounts WHERE id = ?1", params = [4471] } }"#,
    );
    let o = ok(run(&s, &c, 10.0).await);
    assert_eq!(
        serde_json::Value::Object(o),
        json!({"billing_zip": "94107", "id": 4471, "balance": 12.5, "raw": "00ff", "note": null, "row_count": 1})
    );
    // A string parameter against an integer column: SQLite compares by affinity.
    let s = src(
        r#"{ sqlite = { path = "billing.db", query = "SELECT billing_zip FROM accounts WHERE id = ?1", params = ["4472"] } }"#,
    );
    let o = ok(run(&s, &c, 10.0).await);
    assert_eq!(
        o["billing_zip"],
        json!("10001"),
        "the value that would contradict 94107"
    );
    let s = src(
        r#"{ sqlite = { path = "billing.db", query = "SELECT id FROM accounts WHERE id = ?1", params = [9999] } }"#,
    );
    let o = ok(run(&s, &c, 10.0).await);
    assert_eq!(serde_json::Value::Object(o), json!({"row_count": 0}));
    let s = src(
        r#"{ sqlite = { path = "billing.db", query = "SELECT count(*) AS n FROM accounts" } }"#,
    );
    assert_eq!(ok(run(&s, &c, 10.0).await)["n"], json!(3));
}

#[tokio::test]
async fn sqlite_failures() {
    let d = tempfile::tempdir().unwrap();
    let inner = d.path().join("root");
    std::fs::create_dir(&inner).unwrap();
    make_sqlite(&inner.join("billing.db")).await;
    make_sqlite(&d.path().join("outside.db")).await;
    symlink("../outside.db", inner.join("link.db")).unwrap();
    let c = ctx(&inner);
    let e = err(run(
        &src(r#"{ sqlite = { path = "billing.db", query = "SELEC 1" } }"#),
        &c,
        10.0,
    )
    .await);
    assert!(matches!(e, ProbeError::BadQuery { .. }), "{e}");
    let e = err(run(
        &src(r#"{ sqlite = { path = "billing.db", query = "SELECT * FROM nope" } }"#),
        &c,
        10.0,
    )
    .await);
    assert!(e.to_string().contains("no such table"), "{e}");
    // Read-only: a write is refused and changes nothing.
    let e = err(run(
        &src(r#"{ sqlite = { path = "billing.db", query = "DELETE FROM accounts" } }"#),
        &c,
        10.0,
    )
    .await);
    assert!(matches!(e, ProbeError::BadQuery { .. }), "{e}");
    assert!(e.to_string().contains("must be a SELECT"), "{e}");
    // VACUUM INTO writes a copy of the database even on a read-only connection; the
    // connection is query_only, so it is refused and no copy holds any data.
    let e = err(run(
        &src(r#"{ sqlite = { path = "billing.db", query = "VACUUM INTO 'copy.db'" } }"#),
        &c,
        10.0,
    )
    .await);
    assert!(matches!(e, ProbeError::BadQuery { .. }), "{e}");
    // SQLite resolves the name against the process's working directory: no file may
    // appear there or under the root, not even an empty one.
    assert!(
        !inner.join("copy.db").exists(),
        "VACUUM INTO wrote a copy under the root"
    );
    assert!(
        !std::path::Path::new("copy.db").exists(),
        "VACUUM INTO created a file in the working directory"
    );
    let o = ok(run(
        &src(
            r#"{ sqlite = { path = "billing.db", query = "SELECT count(*) AS n FROM accounts" } }"#,
        ),
        &c,
        10.0,
    )
    .await);
    assert_eq!(o["n"], json!(3));
    // A missing file is an error (never created), not an empty result.
    let e = err(run(
        &src(r#"{ sqlite = { path = "missing.db", query = "SELECT 1" } }"#),
        &c,
        10.0,
    )
    .await);
    assert!(matches!(e, ProbeError::Io { .. }), "{e}");
    assert!(!inner.join("missing.db").exists());
    let e = err(run(
        &src(r#"{ sqlite = { path = "../outside.db", query = "SELECT 1" } }"#),
        &c,
        10.0,
    )
    .await);
    assert!(
        matches!(
            e,
            ProbeError::PathEscape {
                via: Escape::DotDot,
                ..
            }
        ),
        "{e}"
    );
    let e = err(run(
        &src(r#"{ sqlite = { path = "link.db", query = "SELECT 1" } }"#),
        &c,
        10.0,
    )
    .await);
    assert!(
        matches!(
            e,
            ProbeError::PathEscape {
                via: Escape::Symlink,
                ..
            }
        ),
        "{e}"
    );
    let e = err(run(
        &src(r#"{ sqlite = { path = "billing.db", query = "SELECT 1 AS a, 2 AS a" } }"#),
        &c,
        10.0,
    )
    .await);
    assert!(e.to_string().contains("appears twice"), "{e}");
    let e = err(run(&src(r#"{ sqlite = { path = "billing.db", query = "SELECT id FROM accounts", max_rows = 2 } }"#), &c, 10.0).await);
    assert!(matches!(e, ProbeError::Oversize { .. }), "{e}");
    // Integers that do not fit 64 bits are refused, not rounded through a double.
    // (JSON: TOML has no integers past 64 bits.)
    for big in ["18446744073709551615", "99999999999999999999999"] {
        let s: evident_probes::Source = serde_json::from_str(&format!(
            r#"{{"sqlite": {{"path": "billing.db", "query": "SELECT ?1 AS v", "params": [{big}]}}}}"#
        ))
        .unwrap();
        let e = err(run(&s, &c, 10.0).await);
        assert!(e.to_string().contains("does not fit"), "{e}");
    }
    let s = src(
        r#"{ sqlite = { path = "billing.db", query = "SELECT ?1 AS v, ?2 AS w", params = [0.25, -7] } }"#,
    );
    let o = ok(run(&s, &c, 10.0).await);
    assert_eq!((o["v"].clone(), o["w"].clone()), (json!(0.25), json!(-7)));
    // A runaway query: the timeout is reported, and the statement is interrupted.
    let runaway = src(
        r#"{ sqlite = { path = "billing.db", query = "WITH RECURSIVE c(x) AS (SELECT 1 UNION ALL SELECT x + 1 FROM c) SELECT count(*) FROM c" } }"#,
    );
    let t = std::time::Instant::now();
    assert_eq!(
        err(run(&runaway, &c, 1.0).await),
        ProbeError::Timeout { limit_ms: 1000 }
    );
    assert!(t.elapsed() < std::time::Duration::from_secs(3));
    let e = err(run(
        &src(r#"{ sqlite = { path = "billing.db", query = "SELECT ?1", params = [[1]] } }"#),
        &c,
        10.0,
    )
    .await);
    assert!(matches!(e, ProbeError::InvalidSpec { .. }), "{e}");
}

// ------------------------------------------------------------------ PostgreSQL

async fn pg_setup(url: &str, table: &str) {
    let mut c = sqlx::PgConnection::connect(url)
        .await
        .expect("connect to test postgres");
    c.execute(sqlx::AssertSqlSafe(format!(
        "CREATE TABLE {table} (id INT PRIMARY KEY, zip TEXT, amount NUMERIC(12,3), active BOOLEAN, seen TIMESTAMPTZ, meta JSONB);
         INSERT INTO {table} VALUES (4471, '94107', 12345.678, true, '2024-05-01T10:00:00Z', '{{\"tier\":\"gold\"}}'),
                                   (4472, '10001', -0.050, false, NULL, NULL)"
    )))
    .await
    .unwrap();
    c.close().await.unwrap();
}

async fn pg_drop(url: &str, table: &str) {
    if let Ok(mut c) = sqlx::PgConnection::connect(url).await {
        let _ = c
            .execute(sqlx::AssertSqlSafe(format!("DROP TABLE IF EXISTS {table}")))
            .await;
    }
}

#[tokio::test]
#[cfg_attr(
    not(evident_services),
    ignore = "needs PostgreSQL: .ci/run sets its address and runs this (see README, Development)"
)]
async fn postgres_readback() {
    let Some(url) = service("EVIDENT_TEST_POSTGRES_URL") else {
        return;
    };
    let table = unique("evident_pg");
    pg_setup(&url, &table).await;
    let d = tempfile::tempdir().unwrap();
    let mut c = ctx(d.path());
    c.env.insert("BILLING_DB".into(), url.clone());
    let q = |sql: String, params: &str| {
        src(&format!(
            r#"{{ postgres = {{ url_env = "BILLING_DB", query = "{sql}", params = {params} }} }}"#
        ))
    };
    let o = ok(run(
        &q(
            format!("SELECT zip, amount, active, seen, meta, id FROM {table} WHERE id = $1"),
            "[4471]",
        ),
        &c,
        10.0,
    )
    .await);
    assert_eq!(
        serde_json::Value::Object(o),
        json!({"zip": "94107", "amount": "12345.678", "active": true, "seen": "2024-05-01T10:00:00Z", "meta": {"tier": "gold"}, "id": 4471, "row_count": 1})
    );
    let o = ok(run(
        &q(
            format!("SELECT zip, amount, seen FROM {table} WHERE zip = $1"),
            "[\"10001\"]",
        ),
        &c,
        10.0,
    )
    .await);
    assert_eq!(o["amount"], json!("-0.050"));
    assert_eq!(o["seen"], json!(null));
    assert_eq!(
        o["zip"],
        json!("10001"),
        "a value that would contradict 94107"
    );
    let o = ok(run(
        &q(format!("SELECT id FROM {table} WHERE id = $1"), "[9999]"),
        &c,
        10.0,
    )
    .await);
    assert_eq!(serde_json::Value::Object(o), json!({"row_count": 0}));
    let o = ok(run(&q("SELECT 1.5::float8 AS f, 7::int2 AS s, 'a'::varchar AS v, DATE '2024-01-02' AS d, '00000000-0000-0000-0000-0000000000ab'::uuid AS u, NULL AS n".into(), "[]"), &c, 10.0).await);
    assert_eq!(o["f"], json!(1.5));
    assert_eq!(o["s"], json!(7));
    assert_eq!(o["d"], json!("2024-01-02"));
    assert_eq!(o["u"], json!("00000000-0000-0000-0000-0000000000ab"));
    assert_eq!(o["n"], json!(null));

    // A write inside the read-only transaction is refused.
    let e = err(run(
        &q(
            format!("INSERT INTO {table} (id) VALUES (1) RETURNING id"),
            "[]",
        ),
        &c,
        10.0,
    )
    .await);
    assert!(e.to_string().contains("read-only"), "{e}");
    let e = err(run(&q(format!("SELECT nope FROM {table}"), "[]"), &c, 10.0).await);
    assert!(matches!(e, ProbeError::BadQuery { .. }), "{e}");
    let e = err(run(&q("SELECT '1 day'::interval AS i".into(), "[]"), &c, 10.0).await);
    assert!(matches!(e, ProbeError::UnsupportedColumn { .. }), "{e}");
    // No gate limit at all: statement_timeout is clamped, not overflowed.
    let o = evident_probes::observe(
        &q("SELECT 1 AS one".into(), "[]"),
        &c,
        std::time::Duration::MAX,
    )
    .await;
    assert_eq!(ok(o)["one"], json!(1));
    let e = err(run(&q("SELECT pg_sleep(10)".into(), "[]"), &c, 1.0).await);
    assert_eq!(e, ProbeError::Timeout { limit_ms: 1000 });
    pg_drop(&url, &table).await;
}

#[tokio::test]
async fn postgres_unreachable_and_secrets() {
    let d = tempfile::tempdir().unwrap();
    let mut c = ctx(d.path());
    let port = {
        let l = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
        l.local_addr().unwrap().port()
    };
    c.env.insert(
        "BILLING_DB".into(),
        format!("postgres://app:{SECRET}@127.0.0.1:{port}/billing"),
    );
    let s = src(r#"{ postgres = { url_env = "BILLING_DB", query = "SELECT 1" } }"#);
    let e = err(run(&s, &c, 10.0).await);
    assert!(matches!(e, ProbeError::ConnectionRefused { .. }), "{e}");
    let s = src(r#"{ postgres = { url_env = "NO_SUCH_DB_URL_VAR", query = "SELECT 1" } }"#);
    assert_eq!(
        err(run(&s, &c, 10.0).await),
        ProbeError::EnvMissing {
            name: "NO_SUCH_DB_URL_VAR".into()
        }
    );
    c.env
        .insert("BILLING_DB".into(), format!("not a url {SECRET}"));
    let s = src(r#"{ postgres = { url_env = "BILLING_DB", query = "SELECT 1" } }"#);
    assert!(matches!(
        err(run(&s, &c, 10.0).await),
        ProbeError::InvalidSpec { .. }
    ));
    if let Some(url) = service_if_set("EVIDENT_TEST_POSTGRES_URL") {
        // Reachable server, unknown database: the server's reason, no secret.
        let mut u = url::Url::parse(&url).unwrap();
        u.set_path("evident_no_such_database");
        let _ = u.set_password(Some(SECRET));
        c.env.insert("BILLING_DB".into(), u.to_string());
        let e = err(run(&s, &c, 10.0).await);
        assert!(matches!(e, ProbeError::Database { .. }), "{e}");
    }
}

// ------------------------------------------------------------------ MySQL / MariaDB

#[tokio::test]
#[cfg_attr(
    not(evident_services),
    ignore = "needs MariaDB: .ci/run sets its address and runs this (see README, Development)"
)]
async fn mysql_readback() {
    let Some(url) = service("EVIDENT_TEST_MYSQL_URL") else {
        return;
    };
    let table = unique("evident_my");
    let mut admin = sqlx::MySqlConnection::connect(&url)
        .await
        .expect("connect to test mysql");
    admin
        .execute(sqlx::AssertSqlSafe(format!(
            "CREATE TABLE {table} (id INT PRIMARY KEY, zip VARCHAR(10), amount DECIMAL(12,3), active BOOLEAN, big BIGINT UNSIGNED, ratio DOUBLE, born DATE, seen DATETIME(3), raw VARBINARY(4))"
        )))
        .await
        .unwrap();
    admin
        .execute(sqlx::AssertSqlSafe(format!(
            "INSERT INTO {table} VALUES (4471, '94107', 12345.678, TRUE, 18446744073709551615, 0.25, '2024-01-02', '2024-05-01 10:00:00.250', x'00ff'), (4472, '10001', -0.05, FALSE, 0, NULL, NULL, NULL, NULL)"
        )))
        .await
        .unwrap();
    let d = tempfile::tempdir().unwrap();
    let mut c = ctx(d.path());
    c.env.insert("SHOP_DB".into(), url.clone());
    let q = |sql: String, params: &str| {
        src(&format!(
            r#"{{ mysql = {{ url_env = "SHOP_DB", query = "{sql}", params = {params} }} }}"#
        ))
    };
    let o = ok(run(&q(format!("SELECT zip, amount, active, big, ratio, born, seen, raw, id FROM {table} WHERE id = ?"), "[4471]"), &c, 10.0).await);
    assert_eq!(
        serde_json::Value::Object(o),
        json!({"zip": "94107", "amount": "12345.678", "active": true, "big": 18446744073709551615u64, "ratio": 0.25, "born": "2024-01-02", "seen": "2024-05-01T10:00:00.25", "raw": "00ff", "id": 4471, "row_count": 1})
    );
    let o = ok(run(
        &q(
            format!("SELECT zip, amount FROM {table} WHERE zip = ?"),
            "[\"10001\"]",
        ),
        &c,
        10.0,
    )
    .await);
    assert_eq!(
        (o["zip"].clone(), o["amount"].clone()),
        (json!("10001"), json!("-0.050"))
    );
    let o = ok(run(
        &q(format!("SELECT id FROM {table} WHERE id = ?"), "[9999]"),
        &c,
        10.0,
    )
    .await);
    assert_eq!(serde_json::Value::Object(o), json!({"row_count": 0}));
    let e = err(run(
        &q(format!("INSERT INTO {table} (id) VALUES (1)"), "[]"),
        &c,
        10.0,
    )
    .await);
    assert!(e.to_string().to_lowercase().contains("read only"), "{e}");
    // DDL commits the read-only transaction implicitly and would then run outside it:
    // the session itself is read-only, so it is refused and the table stays.
    for ddl in [
        format!("TRUNCATE TABLE {table}"),
        format!("DROP TABLE {table}"),
    ] {
        let e = err(run(&q(ddl.clone(), "[]"), &c, 10.0).await);
        assert!(
            e.to_string().to_lowercase().contains("read only"),
            "{ddl}: {e}"
        );
    }
    let o = ok(run(
        &q(format!("SELECT COUNT(*) AS n FROM {table}"), "[]"),
        &c,
        10.0,
    )
    .await);
    assert_eq!(o["n"], json!(2));
    let e = err(run(&q(format!("SELECT nope FROM {table}"), "[]"), &c, 10.0).await);
    assert!(matches!(e, ProbeError::BadQuery { .. }), "{e}");
    let e = err(run(&q("SELECT SLEEP(10)".into(), "[]"), &c, 1.0).await);
    assert_eq!(e, ProbeError::Timeout { limit_ms: 1000 });
    let _ = admin
        .execute(sqlx::AssertSqlSafe(format!("DROP TABLE {table}")))
        .await;
    let _ = admin.close().await;
}

#[tokio::test]
async fn mysql_unreachable() {
    let d = tempfile::tempdir().unwrap();
    let mut c = ctx(d.path());
    let port = {
        let l = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
        l.local_addr().unwrap().port()
    };
    c.env.insert(
        "SHOP_DB".into(),
        format!("mysql://root:{SECRET}@127.0.0.1:{port}/shop"),
    );
    let s = src(r#"{ mysql = { url_env = "SHOP_DB", query = "SELECT 1" } }"#);
    let e = err(run(&s, &c, 10.0).await);
    assert!(matches!(e, ProbeError::ConnectionRefused { .. }), "{e}");
    assert!(e.to_string().contains(&port.to_string()), "{e}");
}
