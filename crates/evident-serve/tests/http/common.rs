//! A server in this process on 127.0.0.1:0, and a raw HTTP client.

use evident_serve::{App, Config, Tokens};
use serde_json::Value;
use std::io::{Read as _, Write as _};
use std::net::{SocketAddr, TcpStream};
use std::path::{Path, PathBuf};
use std::time::Duration;

pub struct Server {
    pub addr: SocketAddr,
    pub token: String,
    pub other_token: String,
    _dir: tempfile::TempDir,
    pub ledger: PathBuf,
    stop: Option<tokio::sync::oneshot::Sender<()>>,
    thread: Option<std::thread::JoinHandle<()>>,
}

pub const POLICY: &str = r#"{"id": "owner", "requires": ["state_readback"], "max_age_s": 300}"#;

/// The key of the verifier the example's evidence names (`gitreal-gate/0.3`), which
/// the test server's `--trust` lists.
pub fn gate_key() -> evident_sign::Key {
    evident_sign::Key::from_seed("gitreal-gate/0.3", [7; 32])
}

/// Signs every evidence item of `claim` with the trusted key (again, after an edit).
pub fn sign(claim: &mut Value) {
    sign_with(claim, &gate_key());
}

pub fn sign_with(claim: &mut Value, key: &evident_sign::Key) {
    for item in claim["evidence"].as_array_mut().unwrap() {
        item.as_object_mut().unwrap().remove("signature");
        evident_sign::attach_signature(item, key).unwrap();
    }
}

/// The spec's example document, with its evidence made fresh (`at` = now - 1 s) and
/// signed by the key the server trusts.
pub fn example_claim() -> Value {
    let mut v = unsigned_example_claim();
    sign(&mut v);
    v
}

/// [`example_claim`] as an agent writes it: evidence labelled independent, unsigned.
pub fn unsigned_example_claim() -> Value {
    let mut v: Value =
        serde_json::from_str(include_str!("../../../../examples/claim-verified.json")).unwrap();
    let now = time::OffsetDateTime::now_utc();
    let fmt = &time::format_description::well_known::Rfc3339;
    let at = (now - time::Duration::seconds(1)).format(fmt).unwrap();
    let before = (now - time::Duration::seconds(5)).format(fmt).unwrap();
    v["evidence"][0]["at"] = Value::String(at);
    v["mutations"][0]["at"] = Value::String(before);
    v
}

/// A claim of one code change (for command contracts).
pub fn code_claim(task: &str) -> Value {
    serde_json::json!({
        "spec_version": "0.1",
        "task": { "id": task },
        "claimed_outcome": "changed the code",
        "mutations": [{ "id": "m1", "kind": "code_change", "target": "src/lib.rs", "at": "2020-01-01T00:00:00Z" }],
        "evidence": []
    })
}

impl Server {
    /// Listens on 127.0.0.1 with two tokens (`ci`, `other`), the owner's policy and
    /// the contracts `write(dir)` puts in `dir/contracts`.
    pub fn start(configure: impl FnOnce(&mut Config, &Path)) -> Server {
        Server::start_on("127.0.0.1:0", configure)
    }

    pub fn start_on(listen: &str, configure: impl FnOnce(&mut Config, &Path)) -> Server {
        let dir = tempfile::tempdir().unwrap();
        let contracts = dir.path().join("contracts");
        std::fs::create_dir_all(&contracts).unwrap();
        let (token, hash) = evident_serve::auth::new_token();
        let (other_token, other_hash) = evident_serve::auth::new_token();
        let tokens = Tokens::parse(&format!(
            "[[token]]\nname = \"ci\"\nsha256 = \"{hash}\"\n[[token]]\nname = \"other\"\nsha256 = \"{other_hash}\"\n"
        ))
        .unwrap();
        let ledger = dir.path().join("ledger.db");
        let listener = std::net::TcpListener::bind(listen).unwrap();
        let addr = listener.local_addr().unwrap();
        let mut cfg = Config::new(addr, contracts);
        cfg.tokens = tokens;
        cfg.ledger = Some(ledger.display().to_string());
        cfg.policy = Some((
            "policy.json".into(),
            evident_gate::contract::parse_policy(POLICY.as_bytes(), "policy.json").unwrap(),
        ));
        cfg.trust = Some(evident_sign::TrustList {
            verifiers: vec![gate_key().trusted()],
        });
        configure(&mut cfg, dir.path());
        let app = App::new(cfg).unwrap();
        let (stop, stopped) = tokio::sync::oneshot::channel::<()>();
        listener.set_nonblocking(true).unwrap();
        let thread = std::thread::spawn(move || {
            let rt = tokio::runtime::Builder::new_multi_thread()
                .worker_threads(2)
                .enable_all()
                .build()
                .unwrap();
            rt.block_on(async move {
                let listener = tokio::net::TcpListener::from_std(listener).unwrap();
                let router = app.router();
                evident_serve::serve(app, router, listener, async {
                    let _ = stopped.await;
                })
                .await
                .unwrap();
            });
        });
        Server {
            addr,
            token,
            other_token,
            _dir: dir,
            ledger,
            stop: Some(stop),
            thread: Some(thread),
        }
    }

