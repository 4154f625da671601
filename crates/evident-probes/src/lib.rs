//! Witnesses that observe the world now: test runs, endpoints, files, databases, git.
//! An error is never a match.
//!
//! The gate calls one function, [`observe`], with a [`Source`] written by the task owner
//! in the contract. It returns an [`Observation`]: the observed JSON object, or a
//! [`ProbeError`] saying why nothing could be observed. Every probe has a time limit and
//! a size limit on what it reads; no probe follows a path out of the contract's root,
//! follows a redirect it was not allowed to, or prints a secret. See `docs/probes.md`.

#![warn(missing_docs)]

use std::collections::BTreeMap;
use std::path::PathBuf;
use std::time::Duration;

use serde_json::{Map, Value};

mod base_tests;
mod browser;
mod cdp;
mod command;
pub mod confined;
mod error;
mod file;
pub mod git;
pub mod github;
mod http;
mod kv;
mod origin_proxy;
mod paths;
pub mod postcondition;
mod protect;
pub mod reaper;
pub mod sandbox;
mod secret;
pub mod sets;
mod snapshot;
mod spec;
mod sql;
pub mod summary;

/// The command runner (own process group killed whole, noted by the reaper, cleared
/// environment, output hashed, capped and parsed), for crates that run programs
/// themselves (the close-out audit): one runner, not a copy per crate.
pub use command::{Finished, Launch, Stream, resolve_program, run as run_command};
pub use error::{Escape, ProbeError};
pub use secret::{EnvRef, EnvValue, MIN_SCRUB_LEN, Scrubber, redact_url};
pub use snapshot::digest_tree as environment_digest;
pub use spec::{
    BrowserSpec, CommandSpec, DirectoryPostcondition, FileSpec, GitSpec, GithubPrSpec, HttpSpec,
    IgnoredFiles, JsonObjectPostcondition, Method, Postcondition, PrState, Protect, Redirects,
    RedisOp, RedisSpec, Runner, Source, SqlSpec, SqliteSpec, TextFilePostcondition,
};

/// An observed object: the keys an owner's `expected` is compared with.
pub type Object = Map<String, Value>;

/// Where and with what environment probes run.
#[derive(Clone, Default)]
pub struct Context {
    /// The contract's directory: every path in a source is relative to it and must stay
    /// beneath it.
    pub root: PathBuf,
    /// A snapshot of the environment (tests inject their own). Env references in sources
    /// and `inherit_env` read from here, never from the live process environment.
    pub env: BTreeMap<String, String>,
    /// The revision `protect = { base = "@baseline" }` stands for: a coding session's
    /// recorded baseline (the hook) or `gate --baseline REV`. None: such a check
    /// cannot run and observes nothing.
    pub baseline: Option<String>,
    /// The secrets of the whole contract, registered by the gate before it observes
    /// ([`Source::register_secrets`] of every check): a digest a probe publishes (a
    /// file's `sha256`, a command's `stdout_sha256`) is taken of the content as
    /// scrubbed of them, so a file holding only a password does not publish its hash.
    pub secrets: Scrubber,
}

/// Names only: the environment holds secrets, and a debug print must not show them.
impl std::fmt::Debug for Context {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Context")
            .field("root", &self.root)
            .field("env", &self.env.keys().collect::<Vec<_>>())
            .field("baseline", &self.baseline)
            .finish()
    }
}

impl Context {
    /// The given root and the current process environment (variables that are not
    /// UTF-8 are left out).
    pub fn from_process(root: impl Into<PathBuf>) -> Self {
        let env = std::env::vars_os()
            .filter_map(|(k, v)| Some((k.into_string().ok()?, v.into_string().ok()?)))
            .collect();
        Context {
            root: root.into(),
            env,
            baseline: None,
            secrets: Scrubber::default(),
        }
    }
}

/// The result of one probe run.
#[derive(Debug, Clone)]
pub struct Observation {
    /// The observed object, or why nothing could be observed. An error can never become
    /// a match.
    pub value: Result<Object, ProbeError>,
    /// The moment the observation completed (evidence `at`).
    pub completed_at: time::OffsetDateTime,
}

