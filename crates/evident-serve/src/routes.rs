//! The routes, the access rules, and gate jobs.

use crate::problem::Problem;
use crate::{App, Caller, split_host};
use axum::Router;
use axum::body::Body;
use axum::extract::{MatchedPath, Path, Query, RawQuery, Request, State};
use axum::http::{HeaderMap, HeaderValue, StatusCode, header};
use axum::middleware::{self, Next};
use axum::response::{IntoResponse, Response};
use axum::routing::{get, post};
use evident_format::Claim;
use evident_pipeline::catalog::{CatalogError, Served};
use evident_pipeline::view::{DecisionView, Query as DecisionQuery, ReadError};
use evident_pipeline::{Origin, Recording};
use evident_sign::TrustList;
use schemars::JsonSchema;
use serde::Serialize;
use sha2::{Digest as _, Sha256};
use std::collections::{HashMap, VecDeque};
use std::sync::atomic::Ordering;
use std::time::{Duration, Instant};
use tokio::sync::watch;

/// A decision just made, or why not.
type Outcome = Result<DecisionView, Problem>;
/// How a job ended, as the job table keeps it: the record's id (the decision itself is
/// read back from the ledger), so finished jobs hold no documents in memory.
type Done = Result<u64, Problem>;

/// Most jobs remembered (for polling and Idempotency-Key); the oldest finished ones
/// are forgotten first.
const MAX_JOBS: usize = 10_000;
/// How long a finished job (and its Idempotency-Key) is remembered.
const JOB_TTL: Duration = Duration::from_secs(24 * 3600);
/// Longest Idempotency-Key.
const MAX_KEY: usize = 200;

pub(crate) fn router(app: App, extra: Router) -> Router {
    let api = Router::new()
        .route("/healthz", get(healthz))
        .route("/metrics", get(metrics))
        .route("/openapi.json", get(openapi))
        .route("/v1/verify", post(verify))
        .route("/v1/gate/{contract}", post(gate))
        .route("/v1/contracts", get(contracts))
        .route("/v1/contracts/{name}", get(contract))
        .route("/v1/decisions", get(decisions))
        .route("/v1/decisions/{id}", get(decision))
        .route("/v1/jobs/{id}", get(job))
        .route_layer(middleware::from_fn_with_state(app.clone(), deadline))
        .with_state(app.clone());
    // Routes mounted beside the API read their own bodies (/mcp: the MCP SDK), so
    // they get the deadline `read_json_body` gives ours here.
    let extra = extra.layer(middleware::from_fn_with_state(app.clone(), body_deadline));
    api.merge(extra)
        .fallback(not_found)
        .method_not_allowed_fallback(method_not_allowed)
        .route_layer(middleware::from_fn_with_state(app.clone(), measure))
        .layer(axum::extract::DefaultBodyLimit::max(app.0.cfg.body_limit))
        .layer(middleware::from_fn_with_state(app.clone(), host_check))
        .layer(middleware::map_response(safe_headers))
}

/// A JSON view holds the agent's strings (a task id with markup): a browser must
/// never render, sniff, frame or cache it. Headers a route set itself (the page's
/// own CSP, its assets' caching) are kept.
async fn safe_headers(mut response: Response) -> Response {
    let h = response.headers_mut();
    for (name, value) in [
        (header::X_CONTENT_TYPE_OPTIONS, "nosniff"),
        (
            header::CONTENT_SECURITY_POLICY,
            "default-src 'none'; frame-ancestors 'none'",
        ),
        (header::CACHE_CONTROL, "no-store"),
    ] {
        h.entry(name).or_insert(HeaderValue::from_static(value));
    }
    response
}

// ---- middleware -------------------------------------------------------------------

/// DNS rebinding: a page on another site that resolves its own name to this
/// machine's address sends its own name as `Host`; only the names this server
/// answers to are accepted.
async fn host_check(State(app): State<App>, req: Request, next: Next) -> Response {
    let given = match request_host(&req) {
        Ok(h) => h,
        Err(detail) => {
            app.0
                .metrics
                .request("(host refused)", req.method().as_str(), 400, 0.0);
            return Problem::new(StatusCode::BAD_REQUEST, "ambiguous-host", detail).into_response();
        }
    };
    // A load balancer's health check names the replica by its address; the answer
    // tells a rebinding page nothing.
    let health = req.uri().path() == "/healthz";
    if let Some(hosts) = app.0.hosts.as_ref().filter(|_| !health) {
        let ok = given.as_deref().is_some_and(|h| {
            let (name, port) = split_host(&h.to_ascii_lowercase());
            let port = port.unwrap_or(80);
            hosts
                .iter()
                .any(|(n, p)| *n == name && p.is_none_or(|p| p == port))
        });
        if !ok {
            app.0
                .metrics
                .request("(host refused)", req.method().as_str(), 421, 0.0);
            return Problem::new(
                StatusCode::MISDIRECTED_REQUEST,
                "host-not-served",
                "this server does not answer to that Host (a DNS-rebinding guard); use the address it listens on, or start it with --allow-host NAME",
            )
            .into_response();
        }
    }
    next.run(req).await
}

/// The one host a request names: its `Host` header, or the authority of an
/// absolute-form target (`GET http://name/…`). Two `Host` headers, or a target whose
/// authority is not the `Host`, are refused: a proxy in front may read the other one,
/// so the host check would not be checking what is served.
fn request_host(req: &Request) -> Result<Option<String>, &'static str> {
    let mut all = req.headers().get_all(header::HOST).iter();
    let header = all.next();
    if all.next().is_some() {
        return Err("the request has more than one Host header");
    }
    let header = match header.map(|h| h.to_str()) {
        Some(Ok(h)) => Some(h),
        Some(Err(_)) => return Err("the Host header is not ASCII"),
        None => None,
    };
    let authority = req.uri().authority().map(|a| a.as_str());
    let same = |a: &str, b: &str| {
        let (an, ap) = split_host(&a.to_ascii_lowercase());
        let (bn, bp) = split_host(&b.to_ascii_lowercase());
        an == bn && ap.unwrap_or(80) == bp.unwrap_or(80)
    };
    match (header, authority) {
        (Some(h), Some(a)) if !same(h, a) => {
            Err("the request target names another host than the Host header")
        }
        (h, a) => Ok(h.or(a).map(str::to_string)),
    }
}