    pub fn host(&self) -> String {
        self.addr.to_string()
    }

    pub fn auth(&self) -> String {
        format!("Bearer {}", self.token)
    }

    /// A request with the server's Host and the `ci` token.
    pub fn call(&self, method: &str, path: &str, body: Option<&Value>) -> Reply {
        let auth = self.auth();
        let body = body.map(|b| serde_json::to_vec(b).unwrap());
        let mut headers = vec![("Authorization", auth.as_str())];
        if body.is_some() {
            headers.push(("Content-Type", "application/json"));
        }
        self.raw(method, path, &headers, body.as_deref())
    }

    /// A request with exactly these headers (plus Host unless given, Content-Length
    /// when there is a body, and Connection: close).
    pub fn raw(
        &self,
        method: &str,
        path: &str,
        headers: &[(&str, &str)],
        body: Option<&[u8]>,
    ) -> Reply {
        let mut req = format!("{method} {path} HTTP/1.1\r\n");
        if !headers.iter().any(|(k, _)| k.eq_ignore_ascii_case("host")) {
            req.push_str(&format!("Host: {}\r\n", self.host()));
        }
        for (k, v) in headers {
            req.push_str(&format!("{k}: {v}\r\n"));
        }
        if let Some(b) = body
            && !headers.iter().any(|(k, _)| {
                k.eq_ignore_ascii_case("content-length")
                    || k.eq_ignore_ascii_case("transfer-encoding")
            })
        {
            req.push_str(&format!("Content-Length: {}\r\n", b.len()));
        }
        req.push_str("Connection: close\r\n\r\n");
        let mut bytes = req.into_bytes();
        if let Some(b) = body {
            bytes.extend_from_slice(b);
        }
        send(self.addr, &bytes)
    }

    /// Stops taking connections and waits for the server to finish.
    pub fn stop(&mut self) {
        if let Some(s) = self.stop.take() {
            let _ = s.send(());
        }
        if let Some(t) = self.thread.take() {
            t.join().unwrap();
        }
    }

    /// The server's ledger, opened for reading.
    pub fn open_ledger(&self) -> evident_ledger::Ledger {
        evident_ledger::open_existing(Some(self.ledger.to_str().unwrap())).unwrap()
    }
}

impl Drop for Server {
    fn drop(&mut self) {
        if self.stop.is_some() {
            self.stop();
        }
    }
}

#[derive(Debug)]
pub struct Reply {
    pub status: u16,
    pub headers: Vec<(String, String)>,
    pub body: Vec<u8>,
}

impl Reply {
    pub fn header(&self, name: &str) -> Option<&str> {
        self.headers
            .iter()
            .find(|(k, _)| k.eq_ignore_ascii_case(name))
            .map(|(_, v)| v.as_str())
    }

    pub fn json(&self) -> Value {
        serde_json::from_slice(&self.body)
            .unwrap_or_else(|e| panic!("not JSON ({e}): {}", String::from_utf8_lossy(&self.body)))
    }

    /// Asserts an RFC 9457 problem with this status and returns it.
    pub fn problem(&self, status: u16) -> Value {
        assert_eq!(
            self.status,
            status,
            "{}",
            String::from_utf8_lossy(&self.body)
        );
        assert_eq!(
            self.header("content-type"),
            Some("application/problem+json"),
            "{self:?}"
        );
        let p = self.json();
        assert_eq!(p["status"], status);
        assert!(
            p["type"]
                .as_str()
                .unwrap()
                .starts_with("urn:evident:problem:"),
            "{p}"
        );
        assert!(!p["detail"].as_str().unwrap().is_empty(), "{p}");
        p
    }

