//! The web page over the ledger: the decisions (state, task, contract, who asked,
//! time; filtered by state and task, paged), and for each decision *why* — the claim's
//! mutations and the evidence on a timeline with the freshness window, the coverage
//! matrix, each check's observation next to its expectation, and the ledger record
//! with its hash, its link to the record before it and its signature status.
//!
//! Rendered on the server from templates compiled into the binary (askama, which
//! HTML-escapes every value: the agent writes the claim text), with one stylesheet
//! and one small script served from here: no CDN, `Content-Security-Policy:
//! default-src 'self'`, and every page works without JavaScript.
//!
//! [`router`] is what `evident serve` mounts at `/`, over the same read side as
//! `GET /v1/decisions` ([`Decisions`]): the page shows what the API serves, held-out
//! checks held out. Who may open it is the mounting server's business (loopback, or
//! a bearer token).

#![warn(missing_docs)]

mod text;
pub mod view;

use std::sync::Arc;
use std::time::Duration;

use askama::Template;
use axum::Router;
use axum::extract::{Path, Query, State};
use axum::http::{HeaderMap, HeaderValue, StatusCode, header};
use axum::response::{IntoResponse, Response};
use axum::routing::get;
use evident_pipeline::view::{Decisions, Query as ListFilter, ReadError};
use evident_sign::TrustList;

/// The policy every response of the page carries: nothing but this server's own
/// resources, no inline script or style, no framing, no form posted elsewhere.
pub const CSP: &str =
    "default-src 'self'; base-uri 'none'; form-action 'self'; frame-ancestors 'none'";
/// The stylesheet, compiled in.
pub const CSS: &str = include_str!("../assets/evident.css");
/// The script (progressive enhancement only), compiled in.
pub const JS: &str = include_str!("../assets/evident.js");
/// The icon, compiled in.
pub const ICON: &str = include_str!("../assets/favicon.svg");
/// Rows per page unless `limit` says otherwise.
pub const DEFAULT_PAGE: u64 = 50;
/// A ledger read that takes longer is answered with 503.
pub const READ_TIMEOUT: Duration = Duration::from_secs(15);

/// How the page reads and judges records.
#[derive(Clone, Default)]
pub struct Options {
    /// Record signatures are checked against this list; without one they are shown
    /// (who signed, with which key) and marked as not checked.
    pub trust: Option<TrustList>,
}

struct Shared {
    decisions: Arc<Decisions>,
    options: Options,
}

/// The page's routes: `/` (the decisions), `/decisions/{id}` (one decision), `/assets/evident.css`, `/assets/evident.js`, `/assets/favicon.svg`. Every response carries
/// [`CSP`], `X-Content-Type-Options: nosniff` and `Referrer-Policy: no-referrer`.
pub fn router(decisions: Arc<Decisions>, options: Options) -> Router {
    let shared = Arc::new(Shared { decisions, options });
    Router::new()
        .route("/", get(list))
        .route("/decisions/{id}", get(decision))
        .route("/assets/evident.css", get(css))
        .route("/assets/evident.js", get(js))
        .route("/assets/favicon.svg", get(icon))
        .layer(axum::middleware::map_response(security_headers))
        .with_state(shared)
}

async fn security_headers(mut response: Response) -> Response {
    let h = response.headers_mut();
    h.insert(
        header::CONTENT_SECURITY_POLICY,
        HeaderValue::from_static(CSP),
    );
    h.insert(
        header::X_CONTENT_TYPE_OPTIONS,
        HeaderValue::from_static("nosniff"),
    );
    h.insert(
        header::REFERRER_POLICY,
        HeaderValue::from_static("no-referrer"),
    );
    h.insert(header::X_FRAME_OPTIONS, HeaderValue::from_static("DENY"));
    response
}

async fn css() -> Response {
    asset("text/css; charset=utf-8", CSS)
}

async fn js() -> Response {
    asset("text/javascript; charset=utf-8", JS)
}

async fn icon() -> Response {
    asset("image/svg+xml", ICON)
}