/// The request's body must arrive within `--request-timeout` of the request (as
/// `read_json_body` requires of the API's own bodies): a client trickling an upload
/// must not hold a connection for ever.
async fn body_deadline(State(app): State<App>, req: Request, next: Next) -> Response {
    let limit = app.0.cfg.request_timeout;
    let req = req.map(|body| {
        Body::new(DeadlineBody {
            body,
            sleep: Box::pin(tokio::time::sleep(limit)),
        })
    });
    next.run(req).await
}

/// A request body that fails once its deadline passes before its end.
struct DeadlineBody {
    body: Body,
    sleep: std::pin::Pin<Box<tokio::time::Sleep>>,
}

impl http_body::Body for DeadlineBody {
    type Data = axum::body::Bytes;
    type Error = axum::Error;

    fn poll_frame(
        mut self: std::pin::Pin<&mut Self>,
        cx: &mut std::task::Context<'_>,
    ) -> std::task::Poll<Option<Result<http_body::Frame<Self::Data>, Self::Error>>> {
        use std::task::Poll;
        if let Poll::Ready(frame) = std::pin::Pin::new(&mut self.body).poll_frame(cx) {
            return Poll::Ready(frame);
        }
        if self.sleep.as_mut().poll(cx).is_pending() {
            return Poll::Pending;
        }
        Poll::Ready(Some(Err(axum::Error::new(std::io::Error::new(
            std::io::ErrorKind::TimedOut,
            "the body did not arrive within --request-timeout",
        )))))
    }

    fn is_end_stream(&self) -> bool {
        self.body.is_end_stream()
    }

    fn size_hint(&self) -> http_body::SizeHint {
        self.body.size_hint()
    }
}

/// Request count and latency by route.
async fn measure(State(app): State<App>, req: Request, next: Next) -> Response {
    let start = Instant::now();
    let route = req
        .extensions()
        .get::<MatchedPath>()
        .map(|p| p.as_str().to_string())
        .unwrap_or_else(|| "(unmatched)".into());
    let method = req.method().clone();
    let r = next.run(req).await;
    let secs = start.elapsed().as_secs_f64();
    app.0
        .metrics
        .request(&route, method.as_str(), r.status().as_u16(), secs);
    tracing::debug!(%method, %route, status = r.status().as_u16(), ms = secs * 1000.0, "request");
    r
}

/// The per-request deadline (a gate's is its own: the gate deadline).
async fn deadline(State(app): State<App>, req: Request, next: Next) -> Response {
    let is_gate = req
        .extensions()
        .get::<MatchedPath>()
        .is_some_and(|p| p.as_str() == "/v1/gate/{contract}");
    if is_gate {
        return next.run(req).await;
    }
    let limit = app.0.cfg.request_timeout;
    match tokio::time::timeout(limit, next.run(req)).await {
        Ok(r) => r,
        Err(_) => Problem::new(
            StatusCode::SERVICE_UNAVAILABLE,
            "deadline",
            format!(
                "the request took longer than its deadline ({} s)",
                limit.as_secs_f64()
            ),
        )
        .into_response(),
    }
}

pub(crate) async fn token_layer(State(app): State<App>, mut req: Request, next: Next) -> Response {
    match app.write_caller(req.headers()) {
        Ok(name) => {
            req.extensions_mut().insert(Caller(Some(name)));
            next.run(req).await
        }
        Err(p) => p.into_response(),
    }
}

pub(crate) async fn read_layer(State(app): State<App>, mut req: Request, next: Next) -> Response {
    match app.read_caller(req.headers()) {
        Ok(name) => {
            req.extensions_mut().insert(Caller(name));
            next.run(req).await
        }
        Err(p) => p.into_response(),
    }
}

// ---- access ------------------------------------------------------------------------

/// A gate admitted to the queue (counted in `evident_gates_queued` until it gets a
/// slot or is dropped).
pub struct GateTicket {
    app: App,
    counted: bool,
}

impl GateTicket {
    /// Waits for one of the `--gate-concurrency` slots.
    pub async fn slot(mut self) -> Result<tokio::sync::OwnedSemaphorePermit, Problem> {
        let permit = self.app.0.gate_slots.clone().acquire_owned().await;
        self.uncount();
        permit.map_err(|_| Problem::internal("the gate slots are closed"))
    }

    fn uncount(&mut self) {
        if std::mem::take(&mut self.counted) {
            self.app
                .0
                .metrics
                .gates_queued
                .fetch_sub(1, Ordering::Relaxed);
        }
    }
}

impl Drop for GateTicket {
    fn drop(&mut self) {
        self.uncount();
    }
}

impl App {
    /// Admits a gate to the queue, or 503 `busy` when `--gate-queue` gates already
    /// wait for a slot. Every gate of this server — `POST /v1/gate` and MCP's
    /// `submit_claim` at `/mcp` — is admitted here, so one client cannot pile up
    /// more waiting gates through one surface than through the other.
    pub fn queue_gate(&self) -> Result<GateTicket, Problem> {
        let queued = &self.0.metrics.gates_queued;
        if queued.fetch_add(1, Ordering::Relaxed) >= self.0.cfg.gate_queue as i64 {
            queued.fetch_sub(1, Ordering::Relaxed);
            let mut p = Problem::new(
                StatusCode::SERVICE_UNAVAILABLE,
                "busy",
                "too many gates are waiting for a slot; retry later",
            );
            p.retry_after = Some(5);
            return Err(p);
        }
        Ok(GateTicket {
            app: self.clone(),
            counted: true,
        })
    }