    pub fn ok(&self) -> Value {
        assert_eq!(self.status, 200, "{}", String::from_utf8_lossy(&self.body));
        self.json()
    }
}

pub fn send(addr: SocketAddr, bytes: &[u8]) -> Reply {
    let mut s = TcpStream::connect(addr).unwrap();
    s.set_read_timeout(Some(Duration::from_secs(120))).unwrap();
    // The server may answer (413) and close before the body is sent.
    let _ = s.write_all(bytes);
    let mut out = Vec::new();
    let _ = s.read_to_end(&mut out);
    parse(&out)
}

pub fn parse(out: &[u8]) -> Reply {
    let split = out
        .windows(4)
        .position(|w| w == b"\r\n\r\n")
        .unwrap_or_else(|| panic!("no response: {:?}", String::from_utf8_lossy(out)));
    let head = String::from_utf8_lossy(&out[..split]).to_string();
    let mut lines = head.split("\r\n");
    let status: u16 = lines
        .next()
        .unwrap()
        .split(' ')
        .nth(1)
        .unwrap()
        .parse()
        .unwrap();
    let headers: Vec<(String, String)> = lines
        .filter_map(|l| l.split_once(':'))
        .map(|(k, v)| (k.trim().to_string(), v.trim().to_string()))
        .collect();
    let mut body = out[split + 4..].to_vec();
    if headers
        .iter()
        .any(|(k, v)| k.eq_ignore_ascii_case("transfer-encoding") && v.contains("chunked"))
    {
        body = dechunk(&body);
    }
    Reply {
        status,
        headers,
        body,
    }
}

fn dechunk(mut b: &[u8]) -> Vec<u8> {
    let mut out = Vec::new();
    while let Some(end) = b.windows(2).position(|w| w == b"\r\n") {
        let n = usize::from_str_radix(std::str::from_utf8(&b[..end]).unwrap().trim(), 16).unwrap();
        if n == 0 {
            break;
        }
        out.extend_from_slice(&b[end + 2..end + 2 + n]);
        b = &b[end + 2 + n + 2..];
    }
    out
}

/// A contract file in the server's directory.
pub fn write_contract(dir: &Path, name: &str, text: &str) {
    std::fs::write(dir.join(name), text).unwrap();
}

/// A contract living in a root of its own, linked into the contracts directory.
pub fn linked_contract(server_dir: &Path, name: &str, text: &str) -> PathBuf {
    let root = server_dir.join(format!("root-{name}"));
    std::fs::create_dir_all(&root).unwrap();
    std::fs::write(root.join("contract.toml"), text).unwrap();
    std::os::unix::fs::symlink(
        root.join("contract.toml"),
        server_dir.join("contracts").join(format!("{name}.toml")),
    )
    .unwrap();
    root
}

/// A contract with one command check (`sh -c SCRIPT`, expected exit 0; a cargo-like
/// summary line is printed when SCRIPT succeeds, so the run counts as a test run).
pub fn command_contract(script: &str) -> String {
    let script = format!(
        "{script} && echo 'test result: ok. 1 passed; 0 failed; 0 ignored; 0 measured; 0 filtered out'"
    );
    format!(
        r#"[policy]
id = "cmd"

[[check]]
id = "run"
check_type = "test_run"
covers = {{ kind = "code_change" }}
expected = {{ exit_code = 0 }}

[check.source.command]
argv = [{script:?}]
shell = true
inherit_env = ["PATH"]
timeout_s = 60
"#
    )
}

/// A contract with one file readback (`note.txt` exists) and one held-out check.
pub const FILES: &str = r#"[policy]
id = "files"
requires = ["state_readback"]

[[check]]
id = "note"
check_type = "state_readback"
covers = { target = "note.txt" }
source = { file = { path = "note.txt" } }
expected = { exists = true }

[[check]]
id = "secret-size"
check_type = "state_readback"
covers = { target = "note.txt" }
source = { file = { path = "note.txt" } }
expected = { size = 12345 }
hidden = true
"#;

pub fn note_claim(task: &str) -> Value {
    serde_json::json!({
        "spec_version": "0.1",
        "task": { "id": task },
        "claimed_outcome": "wrote the note",
        "mutations": [{ "id": "m1", "kind": "state_write", "target": "note.txt", "at": "2020-01-01T00:00:00Z" }],
        "evidence": []
    })
}
