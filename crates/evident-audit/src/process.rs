//! The audit's subprocess record on top of evident-probes' command runner
//! ([`evident_probes::run_command`]: own process group killed whole, cleared
//! environment, no stdin, streams hashed and parsed line by line, a capped prefix
//! kept). This module only adds the timeout, the metadata row the records carry
//! (program basename and arguments, return code, SHA-256 and size of each stream)
//! and the blocking call: the output itself stays in memory for parsing and for the
//! final no-body scan, and is never written.

use evident_probes::summary::Parser;
use evident_probes::{Finished, Launch, ProbeError, resolve_program, run_command};
use serde::Serialize;
use sha2::{Digest, Sha256};
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

/// Output kept in memory per stream for the no-body scan (the digest and the summary
/// parser always cover all of it).
pub const MAX_KEPT_OUTPUT: u64 = 32 * 1024 * 1024;

/// What one subprocess did, metadata only.
#[derive(Debug, Clone, Serialize)]
pub struct Row {
    /// Why it ran: `git_init`, `git_commit`, `pytest_span`, ...
    pub role: String,
    /// Program basename followed by the arguments.
    pub args: Vec<String>,
    /// The exit code; `null` when killed by a signal, timed out, or never started.
    pub returncode: Option<i32>,
    /// The signal that ended it, when one did (a crash reads differently from a failure).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub signal: Option<i32>,
    /// It outlived its timeout and was killed with its process group.
    pub timed_out: bool,
    /// Why the program could not be started (the OS error, not program output).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub spawn_error: Option<String>,
    /// Hex SHA-256 of all of stdout: identifies the output without recording it.
    pub stdout_sha256: String,
    /// Hex SHA-256 of all of stderr.
    pub stderr_sha256: String,
    /// Size of all of stdout.
    pub stdout_bytes: u64,
    /// Size of all of stderr.
    pub stderr_bytes: u64,
    /// Wall time from start (or the failed start) to the end.
    pub duration_ms: u64,
    /// Always false: the row carries no output (the peer's field).
    pub body_in_receipt: bool,
}

/// A finished subprocess: the metadata row plus the output held in memory and the
/// shared summary parser fed with stdout.
#[derive(Debug, Clone)]
pub struct Ran {
    /// What goes into the records.
    pub row: Row,
    /// stdout (up to [`MAX_KEPT_OUTPUT`]): read for git's answers and the body scan, never written.
    pub stdout: Vec<u8>,
    /// stderr (up to [`MAX_KEPT_OUTPUT`]), kept only for the body scan.
    pub stderr: Vec<u8>,
    /// The shared test-summary parser, fed with all of stdout.
    pub parser: Parser,
}

impl Ran {
    /// Started, finished in time and exited zero.
    pub fn ok(&self) -> bool {
        self.row.returncode == Some(0)
    }
    /// stdout as text (lossy), for git answers such as a commit id.
    pub fn stdout_text(&self) -> String {
        String::from_utf8_lossy(&self.stdout).into_owned()
    }
}

/// One command to run.
pub struct Spec<'a> {
    /// Why it runs, as the row's `role` (`git_commit`, `pytest_span`, …).
    pub role: &'a str,
    /// A bare name (searched on the absolute entries of `PATH`) or a path.
    pub program: &'a str,
    /// The arguments, after the program.
    pub args: Vec<String>,
    /// What the row lists after the program's basename (default: `args`), so the
    /// hardened git options, the same on every call, stay out of the records.
    pub shown: Option<Vec<String>>,
    /// Where it runs.
    pub cwd: &'a Path,
    /// The complete environment of the child (the runner clears everything else).
    pub env: Vec<(String, String)>,
    /// After this the whole process group is killed and the row says `timed_out`.
    pub timeout: Duration,
    /// A test run: held as a command wave of the shared reaper (no other gate of this
    /// process takes its daemons for orphans meanwhile), and everything it started
    /// that left its process group (`setsid`) is adopted and killed after it.
    pub reap: bool,
}

