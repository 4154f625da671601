//! A hostile client: every request, header, body, token guess and contract name it
//! can send. Each attack has its honest twin in the other modules.

use crate::common::*;
use serde_json::json;

#[test]
fn writes_need_a_known_token() {
    let s = Server::start(|_, dir| {
        write_contract(&dir.join("contracts"), "files.toml", FILES);
    });
    let body = serde_json::to_vec(&example_claim()).unwrap();
    let ct = ("Content-Type", "application/json");
    let (_, hash) = evident_serve::auth::new_token();
    let wrong = format!("Bearer {}", evident_serve::auth::new_token().0);
    let hash_as_token = format!("Bearer {hash}");
    let near = format!("Bearer {}x", s.token);
    let lower = format!("bearer {}", s.token);
    for path in ["/v1/verify", "/v1/gate/files"] {
        for headers in [
            vec![ct],
            vec![ct, ("Authorization", wrong.as_str())],
            vec![ct, ("Authorization", hash_as_token.as_str())],
            vec![ct, ("Authorization", near.as_str())],
            vec![ct, ("Authorization", "Bearer ")],
            vec![ct, ("Authorization", "Basic Y2k6Y2k=")],
            vec![ct, ("Authorization", s.token.as_str())],
            // Two headers, one good: refused (no header smuggling).
            vec![
                ct,
                ("Authorization", wrong.as_str()),
                ("Authorization", lower.as_str()),
            ],
        ] {
            let r = s.raw("POST", path, &headers, Some(&body));
            let p = r.problem(401);
            assert_eq!(
                r.header("www-authenticate"),
                Some("Bearer realm=\"evident\"")
            );
            assert!(!p.to_string().contains(&s.token));
        }
    }
    // The scheme is case-insensitive.
    let r = s.raw(
        "POST",
        "/v1/verify",
        &[ct, ("Authorization", lower.as_str())],
        Some(&body),
    );
    assert_eq!(r.status, 200);
    assert_eq!(
        s.open_ledger().verify().unwrap().records,
        1,
        "refused requests record nothing"
    );
}

#[test]
fn reads_are_open_only_when_the_server_listens_on_loopback() {
    // Listening on every address, reached through loopback: the peer's address does
    // not open anything.
    let s = Server::start_on("0.0.0.0:0", |_, _| {});
    let port = s.addr.port();
    let local = std::net::SocketAddr::from(([127, 0, 0, 1], port));
    let get = |path: &str, auth: Option<&str>| {
        let mut req =
            format!("GET {path} HTTP/1.1\r\nHost: 127.0.0.1:{port}\r\nConnection: close\r\n");
        if let Some(a) = auth {
            req.push_str(&format!("Authorization: {a}\r\n"));
        }
        req.push_str("\r\n");
        send(local, req.as_bytes())
    };
    for path in [
        "/v1/decisions",
        "/v1/contracts",
        "/metrics",
        "/v1/decisions/1",
    ] {
        get(path, None).problem(401);
        assert_ne!(get(path, Some(&s.auth())).status, 401, "{path}");
    }
    assert_eq!(get("/healthz", None).status, 200);
    assert_eq!(get("/openapi.json", None).status, 200);
    // A wrong token is refused even where reads are open.
    let lo = Server::start(|_, _| {});
    lo.raw(
        "GET",
        "/v1/decisions",
        &[("Authorization", "Bearer nope")],
        None,
    )
    .problem(401);
    lo.raw("GET", "/v1/decisions", &[], None).ok();
}

