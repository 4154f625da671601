//! evident where coding agents stop. `evident hook AGENT` reads the agent's event on
//! stdin, observes what changed in the repository since the session's baseline,
//! builds the claim from that (not from the agent's words), runs the owner's contract
//! through the gate, records the decision and answers in the agent's protocol. It
//! never crashes and never exits with a code an agent reads as "let it through": an
//! internal error refuses the stop with the error as the reason (unless the contract's
//! `on_unverified` is `warn` or `record`). See docs/agents.md.

#![warn(missing_docs)]

pub mod agent;
pub mod claim;
pub mod error;
pub mod gate;
pub mod init;
pub mod state;

use crate::error::{HookError, io, io_at};
use std::path::{Path, PathBuf};
use std::time::Duration;

use agent::{Agent, Answer, Event, Kind, TranscriptFormat};
use evident_format::OnUnverified;
pub use evident_gate::contract::NoChange;
use evident_probes::git::Witness;
use evident_rules::State;
use serde_json::Value;
use sha2::{Digest, Sha256};

/// Where the owner's contract lives in a repository (read at the baseline commit).
pub const CONTRACT_PATH: &str = ".evident/contract.toml";
/// Largest contract read.
const MAX_CONTRACT: u64 = 4 * 1024 * 1024;
/// Largest transcript read.
const MAX_TRANSCRIPT: u64 = 256 * 1024 * 1024;
/// Findings listed in a reason (the rest are counted): every file the agent makes
/// can be one, and an answer of megabytes is one an agent cannot take.
const MAX_FINDINGS_SHOWN: usize = 20;
/// Longest reason text before the closing instruction, in characters.
const MAX_REASON: usize = 16_000;

/// `text` cut to [`MAX_REASON`] characters, saying so: the verdict's list of unmet
/// mutations grows with the files the agent makes, too.
fn bounded(text: String) -> String {
    if text.chars().count() <= MAX_REASON {
        return text;
    }
    let cut: String = text.chars().take(MAX_REASON).collect();
    format!("{cut}… (cut at {MAX_REASON} characters; the whole decision is in the ledger)")
}

/// How the hook runs (from the command line).
#[derive(Debug, Clone)]
pub struct Options {
    /// The owner's contract outside the working tree (else `.evident/contract.toml`
    /// at the baseline commit).
    pub contract: Option<PathBuf>,
    /// `--state-dir`: where session state lives (else the XDG state directory).
    pub state_dir: Option<PathBuf>,
    /// Default: `ledger.db` in the state directory (outside the working tree).
    pub ledger: Option<String>,
    /// `--no-record`: decide without writing to the ledger.
    pub no_record: bool,
    /// `--key`: signs the gate's evidence, the ledger record and the session's snapshot.
    pub key: Option<PathBuf>,
    /// Checks observed at once.
    pub jobs: usize,
    /// `--timeout`: time for the whole gate; what is not observed by then is unverified.
    pub deadline: Duration,
    /// `--event NAME`: the event the command was registered for, for agents whose
    /// payload does not name it (Copilot CLI's camelCase events).
    pub event: Option<String>,
}

/// The contract's `[hook]` settings, with their defaults.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct HookSettings {
    /// What a stop with no change since the baseline does (default: run the checks).
    pub no_change: NoChange,
    /// Consecutive refusals after which a stop goes through, unverified (default 3, at least 1).
    pub max_refusals: u32,
}

impl HookSettings {
    /// The contract's `[hook]` settings, defaults filled in.
    pub fn of(contract: &evident_gate::Contract) -> HookSettings {
        let h = contract.hook.clone().unwrap_or_default();
        HookSettings {
            no_change: h.no_change.unwrap_or(NoChange::Run),
            max_refusals: h.max_refusals.unwrap_or(3).max(1),
        }
    }
}

/// Process environment, read through a function so tests can drive it.
pub type Env<'a> = &'a dyn Fn(&str) -> Option<String>;

/// Run one hook invocation: the agent's stdout (possibly empty) and diagnostic lines
/// for stderr. Never panics through: a panic becomes a refusal too.
pub fn run(agent: Agent, stdin: &[u8], opts: &Options, env: Env<'_>) -> (String, Vec<String>) {
    let started = time::OffsetDateTime::now_utc();
    let result = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
        handle(agent, stdin, opts, env, started)
    }));
    let (answer, mut log) = match result {
        Ok((a, log)) => (a, log),
        Err(_) => (
            Answer::Refuse {
                reason: "evident could not check this stop: internal error (a panic); the stop is refused because nothing was verified. Report this to the repository's owner.".into(),
            },
            vec!["evident hook: internal panic".into()],
        ),
    };
    // Cursor and Copilot have no field for a message to the user: stderr is where it
    // can be read (a loop guard's "NOT verified" above all).
    if let Answer::Allow { message: Some(m) } = &answer {
        log.push(m.clone());
    }
    (agent::render(agent, &answer), log)
}

