//! Credentials by meaning, not length: the credential parts of a URL or connection
//! string held in the environment are scrubbed from observations and errors however
//! short they are; what is not a credential stays readable.

use serde_json::json;

use crate::server::Server;
use crate::{ctx, ok, run, src};

/// A command given the DSN prints it re-spaced (so the whole URL no longer matches)
/// and once in libpq `key=value` form: every credential is gone, options remain.
#[tokio::test]
async fn credential_parts_of_a_dsn_are_scrubbed_from_command_output() {
    let d = tempfile::tempdir().unwrap();
    for (dsn, secret) in [
        (
            "postgres://app:hunter2@db.internal/billing?sslmode=require",
            "hunter2",
        ),
        (
            "postgres://app@db.internal/billing?sslmode=require&password=hunter2",
            "hunter2",
        ),
        (
            "postgres://app@db.internal/billing?sslmode=require&sslpassword=pw",
            "pw",
        ),
        (
            "postgres://app@db.internal/billing?sslmode=require&passfile=%2Fetc%2Fpgpass",
            "/etc/pgpass",
        ),
        (
            "postgres://app@db.internal/billing?sslmode=require&sslkey=key.pem",
            "key.pem",
        ),
        (
            "postgres://app@db.internal/billing?sslmode=require&Token=t0k",
            "t0k",
        ),
        (
            "host=db.internal dbname=billing sslmode=require password=hunter2",
            "hunter2",
        ),
    ] {
        let mut c = ctx(d.path());
        c.env.insert("DB_URL".into(), dsn.into());
        let s = src(
            r#"{ command = { argv = ["printf '%s\n' \"$DSN\" | tr '/:@?&=%' '       '"], shell = true, env = { DSN = { env = "DB_URL" } }, inherit_env = ["PATH"], capture_output = true } }"#,
        );
        let o = ok(run(&s, &c, 20.0).await);
        let out = o["stdout"].as_str().unwrap();
        assert!(!out.contains(secret), "{dsn}: {out}");
        assert!(
            out.contains("sslmode require") && out.contains("billing"),
            "{dsn}: {out}"
        );
    }
}

/// A server echoing the query string in a redirect: a three-character token shows
/// nowhere in the observation.
#[tokio::test]
async fn a_short_query_token_is_scrubbed_from_what_a_server_echoes() {
    let server = Server::start().await;
    let d = tempfile::tempdir().unwrap();
    for query in [
        "token=k9z",
        "access_token=k9z",
        "api_key=k9z",
        "X-Api-Key=k9z",
    ] {
        let mut c = ctx(d.path());
        c.env.insert(
            "ECHO_URL".into(),
            server.url(&format!("/bounce?{query}&page=2")),
        );
        let s = src(r#"{ http = { url_env = "ECHO_URL", redirects = "observe" } }"#);
        let o = ok(run(&s, &c, 20.0).await);
        let location = o["redirect_location"].as_str().unwrap();
        assert!(!location.contains("k9z"), "{query}: {location}");
        assert!(location.contains("page"), "{location}");
        assert_eq!(o["status"], json!(302));
    }
}

/// A URL written in the contract (not a secret) shows its credential parameters
/// redacted in the target all the same.
#[test]
fn targets_redact_credential_parameters() {
    let s = src(r#"{ http = { url = "https://h.example/x?format=json&api_key=abc" } }"#);
    assert_eq!(
        s.target(),
        "GET https://h.example/x?format=json&api_key=***"
    );
}
