//! `verify` refuses every change to a run: a changed, missing or added file, a symlink,
//! a configuration that no longer hashes to its digest; and a clean run verifies.

use std::path::{Path, PathBuf};

use evident_bench::config::{BenchConfig, SandboxConfig};
use evident_bench::manifest::{self, ProblemKind};
use evident_bench::{bench, report, sandbox};

fn data(p: &str) -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("tests/data/peer")
        .join(p)
}

fn run_into(dir: &Path) {
    let cfg = BenchConfig::parse(
        "benchmark_config.json",
        &std::fs::read(data("benchmark_config.json")).unwrap(),
    )
    .unwrap();
    bench::run(&cfg, dir).unwrap();
}

fn problems(dir: &Path) -> Vec<(String, ProblemKind)> {
    manifest::verify(dir)
        .unwrap()
        .problems
        .into_iter()
        .map(|p| (p.path, p.problem))
        .collect()
}

const TRACE: &str = "raw_traces/baseline--rollback--r0--caac8cfb0bcd.json";

#[test]
fn a_clean_run_verifies_and_so_does_the_peers_own() {
    let t = tempfile::tempdir().unwrap();
    run_into(&t.path().join("r"));
    let v = manifest::verify(&t.path().join("r")).unwrap();
    assert!(v.ok, "{:?}", v.problems);
    assert_eq!((v.kind, v.listed), ("benchmark", 54));
    // The peer's own output verifies with evident's check (same manifest format).
    let v = manifest::verify(&data("benchmark")).unwrap();
    assert!(v.ok, "{:?}", v.problems);
    // The peer's sandbox tree (git keeps no empty dirs, which the manifest never lists).
    let v = manifest::verify(&data("sandbox")).unwrap();
    assert!(v.ok, "{:?}", v.problems);
    assert_eq!(v.kind, "sandbox");
}

#[test]
fn a_changed_byte_is_refused() {
    let t = tempfile::tempdir().unwrap();
    let d = t.path().join("r");
    run_into(&d);
    // Flip the rollback's failure to a success: the verdict would change.
    let p = d.join(TRACE);
    let text = std::fs::read_to_string(&p).unwrap();
    let forged = text.replacen("\"success\": false", "\"success\": true", 1);
    assert_ne!(text, forged);
    std::fs::write(&p, forged).unwrap();
    assert_eq!(
        problems(&d),
        vec![(TRACE.to_string(), ProblemKind::DigestMismatch)]
    );
}

#[test]
fn a_removed_file_is_refused() {
    let t = tempfile::tempdir().unwrap();
    let d = t.path().join("r");
    run_into(&d);
    std::fs::remove_file(d.join("evaluations.jsonl")).unwrap();
    assert_eq!(
        problems(&d),
        vec![("evaluations.jsonl".to_string(), ProblemKind::Missing)]
    );
}

#[test]
fn an_untracked_file_is_refused_anywhere() {
    let t = tempfile::tempdir().unwrap();
    let d = t.path().join("r");
    run_into(&d);
    std::fs::write(d.join("raw_traces/extra--run.json"), b"{}").unwrap();
    std::fs::create_dir_all(d.join("deep/er")).unwrap();
    std::fs::write(d.join("deep/er/notes.txt"), b"x").unwrap();
    assert_eq!(
        problems(&d),
        vec![
            ("deep/er/notes.txt".to_string(), ProblemKind::Untracked),
            (
                "raw_traces/extra--run.json".to_string(),
                ProblemKind::Untracked
            ),
        ]
    );
    // The peer's check ignores them; evident's does not (a honest twin: an empty
    // directory holds no bytes and is no problem).
    std::fs::remove_file(d.join("raw_traces/extra--run.json")).unwrap();
    std::fs::remove_file(d.join("deep/er/notes.txt")).unwrap();
    assert!(manifest::verify(&d).unwrap().ok);
}

#[test]
fn a_symlink_is_refused_even_to_an_identical_file() {
    let t = tempfile::tempdir().unwrap();
    let d = t.path().join("r");
    run_into(&d);
    let p = d.join(TRACE);
    let copy = t.path().join("copy.json");
    std::fs::copy(&p, &copy).unwrap();
    std::fs::remove_file(&p).unwrap();
    std::os::unix::fs::symlink(&copy, &p).unwrap();
    let got = problems(&d);
    assert!(
        got.contains(&(TRACE.to_string(), ProblemKind::NotRegularFile)),
        "{got:?}"
    );
    assert!(
        got.contains(&(TRACE.to_string(), ProblemKind::Missing)),
        "{got:?}"
    );
}

#[test]
fn a_rewritten_manifest_still_fails_on_the_config_digest() {
    let t = tempfile::tempdir().unwrap();
    let d = t.path().join("r");
    run_into(&d);
    // Change the config and fix its entry in the manifest: the recorded config_digest
    // no longer matches what config.json hashes to.
    let cfg = d.join("config.json");
    let text = std::fs::read_to_string(&cfg).unwrap();
    std::fs::write(&cfg, text.replace("\"seed\": 1304", "\"seed\": 1305")).unwrap();
    let m = d.join("manifest.json");
    let mut v: serde_json::Value = serde_json::from_slice(&std::fs::read(&m).unwrap()).unwrap();
    let digest = hex::encode(<sha2::Sha256 as sha2::Digest>::digest(
        std::fs::read(&cfg).unwrap(),
    ));
    v["files"]["config.json"] = digest.into();
    std::fs::write(&m, serde_json::to_string_pretty(&v).unwrap()).unwrap();
    assert_eq!(
        problems(&d),
        vec![("config.json".to_string(), ProblemKind::ConfigDigestMismatch)]
    );
}