/// Hex SHA-256, the form the rows use (also for the empty output of a span that never ran).
pub fn sha256_hex(bytes: &[u8]) -> String {
    hex::encode(Sha256::digest(bytes))
}

fn basename(program: &str) -> String {
    Path::new(program)
        .file_name()
        .map(|s| s.to_string_lossy().into_owned())
        .unwrap_or_else(|| program.to_string())
}

/// This process's environment without `remove`, then `set`: what the test runners
/// get (the user's toolchain settings are inherited; see docs/audit.md).
pub fn inherited_env(remove: &[&str], set: &[(&str, String)]) -> Vec<(String, String)> {
    let mut env: Vec<(String, String)> = std::env::vars()
        .filter(|(k, _)| !remove.contains(&k.as_str()) && !set.iter().any(|(s, _)| s == k))
        .collect();
    env.extend(set.iter().map(|(k, v)| (k.to_string(), v.clone())));
    env
}

/// `program` as the runner starts it: a relative path is taken from this process's
/// working directory (not the span's), a bare name from the absolute `PATH` entries.
fn program_path(program: &str, cwd: &Path) -> Result<PathBuf, ProbeError> {
    let path_var = std::env::var("PATH").ok();
    let p = Path::new(program);
    if program.contains('/') && p.is_relative() {
        let here = std::env::current_dir().unwrap_or_else(|_| PathBuf::from("/"));
        let abs = here.join(p);
        return resolve_program(&abs.to_string_lossy(), cwd, path_var.as_deref());
    }
    resolve_program(program, cwd, path_var.as_deref())
}

/// Runs `fut` to completion on a runtime of its own; on a thread of its own when the
/// caller is already inside a tokio runtime (a runtime cannot block inside another).
fn block_on<T: Send>(fut: impl std::future::Future<Output = T> + Send) -> Option<T> {
    let go = move || {
        tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .build()
            .ok()
            .map(|rt| rt.block_on(fut))
    };
    if tokio::runtime::Handle::try_current().is_ok() {
        std::thread::scope(|s| s.spawn(go).join().ok().flatten())
    } else {
        go()
    }
}

/// Runs the command; never panics. A program that cannot start, a signal and a
/// timeout are all reported in the row (no exit code), never as success. On timeout
/// the runner's future is dropped, which kills the command's whole process group.
pub fn run(spec: Spec) -> Ran {
    let mut shown = vec![basename(spec.program)];
    shown.extend(spec.shown.unwrap_or_else(|| spec.args.clone()));
    let mut ran = Ran {
        row: Row {
            role: spec.role.to_string(),
            args: shown,
            returncode: None,
            signal: None,
            timed_out: false,
            spawn_error: None,
            stdout_sha256: sha256_hex(b""),
            stderr_sha256: sha256_hex(b""),
            stdout_bytes: 0,
            stderr_bytes: 0,
            duration_ms: 0,
            body_in_receipt: false,
        },
        stdout: Vec::new(),
        stderr: Vec::new(),
        parser: Parser::default(),
    };
    let start = Instant::now();
    let program = match program_path(spec.program, spec.cwd) {
        Ok(p) => p,
        Err(e) => {
            ran.row.spawn_error = Some(spawn_reason(&e));
            return ran;
        }
    };
    let launch = Launch {
        program,
        args: &spec.args,
        cwd: spec.cwd,
        env: spec.env,
        keep: MAX_KEPT_OUTPUT,
        parse: true,
        digest_scrub: None,
        sandbox: None,
    };
    let (timeout, reap) = (spec.timeout, spec.reap);
    if reap {
        evident_probes::reaper::adopt_orphans();
    }
    let outcome = block_on(async move {
        let wave = if reap {
            Some(evident_probes::reaper::command_wave().await)
        } else {
            None
        };
        let r = tokio::time::timeout(timeout, run_command(launch)).await;
        drop(wave);
        if reap {
            evident_probes::reaper::kill_escaped_exclusive().await;
        }
        r
    });
    match outcome {
        None => ran.row.spawn_error = Some("no runtime to run the command on".into()),
        Some(Err(_elapsed)) => ran.row.timed_out = true,
        Some(Ok(Err(e))) => ran.row.spawn_error = Some(spawn_reason(&e)),
        Some(Ok(Ok(f))) => keep(&mut ran, f),
    }
    ran.row.duration_ms = u64::try_from(start.elapsed().as_millis()).unwrap_or(u64::MAX);
    ran
}

