//! The benchmark and the sandbox against the peer's own output trees
//! (`tests/data/peer/NOTE.md`): every file byte-identical, but for the one command under
//! "Reproduce" in each `report.md` (evident's, not the peer's) and so the manifest's
//! digest of `report.md`.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use evident_bench::config::{BenchConfig, SandboxConfig};
use evident_bench::{bench, manifest, sandbox};
use serde_json::Value;

fn data(p: &str) -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("tests/data/peer")
        .join(p)
}

/// Every regular file under `dir`, by relative path.
fn tree(dir: &Path) -> BTreeMap<String, Vec<u8>> {
    let mut out = BTreeMap::new();
    let mut stack = vec![dir.to_path_buf()];
    while let Some(d) = stack.pop() {
        for e in std::fs::read_dir(&d).unwrap() {
            let e = e.unwrap();
            let ft = e.file_type().unwrap();
            assert!(!ft.is_symlink(), "{:?} is a symlink", e.path());
            if ft.is_dir() {
                stack.push(e.path());
            } else {
                let rel = e
                    .path()
                    .strip_prefix(dir)
                    .unwrap()
                    .to_str()
                    .unwrap()
                    .to_owned();
                out.insert(rel, std::fs::read(e.path()).unwrap());
            }
        }
    }
    out
}

fn bench_config() -> BenchConfig {
    let p = data("benchmark_config.json");
    BenchConfig::parse("benchmark_config.json", &std::fs::read(p).unwrap()).unwrap()
}

fn sandbox_config() -> SandboxConfig {
    let p = data("sandbox_config.json");
    SandboxConfig::parse("sandbox_config.json", &std::fs::read(p).unwrap()).unwrap()
}

/// The peer's report with its Reproduce command replaced by evident's.
fn peer_report(peer: &[u8], peer_cmd: &str, ours: &str) -> String {
    let text = String::from_utf8(peer.to_vec()).unwrap();
    assert!(text.contains(peer_cmd));
    text.replace(peer_cmd, ours)
}

fn compare(ours: &BTreeMap<String, Vec<u8>>, peer: &BTreeMap<String, Vec<u8>>, report: &str) {
    assert_eq!(
        ours.keys().collect::<Vec<_>>(),
        peer.keys().collect::<Vec<_>>(),
        "the same files"
    );
    for (path, bytes) in peer {
        let got = &ours[path];
        match path.as_str() {
            "report.md" => assert_eq!(String::from_utf8_lossy(got), report, "report.md"),
            "manifest.json" => {
                let mut a: Value = serde_json::from_slice(got).unwrap();
                let mut b: Value = serde_json::from_slice(bytes).unwrap();
                for v in [&mut a, &mut b] {
                    v["files"].as_object_mut().unwrap().remove("report.md");
                }
                assert_eq!(a, b, "manifest.json (but report.md's digest)");
                let ours_report = a.clone();
                assert_eq!(
                    ours_report["files"].as_object().unwrap().len(),
                    peer.len() - 2
                );
            }
            _ => assert!(
                got == bytes,
                "{path} differs:\n--- evident\n{}\n--- peer\n{}",
                String::from_utf8_lossy(got),
                String::from_utf8_lossy(bytes)
            ),
        }
    }
}

#[test]
fn benchmark_equals_the_peer_byte_for_byte() {
    let cfg = bench_config();
    assert_eq!(
        cfg.digest().unwrap(),
        "342da2915cab7c7bf08bb1ff80f0d85373d7aaa91e92c67197139597db776ba0"
    );
    let t = tempfile::tempdir().unwrap();
    let out = t.path().join("run");
    let r = bench::run(&cfg, &out).unwrap();
    assert_eq!(r.total_runs, 24);
    assert_eq!(r.injected_failure_runs, 21);
    assert_eq!(r.recovered_failure_runs, 5);
    let fcr: Vec<(String, f64, u64, u64)> = r
        .groups
        .iter()
        .map(|g| {
            (
                g.group.clone(),
                g.false_completion_rate,
                g.false_completion,
                g.claimed,
            )
        })
        .collect();
    assert_eq!(
        fcr,
        vec![
            ("baseline".into(), 0.875, 7, 8),
            ("evidence_contract".into(), 1.0 / 3.0, 1, 3),
            ("verifier_feedback".into(), 1.0 / 6.0, 1, 6),
        ]
    );
    let peer = tree(&data("benchmark"));
    let report = peer_report(
        &peer["report.md"],
        "completion-verifier-benchmark --config examples/benchmark_config.json --output benchmark_runs/reference-v1",
        &bench::reproduce_command(&cfg),
    );
    compare(&tree(&out), &peer, &report);
    // The run ids and per-run seeds the peer derives.
    let plan = bench::plan(&cfg);
    let runs = String::from_utf8(peer["runs.jsonl"].clone()).unwrap();
    for (p, line) in plan.iter().zip(runs.lines()) {
        let v: Value = serde_json::from_str(line).unwrap();
        assert_eq!(v["run_id"], p.run_id.as_str());
        assert_eq!(v["seed"].as_u64(), Some(p.seed));
    }
    assert_eq!(plan.len(), 24);
}

