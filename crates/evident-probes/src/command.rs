//! Running a program: its own process group (killed whole on timeout or when the
//! observation is dropped), a cleared environment, no stdin, both output streams hashed
//! and parsed line by line while only a capped prefix is kept.

use std::collections::BTreeMap;
use std::os::unix::fs::PermissionsExt;
use std::path::{Path, PathBuf};
use std::process::Stdio;
use std::time::Instant;

use serde_json::{Map, Value};
use sha2::{Digest, Sha256};
use tokio::io::{AsyncRead, AsyncReadExt};

use crate::error::ProbeError;
use crate::secret::{Scrubber, resolve};
use crate::spec::{CommandSpec, Runner};
use crate::summary::{self, Case, Counts, Parser, Report};
use crate::{Context, Object, paths, protect};

pub const DEFAULT_MAX_OUTPUT_BYTES: u64 = 1024 * 1024;
/// `protect.base` naming the baseline of the run (see [`crate::Context::baseline`]).
pub const BASELINE: &str = "@baseline";
/// Longest line given to the summary parser; the rest of a longer line is hashed only.
const MAX_LINE: usize = 64 * 1024;
/// Largest JUnit report read.
const MAX_JUNIT_BYTES: u64 = 16 * 1024 * 1024;

/// What a protected pytest run always takes from the base, at any depth: every file
/// pytest reads settings or plugins from (pytest 9 reads pytest.toml first).
const PYTEST_CONFIG: &[&str] = &[
    "**/pytest.toml",
    "**/.pytest.toml",
    "**/pytest.ini",
    "**/.pytest.ini",
    "**/pyproject.toml",
    "**/tox.ini",
    "**/setup.cfg",
    "**/conftest.py",
];

/// What a protected cargo run always takes from the base: rustup's toolchain files
/// (the legacy `rust-toolchain` names a toolchain by path, whose `cargo` would be the
/// agent's), cargo's configuration (a `runner` runs every test binary) and every
/// build script (a member's `build.rs` rewrote the protected test before it compiled).
const CARGO_CONFIG: &[&str] = &[
    "**/rust-toolchain",
    "**/rust-toolchain.toml",
    "**/.cargo/config",
    "**/.cargo/config.toml",
    "**/build.rs",
];

/// What a protected npm / npx / pnpm / yarn run always takes from the base: the
/// project's configuration (`.npmrc`'s `script-shell` runs every script, `npm test`
/// included; `.yarnrc.yml`'s `yarnPath` names the yarn that runs).
const NODE_CONFIG: &[&str] = &[
    "**/.npmrc",
    "**/.yarnrc",
    "**/.yarnrc.yml",
    "**/.pnpmfile.cjs",
];

/// The runner configuration a protected run of `spec` takes from the base.
fn runner_config(spec: &CommandSpec) -> Vec<&'static str> {
    let runs = |names: &[&str]| {
        words(spec).iter().any(|w| {
            let base = w.rsplit('/').next().unwrap_or(w);
            names.contains(&base)
        })
    };
    let mut always: Vec<&str> = Vec::new();
    if runs_pytest(spec) {
        always.extend(PYTEST_CONFIG);
    }
    if runs(&["cargo"]) {
        always.extend(CARGO_CONFIG);
    }
    if runs(&["npm", "npx", "pnpm", "yarn"]) {
        always.extend(NODE_CONFIG);
    }
    always
}

/// System directories a sandboxed command reads (and runs programs from).
const SYSTEM_DIRS: &[&str] = &[
    "/usr", "/bin", "/sbin", "/lib", "/lib32", "/lib64", "/libx32", "/etc", "/opt", "/proc",
    "/sys", "/run",
];

/// What a sandboxed run of `spec` may touch: it writes its slot (the snapshot, its
/// temporary and report directories, its build cache) and `/dev`; it reads the system,
/// the toolchains on its PATH (each `bin` directory's parent: a Python or Node prefix),
/// cargo's and rustup's homes, and the declared environment.
fn sandbox_policy(
    spec: &CommandSpec,
    snap: &crate::snapshot::Snapshot,
    env: &[(String, String)],
    gate_path: Option<&str>,
) -> crate::sandbox::Policy {
    let get = |k: &str| env.iter().find(|(n, _)| n == k).map(|(_, v)| v.as_str());
    let mut read: Vec<PathBuf> = SYSTEM_DIRS.iter().map(PathBuf::from).collect();
    let path = get("PATH").or(gate_path).unwrap_or("");
    for dir in path.split(':').filter(|d| d.starts_with('/')) {
        for d in [
            PathBuf::from(dir),
            std::fs::canonicalize(dir).unwrap_or_default(),
        ] {
            if d.as_os_str().is_empty() {
                continue;
            }
            let name = d.file_name().map(|n| n.to_string_lossy().into_owned());
            match (name.as_deref(), d.parent()) {
                (Some("bin" | "shims" | "sbin"), Some(parent)) if parent != Path::new("/") => {
                    read.push(parent.to_path_buf())
                }
                _ => read.push(d.clone()),
            }
        }
    }
    let home = get("HOME").map(PathBuf::from).or_else(std::env::home_dir);
    for (var, default) in [("CARGO_HOME", ".cargo"), ("RUSTUP_HOME", ".rustup")] {
        match get(var) {
            Some(v) => read.push(PathBuf::from(v)),
            None => read.extend(home.as_ref().map(|h| h.join(default))),
        }
    }
    read.extend(snap.environment.iter().map(|(_, real, _)| real.clone()));
    let mut write = vec![snap.slot.clone(), PathBuf::from("/dev")];
    // A build cache or temporary directory the owner's contract names (`env`) is the
    // owner's choice, and written.
    for k in ["CARGO_TARGET_DIR", "TMPDIR", "PYTHONPYCACHEPREFIX"] {
        if spec.env.contains_key(k)
            && let Some(v) = get(k).filter(|v| v.starts_with('/'))
        {
            let _ = std::fs::create_dir_all(v);
            write.push(PathBuf::from(v));
        }
    }
    crate::sandbox::Policy {
        read,
        write,
        network: spec.network,
    }
}

/// The evidence of how the run was isolated: what was copied, what was left out, the
/// declared environment's digests, and the sandbox.
fn snapshot_value(snap: &crate::snapshot::Snapshot, sandbox: &crate::sandbox::Report) -> Value {
    let mut m = Map::new();
    m.insert(
        "tree_hash".into(),
        snap.tree_hash.clone().map_or(Value::Null, Value::from),
    );
    m.insert("files".into(), Value::from(snap.files));
    m.insert("bytes".into(), Value::from(snap.bytes));
    if !snap.left_out.is_empty() {
        m.insert(
            "build_output_left_out".into(),
            Value::from(snap.left_out.len()),
        );
    }
    if snap.overlay_files > 0 {
        m.insert("overlay_files".into(), Value::from(snap.overlay_files));
    }
    if !snap.environment.is_empty() {
        let env: Map<String, Value> = snap
            .environment
            .iter()
            .map(|(rel, _, digest)| (rel.clone(), Value::from(digest.clone())))
            .collect();
        m.insert("environment".into(), Value::Object(env));
    }
    m.insert("sandboxed".into(), Value::Bool(sandbox.sandboxed));
    m.insert("sandbox".into(), Value::from(sandbox.how.clone()));
    m.insert(
        "network_isolated".into(),
        Value::Bool(sandbox.network_isolated),
    );
    Value::Object(m)
}

/// Kills the whole process group when dropped: on timeout the observe future is
/// dropped, and nothing the command started may outlive the probe.
pub(crate) struct GroupGuard(pub(crate) Option<rustix::process::Pid>);

impl GroupGuard {
    pub(crate) fn kill(&self) {
        if let Some(pid) = self.0 {
            let _ = rustix::process::kill_process_group(pid, rustix::process::Signal::KILL);
        }
    }
}

