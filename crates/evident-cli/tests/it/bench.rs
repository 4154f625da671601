//! `evident bench run|verify|report` and `evident sandbox run|verify`, run as a user
//! runs them, on the peer's example configurations.

use std::path::{Path, PathBuf};

use predicates::prelude::*;
use serde_json::Value;

use crate::support::{evident, json_of};

fn peer(p: &str) -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("../evident-bench/tests/data/peer")
        .join(p)
}

fn bench_run(out: &Path) -> Value {
    let o = evident()
        .args(["bench", "run", "--json", "--config"])
        .arg(peer("benchmark_config.json"))
        .arg("--output")
        .arg(out)
        .assert()
        .code(0)
        .get_output()
        .stdout
        .clone();
    json_of(&o)
}

#[test]
fn bench_run_verify_report() {
    let t = tempfile::tempdir().unwrap();
    let run = t.path().join("run");
    let v = bench_run(&run);
    assert_eq!(v["total_runs"], 24);
    assert_eq!(v["injected_failure_runs"], 21);
    assert_eq!(v["recovered_failure_runs"], 5);
    assert_eq!(v["manifest_verified"], true);
    let rates: Vec<f64> = v["groups"]
        .as_array()
        .unwrap()
        .iter()
        .map(|g| g["false_completion_rate"].as_f64().unwrap())
        .collect();
    assert_eq!(rates, vec![0.875, 1.0 / 3.0, 1.0 / 6.0]);
    // The reference's evaluations, byte for byte.
    assert_eq!(
        std::fs::read(run.join("evaluations.jsonl")).unwrap(),
        std::fs::read(peer("benchmark/evaluations.jsonl")).unwrap()
    );

    evident()
        .args(["bench", "verify"])
        .arg(&run)
        .assert()
        .code(0)
        .stdout(predicate::str::contains("intact (54 files"));

    let o = evident()
        .args(["bench", "report", "--json"])
        .arg(&run)
        .assert()
        .code(0)
        .get_output()
        .stdout
        .clone();
    let w = json_of(&o);
    let chart = PathBuf::from(w["chart"].as_str().unwrap());
    assert_eq!(chart, t.path().join("run-report/false-completion-rate.svg"));
    assert!(
        std::fs::read_to_string(chart)
            .unwrap()
            .contains("0.875 (7/8)")
    );

    // An added file: verify exits 1 and names it; report refuses.
    std::fs::write(run.join("envelopes/extra.json"), "{}").unwrap();
    let o = evident()
        .args(["bench", "verify", "--json"])
        .arg(&run)
        .assert()
        .code(1)
        .get_output()
        .stdout
        .clone();
    let v = json_of(&o);
    assert_eq!(v["ok"], false);
    assert_eq!(v["problems"][0]["path"], "envelopes/extra.json");
    assert_eq!(v["problems"][0]["problem"], "untracked");
    evident()
        .args(["bench", "report"])
        .arg(&run)
        .assert()
        .code(1)
        .stdout(predicate::str::contains("envelopes/extra.json"))
        .stderr(predicate::str::contains("no report was written"));
}

#[test]
fn bench_verify_without_a_manifest_is_exit_2() {
    let t = tempfile::tempdir().unwrap();
    evident()
        .args(["bench", "verify"])
        .arg(t.path())
        .assert()
        .code(2)
        .stderr(predicate::str::contains(
            "manifest.json: cannot read the manifest",
        ));
}

#[test]
fn bench_dry_run_prints_the_peers_run_ids_and_seeds() {
    let o = evident()
        .args(["bench", "run", "--dry-run", "--json", "--config"])
        .arg(peer("benchmark_config.json"))
        .assert()
        .code(0)
        .get_output()
        .stdout
        .clone();
    let v = json_of(&o);
    assert_eq!(v["runs"].as_array().unwrap().len(), 24);
    assert_eq!(
        v["runs"][0]["run_id"],
        "baseline--success--r0--632b47c52a70"
    );
    assert_eq!(v["runs"][0]["seed"].as_u64(), Some(12902560327235831728));
}

#[test]
fn config_errors_name_the_file_and_the_json_path() {
    let t = tempfile::tempdir().unwrap();
    let cfg = t.path().join("cfg.json");
    let text = std::fs::read_to_string(peer("benchmark_config.json")).unwrap();
    std::fs::write(&cfg, text.replace("\"stale_read\"", "\"stale_reed\"")).unwrap();
    evident()
        .args(["bench", "run", "--config"])
        .arg(&cfg)
        .arg("--output")
        .arg(t.path().join("out"))
        .assert()
        .code(2)
        .stderr(predicate::str::contains(
            "cfg.json: $.scenarios[4]: unknown scenario \"stale_reed\"",
        ));
    let s = t.path().join("s.json");
    let text = std::fs::read_to_string(peer("sandbox_config.json")).unwrap();
    std::fs::write(
        &s,
        text.replace("output/customer-update.txt", "../customer-update.txt"),
    )
    .unwrap();
    evident()
        .args(["sandbox", "run", "--config"])
        .arg(&s)
        .arg("--output")
        .arg(t.path().join("out2"))
        .assert()
        .code(2)
        .stderr(predicate::str::contains("s.json: $.contract.path:"))
        .stderr(predicate::str::contains("escapes the contract root"));
    assert!(!t.path().join("out").exists() && !t.path().join("out2").exists());
}

#[test]
fn sandbox_run_all_and_one() {
    let t = tempfile::tempdir().unwrap();
    let o = evident()
        .args(["sandbox", "run", "--json", "--config"])
        .arg(peer("sandbox_config.json"))
        .arg("--output")
        .arg(t.path().join("all"))
        .assert()
        .code(0)
        .get_output()
        .stdout
        .clone();
    let v = json_of(&o);
    assert_eq!(v["verified_complete"], 2);
    assert_eq!(v["failed"], 6);
    assert_eq!(v["false_completion_rate"], 0.75);
    assert_eq!(v["security_rejection"], 2);
    assert_eq!(
        std::fs::read(t.path().join("all/metrics.json")).unwrap(),
        std::fs::read(peer("sandbox/metrics.json")).unwrap()
    );
    evident()
        .args(["sandbox", "run", "--scenario", "symlink_escape", "--config"])
        .arg(peer("sandbox_config.json"))
        .arg("--output")
        .arg(t.path().join("one"))
        .assert()
        .code(0)
        .stdout(predicate::str::contains("symlink_escape"))
        .stdout(predicate::str::contains(
            "refused: path \"link/escape.txt\" escapes the contract root through a symlink",
        ));
    evident()
        .args(["sandbox", "verify"])
        .arg(t.path().join("one"))
        .assert()
        .code(0);
}
