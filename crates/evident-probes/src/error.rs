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
    InvalidSpec {
        /// What is wrong with the source, for the owner to fix.
        reason: String,
    },
    /// A variable the source names is not set in the environment.
    #[error("environment variable {name} is not set")]
    EnvMissing {
        /// The variable's name (never a value).
        name: String,
    },
    /// The probe's time limit passed before the observation completed.
    #[error("timed out after {limit_ms} ms")]
    Timeout {
        /// The time limit that passed, in milliseconds.
        limit_ms: u64,
    },
    /// A path named by the source would leave the contract's root.
    #[error("path {path:?} escapes the contract root through {via}")]
    PathEscape {
        /// The path as the source names it.
        path: String,
        /// How it would leave the root.
        via: Escape,
    },
    /// A dangling symlink: neither present nor absent, so neither is claimed.
    #[error("path {path:?} is a dangling symlink")]
    DanglingSymlink {
        /// The symlink, as the source names it.
        path: String,
    },
    /// Reading a local file failed for a reason other than absence.
    #[error("cannot read {path:?}: {reason}")]
    Io {
        /// The file that could not be read.
        path: String,
        /// The operating system's error.
        reason: String,
    },
    /// More data than the source's size limit allows; nothing partial is observed.
    #[error("{what} exceeds the limit of {limit} bytes")]
    Oversize {
        /// What was too large (a file, a response body, a report), with its size if known.
        what: String,
        /// The limit, in bytes.
        limit: u64,
    },
    /// The content is not what the requested view needs (JSON, UTF-8, ...).
    #[error("{what} is not {expected}: {reason}")]
    Format {
        /// What was read (a file, a response body, …).
        what: String,
        /// The form the view needs (JSON, UTF-8, …).
        expected: String,
        /// Why the content is not of that form.
        reason: String,
    },
    /// Nothing listened at the address.
    #[error("connection refused by {target}")]
    ConnectionRefused {
        /// The address that refused.
        target: String,
    },
    /// The connection could not be made or broke (DNS, unreachable, TLS, reset, ...).
    #[error("cannot connect to {target}: {reason}")]
    Connect {
        /// The address that could not be reached.
        target: String,
        /// Why the connection failed or broke.
        reason: String,
    },
    /// A redirect answered and the source does not allow following it.
    #[error(
        "redirect refused: status {status} to {location:?} (set redirects = \"follow\" or \"observe\")"
    )]
    RedirectRefused {
        /// The redirect's HTTP status.
        status: u16,
        /// Where the redirect pointed.
        location: String,
    },
    /// Any other HTTP failure (too many redirects, a broken body, ...).
    #[error("HTTP request failed: {reason}")]
    Http {
        /// What failed.
        reason: String,
    },
    /// The database was reached but refused us (authentication, unknown database, ...).
    #[error("database {target} refused the session: {reason}")]
    Database {
        /// The database, as reports name it.
        target: String,
        /// The server's refusal.
        reason: String,
    },
    /// The query, key or revision was rejected by the system asked.
    #[error("query rejected: {reason}")]
    BadQuery {
        /// The rejection, as the system asked gave it.
        reason: String,
    },
    /// A column whose SQL type has no faithful JSON form; cast it in the query.
    #[error(
        "column {column:?} has type {sql_type}, which is not read; cast it in the query (for example to text)"
    )]
    UnsupportedColumn {
        /// The column's name in the result.
        column: String,
        /// Its SQL type, as the server names it.
        sql_type: String,
    },
    /// argv[0] is not an executable file on the inherited PATH (or at the path given).
    #[error("command not found: {program}")]
    CommandNotFound {
        /// argv[0] as the source gives it.
        program: String,
    },
    /// The command exists but could not be started.
    #[error("cannot start {program}: {reason}")]
    Spawn {
        /// argv[0] as the source gives it.
        program: String,
        /// The operating system's error.
        reason: String,
    },
    /// The exit code and the parsed test summary contradict each other; the output
    /// cannot be trusted (for example a test printing a fake "passed" line).
    #[error(
        "exit code {exit_code} disagrees with the {runner} summary ({passed} passed, {failed} failed): output cannot be trusted"
    )]
    SummaryDisagrees {
        /// The test runner whose summary was read (`pytest`, `cargo`, …).
        runner: String,
        /// The command's exit code.
        exit_code: i64,
        /// Tests the summary says passed.
        passed: u64,
        /// Tests the summary says failed.
        failed: u64,
    },
    /// The JUnit report named by the source is missing, stale or unreadable.
    #[error("JUnit report {path:?}: {reason}")]
    Junit {
        /// The report's path, as the source names it.
        path: String,
        /// Why the report cannot be used.
        reason: String,
    },
    /// git failed for a reason other than "no such commit/file".
    #[error("git: {reason}")]
    Git {
        /// git's error, or what evident refused to let it do.
        reason: String,
    },
    /// A module of the tree would replace the test runner (or a module it imports at
    /// start-up), so the runner's report would be the tree's own words.
    #[error(
        "{path:?} in the tree would be imported as {module:?} by pytest, replacing the installed module: its report cannot be trusted (hint: remove or rename it)"
    )]
    RunnerShadowed {
        /// The tree's file that would be imported.
        path: String,
        /// The installed module it would replace.
        module: String,
    },
    /// A distribution in the tree declares a pytest plugin, which pytest would load
    /// from the working directory (on `sys.path`): the report would be the tree's own.
    #[error(
        "{path:?} in the tree declares the pytest plugin {plugin:?} (a pytest11 entry point), which pytest would load from the tree: its report cannot be trusted (hint: remove it, or install the package outside the working tree)"
    )]
    RunnerPlugin {
        /// The `*.dist-info` or `*.egg-info` directory in the tree that declares it.
        path: String,
        /// The `pytest11` entry point's name (or that its entry_points.txt is unreadable).
        plugin: String,
    },
    /// The scratch copy of a protected run could not be prepared.
    #[error("protected run: {reason}")]
    Protect {
        /// What could not be prepared.
        reason: String,
    },
    /// A file postcondition could not be observed safely (`unsafe_path`: a symlink or a
    /// non-directory on the path, or an entry replaced while read; `io_error`;
    /// `oversize`). Untrusted: neither a match nor a mismatch.
    #[error("{postcondition} postcondition at {path:?} not observed ({reason}): {detail}")]
    Postcondition {
        /// The postcondition's kind.
        postcondition: String,
        /// The fixed reason code (`unsafe_path`, `io_error`, `oversize`), safe to show.
        reason: String,
        /// The path observed.
        path: String,
        /// What happened, in words.
        detail: String,
    },
    /// GitHub's answer does not establish the pull request's state (`authentication_failed`,
    /// `permission_unverified`, `resource_unobservable`, `rate_limited`,
    /// `redirect_rejected`, `provider_unavailable`, `invalid_provider_response`,
    /// `observation_not_fresh`): indeterminate, never a mismatch.
    #[error("GitHub pull request not observed ({reason}): {detail}")]
    Github {
        /// The fixed reason code (listed above), safe to show.
        reason: String,
        /// What happened, in words.
        detail: String,
    },
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