impl Source {
    /// The source's kind as written in the contract (`command`, `http`, ...).
    pub fn kind(&self) -> &'static str {
        match self {
            Source::Command(_) => "command",
            Source::Http(_) => "http",
            Source::File(_) => "file",
            Source::Sqlite(_) => "sqlite",
            Source::Postgres(_) => "postgres",
            Source::Mysql(_) => "mysql",
            Source::Redis(_) => "redis",
            Source::Git(_) => "git",
            Source::Browser(_) => "browser",
            Source::GithubPr(_) => "github_pr",
            Source::SignedBy(_) => "signed_by",
        }
    }

    /// For a source whose observation has a fixed set of keys (a file postcondition,
    /// github_pr): those keys with their JSON types. An expectation on any other key
    /// could never be met.
    pub fn closed_keys(&self) -> Option<&'static [(&'static str, &'static str)]> {
        match self {
            Source::File(FileSpec {
                postcondition: Some(pc),
                ..
            }) => Some(postcondition::observed_keys(pc)),
            Source::GithubPr(_) => Some(&github::OBSERVED_KEYS),
            _ => None,
        }
    }

    /// Whether the observation carries only kinds, flags, counts and fixed reason codes
    /// (never a path, name, key or value), so the check may be `private`.
    pub fn values_free(&self) -> bool {
        self.closed_keys().is_some()
    }

    /// The target as a `private` check shows it: the kind of observation, nothing the
    /// contract names.
    pub fn private_target(&self) -> String {
        match self {
            Source::File(FileSpec {
                postcondition: Some(pc),
                ..
            }) => format!("file {} postcondition (private)", pc.kind()),
            Source::GithubPr(_) => "github_pr pull request (private)".into(),
            other => format!("{} (private)", other.kind()),
        }
    }

    /// Checks of the source's own fields that can name the field at fault:
    /// `(field under the source, message with a hint)`, e.g.
    /// `("github_pr.expected_head_oid", "...")`.
    pub fn check_fields(&self) -> Result<(), (String, String)> {
        match self {
            Source::File(f) => {
                let Some(pc) = &f.postcondition else {
                    return Ok(());
                };
                let views = [
                    ("text", f.text),
                    ("contains", !f.contains.is_empty()),
                    ("pointers", !f.pointers.is_empty()),
                ];
                if let Some((name, _)) = views.iter().find(|(_, on)| *on) {
                    return Err((
                        format!("file.{name}"),
                        format!(
                            "{name} observes the file's content, which a postcondition never shows (hint: drop {name}; the postcondition compares the content itself)"
                        ),
                    ));
                }
                postcondition::check(&f.path, pc).map_err(|(field, m)| (format!("file.{field}"), m))
            }
            Source::GithubPr(g) => github::check(g),
            _ => Ok(()),
        }
    }

    /// The expectation used when the contract gives none: `{exit_code: 0, ran: true}`
    /// for a command; `None` (the contract must give one) for every other source, since
    /// only the owner knows what value a readback should find.
    pub fn default_expected(&self) -> Option<Object> {
        match self {
            Source::Command(_) => {
                let mut m = Map::new();
                m.insert("exit_code".into(), Value::from(0));
                m.insert("ran".into(), Value::Bool(true));
                Some(m)
            }
            Source::File(FileSpec {
                postcondition: Some(_),
                ..
            }) => Some(postcondition::default_expected()),
            Source::GithubPr(_) => Some(github::default_expected()),
            _ => None,
        }
    }

    /// Let the source observe what the expectation asks about and could not be observed
    /// otherwise. Today: an HTTP expectation `body_contains = "text"` sets the spec's
    /// `body_contains` when the spec has none, so the owner writes the string once.
    pub fn adopt_expected(&mut self, expected: &Object) {
        if let Source::Http(h) = self
            && h.body_contains.is_none()
            && let Some(Value::String(s)) = expected.get("body_contains")
        {
            h.body_contains = Some(s.clone());
        }
        // `tests_passed = ["tests/test_zip.py::test_a"]`: the command reads those
        // tests' results from its runner's machine report.
        // `attributes = { href = "/paid" }`: the browser reads those attributes.
        if let Source::Browser(b) = self
            && let Some(Value::Object(names)) = expected.get("attributes")
        {
            for name in names.keys() {
                if !b.attributes.contains(name) {
                    b.attributes.push(name.clone());
                }
            }
        }
        if let Source::Command(c) = self
            && c.tests_passed.is_empty()
            && let Some(Value::Array(names)) = expected.get("tests_passed")
        {
            c.tests_passed = names
                .iter()
                .filter_map(|v| v.as_str().map(String::from))
                .collect();
        }
    }

    /// A short description of what is observed, safe to print: URLs are redacted and
    /// URLs held in env vars are named by the variable, never shown.
    pub fn target(&self) -> String {
        // The bound values are the contract's literals (never secrets): which record
        // was read matters to a person reading the report.
        fn params(p: &[Value]) -> String {
            if p.is_empty() {
                return String::new();
            }
            let shown: Vec<String> = p.iter().map(Value::to_string).collect();
            format!(" with [{}]", short(&shown.join(", ")))
        }
        fn short(q: &str) -> String {
            let one_line = q.split_whitespace().collect::<Vec<_>>().join(" ");
            if one_line.chars().count() > 80 {
                let cut: String = one_line.chars().take(77).collect();
                format!("{cut}...")
            } else {
                one_line
            }
        }
        match self {
            Source::Command(c) => {
                if c.shell {
                    format!("sh -c {:?}", c.argv.join(" "))
                } else {
                    c.argv.join(" ")
                }
            }
            Source::Http(h) => {
                let method = match h.method {
                    Method::Get => "GET",
                    Method::Head => "HEAD",
                };
                match (&h.url, &h.url_env) {
                    (Some(u), _) => format!("{method} {}", redact_url(u)),
                    (None, Some(e)) => format!("{method} ${e}"),
                    (None, None) => format!("{method} <no url>"),
                }
            }
            Source::File(f) => match &f.postcondition {
                Some(pc) => format!("file {} {} postcondition", f.path, pc.kind()),
                None => format!("file {}", f.path),
            },
            Source::GithubPr(g) => {
                let mut s = format!("github_pr {}#{}", g.repository, g.pull_number);
                if let Some(u) = &g.api_url {
                    s.push_str(&format!(" at {}", redact_url(u)));
                }
                s
            }
            Source::Sqlite(s) => format!(
                "sqlite {}: {}{}",
                s.path,
                short(&s.query),
                params(&s.params)
            ),
            Source::Postgres(s) => format!(
                "postgres ${}: {}{}",
                s.url_env,
                short(&s.query),
                params(&s.params)
            ),
            Source::Mysql(s) => format!(
                "mysql ${}: {}{}",
                s.url_env,
                short(&s.query),
                params(&s.params)
            ),
            Source::Redis(r) => {
                let op = match r.op {
                    RedisOp::Get => "GET",
                    RedisOp::Hgetall => "HGETALL",
                    RedisOp::Exists => "EXISTS",
                };
                format!("redis ${}: {op} {}", r.url_env, r.key)
            }
            Source::Git(g) => {
                let mut s = format!(
                    "git {} at {}",
                    g.repo.as_deref().unwrap_or("."),
                    g.rev.as_deref().unwrap_or("HEAD")
                );
                if let Some(f) = &g.file {
                    s.push_str(&format!(" file {f}"));
                }
                s
            }
            Source::Browser(b) => {
                let page = match (&b.url, &b.url_env) {
                    (Some(u), _) => redact_url(u),
                    (None, Some(e)) => format!("${e}"),
                    (None, None) => "<no url>".into(),
                };
                format!("browser {page} {}", short(&b.selector))
            }
            Source::SignedBy(id) => format!("signed by {id}"),
        }
    }

    /// Check what can be checked without touching the world (paths stay under the root,
    /// exactly one URL, no inline password, pointers well formed, limits positive), so
    /// the gate can reject a bad contract before running anything. [`observe`] runs the
    /// same checks first.
    pub fn validate(&self) -> Result<(), ProbeError> {
        fn pointers(p: &BTreeMap<String, String>) -> Result<(), ProbeError> {
            p.values().try_for_each(|v| file::check_pointer(v))
        }
        fn positive(name: &str, v: Option<u64>) -> Result<(), ProbeError> {
            match v {
                Some(0) => Err(ProbeError::invalid(format!("{name} must be at least 1"))),
                _ => Ok(()),
            }
        }
        fn no_dotdot(p: &str) -> Result<(), ProbeError> {
            paths::relative(p).map(|_| ())
        }
        effective_limit(self, Duration::MAX)?;
        self.check_fields()
            .map_err(|(field, m)| ProbeError::invalid(format!("{field}: {m}")))?;
        match self {
            Source::Command(c) => {
                if c.argv.is_empty() {
                    return Err(ProbeError::invalid("argv is empty"));
                }
                if c.argv[0].is_empty() {
                    return Err(ProbeError::invalid("argv[0] is empty"));
                }
                if c.argv.iter().any(|a| a.contains('\0')) {
                    return Err(ProbeError::invalid("argv contains a NUL byte"));
                }
                if c.shell && c.argv.len() != 1 {
                    return Err(ProbeError::invalid(
                        "with shell = true, argv must be exactly one string (the script)",
                    ));
                }
                if c.runner == Some(Runner::Junit) && c.junit.is_none() {
                    return Err(ProbeError::invalid("runner = \"junit\" needs a junit path"));
                }
                if let Some(cwd) = &c.cwd {
                    no_dotdot(cwd)?;
                }
                if let Some(j) = &c.junit {
                    no_dotdot(j)?;
                }
                for k in c.env.keys() {
                    if k.is_empty() || k.contains('=') || k.contains('\0') {
                        return Err(ProbeError::invalid(format!(
                            "environment variable name {k:?} is not valid"
                        )));
                    }
                }
                command::validate(c)
            }
            Source::Http(h) => {
                match (&h.url, &h.url_env) {
                    (Some(u), None) => {
                        let parsed = url::Url::parse(u).map_err(|e| {
                            ProbeError::invalid(format!("the URL is not valid: {e}"))
                        })?;
                        if parsed.password().is_some() {
                            return Err(ProbeError::invalid(
                                "url contains a password; put the URL in an environment variable and name it in url_env",
                            ));
                        }
                        if parsed.scheme() != "http" && parsed.scheme() != "https" {
                            return Err(ProbeError::invalid(format!(
                                "URL scheme {:?} is not http or https",
                                parsed.scheme()
                            )));
                        }
                    }
                    (None, Some(_)) => {}
                    _ => return Err(ProbeError::invalid("give exactly one of url and url_env")),
                }
                if h.method == Method::Head && (h.body_contains.is_some() || !h.pointers.is_empty())
                {
                    return Err(ProbeError::invalid(
                        "a HEAD request has no body: body_contains and pointers need GET",
                    ));
                }
                positive("max_body_bytes", h.max_body_bytes)?;
                pointers(&h.pointers)
            }
            Source::File(f) => {
                no_dotdot(&f.path)?;
                positive("max_bytes", f.max_bytes)?;
                pointers(&f.pointers)
            }
            Source::Sqlite(s) => {
                no_dotdot(&s.path)?;
                positive("max_rows", s.max_rows)
            }
            Source::Postgres(s) => {
                sql::search_path(s)?;
                positive("max_rows", s.max_rows)
            }
            Source::Mysql(s) => {
                if s.search_path.is_some() {
                    return Err(ProbeError::invalid(
                        "search_path is for PostgreSQL: MySQL and MariaDB resolve a name in the URL's database",
                    ));
                }
                positive("max_rows", s.max_rows)
            }
            Source::Redis(r) => positive("max_bytes", r.max_bytes),
            Source::Git(g) => {
                if let Some(r) = &g.repo {
                    no_dotdot(r)?;
                }
                if let Some(f) = &g.file {
                    no_dotdot(f)?;
                }
                git::check_rev(g.rev.as_deref().unwrap_or("HEAD"))?;
                positive("max_bytes", g.max_bytes)
            }
            Source::Browser(b) => browser::validate(b),
            Source::GithubPr(_) => Ok(()),
            Source::SignedBy(id) if id.trim().is_empty() => {
                Err(ProbeError::invalid("signed_by must name a verifier id"))
            }
            Source::SignedBy(_) => Ok(()),
        }
    }

    /// Register every secret this source names in the environment with `scrub`: URLs
    /// held in env vars (with their passwords and query tokens) and `{ env = "NAME" }`
    /// values of headers and command variables. The gate scrubs every observation with
    /// the secrets of the whole contract, so a secret one check uses cannot show
    /// through another that happens to observe it (a config file read as text).
    /// Variables a command only inherits (`inherit_env`: PATH, HOME, ...) are not
    /// secrets as a whole, but what they hold by meaning is: the whole value of one
    /// whose name means a credential (`GITHUB_TOKEN`, `PGPASSWORD`), the credential
    /// parts of any other (`DATABASE_URL`'s password), since the command could write
    /// them where another check reads (found by the red team: a test wrote the
    /// inherited URL's password into the file a readback observed).
    pub fn register_secrets(&self, env: &BTreeMap<String, String>, scrub: &mut Scrubber) {
        if let Source::Command(c) = self {
            for name in &c.inherit_env {
                match env.get(name) {
                    Some(x) if secret::is_credential_param(name) => scrub.add(x),
                    Some(x) => scrub.add_credentials_of(x),
                    None => {}
                }
            }
        }
        let mut value = |v: &EnvValue| {
            if let EnvValue::Env(r) = v
                && let Some(x) = env.get(&r.env)
            {
                scrub.add(x);
            }
        };
        let mut urls: Vec<&str> = Vec::new();
        match self {
            Source::Command(c) => c.env.values().for_each(&mut value),
            Source::Http(h) => {
                h.headers.values().for_each(&mut value);
                urls.extend(h.url_env.as_deref());
            }
            Source::Postgres(s) | Source::Mysql(s) => urls.push(&s.url_env),
            Source::Redis(r) => urls.push(&r.url_env),
            Source::Browser(b) => {
                b.headers.values().for_each(&mut value);
                b.cookies.values().for_each(&mut value);
                urls.extend(b.url_env.as_deref());
            }
            Source::GithubPr(g) => {
                if let Some(t) = env.get(&g.token_env) {
                    scrub.add(t);
                }
            }
            Source::File(_) | Source::Sqlite(_) | Source::Git(_) | Source::SignedBy(_) => {}
        }
        for name in urls {
            if let Some(u) = env.get(name) {
                scrub.add_url(u);
            }
        }
    }

    fn own_timeout(&self) -> Option<f64> {
        match self {
            Source::Command(c) => c.timeout_s,
            Source::Http(h) => h.timeout_s,
            Source::Browser(b) => b.timeout_s,
            Source::GithubPr(g) => Some(g.timeout_s.unwrap_or(github::DEFAULT_TIMEOUT_S)),
            _ => None,
        }
    }
}