impl Drop for GroupGuard {
    fn drop(&mut self) {
        self.kill();
    }
}

/// One output stream, read to the end.
#[derive(Debug, Default)]
pub struct Stream {
    /// Hex sha256 of all the stream carried: the output is bound even where it is cut.
    pub sha256: String,
    /// Bytes the stream carried in all.
    pub total: u64,
    /// The first bytes of the stream, up to [`Launch::keep`].
    pub kept: Vec<u8>,
    /// Whether the stream carried more than was kept.
    pub truncated: bool,
    /// The last [`TAIL_BYTES`] bytes, for the lines a failed run ended with.
    pub tail: Vec<u8>,
    /// The test-summary parser fed every line (when [`Launch::parse`] asked for it).
    pub parser: Parser,
}

/// Bytes of each stream's end kept for [`output_tail`].
const TAIL_BYTES: usize = 8 * 1024;
/// Most lines and bytes of a failed run's output tail shown in its observation.
const TAIL_LINES: usize = 20;
const TAIL_MAX: usize = 2000;

/// The last lines of a stream (at most [`TAIL_LINES`] and [`TAIL_MAX`] bytes, whole
/// lines only, so a secret is never shown cut where the scrubber cannot see it), scrubbed.
fn output_tail(s: &Stream, scrub: &Scrubber) -> String {
    let text = String::from_utf8_lossy(&s.tail);
    // A tail that starts mid-stream starts mid-line: drop that part line.
    let text = if s.total > s.tail.len() as u64 {
        text.split_once('\n').map_or("", |(_, rest)| rest)
    } else {
        &text
    };
    let mut lines: Vec<&str> = text.trim_end().lines().collect();
    lines = lines.split_off(lines.len().saturating_sub(TAIL_LINES));
    let mut out = scrub.scrub(&lines.join("\n"));
    while out.len() > TAIL_MAX {
        out = out
            .split_once('\n')
            .map_or(String::new(), |(_, rest)| rest.to_string());
    }
    out
}

/// A finished process.
#[derive(Debug)]
pub struct Finished {
    /// The exit code; `None` when a signal ended the process.
    pub exit_code: Option<i32>,
    /// The signal that ended the process, if one did.
    pub signal: Option<i32>,
    /// Standard output, read to the end.
    pub stdout: Stream,
    /// Standard error, read to the end.
    pub stderr: Stream,
}

/// What to start.
pub struct Launch<'a> {
    /// The executable, already resolved ([`resolve_program`]).
    pub program: PathBuf,
    /// Its arguments (argv[1..]); no shell ever sees them.
    pub args: &'a [String],
    /// The working directory.
    pub cwd: &'a Path,
    /// The whole environment of the process: nothing else is inherited.
    pub env: Vec<(String, String)>,
    /// Bytes of each stream kept; the rest is hashed and counted only.
    pub keep: u64,
    /// Feed each line to the test-summary parser.
    pub parse: bool,
    /// The secrets the command was given: its output digests are taken of the output
    /// as scrubbed (a published digest of a stream holding only a password would be
    /// that password's unsalted hash).
    pub digest_scrub: Option<&'a Scrubber>,
    /// The sandbox the process enters before it runs the program.
    pub sandbox: Option<crate::sandbox::Prepared>,
}

/// Find argv[0]: a path containing `/` is taken relative to the working directory;
/// a bare name is searched on `path_var` (the gate's PATH, inherited or not).
pub fn resolve_program(
    argv0: &str,
    cwd: &Path,
    path_var: Option<&str>,
) -> Result<PathBuf, ProbeError> {
    let not_found = || ProbeError::CommandNotFound {
        program: argv0.to_string(),
    };
    let executable = |p: &Path| {
        std::fs::metadata(p).is_ok_and(|m| m.is_file() && m.permissions().mode() & 0o111 != 0)
    };
    if argv0.is_empty() {
        return Err(ProbeError::invalid("argv[0] is empty"));
    }
    if argv0.contains('/') {
        let p = if Path::new(argv0).is_absolute() {
            PathBuf::from(argv0)
        } else {
            cwd.join(argv0)
        };
        return if executable(&p) {
            Ok(p)
        } else {
            Err(not_found())
        };
    }
    // Relative entries ("", ".", "bin") would resolve against the gate's own working
    // directory, which may be the agent's tree: only absolute ones are searched.
    for dir in path_var
        .unwrap_or("")
        .split(':')
        .filter(|d| d.starts_with('/'))
    {
        let p = Path::new(dir).join(argv0);
        if executable(&p) {
            return Ok(p);
        }
    }
    Err(not_found())
}

/// Start, read both streams, wait, then kill what the command left behind.
pub async fn run(l: Launch<'_>) -> Result<Finished, ProbeError> {
    let mut cmd = tokio::process::Command::new(&l.program);
    cmd.args(l.args)
        .current_dir(l.cwd)
        .env_clear()
        .envs(l.env.iter().map(|(k, v)| (k.as_str(), v.as_str())))
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .process_group(0)
        .kill_on_drop(true);
    if let Some(sb) = l.sandbox {
        crate::sandbox::apply(&mut cmd, sb);
    }
    let program = l.program.display().to_string();
    // Spawned and noted under the reaper's lock: never mistaken for an orphan.
    let scan = crate::reaper::spawning();
    let mut child = cmd.spawn().map_err(|e| match e.kind() {
        std::io::ErrorKind::NotFound => ProbeError::CommandNotFound {
            program: program.clone(),
        },
        _ => ProbeError::Spawn {
            program: program.clone(),
            reason: paths::io_reason(&e),
        },
    })?;
    let guard = GroupGuard(
        child
            .id()
            .and_then(|id| i32::try_from(id).ok())
            .and_then(rustix::process::Pid::from_raw),
    );
    let pid = child.id().and_then(|id| i32::try_from(id).ok());
    if let Some(p) = pid {
        crate::reaper::started(p);
    }
    drop(scan);
    let stdout = child.stdout.take();
    let stderr = child.stderr.take();
    let (status, out, err) = tokio::join!(
        async {
            let s = child.wait().await;
            if let Some(p) = pid {
                crate::reaper::ended(p);
            }
            // Whatever the command started and left running (a server, a sleeping
            // grandchild holding the pipe) goes with it.
            guard.kill();
            s
        },
        read_stream(stdout, l.keep, l.parse, l.digest_scrub),
        read_stream(stderr, l.keep, l.parse, l.digest_scrub),
    );
    let status = status.map_err(|e| ProbeError::Spawn {
        program: program.clone(),
        reason: format!("waiting failed: {}", paths::io_reason(&e)),
    })?;
    use std::os::unix::process::ExitStatusExt;
    Ok(Finished {
        exit_code: status.code(),
        signal: status.signal(),
        stdout: out.map_err(|e| ProbeError::Spawn {
            program: program.clone(),
            reason: format!("reading stdout: {}", paths::io_reason(&e)),
        })?,
        stderr: err.map_err(|e| ProbeError::Spawn {
            program,
            reason: format!("reading stderr: {}", paths::io_reason(&e)),
        })?,
    })
}

/// Lines longer than this are digested in parts, cut where no secret straddles.
const DIGEST_LINE: usize = 1024 * 1024;

/// SHA-256 of a stream as scrubbed, line by line (found by the red team: a test that
/// wrote the inherited DSN's password alone to stderr made `stderr_sha256` its
/// unsalted hash, `sha256("hunter2\n")`, in the report and the ledger). A stream that
/// holds no secret digests exactly as its raw bytes.
pub(crate) struct StreamDigest<'a> {
    h: Sha256,
    scrub: Option<&'a Scrubber>,
    line: Vec<u8>,
    /// How many bytes were digested: the stream's length as scrubbed.
    digested: u64,
}

impl<'a> StreamDigest<'a> {
    pub(crate) fn new(scrub: Option<&'a Scrubber>) -> Self {
        StreamDigest {
            h: Sha256::new(),
            scrub: scrub.filter(|s| !s.is_empty()),
            line: Vec::new(),
            digested: 0,
        }
    }