#[test]
fn the_host_header_must_name_this_server() {
    let s = Server::start(|c, _| c.allowed_hosts = vec!["evident.example".into()]);
    let port = s.addr.port();
    for host in [
        "evil.example".to_string(),
        format!("evil.example:{port}"),
        format!("127.0.0.1:{}", port.wrapping_add(1)),
        format!("127.0.0.1.evil.example:{port}"),
        String::new(),
    ] {
        s.raw("GET", "/v1/decisions", &[("Host", host.as_str())], None)
            .problem(421);
        s.raw(
            "POST",
            "/v1/verify",
            &[("Host", host.as_str()), ("Authorization", &s.auth())],
            Some(b"{}"),
        )
        .problem(421);
    }
    // Health checks from a load balancer name the replica by address: answered.
    assert_eq!(
        s.raw("GET", "/healthz", &[("Host", "10.0.0.7:8080")], None)
            .status,
        200
    );
    for host in [
        format!("127.0.0.1:{port}"),
        format!("localhost:{port}"),
        format!("LOCALHOST:{port}"),
        "evident.example".to_string(),
        "evident.example:443".to_string(),
    ] {
        assert_eq!(
            s.raw("GET", "/v1/decisions", &[("Host", host.as_str())], None)
                .status,
            200,
            "{host}"
        );
    }
}

#[test]
fn bodies_are_limited() {
    let s = Server::start(|c, _| c.body_limit = 2048);
    let auth = s.auth();
    let big = vec![b' '; 4096];
    let mut claim = serde_json::to_vec(&example_claim()).unwrap();
    claim.extend_from_slice(&big);
    let hdrs = [
        ("Authorization", auth.as_str()),
        ("Content-Type", "application/json"),
    ];
    s.raw("POST", "/v1/verify", &hdrs, Some(&claim))
        .problem(413);
    // Chunked, with no length announced.
    let mut chunked = format!("{:x}\r\n", claim.len()).into_bytes();
    chunked.extend_from_slice(&claim);
    chunked.extend_from_slice(b"\r\n0\r\n\r\n");
    let r = s.raw(
        "POST",
        "/v1/verify",
        &[hdrs[0], hdrs[1], ("Transfer-Encoding", "chunked")],
        Some(&chunked),
    );
    r.problem(413);
    // The honest twin: the same claim without the padding.
    let ok = serde_json::to_vec(&example_claim()).unwrap();
    assert_eq!(s.raw("POST", "/v1/verify", &hdrs, Some(&ok)).status, 200);
}

#[test]
fn contract_names_are_never_paths() {
    let s = Server::start(|_, dir| {
        write_contract(&dir.join("contracts"), "files.toml", FILES);
        // A contract outside the directory that a path could reach.
        std::fs::write(dir.join("outside.toml"), FILES).unwrap();
        std::fs::create_dir_all(dir.join("contracts/sub")).unwrap();
        std::fs::write(dir.join("contracts/sub/inner.toml"), FILES).unwrap();
        std::fs::write(dir.join("contracts/files.toml.bak"), FILES).unwrap();
    });
    let body = note_claim("t");
    for name in [
        "..%2Foutside",
        "..%2F..%2Foutside",
        "%2E%2E%2Foutside",
        "sub%2Finner",
        "files.toml",
        "files.toml.bak",
        ".files",
        "..",
        "%00files",
        "files%00",
        "files%20",
        "%2Ftmp%2Fx",
        &"a".repeat(65),
    ] {
        let r = s.call("POST", &format!("/v1/gate/{name}"), Some(&body));
        assert!(matches!(r.status, 400 | 404), "{name}: {}", r.status);
        r.problem(r.status);
        let r = s.call("GET", &format!("/v1/contracts/{name}"), None);
        assert!(matches!(r.status, 400 | 404), "{name}: {}", r.status);
    }
    // Unencoded separators do not reach the handler as a name at all.
    for path in [
        "/v1/gate/../outside",
        "/v1/gate/sub/inner",
        "/v1/gate/%2e%2e/outside",
    ] {
        let r = s.call("POST", path, Some(&body));
        assert!(matches!(r.status, 400 | 404), "{path}: {}", r.status);
    }
    s.call("POST", "/v1/gate/nope", Some(&body)).problem(404);
    assert_eq!(
        s.open_ledger().verify().unwrap().records,
        0,
        "nothing was gated"
    );
}

