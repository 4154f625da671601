//! `evident eval` and `evident adapt` through the real binary: parity with the peer's
//! outputs, error lines and exit codes, streaming from stdin, adapters over directories.

use std::path::PathBuf;

use predicates::prelude::*;
use serde_json::Value;

use crate::support::{evident, json_of};

fn data(name: &str) -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
        .join("../evident-eval/tests/data")
        .join(name)
}

fn read(name: &str) -> Vec<u8> {
    std::fs::read(data(name)).unwrap_or_else(|e| panic!("{name}: {e}"))
}

const GOOD: &str = r#"{"case_id":"c1","task":"t","completion_claimed":true,"requirements":[{"action":"a","evidence_fields":["id"]}],"events":[{"action":"a","success":true,"evidence":{"id":"1"}}]}"#;

mod parity {
    use super::*;

    #[test]
    fn plain_json_and_metrics_equal_the_peer() {
        let cases = data("peer/cases.jsonl");
        let out = evident().arg("eval").arg(&cases).output().unwrap();
        assert_eq!(out.status.code(), Some(0));
        assert_eq!(out.stdout, read("peer/cases.txt"));

        let out = evident()
            .args(["eval", "--json"])
            .arg(&cases)
            .output()
            .unwrap();
        assert_eq!(out.status.code(), Some(0));
        assert_eq!(json_of(&out.stdout), json_of(&read("peer/cases.json")));

        let out = evident()
            .args(["eval", "--metrics"])
            .arg(&cases)
            .output()
            .unwrap();
        assert_eq!(out.status.code(), Some(0));
        assert_eq!(
            json_of(&out.stdout),
            json_of(&read("peer/cases.metrics.json"))
        );

        let out = evident()
            .args(["eval", "--json"])
            .arg(data("peer/minimal_cases.jsonl"))
            .output()
            .unwrap();
        assert_eq!(
            json_of(&out.stdout),
            json_of(&read("peer/minimal_cases.json"))
        );
    }

    #[test]
    fn jsonl_from_stdin_is_one_object_per_line() {
        let out = evident()
            .args(["eval", "--jsonl", "-"])
            .write_stdin(read("peer/cases.jsonl"))
            .output()
            .unwrap();
        assert_eq!(out.status.code(), Some(0));
        let items: Vec<Value> = out
            .stdout
            .split(|&b| b == b'\n')
            .filter(|l| !l.is_empty())
            .map(json_of)
            .collect();
        assert_eq!(Value::Array(items), json_of(&read("peer/cases.json")));
    }

    #[test]
    fn adapt_generic_and_openai_are_byte_identical() {
        for (format, trace, source_ref, expected) in [
            (
                "generic",
                "peer/generic_trace.json",
                "run-123",
                "peer/adapt-generic",
            ),
            (
                "openai",
                "peer/openai_tool_trace.json",
                "response-123",
                "peer/adapt-openai",
            ),
        ] {
            let base = || {
                let mut c = evident();
                c.args(["adapt", format])
                    .arg(data(trace))
                    .arg(data("peer/requirements.json"));
                c.args(["--source-ref", source_ref]);
                c
            };
            let out = base().output().unwrap();
            assert_eq!(
                out.status.code(),
                Some(0),
                "{}",
                String::from_utf8_lossy(&out.stderr)
            );
            assert_eq!(out.stdout, read(&format!("{expected}.json")));
            let out = base().arg("--envelope").output().unwrap();
            assert_eq!(out.stdout, read(&format!("{expected}.envelope.json")));
        }
    }
}

mod errors {
    use super::*;

    #[test]
    fn first_bad_line_stops_with_path_and_line() {
        let dir = tempfile::tempdir().unwrap();
        let p = dir.path().join("cases.jsonl");
        std::fs::write(&p, format!("{GOOD}\n\n{{\"case_id\": null}}\n{GOOD}\n")).unwrap();
        let out = evident().arg("eval").arg(&p).output().unwrap();
        assert_eq!(out.status.code(), Some(2));
        let err = String::from_utf8(out.stderr).unwrap();
        assert!(
            err.contains(&format!(
                "{}:3: 'case_id' must be a string, not null.",
                p.display()
            )),
            "{err}"
        );
    }