    fn digest(&mut self, bytes: &[u8]) {
        self.digested += bytes.len() as u64;
        self.h.update(bytes);
    }

    pub(crate) fn update(&mut self, mut chunk: &[u8]) {
        let Some(scrub) = self.scrub else {
            self.digest(chunk);
            return;
        };
        while let Some(i) = chunk.iter().position(|&b| b == b'\n') {
            self.line.extend_from_slice(&chunk[..=i]);
            let scrubbed = scrub.scrub_bytes(&self.line);
            self.digest(&scrubbed);
            self.line.clear();
            chunk = &chunk[i + 1..];
        }
        self.line.extend_from_slice(chunk);
        if self.line.len() > DIGEST_LINE
            && let Some(cut) = scrub.safe_cut(&self.line)
        {
            let part = scrub.scrub_bytes(&self.line[..cut]);
            self.digest(&part);
            self.line.drain(..cut);
        }
    }

    pub(crate) fn finish(self) -> String {
        self.finish_with_len().0
    }

    /// The digest and the length of what was digested: the stream as scrubbed, so a
    /// size shown beside the digest does not give away a secret's length either.
    pub(crate) fn finish_with_len(mut self) -> (String, u64) {
        if let Some(scrub) = self.scrub {
            let scrubbed = scrub.scrub_bytes(&self.line);
            self.digest(&scrubbed);
        }
        (hex::encode(self.h.finalize()), self.digested)
    }
}

async fn read_stream<R: AsyncRead + Unpin>(
    r: Option<R>,
    keep: u64,
    parse: bool,
    digest_scrub: Option<&Scrubber>,
) -> std::io::Result<Stream> {
    let mut s = Stream::default();
    let mut hasher = StreamDigest::new(digest_scrub);
    let Some(mut r) = r else {
        s.sha256 = hasher.finish();
        return Ok(s);
    };
    let mut buf = vec![0u8; 64 * 1024];
    // Bytes past MAX_LINE of one line are hashed but not parsed.
    let mut line: Vec<u8> = Vec::new();
    loop {
        let n = r.read(&mut buf).await?;
        if n == 0 {
            break;
        }
        let chunk = &buf[..n];
        hasher.update(chunk);
        s.total = s.total.saturating_add(n as u64);
        let room = usize::try_from(keep.saturating_sub(s.kept.len() as u64)).unwrap_or(usize::MAX);
        if room > 0 {
            s.kept.extend_from_slice(&chunk[..room.min(n)]);
        }
        if room < n {
            s.truncated = true;
        }
        s.tail
            .extend_from_slice(&chunk[chunk.len().saturating_sub(TAIL_BYTES)..]);
        if s.tail.len() > TAIL_BYTES {
            s.tail.drain(..s.tail.len() - TAIL_BYTES);
        }
        if parse {
            let mut rest = chunk;
            while let Some(i) = rest.iter().position(|&b| b == b'\n') {
                let room = MAX_LINE.saturating_sub(line.len());
                line.extend_from_slice(&rest[..i.min(room)]);
                s.parser.feed_line(&String::from_utf8_lossy(&line));
                line.clear();
                rest = &rest[i + 1..];
            }
            let room = MAX_LINE.saturating_sub(line.len());
            line.extend_from_slice(&rest[..rest.len().min(room)]);
        }
    }
    if parse && !line.is_empty() {
        s.parser.feed_line(&String::from_utf8_lossy(&line));
    }
    s.sha256 = hasher.finish();
    Ok(s)
}

/// The environment a command gets: nothing but the listed inherited variables and the
/// explicit ones. Every value taken from the environment is registered as a secret.
fn child_env(
    spec: &CommandSpec,
    ctx: &Context,
    scrub: &mut Scrubber,
) -> Result<Vec<(String, String)>, ProbeError> {
    let mut env: BTreeMap<String, String> = BTreeMap::new();
    for name in &spec.inherit_env {
        if let Some(v) = ctx.env.get(name) {
            scrub.add(v);
            env.insert(name.clone(), v.clone());
        }
    }
    for (k, v) in &spec.env {
        if k.is_empty() || k.contains('=') || k.contains('\0') {
            return Err(ProbeError::invalid(format!(
                "environment variable name {k:?} is not valid"
            )));
        }
        env.insert(k.clone(), resolve(v, &ctx.env, scrub)?);
    }
    Ok(env.into_iter().collect())
}

/// The JUnit file's identity before the run, so a stale report is never read.
fn junit_stamp(root: &Path, path: &str) -> Result<Option<std::time::SystemTime>, ProbeError> {
    let rel = paths::relative(path)?;
    let dir = paths::root_dir(root)?;
    match dir.metadata(&rel) {
        Ok(m) => Ok(m.modified().ok().map(|t| t.into_std())),
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(None),
        Err(e) => Err(paths::open_error(path, &e)),
    }
}

fn read_junit(
    root: &Path,
    path: &str,
    before: Option<std::time::SystemTime>,
) -> Result<Report, ProbeError> {
    let jerr = |reason: String| ProbeError::Junit {
        path: path.to_string(),
        reason,
    };
    let rel = paths::relative(path)?;
    let dir = paths::root_dir(root)?;
    let meta = dir.metadata(&rel).map_err(|e| match e.kind() {
        std::io::ErrorKind::NotFound => jerr("the command did not write it".into()),
        _ => paths::open_error(path, &e),
    })?;
    let modified: Option<std::time::SystemTime> = meta.modified().ok().map(|t| t.into_std());
    if before.is_some() && modified == before {
        return Err(jerr(
            "not rewritten by this run (stale report from before)".into(),
        ));
    }
    if meta.len() > MAX_JUNIT_BYTES {
        return Err(ProbeError::Oversize {
            what: format!("JUnit report {path:?}"),
            limit: MAX_JUNIT_BYTES,
        });
    }
    let bytes = dir.read(&rel).map_err(|e| paths::open_error(path, &e))?;
    let text = String::from_utf8(bytes).map_err(|_| jerr("not UTF-8".into()))?;
    summary::parse_junit(&text).map_err(|e| jerr(evident_format::chain(&e)))
}

