//! What a person reads, pinned as insta snapshots (tests/it/snapshots/): the text
//! report of `evident verify` on a verified, a refuted and an unverified claim, the
//! `--help` of the main commands, and the error messages people hit most. A changed
//! output fails its test; accept it with `INSTA_UPDATE=always cargo test -p evident
//! --test it -- output::` (or `cargo insta review`) and commit the .snap files.
//!
//! Run to run, only paths (temporary directories, the workspace), times, durations and
//! hashes change: the filters in `stable` replace them with placeholders.

use std::path::Path;

use serde_json::Value;

use crate::support::{evident, run, testdata, workspace};

/// The conformance vectors' clock (they all decide at this instant).
const NOW: &str = "2026-08-27T18:04:10Z";

/// `(regex, replacement)` pairs for what varies run to run; `tmp` is this test's
/// temporary directory.
fn filters(tmp: &Path) -> Vec<(String, String)> {
    let mut f = Vec::new();
    // The most specific first: target/tmp lies inside the workspace, and the
    // workspace's spelling through the crate directory contains its canonical path.
    for (path, name) in [
        (tmp.to_path_buf(), "[TMP]"),
        (env!("CARGO_TARGET_TMPDIR").into(), "[TARGET_TMP]"),
        (workspace(), "[WORKSPACE]"),
    ] {
        let canonical = path.canonicalize().unwrap();
        for p in [path, canonical] {
            f.push((regex_escape(&p.display().to_string()), name.to_string()));
        }
    }
    f.extend(
        [
            // An instant with sub-second digits is the clock's, never a document's.
            (r"\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d+Z", "[NOW]"),
            (
                r"\d+(\.\d+)? s before the decision",
                "[AGE] s before the decision",
            ),
            (r"\b[0-9a-f]{64}\b", "[SHA256]"),
            (r"recorded as #\d+", "recorded as #[N]"),
            (r"\[TARGET_TMP\]/it-ledgers-[^/]+/\d+\.db", "[LEDGER]"),
        ]
        .map(|(a, b)| (a.to_string(), b.to_string())),
    );
    f
}

/// `s` as a regex matching itself.
fn regex_escape(s: &str) -> String {
    s.chars()
        .map(|c| {
            if r"\.+*?()|[]{}^$#&-~".contains(c) {
                format!("\\{c}")
            } else {
                c.to_string()
            }
        })
        .collect()
}

/// A run as one text: the command (as typed), its exit code, stdout and stderr.
fn transcript(shown: &str, cmd: &mut assert_cmd::Command) -> String {
    let out = cmd.env("COLUMNS", "100").output().unwrap();
    format!(
        "$ {shown}\nexit {}\n--- stdout\n{}--- stderr\n{}",
        out.status.code().unwrap_or(-1),
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    )
}

/// Asserts `text` against the snapshot `name`, with the run-to-run parts replaced.
fn stable(name: &str, tmp: &Path, text: &str) {
    let filters = filters(tmp);
    let filters: Vec<(&str, &str)> = filters
        .iter()
        .map(|(a, b)| (a.as_str(), b.as_str()))
        .collect();
    insta::with_settings!({ filters => filters, prepend_module_to_snapshot => false }, {
        insta::assert_snapshot!(name, text);
    });
}

/// The document of a conformance vector, written to `tmp/claim.json`.
fn vector(tmp: &Path, name: &str) {
    let v: Value = serde_json::from_slice(
        &std::fs::read(testdata().join("conformance/claim-v0.1").join(name)).unwrap(),
    )
    .unwrap();
    assert_eq!(v["now"], NOW, "{name}");
    std::fs::write(
        tmp.join("claim.json"),
        serde_json::to_vec_pretty(&v["document"]).unwrap(),
    )
    .unwrap();
}

#[test]
fn verify_reports_verified_refuted_and_unverified() {
    for (snap, vector_file) in [
        ("verify_verified", "spec-example-verified.json"),
        ("verify_refuted", "rule6-refuted.json"),
        ("verify_unverified", "rule3-uncovered-mutation.json"),
    ] {
        let tmp = tempfile::tempdir().unwrap();
        vector(tmp.path(), vector_file);
        let text = transcript(
            &format!("evident verify claim.json --now {NOW}"),
            evident()
                .current_dir(tmp.path())
                .args(["verify", "claim.json", "--now", NOW]),
        );
        stable(snap, tmp.path(), &text);
    }
}

