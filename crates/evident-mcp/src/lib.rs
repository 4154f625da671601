//! `evident mcp`: the verifier as an MCP server (the official Rust SDK, `rmcp`), on
//! stdio and as Streamable HTTP at `/mcp` under `evident serve`. An agent calls it
//! before it says "done":
//!
//! - `list_contracts`, `get_contract`: what the owner will check (held-out checks only
//!   counted, secrets removed: the pipeline's [`ContractView`], as serve shows it).
//! - `submit_claim`: a claim under a served contract → the gate's decision, recorded
//!   with who asked, explained ([`explain::Explanation`]: verdict, unmet items, and for
//!   each the evidence that is missing or contradicts).
//! - `explain_decision`: a ledger id → the same explanation.
//!
//! The agent names a contract; it never uploads one or names a path (names are
//! checked by [`evident_pipeline::catalog`], as serve checks them). Gates on one root
//! run one at a time through the catalog's root lock, the same lock serve's gates take.
//! Logs go to stderr (`tracing`); stdout carries only the protocol.

#![warn(missing_docs)]

pub mod explain;

/// Ends the HTTP sessions (see [`router`]).
pub use tokio_util::sync::CancellationToken;

use evident_format::Policy;
use evident_pipeline::catalog::{Catalog, CatalogError, ContractSummary, ContractView, Served};
use evident_pipeline::view::{DecisionView, Decisions, ReadError};
use evident_pipeline::{Origin, Recording};
use evident_sign::{Key, TrustList};
use explain::Explanation;
use rmcp::handler::server::router::tool::ToolRouter;
use rmcp::handler::server::wrapper::Parameters;
use rmcp::model::{Implementation, ProgressNotificationParam, ServerCapabilities, ServerConfig};
use rmcp::service::RequestContext;
use rmcp::{Json, RoleServer, ServerHandler, ServiceExt as _, tool, tool_handler, tool_router};
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};
use serde_json::Value;
use std::path::PathBuf;
use std::sync::Arc;
use std::time::Duration;

/// Largest claim document taken (its JSON text).
pub const MAX_CLAIM_BYTES: usize = 4 * 1024 * 1024;

/// What the server decides with.
pub struct Config {
    /// The served contracts (and their root locks).
    pub catalog: Catalog,
    /// The ledger's read side.
    pub decisions: Arc<Decisions>,
    /// The ledger's writer.
    pub appender: evident_ledger::Appender,
    /// The owner's policy a claim without a contract is decided under (from its own
    /// evidence); without it such a claim is refused.
    pub policy: Option<(String, Policy)>,
    /// The owner's trust list for such a claim (`verify --trust`); without it nothing
    /// the document calls independent is authenticated, so it cannot verify on its
    /// own say-so (as serve's `POST /v1/verify`).
    pub trust: Option<TrustList>,
    /// Signs each gate's evidence and each record's hash.
    pub key: Option<Key>,
    /// Where the key was read from (warned about when inside a contract root).
    pub key_path: Option<PathBuf>,
    /// Checks running at once within one gate.
    pub jobs: usize,
    /// A gate's deadline (all its checks together).
    pub gate_timeout: Duration,
    /// Gates running at once (under serve: serve's own slots).
    pub gate_slots: Arc<tokio::sync::Semaphore>,
    /// Who asked, when the transport names no caller (stdio): recorded as `asked_by`.
    pub local_caller: Option<String>,
    /// HTTP sessions open at once; an `initialize` past it is answered 503. Each open
    /// session holds a task and its buffers until it is closed or idles out (five
    /// minutes), so without a bound one client could open sessions without end.
    pub max_sessions: usize,
    /// Under `evident serve`: the server, whose admission every claim goes through as
    /// its HTTP routes' do (`--verify-concurrency` slots to parse and decide in,
    /// `--gate-queue`), so /mcp is no way around its limits.
    pub serve: Option<evident_serve::App>,
}