/// Python modules `python -m pytest` imports at start-up (pytest and its dependencies,
/// and the standard-library modules it loads on CPython 3.11), any of which a file or
/// package at the top of the tree (`sys.path[0]` under `-m`, and the root pytest
/// inserts for test modules) would replace.
const PYTEST_MODULES: &[&str] = &[
    "pytest",
    "_pytest",
    "pluggy",
    "py",
    "iniconfig",
    "packaging",
    "exceptiongroup",
    "tomli",
    "tomllib",
    "pygments",
    // (Not `colorama`: pytest imports it on Windows only, and the corpus's colorama
    // project, whose package is its own work under test, was refused for it.)
    // Imported after `-m` put the tree first, found by the red team with
    // `python3 -X importtime -m pytest` (a failing test, `--junitxml`, `-rA`, a
    // pyproject.toml; plugins autoloaded and not): the C accelerators the standard
    // library tries first (`json` imports `_json`, swallowing its ImportError, so a
    // `_json.py` of the tree ran unnoticed and could set PYTEST_PLUGINS), the
    // extension modules of lib-dynload, names tried and expected to fail on POSIX
    // (`nt`, `msvcrt`, `_winapi`, `org`), and `__future__`.
    "__future__",
    "_asyncio",
    "_bisect",
    "_blake2",
    "_bz2",
    "_codecs_cn",
    "_codecs_hk",
    "_codecs_iso2022",
    "_codecs_jp",
    "_codecs_kr",
    "_codecs_tw",
    "_compression",
    "_contextvars",
    "_csv",
    "_ctypes",
    "_datetime",
    "_decimal",
    "_elementtree",
    "_hashlib",
    "_heapq",
    "_json",
    "_lzma",
    "_md5",
    "_multibytecodec",
    "_opcode",
    "_pickle",
    "_posixsubprocess",
    "_queue",
    "_random",
    "_sha1",
    "_sha256",
    "_sha512",
    "_sha3",
    "_socket",
    "_ssl",
    "_statistics",
    "_struct",
    "_typing",
    "_uuid",
    "_weakrefset",
    "_winapi",
    "_zoneinfo",
    "array",
    "asyncio",
    "concurrent",
    "contextvars",
    "ctypes",
    "fcntl",
    "fractions",
    "grp",
    "gzip",
    "hmac",
    "http",
    "math",
    "mimetypes",
    "mmap",
    "msvcrt",
    "nt",
    "org",
    "pickle",
    "pkgutil",
    "pwd",
    "queue",
    "readline",
    "resource",
    "select",
    "ssl",
    "statistics",
    "stringprep",
    "sysconfig",
    "termios",
    "unicodedata",
    "winreg",
    "zlib",
    "zoneinfo",
    "argparse",
    "ast",
    "atexit",
    "base64",
    "bdb",
    "binascii",
    "bisect",
    "bz2",
    "calendar",
    "cmd",
    "code",
    "codeop",
    "collections",
    "contextlib",
    "copy",
    "copyreg",
    "csv",
    "dataclasses",
    "datetime",
    "decimal",
    "difflib",
    "dis",
    "email",
    "encodings",
    "enum",
    "fnmatch",
    "functools",
    "gettext",
    "glob",
    "hashlib",
    "heapq",
    "importlib",
    "inspect",
    "ipaddress",
    "json",
    "keyword",
    "linecache",
    "locale",
    "logging",
    "lzma",
    "numbers",
    "opcode",
    "operator",
    "pathlib",
    "pdb",
    "platform",
    "pprint",
    "pyexpat",
    "quopri",
    "random",
    "re",
    "reprlib",
    "runpy",
    "selectors",
    "shlex",
    "shutil",
    "signal",
    "socket",
    "string",
    "struct",
    "subprocess",
    "tempfile",
    "textwrap",
    "threading",
    "token",
    "tokenize",
    "traceback",
    "types",
    "typing",
    "unittest",
    "urllib",
    "uuid",
    "warnings",
    "weakref",
    "xml",
    "zipfile",
    "zipimport",
    "sitecustomize",
    "usercustomize",
];

/// Is `name` (an entry of a directory on `sys.path`) a module Python would import as
/// `module`? `module.py`, `module.pyc`, `module.*.so`, or a package directory with an
/// `__init__` (a directory without one is a namespace portion, which loses to the
/// installed package).
fn shadows<'a>(
    dir: &Path,
    name: &str,
    standard: &[&'a str],
    named: &'a [String],
) -> Option<&'a str> {
    let named = named
        .iter()
        .map(|p| p.split('.').next().unwrap_or(p.as_str()));
    let m = standard.iter().copied().chain(named).find(|m| {
        name == *m
            || name
                .strip_prefix(*m)
                .and_then(|r| r.strip_prefix('.'))
                .is_some_and(|ext| {
                    ext == "py" || ext == "pyc" || ext == "so" || ext.ends_with(".so")
                })
    })?;
    if name == m {
        let p = dir.join(name);
        let package = std::fs::read_dir(&p).is_ok_and(|rd| {
            rd.flatten()
                .any(|e| e.file_name().to_string_lossy().starts_with("__init__."))
        });
        return package.then_some(m);
    }
    Some(m)
}

/// The flags that make a runner print the report it is read from, where the contract
/// did not choose one: unittest's per-test lines (`-v`), TAP from node's test runner
/// (node 23 and later print `spec` by default) and from node-tap.
fn runner_flags(argv: &mut Vec<String>, runner: Option<Runner>) {
    let base = |a: &String| a.rsplit('/').next().unwrap_or(a).to_string();
    match runner {
        Some(Runner::Unittest) => {
            if let Some(i) = argv.iter().position(|a| a == "unittest")
                && !argv
                    .iter()
                    .any(|a| a == "-v" || a == "-q" || a == "--verbose" || a == "--quiet")
            {
                let at = if argv.get(i + 1).is_some_and(|a| a == "discover") {
                    i + 2
                } else {
                    i + 1
                };
                argv.insert(at.min(argv.len()), "-v".into());
            }
        }
        Some(Runner::Tap) => {
            if let Some(i) = argv.iter().position(|a| a == "--test")
                && !argv.iter().any(|a| a.starts_with("--test-reporter"))
            {
                argv.insert(i + 1, "--test-reporter=tap".into());
            } else if let Some(i) = argv.iter().position(|a| base(a) == "tap")
                && !argv
                    .iter()
                    .any(|a| a == "-R" || a.starts_with("--reporter"))
            {
                argv.insert(i + 1, "--reporter=tap".into());
            }
        }
        _ => {}
    }
}

/// Modules `python -m unittest -v` imports after `-m` put the working directory first
/// on `sys.path` (measured with `python3.11 -X importtime -m unittest -v` on a failing
/// test): a `unittest.py` of the tree printed a forged `OK` and exited 0.
const UNITTEST_MODULES: &[&str] = &[
    "unittest",
    "argparse",
    "ast",
    "copy",
    "dataclasses",
    "difflib",
    "dis",
    "fnmatch",
    "gettext",
    "heapq",
    "inspect",
    "linecache",
    "locale",
    "opcode",
    "pprint",
    "runpy",
    "signal",
    "textwrap",
    "token",
    "tokenize",
    "traceback",
    "_ast",
    "_heapq",
    "_locale",
    "_opcode",
];

/// Whether a distribution's metadata `name` (in `dir`, on `sys.path`) may declare a
/// pytest plugin, which `-p NAME` would load by its entry point before any module of
/// that name. Read as Python finds it, not as a parser of its own would: the suffix in
/// any case (`.DIST-INFO`; importlib.metadata lowers the names), eggs too, and the
/// entry points refused when the group name appears anywhere in them — whatever the
/// header's brackets or line breaks (`[[pytest11]]`, a form feed) — or cannot be read.
fn declared_pytest_plugin(dir: &Path, name: &str) -> Option<String> {
    use std::io::Read;
    let low = name.to_ascii_lowercase();
    let meta = if low.ends_with(".dist-info") || low.ends_with(".egg-info") {
        dir.join(name)
    } else if low.ends_with(".egg") {
        // A zipped egg cannot be read here: refused as one that may declare a plugin.
        if !dir.join(name).is_dir() {
            return Some(format!("(the egg {name} that cannot be read)"));
        }
        dir.join(name).join("EGG-INFO")
    } else {
        return None;
    };
    // Python follows symlinks here, so this does too; what cannot be read (a FIFO)
    // could still declare one: refused as such (fails closed).
    let unreadable = || Some("(entry_points.txt that cannot be read)".to_string());
    let real = match std::fs::canonicalize(meta.join("entry_points.txt")) {
        Ok(r) => r,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return None,
        Err(_) => return unreadable(),
    };
    let Ok((f, _)) = crate::paths::open_regular_path(&real) else {
        return unreadable();
    };
    let mut bytes = Vec::new();
    if f.take(1024 * 1024 + 1).read_to_end(&mut bytes).is_err() || bytes.len() > 1024 * 1024 {
        return unreadable();
    }
    let text = String::from_utf8_lossy(&bytes);
    text.contains("pytest11").then(|| {
        // Name the first entry after the group, for the message.
        text.split("pytest11")
            .nth(1)
            .and_then(|rest| {
                rest.split(['\n', '\r', '\x0c', '\x0b'])
                    .map(str::trim)
                    .find(|l| l.contains('='))
            })
            .and_then(|l| l.split_once('='))
            .map_or_else(
                || "(a pytest11 entry point)".to_string(),
                |(p, _)| p.trim().to_string(),
            )
    })
}

