//! Runs every conformance vector: the shared ones (`testdata/conformance/claim-v0.1`,
//! copied verbatim from `shared/conformance/`) and evident's own edges
//! (`testdata/conformance/claim-v0.1-evident`). Each must give exactly its
//! `expect.state` and `expect.unmet`, or be refused naming `expect.invalid`.

use evident_format::{Claim, Timestamp};
use evident_rules::{Options, decide};
use serde_json::Value;
use std::path::{Path, PathBuf};

fn vector_dirs() -> Vec<PathBuf> {
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../testdata/conformance");
    vec![root.join("claim-v0.1"), root.join("claim-v0.1-evident")]
}

fn run_dir(dir: &Path) -> (usize, Vec<String>) {
    let mut failures = Vec::new();
    let mut count = 0;
    let mut entries: Vec<_> = std::fs::read_dir(dir)
        .unwrap_or_else(|e| panic!("{}: {e}", dir.display()))
        .map(|e| e.unwrap().path())
        .filter(|p| p.extension().is_some_and(|x| x == "json"))
        .collect();
    entries.sort();
    for path in entries {
        count += 1;
        let name = path.file_name().unwrap().to_string_lossy().to_string();
        let vector: Value = serde_json::from_slice(&std::fs::read(&path).unwrap()).unwrap();
        let text = match vector.get("document_text") {
            Some(Value::String(t)) => t.clone(),
            _ => serde_json::to_string(&vector["document"]).unwrap(),
        };
        let now = Timestamp::parse(vector["now"].as_str().unwrap()).unwrap();
        let expect = &vector["expect"];
        match (Claim::parse(text.as_bytes(), &name), expect.get("invalid")) {
            (Err(e), Some(Value::String(path))) => {
                if &e.path != path {
                    failures.push(format!(
                        "{name}: refused at {:?}, expected at {path:?} ({e})",
                        e.path
                    ));
                }
            }
            (Ok(_), Some(path)) => {
                failures.push(format!("{name}: accepted, expected refusal at {path}"))
            }
            (Err(e), None) => failures.push(format!("{name}: refused: {e}")),
            (Ok(doc), None) => {
                let v = decide(&doc.claim, &now, &Options::default());
                let unmet: Vec<Value> = v.unmet.iter().map(|u| Value::String(u.clone())).collect();
                if expect["state"] != v.state.as_str() || expect["unmet"] != Value::Array(unmet) {
                    failures.push(format!(
                        "{name}: got {} {:?}, expected {} {}",
                        v.state, v.unmet, expect["state"], expect["unmet"]
                    ));
                }
            }
            (_, Some(other)) => failures.push(format!("{name}: bad expect.invalid {other}")),
        }
    }
    (count, failures)
}

#[test]
fn every_conformance_vector_gives_its_expected_verdict() {
    let mut total = 0;
    let mut failures = Vec::new();
    for dir in vector_dirs() {
        let (n, f) = run_dir(&dir);
        assert!(n > 0, "no vectors in {}", dir.display());
        total += n;
        failures.extend(f);
    }
    assert!(total >= 55, "only {total} vectors found");
    assert!(
        failures.is_empty(),
        "{} of {total} vectors failed:\n{}",
        failures.len(),
        failures.join("\n")
    );
}