    #[test]
    fn a_stopped_json_run_never_parses_as_complete() {
        let input = format!("{GOOD}\n{{\"case_id\": 1}}\n");
        let out = evident()
            .args(["eval", "--json", "-"])
            .write_stdin(input)
            .output()
            .unwrap();
        assert_eq!(out.status.code(), Some(2));
        assert!(
            out.stdout.starts_with(b"[\n  {"),
            "the first result was streamed"
        );
        assert!(
            serde_json::from_slice::<Value>(&out.stdout).is_err(),
            "the array is left open"
        );
    }

    #[test]
    fn keep_going_reports_every_bad_line_and_evaluates_the_rest() {
        let input = format!("{GOOD}\nnot json\n{}\n[1]\n", GOOD.replace("c1", "c2"));
        let out = evident()
            .args(["eval", "--keep-going", "--jsonl", "-"])
            .write_stdin(input)
            .output()
            .unwrap();
        assert_eq!(out.status.code(), Some(2));
        let err = String::from_utf8(out.stderr).unwrap();
        assert!(err.contains("<stdin>:2: invalid JSON"), "{err}");
        assert!(
            err.contains("<stdin>:4: Each case must be an object, not an array."),
            "{err}"
        );
        assert!(err.contains("2 bad line(s) skipped"), "{err}");
        let ids: Vec<Value> = out
            .stdout
            .split(|&b| b == b'\n')
            .filter(|l| !l.is_empty())
            .map(|l| json_of(l)["case_id"].clone())
            .collect();
        assert_eq!(ids, vec!["c1", "c2"]);
    }

    #[test]
    fn duplicate_case_ids_are_a_clean_error_in_metrics_mode() {
        let dir = tempfile::tempdir().unwrap();
        let p = dir.path().join("dup.jsonl");
        std::fs::write(
            &p,
            format!("{GOOD}\n{}\n{GOOD}\n", GOOD.replace("c1", "c2")),
        )
        .unwrap();
        let out = evident()
            .args(["eval", "--metrics"])
            .arg(&p)
            .output()
            .unwrap();
        assert_eq!(out.status.code(), Some(2));
        let err = String::from_utf8(out.stderr).unwrap();
        assert!(
            err.contains(":3: duplicate case_id 'c1' (first on line 1)"),
            "{err}"
        );
        assert!(out.stdout.is_empty());
        // The same ids are fine without --metrics, as in the peer.
        evident().arg("eval").arg(&p).assert().code(0);
        // From stdin the lines cannot be re-read, but the error is still clean.
        evident()
            .args(["eval", "--metrics", "-"])
            .write_stdin(std::fs::read(&p).unwrap())
            .assert()
            .code(2)
            .stderr(predicate::str::contains("duplicate case_id"));
    }

    #[test]
    fn empty_missing_and_conflicting_inputs_exit_2() {
        evident()
            .args(["eval", "-"])
            .write_stdin("\n \n")
            .assert()
            .code(2)
            .stderr(predicate::str::contains("No cases found in <stdin>."));
        evident()
            .args(["eval", "/nonexistent/cases.jsonl"])
            .assert()
            .code(2)
            .stderr(predicate::str::contains("/nonexistent/cases.jsonl"));
        evident()
            .args(["eval", "--json", "--metrics", "-"])
            .write_stdin(GOOD)
            .assert()
            .code(2);
        evident()
            .args(["eval", "--adapter", "otel", "-"])
            .write_stdin(GOOD)
            .assert()
            .code(2);
    }

