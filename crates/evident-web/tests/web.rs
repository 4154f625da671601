//! The page against a real server on 127.0.0.1, over decisions the real pipeline made:
//! `evident_pipeline::gate` on the billing example's two contracts (one verified, one
//! refuted, both signed), `evident_pipeline::verify` on the example claim, and a
//! verify decision whose claim is hostile (markup, attribute breaks, bidi overrides,
//! very long strings, a secret).
//!
//! The browser test (headless Chromium through Python's playwright) is ignored unless
//! built with `--cfg evident_services`, as `.ci/run` does; then a missing chromium or
//! playwright is a failure.

use std::io::{Read as _, Write as _};
use std::net::{SocketAddr, TcpStream};
use std::path::{Path, PathBuf};
use std::sync::{Arc, OnceLock};
use std::time::Duration;

use evident_sign::{Key, TrustList};

const SECRET: &str = "sk-live-0123456789abcdefSECRET";

struct Fixture {
    addr: SocketAddr,
    verified: u64,
    refuted: u64,
    verify: u64,
    hostile: u64,
    _dir: tempfile::TempDir,
}

fn fixture() -> &'static Fixture {
    static F: OnceLock<Fixture> = OnceLock::new();
    F.get_or_init(build)
}

/// The billing example, copied so its `cargo test` builds in a directory of its own.
fn billing_copy(dir: &Path) -> PathBuf {
    let src = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../examples/billing");
    let dst = dir.join("billing");
    std::fs::create_dir_all(dst.join("src")).unwrap();
    for f in [
        "Cargo.toml",
        "Cargo.lock",
        "billing.db",
        "contract.toml",
        "contract-4472.toml",
        "claim.json",
        "claim-refuted.json",
        "src/lib.rs",
    ] {
        std::fs::copy(src.join(f), dst.join(f)).unwrap_or_else(|e| panic!("copy {f}: {e}"));
    }
    dst.canonicalize().unwrap()
}

fn recording(
    ledger: &Path,
    origin: Option<evident_pipeline::Origin>,
) -> evident_pipeline::Recording {
    evident_pipeline::Recording {
        ledger: Some(ledger.display().to_string()),
        origin,
        ..Default::default()
    }
}

fn gate(root: &Path, contract: &str, claim: &str, ledger: &Path, key: &Key) -> u64 {
    let name = root.join(contract).display().to_string();
    let bytes = std::fs::read(root.join(contract)).unwrap();
    let contract = evident_gate::Contract::parse(&bytes, &name).unwrap();
    let claim =
        evident_format::Claim::parse(&std::fs::read(root.join(claim)).unwrap(), claim).unwrap();
    let settings = evident_gate::Settings {
        jobs: 2,
        deadline: Duration::from_secs(300),
        context: evident_probes::Context::from_process(root.to_path_buf()),
        verifier_id: evident_gate::verifier_id(),
        progress: None,
        only: None,
    };
    let d = evident_pipeline::gate(evident_pipeline::GateRequest {
        contract: &contract,
        contract_name: contract_name_of(&name).to_string(),
        claim,
        settings,
        key: Some(key),
        key_path: None,
        before: None,
        recording: recording(
            ledger,
            Some(evident_pipeline::Origin {
                via: "http".into(),
                asked_by: Some("ci".into()),
            }),
        ),
    })
    .unwrap_or_else(|e| panic!("gate {name}: {e}"));
    d.record.expect("recorded").id
}

fn contract_name_of(path: &str) -> &str {
    Path::new(path)
        .file_stem()
        .and_then(|s| s.to_str())
        .unwrap_or(path)
}

fn verify(doc: &[u8], ledger: &Path, origin: Option<evident_pipeline::Origin>) -> u64 {
    let document = evident_format::Claim::parse(doc, "claim.json").unwrap();
    let d = evident_pipeline::verify(evident_pipeline::VerifyRequest {
        document,
        now: Some(evident_format::Timestamp::parse("2026-08-27T18:04:10Z").unwrap()),
        trust: None,
        policy: None,
        on_unverified: None,
        partial: false,
        recording: recording(ledger, origin),
        key: None,
    })
    .unwrap();
    d.record.expect("recorded").id
}

