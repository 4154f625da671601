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

/// The red team's leak: the owner passes `DATABASE_URL` through to the tests
/// (`inherit_env`); the agent's test wrote the URL's password into the file a readback
/// check observed, and the gate showed it in the report, `--json` and the ledger. Now
/// an inherited variable's credentials are secrets of the whole contract: the whole
/// value of a credential-named variable, the credential parts of any other.
#[test]
fn inherited_credentials_are_secrets_of_the_contract() {
    let s = src(
        r#"{ command = { argv = ["true"], inherit_env = ["PATH", "HOME", "DATABASE_URL", "GITHUB_TOKEN", "PYTEST_ADDOPTS"] } }"#,
    );
    let env: std::collections::BTreeMap<String, String> = [
        ("PATH", "/usr/local/bin:/usr/bin:/bin"),
        ("HOME", "/home/dev"),
        (
            "DATABASE_URL",
            "postgres://app:Hunter2Secret@db.internal/billing?sslmode=require",
        ),
        ("GITHUB_TOKEN", "ghp_0123456789abcdefXYZ"),
        ("PYTEST_ADDOPTS", "-q --maxfail=100000000"),
    ]
    .into_iter()
    .map(|(k, v)| (k.to_string(), v.to_string()))
    .collect();
    let mut scrub = evident_probes::Scrubber::default();
    s.register_secrets(&env, &mut scrub);
    assert_eq!(
        scrub.scrub(r#"{"status": "Hunter2Secret", "t": "ghp_0123456789abcdefXYZ"}"#),
        r#"{"status": "***", "t": "***"}"#
    );
    // Honest twin: what is not a credential stays readable everywhere.
    let plain = "PATH /usr/local/bin:/usr/bin:/bin in /home/dev as app@db.internal/billing sslmode=require --maxfail=100000000";
    assert_eq!(scrub.scrub(plain), plain);
}

/// A token given as a URL's user name (`https://TOKEN@github.com`, or Stripe's
/// `https://KEY:@api`), echoed by the agent's server (reqwest sends it as Basic
/// `TOKEN:`): the red team read it back in a JSON pointer. A short user name without
/// a password is a name, not a token.
#[tokio::test]
async fn a_token_in_a_urls_user_name_is_scrubbed_from_what_a_server_echoes() {
    let srv = Server::start().await;
    let d = tempfile::tempdir().unwrap();
    let token = "ghp_Zq8TokenSecretValue0000";
    for url in [
        format!("http://{token}@{}/echo-basic", srv.addr),
        format!("http://{token}:@{}/echo-basic", srv.addr),
    ] {
        let mut c = ctx(d.path());
        c.env.insert("HOOK_URL".into(), url.clone());
        let s = src(
            r#"{ http = { url_env = "HOOK_URL", pointers = { user = "/user", pair = "/pair", raw = "/raw" } } }"#,
        );
        let o = ok(run(&s, &c, 10.0).await);
        let shown = serde_json::Value::Object(o).to_string();
        assert!(!shown.contains("Zq8TokenSecret"), "{url}: {shown}");
        assert!(
            !shown.contains("Z2hwX1pxOFRva2VuU2VjcmV0"),
            "{url}: {shown}"
        );
    }
    // Honest twin: `postgres://postgres@db` keeps its user name readable.
    let mut s = evident_probes::Scrubber::default();
    s.add("postgres://postgres@127.0.0.1:5432/test");
    assert_eq!(s.scrub("role postgres on test"), "role postgres on test");
}

/// The red team's leak: the command wrote the DSN's password alone to stderr, so
/// `stderr_sha256` was `sha256("hunter2\n")` — the password's unsalted hash, in the
/// report and the ledger. Digests are of the output as scrubbed; output holding no
/// secret digests as its raw bytes (the honest twin).
#[tokio::test]
async fn an_output_digest_is_not_the_hash_of_a_secret() {
    use sha2::Digest as _;
    let d = tempfile::tempdir().unwrap();
    let mut c = ctx(d.path());
    c.env
        .insert("DB_URL".into(), "postgres://app:hunter2@db/x".into());
    let s = src(
        r#"{ command = { argv = ["printf 'hunter2\n' >&2; printf '1 passed\n'"], shell = true, env = { DSN = { env = "DB_URL" } }, inherit_env = ["PATH"] } }"#,
    );
    let o = ok(run(&s, &c, 20.0).await);
    let hash = |b: &[u8]| hex::encode(sha2::Sha256::digest(b));
    assert_ne!(o["stderr_sha256"], json!(hash(b"hunter2\n")));
    assert_eq!(o["stderr_sha256"], json!(hash(b"***\n")));
    assert_eq!(o["stdout_sha256"], json!(hash(b"1 passed\n")));
}

/// The red team's leak through a readback: the agent's test wrote an inherited
/// password alone into the file a check observes, and the file probe published
/// `sha256("hunter2")`. With the contract's secrets in the context (the gate puts
/// them there), the digest is of the content as scrubbed; a file holding no secret
/// hashes as its raw bytes (the honest twin, which a git `file_sha256` still equals).
#[tokio::test]
async fn a_file_digest_is_not_the_hash_of_a_secret() {
    use sha2::Digest as _;
    let d = tempfile::tempdir().unwrap();
    std::fs::write(d.path().join("pw.txt"), "hunter2").unwrap();
    std::fs::write(d.path().join("plain.txt"), "12 passed\n").unwrap();
    let mut c = ctx(d.path());
    c.secrets.add("postgres://app:hunter2@db/x");
    let hash = |b: &[u8]| hex::encode(sha2::Sha256::digest(b));
    let o = ok(run(&src(r#"{ file = { path = "pw.txt" } }"#), &c, 10.0).await);
    assert_ne!(o["sha256"], json!(hash(b"hunter2")));
    assert_eq!(o["sha256"], json!(hash(b"***")));
    // Nor its length: the size is of the content as scrubbed (it was 7, the
    // password's length, for a file holding the password alone).
    assert_eq!(o["size"], json!(3));
    let o = ok(run(&src(r#"{ file = { path = "plain.txt" } }"#), &c, 10.0).await);
    assert_eq!(o["sha256"], json!(hash(b"12 passed\n")));
    assert_eq!(o["size"], json!(10));
}
