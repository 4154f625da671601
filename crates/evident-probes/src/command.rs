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
use crate::summary::{self, Counts, Parser};
use crate::{Context, Object, paths};

pub const DEFAULT_MAX_OUTPUT_BYTES: u64 = 1024 * 1024;
/// Longest line given to the summary parser; the rest of a longer line is hashed only.
const MAX_LINE: usize = 64 * 1024;
/// Largest JUnit report read.
const MAX_JUNIT_BYTES: u64 = 16 * 1024 * 1024;

/// Kills the whole process group when dropped: on timeout the observe future is
/// dropped, and nothing the command started may outlive the probe.
struct GroupGuard(Option<rustix::process::Pid>);

impl GroupGuard {
    fn kill(&self) {
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
    pub sha256: String,
    pub total: u64,
    pub kept: Vec<u8>,
    pub truncated: bool,
    pub parser: Parser,
}

/// A finished process.
#[derive(Debug)]
pub struct Finished {
    pub exit_code: Option<i32>,
    pub signal: Option<i32>,
    pub stdout: Stream,
    pub stderr: Stream,
}

/// What to start.
pub struct Launch<'a> {
    pub program: PathBuf,
    pub args: &'a [String],
    pub cwd: &'a Path,
    pub env: Vec<(String, String)>,
    pub keep: u64,
    pub parse: bool,
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
    for dir in path_var.unwrap_or("").split(':').filter(|d| !d.is_empty()) {
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
    let program = l.program.display().to_string();
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
    let stdout = child.stdout.take();
    let stderr = child.stderr.take();
    let (status, out, err) = tokio::join!(
        async {
            let s = child.wait().await;
            // Whatever the command started and left running (a server, a sleeping
            // grandchild holding the pipe) goes with it.
            guard.kill();
            s
        },
        read_stream(stdout, l.keep, l.parse),
        read_stream(stderr, l.keep, l.parse),
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

async fn read_stream<R: AsyncRead + Unpin>(
    r: Option<R>,
    keep: u64,
    parse: bool,
) -> std::io::Result<Stream> {
    let mut s = Stream::default();
    let mut hasher = Sha256::new();
    let Some(mut r) = r else {
        s.sha256 = hex::encode(hasher.finalize());
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
    s.sha256 = hex::encode(hasher.finalize());
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
) -> Result<Counts, ProbeError> {
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
    summary::parse_junit(&text).map_err(jerr)
}

/// test_run: run the command and observe exit code, counts and output digests.
pub async fn observe(
    spec: &CommandSpec,
    ctx: &Context,
    scrub: &mut Scrubber,
) -> Result<Object, ProbeError> {
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
    let cwd = paths::existing(&ctx.root, spec.cwd.as_deref().unwrap_or("."), true)?;
    let env = child_env(spec, ctx, scrub)?;
    let (program, args): (PathBuf, Vec<String>) = if spec.shell {
        (
            PathBuf::from("/bin/sh"),
            vec!["-c".to_string(), spec.argv[0].clone()],
        )
    } else {
        (
            {
                // The command's own PATH when the contract sets or inherits one, else
                // the gate's: `cargo` is found either way.
                let path = env
                    .iter()
                    .find(|(k, _)| k == "PATH")
                    .map(|(_, v)| v.as_str())
                    .or_else(|| ctx.env.get("PATH").map(String::as_str));
                resolve_program(&spec.argv[0], &cwd, path)?
            },
            spec.argv[1..].to_vec(),
        )
    };
    let junit_before = match &spec.junit {
        Some(p) => junit_stamp(&ctx.root, p)?,
        None => None,
    };
    let keep = if spec.capture_output {
        spec.max_output_bytes.unwrap_or(DEFAULT_MAX_OUTPUT_BYTES)
    } else {
        0
    };
    let started = Instant::now();
    let fin = run(Launch {
        program,
        args: &args,
        cwd: &cwd,
        env,
        keep,
        parse: true,
    })
    .await?;
    let duration_ms = u64::try_from(started.elapsed().as_millis()).unwrap_or(u64::MAX);

    let parsed: Option<(Runner, Counts)> = match &spec.junit {
        Some(p) => Some((Runner::Junit, read_junit(&ctx.root, p, junit_before)?)),
        None => {
            let mut parser = fin.stdout.parser.clone();
            parser.merge(&fin.stderr.parser);
            // A shell script's words stand in for argv ("pytest -q tests" → pytest).
            let words: Vec<String> = if spec.shell {
                spec.argv[0].split_whitespace().map(String::from).collect()
            } else {
                spec.argv.clone()
            };
            let runner = spec.runner.or_else(|| summary::runner_from_argv(&words));
            match runner {
                Some(r) => parser.result(Some(r)),
                None => parser.result(None),
            }
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
            obj.insert("passed".into(), Value::from(c.passed));
            obj.insert("failed".into(), Value::from(c.failed));
            obj.insert("skipped".into(), Value::from(c.skipped));
        }
    }
    obj.insert(
        "stdout_sha256".into(),
        Value::from(fin.stdout.sha256.clone()),
    );
    obj.insert(
        "stderr_sha256".into(),
        Value::from(fin.stderr.sha256.clone()),
    );
    obj.insert("duration_ms".into(), Value::from(duration_ms));
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
    Ok(obj)
}