/// Refuse a tree that would replace pytest (or what it imports at start-up) with its
/// own module, or load a plugin of its own: the root's top level and the working
/// directory are on `sys.path`.
fn check_shadowing(
    root: &Path,
    cwd: &Path,
    named: &[String],
    pytest: bool,
) -> Result<(), ProbeError> {
    let standard: &[&str] = if pytest { PYTEST_MODULES } else { &[] };
    let mut dirs = vec![root.to_path_buf()];
    if cwd != root {
        dirs.push(cwd.to_path_buf());
    }
    for dir in dirs {
        let Ok(rd) = std::fs::read_dir(&dir) else {
            continue;
        };
        let mut names: Vec<String> = rd
            .flatten()
            .map(|e| e.file_name().to_string_lossy().into_owned())
            .collect();
        names.sort();
        for name in names {
            if let Some(plugin) = declared_pytest_plugin(&dir, &name).filter(|_| pytest) {
                let rel = dir
                    .strip_prefix(root)
                    .ok()
                    .filter(|r| !r.as_os_str().is_empty())
                    .map(|r| format!("{}/{name}", r.display()))
                    .unwrap_or(name);
                return Err(ProbeError::RunnerPlugin { path: rel, plugin });
            }
            if let Some(module) = shadows(&dir, &name, standard, named) {
                let rel = dir
                    .strip_prefix(root)
                    .ok()
                    .filter(|r| !r.as_os_str().is_empty())
                    .map(|r| format!("{}/{name}", r.display()))
                    .unwrap_or(name);
                return Err(ProbeError::RunnerShadowed {
                    path: rel,
                    module: module.to_string(),
                });
            }
        }
    }
    Ok(())
}

/// Checks of a command source beyond the common ones (called by `Source::validate`).
pub fn validate(spec: &CommandSpec) -> Result<(), ProbeError> {
    if let Some(p) = &spec.protect {
        crate::git::check_rev(&p.base)?;
        protect::Globs::new(&p.paths)?;
    }
    if spec
        .tests_passed
        .iter()
        .any(|t| t.is_empty() || t.contains('\0'))
    {
        return Err(ProbeError::invalid("tests_passed holds an empty name"));
    }
    if spec.base_tests.is_some() && report_source(spec) == ReportSource::None {
        return Err(ProbeError::invalid(
            "base_tests needs the runner's machine report: run pytest without a shell, `go test -json`, or name the JUnit report the command writes in `junit`",
        ));
    }
    if let Some(b) = &spec.base_tests
        && b != BASELINE
    {
        crate::git::check_rev(b)?;
    }
    if !spec.tests_passed.is_empty() {
        match report_source(spec) {
            ReportSource::None => {
                return Err(ProbeError::invalid(
                    "tests_passed needs the runner's machine report: run pytest without a shell, `go test -json`, or name the JUnit report the command writes in `junit` (cargo test has none on stable Rust: use cargo nextest with JUnit output)",
                ));
            }
            ReportSource::GatePytest if spec.junit.is_some() => {
                return Err(ProbeError::invalid(
                    "with pytest, the gate chooses where pytest writes its JUnit report for tests_passed: leave `junit` out",
                ));
            }
            _ => {}
        }
    }
    Ok(())
}

/// The words standing for argv: a shell script's words ("pytest -q tests" → pytest).
fn words(spec: &CommandSpec) -> Vec<String> {
    if spec.shell {
        spec.argv
            .first()
            .map(|s| s.split_whitespace().map(String::from).collect())
            .unwrap_or_default()
    } else {
        spec.argv.clone()
    }
}

/// Where named test results come from.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum ReportSource {
    /// pytest writes `--junitxml` to a file the gate chose, outside the tree.
    GatePytest,
    /// The test events of `go test -json` on stdout.
    GoJson,
    /// The JUnit file the contract names.
    Junit,
    None,
}

fn runner_of(spec: &CommandSpec) -> Option<Runner> {
    spec.runner
        .or_else(|| summary::runner_from_argv(&words(spec)))
}

/// Does the command run pytest (whatever format its counts are read from)?
fn runs_pytest(spec: &CommandSpec) -> bool {
    spec.runner == Some(Runner::Pytest)
        || summary::runner_from_argv(&words(spec)) == Some(Runner::Pytest)
}

fn report_source(spec: &CommandSpec) -> ReportSource {
    let runner = runner_of(spec);
    if runs_pytest(spec) && !spec.shell && pytest_word(&spec.argv).is_some() {
        ReportSource::GatePytest
    } else if spec.junit.is_some() {
        ReportSource::Junit
    } else if runner == Some(Runner::Go) && !spec.shell && spec.argv.iter().any(|a| a == "-json") {
        ReportSource::GoJson
    } else {
        ReportSource::None
    }
}

/// Index of the argv word that starts pytest's own arguments (`pytest`, or the
/// `pytest` of `python -m pytest`).
fn pytest_word(argv: &[String]) -> Option<usize> {
    argv.iter().position(|a| {
        let base = a.rsplit('/').next().unwrap_or(a);
        summary::is_pytest_word(base)
    })
}

/// pytest's JUnit report leaves out what never became a test case — deselected tests —
/// and writes a non-strict xpass as a plain pass: those words come from its closing
/// line when it printed one (deselected tests did not run: they count as skipped).
fn with_pytest_words(mut c: Counts, parser: &summary::Parser) -> Counts {
    if let Some((Runner::Pytest, text)) = parser.result(Some(Runner::Pytest)) {
        let extra = text.deselected.saturating_sub(c.deselected);
        c.deselected += extra;
        c.skipped = c.skipped.saturating_add(extra);
        c.xpassed = c.xpassed.max(text.xpassed.min(c.passed));
    }
    c
}

/// Read the report pytest wrote where the gate told it to.
fn read_gate_report(path: &Path) -> Result<Report, ProbeError> {
    let jerr = |reason: String| ProbeError::Junit {
        path: "(pytest --junitxml, written outside the tree)".into(),
        reason,
    };
    use std::io::Read;
    // The agent's code ran in pytest and knows the path: it may have put a FIFO there.
    let (file, meta) = paths::open_regular_path(path).map_err(|e| match e.kind() {
        std::io::ErrorKind::NotFound => jerr("pytest did not write it".into()),
        _ => jerr(paths::io_reason(&e)),
    })?;
    if meta.len() > MAX_JUNIT_BYTES {
        return Err(ProbeError::Oversize {
            what: "pytest's JUnit report".into(),
            limit: MAX_JUNIT_BYTES,
        });
    }
    let mut bytes = Vec::new();
    file.take(MAX_JUNIT_BYTES + 1)
        .read_to_end(&mut bytes)
        .map_err(|e| jerr(paths::io_reason(&e)))?;
    if bytes.len() as u64 > MAX_JUNIT_BYTES {
        return Err(ProbeError::Oversize {
            what: "pytest's JUnit report".into(),
            limit: MAX_JUNIT_BYTES,
        });
    }
    let text = String::from_utf8(bytes).map_err(|_| jerr("not UTF-8".into()))?;
    summary::parse_junit(&text).map_err(|e| jerr(evident_format::chain(&e)))
}

/// test_run: run the command and observe exit code, counts and output digests; with
/// `base_tests`, also judge the run against the base's own results (every test that
/// passed there must pass now).
pub async fn observe(
    spec: &CommandSpec,
    ctx: &Context,
    limit: std::time::Duration,
    scrub: &mut Scrubber,
) -> Result<Object, ProbeError> {
    match &spec.base_tests {
        None => observe_run(spec, ctx, limit, scrub).await.map(|(o, _)| o),
        Some(rev) => crate::base_tests::observe(spec, rev, ctx, limit, scrub).await,
    }
}