/// How long past `--timeout` the hook may take before [`overdue`] answers in its place:
/// the gate's checks share the deadline, and what follows them (the tree hashed again,
/// the state saved) fits in this. `evident init` registers the agent's timeout 60 s
/// above the deadline, so the answer comes before the agent gives up on the hook.
pub fn grace(deadline: Duration) -> Duration {
    (deadline / 10).clamp(Duration::from_secs(1), Duration::from_secs(30))
}

/// The answer when the hook has not finished by `--timeout` plus [`grace`]: something
/// took longer than it may (a file of terabytes hashed, a lock held, a check's process
/// that does not stop). Every agent lets a stop through when its hook times out, so
/// the stop is refused here, before that; a session start says nothing.
pub fn overdue(agent: Agent, stdin: &[u8], opts: &Options) -> (String, Vec<String>) {
    let limit = opts.deadline + grace(opts.deadline);
    let kind = agent::parse_event(agent, stdin, opts.event.as_deref())
        .ok()
        .and_then(|e| e.kind);
    let (answer, line) = match kind {
        Some(Kind::Stop) | Some(Kind::SubagentStop) => (
            Answer::Refuse {
                reason: format!(
                    "evident could not finish checking this stop within {} s (its deadline, --timeout, plus {} s), so it is refused (nothing was verified). Something in the working tree or the checks takes too long: a very large file, a check that does not end, or another stop in this repository still being checked. Fix that, then stop again.",
                    limit.as_secs(),
                    grace(opts.deadline).as_secs()
                ),
            },
            format!(
                "evident hook: not finished within {} s: the stop is refused",
                limit.as_secs()
            ),
        ),
        _ => (
            Answer::Silent,
            format!("evident hook: not finished within {} s", limit.as_secs()),
        ),
    };
    (agent::render(agent, &answer), vec![line])
}

struct Failure {
    message: String,
    on_unverified: Option<OnUnverified>,
}

impl From<String> for Failure {
    fn from(message: String) -> Self {
        Failure {
            message,
            on_unverified: None,
        }
    }
}

impl From<HookError> for Failure {
    fn from(e: HookError) -> Self {
        Failure::from(evident_format::chain(&e))
    }
}

fn handle(
    agent: Agent,
    stdin: &[u8],
    opts: &Options,
    env: Env<'_>,
    started: time::OffsetDateTime,
) -> (Answer, Vec<String>) {
    let mut log = Vec::new();
    let event = match agent::parse_event(agent, stdin, opts.event.as_deref()) {
        Ok(e) => e,
        Err(e) => {
            let m = evident_format::chain(&e);
            return (refuse_error(&m, None), vec![m]);
        }
    };
    let runtime = match tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
    {
        Ok(r) => r,
        Err(e) => {
            let m = format!("cannot start the async runtime: {e}");
            return (refuse_error(&m, None), vec![m]);
        }
    };
    match event.kind {
        Some(Kind::SessionStart) => {
            match runtime.block_on(session_start(agent, &event, opts, env, started)) {
                Ok((line, pending)) => {
                    log.push(line);
                    match pending.map(|p| keep_snapshot(opts, p)) {
                        Some(Ok(l)) => log.push(l),
                        Some(Err(e)) => log.push(format!(
                            "evident hook: session start: the snapshot could not be kept ({}); the stop will be unverified",
                            evident_format::chain(&e)
                        )),
                        None => {}
                    }
                }
                // A session start cannot refuse anything: say so on stderr; the stop
                // falls back to the default branch's merge-base.
                Err(e) => log.push(format!(
                    "evident hook: session start: {}",
                    evident_format::chain(&e)
                )),
            }
            (Answer::Silent, log)
        }
        Some(Kind::Stop) | Some(Kind::SubagentStop)
            if event.status.as_deref().is_some_and(|s| s != "completed") =>
        {
            // Cursor runs its stop hook also when the user aborts the loop or it fails
            // on an error: the agent claims nothing then, and a follow-up message would
            // restart it against the user's abort.
            log.push(format!(
                "evident hook: the agent loop ended with status {:?}, not a claim of done; not checked",
                event.status.as_deref().unwrap_or_default()
            ));
            (Answer::Allow { message: None }, log)
        }
        Some(Kind::Stop) | Some(Kind::SubagentStop) => {
            match stop(agent, &event, opts, env, started, &runtime, &mut log) {
                Ok(a) => (a, log),
                Err(f) => {
                    log.push(format!("evident hook: {}", f.message));
                    (refuse_error(&f.message, f.on_unverified), log)
                }
            }
        }
        None => {
            // An event evident does not handle: say nothing, refuse nothing.
            log.push("evident hook: not a stop or session-start event; ignored".into());
            (Answer::Silent, log)
        }
    }
}