/// Why the server cannot start.
#[derive(Debug)]
pub struct StartError(pub String);

impl std::fmt::Display for StartError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.0)
    }
}

impl std::error::Error for StartError {}

impl Config {
    /// For `evident mcp` on stdio: opens the contracts directory and the ledger.
    /// Blocking (opening the ledger connects to it).
    pub fn open(contracts: &std::path::Path, ledger: Option<&str>) -> Result<Config, StartError> {
        let catalog = Catalog::open(contracts)
            .map_err(|e| StartError(format!("--contracts {}: {e}", contracts.display())))?;
        let open = || evident_ledger::open(ledger).map_err(|e| StartError(e.to_string()));
        let appender = evident_ledger::Appender::spawn(open()?, 256)
            .map_err(|e| StartError(format!("cannot start the ledger writer: {e}")))?;
        Ok(Config {
            catalog,
            decisions: Arc::new(Decisions::new(open()?)),
            appender,
            policy: None,
            trust: None,
            key: None,
            key_path: None,
            jobs: 8,
            gate_timeout: Duration::from_secs(600),
            gate_slots: Arc::new(tokio::sync::Semaphore::new(2)),
            local_caller: None,
            max_sessions: DEFAULT_MAX_SESSIONS,
            serve: None,
        })
    }

    /// For `/mcp` under `evident serve`: the server's own catalog (so its root locks),
    /// ledger, policy, key, gate slots and deadlines.
    pub fn from_app(app: &evident_serve::App) -> Config {
        let cfg = app.config();
        Config {
            catalog: app.catalog().clone(),
            decisions: app.decisions(),
            appender: app.appender().clone(),
            policy: cfg.policy.clone(),
            trust: cfg.trust.clone(),
            key: cfg.key.clone(),
            key_path: cfg.key_path.clone(),
            jobs: cfg.jobs,
            gate_timeout: cfg.gate_timeout,
            gate_slots: app.gate_slots(),
            local_caller: None,
            max_sessions: DEFAULT_MAX_SESSIONS,
            serve: Some(app.clone()),
        }
    }
}

/// The MCP server (cheap to clone: one per HTTP session shares the state).
#[derive(Clone)]
pub struct Evident {
    cfg: Arc<Config>,
    tool_router: ToolRouter<Evident>,
}

/// `list_contracts`'s answer.
#[derive(Debug, Serialize, JsonSchema)]
pub struct ContractList {
    /// Every served contract, by name.
    pub items: Vec<ContractSummary>,
}

/// A contract, by name.
#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct ContractName {
    /// The contract's name, as `list_contracts` gives it (never a path).
    pub name: String,
}

/// A claim to decide.
#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct SubmitClaim {
    /// The served contract whose checks decide the claim (`list_contracts`). Without
    /// one, the claim is decided from its own evidence under the owner's policy, if
    /// the server holds one.
    #[serde(default)]
    pub contract: Option<String>,
    /// The claim document (Completion Claim v0.1: spec_version, task, claimed_outcome,
    /// mutations, evidence).
    #[schemars(with = "evident_format::Claim")]
    pub claim: Value,
}

/// A recorded decision, by id.
#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct DecisionId {
    /// The ledger record's id (`decision_id` of a `submit_claim` answer).
    pub id: u64,
}

evident_format::message_error! {
    /// The contract-name error the agent sees; server paths go to the log only.
    /// What an agent is told when a tool call fails: a message for it (never a server
    /// detail; those go to the log). A leaf: the message is all.
    pub struct ToolError;
}

impl From<evident_format::Error> for ToolError {
    fn from(e: evident_format::Error) -> ToolError {
        ToolError(e.to_string())
    }
}

impl rmcp::model::IntoContents for ToolError {
    fn into_contents(self) -> Vec<rmcp::model::ContentBlock> {
        vec![rmcp::model::ContentBlock::text(self.0)]
    }
}