    #[test]
    fn adapt_rejections_name_the_file() {
        let dir = tempfile::tempdir().unwrap();
        let t = dir.path().join("trace.json");
        std::fs::write(
            &t,
            r#"{"trace_id":"t","task":"x","completion_claimed":true,"records":[{"type":"tool_call","tool_call_id":"c1","name":"a"}]}"#,
        )
        .unwrap();
        let out = evident()
            .args(["adapt", "openai"])
            .arg(&t)
            .arg(data("peer/requirements.json"))
            .args(["--source-ref", "r"])
            .output()
            .unwrap();
        assert_eq!(out.status.code(), Some(2));
        let err = String::from_utf8(out.stderr).unwrap();
        assert!(
            err.contains(&format!("{}: tool_call 'c1' has no result", t.display())),
            "{err}"
        );
        // A bad requirements file is named too.
        std::fs::write(dir.path().join("reqs.json"), "[]").unwrap();
        evident()
            .args(["adapt", "generic"])
            .arg(data("peer/generic_trace.json"))
            .arg(dir.path().join("reqs.json"))
            .args(["--source-ref", "r"])
            .assert()
            .code(2)
            .stderr(predicate::str::contains(
                "reqs.json: requirements must be a non-empty JSON array",
            ));
        // An unknown format is a usage error.
        evident()
            .args(["adapt", "langchain"])
            .arg(&t)
            .arg(data("peer/requirements.json"))
            .args(["--source-ref", "r"])
            .assert()
            .code(2);
    }
}

mod adapters {
    use super::*;

    #[test]
    fn adapt_anthropic_prints_the_case() {
        let out = evident()
            .args(["adapt", "anthropic"])
            .arg(data("traces/anthropic_email_retry.json"))
            .arg(data("peer/requirements.json"))
            .args(["--source-ref", "run-9", "--envelope"])
            .output()
            .unwrap();
        assert_eq!(
            out.status.code(),
            Some(0),
            "{}",
            String::from_utf8_lossy(&out.stderr)
        );
        let v = json_of(&out.stdout);
        assert_eq!(v["source"]["adapter"], "anthropic-messages@1");
        assert_eq!(v["events"][1]["source_event_id"], "toolu_01B2");
        assert_eq!(v["events"][1]["sequence"], 1);
        assert_eq!(v["events"][0]["success"], false);
    }

    #[test]
    fn eval_reads_trace_files_and_directories_through_an_adapter() {
        let dir = tempfile::tempdir().unwrap();
        for name in ["b.json", "a.json"] {
            std::fs::copy(data("traces/mcp_write_file.json"), dir.path().join(name)).unwrap();
        }
        std::fs::write(dir.path().join("notes.txt"), "not a trace").unwrap();
        let out = evident()
            .args(["eval", "--jsonl", "--adapter", "mcp", "--requirements"])
            .arg(data("traces/mcp_write_file.requirements.json"))
            .arg(dir.path())
            .output()
            .unwrap();
        assert_eq!(
            out.status.code(),
            Some(0),
            "{}",
            String::from_utf8_lossy(&out.stderr)
        );
        let lines: Vec<Value> = out
            .stdout
            .split(|&b| b == b'\n')
            .filter(|l| !l.is_empty())
            .map(json_of)
            .collect();
        assert_eq!(lines.len(), 2, "the two *.json files, not notes.txt");
        assert_eq!(lines[0]["status"], "FAILED");
        assert_eq!(
            lines[0]["failed_actions"],
            serde_json::json!(["publish_page"])
        );

        // A trace of the wrong format stops the run and names the file.
        let out = evident()
            .args(["eval", "--adapter", "otel", "--requirements"])
            .arg(data("peer/requirements.json"))
            .arg(data("traces/anthropic_email_retry.json"))
            .output()
            .unwrap();
        assert_eq!(out.status.code(), Some(2));
        let err = String::from_utf8(out.stderr).unwrap();
        assert!(
            err.contains("anthropic_email_retry.json: resourceSpans must be an array"),
            "{err}"
        );
    }
}

/// The object form of requirements and the `openai-chat` adapter through the binary.
mod constrained {
    use super::*;