    /// A slot to parse and decide a claim in, waited for at most `verify_wait`: many
    /// large claims at once must not starve the machine (503 `busy` past the wait).
    /// MCP's `submit_claim` at `/mcp` takes the same slots.
    pub async fn decide_slot(&self) -> Result<tokio::sync::OwnedSemaphorePermit, Problem> {
        let slots = self.0.decide_slots.clone();
        match tokio::time::timeout(self.0.cfg.verify_wait, slots.acquire_owned()).await {
            Ok(Ok(permit)) => Ok(permit),
            Ok(Err(_)) => Err(Problem::internal("the decision slots are closed")),
            Err(_) => {
                let mut p = Problem::new(
                    StatusCode::SERVICE_UNAVAILABLE,
                    "busy",
                    format!(
                        "{} claims are being decided already (--verify-concurrency); retry later",
                        self.0.cfg.verify_concurrency
                    ),
                );
                p.retry_after = Some(1);
                Err(p)
            }
        }
    }

    /// The token's name; absent → `Ok(None)`; present but unknown → 401.
    fn token(&self, headers: &HeaderMap) -> Result<Option<String>, Problem> {
        let mut values = headers.get_all(header::AUTHORIZATION).iter();
        let Some(value) = values.next() else {
            return Ok(None);
        };
        let unauthorized = |detail: &str| {
            let mut p = Problem::new(StatusCode::UNAUTHORIZED, "unauthorized", detail);
            p.challenge = true;
            p
        };
        if values.next().is_some() {
            return Err(unauthorized("send one Authorization header"));
        }
        let Some(token) = crate::auth::bearer(value.as_bytes()) else {
            return Err(unauthorized(
                "Authorization must be `Bearer <token>` (a token from `evident token new`)",
            ));
        };
        match self.0.cfg.tokens.check(token) {
            Some(name) => Ok(Some(name.to_string())),
            None => Err(unauthorized("the token is not known to this server")),
        }
    }

    pub(crate) fn write_caller(&self, headers: &HeaderMap) -> Result<String, Problem> {
        match self.token(headers)? {
            Some(name) => Ok(name),
            None => {
                let mut p = Problem::new(
                    StatusCode::UNAUTHORIZED,
                    "unauthorized",
                    if self.0.cfg.tokens.is_empty() {
                        "this route needs `Authorization: Bearer <token>`, and this server has no tokens (start it with --tokens FILE; `evident token new NAME` makes one)"
                    } else {
                        "this route needs `Authorization: Bearer <token>`"
                    },
                );
                p.challenge = true;
                Err(p)
            }
        }
    }

    pub(crate) fn read_caller(&self, headers: &HeaderMap) -> Result<Option<String>, Problem> {
        let who = self.token(headers)?;
        if who.is_none() && !self.0.open_reads {
            let mut p = Problem::new(
                StatusCode::UNAUTHORIZED,
                "unauthorized",
                "this server does not listen on a loopback address, so reads need `Authorization: Bearer <token>` too",
            );
            p.challenge = true;
            return Err(p);
        }
        Ok(who)
    }
}

// ---- small handlers ----------------------------------------------------------------

async fn not_found() -> Response {
    Problem::new(
        StatusCode::NOT_FOUND,
        "not-found",
        "no such route (GET /openapi.json lists them)",
    )
    .into_response()
}

async fn method_not_allowed() -> Response {
    Problem::new(
        StatusCode::METHOD_NOT_ALLOWED,
        "method-not-allowed",
        "this route does not take that method (GET /openapi.json lists them)",
    )
    .into_response()
}

/// `GET /healthz`.
#[derive(Debug, Serialize, JsonSchema)]
pub struct Health {
    /// `ok`.
    pub status: String,
    /// evident's version.
    pub version: String,
}

async fn healthz() -> axum::Json<Health> {
    axum::Json(Health {
        status: "ok".into(),
        version: env!("CARGO_PKG_VERSION").into(),
    })
}

async fn metrics(State(app): State<App>, headers: HeaderMap) -> Response {
    if let Err(p) = app.read_caller(&headers) {
        return p.into_response();
    }
    (
        [(
            header::CONTENT_TYPE,
            HeaderValue::from_static("text/plain; version=0.0.4; charset=utf-8"),
        )],
        app.0.metrics.render(),
    )
        .into_response()
}

async fn openapi(State(app): State<App>) -> Response {
    (
        [(
            header::CONTENT_TYPE,
            HeaderValue::from_static("application/json"),
        )],
        app.0.openapi.clone(),
    )
        .into_response()
}

/// `GET /v1/contracts`.
#[derive(Debug, Serialize, JsonSchema)]
pub struct ContractList {
    /// Every served contract, by name.
    pub items: Vec<evident_pipeline::catalog::ContractSummary>,
}

async fn contracts(State(app): State<App>, headers: HeaderMap) -> Response {
    if let Err(p) = app.read_caller(&headers) {
        return p.into_response();
    }
    let a = app.clone();
    let items = tokio::task::spawn_blocking(move || {
        a.0.catalog
            .list(&|e| tracing::warn!(error = %e, "contract does not load"))
    })
    .await
    .unwrap_or_default();
    json(StatusCode::OK, &ContractList { items })
}

fn catalog_problem(e: &CatalogError) -> Problem {
    match e {
        CatalogError::BadName(_) => {
            let mut p = Problem::new(
                StatusCode::BAD_REQUEST,
                "invalid-contract-name",
                e.to_string(),
            );
            p.parameter = Some("contract".into());
            p
        }
        CatalogError::NotFound(_) => Problem::new(
            StatusCode::NOT_FOUND,
            "unknown-contract",
            format!("{e} (GET /v1/contracts lists them)"),
        ),
        CatalogError::Ambiguous(_) | CatalogError::Invalid { .. } => {
            tracing::error!(error = %e, "contract does not load");
            Problem::internal("the contract does not load")
        }
    }
}