/// A claim written to attack the page.
fn hostile_claim() -> Vec<u8> {
    let long = "A".repeat(100_000);
    serde_json::to_vec(&serde_json::json!({
        "spec_version": "0.1",
        "task": {
            "id": "<script>alert('task')</script>",
            "description": format!("\"><img src=x onerror=alert(1)> {long}"),
            "requested_by": "' onmouseover='alert(2)\u{200b}"
        },
        "claimed_outcome": "Done </blockquote><script>alert(3)</script> \u{202e}gnp.exe",
        "mutations": [
            { "id": "m1\" onclick=\"alert(4)", "kind": "<b>state_write</b>", "target": long, "at": "2026-08-27T18:04:02Z" }
        ],
        "evidence": [{
            "check_type": "state_readback",
            "check_id": format!("c{long}"),
            "target": "<iframe src=//evil.example>",
            "expected": { "zip<svg onload=alert(5)>": "10001", "api_key": SECRET, "never_seen": 1 },
            "observed_value": { "zip<svg onload=alert(5)>": "</code><script>alert(6)</script>", "api_key": SECRET, "note": long },
            "at": "2026-08-27T18:04:05Z",
            "covers": ["m1\" onclick=\"alert(4)"],
            "verifier": { "id": "javascript:alert(7)", "kind": "independent" }
        }],
        "policy": { "id": "<style>*{display:none}</style>", "requires": ["state_readback"], "max_age_s": 300 }
    }))
    .unwrap()
}

fn build() -> Fixture {
    let dir = tempfile::tempdir().unwrap();
    let ledger = dir.path().join("ledger.db");
    let root = billing_copy(dir.path());
    let key = Key::from_seed("evident-gate-test", [7; 32]);
    let verified = gate(&root, "contract.toml", "claim.json", &ledger, &key);
    let refuted = gate(
        &root,
        "contract-4472.toml",
        "claim-refuted.json",
        &ledger,
        &key,
    );
    let example = std::fs::read(
        Path::new(env!("CARGO_MANIFEST_DIR")).join("../../examples/claim-verified.json"),
    )
    .unwrap();
    let verify_id = verify(&example, &ledger, None);
    let hostile = verify(
        &hostile_claim(),
        &ledger,
        Some(evident_pipeline::Origin {
            via: "http".into(),
            asked_by: Some("<b>ci</b>\" onclick=\"x".into()),
        }),
    );
    let trust = TrustList {
        verifiers: vec![key.trusted()],
    };
    let ledger = evident_ledger::open_existing(Some(&ledger.display().to_string())).unwrap();
    let decisions = Arc::new(evident_pipeline::view::Decisions::new(ledger));
    let app = evident_web::router(decisions, evident_web::Options { trust: Some(trust) });
    let (tx, rx) = std::sync::mpsc::channel();
    std::thread::spawn(move || {
        let rt = tokio::runtime::Runtime::new().unwrap();
        rt.block_on(async move {
            let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
            tx.send(listener.local_addr().unwrap()).unwrap();
            axum::serve(listener, app).await.unwrap();
        });
    });
    let addr = rx.recv_timeout(Duration::from_secs(30)).unwrap();
    Fixture {
        addr,
        verified,
        refuted,
        verify: verify_id,
        hostile,
        _dir: dir,
    }
}

struct Reply {
    status: u16,
    headers: Vec<(String, String)>,
    body: String,
}

impl Reply {
    fn header(&self, name: &str) -> Option<&str> {
        self.headers
            .iter()
            .find(|(k, _)| k.eq_ignore_ascii_case(name))
            .map(|(_, v)| v.as_str())
    }
}

/// One HTTP/1.1 GET over a fresh connection (the server sets content-length).
fn get(path: &str) -> Reply {
    let f = fixture();
    let mut s = TcpStream::connect(f.addr).unwrap();
    s.set_read_timeout(Some(Duration::from_secs(30))).unwrap();
    write!(
        s,
        "GET {path} HTTP/1.1\r\nHost: {}\r\nConnection: close\r\n\r\n",
        f.addr
    )
    .unwrap();
    let mut raw = Vec::new();
    s.read_to_end(&mut raw).unwrap();
    let text = String::from_utf8(raw).expect("UTF-8 response");
    let (head, body) = text.split_once("\r\n\r\n").expect("a response head");
    let mut lines = head.split("\r\n");
    let status = lines
        .next()
        .unwrap()
        .split(' ')
        .nth(1)
        .unwrap()
        .parse()
        .unwrap();
    let headers = lines
        .filter_map(|l| l.split_once(':'))
        .map(|(k, v)| (k.trim().to_string(), v.trim().to_string()))
        .collect();
    Reply {
        status,
        headers,
        body: body.to_string(),
    }
}