fn catalog_message(e: &CatalogError) -> String {
    match e {
        CatalogError::BadName(_) => e.to_string(),
        CatalogError::NotFound(_) => format!("{e} (list_contracts lists them)"),
        CatalogError::Ambiguous(_) | CatalogError::Invalid { .. } => {
            tracing::error!(error = %e, "contract does not load");
            "the contract does not load (the server's log says why)".into()
        }
    }
}

fn read_message(e: &ReadError) -> String {
    match e {
        ReadError::Ledger(m) => {
            tracing::error!(error = %m, "ledger read failed");
            "the ledger cannot be read right now (the server's log says why)".into()
        }
        other => other.to_string(),
    }
}

#[tool_router]
impl Evident {
    /// A server over `cfg`.
    pub fn new(cfg: Config) -> Evident {
        Evident {
            cfg: Arc::new(cfg),
            tool_router: Self::tool_router(),
        }
    }

    /// Every contract the owner serves, with what each requires.
    #[tool(
        description = "List the contracts this server holds: the owner's definitions of done. Each has a name (pass it to get_contract and submit_claim), its policy's required check types, and how many checks it runs (held-out ones only counted).",
        annotations(read_only_hint = true, open_world_hint = false)
    )]
    async fn list_contracts(&self) -> Json<ContractList> {
        let c = self.cfg.clone();
        let items = tokio::task::spawn_blocking(move || {
            c.catalog
                .list(&|e| tracing::warn!(error = %e, "contract does not load"))
        })
        .await
        .unwrap_or_default();
        Json(ContractList { items })
    }

    /// What the gate will check under one contract.
    #[tool(
        description = "Show what the owner will check under one contract before you claim: each check's id, type, which mutations it covers, what it observes and what it must show. Checks the owner holds out are run but only counted; secrets are never shown.",
        annotations(read_only_hint = true, open_world_hint = false)
    )]
    async fn get_contract(
        &self,
        Parameters(p): Parameters<ContractName>,
    ) -> Result<Json<ContractView>, ToolError> {
        self.load(p.name).await.map(|s| Json(s.view()))
    }

    /// A claim decided and recorded.
    #[tool(
        description = "Submit your claim that the task is done. The server runs the owner's contract against the world now and decides: verified, refuted or unverified. The answer lists each unmet item with the evidence that is missing or contradicts and what would meet it, so you know what to fix before claiming again. Every decision is recorded in the ledger with who asked.",
        annotations(
            read_only_hint = false,
            destructive_hint = false,
            idempotent_hint = false,
            open_world_hint = true
        )
    )]
    async fn submit_claim(
        &self,
        Parameters(p): Parameters<SubmitClaim>,
        ctx: RequestContext<RoleServer>,
    ) -> Result<Json<Explanation>, ToolError> {
        let origin = self.origin(&ctx)?;
        // Under serve, parsing and deciding hold one of its decision slots, as its
        // HTTP routes do (503-like refusal past --verify-wait).
        let slot = match &self.cfg.serve {
            Some(app) => Some(app.decide_slot().await.map_err(|p| p.detail)?),
            None => None,
        };
        let parsed = tokio::task::spawn_blocking(move || -> Result<_, ToolError> {
            let bytes = serde_json::to_vec(&p.claim).map_err(|e| format!("claim: {e}"))?;
            if bytes.len() > MAX_CLAIM_BYTES {
                return Err(format!("claim: larger than {MAX_CLAIM_BYTES} bytes of JSON").into());
            }
            Ok(evident_format::Claim::parse(&bytes, "claim")?)
        })
        .await;
        let claim = parsed.map_err(|_| ToolError::from("reading the claim failed"))??;
        // Held as text: counted there; only a document too deep is made a value.
        if evident_ledger::depth::of_text(claim.raw.as_str()) > evident_serve::MAX_CLAIM_DEPTH
            && let Some(path) =
                evident_serve::too_deep(&claim.raw.to_value(), evident_serve::MAX_CLAIM_DEPTH)
        {
            return Err(format!(
                "claim: at {path}: nested deeper than {} levels, this server's limit",
                evident_serve::MAX_CLAIM_DEPTH
            )
            .into());
        }
        let view = match p.contract {
            Some(name) => {
                drop(slot);
                let served = self.load(name).await?;
                self.gate(served, claim, origin, &ctx).await?
            }
            None => {
                let v = self.verify(claim, origin).await;
                drop(slot);
                v?
            }
        };
        Ok(Json(explain::explain(&view)))
    }

    /// A recorded decision, explained.
    #[tool(
        description = "Explain a recorded decision by its ledger id (decision_id of a submit_claim answer): the same verdict, unmet items and evidence.",
        annotations(read_only_hint = true, open_world_hint = false)
    )]
    async fn explain_decision(
        &self,
        Parameters(p): Parameters<DecisionId>,
    ) -> Result<Json<Explanation>, ToolError> {
        let d = self.cfg.decisions.clone();
        let id = p.id;
        match tokio::task::spawn_blocking(move || d.get(id)).await {
            Ok(Ok(v)) => Ok(Json(explain::explain(&v))),
            Ok(Err(e)) => Err(ToolError(read_message(&e))),
            Err(_) => Err("reading the decision failed".into()),
        }
    }
}

