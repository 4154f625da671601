//! `evident serve`: the verifier as an HTTP service, over evident-pipeline (never the
//! CLI).
//!
//! - `POST /v1/verify`: a claim document → its decision under the policy the server
//!   holds (`--policy`), recorded.
//! - `POST /v1/gate/{contract}`: a claim → the gate's decision under the server's
//!   contract of that name; `?wait=false` answers 202 with a job to poll.
//! - `GET /v1/contracts[/{name}]`, `GET /v1/decisions[/{id}]`, `GET /v1/jobs/{id}`.
//! - `GET /healthz`, `GET /metrics` (Prometheus text), `GET /openapi.json`
//!   (OpenAPI 3.1 from the same schemars types as the JSON Schemas).
//!
//! [`App`] holds the state; [`App::router_with`] mounts other routers (the MCP
//! endpoint, the web page) under the same host check, body limit and metrics, with
//! [`App::require_token`] / [`App::require_read`] for their access rule.

#![warn(missing_docs)]
// A `Problem` is the error response itself (about 170 bytes): boxing it buys nothing
// on a path that then writes a JSON body.
#![allow(clippy::result_large_err)]

pub mod auth;
pub mod metrics;
pub mod openapi;
pub mod problem;
mod routes;

use axum::Router;
use evident_format::Policy;
use evident_pipeline::catalog::Catalog;
use evident_pipeline::view::Decisions;
use evident_sign::{Key, TrustList};
use std::net::SocketAddr;
use std::path::PathBuf;
use std::sync::Arc;
use std::time::Duration;

pub use auth::Tokens;
pub use problem::Problem;
pub use routes::GateTicket;
/// The claim depth limit, shared with the MCP endpoint.
pub use routes::{MAX_CLAIM_DEPTH, too_deep};
/// The logging facade, for the binary that starts the server.
pub use tracing;

/// How the service runs.
pub struct Config {
    /// The address to listen on; a loopback address opens the read routes.
    pub listen: SocketAddr,
    /// The directory of served contracts (`NAME.toml` / `NAME.json`).
    pub contracts: PathBuf,
    /// The ledger (SQLite path or `postgres://…`; default `$EVIDENT_LEDGER`, else the
    /// current repository's ledger in the state directory,
    /// [`evident_ledger::default_location`]).
    pub ledger: Option<String>,
    /// The known bearer tokens.
    pub tokens: Tokens,
    /// The owner's policy for `POST /v1/verify` (name, policy); without it that route
    /// answers 503.
    pub policy: Option<(String, Policy)>,
    /// The owner's trust list for `POST /v1/verify` (`verify --trust`): evidence that
    /// calls itself independent counts only when signed by a listed key over exactly
    /// its content. Without one no evidence is authenticated, so a document never
    /// verifies on its own say-so.
    pub trust: Option<TrustList>,
    /// Signs every gate's evidence and every record's hash.
    pub key: Option<Key>,
    /// Where the key was read from (warned about when inside a contract root).
    pub key_path: Option<PathBuf>,
    /// More `Host` values accepted (`name` matches any port, `name:port` that port).
    pub allowed_hosts: Vec<String>,
    /// Largest request body, in bytes.
    pub body_limit: usize,
    /// Deadline of every request but a gate's.
    pub request_timeout: Duration,
    /// A gate's deadline (all its checks together).
    pub gate_timeout: Duration,
    /// Gates running at once.
    pub gate_concurrency: usize,
    /// Gates waiting for a slot before more are refused (503).
    pub gate_queue: usize,
    /// Checks running at once within one gate.
    pub jobs: usize,
    /// Most records in one ledger commit (group commit).
    pub max_batch: usize,
    /// How long a client has to send a request's headers, and how long a kept-alive
    /// connection may sit idle (slowloris).
    pub header_timeout: Duration,
    /// Connections open at once; past it a new connection gets 503 and is closed.
    pub max_connections: usize,
    /// On shutdown, how long requests in flight get to finish before their
    /// connections are closed (idle ones are closed at once).
    pub shutdown_grace: Duration,
    /// Claims parsed and decided at once (`POST /v1/verify`, and a gate's claim before
    /// it queues for a gate slot): the CPU-bound part.
    pub verify_concurrency: usize,
    /// How long a claim waits for a decision slot before 503 + `Retry-After`.
    pub verify_wait: Duration,
}

