use std::time::{Duration, Instant};

use evident_probes::{ProbeError, observe};
use serde_json::json;

use crate::server::{Server, TOKEN};
use crate::{SECRET, ctx, err, ok, run, src};

fn root() -> tempfile::TempDir {
    tempfile::tempdir().unwrap()
}

#[tokio::test]
async fn health_match_pointers_headers_body() {
    let s = Server::start().await;
    let d = root();
    let source = src(&format!(
        r#"{{ http = {{ url = "{}", pointers = {{ version = "/version", deploy = "/deploy/id", nothing = "/missing" }}, headers_observed = ["X-Deploy", "X-Absent"], body_contains = "\"status\":\"ok\"" }} }}"#,
        s.url("/health")
    ));
    let o = ok(run(&source, &ctx(d.path()), 5.0).await);
    assert_eq!(o["status"], json!(200));
    assert_eq!(o["body_contains"], json!(true));
    assert_eq!(o["json"], json!({"version": "1.2.3", "deploy": "abc123"}));
    assert_eq!(
        o["headers"],
        json!({"x-deploy": "abc123", "x-absent": null})
    );
    assert!(o.get("redirect_location").is_none());
}

#[tokio::test]
async fn contradicting_values_are_observed_as_they_are() {
    let s = Server::start().await;
    let d = root();
    let source = src(&format!(
        r#"{{ http = {{ url = "{}", pointers = {{ version = "/version" }}, body_contains = "v9.9.9" }} }}"#,
        s.url("/health")
    ));
    let o = ok(run(&source, &ctx(d.path()), 5.0).await);
    // The owner expected 9.9.9: the world says 1.2.3 and the substring is absent.
    assert_eq!(o["json"]["version"], json!("1.2.3"));
    assert_eq!(o["body_contains"], json!(false));
}