/// One run in its snapshot: the observation and the test cases of the runner's
/// machine report (empty when it has none).
pub(crate) async fn observe_run(
    spec: &CommandSpec,
    ctx: &Context,
    limit: std::time::Duration,
    scrub: &mut Scrubber,
) -> Result<(Object, Vec<Case>), ProbeError> {
    if spec.argv.is_empty() {
        return Err(ProbeError::invalid("argv is empty"));
    }
    if spec.argv.iter().any(|a| a.contains('\0')) {
        return Err(ProbeError::invalid("argv contains a NUL byte"));
    }
    if spec.shell && spec.argv.len() != 1 {
        return Err(ProbeError::invalid(
            "with shell = true, argv must be exactly one string (the script)",
        ));
    }
    if spec.runner == Some(Runner::Junit) && spec.junit.is_none() {
        return Err(ProbeError::invalid("runner = \"junit\" needs a junit path"));
    }
    validate(spec)?;
    let started = Instant::now();
    let gate_path = ctx.env.get("PATH").map(String::as_str);

    // Every run happens in a snapshot of the claimed tree, outside it.
    let deadline = started + limit;
    let protect = match &spec.protect {
        None => None,
        Some(p) => {
            let mut p = p.clone();
            if p.base == BASELINE {
                p.base = ctx.baseline.clone().ok_or_else(|| ProbeError::Protect {
                    reason: format!(
                        "base {BASELINE:?} names the session's baseline, and this gate has none; hint: pass `evident gate --baseline REV` (the owner's branch or the commit the agent started from), or run it from an agent hook, which records one"
                    ),
                })?;
            }
            // A protected run always takes the runner's configuration from the base:
            // every file pytest reads settings or plugins from, at any depth (pytest
            // searches upward from its arguments: a `pytest.ini` in a subdirectory was
            // found before the protected root one), cargo's toolchain and configuration
            // files and every build script, npm's configuration (found by the red team).
            for name in runner_config(spec) {
                if !p.paths.iter().any(|x| x == name) {
                    p.paths.push(name.to_string());
                }
            }
            Some(p)
        }
    };
    let snap = crate::snapshot::take(crate::snapshot::Request {
        root: &ctx.root,
        spec,
        protect: protect.as_ref(),
        baseline: ctx.baseline.as_deref(),
        path_var: gate_path,
        deadline,
    })
    .await?;
    let root: &Path = &snap.root;
    let cwd = paths::existing(root, spec.cwd.as_deref().unwrap_or("."), true)?;
    let runner_hint = runner_of(spec);
    let pytest = runs_pytest(spec);
    if pytest {
        check_shadowing(root, &cwd, &spec.plugins, true)?;
    }
    if runner_hint == Some(Runner::Unittest) {
        let named: Vec<String> = UNITTEST_MODULES.iter().map(|m| m.to_string()).collect();
        check_shadowing(root, &cwd, &named, false)?;
    }
    let mut env = child_env(spec, ctx, scrub)?;
    let mut set_default = |k: &str, v: String| {
        if !env.iter().any(|(name, _)| name == k) {
            env.push((k.to_string(), v));
        }
    };
    // No bytecode is written: the snapshot never holds a `.pyc` (an ignored `.pyc` of
    // other code was loaded in place of its source), so the tree's modules compile from
    // source, and no cache a run could write is read by the next one (the standard
    // library's own bytecode is read where it is installed, read-only).
    set_default("PYTHONDONTWRITEBYTECODE", "1".into());
    set_default("TMPDIR", snap.tmp.display().to_string());
    // cargo builds into the run's own directory, emptied for every run: never into
    // the tree's `target/`, and never from artefacts an earlier run's code could have
    // written (a test that set every artefact's time to 2100 made the next run link
    // them). An owner who trusts a cache names it in `env`.
    set_default(
        "CARGO_TARGET_DIR",
        snap.tmp.join("target").display().to_string(),
    );
    set_default("CARGO_TERM_COLOR", "never".into());
    // Off the network, cargo resolves from CARGO_HOME's cache instead of failing to
    // reach the index.
    if !spec.network && crate::sandbox::netns_available() {
        set_default("CARGO_NET_OFFLINE", "true".into());
    }
    set_default("NO_COLOR", "1".into());
    if pytest {
        // No plugin but those the contract names (`plugins`, loaded with -p).
        env.retain(|(k, _)| k != "PYTEST_DISABLE_PLUGIN_AUTOLOAD" && k != "PYTEST_PLUGINS");
        env.push(("PYTEST_DISABLE_PLUGIN_AUTOLOAD".into(), "1".into()));
        env.push(("PY_COLORS".into(), "0".into()));
    }
    // No user site-packages: a `.pth` or `usercustomize.py` there (writable by the
    // agent's user) would run before the test runner (found by the red team).
    if !env.iter().any(|(k, _)| k == "PYTHONNOUSERSITE") {
        env.push(("PYTHONNOUSERSITE".into(), "1".into()));
    }
    // No pytest cache between runs.
    if !spec.keep_caches && pytest && spec.shell {
        match env.iter_mut().find(|(k, _)| k == "PYTEST_ADDOPTS") {
            Some((_, v)) => v.push_str(" -p no:cacheprovider"),
            None => env.push(("PYTEST_ADDOPTS".into(), "-p no:cacheprovider".into())),
        }
    }
    if pytest && spec.shell && !spec.plugins.is_empty() {
        let named: String = spec.plugins.iter().map(|p| format!(" -p {p}")).collect();
        match env.iter_mut().find(|(k, _)| k == "PYTEST_ADDOPTS") {
            Some((_, v)) => v.push_str(&named),
            None => env.push(("PYTEST_ADDOPTS".into(), named.trim_start().to_string())),
        }
    }
    let source = if spec.tests_passed.is_empty() {
        None
    } else {
        Some(report_source(spec))
    };
    // pytest always writes its JUnit report to the slot's report directory, outside
    // the snapshot: the counts come from it, not from the text it prints.
    let report_path =
        (report_source(spec) == ReportSource::GatePytest).then(|| snap.reports.join("report.xml"));
    let (program, args): (PathBuf, Vec<String>) = if spec.shell {
        (
            PathBuf::from("/bin/sh"),
            vec!["-c".to_string(), spec.argv[0].clone()],
        )
    } else {
        let mut argv = spec.argv.clone();
        if pytest && let Some(i) = pytest_word(&argv) {
            // Right after `pytest`: before the contract's own arguments, after the
            // tree's `addopts` (which pytest reads first), so the tree cannot undo them.
            let mut extra = vec!["--color=no".to_string()];
            if !spec.keep_caches {
                extra.extend(["-p".to_string(), "no:cacheprovider".to_string()]);
            }
            for p in &spec.plugins {
                extra.extend(["-p".to_string(), p.clone()]);
            }
            if let Some(p) = &report_path {
                extra.push(format!("--junitxml={}", p.display()));
                extra.extend(["-o".to_string(), "junit_family=xunit2".to_string()]);
            }
            argv.splice(i + 1..i + 1, extra);
        }
        runner_flags(&mut argv, runner_hint);
        (
            {
                // The command's own PATH when the contract sets or inherits one, else
                // the gate's: `cargo` is found either way.
                let path = env
                    .iter()
                    .find(|(k, _)| k == "PATH")
                    .map(|(_, v)| v.as_str())
                    .or(gate_path);
                resolve_program(&argv[0], &cwd, path)?
            },
            argv[1..].to_vec(),
        )
    };
    let junit_before = match &spec.junit {
        Some(p) => junit_stamp(root, p)?,
        None => None,
    };
    let keep = if spec.capture_output {
        spec.max_output_bytes.unwrap_or(DEFAULT_MAX_OUTPUT_BYTES)
    } else {
        0
    };
    // The sandbox: the snapshot's slot and the toolchain, nothing of the real tree.
    let sandbox = crate::sandbox::prepare(&sandbox_policy(spec, &snap, &env, gate_path));
    let sandboxed = sandbox.report().clone();
    // Unsandboxed, a snapshot cannot stop a write by absolute path to the real tree, so
    // the real tree is watched instead.
    let watch = if sandboxed.sandboxed {
        None
    } else {
        let paths = snap.watched.clone();
        Some(
            tokio::task::spawn_blocking(move || protect::fingerprint(&paths, deadline))
                .await
                .map_err(|e| ProbeError::Protect {
                    reason: format!("watching the tree failed: {e}"),
                })??,
        )
    };
    // Digests of the output as scrubbed of the command's own secrets and the contract's.
    let mut digest_scrub = scrub.clone();
    digest_scrub.extend(&ctx.secrets);
    let run_started = Instant::now();
    let fin = run(Launch {
        program,
        args: &args,
        cwd: &cwd,
        env,
        keep,
        parse: true,
        digest_scrub: Some(&digest_scrub),
        sandbox: Some(sandbox),
    })
    .await?;
    let duration_ms = u64::try_from(run_started.elapsed().as_millis()).unwrap_or(u64::MAX);
    if let Some(before) = watch {
        let paths = snap.watched.clone();
        let real = ctx.root.clone();
        let deadline = started + limit + std::time::Duration::from_secs(5);
        let changed = tokio::task::spawn_blocking(move || {
            protect::fingerprint(&paths, deadline).map(|after| after.changes_since(&before, &real))
        })
        .await
        .map_err(|e| ProbeError::Protect {
            reason: format!("watching the tree failed: {e}"),
        })??;
        if !changed.is_empty() {
            return Err(ProbeError::Protect {
                reason: format!(
                    "the command wrote to the real tree while it ran in the snapshot (by absolute path, which an unsandboxed run cannot stop): {}; its result cannot be trusted",
                    changed.join(", ")
                ),
            });
        }
    }

    let rewritten = protect::tampered(root, &snap.protected);
    if !rewritten.is_empty() {
        let shown: Vec<String> = rewritten.iter().take(10).map(|r| scrub.scrub(r)).collect();
        return Err(ProbeError::Protect {
            reason: format!(
                "the run rewrote protected files in the snapshot before or while the tests ran (a build script or a test did): {}{}; its result cannot be trusted",
                shown.join(", "),
                if rewritten.len() > 10 {
                    format!(" and {} more", rewritten.len() - 10)
                } else {
                    String::new()
                }
            ),
        });
    }
    let junit = match &spec.junit {
        Some(p) => Some(read_junit(root, p, junit_before)?),
        None => None,
    };
    let mut parser = fin.stdout.parser.clone();
    parser.merge(&fin.stderr.parser);
    // pytest's own report, when it wrote one, is where its counts come from.
    // (None when pytest never got to write it: not installed, a usage error. Then the
    // exit code and the output's tail tell what happened.)
    let pytest_report = match &report_path {
        Some(p) if std::fs::symlink_metadata(p).is_ok() => Some(read_gate_report(p)?),
        _ => None,
    };
    let parsed: Option<(Runner, Counts)> = match (&junit, &pytest_report) {
        (Some(r), _) => Some((Runner::Junit, r.counts)),
        (None, Some(r)) if !r.cases.is_empty() || fin.exit_code == Some(5) => {
            Some((Runner::Pytest, with_pytest_words(r.counts, &parser)))
        }
        // pytest was told where to write its report and did not: its printed text is
        // not read in its place (code under test can print any summary and delete the
        // report on its way out).
        (None, None) if report_path.is_some() => None,
        _ => match parser.read(runner_hint) {
            summary::Reading::Counted(r, c) => Some((r, c)),
            summary::Reading::NotFound { .. } => None,
            summary::Reading::Unreadable { runner, reason } => {
                return Err(ProbeError::Format {
                    what: format!("{} report", runner.name()),
                    expected: "a report the runner wrote whole".into(),
                    reason,
                });
            }
        },
    };
    // A failed run shows which tests failed and how its output ended, so the reader
    // does not have to rerun it to know why (names from the machine report when there
    // is one, else as the runner printed them).
    let failed_tests: Vec<String> = match junit.as_ref().or(pytest_report.as_ref()) {
        Some(r) => r
            .cases
            .iter()
            .filter(|c| c.outcome == summary::Outcome::Failed)
            .take(summary::MAX_FAILED_NAMES)
            .map(|c| {
                format!("{}::{}", c.group, c.name)
                    .trim_start_matches("::")
                    .to_string()
            })
            .collect(),
        None => parser.failed_names().to_vec(),
    };
    // Named tests, from the machine report only.
    let named: Option<Vec<(String, summary::Named)>> = match source {
        None => None,
        Some(src) => {
            let gate_report;
            let cases: &[Case] = match src {
                ReportSource::GatePytest => {
                    gate_report = match pytest_report.as_ref() {
                        Some(r) => r,
                        None => {
                            let p = report_path.as_deref().ok_or_else(|| {
                                ProbeError::invalid("internal: no report path for pytest")
                            })?;
                            return Err(ProbeError::Junit {
                                path: p.display().to_string(),
                                reason: "pytest did not write it".into(),
                            });
                        }
                    };
                    &gate_report.cases
                }
                ReportSource::Junit => junit.as_ref().map_or(&[][..], |r| &r.cases),
                ReportSource::GoJson => {
                    fin.stdout
                        .parser
                        .go_cases()
                        .map_err(|reason| ProbeError::Format {
                            what: "go test -json output".into(),
                            expected: "a readable test event stream".into(),
                            reason: reason.to_string(),
                        })?
                }
                ReportSource::None => {
                    return Err(ProbeError::invalid(
                        "tests_passed needs the runner's machine report",
                    ));
                }
            };
            Some(
                spec.tests_passed
                    .iter()
                    .map(|t| (t.clone(), summary::named_status(cases, t, pytest)))
                    .collect(),
            )
        }
    };

    let exit_ok = fin.exit_code == Some(0);
    let exit_for_msg = fin
        .exit_code
        .map(i64::from)
        .unwrap_or_else(|| 128 + i64::from(fin.signal.unwrap_or(0)));
    let mut obj = Map::new();
    obj.insert(
        "exit_code".into(),
        fin.exit_code.map_or(Value::Null, Value::from),
    );
    if let Some(sig) = fin.signal {
        obj.insert("signal".into(), Value::from(sig));
    }
    match parsed {
        None => {
            // No runner summary: nothing shows that a test ran.
            obj.insert("ran".into(), Value::Bool(false));
            obj.insert("runner".into(), Value::Null);
        }
        Some((runner, c)) => {
            let disagrees =
                (exit_ok && c.failed > 0) || (!exit_ok && c.failed == 0 && c.passed > 0);
            if disagrees {
                return Err(ProbeError::SummaryDisagrees {
                    runner: runner.name().into(),
                    exit_code: exit_for_msg,
                    passed: c.passed,
                    failed: c.failed,
                });
            }
            obj.insert(
                "ran".into(),
                Value::Bool(c.passed.saturating_add(c.failed) > 0),
            );
            obj.insert("runner".into(), Value::from(runner.name()));
            for (k, v) in c.keys(runner) {
                obj.insert(k.into(), Value::from(v));
            }
        }
    }
    if let Some(named) = named {
        let passed: Vec<Value> = named
            .iter()
            .filter(|(_, st)| *st == summary::Named::Passed)
            .map(|(t, _)| Value::from(t.clone()))
            .collect();
        obj.insert("tests_passed".into(), Value::Array(passed));
        let tests: Map<String, Value> = named
            .into_iter()
            .map(|(t, st)| (t, Value::from(st.name())))
            .collect();
        obj.insert("tests".into(), Value::Object(tests));
    }
    if let Some(base) = &snap.base_commit {
        obj.insert("protect_base".into(), Value::from(base.clone()));
        obj.insert(
            "protected_files".into(),
            Value::from(snap.protected.len() as u64),
        );
    }
    obj.insert("snapshot".into(), snapshot_value(&snap, &sandboxed));
    obj.insert(
        "stdout_sha256".into(),
        Value::from(fin.stdout.sha256.clone()),
    );
    obj.insert(
        "stderr_sha256".into(),
        Value::from(fin.stderr.sha256.clone()),
    );
    obj.insert("duration_ms".into(), Value::from(duration_ms));
    let failed = !exit_ok || parsed.is_none_or(|(_, c)| c.failed > 0);
    if parsed.is_none()
        && let Some(r) = runner_hint
    {
        // "No test ran" names the runner whose report or summary was looked for.
        obj.insert("expected_runner".into(), Value::from(r.name()));
    }
    if failed {
        if !failed_tests.is_empty() {
            let names = failed_tests.iter().map(|n| Value::from(scrub.scrub(n)));
            obj.insert("failed_tests".into(), Value::Array(names.collect()));
        }
        for (name, s) in [("stdout_tail", &fin.stdout), ("stderr_tail", &fin.stderr)] {
            let tail = output_tail(s, scrub);
            if !tail.is_empty() {
                obj.insert(name.into(), Value::from(tail));
            }
        }
    }
    if spec.capture_output {
        for (name, s) in [("stdout", &fin.stdout), ("stderr", &fin.stderr)] {
            let lossy = String::from_utf8_lossy(&s.kept);
            let text = if s.truncated {
                scrub.scrub_cut(&lossy)
            } else {
                scrub.scrub(&lossy)
            };
            obj.insert(name.into(), Value::from(text));
            obj.insert(format!("{name}_truncated"), Value::Bool(s.truncated));
        }
    }
    let cases = match (junit, pytest_report) {
        (Some(r), _) | (None, Some(r)) => r.cases,
        (None, None) => fin
            .stdout
            .parser
            .go_cases()
            .map(<[Case]>::to_vec)
            .unwrap_or_default(),
    };
    Ok((obj, cases))
}