impl Evident {
    async fn load(&self, name: String) -> Result<Served, ToolError> {
        let c = self.cfg.clone();
        match tokio::task::spawn_blocking(move || c.catalog.load(&name)).await {
            Ok(r) => r.map_err(|e| ToolError(catalog_message(&e))),
            Err(_) => Err("reading the contract failed".into()),
        }
    }

    /// Who asked: over HTTP the token's name serve's token layer put on the request
    /// (no name there → refused: fail closed); on stdio the configured local caller.
    fn origin(&self, ctx: &RequestContext<RoleServer>) -> Result<Origin, ToolError> {
        let asked_by = match ctx.extensions.get::<http::request::Parts>() {
            Some(parts) => match parts.extensions.get::<evident_serve::Caller>() {
                Some(evident_serve::Caller(Some(name))) => Some(name.clone()),
                _ => return Err("this request carries no authenticated caller".into()),
            },
            None => self.cfg.local_caller.clone(),
        };
        Ok(Origin {
            via: "mcp".into(),
            asked_by,
        })
    }

    async fn gate(
        &self,
        served: Served,
        claim: evident_format::ClaimDocument,
        origin: Origin,
        ctx: &RequestContext<RoleServer>,
    ) -> Result<DecisionView, ToolError> {
        let c = &self.cfg;
        // Under serve, admitted through its gate queue (refused past --gate-queue).
        let _permit = match &c.serve {
            Some(app) => {
                let ticket = app.queue_gate().map_err(|p| p.detail)?;
                ticket.slot().await.map_err(|p| p.detail)?
            }
            None => c
                .gate_slots
                .clone()
                .acquire_owned()
                .await
                .map_err(|_| "the gate slots are closed".to_string())?,
        };
        // One gate per root at a time, shared with serve's gates.
        let lock = c.catalog.root_lock(&served.root);
        let _root = lock.lock_owned().await;
        // Progress: each finished check, named as the agent may see it.
        let (tx, mut rx) = tokio::sync::mpsc::unbounded_channel::<(String, usize, usize)>();
        let progress: Option<evident_gate::run::Progress> =
            ctx.meta.get_progress_token().map(|_| {
                let hidden = evident_pipeline::view::held_out_checks(&served.document.public_raw());
                let f: evident_gate::run::Progress = Arc::new(move |id: &str, done, total| {
                    let shown = hidden.get(id).cloned().unwrap_or_else(|| id.to_string());
                    let _ = tx.send((shown, done, total));
                });
                f
            });
        let forward = ctx.meta.get_progress_token().map(|token| {
            let peer = ctx.peer.clone();
            tokio::spawn(async move {
                while let Some((id, done, total)) = rx.recv().await {
                    let _ = peer
                        .notify_progress(
                            ProgressNotificationParam::new(token.clone(), done as f64)
                                .with_total(total as f64)
                                .with_message(format!("check {id} observed ({done} of {total})")),
                        )
                        .await;
                }
            })
        });
        let cfg = c.clone();
        let o = origin.clone();
        let counted = c.serve.as_ref().map(|app| (app.clone(), served.clone()));
        let decided = tokio::task::spawn_blocking(move || {
            let settings = evident_gate::Settings {
                jobs: cfg.jobs,
                deadline: cfg.gate_timeout,
                context: evident_probes::Context::from_process(served.root.clone()),
                verifier_id: evident_gate::verifier_id(),
                progress,
                only: None,
            };
            evident_pipeline::gate(evident_pipeline::GateRequest {
                contract: &served.document,
                contract_name: served.name.clone(),
                claim,
                settings,
                key: cfg.key.as_ref(),
                key_path: cfg.key_path.as_deref(),
                recording: Recording {
                    appender: Some(cfg.appender.clone()),
                    origin: Some(o),
                    ..Recording::default()
                },
                // Snapshots taken before the agent ran are not taken over MCP; a
                // contract with snapshot checks stays unverified.
                before: None,
            })
        })
        .await;
        if let Some(f) = forward {
            // The sender went with the gate's settings: every notification is out
            // before the answer.
            let _ = f.await;
        }
        if let (Some((app, served)), Ok(Ok(d))) = (&counted, &decided) {
            app.count_decision(d, Some(served));
        }
        finish(decided, &origin)
    }