fn asset(content_type: &'static str, body: &'static str) -> Response {
    let mut headers = HeaderMap::new();
    headers.insert(header::CONTENT_TYPE, HeaderValue::from_static(content_type));
    headers.insert(
        header::CACHE_CONTROL,
        HeaderValue::from_static("public, max-age=300"),
    );
    (headers, body).into_response()
}

/// An HTML page with its status.
fn page(status: StatusCode, html: Result<String, askama::Error>) -> Response {
    match html {
        Ok(body) => {
            let mut headers = HeaderMap::new();
            headers.insert(
                header::CONTENT_TYPE,
                HeaderValue::from_static("text/html; charset=utf-8"),
            );
            headers.insert(header::CACHE_CONTROL, HeaderValue::from_static("no-store"));
            (status, headers, body).into_response()
        }
        Err(e) => (
            StatusCode::INTERNAL_SERVER_ERROR,
            format!("the page could not be rendered: {e}"),
        )
            .into_response(),
    }
}

#[derive(Template)]
#[template(path = "error.html")]
struct ErrorPage<'a> {
    title: &'a str,
    nav: &'a str,
    ledger: &'a str,
    heading: &'a str,
    message: &'a str,
}

fn error_page(shared: &Shared, status: StatusCode, heading: &str, message: &str) -> Response {
    page(
        status,
        ErrorPage {
            title: heading,
            nav: "",
            ledger: shared.decisions.location(),
            heading,
            message: &text::line(message, text::LONG),
        }
        .render(),
    )
}

/// Runs a blocking ledger read off the async threads, within [`READ_TIMEOUT`].
async fn read<T: Send + 'static>(
    shared: &Arc<Shared>,
    op: impl FnOnce(&Decisions) -> Result<T, ReadError> + Send + 'static,
) -> Result<T, Response> {
    let s = shared.clone();
    let task = tokio::task::spawn_blocking(move || op(&s.decisions));
    let unreadable =
        |status, message: &str| error_page(shared, status, "The ledger could not be read", message);
    match tokio::time::timeout(READ_TIMEOUT, task).await {
        Ok(Ok(Ok(v))) => Ok(v),
        Ok(Ok(Err(ReadError::NotFound(id)))) => Err(error_page(
            shared,
            StatusCode::NOT_FOUND,
            "No such decision",
            &format!("the ledger holds no record {id}"),
        )),
        Ok(Ok(Err(e @ ReadError::BadQuery { .. }))) => Err(error_page(
            shared,
            StatusCode::BAD_REQUEST,
            "Bad filter",
            &e.to_string(),
        )),
        Ok(Ok(Err(ReadError::Ledger(m)))) => Err(unreadable(StatusCode::SERVICE_UNAVAILABLE, &m)),
        Ok(Err(_)) => Err(unreadable(
            StatusCode::INTERNAL_SERVER_ERROR,
            "the read failed unexpectedly",
        )),
        Err(_) => Err(unreadable(
            StatusCode::SERVICE_UNAVAILABLE,
            &format!("no answer within {} s; try again", READ_TIMEOUT.as_secs()),
        )),
    }
}

const STATES: [&str; 4] = ["verified", "unverified", "refuted", "partial"];

/// The list's query: unknown keys are ignored, a repeated key takes its last value.
/// The read side checks the values (a bad one is a 400 page naming it).
#[derive(Debug)]
struct ListQuery {
    kind: &'static str,
    state: Option<String>,
    task: Option<String>,
    cursor: Option<String>,
    limit: Option<u64>,
}

evident_format::message_error! {
    /// Why a list page's query is refused: the parameter and what is wrong with it.
    struct BadFilter;
}