fn refuse_error(message: &str, on_unverified: Option<OnUnverified>) -> Answer {
    match on_unverified {
        Some(OnUnverified::Warn | OnUnverified::Record) => Answer::Allow {
            message: Some(format!(
                "evident could not check this stop ({message}); the contract's on_unverified lets it through, unverified"
            )),
        },
        _ => Answer::Refuse {
            reason: format!(
                "evident could not check this stop, so it is refused (nothing was verified): {message}"
            ),
        },
    }
}

/// The repository a hook event is about.
fn repo_dir(agent: Agent, event: &Event, env: Env<'_>) -> Result<PathBuf, HookError> {
    let dir = match (agent, env("CLAUDE_PROJECT_DIR")) {
        (Agent::ClaudeCode, Some(d)) if !d.is_empty() => d,
        _ => event
            .cwd
            .clone()
            .ok_or("the hook event names no cwd (the repository)")?,
    };
    PathBuf::from(&dir).canonicalize().map_err(io(dir.clone()))
}

fn state_dir(opts: &Options, env: Env<'_>) -> Result<PathBuf, HookError> {
    opts.state_dir
        .clone()
        .or_else(|| evident_ledger::place::state_dir(env))
        .ok_or_else(|| "no state directory: set --state-dir, XDG_STATE_HOME or HOME".into())
}

async fn open_witness(dir: &Path, env: Env<'_>) -> Result<Witness, HookError> {
    Witness::open(dir, env("PATH").as_deref())
        .await
        .map_err(HookError::Git)
}

/// The default baseline without a session start: the merge-base of HEAD with the
/// repository's default branch (the remote's first: the agent moves local branches
/// by committing), else HEAD.
pub async fn default_baseline(w: &Witness) -> Result<(String, String), HookError> {
    let head = w
        .resolve("HEAD")
        .await
        .map_err(HookError::from)?
        .ok_or("the repository has no commit yet: commit once so evident has a baseline")?;
    for r in [
        "refs/remotes/origin/HEAD",
        "refs/remotes/origin/main",
        "refs/remotes/origin/master",
        "refs/heads/main",
        "refs/heads/master",
    ] {
        if w.resolve(r).await.map_err(HookError::from)?.is_some()
            && let Some(mb) = w.merge_base("HEAD", r).await.map_err(HookError::from)?
        {
            return Ok((mb, format!("merge-base of HEAD with {r}")));
        }
    }
    Ok((head, "HEAD (no default branch found)".into()))
}

fn rfc3339(t: time::OffsetDateTime) -> String {
    t.format(&time::format_description::well_known::Rfc3339)
        .unwrap_or_default()
}

