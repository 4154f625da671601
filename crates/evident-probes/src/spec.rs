//! What the task owner writes in a check's `source`: one struct per kind of witness.
//! Strict: unknown fields are errors, so a typo cannot silently weaken a check.

use std::collections::BTreeMap;

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

use crate::secret::EnvValue;

/// Where a check's observation comes from. Externally tagged:
/// `source = { sqlite = { path = "billing.db", query = "..." } }`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "snake_case", deny_unknown_fields)]
pub enum Source {
    /// Run a test command (test_run).
    Command(CommandSpec),
    /// Request an HTTP(S) URL (endpoint_health, or a JSON API readback).
    Http(HttpSpec),
    /// A file under the contract's root.
    File(FileSpec),
    /// A SQLite database file under the contract's root, opened read-only.
    Sqlite(SqliteSpec),
    /// A PostgreSQL query in a READ ONLY transaction.
    Postgres(SqlSpec),
    /// A MySQL / MariaDB query in a READ ONLY transaction.
    Mysql(SqlSpec),
    /// One Redis read: GET, HGETALL or EXISTS.
    Redis(RedisSpec),
    /// A git repository under the contract's root, through the `git` binary.
    Git(GitSpec),
    /// A page rendered by a real headless Chromium (dom_assertion; docs/browser.md).
    Browser(BrowserSpec),
    /// A GitHub pull request, read with one authenticated GET of the REST API.
    GithubPr(GithubPrSpec),
    /// Delegated: the gate runs nothing and accepts the evidence item signed by this
    /// trusted verifier id (the contract's `[[trust]]`), bound to this claim and to
    /// the commit the gate sees. Decided by the gate, never observed by a probe.
    SignedBy(String),
}

/// The summary format a test command prints.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum Runner {
    /// libtest's `test result: ok. N passed; N failed; N ignored; ...` lines, summed.
    Cargo,
    /// cargo nextest's `Summary [..] N tests run: N passed, N failed, N skipped`.
    Nextest,
    /// pytest's closing line `== N passed, N failed, N skipped in 0.1s ==`.
    Pytest,
    /// go test `-v` (`--- PASS:` lines) or `-json` (`"Action":"pass"` events).
    Go,
    /// Read only the JUnit XML file named by `junit`.
    Junit,
    /// Python unittest's verbose report (`python -m unittest -v`, Django's `runtests.py
    /// -v 2`): the `test_x (pkg.mod.Class.test_x) ... ok` lines, cross-checked with the
    /// closing `Ran N tests` and `OK` / `FAILED (failures=1)` lines.
    Unittest,
    /// A TAP 13/14 stream (`node --test`, tape, node-tap): `ok` / `not ok` test points,
    /// `# SKIP` / `# TODO`, the plan `1..N`, subtests indented by 4 spaces.
    Tap,
}

impl Runner {
    /// The runner's name as contracts and reports write it (`cargo`, `pytest`, …).
    pub fn name(self) -> &'static str {
        match self {
            Runner::Cargo => "cargo",
            Runner::Nextest => "nextest",
            Runner::Pytest => "pytest",
            Runner::Go => "go",
            Runner::Junit => "junit",
            Runner::Unittest => "unittest",
            Runner::Tap => "tap",
        }
    }
}