impl ListQuery {
    fn parse(pairs: &[(String, String)]) -> Result<ListQuery, BadFilter> {
        let last = |k: &str| {
            pairs
                .iter()
                .rev()
                .find(|(key, _)| key == k)
                .map(|(_, v)| v.trim())
                .filter(|v| !v.is_empty())
        };
        // Gate and verify decisions are never listed together.
        let kind = match last("kind") {
            None | Some("gate") => "gate",
            Some("verify") => "verify",
            Some(other) => {
                return Err(format!(
                    "kind: {:?} is not a kind of decision: gate or verify",
                    text::line(other, 40)
                )
                .into());
            }
        };
        let task = match last("task") {
            Some(t) if t.chars().count() > 200 => {
                return Err("task: longer than 200 characters".into());
            }
            t => t.map(str::to_string),
        };
        let limit = match last("limit") {
            None => None,
            Some(v) => Some(
                v.parse::<u64>()
                    .map_err(|_| format!("limit: {:?} is not a whole number", text::line(v, 40)))?,
            ),
        };
        Ok(ListQuery {
            kind,
            state: last("state").map(str::to_string),
            task,
            cursor: last("cursor").map(str::to_string),
            limit,
        })
    }

    fn filter(&self) -> ListFilter {
        ListFilter {
            state: self.state.clone(),
            task: self.task.clone(),
            kind: Some(self.kind.to_string()),
            limit: Some(self.limit.unwrap_or(DEFAULT_PAGE)),
            cursor: self.cursor.clone(),
            ..ListFilter::default()
        }
    }

    /// This list's address at `cursor` (the newest page without one).
    fn href(&self, cursor: Option<&str>) -> String {
        let mut q = format!("/?kind={}", self.kind);
        let mut add = |k: &str, v: &str| {
            q.push('&');
            q.push_str(k);
            q.push('=');
            q.push_str(&text::query_value(v));
        };
        if let Some(s) = &self.state {
            add("state", s);
        }
        if let Some(t) = &self.task {
            add("task", t);
        }
        if let Some(l) = self.limit {
            add("limit", &l.to_string());
        }
        if let Some(c) = cursor {
            add("cursor", c);
        }
        q
    }
}

#[derive(Template)]
#[template(path = "list.html")]
struct ListPage<'a> {
    title: &'a str,
    nav: &'a str,
    ledger: &'a str,
    heading: &'a str,
    explain: &'a str,
    kind: &'a str,
    states: Vec<(&'a str, &'a str, bool)>,
    task: String,
    filtered: bool,
    rows: Vec<view::Row>,
    empty: String,
    other_href: Option<String>,
    other_label: &'a str,
    newest_href: Option<String>,
    older_href: Option<String>,
}

async fn list(
    State(shared): State<Arc<Shared>>,
    Query(pairs): Query<Vec<(String, String)>>,
) -> Response {
    let q = match ListQuery::parse(&pairs) {
        Ok(q) => q,
        Err(BadFilter(why)) => {
            return error_page(&shared, StatusCode::BAD_REQUEST, "Bad filter", &why);
        }
    };
    let filter = q.filter();
    let other_kind = if q.kind == "gate" { "verify" } else { "gate" };
    let listing = read(&shared, move |d| {
        let page = d.list(&filter)?;
        // An empty list says where the decisions are, when they are of the other kind.
        let other = page.items.is_empty()
            && !d
                .list(&ListFilter {
                    kind: Some(other_kind.into()),
                    limit: Some(1),
                    ..ListFilter::default()
                })?
                .items
                .is_empty();
        Ok((page, other))
    })
    .await;
    let (page_, other_exists) = match listing {
        Ok(l) => l,
        Err(r) => return r,
    };
    let rows: Vec<view::Row> = page_.items.iter().map(view::row).collect();
    let filtered = q.state.is_some() || q.task.is_some();
    let (heading, explain, other_label) = if q.kind == "gate" {
        (
            "Gate decisions",
            "Claims decided under an owner's contract: evident ran the contract's checks against the world and decided from what it observed.",
            "Verify decisions →",
        )
    } else {
        (
            "Verify decisions",
            "Claim documents decided from the evidence they carried, under the policy of whoever asked: evident observed nothing itself.",
            "Gate decisions →",
        )
    };
    let empty = if filtered {
        "No decision matches this filter.".to_string()
    } else if q.cursor.is_some() {
        "No older decisions.".to_string()
    } else {
        format!("No {} decisions recorded yet.", q.kind)
    };
    let mut states = vec![("", "any", q.state.is_none())];
    states.extend(
        STATES
            .iter()
            .map(|s| (*s, *s, q.state.as_deref() == Some(*s))),
    );
    page(
        StatusCode::OK,
        ListPage {
            title: heading,
            nav: q.kind,
            ledger: shared.decisions.location(),
            heading,
            explain,
            kind: q.kind,
            states,
            task: q
                .task
                .as_deref()
                .map(|t| text::line(t, 200))
                .unwrap_or_default(),
            filtered,
            rows,
            empty,
            other_href: (other_exists && !filtered).then(|| format!("/?kind={other_kind}")),
            other_label,
            newest_href: q.cursor.is_some().then(|| q.href(None)),
            older_href: page_.next_cursor.as_deref().map(|c| q.href(Some(c))),
        }
        .render(),
    )
}

