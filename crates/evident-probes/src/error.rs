//! Why nothing could be observed. Every variant prints a specific reason and none ever
//! carries a secret: URLs are redacted and env values scrubbed before they get here.

use serde::Serialize;

/// How a path tried to leave the contract's root.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum Escape {
    /// A `..` component (refused lexically, before touching the file system).
    DotDot,
    /// An absolute path.
    Absolute,
    /// A symlink whose target lies outside the root (or is absolute).
    Symlink,
}

impl std::fmt::Display for Escape {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(match self {
            Escape::DotDot => "a `..` component",
            Escape::Absolute => "an absolute path",
            Escape::Symlink => "a symlink that leads outside the root",
        })
    }
}

/// The reason a probe could not observe. An error is never a match: the gate turns it
/// into "no observation" (unverified), never into a satisfied or refuted expectation.
#[derive(Debug, Clone, PartialEq, thiserror::Error, Serialize)]
#[serde(tag = "kind", rename_all = "snake_case")]
pub enum ProbeError {
    /// The source itself is unusable (empty argv, a password written inline, ...).
    #[error("invalid source: {reason}")]
    InvalidSpec { reason: String },
    /// A variable the source names is not set in the environment.
    #[error("environment variable {name} is not set")]
    EnvMissing { name: String },
    /// The probe's time limit passed before the observation completed.
    #[error("timed out after {limit_ms} ms")]
    Timeout { limit_ms: u64 },
    /// A path named by the source would leave the contract's root.
    #[error("path {path:?} escapes the contract root through {via}")]
    PathEscape { path: String, via: Escape },
    /// A dangling symlink: neither present nor absent, so neither is claimed.
    #[error("path {path:?} is a dangling symlink")]
    DanglingSymlink { path: String },
    /// Reading a local file failed for a reason other than absence.
    #[error("cannot read {path:?}: {reason}")]
    Io { path: String, reason: String },
    /// More data than the source's size limit allows; nothing partial is observed.
    #[error("{what} exceeds the limit of {limit} bytes")]
    Oversize { what: String, limit: u64 },
    /// The content is not what the requested view needs (JSON, UTF-8, ...).
    #[error("{what} is not {expected}: {reason}")]
    Format {
        what: String,
        expected: String,
        reason: String,
    },
    /// Nothing listened at the address.
    #[error("connection refused by {target}")]
    ConnectionRefused { target: String },
    /// The connection could not be made or broke (DNS, unreachable, TLS, reset, ...).
    #[error("cannot connect to {target}: {reason}")]
    Connect { target: String, reason: String },
    /// A redirect answered and the source does not allow following it.
    #[error(
        "redirect refused: status {status} to {location:?} (set redirects = \"follow\" or \"observe\")"
    )]
    RedirectRefused { status: u16, location: String },
    /// Any other HTTP failure (too many redirects, a broken body, ...).
    #[error("HTTP request failed: {reason}")]
    Http { reason: String },
    /// The database was reached but refused us (authentication, unknown database, ...).
    #[error("database {target} refused the session: {reason}")]
    Database { target: String, reason: String },
    /// The query, key or revision was rejected by the system asked.
    #[error("query rejected: {reason}")]
    BadQuery { reason: String },
    /// A column whose SQL type has no faithful JSON form; cast it in the query.
    #[error(
        "column {column:?} has type {sql_type}, which is not read; cast it in the query (for example to text)"
    )]
    UnsupportedColumn { column: String, sql_type: String },
    /// argv[0] is not an executable file on the inherited PATH (or at the path given).
    #[error("command not found: {program}")]
    CommandNotFound { program: String },
    /// The command exists but could not be started.
    #[error("cannot start {program}: {reason}")]
    Spawn { program: String, reason: String },
    /// The exit code and the parsed test summary contradict each other; the output
    /// cannot be trusted (for example a test printing a fake "passed" line).
    #[error(
        "exit code {exit_code} disagrees with the {runner} summary ({passed} passed, {failed} failed): output cannot be trusted"
    )]
    SummaryDisagrees {
        runner: String,
        exit_code: i64,
        passed: u64,
        failed: u64,
    },
    /// The JUnit report named by the source is missing, stale or unreadable.
    #[error("JUnit report {path:?}: {reason}")]
    Junit { path: String, reason: String },
    /// git failed for a reason other than "no such commit/file".
    #[error("git: {reason}")]
    Git { reason: String },
    /// A module of the tree would replace the test runner (or a module it imports at
    /// start-up), so the runner's report would be the tree's own words.
    #[error(
        "{path:?} in the tree would be imported as {module:?} by pytest, replacing the installed module: its report cannot be trusted (hint: remove or rename it)"
    )]
    RunnerShadowed { path: String, module: String },
    /// A distribution in the tree declares a pytest plugin, which pytest would load
    /// from the working directory (on `sys.path`): the report would be the tree's own.
    #[error(
        "{path:?} in the tree declares the pytest plugin {plugin:?} (a pytest11 entry point), which pytest would load from the tree: its report cannot be trusted (hint: remove it, or install the package outside the working tree)"
    )]
    RunnerPlugin { path: String, plugin: String },
    /// The scratch copy of a protected run could not be prepared.
    #[error("protected run: {reason}")]
    Protect { reason: String },
    /// A file postcondition could not be observed safely (`unsafe_path`: a symlink or a
    /// non-directory on the path, or an entry replaced while read; `io_error`;
    /// `oversize`). Untrusted: neither a match nor a mismatch.
    #[error("{postcondition} postcondition at {path:?} not observed ({reason}): {detail}")]
    Postcondition {
        postcondition: String,
        reason: String,
        path: String,
        detail: String,
    },
    /// GitHub's answer does not establish the pull request's state (`authentication_failed`,
    /// `permission_unverified`, `resource_unobservable`, `rate_limited`,
    /// `redirect_rejected`, `provider_unavailable`, `invalid_provider_response`,
    /// `observation_not_fresh`): indeterminate, never a mismatch.
    #[error("GitHub pull request not observed ({reason}): {detail}")]
    Github { reason: String, detail: String },
}