    async fn verify(
        &self,
        document: evident_format::ClaimDocument,
        origin: Origin,
    ) -> Result<DecisionView, ToolError> {
        if self.cfg.policy.is_none() {
            return Err("name a contract (list_contracts lists them): this server holds no policy to decide a claim from its own evidence, and a claim's own policy is the agent's, which never decides".into());
        }
        let cfg = self.cfg.clone();
        let o = origin.clone();
        let decided = tokio::task::spawn_blocking(move || {
            evident_pipeline::verify(evident_pipeline::VerifyRequest {
                document,
                now: None,
                // Never the agent's word: without the owner's list, an empty one.
                trust: Some(cfg.trust.clone().unwrap_or(TrustList {
                    verifiers: Vec::new(),
                })),
                policy: cfg.policy.clone(),
                on_unverified: None,
                partial: false,
                recording: Recording {
                    appender: Some(cfg.appender.clone()),
                    origin: Some(o),
                    ..Recording::default()
                },
                key: cfg.key.as_ref(),
            })
        })
        .await;
        if let (Some(app), Ok(Ok(d))) = (&self.cfg.serve, &decided) {
            app.count_decision(d, None);
        }
        finish(decided, &origin)
    }
}

/// A decision as served, or what the agent is told instead.
fn finish(
    decided: Result<
        Result<evident_pipeline::Decision, evident_pipeline::Error>,
        tokio::task::JoinError,
    >,
    origin: &Origin,
) -> Result<DecisionView, ToolError> {
    match decided {
        Ok(Ok(d)) => {
            let view = DecisionView::from_decision(&d, Some(origin))
                .ok_or_else(|| "the decision was not recorded".to_string())?;
            tracing::info!(
                kind = %view.kind,
                state = %d.verdict.state,
                id = view.id,
                task = view.task_id.as_deref().unwrap_or(""),
                contract = view.contract.as_ref().and_then(|c| c.name.as_deref()).unwrap_or(""),
                asked_by = origin.asked_by.as_deref().unwrap_or(""),
                via = "mcp",
                "decided"
            );
            Ok(view)
        }
        Ok(Err(evident_pipeline::Error::Record { source, .. })) => {
            tracing::error!(error = %evident_format::Chain(&source), "a decision could not be recorded");
            Err("the decision was made but could not be recorded, so it is not given (a verdict nobody can look up cannot be audited); retry later".into())
        }
        Ok(Err(e)) => {
            tracing::error!(error = %evident_format::Chain(&e), "the pipeline failed");
            Err("the decision failed (the server's log says why)".into())
        }
        Err(_) => Err("the decision failed (the server's log says why)".into()),
    }
}