#[derive(Template)]
#[template(path = "decision.html")]
struct DecisionPage<'a> {
    title: &'a str,
    nav: &'a str,
    ledger: &'a str,
    back_href: String,
    back_label: &'a str,
    view: view::Explained,
}

/// A decision is named by its record id (`42`, or `#42` as `evident log` prints it).
fn record_id(key: &str) -> Option<u64> {
    let digits = key.strip_prefix('#').unwrap_or(key);
    if digits.is_empty() || digits.len() > 19 || !digits.bytes().all(|b| b.is_ascii_digit()) {
        return None;
    }
    digits.parse().ok().filter(|id| *id > 0)
}

async fn decision(State(shared): State<Arc<Shared>>, Path(key): Path<String>) -> Response {
    let Some(id) = record_id(&key) else {
        return error_page(
            &shared,
            StatusCode::NOT_FOUND,
            "No such decision",
            "a decision is named by its record id, a whole number (as evident log prints it)",
        );
    };
    let found = read(&shared, move |d| {
        let view = d.get(id)?;
        let prev = if id == 1 {
            view::Prev::Genesis
        } else {
            match d.get(id - 1) {
                Ok(p) => view::Prev::Hash(p.hash),
                Err(e) => view::Prev::Unreadable(e.to_string()),
            }
        };
        Ok((view, prev))
    })
    .await;
    let (found, prev) = match found {
        Ok(f) => f,
        Err(r) => return r,
    };
    page(
        StatusCode::OK,
        decision_html(&found, &prev, &shared.options, shared.decisions.location()),
    )
}

/// The decision page (and what is known of the record before it).
fn decision_html(
    d: &evident_pipeline::view::DecisionView,
    prev: &view::Prev,
    options: &Options,
    location: &str,
) -> Result<String, askama::Error> {
    let view = view::decision(d, prev, options.trust.as_ref());
    let title = format!("#{} {} {}", view.id, view.state, view.task);
    let nav = if view.is_verify { "verify" } else { "gate" };
    DecisionPage {
        title: &text::line(&title, text::SHORT),
        nav,
        ledger: location,
        back_href: format!("/?kind={nav}"),
        back_label: if view.is_verify {
            "Verify decisions"
        } else {
            "Gate decisions"
        },
        view,
    }
    .render()
}

#[cfg(test)]
mod tests {
    use super::*;
    use evident_pipeline::view::DecisionView;
    use serde_json::{Value, json};

    /// A real record: the refuted billing-4472 gate decision, as `evident show --json`
    /// printed it.
    fn refuted_json() -> Value {
        serde_json::from_str(include_str!("../tests/data/refuted-record.json")).unwrap()
    }

    /// The decision the read side serves for a record given as JSON (its hash
    /// recomputed, as the ledger would have written it).
    fn served(mut v: Value) -> DecisionView {
        let m = v.as_object_mut().unwrap();
        m.shift_remove("hash");
        let sig = m.shift_remove("signature");
        let body = evident_sign::canonical_json(&v);
        let hash = evident_ledger::record::hash_body(&body);
        let rec = evident_ledger::Record::from_body(
            &body,
            &hash,
            sig.map(|s| evident_sign::canonical_json(&s)).as_deref(),
        )
        .unwrap();
        DecisionView::from_record(&rec)
    }