/// Every `src`/`href`/`action` value of a page: none may leave this server.
fn references(html: &str) -> Vec<String> {
    let mut out = Vec::new();
    for attr in ["src=\"", "href=\"", "action=\""] {
        let mut rest = html;
        while let Some(i) = rest.find(attr) {
            rest = &rest[i + attr.len()..];
            let end = rest.find('"').unwrap();
            out.push(rest[..end].to_string());
            rest = &rest[end..];
        }
    }
    out
}

fn assert_own_page(r: &Reply) {
    let csp = r.header("content-security-policy").expect("a CSP header");
    assert!(csp.starts_with("default-src 'self'"), "{csp}");
    assert_eq!(r.header("x-content-type-options"), Some("nosniff"));
    for url in references(&r.body) {
        assert!(
            url.starts_with('/') && !url.starts_with("//") || url.starts_with('#'),
            "a reference that leaves the server: {url}"
        );
    }
    assert!(!r.body.contains(" style="), "inline style (CSP refuses it)");
    assert!(!r.body.contains("<style"), "inline style element");
    let scripts = r.body.matches("<script").count();
    assert_eq!(scripts, 1, "one script element, the page's own file");
    assert!(
        r.body
            .contains("<script src=\"/assets/evident.js\" defer></script>")
    );
}

fn rows(body: &str) -> Vec<&str> {
    body.split("<tr class=\"decision\"").skip(1).collect()
}

#[test]
fn the_list_shows_gate_decisions_apart_from_verify_decisions() {
    let f = fixture();
    let r = get("/");
    assert_eq!(r.status, 200);
    assert_eq!(r.header("content-type"), Some("text/html; charset=utf-8"));
    assert_own_page(&r);
    let gate_rows = rows(&r.body);
    assert_eq!(gate_rows.len(), 2, "{}", r.body);
    // Newest first; state, task, contract, who asked, time.
    assert!(gate_rows[0].contains(&format!("href=\"/decisions/{}\"", f.refuted)));
    assert!(gate_rows[0].contains("data-state=\"refuted\""));
    assert!(gate_rows[0].contains("billing-4472"));
    assert!(
        gate_rows[0].contains("contract-4472"),
        "the contract's name"
    );
    assert!(gate_rows[0].contains(">ci<"), "who asked");
    assert!(gate_rows[0].contains("<time datetime=\"20"));
    assert!(gate_rows[1].contains("data-state=\"verified\""));
    assert!(
        !r.body.contains("deploy-4471"),
        "a verify decision in the gate list"
    );

    let v = get("/?kind=verify");
    assert_eq!(v.status, 200);
    let verify_rows = rows(&v.body);
    assert_eq!(verify_rows.len(), 2);
    assert!(v.body.contains(&format!("/decisions/{}", f.verify)));
    assert!(
        v.body.contains("not recorded"),
        "the CLI-style record names no requester"
    );
    assert!(!v.body.contains("billing-4472"));
    assert!(v.body.contains("evident observed nothing itself"));
}

#[test]
fn the_list_filters_by_state_and_task_and_refuses_a_bad_filter() {
    let r = get("/?state=refuted");
    let found = rows(&r.body);
    assert_eq!(found.len(), 1);
    assert!(found[0].contains("billing-4472"));
    assert!(r.body.contains("<option value=\"refuted\" selected>"));

    let r = get("/?task=billing-4471");
    let found = rows(&r.body);
    assert_eq!(found.len(), 1);
    assert!(found[0].contains("data-state=\"verified\""));
    assert!(r.body.contains("value=\"billing-4471\""));

    let r = get("/?state=verified&task=billing-4472");
    assert!(rows(&r.body).is_empty());
    assert!(r.body.contains("No decision matches this filter."));

    for bad in [
        "/?state=done",
        "/?kind=hook",
        "/?cursor=x",
        "/?limit=0",
        "/?limit=1000",
        "/?limit=-2",
    ] {
        let r = get(bad);
        assert_eq!(r.status, 400, "{bad}");
        assert!(r.body.contains("Bad filter"), "{bad}");
        assert_own_page(&r);
    }
}