/// Run the probe once, now. The time limit is the smaller of `timeout` and the source's
/// own `timeout_s`; when it passes, the probe is abandoned (a command's whole process
/// group is killed) and the observation is [`ProbeError::Timeout`].
pub async fn observe(source: &Source, ctx: &Context, timeout: Duration) -> Observation {
    let mut scrub = Scrubber::default();
    let checked = source
        .validate()
        .and_then(|()| effective_limit(source, timeout));
    let value = match checked {
        Err(e) => Err(e),
        Ok(limit) => {
            let fut = run(source, ctx, limit, &mut scrub);
            match tokio::time::timeout(limit, fut).await {
                Ok(r) => r,
                Err(_) => Err(ProbeError::Timeout {
                    limit_ms: u64::try_from(limit.as_millis()).unwrap_or(u64::MAX),
                }),
            }
        }
    };
    let value = match value {
        // Observed strings are scrubbed too: a server may echo a token, a row may hold
        // a password. A contract never writes a secret in `expected`, so this cannot
        // turn a true mismatch into a match.
        Ok(obj) => match scrub.scrub_value(Value::Object(obj)) {
            Value::Object(o) => Ok(o),
            _ => Err(ProbeError::invalid(
                "internal: scrubbed observation is not an object",
            )),
        },
        Err(e) => Err(e.scrubbed(&scrub)),
    };
    Observation {
        value,
        completed_at: time::OffsetDateTime::now_utc(),
    }
}