    fn render(d: &DecisionView) -> String {
        let prev = view::Prev::Hash(d.prev_hash.clone());
        decision_html(d, &prev, &Options::default(), "ledger.db").unwrap()
    }

    /// The whole page for a real record against the file in `tests/snapshots/`; with
    /// `EVIDENT_WEB_BLESS=1` the file is rewritten (then review its diff).
    #[test]
    fn the_refuted_decision_page_matches_its_snapshot() {
        let html = render(&served(refuted_json()));
        let path = concat!(env!("CARGO_MANIFEST_DIR"), "/tests/snapshots/refuted.html");
        if std::env::var_os("EVIDENT_WEB_BLESS").is_some() {
            std::fs::write(path, &html).unwrap();
        }
        let want = std::fs::read_to_string(path).unwrap_or_default();
        assert!(
            html == want,
            "the page differs from {path}; run with EVIDENT_WEB_BLESS=1 and review the diff"
        );
    }

    #[test]
    fn a_secret_the_ledger_did_not_scrub_never_reaches_the_page() {
        // As if written by an older writer that did not redact.
        let mut v = refuted_json();
        v["claim"]["evidence"][1]["observed_value"]["db_password"] = json!("hunter2-secret");
        v["claim"]["task"]["description"] =
            json!("use postgres://app:pa55w0rd-secret@db/prod and Bearer abcdefghijklmnop-secret");
        v["verdict"]["reason"] = json!("Refuted: token=Bearer tok-secret-123456");
        let html = render(&served(v));
        assert!(!html.contains("-secret"), "a secret on the page");
        assert!(html.contains("[redacted]"));
    }

    #[test]
    fn a_held_out_check_stays_held_out_on_the_page() {
        let mut v = refuted_json();
        v["contract"]["check"][0]["hidden"] = json!(true);
        let html = render(&served(v));
        // The agent's own readback (not the check) still shows its 10001; the gate's
        // observation of the held-out check, its query and its id do not show.
        assert!(
            !html.contains("10002"),
            "a held-out observation on the page"
        );
        assert!(
            !html.contains("SELECT billing_zip"),
            "a held-out target on the page"
        );
        assert!(
            !html.contains("zip-4472"),
            "a held-out check's id on the page"
        );
        assert!(html.contains("held-out-1"));
        assert!(html.contains("held-out check: what it expects and observes is not shown"));
        assert!(
            html.contains("id=\"state\">refuted<"),
            "the verdict still shows"
        );
    }

    #[test]
    fn a_record_that_does_not_read_back_is_shown_not_explained() {
        for (field, bad) in [
            ("verdict", json!({"state": "verified"})),
            ("claim", json!({"spec_version": "9"})),
            ("claim", json!("<script>x</script>")),
        ] {
            let mut v = refuted_json();
            v[field] = bad;
            let html = render(&served(v));
            assert!(html.contains("id=\"unreadable\""), "{field}");
            assert!(!html.contains("<section id=\"timeline\">"), "{field}");
            assert!(html.contains("id=\"record-hash\""), "{field}");
            assert!(!html.contains("<script>x"), "{field}");
        }
    }

    #[test]
    fn a_broken_link_and_an_untrusted_signature_are_called_so() {
        let d = served(refuted_json());
        let html = decision_html(
            &d,
            &view::Prev::Hash("0".repeat(64)),
            &Options::default(),
            "l",
        )
        .unwrap();
        assert!(html.contains("does not follow record #1"));
        assert!(html.contains("status bad"));
        let trust = evident_sign::TrustList {
            verifiers: vec![evident_sign::Key::from_seed("gate", [1; 32]).trusted()],
        };
        let html = decision_html(
            &d,
            &view::Prev::Genesis,
            &Options { trust: Some(trust) },
            "l",
        )
        .unwrap();
        assert!(html.contains("not signed: whoever appended it had no key the trust list names"));
        assert!(html.contains("its prev_hash is not the genesis value"));
    }