#[test]
fn sandbox_equals_the_peer_byte_for_byte() {
    let cfg = sandbox_config();
    assert_eq!(
        cfg.digest().unwrap(),
        "b5eba23dd3ab1aceb1c5109ec5264fa3e199996c944c7068fd15b6f14fa8c6fe"
    );
    let t = tempfile::tempdir().unwrap();
    let out = t.path().join("suite");
    let r = sandbox::run(&cfg, &out).unwrap();
    assert_eq!(
        (
            r.total_scenarios,
            r.verified_complete,
            r.failed,
            r.unverified
        ),
        (8, 2, 6, 0)
    );
    assert_eq!(r.false_completion_rate, 0.75);
    assert_eq!(r.security_rejection, 2);
    let peer = tree(&data("sandbox"));
    let report = peer_report(
        &peer["report.md"],
        "completion-verifier-sandbox --config examples/sandbox_config.json --output sandbox_runs/reference-v1 --scenario all",
        &sandbox::reproduce_command(&cfg),
    );
    compare(&tree(&out), &peer, &report);
    // Nothing escaped: the run directories hold only what the peer's do.
    assert!(!out.join("runs/path_traversal/escape.txt").exists());
    assert!(!out.join("runs/symlink_escape/state-outside").exists());
    assert!(!out.join("runs/symlink_escape/state/link").exists());
}

#[test]
fn two_runs_are_byte_identical() {
    let t = tempfile::tempdir().unwrap();
    let cfg = bench_config();
    bench::run(&cfg, &t.path().join("a")).unwrap();
    bench::run(&cfg, &t.path().join("b")).unwrap();
    assert_eq!(tree(&t.path().join("a")), tree(&t.path().join("b")));
    let s = sandbox_config();
    sandbox::run(&s, &t.path().join("c")).unwrap();
    sandbox::run(&s, &t.path().join("d")).unwrap();
    assert_eq!(tree(&t.path().join("c")), tree(&t.path().join("d")));
}

#[test]
fn raw_and_derived_artifacts_are_apart() {
    let t = tempfile::tempdir().unwrap();
    let out = t.path().join("run");
    bench::run(&bench_config(), &out).unwrap();
    let files = tree(&out);
    let raw: Vec<_> = files
        .keys()
        .filter(|k| k.starts_with("raw_traces/"))
        .collect();
    let env: Vec<_> = files
        .keys()
        .filter(|k| k.starts_with("envelopes/"))
        .collect();
    assert_eq!((raw.len(), env.len()), (24, 24));
    // An envelope points at its raw trace and carries the trace's canonical digest.
    let e: Value =
        serde_json::from_slice(&files["envelopes/baseline--timeout--r0--e48bf3a4deea.json"])
            .unwrap();
    assert_eq!(
        e["source"]["source_ref"],
        "raw_traces/baseline--timeout--r0--e48bf3a4deea.json"
    );
    let raw: Value =
        serde_json::from_slice(&files["raw_traces/baseline--timeout--r0--e48bf3a4deea.json"])
            .unwrap();
    assert_eq!(
        e["source"]["raw_sha256"].as_str().unwrap(),
        evident_eval::pyjson::canonical_sha256(&raw["trace"]).unwrap()
    );
    // Run metadata carries no trace; cases carry no run metadata.
    let runs = String::from_utf8(files["runs.jsonl"].clone()).unwrap();
    assert!(runs.lines().all(|l| !l.contains("\"trace\"")));
    let cases = String::from_utf8(files["cases.jsonl"].clone()).unwrap();
    assert!(cases.lines().all(|l| !l.contains("\"seed\"")));
}

