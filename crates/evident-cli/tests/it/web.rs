//! The page as `evident serve` mounts it: the real binary, a real decision made over
//! HTTP, the page reading it back; open on a loopback listen address, behind a bearer
//! token otherwise (the same rule as `GET /v1/decisions`).

use std::io::{Read as _, Write as _};
use std::net::{SocketAddr, TcpStream};
use std::path::Path;
use std::process::{Child, Command, Stdio};
use std::time::Duration;

use crate::support::{Listening, bin, spawn_listening};

struct Served {
    child: Child,
    addr: SocketAddr,
    token: String,
}

impl Drop for Served {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

fn serve(dir: &Path, listen: &str) -> Served {
    std::fs::create_dir_all(dir.join("contracts")).unwrap();
    let (token, hash) = evident_serve::auth::new_token();
    std::fs::write(
        dir.join("tokens.toml"),
        format!("[[token]]\nname = \"ci\"\nsha256 = \"{hash}\"\n"),
    )
    .unwrap();
    std::fs::write(
        dir.join("policy.json"),
        r#"{"id": "owner", "requires": ["state_readback"], "max_age_s": 300}"#,
    )
    .unwrap();
    let key = dir.join("server.key");
    if !key.exists() {
        evident_sign::Key::generate("evident-server")
            .write_files(&key)
            .unwrap();
    }
    let mut cmd = Command::new(bin());
    cmd.arg("serve")
        .arg("--contracts")
        .arg(dir.join("contracts"))
        .args(["--listen", listen, "--ledger"])
        .arg(dir.join("ledger.db"))
        .arg("--tokens")
        .arg(dir.join("tokens.toml"))
        .arg("--policy")
        .arg(dir.join("policy.json"))
        .arg("--key")
        .arg(&key)
        .env_remove("EVIDENT_LEDGER")
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::piped());
    let Listening { child, addr, .. } = spawn_listening(cmd);
    Served {
        child,
        addr: SocketAddr::from(([127, 0, 0, 1], addr.port())),
        token,
    }
}

/// One request; returns the status and the body.
fn call(s: &Served, method: &str, path: &str, auth: bool, body: Option<&[u8]>) -> (u16, String) {
    let mut c = TcpStream::connect(s.addr).unwrap();
    c.set_read_timeout(Some(Duration::from_secs(60))).unwrap();
    let mut req = format!(
        "{method} {path} HTTP/1.1\r\nHost: 127.0.0.1:{}\r\nConnection: close\r\n",
        s.addr.port()
    );
    if auth {
        req.push_str(&format!("Authorization: Bearer {}\r\n", s.token));
    }
    if let Some(b) = body {
        req.push_str(&format!(
            "Content-Type: application/json\r\nContent-Length: {}\r\n",
            b.len()
        ));
    }
    req.push_str("\r\n");
    c.write_all(req.as_bytes()).unwrap();
    if let Some(b) = body {
        c.write_all(b).unwrap();
    }
    let mut raw = String::new();
    c.read_to_string(&mut raw).unwrap();
    let status = raw.split(' ').nth(1).unwrap().parse().unwrap();
    let (head, body) = raw.split_once("\r\n\r\n").unwrap();
    assert!(
        status == 401
            || head
                .to_ascii_lowercase()
                .contains("content-security-policy: default-src 'self'")
            || path.starts_with("/v1/"),
        "{path}: no CSP\n{head}"
    );
    (status, body.to_string())
}

/// The spec's example document with its evidence made fresh.
fn fresh_claim() -> Vec<u8> {
    let mut v: serde_json::Value =
        serde_json::from_str(include_str!("../../../../examples/claim-verified.json")).unwrap();
    let now = time::OffsetDateTime::now_utc();
    let fmt = &time::format_description::well_known::Rfc3339;
    v["evidence"][0]["at"] = (now - time::Duration::seconds(1))
        .format(fmt)
        .unwrap()
        .into();
    v["mutations"][0]["at"] = (now - time::Duration::seconds(5))
        .format(fmt)
        .unwrap()
        .into();
    serde_json::to_vec(&v).unwrap()
}

