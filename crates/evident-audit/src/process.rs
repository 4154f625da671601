//! Runs one subprocess from an argv (never a shell string) with a timeout, and keeps
//! only metadata in the record: program basename and arguments, return code, and the
//! SHA-256 of stdout and stderr. The output itself stays in memory for parsing and
//! for the final no-body scan, and is never written.

use serde::Serialize;
use sha2::{Digest, Sha256};
use std::io::Read;
use std::path::Path;
use std::process::{Command, Stdio};
use std::sync::mpsc;
use std::time::{Duration, Instant};

/// Output kept in memory per stream for parsing (the digest always covers all of it).
pub const MAX_KEPT_OUTPUT: usize = 32 * 1024 * 1024;

/// What one subprocess did, metadata only.
#[derive(Debug, Clone, Serialize)]
pub struct Row {
    /// Why it ran: `git_init`, `git_commit`, `pytest_span`, ...
    pub role: String,
    /// Program basename followed by the arguments.
    pub args: Vec<String>,
    /// The exit code; `null` when killed by a signal, timed out, or never started.
    pub returncode: Option<i32>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub signal: Option<i32>,
    pub timed_out: bool,
    /// Why the program could not be started (the OS error, not program output).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub spawn_error: Option<String>,
    pub stdout_sha256: String,
    pub stderr_sha256: String,
    pub stdout_bytes: u64,
    pub stderr_bytes: u64,
    pub duration_ms: u64,
    pub body_in_receipt: bool,
}

/// A finished subprocess: the metadata row plus the output held in memory.
#[derive(Debug, Clone)]
pub struct Ran {
    pub row: Row,
    pub stdout: Vec<u8>,
    pub stderr: Vec<u8>,
}

impl Ran {
    pub fn ok(&self) -> bool {
        self.row.returncode == Some(0)
    }
    pub fn stdout_text(&self) -> String {
        String::from_utf8_lossy(&self.stdout).into_owned()
    }
}

/// One command to run.
pub struct Spec<'a> {
    pub role: &'a str,
    pub program: &'a str,
    pub args: Vec<String>,
    pub cwd: &'a Path,
    pub env: Vec<(&'a str, String)>,
    pub env_remove: &'a [&'a str],
    pub timeout: Duration,
}

pub fn sha256_hex(bytes: &[u8]) -> String {
    hex::encode(Sha256::digest(bytes))
}

fn basename(program: &str) -> String {
    Path::new(program)
        .file_name()
        .map(|s| s.to_string_lossy().into_owned())
        .unwrap_or_else(|| program.to_string())
}

fn reader<R: Read + Send + 'static>(
    mut r: R,
    which: u8,
    tx: mpsc::Sender<(u8, String, u64, Vec<u8>)>,
) {
    std::thread::spawn(move || {
        let mut hasher = Sha256::new();
        let mut kept = Vec::new();
        let mut total = 0u64;
        let mut buf = [0u8; 64 * 1024];
        loop {
            match r.read(&mut buf) {
                Ok(0) | Err(_) => break,
                Ok(n) => {
                    hasher.update(&buf[..n]);
                    total += n as u64;
                    if kept.len() < MAX_KEPT_OUTPUT {
                        let room = MAX_KEPT_OUTPUT - kept.len();
                        kept.extend_from_slice(&buf[..n.min(room)]);
                    }
                }
            }
        }
        let _ = tx.send((which, hex::encode(hasher.finalize()), total, kept));
    });
}

/// Runs the command; never panics. A program that cannot start, a signal and a
/// timeout are all reported in the row (no exit code), never as success.
pub fn run(spec: Spec) -> Ran {
    let mut cmd = Command::new(spec.program);
    cmd.args(&spec.args).current_dir(spec.cwd);
    for k in spec.env_remove {
        cmd.env_remove(k);
    }
    for (k, v) in &spec.env {
        cmd.env(k, v);
    }
    let mut shown = vec![basename(spec.program)];
    shown.extend(spec.args.iter().cloned());
    run_command(spec.role, cmd, shown, spec.timeout)
}

/// Runs a prepared command (program, arguments, environment and working directory
/// already set); the row lists `shown` as its arguments, so a caller can leave out
/// options that are the same on every call (the hardened git options).
pub fn run_command(role: &str, mut cmd: Command, shown: Vec<String>, timeout: Duration) -> Ran {
    let mut row = Row {
        role: role.to_string(),
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
    };
    cmd.stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped());
    #[cfg(unix)]
    {
        use std::os::unix::process::CommandExt;
        cmd.process_group(0);
    }
    let start = Instant::now();
    let mut child = match cmd.spawn() {
        Ok(c) => c,
        Err(e) => {
            row.spawn_error = Some(e.to_string());
            return Ran {
                row,
                stdout: Vec::new(),
                stderr: Vec::new(),
            };
        }
    };
    let (tx, rx) = mpsc::channel();
    if let Some(out) = child.stdout.take() {
        reader(out, 0, tx.clone());
    }
    if let Some(err) = child.stderr.take() {
        reader(err, 1, tx.clone());
    }
    drop(tx);
    let status = loop {
        match child.try_wait() {
            Ok(Some(st)) => break Some(st),
            Ok(None) => {
                if start.elapsed() >= timeout {
                    row.timed_out = true;
                    kill_group(child.id());
                    let _ = child.kill();
                    let _ = child.wait();
                    break None;
                }
                std::thread::sleep(Duration::from_millis(5));
            }
            Err(_) => {
                let _ = child.kill();
                let _ = child.wait();
                break None;
            }
        }
    };
    if let Some(st) = status {
        row.returncode = st.code();
        #[cfg(unix)]
        {
            use std::os::unix::process::ExitStatusExt;
            row.signal = st.signal();
        }
    }
    // A grandchild that left the process group could hold the pipes open: wait a
    // bounded time for the readers, then give up on the rest of the output.
    let mut stdout = Vec::new();
    let mut stderr = Vec::new();
    let grace = Instant::now() + Duration::from_secs(10);
    for _ in 0..2 {
        let left = grace.saturating_duration_since(Instant::now());
        match rx.recv_timeout(left) {
            Ok((0, digest, n, kept)) => {
                row.stdout_sha256 = digest;
                row.stdout_bytes = n;
                stdout = kept;
            }
            Ok((_, digest, n, kept)) => {
                row.stderr_sha256 = digest;
                row.stderr_bytes = n;
                stderr = kept;
            }
            Err(_) => break,
        }
    }
    row.duration_ms = u64::try_from(start.elapsed().as_millis()).unwrap_or(u64::MAX);
    Ran {
        row,
        stdout,
        stderr,
    }
}

#[cfg(unix)]
fn kill_group(pid: u32) {
    // The child leads its own process group; kill the whole group (argv, no shell).
    let _ = Command::new("kill")
        .args(["-KILL", "--", &format!("-{pid}")])
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .status();
}

#[cfg(not(unix))]
fn kill_group(_pid: u32) {}

#[cfg(test)]
mod tests {
    use super::*;

    fn spec<'a>(program: &'a str, args: &[&str], timeout: Duration) -> Spec<'a> {
        Spec {
            role: "test",
            program,
            args: args.iter().map(|s| s.to_string()).collect(),
            cwd: Path::new("."),
            env: vec![],
            env_remove: &[],
            timeout,
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
}
