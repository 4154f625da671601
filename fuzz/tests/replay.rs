//! Every fuzz target, built as a replayer, runs on its seeds and on every input that
//! once crashed it (`fuzz/regressions/TARGET/`): this is how CI compiles the targets
//! and keeps past crashes fixed without running libFuzzer.

use std::path::Path;
use std::process::Command;

fn replay(target: &str, exe: &str) {
    let root = Path::new(env!("CARGO_MANIFEST_DIR"));
    let dirs: Vec<_> = ["seeds", "regressions"]
        .iter()
        .map(|d| root.join(d).join(target))
        .filter(|d| d.is_dir())
        .collect();
    assert!(!dirs.is_empty(), "{target}: no seeds");
    let out = Command::new(exe).args(&dirs).output().unwrap();
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(out.status.success(), "{target} failed:\n{stderr}");
    assert!(!stderr.contains("ran 0 inputs"), "{target}: ran nothing");
}

macro_rules! targets {
    ($($name:ident),*) => {$(
        #[test]
        fn $name() {
            replay(stringify!($name), env!(concat!("CARGO_BIN_EXE_", stringify!($name))));
        }
    )*};
}

targets!(
    claim,
    contract,
    atif,
    claude_code,
    codex,
    adapt,
    junit,
    summary,
    eval_case
);