#[test]
fn the_list_pages_newest_first() {
    let f = fixture();
    let first = get("/?limit=1");
    let one = rows(&first.body);
    assert_eq!(one.len(), 1);
    assert!(one[0].contains(&format!("/decisions/{}\"", f.refuted)));
    let older = format!("/?kind=gate&#38;limit=1&#38;cursor=b{}", f.refuted);
    assert!(first.body.contains(&older), "{}", first.body);
    assert!(
        !first.body.contains("rel=\"first\""),
        "the first page is the newest"
    );

    let second = get(&older.replace("&#38;", "&"));
    let two = rows(&second.body);
    assert_eq!(two.len(), 1);
    assert!(two[0].contains(&format!("/decisions/{}\"", f.verified)));
    assert!(
        !second.body.contains("rel=\"next\""),
        "nothing older than the first record"
    );
    assert!(
        second
            .body
            .contains("href=\"/?kind=gate&#38;limit=1\" rel=\"first\"")
    );

    let bad = get("/?cursor=zzz");
    assert_eq!(bad.status, 400);
    assert!(bad.body.contains("cursor"));
}

#[test]
fn a_refuted_decision_shows_why() {
    let f = fixture();
    let r = get(&format!("/decisions/{}", f.refuted));
    assert_eq!(r.status, 200);
    assert_own_page(&r);
    let b = &r.body;
    assert!(b.contains("id=\"state\">refuted<"));
    assert!(b.contains("gate decision"));
    // Timeline: both mutations, every observation, the window, the decision.
    let timeline = section(b, "timeline");
    assert!(timeline.contains("mutation m1"));
    assert!(timeline.contains("mutation m2"));
    assert!(timeline.contains("freshness window opens"));
    assert!(timeline.contains("decided: refuted"));
    assert!(timeline.contains("zip-4472 (before)"));
    assert!(timeline.contains("zip-4472 (after)"));
    assert!(
        timeline.contains("class=\"fresh stale\""),
        "the agent's old readback is stale"
    );
    // Coverage: the readbacks contradict m1; the tests satisfy m2.
    let coverage = section(b, "coverage");
    assert!(coverage.contains("cell contradicts"));
    assert!(coverage.contains("cell satisfies"));
    assert!(coverage.contains("not usable: unauthenticated_independence"));
    assert!(coverage.contains("not covered"));
    // The contradicting check: observed next to expected.
    let checks = section(b, "checks");
    let mismatch = checks
        .split("<tr class=\"mismatch\">")
        .nth(1)
        .expect("a mismatching key");
    assert!(mismatch.contains("billing_zip"));
    assert!(mismatch.contains("&#34;10001&#34;") && mismatch.contains("&#34;10002&#34;"));
    // The record: hash checked, link checked, signature verified by the trust list.
    let record = section(b, "record");
    assert!(record.contains(&format!("follows record #{}", f.refuted - 1)));
    assert!(record.contains("the signature verifies"), "{record}");
    assert!(record.contains("status ok\" id=\"signature\""));
}

#[test]
fn a_verify_decision_says_it_observed_nothing() {
    let f = fixture();
    let r = get(&format!("/decisions/{}", f.verify));
    assert_eq!(r.status, 200);
    assert!(r.body.contains("verify decision"));
    assert!(r.body.contains("id=\"verify-notice\""));
    assert!(r.body.contains("not signed"));
    assert!(section(&r.body, "timeline").contains("class=\"fresh fresh\""));
    let g = get(&format!("/decisions/{}", f.verified));
    assert!(!g.body.contains("id=\"verify-notice\""));
}

#[test]
fn hostile_claim_text_is_escaped_cut_and_scrubbed() {
    let f = fixture();
    for path in [format!("/decisions/{}", f.hostile), "/?kind=verify".into()] {
        let r = get(&path);
        assert_eq!(r.status, 200, "{path}");
        assert_own_page(&r);
        let b = &r.body;
        for bad in [
            "<script>alert",
            "<img src=x",
            "<svg onload",
            "<iframe",
            "<b>",
            "<style>",
            "\" onclick=\"",
            "' onmouseover='",
            "href=\"javascript:",
        ] {
            assert!(
                !b.contains(bad),
                "{path}: {bad:?} reached the page unescaped"
            );
        }
        assert!(!b.contains(SECRET), "{path}: a secret on the page");
        assert!(
            !b.contains('\u{202e}'),
            "{path}: a bidi override on the page"
        );
        assert!(
            !b.contains('\u{200b}'),
            "{path}: a zero-width space on the page"
        );
        assert!(b.len() < 400_000, "{path}: {} bytes", b.len());
    }
    let b = get(&format!("/decisions/{}", f.hostile)).body;
    assert!(b.contains("&#60;script&#62;alert(&#39;task&#39;)&#60;/script&#62;"));
    assert!(
        b.contains("\\u{202e}gnp.exe"),
        "the override shown, not obeyed"
    );
    assert!(
        b.contains("more characters not shown"),
        "long strings are cut"
    );
    assert!(b.contains("[redacted]"));
    assert!(
        b.contains("&#60;b&#62;ci&#60;/b&#62;&#34; onclick=&#34;x"),
        "who asked, escaped"
    );
    // A filter value is reflected escaped too.
    let r = get("/?task=%22%3E%3Cscript%3Ealert(1)%3C%2Fscript%3E");
    assert!(!r.body.contains("<script>alert"));
    assert!(
        r.body
            .contains("value=\"&#34;&#62;&#60;script&#62;alert(1)&#60;/script&#62;\"")
    );
}