async fn load_contract(app: &App, name: String) -> Result<Served, Problem> {
    let a = app.clone();
    match tokio::task::spawn_blocking(move || a.0.catalog.load(&name)).await {
        Ok(r) => r.map_err(|e| catalog_problem(&e)),
        Err(_) => Err(Problem::internal("reading the contract failed")),
    }
}

async fn contract(
    State(app): State<App>,
    headers: HeaderMap,
    Path(name): Path<String>,
) -> Response {
    if let Err(p) = app.read_caller(&headers) {
        return p.into_response();
    }
    match load_contract(&app, name).await {
        Ok(s) => json(StatusCode::OK, &s.view()),
        Err(p) => p.into_response(),
    }
}

async fn decisions(
    State(app): State<App>,
    headers: HeaderMap,
    query: Result<Query<Vec<(String, String)>>, axum::extract::rejection::QueryRejection>,
) -> Response {
    if let Err(p) = app.read_caller(&headers) {
        return p.into_response();
    }
    let Ok(Query(pairs)) = query else {
        return Problem::parameter("query", "the query string is not form-encoded").into_response();
    };
    let mut q = DecisionQuery::default();
    let mut seen: Vec<&str> = Vec::new();
    for (k, v) in &pairs {
        if seen.contains(&k.as_str()) {
            return Problem::parameter(k, format!("{k} is given twice")).into_response();
        }
        seen.push(k);
        let v = Some(v.clone());
        match k.as_str() {
            "state" => q.state = v,
            "task" => q.task = v,
            "kind" => q.kind = v,
            "since" => q.since = v,
            "cursor" => q.cursor = v,
            "limit" => match v.as_deref().map(str::parse::<u64>) {
                Some(Ok(n)) => q.limit = Some(n),
                _ => {
                    return Problem::parameter(
                        "limit",
                        "limit must be a whole number from 1 to 500",
                    )
                    .into_response();
                }
            },
            other => {
                return Problem::parameter(
                    other,
                    format!(
                        "unknown parameter {other:?}: this route takes state, task, kind, since, limit and cursor"
                    ),
                )
                .into_response();
            }
        }
    }
    let d = app.0.decisions.clone();
    match tokio::task::spawn_blocking(move || d.list(&q)).await {
        Ok(Ok(page)) => json(StatusCode::OK, &page),
        Ok(Err(e)) => read_problem(&e).into_response(),
        Err(_) => Problem::internal("listing failed").into_response(),
    }
}

fn read_problem(e: &ReadError) -> Problem {
    match e {
        ReadError::BadQuery { parameter, message } => {
            Problem::parameter(parameter, message.clone())
        }
        ReadError::NotFound(_) => {
            Problem::new(StatusCode::NOT_FOUND, "unknown-decision", e.to_string())
        }
        ReadError::Ledger(m) => {
            tracing::error!(error = %m, "ledger read failed");
            Problem::new(
                StatusCode::SERVICE_UNAVAILABLE,
                "ledger-unavailable",
                "the ledger cannot be read right now; the server's log says why",
            )
        }
    }
}

async fn decision(State(app): State<App>, headers: HeaderMap, Path(id): Path<String>) -> Response {
    if let Err(p) = app.read_caller(&headers) {
        return p.into_response();
    }
    let Some(id) = parse_id(&id) else {
        let mut p = Problem::new(
            StatusCode::BAD_REQUEST,
            "invalid-parameter",
            "a decision id is the record's number (1, 2, …)",
        );
        p.parameter = Some("id".into());
        return p.into_response();
    };
    let d = app.0.decisions.clone();
    match tokio::task::spawn_blocking(move || d.get(id)).await {
        Ok(Ok(v)) => json(StatusCode::OK, &v),
        Ok(Err(e)) => read_problem(&e).into_response(),
        Err(_) => Problem::internal("reading failed").into_response(),
    }
}

fn parse_id(s: &str) -> Option<u64> {
    if s.is_empty() || s.len() > 19 || !s.bytes().all(|b| b.is_ascii_digit()) {
        return None;
    }
    s.parse().ok().filter(|n| *n > 0 && *n <= i64::MAX as u64)
}

fn json<T: Serialize>(status: StatusCode, v: &T) -> Response {
    match serde_json::to_vec(v) {
        Ok(body) => (
            status,
            [(
                header::CONTENT_TYPE,
                HeaderValue::from_static("application/json"),
            )],
            body,
        )
            .into_response(),
        Err(e) => {
            tracing::error!(error = %e, "cannot serialize a response");
            Problem::internal("the response could not be written").into_response()
        }
    }
}

// ---- writes -------------------------------------------------------------------------

/// Reads a JSON body under the limit.
async fn read_json_body(app: &App, headers: &HeaderMap, body: Body) -> Result<Vec<u8>, Problem> {
    let limit = app.0.cfg.body_limit;
    let ct = headers
        .get(header::CONTENT_TYPE)
        .and_then(|v| v.to_str().ok())
        .unwrap_or("");
    let media = ct
        .split(';')
        .next()
        .unwrap_or("")
        .trim()
        .to_ascii_lowercase();
    let is_json = media == "application/json"
        || (media.starts_with("application/") && media.ends_with("+json"));
    if !is_json {
        return Err(Problem::new(
            StatusCode::UNSUPPORTED_MEDIA_TYPE,
            "unsupported-media-type",
            "send the claim as JSON with `Content-Type: application/json`",
        ));
    }
    let too_large = || {
        Problem::new(
            StatusCode::PAYLOAD_TOO_LARGE,
            "body-too-large",
            format!("the body is larger than this server's limit of {limit} bytes (--body-limit)"),
        )
    };
    if let Some(len) = headers
        .get(header::CONTENT_LENGTH)
        .and_then(|v| v.to_str().ok())
        .and_then(|v| v.parse::<u64>().ok())
        && len > limit as u64
    {
        return Err(too_large());
    }
    // The body must arrive within the request deadline (a gate's route has no other
    // deadline before the gate starts): a client trickling bytes holds nothing for long.
    let read = tokio::time::timeout(app.0.cfg.request_timeout, axum::body::to_bytes(body, limit));
    let Ok(read) = read.await else {
        return Err(Problem::new(
            StatusCode::REQUEST_TIMEOUT,
            "body-too-slow",
            format!(
                "the body did not arrive within {} s",
                app.0.cfg.request_timeout.as_secs_f64()
            ),
        ));
    };
    match read {
        Ok(b) => Ok(b.to_vec()),
        // The limit, or a broken upload.
        Err(e) => {
            if e.into_inner().is::<http_body_util::LengthLimitError>() {
                return Err(too_large());
            }
            Err(Problem::new(
                StatusCode::BAD_REQUEST,
                "body-unreadable",
                "the body could not be read to its end",
            ))
        }
    }
}