async fn session_start(
    agent: Agent,
    event: &Event,
    opts: &Options,
    env: Env<'_>,
    started: time::OffsetDateTime,
) -> Result<(String, Option<Pending>), HookError> {
    let dir = PathBuf::from(event.cwd.as_deref().ok_or("no cwd")?);
    let w = open_witness(&dir, env).await?;
    let top = w.top().canonicalize().map_err(io_at(w.top()))?;
    let store = state::Store::open(&state_dir(opts, env)?, &top)?;
    let head = w
        .resolve("HEAD")
        .await
        .map_err(HookError::from)?
        .ok_or("the repository has no commit yet")?;
    let key = state::session_key(&event.session_id, &top);
    let s = store.create(
        &key,
        &state::Session {
            session_id: event.session_id.clone(),
            repo: top.display().to_string(),
            baseline: head,
            baseline_from: "session start (HEAD)".into(),
            started_at: rfc3339(started),
            refusals: 0,
            last: None,
        },
    )?;
    let line = format!(
        "evident: session baseline {} ({})",
        s.baseline, s.baseline_from
    );
    // Where the contract declares [[snapshot]], the state before the agent's work,
    // taken once per session (a resumed session keeps the first).
    let path = store.snapshot_path(&key);
    if path.exists() {
        return Ok((line, None));
    }
    let (bytes, name, _) = owner_contract(agent, &w, opts, &top, &s.baseline).await?;
    let kind = if name.ends_with(".json") {
        "contract.json"
    } else {
        "contract.toml"
    };
    let contract =
        evident_gate::Contract::parse(&bytes, kind).map_err(|source| HookError::Contract {
            name: name.clone(),
            source,
        })?;
    if contract.contract.snapshots.is_empty() {
        return Ok((line, None));
    }
    let ctx = evident_probes::Context::from_process(top.clone());
    let doc = evident_gate::snapshot::take(
        &contract.contract,
        &ctx,
        opts.deadline.min(Duration::from_secs(600)),
        "evident-hook",
    )
    .await
    .map_err(|e| {
        let mut scrub = evident_probes::Scrubber::default();
        for s in &contract.contract.snapshots {
            s.source.register_secrets(&ctx.env, &mut scrub);
        }
        format!("snapshot: {}", scrub.scrub(&e.0))
    })?;
    let ledger = ledger_location(opts, env, &store);
    Ok((line, Some(Pending { path, ledger, doc })))
}

/// The owner's contract: `--contract` (outside the working tree) or
/// [`CONTRACT_PATH`] at the commit `rev`. Its bytes, its name, and whether it was read
/// from the repository.
async fn owner_contract(
    agent: Agent,
    w: &Witness,
    opts: &Options,
    top: &Path,
    rev: &str,
) -> Result<(Vec<u8>, String, bool), HookError> {
    let base_short = &rev[..rev.len().min(12)];
    Ok(match &opts.contract {
        Some(p) => {
            let real = p
                .canonicalize()
                .map_err(io(format!("--contract {}", p.display())))?;
            if real.starts_with(top) {
                return Err(format!(
                    "--contract {} lies inside the working tree {}, where the agent can rewrite it; hint: keep it outside, or commit it as {CONTRACT_PATH} (read at the baseline commit)",
                    real.display(),
                    top.display()
                ).into());
            }
            let b = std::fs::read(&real).map_err(io_at(&real))?;
            if b.len() as u64 > MAX_CONTRACT {
                return Err(format!("{}: larger than {MAX_CONTRACT} bytes", real.display()).into());
            }
            (b, real.display().to_string(), false)
        }
        None => {
            let b = w
                .file_at(rev, CONTRACT_PATH, MAX_CONTRACT)
                .await
                .map_err(HookError::Git)?
                .ok_or_else(|| {
                    format!(
                        "no contract: {CONTRACT_PATH} is not in the baseline commit {base_short}; hint: run `evident init {}` and commit the contract, or pass --contract PATH (outside the working tree)",
                        agent.name()
                    )
                })?;
            (b, format!("{CONTRACT_PATH} at {base_short}"), true)
        }
    })
}

/// The ledger the hook records in (and finds a session's snapshot in).
fn ledger_location(opts: &Options, env: Env<'_>, store: &state::Store) -> String {
    match &opts.ledger {
        Some(l) => l.clone(),
        None => match env("EVIDENT_LEDGER") {
            Some(l) if !l.is_empty() => l,
            _ => store.dir().join("ledger.db").display().to_string(),
        },
    }
}

/// A snapshot taken at session start, to be signed or recorded and kept.
struct Pending {
    path: PathBuf,
    ledger: String,
    doc: Value,
}

/// Signs the session's snapshot with `--key`, or records its hash in the ledger, and
/// keeps it in the state directory (outside the tree) for the stop's gate. Outside the
/// hook's runtime: the ledger runs its own.
fn keep_snapshot(opts: &Options, p: Pending) -> Result<String, HookError> {
    let mut doc = p.doc;
    let how = match &opts.key {
        Some(k) => {
            let key = evident_sign::Key::load(k).map_err(HookError::from)?;
            evident_sign::attach_signature(&mut doc, &key).map_err(HookError::from)?;
            format!("signed by {}", key.id())
        }
        None => {
            let (id, at) = evident_pipeline::record_snapshot(&doc, Some(&p.ledger))?;
            format!("recorded in {at} as #{id}")
        }
    };
    state::Store::save_snapshot(&p.path, &doc)?;
    Ok(format!(
        "evident: snapshot of the contract's [[snapshot]] sets taken ({how})"
    ))
}