impl ProbeError {
    /// A stable snake_case code for machine output.
    pub fn code(&self) -> &'static str {
        match self {
            ProbeError::InvalidSpec { .. } => "invalid_spec",
            ProbeError::EnvMissing { .. } => "env_missing",
            ProbeError::Timeout { .. } => "timeout",
            ProbeError::PathEscape { .. } => "path_escape",
            ProbeError::DanglingSymlink { .. } => "dangling_symlink",
            ProbeError::Io { .. } => "io",
            ProbeError::Oversize { .. } => "oversize",
            ProbeError::Format { .. } => "format",
            ProbeError::ConnectionRefused { .. } => "connection_refused",
            ProbeError::Connect { .. } => "connect",
            ProbeError::RedirectRefused { .. } => "redirect_refused",
            ProbeError::Http { .. } => "http",
            ProbeError::Database { .. } => "database",
            ProbeError::BadQuery { .. } => "bad_query",
            ProbeError::UnsupportedColumn { .. } => "unsupported_column",
            ProbeError::CommandNotFound { .. } => "command_not_found",
            ProbeError::Spawn { .. } => "spawn",
            ProbeError::SummaryDisagrees { .. } => "summary_disagrees",
            ProbeError::Junit { .. } => "junit",
            ProbeError::Git { .. } => "git",
            ProbeError::RunnerShadowed { .. } | ProbeError::RunnerPlugin { .. } => {
                "runner_shadowed"
            }
            ProbeError::Protect { .. } => "protect",
            ProbeError::Postcondition { .. } => "postcondition",
            ProbeError::Github { .. } => "github",
        }
    }

    /// The error as a check marked `private` shows it: its kind and fixed reason code,
    /// never a path, name, host or value (`private = true`, docs/probes.md).
    pub fn public_message(&self) -> String {
        match self {
            ProbeError::Postcondition {
                postcondition,
                reason,
                ..
            } => {
                format!("{postcondition} postcondition not observed ({reason})")
            }
            ProbeError::Github { reason, .. } => {
                format!("GitHub pull request not observed ({reason})")
            }
            ProbeError::Timeout { .. } => self.to_string(),
            other => format!("not observed ({})", other.code()),
        }
    }

    pub(crate) fn invalid(reason: impl Into<String>) -> Self {
        ProbeError::InvalidSpec {
            reason: reason.into(),
        }
    }

    /// Replace every secret in every string field; the last line of defence.
    pub(crate) fn scrubbed(mut self, s: &crate::secret::Scrubber) -> Self {
        let fields: Vec<&mut String> = match &mut self {
            ProbeError::InvalidSpec { reason }
            | ProbeError::BadQuery { reason }
            | ProbeError::Http { reason }
            | ProbeError::Git { reason }
            | ProbeError::Protect { reason } => vec![reason],
            ProbeError::Postcondition {
                postcondition,
                reason,
                path,
                detail,
            } => vec![postcondition, reason, path, detail],
            ProbeError::Github { reason, detail } => vec![reason, detail],
            ProbeError::RunnerShadowed { path, module } => vec![path, module],
            ProbeError::RunnerPlugin { path, plugin } => vec![path, plugin],
            ProbeError::EnvMissing { name } => vec![name],
            ProbeError::Timeout { .. } | ProbeError::SummaryDisagrees { .. } => vec![],
            ProbeError::PathEscape { path, .. } | ProbeError::DanglingSymlink { path } => {
                vec![path]
            }
            ProbeError::Io { path, reason } | ProbeError::Junit { path, reason } => {
                vec![path, reason]
            }
            ProbeError::Oversize { what, .. } => vec![what],
            ProbeError::Format {
                what,
                expected,
                reason,
            } => vec![what, expected, reason],
            ProbeError::ConnectionRefused { target } => vec![target],
            ProbeError::Connect { target, reason } | ProbeError::Database { target, reason } => {
                vec![target, reason]
            }
            ProbeError::RedirectRefused { location, .. } => vec![location],
            ProbeError::UnsupportedColumn { column, sql_type } => vec![column, sql_type],
            ProbeError::CommandNotFound { program } => vec![program],
            ProbeError::Spawn { program, reason } => vec![program, reason],
        };
        for f in fields {
            *f = s.scrub(f);
        }
        self
    }
}