    /// The refuted record with `n` evidence items and `n` mutations of the agent's own
    /// written before everything else (self-attested, so never counted), the findings
    /// renumbered as the verdict would have numbered them.
    fn padded(n: usize) -> Value {
        let mut v = refuted_json();
        let at = v["claim"]["mutations"][0]["at"].clone();
        let pads: Vec<Value> = (0..n)
            .map(|i| {
                json!({"at": at, "check_type": "state_readback", "check_id": format!("pad-{i}"),
                    "covers": [format!("pad{i}")], "expected": {"ok": true}, "observed_value": {"ok": true},
                    "target": format!("notes/{i}"), "verifier": {"id": "agent", "kind": "self_attested"}})
            })
            .collect();
        let muts: Vec<Value> = (0..n)
            .map(|i| json!({"id": format!("pad{i}"), "kind": "state_write", "target": format!("notes/{i}"), "at": at}))
            .collect();
        let c = &mut v["claim"];
        let ev = c["evidence"].as_array_mut().unwrap();
        ev.splice(0..0, pads);
        let ms = c["mutations"].as_array_mut().unwrap();
        ms.splice(0..0, muts);
        let findings = v["verdict"]["findings"].as_array_mut().unwrap();
        for f in findings.iter_mut() {
            f["evidence"] = json!(f["evidence"].as_u64().unwrap() as usize + n);
        }
        let pads: Vec<Value> = (0..n)
            .map(|i| json!({"check_type": "state_readback", "code": "self_attested", "evidence": i, "used": false,
                "detail": "self-attested by \"agent\": recorded, never counted"}))
            .collect();
        findings.splice(0..0, pads);
        v
    }

    /// The part of the page that draws the decision (not the folded raw JSON).
    fn drawn(html: &str) -> &str {
        &html[..html.find("<section id=\"record\">").unwrap_or(html.len())]
    }

    #[test]
    fn a_claim_padded_with_its_own_items_does_not_push_the_gates_checks_off_the_page() {
        // The attack: 250 items and mutations of the agent's own before the gate's.
        let html = render(&served(padded(250)));
        let page = drawn(&html);
        assert!(
            page.contains("<code>zip-4472</code>"),
            "the gate's check is not drawn"
        );
        assert!(page.contains("class=\"check contradicts\""));
        assert!(page.contains("class=\"cell contradicts\""));
        assert!(
            page.contains("mutation m1"),
            "the claimed mutation is not drawn"
        );
        assert!(page.contains("[253] state_readback zip-4472 (after)"));
        assert!(page.contains("Not drawn: 52 more mutation(s) and 54 more evidence item(s)"));
        // Its honest twin: a record under the limit is drawn whole, in its order.
        let html = render(&served(padded(150)));
        let page = drawn(&html);
        assert!(!page.contains("Not drawn:"));
        let first = page.find("id=\"evidence-0\"").unwrap();
        let last = page.find("id=\"evidence-153\"").unwrap();
        assert!(first < last && page.contains("<code>pad-149</code>"));
    }