fn stop(
    agent: Agent,
    event: &Event,
    opts: &Options,
    env: Env<'_>,
    started: time::OffsetDateTime,
    runtime: &tokio::runtime::Runtime,
    log: &mut Vec<String>,
) -> Result<Answer, Failure> {
    let dir = repo_dir(agent, event, env)?;
    let w = runtime.block_on(open_witness(&dir, env))?;
    let top = w.top().canonicalize().map_err(io_at(w.top()))?;
    let sdir = state_dir(opts, env)?;
    let store = state::Store::open(&sdir, &top)?;
    // Another session's stop may hold the lock for its whole gate: waiting without a
    // bound would run this hook past the agent's timeout, which lets the stop through.
    let _lock = store.lock(&top, opts.deadline / 3)?;
    let key = state::session_key(&event.session_id, &top);
    let mut session = match store.load(&key)? {
        Some(s) => s,
        None => {
            let (base, from) = runtime.block_on(default_baseline(&w))?;
            store.create(
                &key,
                &state::Session {
                    session_id: event.session_id.clone(),
                    repo: top.display().to_string(),
                    baseline: base,
                    baseline_from: from,
                    started_at: rfc3339(started),
                    refusals: 0,
                    last: None,
                },
            )?
        }
    };
    // An error from here on counts toward the loop guard like any refusal (the
    // contract's max_refusals once it was read, else the default): a set-up evident
    // cannot check must not trap the agent for ever. Under `on_unverified = "warn"`
    // or `"record"` an error lets the stop through as before.
    let mut settings = HookSettings {
        no_change: NoChange::Run,
        max_refusals: 3,
    };
    let at = Session {
        w: &w,
        top: &top,
        store: &store,
        key: &key,
    };
    match checked(
        agent,
        event,
        opts,
        env,
        started,
        runtime,
        log,
        &at,
        &mut session,
        &mut settings,
    ) {
        Ok(answer) => Ok(answer),
        Err(f)
            if matches!(
                f.on_unverified,
                Some(OnUnverified::Warn | OnUnverified::Record)
            ) =>
        {
            Err(f)
        }
        Err(f) => {
            log.push(format!("evident hook: {}", f.message));
            let reason = match refuse_error(&f.message, None) {
                Answer::Refuse { reason } => reason,
                _ => f.message.clone(),
            };
            Ok(refusal(
                &store,
                &key,
                &mut session,
                &settings,
                reason,
                None,
                log,
            )?)
        }
    }
}

/// Where a stop's checks run: the repository, its top, the state store and the
/// session's key.
struct Session<'a> {
    w: &'a Witness,
    top: &'a Path,
    store: &'a state::Store,
    key: &'a str,
}