    const SPEC: &str = r#"{"requirements": [{"action": "book_reservation", "arguments": {"user_id": "mia_li_3668", "flights": [{"flight_number": "HAT136", "date": "2024-05-20"}]}}],
        "writes": ["book_reservation", "cancel_reservation"]}"#;

    fn chat(date: &str, extra_cancel: bool) -> String {
        let mut m = vec![
            serde_json::json!({"role": "user", "content": "book it"}),
            serde_json::json!({"role": "assistant", "content": null, "tool_calls": [{"id": "call_1", "type": "function", "function": {"name": "book_reservation",
                "arguments": format!("{{\"user_id\":\"mia_li_3668\",\"flights\":[{{\"flight_number\":\"HAT136\",\"date\":\"{date}\"}}]}}")}}]}),
            serde_json::json!({"role": "tool", "tool_call_id": "call_1", "name": "book_reservation", "content": "Error: payment amount does not add up"}),
            serde_json::json!({"role": "assistant", "content": null, "tool_calls": [{"id": "call_1", "type": "function", "function": {"name": "book_reservation",
                "arguments": format!("{{\"user_id\":\"mia_li_3668\",\"flights\":[{{\"flight_number\":\"HAT136\",\"date\":\"{date}\"}}]}}")}}]}),
            serde_json::json!({"role": "tool", "tool_call_id": "call_1", "name": "book_reservation", "content": "{\"reservation_id\": \"HATHAT\"}"}),
        ];
        if extra_cancel {
            m.push(serde_json::json!({"role": "assistant", "content": null, "tool_calls": [{"id": "call_2", "type": "function", "function": {"name": "cancel_reservation", "arguments": "{\"reservation_id\":\"OLD\"}"}}]}));
            m.push(serde_json::json!({"role": "tool", "tool_call_id": "call_2", "content": "{}"}));
        }
        m.push(serde_json::json!({"role": "assistant", "content": "Your flight is booked!"}));
        serde_json::Value::Array(m).to_string()
    }

    #[test]
    fn eval_openai_chat_with_object_requirements() {
        let dir = tempfile::tempdir().unwrap();
        let spec = dir.path().join("spec.json");
        std::fs::write(&spec, SPEC).unwrap();
        let runs = dir.path().join("runs");
        std::fs::create_dir(&runs).unwrap();
        std::fs::write(runs.join("1-good.json"), chat("2024-05-20", false)).unwrap();
        std::fs::write(runs.join("2-wrong-date.json"), chat("2024-05-21", false)).unwrap();
        std::fs::write(runs.join("3-extra-cancel.json"), chat("2024-05-20", true)).unwrap();
        let out = evident()
            .args([
                "eval",
                "--jsonl",
                "--adapter",
                "openai-chat",
                "--error-prefix",
                "Error",
                "--claimed",
                "true",
                "--requirements",
            ])
            .arg(&spec)
            .arg(&runs)
            .output()
            .unwrap();
        let err = String::from_utf8_lossy(&out.stderr);
        assert_eq!(out.status.code(), Some(0), "{err}");
        assert!(
            !err.contains("every tool result counts as a success"),
            "{err}"
        );
        let lines: Vec<Value> = out
            .stdout
            .split(|&b| b == b'\n')
            .filter(|l| !l.is_empty())
            .map(json_of)
            .collect();
        let statuses: Vec<&str> = lines
            .iter()
            .map(|l| l["status"].as_str().unwrap())
            .collect();
        assert_eq!(
            statuses,
            ["VERIFIED_COMPLETE", "FAILED", "FAILED"],
            "{lines:?}"
        );
        assert!(
            lines[1]["reasons"][0]
                .as_str()
                .unwrap()
                .contains("flights[0].date: expected \"2024-05-20\", observed \"2024-05-21\""),
            "{}",
            lines[1]
        );
        assert_eq!(
            lines[2]["unrequested_writes"],
            serde_json::json!(["cancel_reservation"])
        );
        assert!(
            lines[0]["case_id"]
                .as_str()
                .unwrap()
                .ends_with("1-good.json")
        );

        // Without --error-prefix the report says every result counts as a success.
        let out = evident()
            .args([
                "eval",
                "--adapter",
                "openai-chat",
                "--claimed",
                "true",
                "--requirements",
            ])
            .arg(&spec)
            .arg(runs.join("1-good.json"))
            .output()
            .unwrap();
        assert!(
            String::from_utf8_lossy(&out.stderr).contains("every tool result counts as a success")
        );
        // Without --claimed the run stops: the claim is never read from the agent's words.
        let out = evident()
            .args(["eval", "--adapter", "openai-chat", "--requirements"])
            .arg(&spec)
            .arg(runs.join("1-good.json"))
            .output()
            .unwrap();
        assert_eq!(out.status.code(), Some(2));
        assert!(String::from_utf8_lossy(&out.stderr).contains("hint: pass --claimed true|false"));
        // A misspelt key in the object form is an error, never ignored.
        std::fs::write(&spec, SPEC.replace("\"writes\"", "\"write\"")).unwrap();
        evident()
            .args([
                "eval",
                "--adapter",
                "openai-chat",
                "--claimed",
                "true",
                "--requirements",
            ])
            .arg(&spec)
            .arg(&runs)
            .assert()
            .code(2)
            .stderr(predicate::str::contains("spec.json: unknown key 'write'"));
    }

    #[test]
    fn adapt_openai_chat_prints_arguments_only_for_the_object_form() {
        let dir = tempfile::tempdir().unwrap();
        let trace = dir.path().join("t.json");
        std::fs::write(&trace, chat("2024-05-20", false)).unwrap();
        let spec = dir.path().join("spec.json");
        std::fs::write(&spec, SPEC).unwrap();
        let out = evident()
            .args(["adapt", "openai-chat"])
            .arg(&trace)
            .arg(&spec)
            .args([
                "--source-ref",
                "run-7",
                "--error-prefix",
                "Error",
                "--claimed",
                "false",
            ])
            .output()
            .unwrap();
        assert_eq!(
            out.status.code(),
            Some(0),
            "{}",
            String::from_utf8_lossy(&out.stderr)
        );
        let v = json_of(&out.stdout);
        assert_eq!(v["case_id"], "run-7");
        assert_eq!(v["completion_claimed"], false);
        assert_eq!(v["events"][0]["success"], false);
        assert_eq!(v["events"][1]["arguments"]["user_id"], "mia_li_3668");
        assert_eq!(v["requirements"]["writes"][1], "cancel_reservation");
        // The list form: no arguments member (seed 001's case format).
        let out = evident()
            .args(["adapt", "openai-chat"])
            .arg(&trace)
            .arg(data("peer/requirements.json"))
            .args(["--source-ref", "run-7", "--claimed", "true"])
            .output()
            .unwrap();
        let v = json_of(&out.stdout);
        assert!(v["events"][0].get("arguments").is_none(), "{v}");
        // A blank prefix would mark everything failed.
        evident()
            .args(["adapt", "openai-chat"])
            .arg(&trace)
            .arg(&spec)
            .args([
                "--source-ref",
                "r",
                "--claimed",
                "true",
                "--error-prefix",
                " ",
            ])
            .assert()
            .code(2);
    }
}