#[test]
fn unknown_and_malformed_decisions_are_404_pages() {
    for path in [
        "/decisions/9999",
        "/decisions/..%2F..%2Fetc",
        "/decisions/abc",
        "/decisions/0",
        "/decisions/99999999999999999999",
    ] {
        let r = get(path);
        assert_eq!(r.status, 404, "{path}");
        assert!(r.body.contains("No such decision"), "{path}");
        assert_own_page(&r);
    }
    // `#N`, as `evident log` prints it.
    let f = fixture();
    let r = get(&format!("/decisions/%23{}", f.refuted));
    assert_eq!(r.status, 200);
    assert!(r.body.contains(&format!("Decision #{}", f.refuted)));
}

#[test]
fn the_stylesheet_script_and_icon_are_served_by_evident() {
    for (path, ty, body) in [
        (
            "/assets/evident.css",
            "text/css; charset=utf-8",
            evident_web::CSS,
        ),
        (
            "/assets/evident.js",
            "text/javascript; charset=utf-8",
            evident_web::JS,
        ),
        ("/assets/favicon.svg", "image/svg+xml", evident_web::ICON),
    ] {
        let r = get(path);
        assert_eq!(r.status, 200, "{path}");
        assert_eq!(r.header("content-type"), Some(ty), "{path}");
        assert_eq!(r.body, body);
        assert!(r.header("content-security-policy").is_some());
    }
    // Nothing the stylesheet or script loads comes from elsewhere.
    for text in [evident_web::CSS, evident_web::JS] {
        assert!(!text.contains("url(") && !text.contains("@import") && !text.contains("http"));
    }
}

/// The part of a page from `<section id="NAME">` to its end.
fn section<'a>(html: &'a str, id: &str) -> &'a str {
    let start = html
        .find(&format!("<section id=\"{id}\">"))
        .unwrap_or_else(|| panic!("no section {id}"));
    let rest = &html[start..];
    &rest[..rest.find("</section>").unwrap()]
}

/// The real browser: Debian's chromium driven by Python's playwright (never a browser
/// download), the list and the refuted decision at desktop and phone widths, with and
/// without JavaScript. Screenshots go to `target/tmp/evident-web-browser/`.
#[test]
#[cfg_attr(
    not(evident_services),
    ignore = "needs chromium and Python playwright; .ci/run runs it"
)]
fn the_page_in_a_real_browser() {
    let f = fixture();
    assert!(
        Path::new("/usr/bin/chromium").exists(),
        "/usr/bin/chromium is missing: apt-get install -y --no-install-recommends chromium"
    );
    let has_playwright = std::process::Command::new("python3")
        .args(["-c", "import playwright.sync_api"])
        .status()
        .is_ok_and(|s| s.success());
    assert!(
        has_playwright,
        "Python playwright is missing: python3 -m pip install playwright (never `playwright install`: the test drives /usr/bin/chromium)"
    );
    let out = Path::new(env!("CARGO_TARGET_TMPDIR")).join("evident-web-browser");
    std::fs::create_dir_all(&out).unwrap();
    let script = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/browser.py");
    let result = std::process::Command::new("python3")
        .arg(&script)
        .arg(format!("http://{}", f.addr))
        .arg(f.refuted.to_string())
        .arg(f.hostile.to_string())
        .arg(&out)
        .output()
        .unwrap();
    let text = format!(
        "{}{}",
        String::from_utf8_lossy(&result.stdout),
        String::from_utf8_lossy(&result.stderr)
    );
    assert!(result.status.success(), "browser test failed:\n{text}");
    assert!(text.contains("browser: ok"), "{text}");
    for shot in [
        "list-desktop.png",
        "decision-desktop.png",
        "list-phone.png",
        "decision-phone.png",
        "decision-nojs.png",
    ] {
        let meta = std::fs::metadata(out.join(shot)).unwrap_or_else(|e| panic!("{shot}: {e}"));
        assert!(meta.len() > 10_000, "{shot} is {} bytes", meta.len());
    }
}
