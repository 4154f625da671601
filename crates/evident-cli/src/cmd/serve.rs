//! `evident serve`: the HTTP API over the pipeline (crate evident-serve).

use anyhow::{Context as _, anyhow};
use std::net::SocketAddr;
use std::path::PathBuf;
use std::time::Duration;

/// Serve the verifier over HTTP: verify, gate, contracts, decisions, metrics, OpenAPI.
///
/// Write routes (POST /v1/verify, POST /v1/gate/NAME) need `Authorization: Bearer
/// TOKEN` with a token listed by hash in --tokens (make one with `evident token new
/// NAME`; the name is recorded as who asked). Read routes are open when --listen is a
/// loopback address and need a token otherwise. Contracts are only ever the server's:
/// DIR/NAME.toml or DIR/NAME.json, run with the file's own directory as root. Logs go
/// to stderr (EVIDENT_LOG=debug for more). SIGTERM stops taking connections and
/// finishes the requests and gates in flight. The MCP server (`evident mcp`) is served
/// at /mcp as Streamable HTTP under the write routes' token rule. See docs/serve.md and
/// docs/mcp.md.
#[derive(clap::Args)]
pub struct Args {
    /// The directory of contracts served (NAME.toml / NAME.json).
    #[arg(long, value_name = "DIR")]
    pub contracts: PathBuf,
    /// Where to listen (a loopback address keeps read routes open).
    #[arg(long, value_name = "ADDR", default_value = "127.0.0.1:8080")]
    pub listen: SocketAddr,
    /// The ledger: a SQLite file or postgres://… (default: $EVIDENT_LEDGER, else the
    /// current directory's repository's ledger, outside its working tree, at
    /// $XDG_STATE_HOME/evident/ledgers/NAME-HASH/ledger.db; without XDG_STATE_HOME
    /// ~/.local/state/evident/…, on macOS ~/Library/Application Support/evident/…). Several
    /// servers share one PostgreSQL ledger as one chain.
    #[arg(long, value_name = "PATH|URL")]
    pub ledger: Option<String>,
    /// The tokens file (TOML: [[token]] name = "…" sha256 = "…").
    #[arg(long, value_name = "FILE")]
    pub tokens: Option<PathBuf>,
    /// The owner's policy POST /v1/verify decides under (a policy object or a contract;
    /// JSON or TOML). Without it that route answers 503: a document's own policy is the
    /// agent's and never decides here.
    #[arg(long, value_name = "FILE")]
    pub policy: Option<PathBuf>,
    /// The owner's trust list POST /v1/verify authenticates evidence with, as `evident
    /// verify --trust` does (`{"verifiers": [{"id", "public_key"}]}`, JSON or TOML):
    /// evidence that calls itself independent counts only when signed by a listed key
    /// over exactly its content. Without it no evidence is authenticated, so a document
    /// never verifies on its own say-so. Needs --policy.
    #[arg(long, value_name = "FILE")]
    pub trust: Option<PathBuf>,
    /// Sign each gate's evidence and each record's hash with this key.
    #[arg(long, value_name = "FILE")]
    pub key: Option<PathBuf>,
    /// Also accept this Host header (a name behind a proxy; `name` matches any port).
    #[arg(long = "allow-host", value_name = "NAME")]
    pub allow_host: Vec<String>,
    /// Largest request body, in bytes.
    #[arg(long, default_value_t = 4 * 1024 * 1024, value_name = "BYTES")]
    pub body_limit: usize,
    /// Deadline of each request except a gate's, in seconds.
    #[arg(long, default_value_t = 30.0, value_name = "SECONDS")]
    pub request_timeout: f64,
    /// Deadline of each gate (all its checks), in seconds.
    #[arg(long, default_value_t = 600.0, value_name = "SECONDS")]
    pub gate_timeout: f64,
    /// Gates running at once (more wait; past --gate-queue they are refused with 503).
    #[arg(long, default_value_t = 2, value_name = "N")]
    pub gate_concurrency: usize,
    /// Gates waiting for a slot before more are refused.
    #[arg(long, default_value_t = 32, value_name = "N")]
    pub gate_queue: usize,
    /// Checks running at once within a gate.
    #[arg(long, default_value_t = 8, value_name = "N")]
    pub jobs: usize,
    /// Seconds a client has to send a request's headers; also the longest a kept-alive
    /// connection may sit idle.
    #[arg(long, default_value_t = 10.0, value_name = "SECONDS")]
    pub header_timeout: f64,
    /// Connections open at once; a connection past it gets 503 and is closed.
    #[arg(long, default_value_t = 1024, value_name = "N")]
    pub max_connections: usize,
    /// MCP sessions open at once at /mcp; an `initialize` past it gets 503 (a session
    /// lives until its client closes it or it idles for five minutes).
    #[arg(long, default_value_t = evident_mcp::DEFAULT_MAX_SESSIONS, value_name = "N")]
    pub max_mcp_sessions: usize,
    /// On SIGTERM, seconds the requests in flight get to finish before their
    /// connections are closed (idle connections are closed at once; gates already
    /// running still finish and are recorded).
    #[arg(long, default_value_t = 30.0, value_name = "SECONDS")]
    pub shutdown_grace: f64,
    /// Claims parsed and decided at once (POST /v1/verify; a gate's claim before it
    /// queues). Default: one per core.
    #[arg(long, value_name = "N")]
    pub verify_concurrency: Option<usize>,
    /// Seconds a claim waits for a decision slot before 503 with Retry-After.
    #[arg(long, default_value_t = 1.0, value_name = "SECONDS")]
    pub verify_wait: f64,
    /// Worker threads for HTTP (default: one per core).
    #[arg(long, value_name = "N")]
    pub threads: Option<usize>,
}