impl Config {
    /// The defaults: 4 MiB bodies, 30 s per request, 600 s per gate, 2 gates at once
    /// with 32 waiting, 8 checks per gate, 256 records per commit, 10 s for headers,
    /// 1024 connections, 30 s of grace on shutdown, one decision per core at once
    /// with 1 s of waiting for a slot.
    pub fn new(listen: SocketAddr, contracts: PathBuf) -> Config {
        Config {
            listen,
            contracts,
            ledger: None,
            tokens: Tokens::default(),
            policy: None,
            trust: None,
            key: None,
            key_path: None,
            allowed_hosts: Vec::new(),
            body_limit: 4 * 1024 * 1024,
            request_timeout: Duration::from_secs(30),
            gate_timeout: Duration::from_secs(600),
            gate_concurrency: 2,
            gate_queue: 32,
            jobs: 8,
            max_batch: 256,
            header_timeout: Duration::from_secs(10),
            max_connections: 1024,
            shutdown_grace: Duration::from_secs(30),
            verify_concurrency: std::thread::available_parallelism().map_or(2, |n| n.get()),
            verify_wait: Duration::from_secs(1),
        }
    }
}

/// Why the service cannot start.
#[derive(Debug, thiserror::Error)]
pub enum StartError {
    /// The contracts directory is missing or not a directory.
    #[error("--contracts {0}: {1}")]
    Contracts(String, String),
    /// The ledger does not open.
    #[error("{0}")]
    Ledger(String),
    /// A setting is out of range.
    #[error("{0}")]
    Setting(String),
}

/// The running service's state (cheap to clone).
#[derive(Clone)]
pub struct App(Arc<State>);

pub(crate) struct State {
    pub(crate) cfg: Config,
    pub(crate) catalog: Catalog,
    pub(crate) decisions: Arc<Decisions>,
    pub(crate) appender: evident_ledger::Appender,
    /// Reads are open: the listen address is loopback.
    pub(crate) open_reads: bool,
    /// `None`: any Host (an unspecified listen address and no --allow-host).
    pub(crate) hosts: Option<Vec<(String, Option<u16>)>>,
    pub(crate) gate_slots: Arc<tokio::sync::Semaphore>,
    /// Claims being parsed and decided ([`Config::verify_concurrency`]).
    pub(crate) decide_slots: Arc<tokio::sync::Semaphore>,
    pub(crate) jobs: routes::Jobs,
    pub(crate) metrics: metrics::Metrics,
    pub(crate) openapi: Vec<u8>,
    /// Background work (gates run with `wait=false`) that shutdown waits for.
    pub(crate) tasks: tokio_util_lite::Tracker,
}

impl App {
    /// Opens the ledger and the contracts directory. Blocking (opening the ledger
    /// connects to it): call before the runtime serves, or on a blocking thread.
    pub fn new(cfg: Config) -> Result<App, StartError> {
        if cfg.gate_concurrency == 0
            || cfg.jobs == 0
            || cfg.body_limit == 0
            || cfg.max_connections == 0
            || cfg.verify_concurrency == 0
        {
            return Err(StartError::Setting(
                "--gate-concurrency, --jobs, --body-limit, --max-connections and --verify-concurrency must be at least 1".into(),
            ));
        }
        let catalog = Catalog::open(&cfg.contracts).map_err(|e| {
            StartError::Contracts(cfg.contracts.display().to_string(), e.to_string())
        })?;
        let writer = evident_ledger::open(cfg.ledger.as_deref())
            .map_err(|e| StartError::Ledger(e.to_string()))?;
        let reader = evident_ledger::open(cfg.ledger.as_deref())
            .map_err(|e| StartError::Ledger(e.to_string()))?;
        let appender = evident_ledger::Appender::spawn(writer, cfg.max_batch)
            .map_err(|e| StartError::Ledger(format!("cannot start the ledger writer: {e}")))?;
        let open_reads = cfg.listen.ip().is_loopback();
        let hosts = allowed_hosts(&cfg);
        let gate_slots = Arc::new(tokio::sync::Semaphore::new(cfg.gate_concurrency));
        let openapi = serde_json::to_vec_pretty(&openapi::document())
            .map_err(|e| StartError::Setting(format!("cannot build the OpenAPI document: {e}")))?;
        Ok(App(Arc::new(State {
            catalog,
            decisions: Arc::new(Decisions::new(reader)),
            appender,
            open_reads,
            hosts,
            gate_slots,
            decide_slots: Arc::new(tokio::sync::Semaphore::new(cfg.verify_concurrency)),
            jobs: routes::Jobs::default(),
            metrics: metrics::Metrics::default(),
            openapi,
            tasks: tokio_util_lite::Tracker::default(),
            cfg,
        })))
    }