#[tool_handler(router = self.tool_router)]
impl ServerHandler for Evident {
    fn get_info(&self) -> ServerConfig {
        ServerConfig::new(ServerCapabilities::builder().enable_tools().build())
            .with_server_info(
                Implementation::new("evident", env!("CARGO_PKG_VERSION"))
                    .with_title("evident: is the agent's \"done\" true?"),
            )
            .with_instructions(
                "Before you report a task as done, call submit_claim with the contract's name and your claim (what you changed: mutations with id, kind, target and time). The owner's contract decides, from what the server observes now. get_contract shows what will be checked. If the answer is not verified, do not report done: each unmet item says what evidence is missing or contradicts.",
            )
    }
}

/// Serves `cfg` on stdin/stdout until the client closes it.
pub async fn serve_stdio(cfg: Config) -> Result<(), StartError> {
    let running = Evident::new(cfg)
        .serve(rmcp::transport::stdio())
        .await
        .map_err(|e| StartError(format!("the MCP session did not start: {e}")))?;
    running
        .waiting()
        .await
        .map_err(|e| StartError(format!("the MCP session failed: {e}")))?;
    Ok(())
}

/// [`Config::max_sessions`] unless set.
pub const DEFAULT_MAX_SESSIONS: usize = 256;

/// The Streamable HTTP endpoint at `/mcp`, for `evident serve` to mount under its token
/// rule and Host check (so the SDK's own Host check is off: serve's applies, with its
/// `--allow-host` names). `stop` ends every session (SSE streams would otherwise hold
/// graceful shutdown open).
pub fn router(
    cfg: Config,
    body_limit: usize,
    stop: tokio_util::sync::CancellationToken,
) -> axum::Router {
    use rmcp::transport::streamable_http_server::{
        StreamableHttpServerConfig, StreamableHttpService, session::local::LocalSessionManager,
    };
    let max_sessions = cfg.max_sessions;
    let server = Evident::new(cfg);
    let sessions = Arc::new(LocalSessionManager::default());
    let service = StreamableHttpService::new(
        move || Ok(server.clone()),
        sessions.clone(),
        StreamableHttpServerConfig::default()
            .disable_allowed_hosts()
            .with_max_request_body_bytes(body_limit)
            .with_cancellation_token(stop),
    );
    axum::Router::new()
        .route_service("/mcp", service)
        .layer(axum::middleware::from_fn(move |req, next| {
            bound_sessions(sessions.clone(), max_sessions, req, next)
        }))
}

/// A request that would open a session (a POST without `Mcp-Session-Id`) while
/// `max` sessions are open is answered 503 with `Retry-After`; requests of open
/// sessions pass. The SDK closes a session when it ends or idles out, so the count is
/// of live ones.
async fn bound_sessions(
    sessions: Arc<rmcp::transport::streamable_http_server::session::local::LocalSessionManager>,
    max: usize,
    req: axum::extract::Request,
    next: axum::middleware::Next,
) -> axum::response::Response {
    use axum::response::IntoResponse;
    let opens = req.method() == http::Method::POST && !req.headers().contains_key("mcp-session-id");
    if opens && sessions.sessions.read().await.len() >= max {
        return (
            http::StatusCode::SERVICE_UNAVAILABLE,
            [
                (http::header::RETRY_AFTER, "60"),
                (http::header::CONTENT_TYPE, "application/problem+json"),
            ],
            format!(
                r#"{{"type":"about:blank","title":"Service Unavailable","status":503,"detail":"{max} MCP sessions are open, this server's limit; close one (DELETE /mcp) or retry later"}}"#
            ),
        )
            .into_response();
    }
    next.run(req).await
}