/// The stop's checks once its session is known: the owner's contract, the claim built
/// from what changed, the gate, the answer. `settings` gets the contract's `[hook]`
/// settings as soon as the contract is read.
#[allow(clippy::too_many_arguments)]
fn checked(
    agent: Agent,
    event: &Event,
    opts: &Options,
    env: Env<'_>,
    started: time::OffsetDateTime,
    runtime: &tokio::runtime::Runtime,
    log: &mut Vec<String>,
    at: &Session<'_>,
    session: &mut state::Session,
    settings_out: &mut HookSettings,
) -> Result<Answer, Failure> {
    let (w, top, store, key) = (at.w, at.top, at.store, at.key);
    let clock = std::time::Instant::now();
    let base = session.baseline.clone();
    let base_short = base[..base.len().min(12)].to_string();

    // The owner's contract.
    let (contract_bytes, contract_name, in_tree) =
        runtime.block_on(owner_contract(agent, w, opts, top, &base))?;
    let file_kind = if contract_name.ends_with(".json") {
        "contract.json"
    } else {
        "contract.toml"
    };
    let contract = evident_gate::Contract::parse(&contract_bytes, file_kind).map_err(|source| {
        HookError::Contract {
            name: contract_name.to_string(),
            source,
        }
    })?;
    let settings = HookSettings::of(&contract.contract);
    *settings_out = settings;
    let policy = contract.contract.policy.on_unverified;
    let fail = |e: HookError| Failure {
        message: evident_format::chain(&e),
        on_unverified: policy,
    };
    let contract_hash = hex::encode(Sha256::digest(&contract_bytes));

    // What the world shows, and the claim built from it.
    let trace = read_transcript(agent, event, log);
    let mut scrub = evident_probes::Scrubber::default();
    let penv: std::collections::BTreeMap<String, String> = std::env::vars().collect();
    for c in &contract.contract.checks {
        c.source.register_secrets(&penv, &mut scrub);
    }
    let built = runtime
        .block_on(claim::build(
            w,
            claim::Input {
                task_id: format!("{}-session-{key}", agent.name()),
                base: &base,
                trace: trace.as_ref(),
                cwd: event.cwd.as_deref().map(Path::new).unwrap_or(top),
                last_message: event.last_assistant_message.clone(),
                task: event.prompt.clone(),
                at: started,
                scrub: &scrub,
            },
        ))
        // What the tree and the repository hold is the agent's: an error reading them
        // (a deleted object, an unreadable file) refuses the stop under every
        // on_unverified, or refuted work could pass as "could not check".
        .map_err(|e| {
            Failure::from(format!(
                "{} (the working tree or the repository could not be read; this refuses the stop whatever the contract's on_unverified says)",
                evident_format::chain(&e)
            ))
        })?;
    for f in built.findings.iter().take(MAX_FINDINGS_SHOWN) {
        log.push(format!("evident: finding: {f}"));
    }
    if built.findings.len() > MAX_FINDINGS_SHOWN {
        log.push(format!(
            "evident: … and {} more findings (all in the claim's x_observed.findings)",
            built.findings.len() - MAX_FINDINGS_SHOWN
        ));
    }

    // A contract changed in the tree is itself a reason to refuse.
    if in_tree
        && built
            .changes
            .changed
            .iter()
            .any(|(p, _)| p == CONTRACT_PATH.as_bytes())
    {
        let reason = format!(
            "evident refused this stop: the owner's contract {CONTRACT_PATH} differs from the baseline commit {base_short}. The gate reads it at the baseline, and a change to it in the working tree is not yours to make. Restore it (git checkout {base_short} -- {CONTRACT_PATH}) and stop again; a contract change needs the repository's owner."
        );
        return Ok(refusal(store, key, session, &settings, reason, None, log)?);
    }

    if built.changes.changed.is_empty() && settings.no_change == NoChange::Allow {
        return Ok(Answer::Allow {
            message: Some(format!(
                "evident: nothing changed since the baseline {base_short}; the contract allows a stop with no change"
            )),
        });
    }

    // A decision is reused while the tree and the contract are unchanged — when the
    // contract reads nothing but the tree: a database row, a key, an endpoint, git's
    // refs or a snapshot's sets can change while the tree's hash does not.
    let reads_only_the_tree = contract.contract.snapshots.is_empty()
        && contract.contract.checks.iter().all(|c| {
            matches!(
                c.source,
                evident_probes::Source::Command(_) | evident_probes::Source::File(_)
            )
        });
    // ...and only when every command runs sandboxed (reading nothing but the snapshot,
    // the system and the declared environment) and that environment is unchanged.
    let environment = reusable_environment(&contract.contract, top);
    if reads_only_the_tree
        && let Some(last) = session.last.clone()
        && (last.tree_hash == built.changes.tree_hash
            || last.after_tree_hash.as_deref() == Some(built.changes.tree_hash.as_str()))
        && last.contract_hash == contract_hash
        && environment.is_some()
        && last.environment == environment
    {
        log.push("evident: tree and contract unchanged since the last decision; reused".into());
        if last.state == "verified" {
            session.refusals = 0;
            store.save(key, session)?;
            return Ok(Answer::Allow {
                message: Some(format!(
                    "evident: verified (unchanged since the decision recorded {})",
                    last.record.as_deref().unwrap_or("without a ledger record")
                )),
            });
        }
        if matches!(policy, Some(OnUnverified::Warn | OnUnverified::Record))
            && last.state == "unverified"
        {
            return Ok(Answer::Allow {
                message: Some(
                    "evident: unverified (unchanged since the last decision); the contract's on_unverified lets the stop through"
                        .to_string(),
                ),
            });
        }
        return Ok(refusal(
            store,
            key,
            session,
            &settings,
            last.text,
            last.record,
            log,
        )?);
    }

    let ledger = ledger_location(opts, env, store);
    let before = store.load_snapshot(key)?;
    let decision = gate::decide(
        &contract,
        &contract_name,
        built.claim,
        top,
        &gate::Options {
            jobs: opts.jobs,
            // One deadline for the whole stop: what the lock and git took is spent.
            deadline: opts
                .deadline
                .saturating_sub(clock.elapsed())
                .max(Duration::from_secs(1)),
            ledger,
            no_record: opts.no_record,
            key: opts.key.clone(),
            baseline: base.clone(),
            before,
        },
    )
    .map_err(fail)?;
    let recorded = decision
        .record
        .as_ref()
        .map_or(String::new(), |r| format!(" (recorded {r})"));
    if let Some(r) = &decision.record {
        log.push(format!("evident: recorded {r}"));
    }
    let state_name = decision.state.as_str().to_string();
    let mut text = format!(
        "evident checked this stop against the owner's contract ({contract_name}) and the work is {state_name}, so the stop is refused{recorded}.\n{}",
        decision.explanation
    );
    if !built.findings.is_empty() {
        text.push_str("\nWhat git and the transcript show:");
        for f in built.findings.iter().take(MAX_FINDINGS_SHOWN) {
            text.push_str(&format!("\n- {f}"));
        }
        if built.findings.len() > MAX_FINDINGS_SHOWN {
            text.push_str(&format!(
                "\n- … and {} more (all in the claim's x_observed.findings)",
                built.findings.len() - MAX_FINDINGS_SHOWN
            ));
        }
    }
    let mut text = bounded(text);
    text.push_str(
        "\nMake every check pass (do not edit the tests or the contract), then stop again.",
    );
    // The agent's code runs while the gate runs (its commands, or its server behind
    // an endpoint or a page): it can write into the tree.
    let ran_agent_code = contract.contract.checks.iter().any(|c| {
        matches!(
            c.source,
            evident_probes::Source::Command(_)
                | evident_probes::Source::Http(_)
                | evident_probes::Source::Browser(_)
        )
    });
    let after_tree_hash = if ran_agent_code {
        // Unreadable after the run: treated as changed (the tree left is unknown).
        Some(
            runtime
                .block_on(w.changes(&base))
                .map(|c| c.tree_hash)
                .unwrap_or_default(),
        )
    } else {
        None
    };
    let changed_by_run = after_tree_hash
        .as_deref()
        .is_some_and(|h| h != built.changes.tree_hash);
    if decision.state == State::Verified && changed_by_run {
        // Verified was decided on the tree before the run; the run (the agent's code)
        // left another one, which nothing checked: not a verified stop, and not a
        // decision to reuse for that tree.
        session.last = None;
        let reason = format!(
            "evident checked this stop against the owner's contract ({contract_name}) and the checks passed{recorded}, but the working tree changed while they ran (their run, or another process): the tree left now is not the tree that was checked, so the stop is refused. Stop again to check the tree as it is (keep what the tests write out of the tree, or in .gitignore)."
        );
        return Ok(refusal(
            store,
            key,
            session,
            &settings,
            reason,
            decision.record,
            log,
        )?);
    }
    session.last = Some(state::LastDecision {
        tree_hash: built.changes.tree_hash.clone(),
        // A refusal may be reused for the tree its run left; a verified decision only
        // for the tree it checked (equal here).
        after_tree_hash: after_tree_hash.filter(|_| decision.state != State::Verified),
        contract_hash,
        state: state_name.clone(),
        text: text.clone(),
        record: decision.record.clone(),
        environment,
    });
    match decision.state {
        State::Verified => {
            session.refusals = 0;
            store.save(key, session)?;
            Ok(Answer::Allow {
                message: Some(format!("evident: verified{recorded}")),
            })
        }
        State::Unverified
            if matches!(
                decision.on_unverified,
                OnUnverified::Warn | OnUnverified::Record
            ) =>
        {
            store.save(key, session)?;
            Ok(Answer::Allow {
                message: Some(format!(
                    "evident: unverified{recorded}; the contract's on_unverified = {:?} lets the stop through",
                    decision.on_unverified
                )),
            })
        }
        _ => Ok(refusal(
            store,
            key,
            session,
            &settings,
            text,
            decision.record,
            log,
        )?),
    }
}