#[tokio::test]
async fn server_errors_are_observations_not_errors() {
    let s = Server::start().await;
    let d = root();
    for (path, code) in [("/fail", 500), ("/unavailable", 503), ("/nope", 404)] {
        let source = src(&format!(r#"{{ http = {{ url = "{}" }} }}"#, s.url(path)));
        let o = ok(run(&source, &ctx(d.path()), 5.0).await);
        assert_eq!(o["status"], json!(code), "{path}");
    }
}

#[tokio::test]
async fn timeout_is_an_error_and_is_prompt() {
    let s = Server::start().await;
    let d = root();
    let source = src(&format!(
        r#"{{ http = {{ url = "{}", timeout_s = 0.5 }} }}"#,
        s.url("/slow")
    ));
    let t = Instant::now();
    let e = err(run(&source, &ctx(d.path()), 30.0).await);
    assert_eq!(e, ProbeError::Timeout { limit_ms: 500 });
    assert!(t.elapsed() < Duration::from_secs(3), "{:?}", t.elapsed());
    // The gate's limit applies when smaller than the source's.
    let source = src(&format!(r#"{{ http = {{ url = "{}" }} }}"#, s.url("/slow")));
    let e = err(run(&source, &ctx(d.path()), 0.3).await);
    assert_eq!(e, ProbeError::Timeout { limit_ms: 300 });
}

#[tokio::test]
async fn connection_refused() {
    let port = {
        let l = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
        l.local_addr().unwrap().port()
    };
    let d = root();
    let source = src(&format!(
        r#"{{ http = {{ url = "http://127.0.0.1:{port}/health" }} }}"#
    ));
    let e = err(run(&source, &ctx(d.path()), 5.0).await);
    assert_eq!(
        e,
        ProbeError::ConnectionRefused {
            target: format!("127.0.0.1:{port}")
        }
    );
}

#[tokio::test]
async fn oversize_body_with_and_without_length() {
    let s = Server::start().await;
    let d = root();
    for path in ["/big", "/big-chunked"] {
        let source = src(&format!(r#"{{ http = {{ url = "{}" }} }}"#, s.url(path)));
        let e = err(run(&source, &ctx(d.path()), 10.0).await);
        assert!(
            matches!(e, ProbeError::Oversize { limit: 1048576, .. }),
            "{path}: {e}"
        );
    }
    // Raising the cap makes it an observation.
    let source = src(&format!(
        r#"{{ http = {{ url = "{}", max_body_bytes = 4194304, body_contains = "yyy" }} }}"#,
        s.url("/big-chunked")
    ));
    let o = ok(run(&source, &ctx(d.path()), 10.0).await);
    assert_eq!(o["body_contains"], json!(true));
}

#[tokio::test]
async fn redirects_refused_unless_allowed() {
    let s = Server::start().await;
    let d = root();
    let c = ctx(d.path());
    let refuse = src(&format!(
        r#"{{ http = {{ url = "{}" }} }}"#,
        s.url("/redirect")
    ));
    assert_eq!(
        err(run(&refuse, &c, 5.0).await),
        ProbeError::RedirectRefused {
            status: 302,
            location: "/health".into()
        }
    );
    let follow = src(&format!(
        r#"{{ http = {{ url = "{}", redirects = "follow", pointers = {{ v = "/version" }} }} }}"#,
        s.url("/redirect")
    ));
    let o = ok(run(&follow, &c, 5.0).await);
    assert_eq!(o["status"], json!(200));
    assert_eq!(o["json"]["v"], json!("1.2.3"));
    let observe_it = src(&format!(
        r#"{{ http = {{ url = "{}", redirects = "observe" }} }}"#,
        s.url("/redirect")
    ));
    let o = ok(run(&observe_it, &c, 5.0).await);
    assert_eq!(o["status"], json!(302));
    assert_eq!(o["redirect_location"], json!("/health"));
    let looping = src(&format!(
        r#"{{ http = {{ url = "{}", redirects = "follow" }} }}"#,
        s.url("/loop")
    ));
    let e = err(run(&looping, &c, 10.0).await);
    assert!(matches!(e, ProbeError::Http { .. }), "{e}");
    assert!(e.to_string().contains("more than 10 redirects"), "{e}");
}

#[tokio::test]
async fn header_values_come_from_env_and_stay_secret() {
    let s = Server::start().await;
    let d = root();
    let mut c = ctx(d.path());
    c.env.insert("API_AUTH".into(), format!("Bearer {TOKEN}"));
    let source = src(&format!(
        r#"{{ http = {{ url = "{}", headers = {{ Authorization = {{ env = "API_AUTH" }} }}, pointers = {{ user = "/user" }} }} }}"#,
        s.url("/auth")
    ));
    let o = ok(run(&source, &c, 5.0).await);
    assert_eq!(o["status"], json!(200));
    assert_eq!(o["json"]["user"], json!("owner"));
    // Unset variable: a specific error naming the variable, not its value.
    let source = src(&format!(
        r#"{{ http = {{ url = "{}", headers = {{ Authorization = {{ env = "NOT_SET_ANYWHERE_X" }} }} }} }}"#,
        s.url("/auth")
    ));
    assert_eq!(
        err(run(&source, &c, 5.0).await),
        ProbeError::EnvMissing {
            name: "NOT_SET_ANYWHERE_X".into()
        }
    );
}

#[tokio::test]
async fn url_passwords_never_printed() {
    let d = root();
    let mut c = ctx(d.path());
    let port = {
        let l = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
        l.local_addr().unwrap().port()
    };
    c.env.insert(
        "HEALTH_URL".into(),
        format!("http://admin:{SECRET}@127.0.0.1:{port}/health?token={SECRET}"),
    );
    let source = src(r#"{ http = { url_env = "HEALTH_URL" } }"#);
    assert!(!source.target().contains(SECRET));
    let e = err(run(&source, &c, 5.0).await);
    assert!(matches!(e, ProbeError::ConnectionRefused { .. }), "{e}");
    // Inline passwords are refused outright.
    let inline = src(&format!(
        r#"{{ http = {{ url = "http://admin:{SECRET}@127.0.0.1:{port}/" }} }}"#
    ));
    assert!(!inline.target().contains(SECRET), "{}", inline.target());
    let e = err(run(&inline, &c, 5.0).await);
    assert!(matches!(e, ProbeError::InvalidSpec { .. }), "{e}");
}

#[tokio::test]
async fn body_not_json_and_head() {
    let s = Server::start().await;
    let d = root();
    let c = ctx(d.path());
    let source = src(&format!(
        r#"{{ http = {{ url = "{}", pointers = {{ a = "/a" }} }} }}"#,
        s.url("/text")
    ));
    let e = err(run(&source, &c, 5.0).await);
    assert!(matches!(e, ProbeError::Format { .. }), "{e}");
    let head = src(&format!(
        r#"{{ http = {{ url = "{}", method = "HEAD", headers_observed = ["x-deploy"] }} }}"#,
        s.url("/health")
    ));
    let o = ok(run(&head, &c, 5.0).await);
    assert_eq!(o["status"], json!(200));
    assert_eq!(o["headers"]["x-deploy"], json!("abc123"));
    let bad = src(r#"{ http = { url = "ftp://127.0.0.1/x" } }"#);
    assert!(matches!(
        err(run(&bad, &c, 5.0).await),
        ProbeError::InvalidSpec { .. }
    ));
    let bad_ptr = src(&format!(
        r#"{{ http = {{ url = "{}", pointers = {{ a = "version" }} }} }}"#,
        s.url("/health")
    ));
    assert!(matches!(
        err(run(&bad_ptr, &c, 5.0).await),
        ProbeError::InvalidSpec { .. }
    ));
}

#[tokio::test]
async fn adopt_expected_fills_body_contains() {
    let s = Server::start().await;
    let d = root();
    let mut source = src(&format!(
        r#"{{ http = {{ url = "{}" }} }}"#,
        s.url("/health")
    ));
    let expected = json!({"status": 200, "body_contains": "abc123"});
    source.adopt_expected(expected.as_object().unwrap());
    let o = ok(run(&source, &ctx(d.path()), 5.0).await);
    assert_eq!(o["body_contains"], json!(true));
}

/// The issue's performance requirement: 100 checks against an endpoint that answers
/// after 50 ms, run concurrently, finish well under a second (sequential: 5 s). The
/// bound here is loose for a busy 2-core CI machine; `cargo run --release --example
/// endpoint_bench` reports the figure.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn hundred_concurrent_checks_are_parallel() {
    let s = Server::start().await;
    let d = root();
    let c = std::sync::Arc::new(ctx(d.path()));
    let source = std::sync::Arc::new(src(&format!(
        r#"{{ http = {{ url = "{}", pointers = {{ ok = "/ok" }} }} }}"#,
        s.url("/delay50")
    )));
    let t = Instant::now();
    let mut set = tokio::task::JoinSet::new();
    for _ in 0..100 {
        let (c, source) = (c.clone(), source.clone());
        set.spawn(async move { observe(&source, &c, Duration::from_secs(10)).await });
    }
    let mut n = 0;
    while let Some(r) = set.join_next().await {
        let o = ok(r.unwrap());
        assert_eq!(o["json"]["ok"], json!(true));
        n += 1;
    }
    let took = t.elapsed();
    eprintln!("100 concurrent endpoint checks (50 ms each): {took:?}");
    assert_eq!(n, 100);
    assert!(took < Duration::from_millis(2500), "took {took:?}");
}

#[tokio::test]
async fn tls_failure_is_a_specific_error() {
    // An https URL against a plain HTTP server: the handshake fails, nothing observed.
    let s = Server::start().await;
    let d = root();
    let source = src(&format!(
        r#"{{ http = {{ url = "https://{}/health" }} }}"#,
        s.addr
    ));
    let e = err(run(&source, &ctx(d.path()), 5.0).await);
    assert!(
        matches!(e, ProbeError::Connect { .. } | ProbeError::Http { .. }),
        "{e}"
    );
    eprintln!("TLS failure reads: {e}");
}

#[tokio::test]
async fn tokens_echoed_by_the_server_are_scrubbed() {
    let s = Server::start().await;
    let d = root();
    let mut c = ctx(d.path());
    c.env.insert(
        "HEALTH_URL".into(),
        format!("{}?token={SECRET}", s.url("/bounce")),
    );
    let e = err(run(&src(r#"{ http = { url_env = "HEALTH_URL" } }"#), &c, 5.0).await);
    assert!(matches!(e, ProbeError::RedirectRefused { .. }), "{e}");
    assert!(e.to_string().contains("token=***"), "{e}");
    let o = ok(run(
        &src(r#"{ http = { url_env = "HEALTH_URL", redirects = "observe" } }"#),
        &c,
        5.0,
    )
    .await);
    assert_eq!(o["redirect_location"], json!("/landing?from=?token=***"));
}

#[tokio::test]
async fn unbounded_gate_limit_is_fine() {
    let s = Server::start().await;
    let d = root();
    let source = src(&format!(
        r#"{{ http = {{ url = "{}" }} }}"#,
        s.url("/health")
    ));
    let o = observe(&source, &ctx(d.path()), Duration::MAX).await;
    assert_eq!(ok(o)["status"], json!(200));
    std::fs::write(d.path().join("f"), "x").unwrap();
    let o = observe(
        &src(r#"{ file = { path = "f" } }"#),
        &ctx(d.path()),
        Duration::MAX,
    )
    .await;
    assert_eq!(ok(o)["exists"], json!(true));
}

/// Following a redirect to another origin must not carry a header whose value comes
/// from the environment: reqwest strips only `Authorization` and cookies, so an
/// `X-Api-Key = { env = ... }` would reach whatever host the endpoint redirects to.
/// The hop is refused (an error, so unverified); a same-origin redirect still works.
#[tokio::test]
async fn secret_headers_never_follow_a_redirect_to_another_origin() {
    let s = Server::start().await;
    let d = root();
    let mut c = ctx(d.path());
    c.env.insert("API_KEY".into(), SECRET.into());
    // Another origin that records what it is sent.
    let other = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let other_addr = other.local_addr().unwrap();
    let seen = std::sync::Arc::new(tokio::sync::Mutex::new(Vec::<u8>::new()));
    let seen2 = seen.clone();
    tokio::spawn(async move {
        use tokio::io::{AsyncReadExt, AsyncWriteExt};
        while let Ok((mut sock, _)) = other.accept().await {
            let mut buf = vec![0u8; 8192];
            let n = sock.read(&mut buf).await.unwrap_or(0);
            seen2.lock().await.extend_from_slice(&buf[..n]);
            let body = br#"{"version":"1.2.3"}"#;
            let _ = sock
                .write_all(
                    format!(
                        "HTTP/1.1 200 OK\r\nConnection: close\r\nContent-Length: {}\r\n\r\n",
                        body.len()
                    )
                    .as_bytes(),
                )
                .await;
            let _ = sock.write_all(body).await;
        }
    });
    let away = src(&format!(
        r#"{{ http = {{ url = "{}", redirects = "follow", headers = {{ X-Api-Key = {{ env = "API_KEY" }} }}, pointers = {{ v = "/version" }} }} }}"#,
        s.url(&format!("/away/{other_addr}/steal"))
    ));
    let e = err(run(&away, &c, 5.0).await);
    assert!(e.to_string().contains("another origin"), "{e}");
    let sent = String::from_utf8_lossy(&seen.lock().await).into_owned();
    assert!(
        !sent.contains(SECRET),
        "the secret header reached another origin: {sent}"
    );
    // Same origin: followed as before, header and all.
    let same = src(&format!(
        r#"{{ http = {{ url = "{}", redirects = "follow", headers = {{ X-Api-Key = {{ env = "API_KEY" }} }}, pointers = {{ v = "/version" }} }} }}"#,
        s.url("/redirect")
    ));
    let o = ok(run(&same, &c, 5.0).await);
    assert_eq!(o["json"]["v"], json!("1.2.3"));
    // Same origin, looping: still capped.
    let looping = src(&format!(
        r#"{{ http = {{ url = "{}", redirects = "follow", headers = {{ X-Api-Key = {{ env = "API_KEY" }} }} }} }}"#,
        s.url("/loop")
    ));
    let e = err(run(&looping, &c, 10.0).await);
    assert!(e.to_string().contains("more than 10 redirects"), "{e}");
    // No secret header: a redirect to another origin is followed as before.
    let plain = src(&format!(
        r#"{{ http = {{ url = "{}", redirects = "follow", pointers = {{ v = "/version" }} }} }}"#,
        s.url(&format!("/away/{other_addr}/plain"))
    ));
    let o = ok(run(&plain, &c, 5.0).await);
    assert_eq!(o["json"]["v"], json!("1.2.3"));
}