/// Deepest claim the service takes (objects and arrays; the document's root is 1).
/// Every answer and record holds the document a level or two down (a decision's
/// `document`, a job's `decision.document`, a record's `claim`) and common JSON
/// readers stop at 128 levels (serde_json): at this depth they all read it back.
pub const MAX_CLAIM_DEPTH: usize = 64;

fn parse_claim(bytes: &[u8]) -> Result<evident_format::ClaimDocument, Problem> {
    let doc = Claim::parse(bytes, "request body").map_err(|e| Problem::invalid_document(&e))?;
    // The document is held as text: its depth is counted there, and only a document
    // too deep is made a value, to name the path.
    if evident_ledger::depth::of_text(doc.raw.as_str()) > MAX_CLAIM_DEPTH
        && let Some(path) = too_deep(&doc.raw.to_value(), MAX_CLAIM_DEPTH)
    {
        return Err(Problem::invalid_document(&evident_format::Error {
            file: "request body".into(),
            pos: doc.spans.nearest(&path),
            path,
            message: format!(
                "nested deeper than {MAX_CLAIM_DEPTH} levels, this server's limit (each decision and record holds the document a level down, and common JSON readers stop at 128)"
            ),
        }));
    }
    Ok(doc)
}

/// The JSON path of the first object or array nested deeper than `max` levels.
pub fn too_deep(v: &serde_json::Value, max: usize) -> Option<String> {
    use evident_format::json::{push_index, push_key};
    use serde_json::Value;
    if evident_ledger::depth::of_value(v) <= max {
        return None;
    }
    let mut stack = vec![(v, 1usize, String::new())];
    while let Some((v, depth, path)) = stack.pop() {
        let children: Vec<(&Value, String)> = match v {
            Value::Array(a) => a
                .iter()
                .enumerate()
                .map(|(i, x)| (x, push_index(&path, i)))
                .collect(),
            Value::Object(m) => m.iter().map(|(k, x)| (x, push_key(&path, k))).collect(),
            _ => continue,
        };
        if depth > max {
            return Some(path);
        }
        stack.extend(children.into_iter().rev().map(|(x, p)| (x, depth + 1, p)));
    }
    None
}

/// [`parse_claim`], on a blocking thread for a large body.
async fn parse_claim_async(bytes: Vec<u8>) -> Result<evident_format::ClaimDocument, Problem> {
    if bytes.len() <= INLINE_BYTES {
        return parse_claim(&bytes);
    }
    tokio::task::spawn_blocking(move || parse_claim(&bytes))
        .await
        .unwrap_or_else(|_| Err(Problem::internal("reading the claim failed")))
}

/// The `Idempotency-Key` header, checked.
fn idempotency_key(headers: &HeaderMap) -> Result<Option<String>, Problem> {
    let mut all = headers.get_all("idempotency-key").iter();
    let Some(v) = all.next() else {
        return Ok(None);
    };
    let bad = || {
        Problem::parameter(
            "Idempotency-Key",
            format!(
                "Idempotency-Key must be one header of 1 to {MAX_KEY} visible ASCII characters"
            ),
        )
    };
    if all.next().is_some() {
        return Err(bad());
    }
    let s = v.to_str().map_err(|_| bad())?;
    if s.is_empty() || s.len() > MAX_KEY || !s.bytes().all(|b| b.is_ascii_graphic()) {
        return Err(bad());
    }
    Ok(Some(s.to_string()))
}

fn parse_wait(q: Option<&str>) -> Result<bool, Problem> {
    let mut wait = true;
    for pair in q.unwrap_or("").split('&').filter(|p| !p.is_empty()) {
        match pair.split_once('=') {
            Some(("wait", "true")) => wait = true,
            Some(("wait", "false")) => wait = false,
            Some(("wait", _)) | None if pair == "wait" || pair.starts_with("wait=") => {
                return Err(Problem::parameter("wait", "wait is true or false"));
            }
            _ => {
                let name = pair.split('=').next().unwrap_or(pair);
                return Err(Problem::parameter(
                    name,
                    format!("unknown parameter {name:?}: this route takes only wait"),
                ));
            }
        }
    }
    Ok(wait)
}

async fn verify(
    State(app): State<App>,
    headers: HeaderMap,
    RawQuery(q): RawQuery,
    body: Body,
) -> Response {
    match verify_inner(app, headers, q, body).await {
        Ok(r) => r,
        Err(p) => p.into_response(),
    }
}