    #[test]
    fn a_page_stays_bounded_whatever_the_document_holds() {
        // The attack: 200 mutations x 200 items that cover them all, each item's
        // finding a 400-character sentence, each expecting 150 keys with long values.
        let mut v = refuted_json();
        let at = v["claim"]["mutations"][0]["at"].clone();
        let ids: Vec<String> = (0..200).map(|i| format!("m{i}")).collect();
        v["claim"]["mutations"] = json!(
            ids.iter()
                .map(|id| json!({"id": id, "kind": "state_write", "target": "t", "at": at}))
                .collect::<Vec<_>>()
        );
        let keys: serde_json::Map<String, Value> = (0..150)
            .map(|k| (format!("k{k}"), json!("v".repeat(300))))
            .collect();
        let mut items = Vec::new();
        let mut findings = Vec::new();
        for i in 0..200 {
            items.push(
                json!({"at": at, "check_type": "state_readback", "covers": ids, "expected": keys,
                "observed_value": {}, "verifier": {"id": "agent", "kind": "self_attested"}}),
            );
            findings.push(json!({"check_type": "state_readback", "code": "self_attested", "evidence": i, "used": false, "detail": "x".repeat(400)}));
        }
        v["claim"]["evidence"] = json!(items);
        v["verdict"]["findings"] = json!(findings);
        let html = render(&served(v));
        assert!(html.len() < 10_000_000, "the page is {} bytes", html.len());
        assert!(html.contains("more expected key(s)"));
        let coverage = &html[html.find("<section id=\"coverage\">").unwrap()
            ..html.find("<section id=\"checks\">").unwrap()];
        assert_eq!(
            coverage.matches(&"x".repeat(400)).count(),
            200,
            "the sentence once per row"
        );
        // Its honest twin: a differing key among many is drawn; a small item whole.
        let mut v = refuted_json();
        let mut keys: serde_json::Map<String, Value> =
            (0..500).map(|k| (format!("k{k}"), json!(k))).collect();
        let observed = keys.clone();
        keys.insert("zz_differs".into(), json!("expected-value"));
        v["claim"]["evidence"][0]["expected"] = Value::Object(keys);
        let mut observed = observed;
        observed.insert("zz_differs".into(), json!("observed-value"));
        v["claim"]["evidence"][0]["observed_value"] = Value::Object(observed);
        let html = render(&served(v));
        assert!(html.contains("<code>zz_differs</code>") && html.contains("differs</td>"));
        assert!(html.contains("Not drawn: 401 more expected key(s)"));
        let html = render(&served(refuted_json()));
        assert!(!html.contains("more expected key(s)"));
        assert!(html.contains("<span class=\"why\">billing_zip expected"));
    }

    #[test]
    fn the_agents_task_id_never_takes_the_verdicts_heading() {
        // The attack: a task id that reads as a verdict, long enough to fill the panel.
        let mut v = refuted_json();
        let fake = " VERIFIED ✓ all checks satisfied".repeat(100);
        v["task_id"] = json!(format!("billing-4472{fake}"));
        v["claim"]["task"]["id"] = v["task_id"].clone();
        let html = render(&served(v));
        let h1 = &html[html.find("<h1>").unwrap()..html.find("</h1>").unwrap()];
        assert!(
            !h1.contains("VERIFIED"),
            "the task id is in the heading: {h1}"
        );
        let line = &html[html.find("id=\"task\">").unwrap()..];
        let line = &line[..line.find("</code>").unwrap()];
        assert!(
            line.chars().count() < 140,
            "the verdict panel's task is {line}"
        );
        assert!(html.find("id=\"reason\"").unwrap() < html.find("id=\"task\"").unwrap());
        // Its honest twin: the task id is still shown, whole up to 4,000 characters,
        // in the summary.
        let html = render(&served(refuted_json()));
        assert!(html.contains("<code id=\"task\">billing-4472</code>"));
        assert!(html.contains("<dt>Task</dt><dd class=\"wrap\">billing-4472</dd>"));
    }

    #[test]
    fn a_signature_the_verdict_did_not_accept_is_not_called_signed() {
        // The attack: any bytes as the signature of the agent's own item.
        let mut v = refuted_json();
        v["claim"]["evidence"][0]["signature"] = json!({"keyid": "evident-gate", "sig": "AAAA"});
        let html = render(&served(v.clone()));
        assert!(
            !html.contains(", signed)"),
            "an unchecked signature reads as signed"
        );
        assert!(html.contains("(independent; carries a signature the verdict did not accept)"));
        // Its honest twin: an item the verdict used (here as if its signature verified).
        v["verdict"]["findings"][0]["used"] = json!(true);
        let html = render(&served(v));
        assert!(html.contains("(independent; signature accepted by the verdict)"));
    }

    #[test]
    fn an_invisible_character_in_a_task_id_is_shown() {
        // The attack: `billing\u{200b}-4472` reads as the real task.
        let mut v = refuted_json();
        v["task_id"] = json!("billing\u{200b}-4472");
        v["claim"]["task"]["id"] = v["task_id"].clone();
        let html = render(&served(v));
        assert!(!html.contains('\u{200b}'));
        assert!(html.contains("billing\\u{200b}-4472"));
        // Its honest twin: the real id as written.
        let html = render(&served(refuted_json()));
        assert!(html.contains(">billing-4472<"));
    }