    /// The ledger's read side, for other surfaces mounted beside the API (the page).
    pub fn decisions(&self) -> Arc<Decisions> {
        self.0.decisions.clone()
    }

    /// The served contracts.
    pub fn catalog(&self) -> &Catalog {
        &self.0.catalog
    }

    /// Whether read routes are open (the server listens on a loopback address).
    pub fn open_reads(&self) -> bool {
        self.0.open_reads
    }

    /// The API's router.
    pub fn router(&self) -> Router {
        self.router_with(Router::new())
    }

    /// The API's router with `extra` merged in, all of it under the host check, the
    /// body limit, the request deadline and the request metrics. Guard `extra`'s
    /// routes with [`App::require_token`] or [`App::require_read`].
    pub fn router_with(&self, extra: Router) -> Router {
        routes::router(self.clone(), extra)
    }

    /// `r` answers only requests with a valid bearer token (the caller's token name
    /// is put in the request's extensions as [`Caller`]).
    pub fn require_token(&self, r: Router) -> Router {
        r.layer(axum::middleware::from_fn_with_state(
            self.clone(),
            routes::token_layer,
        ))
    }

    /// `r` follows the read rule: open when the server listens on loopback, a valid
    /// bearer token otherwise.
    pub fn require_read(&self, r: Router) -> Router {
        r.layer(axum::middleware::from_fn_with_state(
            self.clone(),
            routes::read_layer,
        ))
    }

    /// The settings the server runs with (for surfaces mounted beside the API).
    pub fn config(&self) -> &Config {
        &self.0.cfg
    }

    /// The ledger's writer (group commit), shared with surfaces mounted beside the API.
    pub fn appender(&self) -> &evident_ledger::Appender {
        &self.0.appender
    }

    /// The gate slots (`--gate-concurrency`), shared with surfaces mounted beside the
    /// API so that all gates of one server count against one limit.
    pub fn gate_slots(&self) -> Arc<tokio::sync::Semaphore> {
        self.0.gate_slots.clone()
    }
}

/// The authenticated caller of a request (its token's name), when there is one.
#[derive(Debug, Clone)]
pub struct Caller(pub Option<String>);

/// The `Host` values accepted, from the listen address and `--allow-host`.
fn allowed_hosts(cfg: &Config) -> Option<Vec<(String, Option<u16>)>> {
    let port = cfg.listen.port();
    let ip = cfg.listen.ip();
    let mut hosts: Vec<(String, Option<u16>)> = cfg
        .allowed_hosts
        .iter()
        .map(|h| split_host(&h.to_ascii_lowercase()))
        .collect();
    if ip.is_unspecified() {
        if hosts.is_empty() {
            return None;
        }
    } else {
        let shown = match ip {
            std::net::IpAddr::V6(v6) => format!("[{v6}]"),
            std::net::IpAddr::V4(v4) => v4.to_string(),
        };
        hosts.push((shown, Some(port)));
        if ip.is_loopback() {
            hosts.push(("localhost".into(), Some(port)));
        }
    }
    Some(hosts)
}