/// A test command. Nothing of the gate's environment is passed to it except the
/// variables named in `inherit_env` and the values set in `env`; argv[0] is looked up
/// on the gate's own PATH (so `cargo` is found) even when PATH is not inherited.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct CommandSpec {
    /// The program and its arguments; never passed to a shell unless `shell = true`.
    pub argv: Vec<String>,
    /// Working directory, relative to the contract's root (default: the root).
    #[serde(default)]
    pub cwd: Option<String>,
    /// Variables set for the command: literal strings or `{ env = "NAME" }`.
    #[serde(default)]
    pub env: BTreeMap<String, EnvValue>,
    /// Names of variables passed through from the gate's environment (e.g. PATH, HOME).
    #[serde(default)]
    pub inherit_env: Vec<String>,
    /// Run `argv` (exactly one string) with `/bin/sh -c`.
    #[serde(default)]
    pub shell: bool,
    /// Time limit in seconds; the smaller of this and the gate's limit applies.
    #[serde(default)]
    pub timeout_s: Option<f64>,
    /// A JUnit XML report the command writes, relative to the root; counts come from it.
    #[serde(default)]
    pub junit: Option<String>,
    /// The summary format; detected from the output when absent.
    #[serde(default)]
    pub runner: Option<Runner>,
    /// Put the (scrubbed, capped) raw stdout/stderr in the observation.
    #[serde(default)]
    pub capture_output: bool,
    /// Most bytes of each stream kept for `capture_output` (default 1 MiB). All output is
    /// hashed and parsed whatever its size.
    #[serde(default)]
    pub max_output_bytes: Option<u64>,
    /// Named tests (pytest node ids, JUnit `classname::name`, go `package::Test`) whose
    /// result is read from the runner's machine report; observed as `tests_passed`, the
    /// named tests the report lists as passed. [`Source::adopt_expected`] fills it from
    /// the expectation `tests_passed = [...]` when absent.
    #[serde(default)]
    pub tests_passed: Vec<String>,
    /// Run in a scratch copy of the root whose protected paths hold their content at
    /// a base revision (the agent's edits to tests and runner config do not count).
    #[serde(default)]
    pub protect: Option<Protect>,
    /// Let the run leave Python bytecode and pytest's cache behind (by default the gate
    /// sets `PYTHONDONTWRITEBYTECODE=1` and passes pytest `-p no:cacheprovider`).
    #[serde(default)]
    pub keep_caches: bool,
    /// Directories (or files) inside the root that git ignores and the run needs as they
    /// are — dependencies such as `.venv` or `node_modules` — made available read-only
    /// at the same place in the snapshot, their digests recorded. Nothing else ignored
    /// is ever brought into the snapshot.
    #[serde(default)]
    pub environment: Vec<String>,
    /// Let the command reach the network (by default it runs in a network namespace
    /// with only its own loopback, where the platform has one).
    #[serde(default)]
    pub network: bool,
    /// pytest plugins to load, each passed as `-p NAME` (plugin autoload is always off,
    /// so a plugin installed or declared anywhere else never loads).
    #[serde(default)]
    pub plugins: Vec<String>,
    /// Judge the run against the same command run at this revision (`@baseline`, a
    /// branch, a commit), once per base and cached: every test that passed there must
    /// pass now (observed as `regressed`, the count of those that did not), the test
    /// files the runner collected there run at their base content, and tests the agent
    /// added are reported apart (`added_tests`, `added_failed`). Needs the runner's
    /// machine report (pytest, `go test -json`, or `junit`).
    #[serde(default)]
    pub base_tests: Option<String>,
}

/// Protected paths of a command: `protect = { base = "main", paths = ["tests/**"] }`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct Protect {
    /// A revision the agent cannot move: the owner's branch or tag, a merge-base, a
    /// recorded baseline commit. `HEAD` only where the agent cannot commit.
    pub base: String,
    /// Globs relative to the root (`*` stays within one path component, `**` crosses
    /// them); a pattern that names a directory covers everything beneath it.
    pub paths: Vec<String>,
    /// Accepted for old contracts and without effect: a snapshot never holds ignored
    /// files (declare dependencies in `environment`).
    #[serde(default)]
    pub ignored: IgnoredFiles,
    /// The owner's own test files, laid over the snapshot after the protected paths: a
    /// directory whose files are copied over the root, or a unified diff (`*.diff`,
    /// `*.patch`) applied to it — the way a grader adds a test patch the agent never
    /// saw. Absolute, or relative to the gate's working directory; never inside the root.
    #[serde(default)]
    pub overlay: Option<String>,
}