#[test]
fn help_of_evident_and_its_main_commands() {
    let tmp = tempfile::tempdir().unwrap();
    let text = transcript("evident --help", evident().arg("--help"));
    stable("help", tmp.path(), &text);
    for sub in ["verify", "gate", "eval", "ledger", "audit", "hook", "serve"] {
        let text = transcript(
            &format!("evident {sub} --help"),
            evident().args([sub, "--help"]),
        );
        stable(&format!("help_{sub}"), tmp.path(), &text);
    }
}

#[test]
fn malformed_claim_json_names_file_line_and_column() {
    let tmp = tempfile::tempdir().unwrap();
    std::fs::write(
        tmp.path().join("claim.json"),
        "{\n  \"spec_version\": \"0.1\",\n  \"task\": {\"id\": \"t\"}\n  \"mutations\": []\n}\n",
    )
    .unwrap();
    let text = transcript(
        "evident verify claim.json",
        evident()
            .current_dir(tmp.path())
            .args(["verify", "claim.json", "--now", NOW]),
    );
    stable("error_malformed_claim_json", tmp.path(), &text);
}

#[test]
fn an_unknown_contract_field_is_named_with_what_is_allowed() {
    let tmp = tempfile::tempdir().unwrap();
    std::fs::write(
        tmp.path().join("contract.toml"),
        "[policy]\nid = \"billing\"\nrequirs = [\"state_readback\"]\n",
    )
    .unwrap();
    let text = transcript(
        "evident contract check contract.toml",
        evident()
            .current_dir(tmp.path())
            .args(["contract", "check", "contract.toml"]),
    );
    stable("error_unknown_contract_field", tmp.path(), &text);
}

/// An unknown field like no valid one (the valid ones are listed, nothing is guessed),
/// a misspelt table at the top (`[[checks]]`), the same slip in `verify --policy`, and
/// the honest twin: the contract spelt right has no problem and no hint.
#[test]
fn unknown_fields_are_guessed_only_when_close() {
    let tmp = tempfile::tempdir().unwrap();
    let write = |name: &str, text: &str| std::fs::write(tmp.path().join(name), text).unwrap();
    write("far.toml", "[policy]\nid = \"billing\"\ncolour = \"red\"\n");
    write(
        "checks.toml",
        "[policy]\nrequires = [\"state_readback\"]\n\n[[checks]]\nid = \"c\"\n",
    );
    write(
        "policy.toml",
        "requires = [\"state_readback\"]\nmax_age = 300\n",
    );
    write("right.toml", "[policy]\nid = \"billing\"\nrequires = []\n");
    let mut text = String::new();
    for file in ["far.toml", "checks.toml", "right.toml"] {
        text += &transcript(
            &format!("evident contract check {file}"),
            evident()
                .current_dir(tmp.path())
                .args(["contract", "check", file]),
        );
    }
    text += &transcript(
        &format!(
            "evident verify [WORKSPACE]/examples/claim-verified.json --policy policy.toml --now {NOW}"
        ),
        evident()
            .current_dir(tmp.path())
            .arg("verify")
            .arg(workspace().join("examples/claim-verified.json"))
            .args(["--policy", "policy.toml", "--now", NOW]),
    );
    stable("error_unknown_fields_guessed_when_close", tmp.path(), &text);
}

#[test]
fn gate_with_claim_and_contract_swapped() {
    let tmp = tempfile::tempdir().unwrap();
    let text = transcript(
        "evident gate examples/billing/claim.json examples/billing/contract.toml",
        evident().current_dir(workspace()).args([
            "gate",
            "examples/billing/claim.json",
            "examples/billing/contract.toml",
        ]),
    );
    stable("error_gate_arguments_swapped", tmp.path(), &text);
}

/// The shipped example decided now, not at the instant it was written for: stale,
/// with a hint naming the `--now` it was written for.
#[test]
fn the_example_without_now_is_stale() {
    let tmp = tempfile::tempdir().unwrap();
    let text = transcript(
        "evident verify examples/claim-verified.json",
        evident()
            .current_dir(workspace())
            .args(["verify", "examples/claim-verified.json"]),
    );
    stable("error_example_stale_without_now", tmp.path(), &text);
}

