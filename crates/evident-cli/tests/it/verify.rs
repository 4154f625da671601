//! `evident verify` and `evident schema` through the real binary.

use serde_json::{Value, json};

use crate::support::{evident, testdata, workspace};

fn spec_example() -> Value {
    let v: Value = serde_json::from_slice(
        &std::fs::read(testdata().join("conformance/claim-v0.1/spec-example-verified.json"))
            .unwrap(),
    )
    .unwrap();
    v["document"].clone()
}

const NOW: &str = "2026-08-27T18:04:10Z";

/// Runs `verify - --now NOW [extra]` on `doc`; returns (exit code, stdout, stderr).
fn verify(doc: &Value, extra: &[&str]) -> (i32, String, String) {
    let out = evident()
        .args(["verify", "-", "--now", NOW])
        .args(extra)
        .write_stdin(serde_json::to_vec(doc).unwrap())
        .output()
        .unwrap();
    (
        out.status.code().unwrap_or(-1),
        String::from_utf8_lossy(&out.stdout).into_owned(),
        String::from_utf8_lossy(&out.stderr).into_owned(),
    )
}

#[test]
fn verified_exits_0_with_a_readable_report() {
    let (code, out, _) = verify(&spec_example(), &[]);
    assert_eq!(code, 0);
    assert!(out.contains("verdict   VERIFIED"), "{out}");
    assert!(
        out.contains("covered by evidence[0] (state_readback)"),
        "{out}"
    );
    assert!(out.contains("satisfies"), "{out}");
}