fn seconds(flag: &str, v: f64) -> anyhow::Result<Duration> {
    Duration::try_from_secs_f64(v)
        .ok()
        .filter(|d| !d.is_zero())
        .ok_or_else(|| anyhow!("{flag} must be a positive number of seconds"))
}

pub fn run(a: Args) -> anyhow::Result<u8> {
    evident_serve::init_logging();
    let mut cfg = evident_serve::Config::new(a.listen, a.contracts.clone());
    cfg.ledger = a.ledger.clone();
    if let Some(path) = &a.tokens {
        cfg.tokens = evident_serve::Tokens::load(path).context("--tokens")?;
    }
    if let Some(path) = &a.policy {
        cfg.policy = Some((
            path.display().to_string(),
            crate::cmd::verify::load_policy(path)?,
        ));
    }
    if let Some(path) = &a.trust {
        if a.policy.is_none() {
            anyhow::bail!(
                "--trust needs --policy FILE: POST /v1/verify decides only under the owner's policy"
            );
        }
        cfg.trust = Some(evident_sign::TrustList::load(path)?);
    }
    if let Some(path) = &a.key {
        cfg.key = Some(evident_sign::Key::load(path)?);
        cfg.key_path = Some(path.clone());
    }
    cfg.allowed_hosts = a.allow_host.clone();
    cfg.body_limit = a.body_limit;
    cfg.request_timeout = seconds("--request-timeout", a.request_timeout)?;
    cfg.gate_timeout = seconds("--gate-timeout", a.gate_timeout)?;
    cfg.gate_concurrency = a.gate_concurrency;
    cfg.gate_queue = a.gate_queue;
    cfg.jobs = a.jobs;
    cfg.header_timeout = seconds("--header-timeout", a.header_timeout)?;
    cfg.max_connections = a.max_connections;
    cfg.shutdown_grace = seconds("--shutdown-grace", a.shutdown_grace)?;
    if let Some(n) = a.verify_concurrency {
        cfg.verify_concurrency = n;
    }
    cfg.verify_wait = seconds("--verify-wait", a.verify_wait)?;
    let tokens = cfg.tokens.len();
    // Bound first: with port 0 the Host check must know the port actually taken.
    let std_listener = std::net::TcpListener::bind(a.listen)
        .with_context(|| format!("--listen {}: cannot listen", a.listen))?;
    std_listener.set_nonblocking(true)?;
    cfg.listen = std_listener.local_addr()?;
    // The page checks record signatures against the key this server signs with.
    let page_options = evident_web::Options {
        trust: cfg.key.as_ref().map(|k| evident_sign::TrustList {
            verifiers: vec![k.trusted()],
        }),
    };
    let app = evident_serve::App::new(cfg)?;
    let mut rt = tokio::runtime::Builder::new_multi_thread();
    rt.enable_all();
    if let Some(n) = a.threads {
        rt.worker_threads(n.max(1));
    }
    let rt = rt.build().context("cannot start the runtime")?;
    rt.block_on(async move {
        let listener = tokio::net::TcpListener::from_std(std_listener)?;
        let addr = listener.local_addr()?;
        // The MCP server (docs/mcp.md) at /mcp, under the token rule of the writes.
        let stop = evident_mcp::CancellationToken::new();
        let mut mcp_cfg = evident_mcp::Config::from_app(&app);
        mcp_cfg.max_sessions = a.max_mcp_sessions;
        let mcp = evident_mcp::router(mcp_cfg, app.config().body_limit, stop.clone());
        // The page (docs/web.md) at /, under the read rule of GET /v1/decisions.
        let page = evident_web::router(app.decisions(), page_options);
        let router = app.router_with(app.require_read(page).merge(app.require_token(mcp)));
        evident_serve::tracing::info!(
            listen = %addr,
            contracts = %app.catalog().dir().display(),
            ledger = %app.decisions().location(),
            tokens,
            open_reads = app.open_reads(),
            "evident serve listening"
        );
        if tokens == 0 {
            evident_serve::tracing::warn!("no --tokens: every write route answers 401");
        }
        // SIGTERM also ends the MCP sessions: an open SSE stream would hold the
        // graceful shutdown open.
        let shutdown = async move {
            evident_serve::shutdown_signal().await;
            stop.cancel();
        };
        evident_serve::serve(app, router, listener, shutdown).await?;
        Ok::<_, anyhow::Error>(())
    })?;
    Ok(crate::exit::OK)
}