fn effective_limit(source: &Source, timeout: Duration) -> Result<Duration, ProbeError> {
    match source.own_timeout() {
        None => Ok(timeout),
        Some(s) => {
            let own = Duration::try_from_secs_f64(s)
                .ok()
                .filter(|d| !d.is_zero())
                .ok_or_else(|| {
                    ProbeError::invalid(format!("timeout_s must be a positive number, got {s}"))
                })?;
            Ok(own.min(timeout))
        }
    }
}

async fn run(
    source: &Source,
    ctx: &Context,
    limit: Duration,
    scrub: &mut Scrubber,
) -> Result<Object, ProbeError> {
    match source {
        Source::Command(c) => command::observe(c, ctx, limit, scrub).await,
        Source::Http(h) => http::observe(h, ctx, limit, scrub).await,
        Source::File(f) => file::observe(f, ctx).await,
        Source::Sqlite(s) => sql::observe_sqlite(s, ctx, limit).await,
        Source::Postgres(s) => sql::observe_postgres(s, ctx, limit, scrub).await,
        Source::Mysql(s) => sql::observe_mysql(s, ctx, limit, scrub).await,
        Source::Redis(r) => kv::observe(r, ctx, scrub).await,
        Source::Git(g) => git::observe(g, ctx, limit).await,
        Source::Browser(b) => browser::observe(b, ctx, limit, scrub).await,
        Source::GithubPr(g) => github::observe(g, ctx, limit, scrub).await,
        Source::SignedBy(_) => Err(ProbeError::invalid(
            "a signed_by check is decided by the gate from the claim's signed evidence; no probe observes it",
        )),
    }
}