/// Count a refusal; past the loop guard, let the stop through with a message.
fn refusal(
    store: &state::Store,
    key: &str,
    session: &mut state::Session,
    settings: &HookSettings,
    reason: String,
    record: Option<String>,
    log: &mut Vec<String>,
) -> Result<Answer, HookError> {
    session.refusals += 1;
    let n = session.refusals;
    if n >= settings.max_refusals {
        session.refusals = 0;
        store.save(key, session)?;
        log.push(format!("evident: loop guard: {n} consecutive refusals"));
        return Ok(Answer::Allow {
            message: Some(format!(
                "evident: the stop was refused {n} times in a row, so it goes through now (the contract's [hook] max_refusals = {}), but the work is NOT verified{}. Last reason: {reason}",
                settings.max_refusals,
                record.map_or(String::new(), |r| format!(" (recorded {r})"))
            )),
        });
    }
    store.save(key, session)?;
    Ok(Answer::Refuse {
        reason: format!(
            "{reason}\n(refusal {n} of at most {} in a row)",
            settings.max_refusals
        ),
    })
}

/// The agent's transcript, when readable; it only informs, so a problem is logged.
fn read_transcript(
    agent: Agent,
    event: &Event,
    log: &mut Vec<String>,
) -> Option<evident_traces::Trace> {
    let format = agent.transcript_format()?;
    let path = event.transcript_path.as_deref()?;
    read_trace(format, Path::new(path))
        .map_err(|e| {
            log.push(format!(
                "evident: transcript not used: {}",
                evident_format::chain(&e)
            ))
        })
        .ok()
}