/// `name:port` → (name, Some(port)); `name` → (name, None); `[v6]:port` likewise.
pub(crate) fn split_host(h: &str) -> (String, Option<u16>) {
    if let Some((name, port)) = h.rsplit_once(':')
        && !name.is_empty()
        && (!name.contains(':') || name.ends_with(']'))
        && let Ok(p) = port.parse::<u16>()
    {
        return (name.to_string(), Some(p));
    }
    (h.to_string(), None)
}

/// Counting background tasks so shutdown can wait for them.
mod tokio_util_lite {
    use std::sync::atomic::{AtomicUsize, Ordering};

    /// Counts running background tasks.
    #[derive(Default)]
    pub struct Tracker {
        running: AtomicUsize,
        idle: tokio::sync::Notify,
    }

    impl Tracker {
        pub fn start(&self) {
            self.running.fetch_add(1, Ordering::SeqCst);
        }

        pub fn finish(&self) {
            if self.running.fetch_sub(1, Ordering::SeqCst) == 1 {
                self.idle.notify_waiters();
            }
        }

        pub async fn wait_idle(&self) {
            loop {
                let notified = self.idle.notified();
                tokio::pin!(notified);
                notified.as_mut().enable();
                if self.running.load(Ordering::SeqCst) == 0 {
                    return;
                }
                notified.await;
            }
        }
    }
}

/// What a connection past `--max-connections` is told before it is closed.
fn busy_response() -> Vec<u8> {
    let body = r#"{"type":"urn:evident:problem:busy","title":"Service Unavailable","status":503,"detail":"too many connections are open (--max-connections); retry later"}"#;
    format!(
        "HTTP/1.1 503 Service Unavailable\r\ncontent-type: application/problem+json\r\nretry-after: 1\r\nconnection: close\r\ncontent-length: {}\r\n\r\n{body}",
        body.len()
    )
    .into_bytes()
}

/// Serves `router` on `listener` until `shutdown` completes.
///
/// Each connection must send a request's headers within `header_timeout` (and may sit
/// idle between requests no longer than that), and a response's bytes stalled (the
/// client reads nothing) for `request_timeout` close it; at most `max_connections`
/// are open.
/// On shutdown the listener closes, idle connections are closed at once, requests in
/// flight get `shutdown_grace` to finish before their connections are closed, and
/// gates already running (`wait=false` ones too) finish and are recorded.
pub async fn serve(
    app: App,
    router: Router,
    listener: tokio::net::TcpListener,
    shutdown: impl std::future::Future<Output = ()> + Send + 'static,
) -> std::io::Result<()> {
    let cfg = &app.0.cfg;
    let slots = Arc::new(tokio::sync::Semaphore::new(cfg.max_connections));
    let (stop_tx, stop_rx) = tokio::sync::watch::channel(false);
    let mut conns = tokio::task::JoinSet::new();
    let busy = busy_response();
    tokio::pin!(shutdown);
    loop {
        let stream = tokio::select! {
            _ = &mut shutdown => break,
            // Finished connections leave the set as they end.
            Some(_) = conns.join_next(), if !conns.is_empty() => continue,
            r = listener.accept() => match r {
                Ok((stream, _)) => stream,
                Err(e) => {
                    // Out of file descriptors, or the peer gave up: not fatal.
                    tracing::warn!(error = %e, "accept failed");
                    tokio::time::sleep(Duration::from_millis(50)).await;
                    continue;
                }
            },
        };
        let Ok(permit) = slots.clone().try_acquire_owned() else {
            app.0.metrics.request("(connection limit)", "-", 503, 0.0);
            // Told, not kept waiting; a full send buffer just drops the words.
            let _ = stream.try_write(&busy);
            continue;
        };
        let _ = stream.set_nodelay(true);
        let busy = conn::Busy::default();
        let service = conn::service(router.clone(), busy.clone());
        let mut stop = stop_rx.clone();
        let header_timeout = cfg.header_timeout;
        let write_stall = cfg.request_timeout;
        conns.spawn(async move {
            let _permit = permit;
            let mut builder = hyper::server::conn::http1::Builder::new();
            builder
                .timer(hyper_util::rt::TokioTimer::new())
                .header_read_timeout(header_timeout);
            let stream = stall::WriteStall::new(stream, write_stall);
            let conn = builder.serve_connection(hyper_util::rt::TokioIo::new(stream), service);
            tokio::pin!(conn);
            tokio::select! {
                _ = conn.as_mut() => return,
                _ = stop.wait_for(|s| *s) => {}
            }
            // Waiting for a request (new, kept alive, or halfway through its headers):
            // closed now. Answering one: it finishes, then the connection closes.
            if !busy.is_busy() {
                return;
            }
            conn.as_mut().graceful_shutdown();
            let _ = conn.await;
        });
    }
    drop(listener);
    let _ = stop_tx.send(true);
    let open = conns.len();
    tracing::info!(
        connections = open,
        "stopped listening; finishing requests in flight"
    );
    let deadline = tokio::time::Instant::now() + cfg.shutdown_grace;
    let drained = tokio::time::timeout_at(deadline, async {
        while conns.join_next().await.is_some() {}
    })
    .await;
    if drained.is_err() {
        tracing::warn!(
            connections = conns.len(),
            grace_s = cfg.shutdown_grace.as_secs_f64(),
            "the shutdown grace is over: closing the connections still open"
        );
        conns.shutdown().await;
    }
    tracing::info!("no request in flight; waiting for gates still running");
    app.0.tasks.wait_idle().await;
    tracing::info!("stopped");
    Ok(())
}