fn keep(ran: &mut Ran, f: Finished) {
    ran.row.returncode = f.exit_code;
    ran.row.signal = f.signal;
    ran.row.stdout_sha256 = f.stdout.sha256;
    ran.row.stdout_bytes = f.stdout.total;
    ran.row.stderr_sha256 = f.stderr.sha256;
    ran.row.stderr_bytes = f.stderr.total;
    ran.stdout = f.stdout.kept;
    ran.stderr = f.stderr.kept;
    // stdout only: the runners print their summaries there, and a test's own stderr
    // cannot add to them.
    ran.parser = f.stdout.parser;
}

/// The OS's reason, not program output.
fn spawn_reason(e: &ProbeError) -> String {
    match e {
        ProbeError::CommandNotFound { .. } => "not found".into(),
        ProbeError::Spawn { reason, .. } => reason.clone(),
        other => other.to_string(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn spec<'a>(program: &'a str, args: &[&str], timeout: Duration) -> Spec<'a> {
        Spec {
            role: "test",
            program,
            args: args.iter().map(|s| s.to_string()).collect(),
            shown: None,
            cwd: Path::new("."),
            env: inherited_env(&[], &[]),
            timeout,
            reap: false,
        }
    }

    #[test]
    fn digests_not_bodies() {
        // The argument spells "hello" with an escape, so only the output holds it.
        let r = run(spec("printf", &["\\x68ello"], Duration::from_secs(20)));
        assert_eq!(r.row.returncode, Some(0));
        assert_eq!(r.row.stdout_sha256, sha256_hex(b"hello"));
        assert_eq!(r.row.stdout_bytes, 5);
        assert_eq!(r.stdout, b"hello");
        let json = serde_json::to_string(&r.row).unwrap();
        assert!(!json.contains("\"hello\""), "{json}");
        assert_eq!(r.row.args, vec!["printf", "\\x68ello"]);
    }

    #[test]
    fn exit_codes_missing_programs_and_timeouts() {
        let r = run(spec("false", &[], Duration::from_secs(20)));
        assert_eq!(r.row.returncode, Some(1));
        let r = run(spec("/nonexistent/prog", &[], Duration::from_secs(20)));
        assert!(r.row.spawn_error.is_some() && r.row.returncode.is_none());
        assert_eq!(r.row.args[0], "prog");
        let t = Instant::now();
        let r = run(spec("sleep", &["30"], Duration::from_millis(300)));
        assert!(r.row.timed_out && r.row.returncode.is_none());
        assert!(t.elapsed() < Duration::from_secs(15));
    }

    /// A timeout kills the whole group: a grandchild in the background holding the
    /// pipe is gone too, so the call returns at the deadline.
    #[test]
    fn a_timeout_kills_the_group() {
        let t = Instant::now();
        let r = run(spec(
            "sh",
            &["-c", "sleep 30 & sleep 30; echo late"],
            Duration::from_millis(300),
        ));
        assert!(r.row.timed_out && r.row.returncode.is_none());
        assert!(t.elapsed() < Duration::from_secs(10));
    }

    #[test]
    fn runs_inside_a_tokio_runtime_too() {
        let rt = tokio::runtime::Builder::new_current_thread()
            .build()
            .unwrap();
        let r = rt.block_on(async { run(spec("true", &[], Duration::from_secs(20))) });
        assert_eq!(r.row.returncode, Some(0));
    }
}