/// The honest twins of the stale hint: the example decided at the `--now` the hint
/// names is verified with no hint, and evidence gone stale minutes ago (not days) gets
/// no hint either: it was observed for this decision and is simply too old.
#[test]
fn no_now_hint_when_now_is_given_or_the_evidence_is_recent() {
    let (code, _, err) = run(evident().current_dir(workspace()).args([
        "verify",
        "examples/claim-verified.json",
        "--now",
        "2026-08-27T18:04:10Z",
    ]));
    assert_eq!(code, 0, "{err}");
    assert!(!err.contains("hint:"), "{err}");

    let tmp = tempfile::tempdir().unwrap();
    let rfc3339 = |ago_s: i64| {
        (time::OffsetDateTime::now_utc() - time::Duration::seconds(ago_s))
            .format(&time::format_description::well_known::Rfc3339)
            .unwrap()
    };
    let mut claim: Value = serde_json::from_slice(
        &std::fs::read(workspace().join("examples/claim-verified.json")).unwrap(),
    )
    .unwrap();
    claim["mutations"][0]["at"] = rfc3339(500).into();
    claim["evidence"][0]["at"] = rfc3339(400).into();
    std::fs::write(tmp.path().join("claim.json"), claim.to_string()).unwrap();
    let (code, out, err) = run(evident()
        .current_dir(tmp.path())
        .args(["verify", "claim.json"]));
    assert_eq!(code, 3, "{out}{err}");
    assert!(out.contains("stale"), "{out}");
    assert!(!err.contains("hint:"), "{err}");
}

/// A contract where `verify` expects a claim: the error says which is which.
#[test]
fn verify_given_a_contract() {
    let tmp = tempfile::tempdir().unwrap();
    let text = transcript(
        "evident verify examples/billing/contract.toml",
        evident()
            .current_dir(workspace())
            .args(["verify", "examples/billing/contract.toml"]),
    );
    stable("error_verify_given_a_contract", tmp.path(), &text);
}

/// The other commands that take a contract say so when given a claim (and `gate`,
/// when its claim is a contract); in the right order, `gate` prints no hint.
#[test]
fn contract_and_claim_in_the_wrong_place() {
    let (code, _, err) = run(evident().current_dir(workspace()).args([
        "gate",
        "--dry-run",
        "examples/billing/contract.toml",
        "examples/billing/contract.toml",
    ]));
    assert_eq!(code, 2, "{err}");
    assert!(
        err.contains("\nhint: examples/billing/contract.toml looks like a contract (it has [policy]); the claim comes second"),
        "{err}"
    );
    let (code, _, err) = run(evident().current_dir(workspace()).args([
        "snapshot",
        "examples/billing/claim.json",
        "--out",
        "never-written.json",
    ]));
    assert_eq!(code, 2, "{err}");
    assert!(
        err.contains("\nhint: examples/billing/claim.json looks like a claim (it has spec_version); snapshot reads the owner's contract"),
        "{err}"
    );
    assert!(!workspace().join("never-written.json").exists());
    let (code, out, err) = run(evident().current_dir(workspace()).args([
        "contract",
        "check",
        "examples/billing/claim.json",
    ]));
    assert_eq!(code, 1, "{out}{err}");
    assert!(
        out.contains("\n  hint: examples/billing/claim.json looks like a claim (it has spec_version), not a contract"),
        "{out}"
    );
    // The honest twin: the same files in the right order.
    let (code, out, err) = run(evident().current_dir(workspace()).args([
        "gate",
        "--dry-run",
        "examples/billing/contract.toml",
        "examples/billing/claim.json",
    ]));
    assert_eq!(code, 0, "{out}{err}");
    assert!(
        !out.contains("hint:") && !err.contains("hint:"),
        "{out}{err}"
    );
}

#[test]
fn a_contract_check_without_covers_is_refused() {
    let tmp = tempfile::tempdir().unwrap();
    let contract = tmp.path().join("contract.toml");
    std::fs::write(
        &contract,
        "[policy]\nid = \"x\"\nrequires = [\"state_readback\"]\n\n[[check]]\nid = \"c\"\ncheck_type = \"state_readback\"\n",
    )
    .unwrap();
    let text = transcript(
        "evident gate [TMP]/contract.toml examples/billing/claim.json",
        evident()
            .current_dir(workspace())
            .arg("gate")
            .arg(&contract)
            .arg("examples/billing/claim.json"),
    );
    stable("error_bad_contract", tmp.path(), &text);
}