#[test]
fn a_broken_manifest_is_an_error_naming_its_json_path() {
    let t = tempfile::tempdir().unwrap();
    let d = t.path().join("r");
    run_into(&d);
    let m = d.join("manifest.json");
    let text = std::fs::read_to_string(&m).unwrap();
    std::fs::write(
        &m,
        text.replacen("\"cases.jsonl\": \"", "\"cases.jsonl\": \"zz", 1),
    )
    .unwrap();
    let e = manifest::verify(&d).unwrap_err();
    assert!(
        e.0.contains("manifest.json: $.files[\"cases.jsonl\"]: must be a SHA-256 digest"),
        "{e}"
    );
    std::fs::remove_file(&m).unwrap();
    let e = manifest::verify(&d).unwrap_err();
    assert!(
        e.0.contains("manifest.json: cannot read the manifest"),
        "{e}"
    );
    // A manifest that is a symlink is never followed.
    std::os::unix::fs::symlink(data("benchmark/manifest.json"), &m).unwrap();
    let e = manifest::verify(&d).unwrap_err();
    assert!(e.0.contains("not a regular file"), "{e}");
}

#[test]
fn the_report_needs_a_verified_run_and_stays_outside_it() {
    let t = tempfile::tempdir().unwrap();
    let d = t.path().join("r");
    run_into(&d);
    let out = report::default_output(&d);
    assert_eq!(out, t.path().join("r-report"));
    let w = report::write(&d, &out).unwrap();
    let md = std::fs::read_to_string(&w.markdown).unwrap();
    assert!(
        md.contains("| baseline | 8 | 8 | 7 | 0.875 (7/8) | 0 | 0/7 |"),
        "{md}"
    );
    assert!(
        md.contains("| evidence_contract | 8 | 3 | 1 | 0.333 (1/3) | 5 | 1/7 |"),
        "{md}"
    );
    assert!(
        md.contains("| verifier_feedback | 8 | 6 | 1 | 0.167 (1/6) | 2 | 4/7 |"),
        "{md}"
    );
    assert!(md.contains("![False-completion rate per policy](false-completion-rate.svg)"));
    let svg = std::fs::read_to_string(&w.chart).unwrap();
    let doc = roxmltree::Document::parse(&svg).expect("the chart is well-formed XML");
    let texts: Vec<&str> = doc
        .descendants()
        .filter(|n| n.has_tag_name("text"))
        .filter_map(|n| n.text())
        .collect();
    for want in [
        "0.875 (7/8)",
        "0.333 (1/3)",
        "0.167 (1/6)",
        "claimed 8 of 8 runs",
    ] {
        assert!(texts.contains(&want), "{want} not in {texts:?}");
    }
    let bars: Vec<f64> = doc
        .descendants()
        .filter(|n| n.has_tag_name("rect") && n.has_children())
        .map(|n| n.attribute("height").unwrap().parse().unwrap())
        .collect();
    assert_eq!(bars.len(), 3);
    assert!(
        bars[0] > bars[1] && bars[1] > bars[2] && bars[2] > 0.0,
        "{bars:?}"
    );
    // The run still verifies: nothing was written into it.
    assert!(manifest::verify(&d).unwrap().ok);
    // Inside the run: refused.
    let e = report::write(&d, &d.join("rep")).unwrap_err();
    assert!(e.0.contains("inside the run's directory"), "{e}");
    assert!(!d.join("rep").exists());
    // Through a symlink that points into the run: refused, and nothing left inside.
    std::os::unix::fs::symlink(&d, t.path().join("alias")).unwrap();
    let e = report::write(&d, &t.path().join("alias/rep2")).unwrap_err();
    assert!(e.0.contains("inside the run's directory"), "{e}");
    assert!(!d.join("rep2").exists());
    assert!(manifest::verify(&d).unwrap().ok);
    // A tampered run gets no report.
    std::fs::write(d.join("extra.txt"), b"x").unwrap();
    let e = report::write(&d, &out).unwrap_err();
    assert!(
        e.0.contains("does not verify") && e.0.contains("extra.txt"),
        "{e}"
    );
}

#[test]
fn a_sandbox_run_is_verified_too() {
    let t = tempfile::tempdir().unwrap();
    let d = t.path().join("s");
    let cfg = SandboxConfig::parse(
        "sandbox_config.json",
        &std::fs::read(data("sandbox_config.json")).unwrap(),
    )
    .unwrap();
    sandbox::run(&cfg, &d).unwrap();
    assert!(manifest::verify(&d).unwrap().ok);
    // Rewrite the observed state after the fact: refused.
    let state = "runs/partial_write/state/output/customer-update.txt";
    std::fs::write(d.join(state), b"Customer update sent.\n").unwrap();
    assert_eq!(
        problems(&d),
        vec![(state.to_string(), ProblemKind::DigestMismatch)]
    );
}