#[test]
fn serve_mounts_the_page_open_on_loopback() {
    let dir = tempfile::tempdir().unwrap();
    let s = serve(dir.path(), "127.0.0.1:0");
    let (status, body) = call(&s, "POST", "/v1/verify", true, Some(&fresh_claim()));
    assert_eq!(status, 200, "{body}");
    let id = serde_json::from_str::<serde_json::Value>(&body).unwrap()["id"]
        .as_u64()
        .expect("a record id");

    let (status, list) = call(&s, "GET", "/?kind=verify", false, None);
    assert_eq!(status, 200, "{list}");
    assert!(list.contains(&format!("href=\"/decisions/{id}\"")));
    assert!(list.contains("deploy-4471"));
    assert!(list.contains(">ci<"), "who asked: the token's name");
    let (_, gates) = call(&s, "GET", "/", false, None);
    assert!(gates.contains("No gate decisions recorded yet."));
    assert!(
        !gates.contains("deploy-4471"),
        "verify shown apart from gate"
    );

    let (status, page) = call(&s, "GET", &format!("/decisions/{id}"), false, None);
    assert_eq!(status, 200);
    assert!(page.contains("verify decision"));
    assert!(page.contains("the policy the server holds"));
    assert!(page.contains("ci (via http)"), "who asked, through what");
    assert!(
        page.contains("the signature verifies"),
        "signed by the server's key, checked against it"
    );
    let (status, css) = call(&s, "GET", "/assets/evident.css", false, None);
    assert_eq!(status, 200);
    assert!(css.contains("ol.timeline"));
    // The API beside it is untouched.
    assert_eq!(call(&s, "GET", "/v1/decisions", false, None).0, 200);
}

#[test]
fn off_loopback_the_page_needs_a_token() {
    let dir = tempfile::tempdir().unwrap();
    let s = serve(dir.path(), "0.0.0.0:0");
    for path in ["/", "/decisions/1", "/assets/evident.css"] {
        let (status, _) = call(&s, "GET", path, false, None);
        assert_eq!(status, 401, "{path} open off loopback");
    }
    let (status, body) = call(&s, "GET", "/", true, None);
    assert_eq!(status, 200, "{body}");
    assert!(body.contains("Gate decisions"));
}

/// A claim as deep as the claim format allows (129 levels), decided by `evident
/// verify` and recorded, nests one level deeper in its record, past serde_json's 128:
/// `show`, `log`, the export check, `GET /v1/decisions/{id}` and the page could not
/// read it back. Every reader now reads what the writer accepts.
#[test]
fn a_record_as_deep_as_the_format_allows_reads_back_everywhere() {
    let dir = tempfile::tempdir().unwrap();
    let mut claim: serde_json::Value = serde_json::from_slice(&fresh_claim()).unwrap();
    let mut x = serde_json::json!([]);
    for _ in 1..125 {
        x = serde_json::json!([x]);
    }
    claim["evidence"][0]["observed_value"]["x"] = x.clone();
    let file = dir.path().join("deep.json");
    std::fs::write(&file, serde_json::to_vec(&claim).unwrap()).unwrap();
    let ledger = dir.path().join("ledger.db");
    let evident = |args: &[&str]| {
        let out = Command::new(bin())
            .args(args)
            .args(["--ledger", ledger.to_str().unwrap()])
            .env_remove("EVIDENT_LEDGER")
            .output()
            .unwrap();
        (
            out.status.code(),
            String::from_utf8_lossy(&out.stdout).to_string(),
            String::from_utf8_lossy(&out.stderr).to_string(),
        )
    };
    let (code, out, err) = evident(&["verify", file.to_str().unwrap()]);
    assert_eq!(code, Some(0), "{out}{err}");
    let (code, out, err) = evident(&["show", "1"]);
    assert_eq!(code, Some(0), "show: {out}{err}");
    let (code, out, err) = evident(&["show", "1", "--json"]);
    assert_eq!(code, Some(0), "show --json: {out}{err}");
    let shown: serde_json::Value = evident_ledger::depth::from_str(&out).unwrap();
    assert_eq!(shown["claim"]["evidence"][0]["observed_value"]["x"], x);
    let (code, out, err) = evident(&["log"]);
    assert_eq!(code, Some(0), "log: {out}{err}");
    assert!(out.contains("deploy-4471"), "{out}");
    let (code, out, err) = evident(&["ledger", "verify", "--deep"]);
    assert_eq!(code, Some(0), "ledger verify: {out}{err}");
    let export = dir.path().join("export.jsonl");
    let (code, out, err) = evident(&["ledger", "export", "--out", export.to_str().unwrap()]);
    assert_eq!(code, Some(0), "export: {out}{err}");
    let out = Command::new(bin())
        .args(["ledger", "verify", "--export", export.to_str().unwrap()])
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stdout)
    );

    // The service over the same ledger: the API and the page.
    let s = serve(dir.path(), "127.0.0.1:0");
    let (status, body) = call(&s, "GET", "/v1/decisions/1", false, None);
    assert_eq!(status, 200, "{body}");
    let (status, page) = call(&s, "GET", "/decisions/1", false, None);
    assert_eq!(status, 200, "{page}");
    assert!(page.contains("deploy-4471"));
    let (status, list) = call(&s, "GET", "/?kind=verify", false, None);
    assert_eq!(status, 200, "{list}");
    assert!(list.contains("href=\"/decisions/1\""), "{list}");
}
