//! `evident belief` and `evident suite belief`, run as a user runs them.

use predicates::prelude::*;

use crate::support::{evident, json_of};

const GOAL: &str = "out/report.txt contains 'FINAL REPORT'";

/// Write `json` to a temporary file and return it (kept alive by the caller).
fn file(json: &str) -> tempfile::NamedTempFile {
    let f = tempfile::Builder::new()
        .suffix(".json")
        .tempfile()
        .expect("temp file");
    std::fs::write(f.path(), json).expect("write");
    f
}

fn items(list: &str) -> String {
    format!(r#"{{"goal": "{GOAL}", "items": [{list}]}}"#)
}

const DID_OK: &str =
    r#"{"epoch": "did", "supports": true, "strength": 0.9, "lineage": "did:out/report.txt"}"#;
const SAW_OK: &str = r#"{"epoch": "saw", "supports": true, "strength": 0.9, "lineage": "saw:filesystem:out/report.txt"}"#;
const SAW_NO: &str = r#"{"epoch": "saw", "supports": false, "strength": 0.85, "lineage": "saw:filesystem:out/report.txt"}"#;

#[test]
fn action_plus_observation_is_accepted_exit_0() {
    let f = file(&items(&format!("{DID_OK}, {SAW_OK}")));
    evident()
        .arg("belief")
        .arg(f.path())
        .assert()
        .code(0)
        .stdout(predicate::str::contains("posterior 0.975045"))
        .stdout(predicate::str::contains("ACCEPTED"))
        .stdout(predicate::str::contains("counted"));
}

#[test]
fn fabricated_success_is_not_accepted_exit_3_and_routes_to_replan() {
    let f = file(&items(&format!("{DID_OK}, {SAW_NO}")));
    let out = evident()
        .args(["belief", "--json"])
        .arg(f.path())
        .assert()
        .code(3)
        .get_output()
        .stdout
        .clone();
    let v = json_of(&out);
    assert!((v["posterior"].as_f64().unwrap() - 0.170_144_847).abs() < 1e-6);
    assert_eq!(v["accepted"], false);
    assert_eq!(v["route"], "replan");
    assert_eq!(v["items"][1]["fate"], "counted");
    assert!((v["items"][1]["log_odds"].as_f64().unwrap() + 2.55).abs() < 1e-12);
}

#[test]
fn six_confirmations_from_one_root_count_once() {
    let list = [DID_OK; 6].join(", ");
    let f = file(&items(&list));
    let out = evident()
        .args(["belief", "--json"])
        .arg(f.path())
        .assert()
        .code(3)
        .get_output()
        .stdout
        .clone();
    let v = json_of(&out);
    assert!((v["posterior"].as_f64().unwrap() - 0.724_201_46).abs() < 1e-6);
    assert_eq!(v["counted"], 1);
    assert_eq!(v["route"], "observe_another_way");
    for i in 1..6 {
        assert_eq!(v["items"][i]["fate"], "collapsed");
        assert_eq!(v["items"][i]["into"], 0);
        assert_eq!(v["items"][i]["log_odds"], 0.0);
    }
}

#[test]
fn a_contradicting_fresh_observation_vetoes_a_high_posterior() {
    let list = [
        r#"{"epoch": "did", "supports": true, "lineage": "did:a"}"#,
        r#"{"epoch": "did", "supports": true, "lineage": "did:b"}"#,
        r#"{"epoch": "did", "supports": true, "lineage": "did:c"}"#,
        r#"{"epoch": "saw", "supports": true, "lineage": "saw:a"}"#,
        r#"{"epoch": "saw", "supports": true, "lineage": "saw:b"}"#,
        r#"{"epoch": "saw", "supports": false, "lineage": "saw:c"}"#,
    ]
    .join(", ");
    let f = file(&items(&list));
    let out = evident()
        .args(["belief", "--json"])
        .arg(f.path())
        .assert()
        .code(3)
        .get_output()
        .stdout
        .clone();
    let v = json_of(&out);
    assert!(v["posterior"].as_f64().unwrap() > 0.9999);
    assert_eq!(v["vetoed"], true);
    assert_eq!(v["accepted"], false);
    assert_eq!(v["route"], "replan");
    evident()
        .arg("belief")
        .arg(f.path())
        .assert()
        .code(3)
        .stdout(predicate::str::contains("vetoed by a fresh observation"));
}

#[test]
fn derived_items_are_shown_as_dropped() {
    let derived = r#"{"epoch": "saw", "supports": true, "lineage": "aggregate", "derived": true}"#;
    let f = file(&items(&format!("{DID_OK}, {derived}")));
    evident()
        .arg("belief")
        .arg(f.path())
        .assert()
        .code(3)
        .stdout(predicate::str::contains("dropped: derived"))
        .stdout(predicate::str::contains("posterior 0.724201"));
}

#[test]
fn a_blocker_outside_the_agent_escalates() {
    let blocked = r#"{"epoch": "did", "supports": false, "lineage": "did:out/report.txt", "blocker": "permission", "note": "EACCES"}"#;
    let f = file(&items(&format!("{blocked}, {SAW_NO}")));
    evident()
        .arg("belief")
        .arg(f.path())
        .assert()
        .code(3)
        .stdout(predicate::str::contains("route: escalate"))
        .stdout(predicate::str::contains("permission denied"));
}

#[test]
fn caution_raises_the_bar() {
    let f = file(&items(&format!("{DID_OK}, {SAW_OK}")));
    evident()
        .args(["belief", "--caution", "0.6"])
        .arg(f.path())
        .assert()
        .code(0);
    evident()
        .args(["belief", "--caution", "0.7"])
        .arg(f.path())
        .assert()
        .code(3)
        .stdout(predicate::str::contains("bar 0.98"));
    for bad in ["1.5", "-0.1", "NaN", "x"] {
        evident()
            .args(["belief", "--caution", bad])
            .arg(f.path())
            .assert()
            .code(2)
            .stderr(predicate::str::contains("caution"));
    }
}

#[test]
fn reads_stdin() {
    evident()
        .args(["belief", "-"])
        .write_stdin(items(&format!("{DID_OK}, {SAW_OK}")))
        .assert()
        .code(0);
}

#[test]
fn invalid_input_exits_2_naming_file_and_path() {
    let cases: &[(&str, &str)] = &[
        ("{", "line 1"),
        (
            &items(r#"{"epoch": "did", "supports": true, "strength": 1.5, "lineage": "x"}"#),
            "items[0].strength",
        ),
        (
            &items(r#"{"epoch": "did", "supports": true, "lineage": ""}"#),
            "items[0].lineage",
        ),
        (
            &items(r#"{"epoch": "did", "supports": true, "lineage": "x", "derivd": true}"#),
            "items[0].derivd: unknown field `derivd`",
        ),
        (
            &items(r#"{"epoch": "did", "supports": true, "supports": false, "lineage": "x"}"#),
            "items[0]: duplicate field `supports`",
        ),
        (
            &items(r#"{"epoch": "Did", "supports": true, "lineage": "x"}"#),
            "items[0].epoch",
        ),
        (
            &items(r#"{"epoch": "did", "supports": true}"#),
            "missing field `lineage`",
        ),
        (
            &items(r#"{"epoch": "did", "supports": "yes", "lineage": "x"}"#),
            "items[0].supports",
        ),
        (r#"{"goal": " ", "items": []}"#, "goal: must not be empty"),
        (r#"{"items": []}"#, "missing field `goal`"),
        (r#"[]"#, ".: invalid type: sequence, expected a JSON object"),
        (
            &items(r#"["g", "did", true, 0.9, "x"]"#),
            "items[0]: invalid type: sequence",
        ),
        (
            r#"{"goal": "g", "items": []} trailing"#,
            "trailing characters",
        ),
        (
            r#"{"goal": "g", "goal": "h", "items": []}"#,
            "duplicate field `goal`",
        ),
        (
            &items(r#"{"epoch": "did", "supports": true, "lineage": "x", "strength": 1e999}"#),
            "items[0].strength",
        ),
    ];
    for (json, want) in cases {
        let f = file(json);
        let name = f.path().display().to_string();
        evident()
            .arg("belief")
            .arg(f.path())
            .assert()
            .code(2)
            .stderr(predicate::str::contains(name))
            .stderr(predicate::str::contains(*want));
    }
    let f = file("\u{0}\u{ff}");
    std::fs::write(f.path(), [0x7b, 0xff, 0xfe]).unwrap();
    evident().arg("belief").arg(f.path()).assert().code(2);
    evident()
        .args(["belief", "/nonexistent/evidence.json"])
        .assert()
        .code(2)
        .stderr(predicate::str::contains("/nonexistent/evidence.json"));
}

#[test]
fn suite_belief_passes_with_zero_false_completions() {
    evident()
        .args(["suite", "belief"])
        .assert()
        .code(0)
        .stdout(predicate::str::contains(
            "lie_actuator_compromised_readback",
        ))
        .stdout(predicate::str::contains("six_step_chain_one_root"))
        .stdout(predicate::str::contains("11 from the reference suite"))
        .stdout(predicate::str::contains("0 false completions"))
        .stdout(predicate::str::contains("PASS"));
}

#[test]
fn suite_belief_json_has_every_task_and_a_passing_summary() {
    let out = evident()
        .args(["suite", "belief", "--json"])
        .assert()
        .code(0)
        .get_output()
        .stdout
        .clone();
    let v = json_of(&out);
    let tasks = v["tasks"].as_array().unwrap();
    assert!(tasks.len() >= 17);
    assert_eq!(v["summary"]["false_completions"], 0);
    assert_eq!(v["summary"]["passed"], true);
    for t in tasks {
        assert_eq!(t["accepted"], t["truth"], "{}", t["id"]);
        assert!(t["problems"].as_array().unwrap().is_empty(), "{}", t["id"]);
        let d = (t["posterior"].as_f64().unwrap() - t["reported"].as_f64().unwrap()).abs();
        assert!(d <= 1e-6, "{}", t["id"]);
    }
}