/// Ignored files in a protected run's scratch copy.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum IgnoredFiles {
    /// Formerly: copied like every other file. Now as `omit`.
    #[default]
    Copy,
    /// Left out (always, now).
    Omit,
}

/// HTTP methods a probe may use: both are safe (no side effects by contract).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "UPPERCASE")]
pub enum Method {
    /// GET, the default.
    #[default]
    Get,
    /// HEAD: status and headers only, so no `body_contains` or `pointers`.
    Head,
}

/// What to do with a 3xx answer.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum Redirects {
    /// A redirect is an error: the endpoint named is not the one that answered.
    #[default]
    Refuse,
    /// Follow up to 10 redirects and observe the final answer.
    Follow,
    /// Do not follow; observe the 3xx status and its `redirect_location`.
    Observe,
}

/// An HTTP(S) request. `url` or `url_env` (exactly one).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct HttpSpec {
    /// The URL, written in the contract; must not contain a password.
    #[serde(default)]
    pub url: Option<String>,
    /// Name of an environment variable holding the URL (when it carries credentials).
    #[serde(default)]
    pub url_env: Option<String>,
    /// GET (default) or HEAD: a probe never asks for a change.
    #[serde(default)]
    pub method: Method,
    /// Request headers: literal or `{ env = "NAME" }` (use env for tokens).
    #[serde(default)]
    pub headers: BTreeMap<String, EnvValue>,
    /// What a 3xx answer does (default: it is an error).
    #[serde(default)]
    pub redirects: Redirects,
    /// Largest body read (default 1 MiB); a larger body is an error, not a truncation.
    #[serde(default)]
    pub max_body_bytes: Option<u64>,
    /// Time limit in seconds; the smaller of this and the gate's limit applies.
    #[serde(default)]
    pub timeout_s: Option<f64>,
    /// Observe `body_contains: true|false` for this substring (raw bytes, no decoding).
    /// [`Source::adopt_expected`] fills it from the expectation when absent.
    #[serde(default)]
    pub body_contains: Option<String>,
    /// JSON pointers into the body, observed under `json.<name>`.
    #[serde(default)]
    pub pointers: BTreeMap<String, String>,
    /// Response headers observed under `headers.<lowercased name>` (null when absent).
    #[serde(default)]
    pub headers_observed: Vec<String>,
}

/// A file (or directory) under the contract's root.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct FileSpec {
    /// Relative to the root; `..`, absolute paths and escaping symlinks are refused.
    pub path: String,
    /// Observe the whole content as `text` (must be UTF-8).
    #[serde(default)]
    pub text: bool,
    /// Substrings observed as `contains.<substring>: true|false`.
    #[serde(default)]
    pub contains: Vec<String>,
    /// JSON pointers into the file, observed under `json.<name>`.
    #[serde(default)]
    pub pointers: BTreeMap<String, String>,
    /// Largest file read (default 64 MiB); a larger file is an error.
    #[serde(default)]
    pub max_bytes: Option<u64>,
    /// A postcondition the path must meet: exact text, directory children, or a JSON
    /// object. Observed as flags, counts and a reason code only (never a name or value),
    /// with no symlink followed anywhere on the path.
    #[serde(default)]
    pub postcondition: Option<Postcondition>,
}

/// What a file postcondition requires (the reference's `TextFileContract`,
/// `DirectoryContract` and `JsonObjectContract`).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "snake_case", deny_unknown_fields)]
pub enum Postcondition {
    /// A regular file whose bytes are exactly this text (UTF-8).
    TextFile(TextFilePostcondition),
    /// A directory with these direct children (or none at all).
    Directory(DirectoryPostcondition),
    /// A JSON file whose top level is an object with these keys and values.
    JsonObject(JsonObjectPostcondition),
}