    proptest::proptest! {
        #![proptest_config(proptest::prelude::ProptestConfig::with_cases(64))]
        /// Any text in any agent-written field: the page renders, and no element but
        /// the page's own comes of it.
        #[test]
        fn any_agent_text_renders_as_text(t in "\\PC{0,40}", tag in "<(zq[a-z]{0,4}|img|iframe|svg)[ />]") {
            let text = format!("{t}{tag}{t}\"'&");
            let mut v = refuted_json();
            v["task_id"] = json!(text);
            v["claim"]["task"]["id"] = json!(text);
            v["claim"]["claimed_outcome"] = json!(text);
            v["claim"]["mutations"][0]["target"] = json!(text);
            v["claim"]["evidence"][1]["target"] = json!(text);
            v["claim"]["evidence"][1]["check_id"] = json!(text);
            v["claim"]["evidence"][1]["observed_value"][text.clone()] = json!(text);
            v["claim"]["evidence"][1]["expected"][text.clone()] = json!(text);
            v["verdict"]["reason"] = json!(text);
            v["verdict"]["findings"][1]["detail"] = json!(text);
            let html = render(&served(v));
            proptest::prop_assert!(!html.contains(&tag), "{} reached the page", tag);
            proptest::prop_assert_eq!(html.matches("<script").count(), 1);
        }

        /// Any JSON in place of the decided document or the verdict: a page, never a
        /// panic.
        #[test]
        fn any_document_renders(n in 0u8..6, s in "\\PC{0,20}") {
            let junk = match n {
                0 => json!(null),
                1 => json!(s),
                2 => json!([s, 1, {"a": s}]),
                3 => json!({"evidence": [{"at": s}], "mutations": "x"}),
                4 => json!({"findings": [{"evidence": 99, "code": "satisfies"}]}),
                _ => json!(-1),
            };
            for field in ["claim", "verdict"] {
                let mut v = refuted_json();
                v[field] = junk.clone();
                let html = render(&served(v));
                proptest::prop_assert!(html.contains("id=\"record-hash\""));
            }
        }
    }

    fn q(pairs: &[(&str, &str)]) -> Result<ListQuery, BadFilter> {
        let owned: Vec<(String, String)> = pairs
            .iter()
            .map(|(k, v)| (k.to_string(), v.to_string()))
            .collect();
        ListQuery::parse(&owned)
    }

    #[test]
    fn the_list_query_keeps_kinds_apart_and_its_links_are_encoded() {
        let d = q(&[]).unwrap();
        assert_eq!((d.kind, d.state.as_deref(), d.limit), ("gate", None, None));
        assert_eq!(d.filter().kind.as_deref(), Some("gate"), "never both kinds");
        assert!(q(&[("kind", "hook")]).unwrap_err().0.starts_with("kind:"));
        assert!(q(&[("limit", "-1")]).unwrap_err().0.starts_with("limit:"));
        assert!(q(&[("task", &"x".repeat(201))]).is_err());
        let last = q(&[("state", "verified"), ("state", "refuted")]).unwrap();
        assert_eq!(last.state.as_deref(), Some("refuted"));
        let t = q(&[("kind", "verify"), ("task", "a&b \"c\""), ("limit", "5")]).unwrap();
        assert_eq!(
            t.href(Some("b7")),
            "/?kind=verify&task=a%26b%20%22c%22&limit=5&cursor=b7"
        );
    }

    #[test]
    fn decisions_are_named_by_record_id() {
        assert_eq!(record_id("42"), Some(42));
        assert_eq!(record_id("#42"), Some(42));
        for bad in [
            "0",
            "",
            "#",
            "../etc",
            "1e3",
            "-1",
            "18e130a0",
            &"9".repeat(20),
        ] {
            assert_eq!(record_id(bad), None, "{bad}");
        }
    }
}
