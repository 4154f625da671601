//! What every module of the CLI's integration tests shares: the `evident` binary with a
//! throwaway ledger, the workspace's paths, git with a fixed identity, output helpers,
//! a running `evident serve`, and the filters that make snapshots stable.

use std::io::{BufRead as _, BufReader};
use std::net::SocketAddr;
use std::path::{Path, PathBuf};
use std::process::{Child, Output};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex, OnceLock};
use std::time::Duration;

use assert_cmd::Command;
use serde_json::Value;

/// The binary cargo built for these tests (for `std::process::Command` and copies).
pub fn bin() -> PathBuf {
    PathBuf::from(env!("CARGO_BIN_EXE_evident"))
}

/// The binary with nothing inherited that changes what it does (`EVIDENT_LEDGER`,
/// `RUST_LOG`) and a ledger of its own no other run reads or writes.
pub fn evident() -> Command {
    let mut cmd = evident_without_ledger();
    cmd.env("EVIDENT_LEDGER", throwaway_ledger());
    cmd
}

/// The binary recording into `dir/ledger.db`, for tests that read the ledger back.
pub fn evident_in(dir: &Path) -> Command {
    let mut cmd = evident_without_ledger();
    cmd.env("EVIDENT_LEDGER", dir.join("ledger.db"));
    cmd
}

/// The binary with `EVIDENT_LEDGER` unset, for tests of the default location (or
/// that pass `--ledger`). The default ledger is in the state directory, so that is one
/// of this run's own ([`test_state_home`]), never the user's.
pub fn evident_without_ledger() -> Command {
    let mut cmd = Command::new(bin());
    cmd.env_remove("EVIDENT_LEDGER")
        .env_remove("RUST_LOG")
        .env("XDG_STATE_HOME", test_state_home());
    cmd
}

/// An `XDG_STATE_HOME` for this test process (under cargo's target/tmp), so a default
/// ledger (`$XDG_STATE_HOME/evident/ledgers/…`) is never written to the user's.
pub fn test_state_home() -> &'static Path {
    static DIR: OnceLock<PathBuf> = OnceLock::new();
    DIR.get_or_init(|| {
        tempfile::Builder::new()
            .prefix("it-state-")
            .tempdir_in(env!("CARGO_TARGET_TMPDIR"))
            .unwrap()
            .keep()
    })
}

/// A fresh ledger path in this test process's directory under cargo's target/tmp (one
/// directory per run, not one per call).
fn throwaway_ledger() -> PathBuf {
    static DIR: OnceLock<PathBuf> = OnceLock::new();
    static NEXT: AtomicUsize = AtomicUsize::new(0);
    let dir = DIR.get_or_init(|| {
        tempfile::Builder::new()
            .prefix("it-ledgers-")
            .tempdir_in(env!("CARGO_TARGET_TMPDIR"))
            .unwrap()
            .keep()
    });
    dir.join(format!("{}.db", NEXT.fetch_add(1, Ordering::Relaxed)))
}

/// Runs `cmd`: its exit code (-1 when killed by a signal), stdout and stderr.
pub fn run(cmd: &mut Command) -> (i32, String, String) {
    let out = cmd.output().unwrap();
    (out.status.code().unwrap_or(-1), stdout(&out), stderr(&out))
}

/// An output's stdout as text.
pub fn stdout(out: &Output) -> String {
    String::from_utf8_lossy(&out.stdout).into_owned()
}

/// An output's stderr as text.
pub fn stderr(out: &Output) -> String {
    String::from_utf8_lossy(&out.stderr).into_owned()
}

/// Bytes that must be JSON (a `--json` output).
pub fn json_of(out: &[u8]) -> Value {
    serde_json::from_slice(out).expect("--json prints JSON")
}

/// The workspace root (README.md, docs/, examples/, testdata/).
pub fn workspace() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../..")
}

/// The workspace's testdata/ directory.
pub fn testdata() -> PathBuf {
    workspace().join("testdata")
}

/// git with a fixed identity and no signing, asserting success: its trimmed stdout.
pub fn git(dir: &Path, args: &[&str]) -> String {
    let out = std::process::Command::new("git")
        .args(["-c", "user.name=t", "-c", "user.email=t@example.com"])
        .args(["-c", "commit.gpgsign=false"])
        .args(args)
        .current_dir(dir)
        .output()
        .unwrap();
    assert!(out.status.success(), "git {args:?}: {out:?}");
    String::from_utf8_lossy(&out.stdout).trim().to_string()
}

/// Whether python3 can import `module`.
pub fn python_has(module: &str) -> bool {
    std::process::Command::new("python3")
        .args(["-c", &format!("import {module}")])
        .status()
        .is_ok_and(|s| s.success())
}

/// A spawned `evident serve` (or `evident mcp --listen`) once it has printed its
/// `listen=` line: the child, the address it listens on, and its stderr so far (each
/// line is also echoed to the test's output, shown when the test fails).
pub struct Listening {
    /// The server process.
    pub child: Child,
    /// The address from its `listen=` line.
    pub addr: SocketAddr,
    /// Everything it wrote to stderr, as it arrives.
    pub log: Arc<Mutex<String>>,
}

/// Spawns `cmd` (stderr piped) and waits up to a minute for its `listen=` line; panics
/// with its stderr when it exits or stays silent instead.
pub fn spawn_listening(mut cmd: std::process::Command) -> Listening {
    let mut child = cmd.spawn().unwrap();
    let stderr = child.stderr.take().expect("stderr piped");
    let log = Arc::new(Mutex::new(String::new()));
    let (tx, rx) = std::sync::mpsc::channel();
    let l = log.clone();
    std::thread::spawn(move || {
        let mut tx = Some(tx);
        for line in BufReader::new(stderr).lines().map_while(Result::ok) {
            eprintln!("serve: {line}");
            {
                let mut l = l.lock().unwrap();
                l.push_str(&line);
                l.push('\n');
            }
            if let Some(at) = line.find("listen=")
                && let Some(t) = tx.take()
            {
                let _ = t.send(line[at + 7..].split(' ').next().unwrap().to_string());
            }
        }
    });
    let addr = rx
        .recv_timeout(Duration::from_secs(60))
        .unwrap_or_else(|_| panic!("the server did not start: {}", log.lock().unwrap()));
    Listening {
        child,
        addr: addr.parse().unwrap(),
        log,
    }
}