/// Read a transcript file of the given format.
pub fn read_trace(
    format: TranscriptFormat,
    path: &Path,
) -> Result<evident_traces::Trace, HookError> {
    use std::io::Read;
    let f = std::fs::File::open(path).map_err(io_at(path))?;
    let mut b = Vec::new();
    f.take(MAX_TRANSCRIPT + 1)
        .read_to_end(&mut b)
        .map_err(io_at(path))?;
    if b.len() as u64 > MAX_TRANSCRIPT {
        return Err(format!("{}: larger than {MAX_TRANSCRIPT} bytes", path.display()).into());
    }
    let name = path.display().to_string();
    match format {
        TranscriptFormat::ClaudeCode => evident_traces::claude_code::read(&b, &name),
        TranscriptFormat::Codex => evident_traces::codex::read(&b, &name),
        TranscriptFormat::Atif => evident_traces::atif::read(&b, &name),
    }
    .map_err(HookError::from)
}

/// `evident claim --from FORMAT TRANSCRIPT [--repo DIR] [--base REV]`: the claim the
/// hook would build, with its findings.
pub fn claim_from(
    format: TranscriptFormat,
    transcript: &Path,
    repo: &Path,
    base: Option<&str>,
    env: Env<'_>,
) -> Result<serde_json::Value, HookError> {
    let trace = read_trace(format, transcript)?;
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .map_err(io("cannot start the async runtime"))?;
    runtime.block_on(async {
        let w = open_witness(repo, env).await?;
        let base = match base {
            Some(b) => w
                .resolve(b)
                .await
                .map_err(HookError::from)?
                .ok_or_else(|| format!("--base {b:?} names no commit"))?,
            None => default_baseline(&w).await?.0,
        };
        let scrub = evident_probes::Scrubber::default();
        let cwd = repo.canonicalize().map_err(io_at(repo))?;
        let built = claim::build(
            &w,
            claim::Input {
                task_id: format!(
                    "transcript-{}",
                    &hex::encode(Sha256::digest(transcript.display().to_string()))[..16]
                ),
                base: &base,
                trace: Some(&trace),
                cwd: &cwd,
                last_message: None,
                task: None,
                at: time::OffsetDateTime::now_utc(),
                scrub: &scrub,
            },
        )
        .await?;
        Ok(built.claim)
    })
}

/// The digest of what the contract's command checks read besides the tree — their
/// declared environments — when a decision on them may be reused: every command runs
/// sandboxed here. `None` when it may not (no sandbox, or an environment that cannot be
/// read): command checks run without a sandbox are never reused.
fn reusable_environment(contract: &evident_gate::Contract, top: &Path) -> Option<String> {
    use sha2::Digest;
    let commands: Vec<&evident_probes::CommandSpec> = contract
        .checks
        .iter()
        .filter_map(|c| match &c.source {
            evident_probes::Source::Command(s) => Some(s),
            _ => None,
        })
        .collect();
    if !commands.is_empty() && evident_probes::sandbox::landlock_abi() == 0 {
        return None;
    }
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(30);
    let mut h = sha2::Sha256::new();
    for c in commands {
        for rel in &c.environment {
            let real = std::fs::canonicalize(top.join(rel)).ok()?;
            h.update(rel.as_bytes());
            h.update(evident_probes::environment_digest(&real, deadline).ok()?);
        }
    }
    Some(hex::encode(h.finalize()))
}