#[cfg(test)]
mod tail {
    use super::{Stream, TAIL_LINES, TAIL_MAX, output_tail};
    use crate::secret::Scrubber;

    fn stream(text: &str, total: u64) -> Stream {
        Stream {
            tail: text.as_bytes().to_vec(),
            total,
            ..Stream::default()
        }
    }

    #[test]
    fn whole_last_lines_only_scrubbed_and_capped() {
        let mut scrub = Scrubber::default();
        scrub.add("hunter2-secret");
        // A tail cut mid-stream drops its first, partial line (a secret could be cut there).
        let s = stream(
            "ter2-secret partial\nline 1\nthe key hunter2-secret\n",
            1000,
        );
        assert_eq!(output_tail(&s, &scrub), "line 1\nthe key ***");
        // A whole stream keeps its first line.
        let s = stream("first\nsecond\n", 13);
        assert_eq!(output_tail(&s, &scrub), "first\nsecond");
        let many: String = (0..100).map(|i| format!("line {i}\n")).collect();
        let shown = output_tail(&stream(&many, many.len() as u64), &scrub);
        assert_eq!(shown.lines().count(), TAIL_LINES);
        assert!(shown.ends_with("line 99"));
        let long: String = (0..10)
            .map(|i| format!("{i}{}\n", "x".repeat(500)))
            .collect();
        let shown = output_tail(&stream(&long, long.len() as u64), &scrub);
        assert!(
            shown.len() <= TAIL_MAX && shown.ends_with(&"x".repeat(500)),
            "{shown}"
        );
        assert!(output_tail(&stream("", 0), &scrub).is_empty());
    }
}