/// A connection whose writes stall (the client stopped reading) for longer than a
/// limit fails with `TimedOut`: a slow *reader* must not hold a connection, and with
/// `--max-connections` of them every other client, past every deadline. Any progress
/// restarts the clock, so a slow but steady reader (and an SSE stream a client reads)
/// is served.
mod stall {
    use std::io;
    use std::pin::Pin;
    use std::task::{Context, Poll, ready};
    use std::time::Duration;
    use tokio::io::{AsyncRead, AsyncWrite, ReadBuf};

    pub struct WriteStall<S> {
        inner: S,
        limit: Duration,
        since: Option<Pin<Box<tokio::time::Sleep>>>,
    }

    impl<S> WriteStall<S> {
        pub fn new(inner: S, limit: Duration) -> Self {
            WriteStall {
                inner,
                limit,
                since: None,
            }
        }

        /// Pending: arms the clock (once) and fails when it runs out; ready: disarms it.
        fn watch<T>(
            &mut self,
            cx: &mut Context<'_>,
            r: Poll<io::Result<T>>,
        ) -> Poll<io::Result<T>> {
            match r {
                Poll::Ready(v) => {
                    self.since = None;
                    Poll::Ready(v)
                }
                Poll::Pending => {
                    let limit = self.limit;
                    let sleep = self
                        .since
                        .get_or_insert_with(|| Box::pin(tokio::time::sleep(limit)));
                    ready!(sleep.as_mut().poll(cx));
                    Poll::Ready(Err(io::Error::new(
                        io::ErrorKind::TimedOut,
                        "the client took nothing of the response for too long",
                    )))
                }
            }
        }
    }

    impl<S: AsyncRead + Unpin> AsyncRead for WriteStall<S> {
        fn poll_read(
            mut self: Pin<&mut Self>,
            cx: &mut Context<'_>,
            buf: &mut ReadBuf<'_>,
        ) -> Poll<io::Result<()>> {
            Pin::new(&mut self.inner).poll_read(cx, buf)
        }
    }

    impl<S: AsyncWrite + Unpin> AsyncWrite for WriteStall<S> {
        fn poll_write(
            mut self: Pin<&mut Self>,
            cx: &mut Context<'_>,
            buf: &[u8],
        ) -> Poll<io::Result<usize>> {
            let r = Pin::new(&mut self.inner).poll_write(cx, buf);
            self.watch(cx, r)
        }