async fn verify_inner(
    app: App,
    headers: HeaderMap,
    q: Option<String>,
    body: Body,
) -> Result<Response, Problem> {
    let caller = app.write_caller(&headers)?;
    if let Some(q) = q.as_deref().filter(|q| !q.is_empty()) {
        let name = q.split(['=', '&']).next().unwrap_or(q);
        return Err(Problem::parameter(
            name,
            format!("unknown parameter {name:?}: this route takes none"),
        ));
    }
    if app.0.cfg.policy.is_none() {
        return Err(Problem::new(
            StatusCode::SERVICE_UNAVAILABLE,
            "no-policy",
            "this server holds no policy to verify under (start it with --policy FILE); a document's own policy is the agent's and never decides here",
        ));
    }
    let key = idempotency_key(&headers)?;
    let bytes = read_json_body(&app, &headers, body).await?;
    let hash: [u8; 32] = Sha256::digest(&bytes).into();
    let bytes_len = bytes.len();
    // The CPU-bound part (parse, decide) holds a slot; the append does not, so group
    // commit still gathers every request waiting for its record.
    let slot = app.decide_slot().await?;
    let document = parse_claim_async(bytes).await?;
    let inline = bytes_len <= INLINE_BYTES;
    let run = decide_verify(app.clone(), document, caller.clone(), inline, slot);
    let Some(key) = key else {
        return run.await.map(|v| json(StatusCode::OK, &v));
    };
    match app.0.jobs.start(&caller, "verify", &key, hash)? {
        Start::Existing(rx) => finish_wait(&app, rx, None).await,
        Start::New(tx, _) => {
            let (first, answer) = tokio::sync::oneshot::channel();
            let a = app.clone();
            a.0.tasks.start();
            tokio::spawn(async move {
                let out = run.await;
                conclude(&tx, first, out);
                a.0.tasks.finish();
            });
            first_answer(&app, answer, None).await
        }
    }
}

/// Tells the job table how a job ended and hands the whole outcome to the request
/// that started it.
fn conclude(
    tx: &watch::Sender<Option<Done>>,
    first: tokio::sync::oneshot::Sender<Outcome>,
    out: Outcome,
) {
    let _ = tx.send(Some(out.as_ref().map(|v| v.id).map_err(Clone::clone)));
    let _ = first.send(out);
}

/// The first request's answer: the outcome, or 504 with where to poll.
async fn first_answer(
    app: &App,
    answer: tokio::sync::oneshot::Receiver<Outcome>,
    href: Option<String>,
) -> Result<Response, Problem> {
    let limit = app.0.cfg.gate_timeout + Duration::from_secs(30);
    match tokio::time::timeout(limit, answer).await {
        Ok(Ok(Ok(view))) => Ok(json(StatusCode::OK, &view)),
        Ok(Ok(Err(p))) => Err(p),
        Ok(Err(_)) => Err(Problem::internal("the job ended without a result")),
        Err(_) => Err(still_running(href)),
    }
}

fn still_running(href: Option<String>) -> Problem {
    let mut p = Problem::new(
        StatusCode::GATEWAY_TIMEOUT,
        "still-running",
        "the gate is still running; poll for its decision",
    );
    p.poll = href;
    p
}

/// A recorded decision by id, as served.
async fn load_view(app: &App, id: u64) -> Result<DecisionView, Problem> {
    let d = app.0.decisions.clone();
    match tokio::task::spawn_blocking(move || d.get(id)).await {
        Ok(Ok(v)) => Ok(v),
        Ok(Err(e)) => Err(read_problem(&e)),
        Err(_) => Err(Problem::internal("reading the decision failed")),
    }
}

/// Claims up to this size are decided on the request's own task (a fraction of a
/// millisecond of CPU); larger ones on a blocking thread, so a 4 MiB claim cannot
/// stall the workers.
const INLINE_BYTES: usize = 64 * 1024;

/// Decides a claim under the server's policy and appends it through the group-commit
/// writer, awaiting its record (no thread blocks on the ledger).
async fn decide_verify(
    app: App,
    document: evident_format::ClaimDocument,
    caller: String,
    inline: bool,
    slot: tokio::sync::OwnedSemaphorePermit,
) -> Outcome {
    let origin = Origin {
        via: "http".into(),
        asked_by: Some(caller),
    };
    let a = app.clone();
    let decide = move || {
        let s = &a.0;
        evident_pipeline::verify(evident_pipeline::VerifyRequest {
            document,
            now: None,
            // Never the agent's word: without the owner's list, an empty one (nothing
            // the document signs or labels independent is authenticated).
            trust: Some(s.cfg.trust.clone().unwrap_or(TrustList {
                verifiers: Vec::new(),
            })),
            policy: s.cfg.policy.clone(),
            on_unverified: None,
            partial: false,
            // Recorded below, asynchronously.
            recording: Recording {
                off: true,
                ..Recording::default()
            },
            key: None,
        })
    };
    let decision = if inline {
        decide()
    } else {
        match tokio::task::spawn_blocking(decide).await {
            Ok(d) => d,
            Err(_) => return Err(Problem::internal("the decision failed")),
        }
    };
    let mut d = match decision {
        Ok(d) => d,
        Err(e) => return finish_decision(&app, Err(e), &origin, None),
    };
    let s = &app.0;
    let recording = Recording {
        origin: Some(origin.clone()),
        ..Recording::default()
    };
    let key = s.cfg.key.as_ref();
    let entry = recording.entry(&d);
    drop(slot);
    let appended = match entry {
        Ok(entry) => s
            .appender
            .append_async(entry, key)
            .await
            .map_err(evident_pipeline::record::RecordError::Ledger),
        Err(e) => Err(e),
    };
    match appended {
        Ok(rec) => {
            d.record = Some(evident_pipeline::Recorded::of(
                &rec,
                s.appender.location(),
                key,
            ));
            finish_decision(&app, Ok(d), &origin, None)
        }
        Err(source) => finish_decision(
            &app,
            Err(evident_pipeline::Error::Record {
                decision: Box::new(d),
                source,
            }),
            &origin,
            None,
        ),
    }
}

impl App {
    /// Counts a decision in `/metrics`: its kind and state, and each check's run time
    /// by source kind (`served`: the contract it ran under). MCP's decisions under serve
    /// are counted here too.
    pub fn count_decision(&self, d: &evident_pipeline::Decision, served: Option<&Served>) {
        self.0
            .metrics
            .decision(d.kind.as_str(), d.verdict.state.as_str());
        let Some(served) = served else { return };
        for run in &d.runs {
            let kind = served
                .document
                .contract
                .checks
                .iter()
                .find(|c| c.id == run.check_id)
                .map_or("unknown", |c| c.source.kind());
            self.0.metrics.probe(kind, run.duration_ms as f64 / 1000.0);
        }
    }
}