#[cfg(test)]
mod digest {
    use super::StreamDigest;
    use crate::secret::Scrubber;
    use sha2::{Digest as _, Sha256};

    fn digest(s: Option<&Scrubber>, chunks: &[&[u8]]) -> String {
        let mut d = StreamDigest::new(s);
        for c in chunks {
            d.update(c);
        }
        d.finish()
    }

    /// The red team's leak: a stream holding only the password digested to
    /// `sha256("hunter2\n")`, a hash anyone can reverse with a word list.
    #[test]
    fn a_secret_alone_does_not_digest_to_its_hash() {
        let mut s = Scrubber::default();
        s.add("postgres://app:hunter2@db/x");
        let raw = hex::encode(Sha256::digest(b"hunter2\n"));
        for chunks in [
            &[&b"hunter2\n"[..]][..],
            &[b"hun", b"ter", b"2\n"],
            &[b"hunter2", b"\n"],
        ] {
            let d = digest(Some(&s), chunks);
            assert_ne!(d, raw);
            assert_eq!(d, hex::encode(Sha256::digest(b"***\n")));
        }
        // A line longer than the digest's line limit, the secret straddling each cut.
        let mut long = vec![b'x'; super::DIGEST_LINE - 3];
        long.extend_from_slice(b"hunter2");
        long.extend(vec![b'y'; super::DIGEST_LINE]);
        long.extend_from_slice(b"hunter2");
        let mut want = vec![b'x'; super::DIGEST_LINE - 3];
        want.extend_from_slice(b"***");
        want.extend(vec![b'y'; super::DIGEST_LINE]);
        want.extend_from_slice(b"***");
        let parts: Vec<&[u8]> = long.chunks(64 * 1024).collect();
        assert_eq!(digest(Some(&s), &parts), hex::encode(Sha256::digest(&want)));
    }

    /// Honest twin: output holding no secret (invalid UTF-8 included) digests exactly
    /// as its raw bytes, so a pinned `stdout_sha256` still matches.
    #[test]
    fn output_without_a_secret_digests_as_raw() {
        let mut s = Scrubber::default();
        s.add("postgres://app:hunter2@db/x");
        let text: &[u8] = b"12 passed in 0.1s\n\xff\xfe binary \n no newline at the end";
        let raw = hex::encode(Sha256::digest(text));
        assert_eq!(digest(Some(&s), &[text]), raw);
        assert_eq!(digest(Some(&s), &[&text[..5], &text[5..]]), raw);
        assert_eq!(digest(None, &[text]), raw);
    }
}

#[cfg(test)]
mod plugin_metadata {
    use super::declared_pytest_plugin;

    fn dist(name: &str, entry_points: &str) -> (tempfile::TempDir, String) {
        let d = tempfile::tempdir().unwrap();
        let meta = d.path().join(name);
        std::fs::create_dir_all(&meta).unwrap();
        std::fs::write(meta.join("entry_points.txt"), entry_points).unwrap();
        (d, name.to_string())
    }

    /// The red team's three bypasses of the old reading of Python's metadata: a suffix
    /// in another case, a `[[pytest11]]` header (importlib.metadata strips every
    /// bracket), a form feed as the line break (Python's `splitlines`). Each is read
    /// as Python reads it now. Twin: console scripts only.
    #[test]
    fn every_spelling_python_reads_is_refused() {
        for (name, text) in [
            ("forge-0.DIST-INFO", "[pytest11]\nforge = forge_plugin\n"),
            ("forge-0.dist-info", "[[pytest11]]\nforge = forge_plugin\n"),
            (
                "forge-0.dist-info",
                "[console_scripts]\x0c[pytest11]\x0cforge = forge_plugin\n",
            ),
            ("forge.egg", ""),
            ("Forge.Egg-Info", "[ pytest11 ]\nforge=forge_plugin"),
        ] {
            let (d, n) = if name.ends_with(".egg") {
                let d = tempfile::tempdir().unwrap();
                std::fs::write(d.path().join(name), b"PK\x03\x04").unwrap();
                (d, name.to_string())
            } else {
                dist(name, text)
            };
            assert!(
                declared_pytest_plugin(d.path(), &n).is_some(),
                "{name}: {text:?}"
            );
        }
        let (d, n) = dist("tool-1.dist-info", "[console_scripts]\ntool = tool:main\n");
        assert_eq!(declared_pytest_plugin(d.path(), &n), None);
    }
}
