//! Every fuzz target, built as a replayer, runs on its seeds and on every input that
//! once crashed it (`fuzz/regressions/TARGET/`): this is how CI compiles the targets
//! and keeps past crashes fixed without running libFuzzer.

use std::path::{Path, PathBuf};
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

/// Nesting levels for [`deep_nesting`]: a JUnit report 10,000 elements deep once
/// overflowed the stack; libFuzzer's default 4 KB inputs cannot nest that far.
const DEEP: usize = 20_000;

/// Each target on inputs nested [`DEEP`] levels: at the top, and in place of each of
/// the first string values of its seeds (as an array and as an object), so a parser
/// that recurses without a limit aborts here rather than in `evident verify`.
#[test]
fn deep_nesting() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR"));
    let out = Path::new(env!("CARGO_TARGET_TMPDIR")).join("deep_nesting");
    let array = format!("{}{}", "[".repeat(DEEP), "]".repeat(DEEP));
    let object = format!("{}1{}", "{\"a\":".repeat(DEEP), "}".repeat(DEEP));
    let xml = format!(
        "<testsuite tests=\"1\">{}{}</testsuite>",
        "<a>".repeat(DEEP),
        "</a>".repeat(DEEP)
    );
    for (target, exe, picked) in [
        ("claim", env!("CARGO_BIN_EXE_claim"), false),
        ("contract", env!("CARGO_BIN_EXE_contract"), true),
        ("atif", env!("CARGO_BIN_EXE_atif"), false),
        ("claude_code", env!("CARGO_BIN_EXE_claude_code"), false),
        ("codex", env!("CARGO_BIN_EXE_codex"), false),
        ("adapt", env!("CARGO_BIN_EXE_adapt"), true),
        ("junit", env!("CARGO_BIN_EXE_junit"), false),
        ("summary", env!("CARGO_BIN_EXE_summary"), true),
        ("eval_case", env!("CARGO_BIN_EXE_eval_case"), false),
    ] {
        let dir = out.join(target);
        let _ = std::fs::remove_dir_all(&dir);
        std::fs::create_dir_all(&dir).unwrap();
        let mut inputs: Vec<Vec<u8>> = Vec::new();
        // A pick byte for each format, TOML's `a = [[...]]`, a go test JSON line.
        for pick in 0..=if picked { 15u8 } else { 0 } {
            let pick: &[u8] = if picked { &[pick] } else { &[] };
            for body in [&array, &object, &xml, &format!("a = {array}\n")] {
                inputs.push([pick, body.as_bytes()].concat());
            }
            inputs.push([pick, format!("{{\"Action\":{array}}}").as_bytes()].concat());
        }
        for seed in files(&root.join("seeds").join(target)) {
            let data = std::fs::read(&seed).unwrap();
            let (pick, text) = data.split_at(usize::from(picked));
            for range in string_values(text).into_iter().take(12) {
                for deep in [&array, &object] {
                    let mut v = pick.to_vec();
                    v.extend_from_slice(&text[..range.start]);
                    v.extend_from_slice(deep.as_bytes());
                    v.extend_from_slice(&text[range.end..]);
                    inputs.push(v);
                }
            }
        }
        for (i, input) in inputs.iter().enumerate() {
            std::fs::write(dir.join(format!("{i:04}")), input).unwrap();
        }
        let run = Command::new(exe).arg(&dir).output().unwrap();
        let stderr = String::from_utf8_lossy(&run.stderr);
        let tail = &stderr[stderr.len().saturating_sub(2000)..];
        assert!(run.status.success(), "{target} on {DEEP} levels:\n{tail}");
        assert!(
            tail.contains(&format!("ran {} inputs", inputs.len())),
            "{tail}"
        );
        std::fs::remove_dir_all(&dir).unwrap();
    }
}

fn files(dir: &Path) -> Vec<PathBuf> {
    let mut v: Vec<PathBuf> = std::fs::read_dir(dir)
        .map(|d| d.filter_map(|e| e.ok()).map(|e| e.path()).collect())
        .unwrap_or_default();
    v.sort();
    v
}

/// The byte ranges of the JSON string literals that follow a `:` (object values).
fn string_values(text: &[u8]) -> Vec<std::ops::Range<usize>> {
    let mut out = Vec::new();
    let mut i = 0;
    while let Some(p) = text[i..].iter().position(|&b| b == b':').map(|p| i + p) {
        let mut start = p + 1;
        while text.get(start).is_some_and(|b| *b == b' ') {
            start += 1;
        }
        i = p + 1;
        if text.get(start) != Some(&b'"') {
            continue;
        }
        let mut end = start + 1;
        while let Some(&b) = text.get(end) {
            end += if b == b'\\' { 2 } else { 1 };
            if b == b'"' {
                out.push(start..end);
                break;
            }
        }
        i = end.min(text.len());
    }
    out
}