impl Postcondition {
    /// The kind's name, as observed and shown (`text_file`, `directory`, `json_object`).
    pub fn kind(&self) -> &'static str {
        match self {
            Postcondition::TextFile(_) => "text_file",
            Postcondition::Directory(_) => "directory",
            Postcondition::JsonObject(_) => "json_object",
        }
    }
}

/// A `text_file` postcondition: what the file must hold.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct TextFilePostcondition {
    /// The whole content, exactly (an empty string: the file must be empty).
    pub expected_text: String,
}

/// A `directory` postcondition: which children the directory must have.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct DirectoryPostcondition {
    /// Direct children (plain names, no `/`) that must be present.
    #[serde(default)]
    pub required_children: Vec<String>,
    /// The children must be exactly `required_children`, nothing else (evident's
    /// extension; reason `unexpected_children`).
    #[serde(default)]
    pub exact_children: bool,
    /// The directory must have no entries at all (hidden ones included).
    #[serde(default)]
    pub exact_empty: bool,
}

/// A `json_object` postcondition: which keys and values the object must have.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct JsonObjectPostcondition {
    /// Top-level keys and their values: each value is compared whole (nested objects
    /// and arrays exactly; numbers by value, `1 = 1.0`; booleans are not numbers).
    pub expected: serde_json::Map<String, serde_json::Value>,
    /// The object must have exactly these keys, no others.
    #[serde(default)]
    pub exact_keys: bool,
}

/// The state a pull request is declared to be in.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum PrState {
    /// Open and not merged.
    Open,
    /// Closed without being merged.
    Closed,
    /// Merged.
    Merged,
}

/// A GitHub pull request, read with one authenticated GET of
/// `{api_url}/repos/{repository}/pulls/{pull_number}`: no redirect, no retry. The
/// observation is eight booleans (never an id, ref or name).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct GithubPrSpec {
    /// `owner/name`, used only to address the request: identity is `repository_id`.
    pub repository: String,
    /// The repository's stable numeric id (GitHub's `base.repo.id`).
    #[schemars(range(min = 1))]
    pub repository_id: u64,
    /// The pull request's number in that repository.
    #[schemars(range(min = 1))]
    pub pull_number: u64,
    /// The head commit, as a full 40- or 64-character hex object id.
    pub expected_head_oid: String,
    /// The base branch name (`main`).
    pub expected_base_ref: String,
    /// Open, closed (not merged) or merged.
    pub expected_state: PrState,
    /// The merge commit (only with `expected_state = "merged"`).
    #[serde(default)]
    pub expected_merge_oid: Option<String>,
    /// The head repository's id (a pull request from a fork).
    #[serde(default)]
    #[schemars(range(min = 1))]
    pub expected_head_repository_id: Option<u64>,
    /// Name of the environment variable holding the token (sent as a bearer token;
    /// never printed).
    pub token_env: String,
    /// The API's base URL (default `https://api.github.com`; GitHub Enterprise:
    /// `https://HOST/api/v3`). `http` only to a loopback address.
    #[serde(default)]
    pub api_url: Option<String>,
    /// Time limit in seconds (default 10); the smaller of this and the gate's applies.
    #[serde(default)]
    pub timeout_s: Option<f64>,
    /// Largest response body read (default 1 MiB); a larger one is indeterminate.
    #[serde(default)]
    pub max_body_bytes: Option<u64>,
}

/// A SQLite database file under the root, opened read-only (never created).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct SqliteSpec {
    /// The database file, relative to the root; escaping paths are refused.
    pub path: String,
    /// One query; its result is observed as `rows` and `row_count`.
    pub query: String,
    /// Bound in order to `?1`, `?2`, ...: strings, integers, floats, booleans, null.
    #[serde(default)]
    pub params: Vec<serde_json::Value>,
    /// Most rows read (default 10 000); more is an error.
    #[serde(default)]
    pub max_rows: Option<u64>,
}