fn finish_decision(
    app: &App,
    decision: Result<evident_pipeline::Decision, evident_pipeline::Error>,
    origin: &Origin,
    served: Option<&Served>,
) -> Outcome {
    match decision {
        Ok(d) => {
            app.count_decision(&d, served);
            let view = DecisionView::from_decision(&d, Some(origin))
                .ok_or_else(|| Problem::internal("the decision was not recorded"))?;
            tracing::info!(
                kind = %view.kind,
                state = %d.verdict.state,
                id = view.id,
                task = view.task_id.as_deref().unwrap_or(""),
                contract = view.contract.as_ref().and_then(|c| c.name.as_deref()).unwrap_or(""),
                asked_by = origin.asked_by.as_deref().unwrap_or(""),
                "decided"
            );
            Ok(view)
        }
        Err(evident_pipeline::Error::Record { source, .. }) => {
            tracing::error!(error = %evident_format::Chain(&source), "a decision could not be recorded");
            Err(Problem::new(
                StatusCode::SERVICE_UNAVAILABLE,
                "ledger-unavailable",
                "the decision was made but could not be recorded, so it is not given (a verdict nobody can look up cannot be audited); retry later",
            ))
        }
        Err(e) => {
            tracing::error!(error = %evident_format::Chain(&e), "the pipeline failed");
            Err(Problem::internal("the decision failed"))
        }
    }
}

async fn gate(
    State(app): State<App>,
    headers: HeaderMap,
    Path(name): Path<String>,
    RawQuery(q): RawQuery,
    body: Body,
) -> Response {
    match gate_inner(app, headers, name, q, body).await {
        Ok(r) => r,
        Err(p) => p.into_response(),
    }
}

async fn gate_inner(
    app: App,
    headers: HeaderMap,
    name: String,
    q: Option<String>,
    body: Body,
) -> Result<Response, Problem> {
    let caller = app.write_caller(&headers)?;
    let wait = parse_wait(q.as_deref())?;
    let key = idempotency_key(&headers)?;
    let served = load_contract(&app, name.clone()).await?;
    let bytes = read_json_body(&app, &headers, body).await?;
    let mut hasher = Sha256::new();
    hasher.update(name.as_bytes());
    hasher.update([0]);
    hasher.update(&bytes);
    let hash: [u8; 32] = hasher.finalize().into();
    let claim = {
        let _slot = app.decide_slot().await?;
        parse_claim_async(bytes).await?
    };
    let key = key.unwrap_or_else(|| {
        // No key: a job of its own all the same (polling, shutdown waits for it).
        format!("\0{}", crate::auth::new_token().1)
    });
    let job_id;
    let (rx, first) = match app.0.jobs.start(&caller, "gate", &key, hash)? {
        Start::Existing(rx) => {
            job_id = app.0.jobs.id_of(&caller, "gate", &key);
            (rx, None)
        }
        Start::New(tx, rx) => {
            let ticket = match app.queue_gate() {
                Ok(t) => t,
                Err(p) => {
                    app.0.jobs.forget(&caller, "gate", &key);
                    return Err(p);
                }
            };
            job_id = app.0.jobs.id_of(&caller, "gate", &key);
            let a = app.clone();
            a.0.tasks.start();
            let origin = Origin {
                via: "http".into(),
                asked_by: Some(caller.clone()),
            };
            let (first, answer) = tokio::sync::oneshot::channel();
            tokio::spawn(async move {
                let out = run_gate(&a, ticket, served, claim, origin).await;
                conclude(&tx, first, out);
                a.0.tasks.finish();
            });
            (rx, Some(answer))
        }
    };
    let href = job_id.as_ref().map(|id| format!("/v1/jobs/{id}"));
    if !wait {
        let view = job_view(&app, job_id.as_deref().unwrap_or(""), &rx).await;
        let mut r = json(StatusCode::ACCEPTED, &view);
        if let Some(h) = &href
            && let Ok(v) = HeaderValue::from_str(h)
        {
            r.headers_mut().insert(header::LOCATION, v);
        }
        return Ok(r);
    }
    match first {
        Some(answer) => first_answer(&app, answer, href).await,
        None => finish_wait(&app, rx, href).await,
    }
}

/// Waits for a job another request started (a gate's deadline plus a margin): its
/// decision read back from the ledger, its problem, or 504 with where to poll.
async fn finish_wait(
    app: &App,
    mut rx: watch::Receiver<Option<Done>>,
    href: Option<String>,
) -> Result<Response, Problem> {
    let limit = app.0.cfg.gate_timeout + Duration::from_secs(30);
    let done = match tokio::time::timeout(limit, rx.wait_for(Option::is_some)).await {
        Ok(Ok(v)) => v.clone(),
        Ok(Err(_)) => None,
        Err(_) => return Err(still_running(href)),
    };
    match done {
        Some(Ok(id)) => load_view(app, id).await.map(|v| json(StatusCode::OK, &v)),
        Some(Err(p)) => Err(p),
        None => Err(Problem::internal("the job ended without a result")),
    }
}

async fn run_gate(
    app: &App,
    ticket: GateTicket,
    served: Served,
    claim: evident_format::ClaimDocument,
    origin: Origin,
) -> Outcome {
    let s = &app.0;
    let _permit = ticket.slot().await?;
    // One gate per root at a time: one gate's commands must not change what another's
    // after-readback sees.
    let lock = app.0.catalog.root_lock(&served.root);
    let _root = lock.lock_owned().await;
    s.metrics.gates_running.fetch_add(1, Ordering::Relaxed);
    let a = app.clone();
    let result = tokio::task::spawn_blocking(move || {
        let s = &a.0;
        let settings = evident_gate::Settings {
            jobs: s.cfg.jobs,
            deadline: s.cfg.gate_timeout,
            context: evident_probes::Context::from_process(served.root.clone()),
            verifier_id: evident_gate::verifier_id(),
            progress: None,
            only: None,
        };
        let decision = evident_pipeline::gate(evident_pipeline::GateRequest {
            contract: &served.document,
            contract_name: served.name.clone(),
            claim,
            settings,
            key: s.cfg.key.as_ref(),
            key_path: s.cfg.key_path.as_deref(),
            recording: Recording {
                appender: Some(s.appender.clone()),
                origin: Some(origin.clone()),
                ..Recording::default()
            },
            // TODO: snapshots taken before the agent ran (`gate --before`) are not
            // taken over HTTP yet; a contract with snapshot checks stays unverified.
            before: None,
        });
        finish_decision(&a, decision, &origin, Some(&served))
    })
    .await;
    s.metrics.gates_running.fetch_sub(1, Ordering::Relaxed);
    result.unwrap_or_else(|_| Err(Problem::internal("the gate failed")))
}