/// `--threads` past any sensible count is a usage error, not an overflow panic (exit
/// 101), an allocation abort or a hang spawning millions of threads.
#[test]
fn absurd_thread_counts_are_a_usage_error() {
    for n in ["18446744073709551615", "100000000", "1025"] {
        let out = evident()
            .args(["eval", "--threads", n])
            .arg(data("peer/cases.jsonl"))
            .timeout(std::time::Duration::from_secs(60))
            .output()
            .unwrap();
        assert_eq!(out.status.code(), Some(2), "--threads {n}: {:?}", out);
        assert!(
            String::from_utf8_lossy(&out.stderr).contains("--threads"),
            "{n}"
        );
    }
    let out = evident()
        .args(["eval", "--threads", "1024"])
        .arg(data("peer/cases.jsonl"))
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(0));
}

/// ATIF through the real binary: `adapt atif`, `eval --adapter atif` over a file and a
/// failed call that a text convention marks (the envelope says where that came from
/// only through the reader's tests; here the verdict must follow it).
mod atif {
    use super::*;

    fn fixture(name: &str) -> PathBuf {
        PathBuf::from(env!("CARGO_MANIFEST_DIR"))
            .join("../evident-traces/tests/fixtures/atif")
            .join(name)
    }

    #[test]
    fn adapt_and_eval_read_atif_and_a_failed_call_never_counts() {
        let dir = tempfile::tempdir().unwrap();
        let req = dir.path().join("req.json");
        std::fs::write(
            &req,
            r#"[{"action":"financial_search","evidence_fields":["price"]}]"#,
        )
        .unwrap();
        let out = evident()
            .args(["adapt", "atif"])
            .arg(fixture("minimal-v1.4.json"))
            .arg(&req)
            .args(["--source-ref", "run-1", "--claimed", "true"])
            .output()
            .unwrap();
        assert_eq!(out.status.code(), Some(0), "{out:?}");
        let case = json_of(&out.stdout);
        assert_eq!(case["events"][0]["action"], "financial_search");
        assert_eq!(case["events"][0]["evidence"]["price"], 185.35);

        let out = evident()
            .args(["eval", "--json", "--adapter", "atif", "--claimed", "true"])
            .arg("--requirements")
            .arg(&req)
            .arg(fixture("minimal-v1.4.json"))
            .output()
            .unwrap();
        assert_eq!(out.status.code(), Some(0), "{out:?}");
        assert_eq!(json_of(&out.stdout)[0]["status"], "VERIFIED_COMPLETE");

        // The same call, its result an `Exit code 1` text: failed, so not done.
        let failed = dir.path().join("failed.json");
        let text = std::fs::read_to_string(fixture("minimal-v1.4.json"))
            .unwrap()
            .replace(
                r#""content": "{\"price\": 185.35}""#,
                r#""content": "Exit code 1\n{\"price\": 185.35}""#,
            );
        assert!(text.contains("Exit code 1"));
        std::fs::write(&failed, text).unwrap();
        let out = evident()
            .args(["eval", "--json", "--adapter", "atif", "--claimed", "true"])
            .arg("--requirements")
            .arg(&req)
            .arg(&failed)
            .output()
            .unwrap();
        let v = json_of(&out.stdout);
        assert_eq!(v[0]["status"], "FAILED", "{v}");

        // A broken trace: exit 2 naming the JSON path.
        let broken = dir.path().join("broken.json");
        std::fs::write(
            &broken,
            r#"{"schema_version":"ATIF-v1.8","steps":[{"step_id":1,"source":"agent","message":"","tool_calls":[],"observation":{"results":[{"source_call_id":"x","content":"ok"}]}}]}"#,
        )
        .unwrap();
        let out = evident()
            .args(["adapt", "atif"])
            .arg(&broken)
            .arg(&req)
            .args(["--source-ref", "r", "--claimed", "true"])
            .output()
            .unwrap();
        assert_eq!(out.status.code(), Some(2), "{out:?}");
        assert!(
            String::from_utf8_lossy(&out.stderr).contains("steps[0].observation.results[0]"),
            "{out:?}"
        );
    }
}

