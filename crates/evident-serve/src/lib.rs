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
use evident_ledger::sign::Key;
use evident_pipeline::catalog::Catalog;
use evident_pipeline::view::Decisions;
use std::collections::HashMap;
use std::net::SocketAddr;
use std::path::PathBuf;
use std::sync::Arc;
use std::time::Duration;

pub use auth::Tokens;
pub use problem::Problem;
/// The logging facade, for the binary that starts the server.
pub use tracing;

/// How the service runs.
pub struct Config {
    /// The address to listen on; a loopback address opens the read routes.
    pub listen: SocketAddr,
    /// The directory of served contracts (`NAME.toml` / `NAME.json`).
    pub contracts: PathBuf,
    /// The ledger (SQLite path or `postgres://…`; default `$EVIDENT_LEDGER`, else
    /// `.evident/ledger.db`).
    pub ledger: Option<String>,
    /// The known bearer tokens.
    pub tokens: Tokens,
    /// The owner's policy for `POST /v1/verify` (name, policy); without it that route
    /// answers 503.
    pub policy: Option<(String, Policy)>,
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
}

impl Config {
    /// The defaults: 4 MiB bodies, 30 s per request, 600 s per gate, 2 gates at once
    /// with 32 waiting, 8 checks per gate, 256 records per commit.
    pub fn new(listen: SocketAddr, contracts: PathBuf) -> Config {
        Config {
            listen,
            contracts,
            ledger: None,
            tokens: Tokens::default(),
            policy: None,
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
    pub(crate) roots: std::sync::Mutex<HashMap<PathBuf, Arc<tokio::sync::Mutex<()>>>>,
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
        if cfg.gate_concurrency == 0 || cfg.jobs == 0 || cfg.body_limit == 0 {
            return Err(StartError::Setting(
                "--gate-concurrency, --jobs and --body-limit must be at least 1".into(),
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
            roots: std::sync::Mutex::new(HashMap::new()),
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

    fn root_lock(&self, root: &std::path::Path) -> Arc<tokio::sync::Mutex<()>> {
        let mut m = self
            .0
            .roots
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner);
        m.entry(root.to_path_buf()).or_default().clone()
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

/// Serves `router` on `listener` until `shutdown` completes, then stops taking
/// connections, lets every request in flight finish (a gate included) and waits for
/// gates started with `wait=false`.
pub async fn serve(
    app: App,
    router: Router,
    listener: tokio::net::TcpListener,
    shutdown: impl std::future::Future<Output = ()> + Send + 'static,
) -> std::io::Result<()> {
    axum::serve(listener, router)
        .with_graceful_shutdown(shutdown)
        .await?;
    tracing::info!("no request in flight; waiting for background gates");
    app.0.tasks.wait_idle().await;
    tracing::info!("stopped");
    Ok(())
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