#[test]
fn every_sandbox_scenario_alone() {
    let want = [
        ("success", "VERIFIED_COMPLETE", true, true, false),
        ("false_success", "FAILED", true, false, false),
        ("partial_write", "FAILED", true, false, false),
        ("timeout_before_write", "FAILED", false, false, false),
        (
            "timeout_after_write",
            "VERIFIED_COMPLETE",
            false,
            true,
            false,
        ),
        ("rollback", "FAILED", true, false, false),
        ("path_traversal", "FAILED", false, false, true),
        ("symlink_escape", "FAILED", false, false, true),
    ];
    let t = tempfile::tempdir().unwrap();
    let cfg = sandbox_config();
    for (name, status, claimed, matches, rejected) in want {
        let out = t.path().join(name);
        let r = sandbox::run(&cfg.only(name).unwrap(), &out).unwrap();
        assert_eq!(r.scenarios.len(), 1);
        let s = &r.scenarios[0];
        assert_eq!(s.scenario_id, name);
        assert_eq!(
            (
                s.status,
                s.completion_claimed,
                s.matches_contract,
                s.security_rejected
            ),
            (status, claimed, matches, rejected),
            "{name}"
        );
        // The refusal is the safe-path layer's own message.
        match name {
            "path_traversal" => assert!(
                s.refusal
                    .as_deref()
                    .unwrap()
                    .contains("through a `..` component"),
                "{:?}",
                s.refusal
            ),
            "symlink_escape" => assert!(
                s.refusal
                    .as_deref()
                    .unwrap()
                    .contains("through a symlink that leads outside the root"),
                "{:?}",
                s.refusal
            ),
            _ => assert!(s.refusal.is_none()),
        }
        let state = out
            .join("runs")
            .join(name)
            .join("state/output/customer-update.txt");
        let bytes = std::fs::read(&state).ok();
        match name {
            "success" | "timeout_after_write" => {
                assert_eq!(bytes.as_deref(), Some(&b"Customer update sent.\n"[..]))
            }
            "partial_write" => assert_eq!(bytes.as_deref(), Some(&b"Customer up"[..])),
            _ => assert_eq!(bytes, None, "{name}"),
        }
        // The receipt never enters evidence: a fabricated receipt's digest is the
        // contract's, yet the case's evidence has the observed (absent) state.
        if name == "false_success" {
            let report: Value = serde_json::from_slice(
                &std::fs::read(out.join("runs/false_success/source_report.json")).unwrap(),
            )
            .unwrap();
            assert_eq!(report["reported_evidence"]["fabricated"], true);
            let case: Value = serde_json::from_slice(
                &std::fs::read(out.join("runs/false_success/case.json")).unwrap(),
            )
            .unwrap();
            assert_eq!(case["events"][0]["evidence"]["sha256"], Value::Null);
            assert_eq!(case["events"][0]["evidence"]["exists"], false);
        }
        assert!(manifest::verify(&out).unwrap().ok);
    }
}

#[test]
fn the_output_directory_must_be_empty() {
    let t = tempfile::tempdir().unwrap();
    std::fs::write(t.path().join("old"), b"x").unwrap();
    let e = bench::run(&bench_config(), t.path()).unwrap_err();
    assert!(e.0.contains("the output directory is not empty"), "{e}");
    let e = sandbox::run(&sandbox_config(), t.path()).unwrap_err();
    assert!(e.0.contains("the output directory is not empty"), "{e}");
}

#[test]
fn repetitions_multiply_runs_with_distinct_ids_and_seeds() {
    let mut cfg = bench_config();
    cfg.repetitions = 3;
    let plan = bench::plan(&cfg);
    assert_eq!(plan.len(), 72);
    let ids: std::collections::BTreeSet<_> = plan.iter().map(|p| &p.run_id).collect();
    let seeds: std::collections::BTreeSet<_> = plan.iter().map(|p| p.seed).collect();
    assert_eq!((ids.len(), seeds.len()), (72, 72));
    assert_eq!(plan[0].run_id, "baseline--success--r0--632b47c52a70");
    assert!(plan[1].run_id.starts_with("baseline--success--r1--"));
}