#[test]
fn adapt_jsonl_pipes_into_eval_and_indented_json_gets_a_hint() {
    let trace = data("peer/generic_trace.json");
    let reqs = data("peer/requirements.json");
    let adapt = |extra: &[&str]| {
        let out = evident()
            .arg("adapt")
            .arg("generic")
            .arg(&trace)
            .arg(&reqs)
            .args(["--source-ref", "run-1"])
            .args(extra)
            .output()
            .unwrap();
        assert!(out.status.success());
        out.stdout
    };
    let line = adapt(&["--jsonl"]);
    assert_eq!(line.iter().filter(|&&b| b == b'\n').count(), 1, "one line");
    // The same case as the indented form.
    assert_eq!(json_of(&line), json_of(&adapt(&[])));
    evident()
        .args(["eval", "-"])
        .write_stdin(line)
        .assert()
        .success()
        .stdout(
            predicate::str::contains("generic-email-retry")
                .and(predicate::str::contains("VERIFIED_COMPLETE")),
        );
    // The indented form is not a case line: the error says why, with the fix.
    evident()
        .args(["eval", "-"])
        .write_stdin(adapt(&[]))
        .assert()
        .code(2)
        .stderr(
            predicate::str::contains("<stdin>:1: invalid JSON")
                .and(predicate::str::contains(
                    "hint: each case is one JSON object on one line",
                ))
                .and(predicate::str::contains("--jsonl")),
        );
}