// ---- jobs --------------------------------------------------------------------------

/// A gate started with `wait=false` (or any write with an `Idempotency-Key`).
#[derive(Debug, Serialize, JsonSchema)]
pub struct JobView {
    /// The job's id.
    pub id: String,
    /// `running`, `done` or `failed`.
    pub status: String,
    /// Where to poll (`/v1/jobs/{id}`).
    pub href: String,
    /// The decision, once done.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub decision: Option<DecisionView>,
    /// Why it failed.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub problem: Option<Problem>,
}

async fn job_view(app: &App, id: &str, rx: &watch::Receiver<Option<Done>>) -> JobView {
    let done = rx.borrow().clone();
    let (status, decision, problem) = match done {
        None => ("running", None, None),
        Some(Ok(rid)) => match load_view(app, rid).await {
            Ok(v) => ("done", Some(v), None),
            Err(p) => ("failed", None, Some(p)),
        },
        Some(Err(p)) => ("failed", None, Some(p)),
    };
    JobView {
        id: id.to_string(),
        status: status.into(),
        href: format!("/v1/jobs/{id}"),
        decision,
        problem,
    }
}

async fn job(State(app): State<App>, headers: HeaderMap, Path(id): Path<String>) -> Response {
    if let Err(p) = app.read_caller(&headers) {
        return p.into_response();
    }
    match app.0.jobs.get(&id) {
        Some(rx) => json(StatusCode::OK, &job_view(&app, &id, &rx).await),
        None => Problem::new(
            StatusCode::NOT_FOUND,
            "unknown-job",
            "no such job (finished jobs are forgotten after a day, or when a server restarts)",
        )
        .into_response(),
    }
}

pub(crate) enum Start {
    /// The first request with this key: run it and send the outcome.
    New(watch::Sender<Option<Done>>, watch::Receiver<Option<Done>>),
    /// A retry: the first request's job.
    Existing(watch::Receiver<Option<Done>>),
}

struct Job {
    rx: watch::Receiver<Option<Done>>,
    at: Instant,
}

#[derive(Default)]
struct JobsInner {
    by_id: HashMap<String, Job>,
    /// (caller, route, key) → (request hash, job id).
    by_key: HashMap<(String, String, String), ([u8; 32], String)>,
    order: VecDeque<String>,
}

/// Jobs by id, and Idempotency-Keys by caller (one caller's key never answers
/// another's request).
#[derive(Default)]
pub(crate) struct Jobs {
    inner: std::sync::Mutex<JobsInner>,
}

impl Jobs {
    fn lock(&self) -> std::sync::MutexGuard<'_, JobsInner> {
        self.inner
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
    }

    fn start(
        &self,
        caller: &str,
        route: &str,
        key: &str,
        hash: [u8; 32],
    ) -> Result<Start, Problem> {
        let mut j = self.lock();
        let k = (caller.to_string(), route.to_string(), key.to_string());
        if let Some((h, id)) = j.by_key.get(&k) {
            if *h != hash {
                return Err(Problem::new(
                    StatusCode::UNPROCESSABLE_ENTITY,
                    "idempotency-key-reused",
                    "this Idempotency-Key was used for a different request; use a new key for a new request",
                ));
            }
            if let Some(job) = j.by_id.get(id) {
                return Ok(Start::Existing(job.rx.clone()));
            }
        }
        // Forget the oldest finished jobs (and expired ones).
        while j.by_id.len() >= MAX_JOBS
            || j.order.front().is_some_and(|id| {
                j.by_id
                    .get(id)
                    .is_none_or(|x| x.at.elapsed() > JOB_TTL && x.rx.borrow().is_some())
            })
        {
            let Some(id) = j.order.pop_front() else { break };
            let running = j.by_id.get(&id).is_some_and(|x| x.rx.borrow().is_none());
            if running && j.by_id.len() < MAX_JOBS {
                j.order.push_back(id);
                break;
            }
            j.by_id.remove(&id);
            j.by_key.retain(|_, (_, v)| *v != id);
        }
        let id = crate::auth::new_token().1[..32].to_string();
        let (tx, rx) = watch::channel(None);
        j.by_id.insert(
            id.clone(),
            Job {
                rx: rx.clone(),
                at: Instant::now(),
            },
        );
        j.order.push_back(id.clone());
        j.by_key.insert(k, (hash, id));
        Ok(Start::New(tx, rx))
    }

    fn id_of(&self, caller: &str, route: &str, key: &str) -> Option<String> {
        self.lock()
            .by_key
            .get(&(caller.to_string(), route.to_string(), key.to_string()))
            .map(|(_, id)| id.clone())
    }

    fn forget(&self, caller: &str, route: &str, key: &str) {
        let mut j = self.lock();
        if let Some((_, id)) =
            j.by_key
                .remove(&(caller.to_string(), route.to_string(), key.to_string()))
        {
            j.by_id.remove(&id);
            j.order.retain(|x| *x != id);
        }
    }

    fn get(&self, id: &str) -> Option<watch::Receiver<Option<Done>>> {
        if id.len() != 32 || !id.bytes().all(|b| b.is_ascii_hexdigit()) {
            return None;
        }
        self.lock().by_id.get(id).map(|j| j.rx.clone())
    }
}