/// A query against a server database whose URL is in an environment variable.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct SqlSpec {
    /// Name of the environment variable holding the connection URL (never the URL).
    pub url_env: String,
    /// One query, run read-only; its result is observed as `rows` and `row_count`.
    pub query: String,
    /// Bound in order (`$1`.. for PostgreSQL, `?` for MySQL).
    #[serde(default)]
    pub params: Vec<serde_json::Value>,
    /// Most rows read (default 10 000); more is an error.
    #[serde(default)]
    pub max_rows: Option<u64>,
    /// PostgreSQL only: the schemas an unqualified name resolves in, in order (default
    /// `["public"]`). Every session is pinned to it: the server's default starts with
    /// `"$user"`, so a schema named after the gate's role would shadow `accounts`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub search_path: Option<Vec<String>>,
}

/// The one Redis read a probe makes.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum RedisOp {
    /// GET: observes `exists` and the string `value`.
    Get,
    /// HGETALL: observes `exists` and the hash's fields.
    Hgetall,
    /// EXISTS: observes `exists` only.
    Exists,
}

/// One Redis read of one key, through a URL kept in an environment variable.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct RedisSpec {
    /// Name of the environment variable holding the `redis://` URL.
    pub url_env: String,
    /// Which read: GET, HGETALL or EXISTS.
    pub op: RedisOp,
    /// The key read.
    pub key: String,
    /// Largest value (GET) or total of field names and values (HGETALL) read; default 1 MiB.
    #[serde(default)]
    pub max_bytes: Option<u64>,
}

/// A git repository under the root. Observes `commit_exists`/`commit` for `rev`
/// (default HEAD), `clean`, and with `file` the blob at `rev`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct GitSpec {
    /// The work tree (or bare repo) directory, relative to the root (default: the root).
    #[serde(default)]
    pub repo: Option<String>,
    /// A revision: hash, branch, tag, `HEAD~1`... (default HEAD).
    #[serde(default)]
    pub rev: Option<String>,
    /// A path inside the repository whose content at `rev` is hashed.
    #[serde(default)]
    pub file: Option<String>,
    /// Largest blob read for `file` (default 64 MiB).
    #[serde(default)]
    pub max_bytes: Option<u64>,
}

/// A page loaded in a real headless Chromium, and one CSS selector observed on it:
/// `count`, `text`, `visible`, `attributes`, `html_sha256` and the page's `status`.
/// Every request the page makes is held to the page's origin (see docs/browser.md).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct BrowserSpec {
    /// The page's http(s) URL, written in the contract; must not contain a password.
    #[serde(default)]
    pub url: Option<String>,
    /// Name of an environment variable holding the URL (when it carries credentials).
    #[serde(default)]
    pub url_env: Option<String>,
    /// The CSS selector waited for and observed (the first match gives `text`,
    /// `visible`, `attributes` and `html_sha256`; `count` counts every match).
    pub selector: String,
    /// Time limit in seconds for the whole observation (start, load, wait for the
    /// selector); the smaller of this and the gate's limit applies.
    #[serde(default)]
    pub timeout_s: Option<f64>,
    /// Request headers sent with the page's requests to its own origin only: literal
    /// or `{ env = "NAME" }` (use env for tokens).
    #[serde(default)]
    pub headers: BTreeMap<String, EnvValue>,
    /// Cookies (name → value, literal or `{ env = "NAME" }`) sent as a `Cookie` header
    /// with the page's requests to its own origin only; never put in the browser's
    /// cookie jar, so no script and no other port of the same host sees them.
    #[serde(default)]
    pub cookies: BTreeMap<String, EnvValue>,
    /// `refuse` (default): a redirect of the page is an error; `follow`: the page may
    /// redirect within its origin (a request to another origin is blocked either way).
    #[serde(default)]
    pub redirects: Redirects,
    /// Attributes of the first match observed under `attributes.<name>` (null when
    /// absent). [`crate::Source::adopt_expected`] adds the names the expectation uses.
    #[serde(default)]
    pub attributes: Vec<String>,
}