        fn poll_write_vectored(
            mut self: Pin<&mut Self>,
            cx: &mut Context<'_>,
            bufs: &[io::IoSlice<'_>],
        ) -> Poll<io::Result<usize>> {
            let r = Pin::new(&mut self.inner).poll_write_vectored(cx, bufs);
            self.watch(cx, r)
        }

        fn is_write_vectored(&self) -> bool {
            self.inner.is_write_vectored()
        }

        fn poll_flush(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
            let r = Pin::new(&mut self.inner).poll_flush(cx);
            self.watch(cx, r)
        }

        fn poll_shutdown(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
            let r = Pin::new(&mut self.inner).poll_shutdown(cx);
            self.watch(cx, r)
        }
    }
}

/// One connection's requests, and whether one is being answered.
mod conn {
    use axum::body::Body;
    use http_body::Frame;
    use std::pin::Pin;
    use std::sync::Arc;
    use std::sync::atomic::{AtomicUsize, Ordering};
    use std::task::{Context, Poll};
    use tower::ServiceExt as _;

    /// Requests of one connection from the call until their response's body is sent.
    #[derive(Clone, Default)]
    pub struct Busy(Arc<AtomicUsize>);

    impl Busy {
        pub fn is_busy(&self) -> bool {
            self.0.load(Ordering::SeqCst) > 0
        }
    }

    struct Guard(Arc<AtomicUsize>);

    impl Drop for Guard {
        fn drop(&mut self) {
            self.0.fetch_sub(1, Ordering::SeqCst);
        }
    }

    /// A response body that holds its request's [`Guard`] until it is sent (or
    /// dropped).
    struct Guarded {
        body: Body,
        _guard: Guard,
    }

    impl http_body::Body for Guarded {
        type Data = axum::body::Bytes;
        type Error = axum::Error;

        fn poll_frame(
            mut self: Pin<&mut Self>,
            cx: &mut Context<'_>,
        ) -> Poll<Option<Result<Frame<Self::Data>, Self::Error>>> {
            Pin::new(&mut self.body).poll_frame(cx)
        }

        fn is_end_stream(&self) -> bool {
            self.body.is_end_stream()
        }

        fn size_hint(&self) -> http_body::SizeHint {
            self.body.size_hint()
        }
    }

    /// The router as a hyper service that counts its requests in `busy`.
    pub fn service(
        router: axum::Router,
        busy: Busy,
    ) -> impl hyper::service::Service<
        hyper::Request<hyper::body::Incoming>,
        Response = hyper::Response<Body>,
        Error = std::convert::Infallible,
        Future = impl Send,
    > + Send
    + 'static {
        hyper::service::service_fn(move |req: hyper::Request<hyper::body::Incoming>| {
            busy.0.fetch_add(1, Ordering::SeqCst);
            let guard = Guard(busy.0.clone());
            let answer = router.clone().oneshot(req);
            async move {
                let response = match answer.await {
                    Ok(r) => r,
                    Err(never) => match never {},
                };
                Ok(response.map(|body| {
                    Body::new(Guarded {
                        body,
                        _guard: guard,
                    })
                }))
            }
        })
    }
}

/// Resolves on SIGTERM or SIGINT (Ctrl-C).
pub async fn shutdown_signal() {
    let term = async {
        match tokio::signal::unix::signal(tokio::signal::unix::SignalKind::terminate()) {
            Ok(mut s) => {
                s.recv().await;
            }
            Err(_) => std::future::pending::<()>().await,
        }
    };
    tokio::select! {
        _ = term => tracing::info!("SIGTERM: finishing requests in flight"),
        _ = tokio::signal::ctrl_c() => tracing::info!("SIGINT: finishing requests in flight"),
    }
}

/// Logs to stderr (never stdout), structured `key=value` lines; `EVIDENT_LOG=debug`
/// for more.
pub fn init_logging() {
    let level = match std::env::var("EVIDENT_LOG").as_deref() {
        Ok("debug") => tracing::Level::DEBUG,
        Ok("trace") => tracing::Level::TRACE,
        Ok("warn") => tracing::Level::WARN,
        Ok("error") => tracing::Level::ERROR,
        _ => tracing::Level::INFO,
    };
    let _ = tracing_subscriber::fmt()
        .with_writer(std::io::stderr)
        .with_ansi(false)
        .with_max_level(level)
        .with_target(false)
        .try_init();
}