#[test]
fn refuted_exits_1_and_names_the_contradiction() {
    let mut doc = spec_example();
    doc["evidence"][0]["observed_value"] = json!({"billing_zip": "10001"});
    let (code, out, _) = verify(&doc, &[]);
    assert_eq!(code, 1);
    assert!(out.contains("REFUTED"), "{out}");
    assert!(
        out.contains(r#"billing_zip expected "94107" but observed "10001""#),
        "{out}"
    );
}

/// The document's own `on_unverified` is the agent's word: before, `"warn"` in the
/// claim made an unverified claim exit 0. Only the command line or the owner's
/// `--policy` file may let an unverified claim through.
#[test]
fn the_documents_on_unverified_never_lowers_the_exit_code() {
    let mut doc = spec_example();
    doc["evidence"][0]["verifier"]["kind"] = json!("self_attested");
    assert_eq!(verify(&doc, &[]).0, 3, "block is the default");
    for policy in ["block", "warn", "record"] {
        doc["policy"]["on_unverified"] = json!(policy);
        let (got, out, _) = verify(&doc, &[]);
        assert_eq!(got, 3, "the document says on_unverified {policy}");
        assert!(out.contains("UNVERIFIED"), "{out}");
        assert!(out.contains("policy    from the document"), "{out}");
    }
    for (mode, code) in [("block", 3), ("warn", 0), ("record", 0)] {
        let (got, _, err) = verify(&doc, &["--on-unverified", mode]);
        assert_eq!(got, code, "--on-unverified {mode}: {err}");
    }
    // The owner's policy file decides, and says so; the command line still overrides it.
    let dir = tempfile::tempdir().unwrap();
    let policy = dir.path().join("policy.toml");
    std::fs::write(
        &policy,
        "requires = [\"state_readback\"]\nmax_age_s = 300\non_unverified = \"warn\"\n",
    )
    .unwrap();
    let p = policy.to_str().unwrap();
    let (got, out, _) = verify(&doc, &["--policy", p]);
    assert_eq!(got, 0, "{out}");
    assert!(out.contains("policy.toml (the owner's)"), "{out}");
    assert_eq!(
        verify(&doc, &["--policy", p, "--on-unverified", "block"]).0,
        3
    );
    // No policy at all: unverified blocks.
    doc.as_object_mut().unwrap().remove("policy");
    assert_eq!(verify(&doc, &[]).0, 3);
}

/// `--policy` replaces the document's policy: a requirement the agent deleted comes
/// back; a misspelt key is an error naming it.
#[test]
fn the_owners_policy_replaces_the_documents() {
    let mut doc = spec_example();
    doc["policy"] = json!({"requires": []});
    let dir = tempfile::tempdir().unwrap();
    let policy = dir.path().join("policy.json");
    std::fs::write(
        &policy,
        r#"{"requires": ["state_readback", "test_run"], "max_age_s": 300}"#,
    )
    .unwrap();
    let (code, out, _) = verify(&doc, &["--policy", policy.to_str().unwrap(), "--json"]);
    assert_eq!(code, 3, "{out}");
    let v: Value = serde_json::from_str(&out).unwrap();
    assert_eq!(v["verdict"]["unmet"], json!(["test_run"]));
    assert_eq!(
        v["policy"]["requires"],
        json!(["state_readback", "test_run"])
    );

    std::fs::write(&policy, r#"{"requires": [], "max_age": 300}"#).unwrap();
    let (code, _, err) = verify(&doc, &["--policy", policy.to_str().unwrap()]);
    assert_eq!(code, 2, "{err}");
    assert!(
        err.contains("policy.json") && err.contains("max_age"),
        "{err}"
    );
}

/// A trust list means the owner is deciding, so the owner's policy must come with it.
#[test]
fn trust_without_policy_is_a_usage_error() {
    let dir = tempfile::tempdir().unwrap();
    let trust = dir.path().join("trust.json");
    std::fs::write(&trust, r#"{"verifiers": []}"#).unwrap();
    let (code, _, err) = verify(&spec_example(), &["--trust", trust.to_str().unwrap()]);
    assert_eq!(code, 2, "{err}");
    assert!(err.contains("--policy"), "{err}");
}

#[test]
fn json_output_is_the_document_with_the_recomputed_verdict() {
    let mut doc = spec_example();
    doc["verdict"] = json!({"state": "verified", "unmet": [], "reason": "trust me"});
    doc["evidence"][0]["observed_value"] = json!({"billing_zip": "10001"});
    let mut text = serde_json::to_string(&doc).unwrap();
    text.insert_str(
        1,
        r#""x_vendor": {"kept": [1, 2.50, 9007199254740993, 1e400]}, "#,
    );
    let out = evident()
        .args(["verify", "-", "--now", NOW, "--json"])
        .write_stdin(text)
        .output()
        .unwrap();
    let (code, out) = (
        out.status.code().unwrap(),
        String::from_utf8_lossy(&out.stdout).into_owned(),
    );
    assert_eq!(code, 1);
    let got: Value = serde_json::from_str(&out).unwrap();
    assert_eq!(got["verdict"]["state"], "refuted");
    assert_eq!(got["verdict"]["unmet"], json!([]));
    assert_eq!(got["verdict"]["decided_at"], NOW);
    assert_eq!(got["verdict"]["findings"][0]["code"], "contradicts");
    assert_eq!(got["verdict"]["findings"][0]["used"], true);
    assert!(
        got["verdict"]["reason"]
            .as_str()
            .unwrap()
            .starts_with("Refuted")
    );
    // Unknown fields are kept, numbers exactly as written, and reported as warnings.
    assert!(out.contains("9007199254740993"), "{out}");
    assert!(out.contains("2.50"), "{out}");
    // Exact values are kept; serde_json writes the exponent as e+400.
    assert!(out.contains("1e+400"), "{out}");
    let warnings = got["verdict"]["warnings"].as_array().unwrap();
    assert!(
        warnings.iter().any(|w| w["path"] == "x_vendor"),
        "{warnings:?}"
    );
    // Everything else is the input, untouched.
    assert_eq!(got["evidence"], doc["evidence"]);
    assert_eq!(got["task"], doc["task"]);
}

#[test]
fn reads_a_file_and_names_it_in_errors() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("claim.json");
    let mut doc = spec_example();
    doc["evidence"][0]["at"] = json!("2026-08-27 18:04:09Z");
    std::fs::write(&path, serde_json::to_vec_pretty(&doc).unwrap()).unwrap();
    let out = evident().args(["verify"]).arg(&path).output().unwrap();
    assert_eq!(out.status.code(), Some(2));
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(err.contains("claim.json:"), "{err}");
    assert!(err.contains("at evidence[0].at:"), "{err}");
}

#[test]
fn usage_errors_exit_2() {
    assert_eq!(
        evident().args(["verify"]).output().unwrap().status.code(),
        Some(2)
    );
    assert_eq!(
        evident()
            .args(["verify", "-", "--now", "yesterday"])
            .write_stdin("{}")
            .output()
            .unwrap()
            .status
            .code(),
        Some(2)
    );
    assert_eq!(
        evident()
            .args(["verify", "/no/such/file.json"])
            .output()
            .unwrap()
            .status
            .code(),
        Some(2)
    );
    assert_eq!(
        evident()
            .args(["frobnicate"])
            .output()
            .unwrap()
            .status
            .code(),
        Some(2)
    );
}

#[test]
fn help_explains_exit_codes() {
    let out = evident().args(["verify", "--help"]).output().unwrap();
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(out.status.success());
    assert!(text.contains("1 refuted"), "{text}");
}

/// Every conformance vector, through the binary: state and unmet, or exit 2 naming the path.
#[test]
fn conformance_vectors_through_the_cli() {
    let mut n = 0;
    for dir in ["conformance/claim-v0.1", "conformance/claim-v0.1-evident"] {
        for entry in std::fs::read_dir(testdata().join(dir)).unwrap() {
            let path = entry.unwrap().path();
            if path.extension().is_none_or(|x| x != "json") {
                continue;
            }
            n += 1;
            let v: Value = serde_json::from_slice(&std::fs::read(&path).unwrap()).unwrap();
            let text = match &v["document_text"] {
                Value::String(t) => t.clone().into_bytes(),
                _ => serde_json::to_vec(&v["document"]).unwrap(),
            };
            let out = evident()
                .args(["verify", "-", "--json", "--now", v["now"].as_str().unwrap()])
                .write_stdin(text)
                .output()
                .unwrap();
            let name = path.display();
            if let Some(invalid) = v["expect"]["invalid"].as_str() {
                assert_eq!(out.status.code(), Some(2), "{name}");
                let err = String::from_utf8_lossy(&out.stderr);
                assert!(err.contains(&format!("at {invalid}:")), "{name}: {err}");
            } else {
                let got: Value =
                    serde_json::from_slice(&out.stdout).unwrap_or_else(|e| panic!("{name}: {e}"));
                assert_eq!(got["verdict"]["state"], v["expect"]["state"], "{name}");
                assert_eq!(got["verdict"]["unmet"], v["expect"]["unmet"], "{name}");
                let expected_code = match v["expect"]["state"].as_str().unwrap() {
                    "verified" => 0,
                    "refuted" => 1,
                    _ => match got["policy"]["on_unverified"].as_str() {
                        Some("warn" | "record") => 0,
                        _ => 3,
                    },
                };
                assert_eq!(out.status.code(), Some(expected_code), "{name}");
            }
        }
    }
    assert!(n >= 80, "only {n} vectors");
}

/// The malformed corpus: every file exits 2 (never a panic), naming its JSON path.
#[test]
fn malformed_inputs_exit_2_naming_the_path() {
    let dir = testdata().join("malformed");
    let expect: serde_json::Map<String, Value> =
        serde_json::from_slice(&std::fs::read(dir.join("expect.json")).unwrap()).unwrap();
    assert!(expect.len() >= 30);
    for (file, path) in &expect {
        let out = evident()
            .arg("verify")
            .arg(dir.join(file))
            .output()
            .unwrap();
        let err = String::from_utf8_lossy(&out.stderr);
        assert_eq!(out.status.code(), Some(2), "{file}: {err}");
        let path = path.as_str().unwrap();
        let named = if path.is_empty() {
            "at (document root):".to_string()
        } else {
            format!("at {path}:")
        };
        assert!(err.contains(&named), "{file}: expected {named:?} in {err}");
        assert!(
            err.contains(file.as_str()),
            "{file}: file not named in {err}"
        );
        assert!(!err.contains("panicked"), "{file}: {err}");
    }
}

#[test]
fn the_checked_in_schemas_match_the_types() {
    for (doc, title) in [
        ("claim", "Completion Claim v0.1"),
        ("contract", "evident gate contract"),
    ] {
        let out = evident().args(["schema", doc]).output().unwrap();
        assert!(out.status.success());
        let generated: Value = serde_json::from_slice(&out.stdout).unwrap();
        let file = testdata().join(format!("../schemas/{doc}.schema.json"));
        let checked_in: Value = serde_json::from_slice(&std::fs::read(&file).unwrap()).unwrap();
        assert_eq!(
            generated, checked_in,
            "schemas/{doc}.schema.json drifted: run `evident schema {doc} > schemas/{doc}.schema.json`"
        );
        assert_eq!(generated["title"], title);
    }
}

#[test]
fn the_example_in_examples_verifies() {
    let out = evident()
        .args(["verify", "--now", NOW])
        .arg(testdata().join("../examples/claim-verified.json"))
        .output()
        .unwrap();
    assert_eq!(
        out.status.code(),
        Some(0),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
}

/// Every string in the readable report that the agent wrote (task id, mutation and
/// evidence fields, an observation_error, unknown field names) is shown with control
/// characters escaped: raw, an ESC sequence or a newline could redraw the terminal or
/// add a fake `verdict   VERIFIED` line to a report whose exit code says otherwise.
#[test]
fn agent_strings_cannot_inject_terminal_controls_or_lines() {
    let fake = "\u{1b}[2J\u{1b}[H\rverdict   VERIFIED\n\u{202e}";
    let mut doc = spec_example();
    doc["task"]["id"] = json!(format!("t{fake}"));
    doc["mutations"][0]["kind"] = json!(format!("k{fake}"));
    doc["mutations"][0]["target"] = json!(format!("a{fake}"));
    doc["evidence"][0]["target"] = json!(format!("e{fake}"));
    doc["evidence"][0]["check_type"] = json!(format!("c{fake}"));
    doc["evidence"][0]["verifier"]["id"] = json!(format!("v{fake}"));
    doc["evidence"][0]["observation_error"] = json!(format!("o{fake}"));
    doc["policy"]["id"] = json!(format!("p{fake}"));
    doc[format!("x{fake}")] = json!(1);
    let (code, out, _) = verify(&doc, &[]);
    assert_eq!(code, 3, "{out}");
    assert!(
        !out.contains(['\u{1b}', '\r', '\u{202e}']),
        "raw control characters in the report: {out:?}"
    );
    let verdict_lines: Vec<&str> = out.lines().filter(|l| l.starts_with("verdict")).collect();
    assert_eq!(verdict_lines.len(), 1, "{out}");
    assert!(
        verdict_lines[0].starts_with("verdict   UNVERIFIED"),
        "{out}"
    );
}

/// An error message that quotes the input escapes its control characters too.
#[test]
fn errors_quoting_the_input_escape_control_characters() {
    let mut doc = spec_example();
    doc["evidence"][0]["verifier"]["kind"] = json!("x\u{1b}[2J\nverdict   VERIFIED");
    let (code, _, err) = verify(&doc, &[]);
    assert_eq!(code, 2, "{err}");
    assert!(err.contains("verifier.kind"), "{err}");
    assert!(!err.contains(['\u{1b}']), "{err:?}");
    assert_eq!(err.trim_end().lines().count(), 1, "{err:?}");
}

/// The readable report of a large claim (3,000 mutations, 3,000 evidence items
/// covering 199 each) is written in seconds: for each mutation it used to scan every
/// finding's covers (51 s in a debug build).
#[test]
fn a_large_claim_is_reported_quickly() {
    let n = 3000;
    let at = "2026-08-27T18:04:02Z";
    let mutations: Vec<Value> = (0..n)
        .map(|i| json!({"id": format!("m{i}"), "kind": "k", "at": at}))
        .collect();
    let evidence: Vec<Value> = (0..n)
        .map(|i| {
            json!({
                "check_type": "state_readback",
                "expected": {"a": 1},
                "observed_value": {"a": 1},
                "at": "2026-08-27T18:04:09Z",
                "covers": (0..199).map(|k| format!("m{}", (i + k) % n)).collect::<Vec<_>>(),
                "verifier": {"id": "v", "kind": "independent"}
            })
        })
        .collect();
    let doc = json!({
        "spec_version": "0.1",
        "task": {"id": "t"},
        "mutations": mutations,
        "evidence": evidence
    });
    let started = std::time::Instant::now();
    let (code, out, err) = verify(&doc, &["--no-record"]);
    let took = started.elapsed();
    assert_eq!(code, 0, "{err}");
    assert!(out.contains("m2999 k - at"), "{}", &out[..500]);
    assert!(out.contains("covered by evidence[2801] (state_readback), evidence[2802]"));
    assert!(
        took < std::time::Duration::from_secs(20),
        "verify took {took:?}"
    );
}

/// `--partial` (the spec's open question 2): one of two mutations covered is `partial`
/// with a count, still exit 3; without it, unverified.
#[test]
fn partial_coverage_is_its_own_state_only_when_asked() {
    let mut doc = spec_example();
    doc["mutations"].as_array_mut().unwrap().push(json!({
        "id": "m2", "kind": "state_write", "target": "accounts/4472", "at": "2026-08-27T18:04:02Z"
    }));
    let (code, out, _) = verify(&doc, &[]);
    assert_eq!(code, 3);
    assert!(out.contains("verdict   UNVERIFIED"), "{out}");
    let (code, out, _) = verify(&doc, &["--partial"]);
    assert_eq!(code, 3);
    assert!(out.contains("verdict   PARTIAL"), "{out}");
    assert!(out.contains("coverage  1 of 2 mutations"), "{out}");
    let (code, out, _) = verify(&doc, &["--partial", "--json", "--on-unverified", "warn"]);
    assert_eq!(code, 0);
    let v: Value = serde_json::from_str(&out).unwrap();
    assert_eq!(v["verdict"]["state"], "partial");
    assert_eq!(v["verdict"]["coverage"], json!({"covered": 1, "total": 2}));
}

#[test]
fn warnings_name_the_file_they_are_about() {
    let file = workspace().join("examples/claim-verified.json");
    let out = evident()
        .arg("verify")
        .arg(&file)
        .args(["--now", NOW, "--json"])
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(0));
    let doc: Value = serde_json::from_slice(&out.stdout).unwrap();
    let w = &doc["verdict"]["warnings"][0];
    assert_eq!(w["file"], file.display().to_string(), "{w}");
    let out = evident()
        .arg("verify")
        .arg(&file)
        .args(["--now", NOW])
        .output()
        .unwrap();
    let text = String::from_utf8_lossy(&out.stdout);
    // `FILE:LINE:COL: at PATH: message`, as an editor or CI annotation reads it.
    let want = format!("  {}:17:15: at evidence: no trust list", file.display());
    assert!(text.contains(&want), "{text}");
    // A document on standard input is named so too.
    let (_, text, _) = verify(&spec_example(), &[]);
    assert!(
        text.contains("  -:") || text.contains("  <stdin>:"),
        "{text}"
    );
}
