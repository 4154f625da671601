//! The test-data generators checked into the repository are re-run into a temporary
//! folder and their output compared byte for byte with what is checked in, so a
//! hand-edited vector, or a generator edited without re-running it, fails here.
//! Where a generator owns its whole folder, a checked-in file it no longer writes
//! fails too. The generators use only Python's standard library (no package to
//! install) and are deterministic (`random.seed`, no clock).

use std::collections::BTreeSet;
use std::path::{Path, PathBuf};
use std::process::Command;

/// A generator: its script, and whether it owns every other file in its folder.
struct Generator {
    script: &'static str,
    owns_folder: bool,
}

const GENERATORS: &[Generator] = &[
    Generator {
        script: "testdata/malformed/make.py",
        owns_folder: true,
    },
    Generator {
        script: "testdata/conformance/claim-v0.1-evident/make.py",
        owns_folder: true,
    },
    Generator {
        // tricky.peer.* are the peer's answers on tricky.jsonl, not generated here.
        script: "crates/evident-eval/tests/data/differential/gen_tricky.py",
        owns_folder: false,
    },
];

fn repo() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../..")
}

fn files(dir: &Path) -> BTreeSet<String> {
    std::fs::read_dir(dir)
        .unwrap_or_else(|e| panic!("{}: {e}", dir.display()))
        .map(|e| e.unwrap().file_name().into_string().unwrap())
        .collect()
}

/// Runs `script` in a fresh folder (it writes into its working directory) and returns
/// that folder.
fn run(script: &Path) -> tempfile::TempDir {
    let tmp = tempfile::tempdir().unwrap();
    let name = script.file_name().unwrap();
    std::fs::copy(script, tmp.path().join(name)).unwrap();
    let out = Command::new("python3")
        .arg(name)
        .current_dir(tmp.path())
        .env("PYTHONHASHSEED", "0")
        .env("PYTHONDONTWRITEBYTECODE", "1")
        .output()
        .unwrap_or_else(|e| panic!("python3 (needed to re-run {}): {e}", script.display()));
    assert!(
        out.status.success(),
        "{} failed: {}",
        script.display(),
        String::from_utf8_lossy(&out.stderr)
    );
    std::fs::remove_file(tmp.path().join(name)).unwrap();
    tmp
}

#[test]
fn generators_reproduce_the_checked_in_files() {
    let mut problems = Vec::new();
    for g in GENERATORS {
        let script = repo().join(g.script);
        let folder = script.parent().unwrap();
        let tmp = run(&script);
        let made = files(tmp.path());
        assert!(!made.is_empty(), "{} wrote nothing", g.script);
        for name in &made {
            let fresh = std::fs::read(tmp.path().join(name)).unwrap();
            match std::fs::read(folder.join(name)) {
                Ok(checked_in) if checked_in == fresh => {}
                Ok(_) => problems.push(format!("{}: {name} differs from its output", g.script)),
                Err(_) => problems.push(format!("{}: {name} is not checked in", g.script)),
            }
        }
        if g.owns_folder {
            let script_name = script.file_name().unwrap().to_str().unwrap();
            for name in files(folder) {
                if !made.contains(&name) && name != script_name {
                    problems.push(format!(
                        "{}: {name} is checked in but not written",
                        g.script
                    ));
                }
            }
        }
    }
    assert!(
        problems.is_empty(),
        "re-run the generator in its folder and commit its output:\n{}",
        problems.join("\n")
    );
}