#[test]
fn malformed_claims_are_problems_naming_the_json_path() {
    let s = Server::start(|_, dir| {
        write_contract(&dir.join("contracts"), "files.toml", FILES);
    });
    let mut c = example_claim();
    c["evidence"][0]["verifier"]["kind"] = json!("Independent");
    for path in ["/v1/verify", "/v1/gate/files"] {
        let p = s.call("POST", path, Some(&c)).problem(400);
        assert_eq!(p["errors"][0]["path"], "evidence[0].verifier.kind", "{p}");
        assert_eq!(
            p["errors"][0]["pointer"], "/evidence/0/verifier/kind",
            "{p}"
        );
        assert!(
            p["detail"]
                .as_str()
                .unwrap()
                .contains("evidence[0].verifier.kind")
        );
    }
    let auth = s.auth();
    let post = |ct: &str, body: &[u8]| {
        s.raw(
            "POST",
            "/v1/verify",
            &[("Authorization", auth.as_str()), ("Content-Type", ct)],
            Some(body),
        )
    };
    let p = post(
        "application/json",
        br#"{"spec_version": "0.1", "spec_version": "0.1"}"#,
    )
    .problem(400);
    assert!(
        p["errors"][0]["message"]
            .as_str()
            .unwrap()
            .contains("duplicate"),
        "{p}"
    );
    post("application/json", b"\xff\xfe").problem(400);
    post("application/json", b"").problem(400);
    post("application/json", b"[1, 2").problem(400);
    post("application/json", &b"[".repeat(100_000)).problem(400);
    post("text/plain", br#"{}"#).problem(415);
    post("application/x-www-form-urlencoded", b"a=b").problem(415);
    // A document's verdict is never taken: a forged "verified" is recomputed.
    let mut forged = example_claim();
    forged["evidence"][0]["verifier"]["kind"] = json!("self_attested");
    sign(&mut forged);
    forged["verdict"] = json!({"state": "verified", "unmet": [], "reason": null, "decided_at": "2026-01-01T00:00:00Z"});
    let v = s.call("POST", "/v1/verify", Some(&forged)).ok();
    assert_eq!(v["state"], "unverified");
}

#[test]
fn unknown_routes_methods_and_parameters_are_problems() {
    let s = Server::start(|_, dir| {
        write_contract(&dir.join("contracts"), "files.toml", FILES);
    });
    s.call("GET", "/v2/anything", None).problem(404);
    s.call("DELETE", "/v1/decisions", None).problem(405);
    s.call("GET", "/v1/verify", None).problem(405);
    let body = note_claim("t");
    for q in ["wait=maybe", "wait", "only=note", "root=/"] {
        s.call("POST", &format!("/v1/gate/files?{q}"), Some(&body))
            .problem(400);
    }
    s.call("POST", "/v1/verify?policy=mine", Some(&example_claim()))
        .problem(400);
}

#[test]
fn a_body_trickled_slowly_is_cut_at_the_deadline() {
    use std::io::{Read as _, Write as _};
    let s = Server::start(|c, dir| {
        c.request_timeout = std::time::Duration::from_millis(800);
        write_contract(&dir.join("contracts"), "files.toml", FILES);
    });
    for path in ["/v1/verify", "/v1/gate/files"] {
        let mut conn = std::net::TcpStream::connect(s.addr).unwrap();
        let head = format!(
            "POST {path} HTTP/1.1\r\nHost: {}\r\nAuthorization: {}\r\nContent-Type: application/json\r\nContent-Length: 1000\r\nConnection: close\r\n\r\n{{\"spec",
            s.host(),
            s.auth()
        );
        conn.write_all(head.as_bytes()).unwrap();
        let start = std::time::Instant::now();
        conn.set_read_timeout(Some(std::time::Duration::from_secs(20)))
            .unwrap();
        let mut out = Vec::new();
        let _ = conn.read_to_end(&mut out);
        assert!(
            start.elapsed() < std::time::Duration::from_secs(10),
            "{path}: held open"
        );
        // The body's own deadline (408) and the request's (503, "deadline") are both
        // 0.8 s here; which answers first is timing. Either refuses within the limit.
        let text = String::from_utf8_lossy(&out);
        assert!(
            text.starts_with("HTTP/1.1 408") || text.starts_with("HTTP/1.1 503"),
            "{path}: {text}"
        );
        assert!(text.contains("problem"), "{path}: {text}");
    }
}

/// The agent labels its own evidence independent: unsigned, signed with its own key
/// under the trusted verifier's id, or signed and then edited. None of it verifies;
/// the honest twin (signed by the key in the server's trust list) does. A server
/// with no trust list authenticates nothing, so nothing verifies on the document's
/// say-so.
#[test]
fn verify_never_takes_the_agents_word_for_independence() {
    let s = Server::start(|_, _| {});
    let unauthenticated = |v: &serde_json::Value| {
        assert_eq!(
            (v["state"].as_str(), v["status"].as_str()),
            (Some("unverified"), Some("blocked")),
            "{v}"
        );
        assert!(
            v.to_string().contains("unauthenticated_independence"),
            "the finding says why: {v}"
        );
    };
    unauthenticated(
        &s.call("POST", "/v1/verify", Some(&unsigned_example_claim()))
            .ok(),
    );
    let mut own_key = unsigned_example_claim();
    sign_with(
        &mut own_key,
        &evident_sign::Key::from_seed("gitreal-gate/0.3", [9; 32]),
    );
    unauthenticated(&s.call("POST", "/v1/verify", Some(&own_key)).ok());
    let mut edited = example_claim();
    edited["evidence"][0]["target"] = json!("accounts/4472");
    edited["mutations"][0]["target"] = json!("accounts/4472");
    unauthenticated(&s.call("POST", "/v1/verify", Some(&edited)).ok());
    // The honest twin.
    let v = s.call("POST", "/v1/verify", Some(&example_claim())).ok();
    assert_eq!(v["state"], "verified", "{v}");

    let bare = Server::start(|c, _| c.trust = None);
    unauthenticated(
        &bare
            .call("POST", "/v1/verify", Some(&unsigned_example_claim()))
            .ok(),
    );
    unauthenticated(&bare.call("POST", "/v1/verify", Some(&example_claim())).ok());
}

/// `n` arrays, one inside the other.
fn nested(n: usize) -> serde_json::Value {
    let mut v = json!([]);
    for _ in 1..n {
        v = json!([v]);
    }
    v
}

/// A claim nested as deeply as the claim format allows (129 levels: the document's
/// root, `evidence`, the item, `observed_value`, then 125 arrays) was recorded, and
/// then could not be read back: its record and its decision nest a level deeper,
/// past serde_json's 128. The service now refuses claims deeper than 64 levels with a
/// 400 naming the limit and the path, before anything is recorded; the honest twin
/// at the limit is recorded and reads back through every reader.
#[test]
fn a_claim_too_deep_to_read_back_is_refused_before_it_is_recorded() {
    let s = Server::start(|_, _| {});
    for arrays in [125, 61] {
        let mut deep = example_claim();
        deep["evidence"][0]["observed_value"]["x"] = nested(arrays);
        sign(&mut deep);
        let p = s.call("POST", "/v1/verify", Some(&deep)).problem(400);
        assert!(p["detail"].as_str().unwrap().contains("64 levels"), "{p}");
        let path = p["errors"][0]["path"].as_str().unwrap();
        assert!(
            path.starts_with("evidence[0].observed_value.x[0][0]"),
            "{p}"
        );
    }
    assert_eq!(
        s.open_ledger().verify().unwrap().records,
        0,
        "nothing refused is recorded"
    );

    // The honest twin, 64 levels deep.
    let mut deep = example_claim();
    deep["evidence"][0]["observed_value"]["x"] = nested(60);
    sign(&mut deep);
    let v = s.call("POST", "/v1/verify", Some(&deep)).ok();
    assert_eq!(v["state"], "verified", "{v}");
    let id = v["id"].as_u64().unwrap();
    let got = s.call("GET", &format!("/v1/decisions/{id}"), None).ok();
    assert_eq!(got["hash"], v["hash"]);
    assert_eq!(
        got["document"]["evidence"][0]["observed_value"]["x"],
        nested(60)
    );
    let page = s.call("GET", "/v1/decisions", None).ok();
    assert_eq!(page["items"][0]["id"], id);
    let l = s.open_ledger();
    assert_eq!(l.get(id).unwrap().hash, v["hash"].as_str().unwrap());
    assert_eq!(l.verify_with(true).unwrap().broken, None);
    let mut export = Vec::new();
    l.export(&mut export).unwrap();
    let r = evident_ledger::verify_export(&export[..]).unwrap();
    assert_eq!((r.records, r.broken), (1, None));
}

/// Two Host headers, or an absolute-form target naming another host than the Host
/// header: a proxy in front may route by the other one, so the DNS-rebinding check
/// would not check what is served. Refused (400) whichever comes first; the honest
/// twins (one Host; an absolute-form target naming this server) are answered.
#[test]
fn an_ambiguous_host_is_refused() {
    let s = Server::start(|_, _| {});
    let good = s.host();
    let auth = s.auth();
    let body = serde_json::to_vec(&example_claim()).unwrap();
    let write = [
        ("Authorization", auth.as_str()),
        ("Content-Type", "application/json"),
    ];
    for (a, b) in [
        (good.as_str(), "evil.example"),
        ("evil.example", good.as_str()),
    ] {
        s.raw("GET", "/v1/decisions", &[("Host", a), ("Host", b)], None)
            .problem(400);
        s.raw(
            "POST",
            "/v1/verify",
            &[("Host", a), ("Host", b), write[0], write[1]],
            Some(&body),
        )
        .problem(400);
        s.raw("GET", "/v1/decisions", &[("Host", a), ("Host", a)], None)
            .problem(400);
    }
    for target in [
        "http://evil.example/v1/decisions".to_string(),
        format!("http://evil.example:{}/v1/decisions", s.addr.port()),
        format!("http://user@{good}/v1/decisions"),
    ] {
        let p = s.raw("GET", &target, &[], None).problem(400);
        assert_eq!(p["type"], "urn:evident:problem:ambiguous-host", "{p}");
    }
    s.raw("POST", "http://evil.example/v1/verify", &write, Some(&body))
        .problem(400);
    assert_eq!(
        s.open_ledger().verify().unwrap().records,
        0,
        "nothing refused was recorded"
    );
    // The honest twins.
    s.raw("GET", "/v1/decisions", &[], None).ok();
    s.raw("GET", &format!("http://{good}/v1/decisions"), &[], None)
        .ok();
    let upper = format!(
        "http://{}/v1/decisions",
        good.replace("127.0.0.1", "LOCALHOST")
    );
    s.raw(
        "GET",
        &upper,
        &[("Host", &format!("localhost:{}", s.addr.port()))],
        None,
    )
    .ok();
    assert_eq!(
        s.raw("POST", "/v1/verify", &write, Some(&body)).ok()["state"],
        "verified"
    );
}

/// The JSON views hold the agent's strings (a task id with markup): a browser opening
/// one must not sniff it into HTML, frame it or cache it — on every route, the 404
/// and a refused Host included. The page keeps its own CSP: its twin is the
/// CLI's `web` test, which reads the page's `default-src 'self'` through `evident serve`.
#[test]
fn json_views_are_never_rendered_framed_or_cached() {
    let s = Server::start(|_, dir| {
        write_contract(&dir.join("contracts"), "files.toml", FILES);
    });
    let mut claim = example_claim();
    claim["task"]["id"] = serde_json::json!("<script>alert(1)</script>");
    sign(&mut claim);
    let made = s.call("POST", "/v1/verify", Some(&claim));
    assert!(made.status < 300, "verify answered {}", made.status);
    for path in ["/v1/decisions", "/v1/contracts", "/v2/nothing", "/healthz"] {
        let r = s.call("GET", path, None);
        assert_eq!(
            r.header("x-content-type-options"),
            Some("nosniff"),
            "{path}"
        );
        assert_eq!(r.header("cache-control"), Some("no-store"), "{path}");
        let csp = r.header("content-security-policy").unwrap_or_default();
        assert!(csp.contains("default-src 'none'"), "{path}: {csp:?}");
        assert!(csp.contains("frame-ancestors 'none'"), "{path}: {csp:?}");
    }
    let refused = s.raw("GET", "/v1/decisions", &[("Host", "evil.example")], None);
    assert_eq!(refused.header("x-content-type-options"), Some("nosniff"));
}
