//! The object form of requirements end to end: case JSONL through the engine, every
//! adapter, the checked-in schema, and the `openai-chat` adapter.

use std::path::PathBuf;

use evident_eval::adapt::{self, AdaptOptions, Format};
use evident_eval::engine::{self, Mode, NoHooks, Options};
use serde_json::{Value, json};

fn run(input: &str, mode: Mode) -> Result<String, String> {
    let opts = Options::new(mode, "cases.jsonl");
    let mut out = Vec::new();
    engine::run(&mut input.as_bytes(), &mut out, &opts, &mut NoHooks, None)
        .map_err(|e| e.to_string())?;
    Ok(String::from_utf8(out).unwrap())
}

fn one(line: Value) -> Value {
    let out = run(&line.to_string(), Mode::Jsonl).unwrap();
    serde_json::from_str(out.trim()).unwrap()
}

fn case(reqs: Value, events: Value) -> Value {
    json!({"case_id": "c", "task": "t", "completion_claimed": true, "requirements": reqs, "events": events})
}

#[test]
fn object_form_in_case_jsonl() {
    let reqs = json!({"requirements": [{"action": "book", "arguments": {"flights": [{"n": "HAT136", "date": "2024-05-20"}]},
        "evidence": {"status": "confirmed"}, "evidence_fields": ["reservation_id"]}], "writes": ["book", "cancel"]});
    let good = json!({"action": "book", "success": true, "arguments": {"flights": [{"n": "HAT136", "date": "2024-05-20"}]},
        "evidence": {"status": "confirmed", "reservation_id": "R1"}});
    let r = one(case(reqs.clone(), json!([good])));
    assert_eq!(r["status"], "VERIFIED_COMPLETE", "{r}");
    assert_eq!(r["unrequested_writes"], json!([]));
    // Wrong date: the reason names the path.
    let mut bad = good.clone();
    bad["arguments"]["flights"][0]["date"] = json!("2024-05-21");
    let r = one(case(reqs.clone(), json!([bad])));
    assert_eq!(r["status"], "FAILED", "{r}"); // the wrong booking is an unrequested write
    let reasons = r["reasons"].to_string();
    assert!(
        reasons.contains(r#"flights[0].date: expected \"2024-05-20\", observed \"2024-05-21\""#),
        "{reasons}"
    );
    assert_eq!(r["unrequested_writes"], json!(["book"]));
    // An extra cancellation nobody asked for.
    let r = one(case(
        reqs.clone(),
        json!([good, {"action": "cancel", "success": true}]),
    ));
    assert_eq!(r["status"], "FAILED");
    assert!(
        r["reasons"][1]
            .as_str()
            .unwrap()
            .contains("'cancel' (events[1])"),
        "{r}"
    );
    // Plain and metrics modes read the same lines.
    let two = format!(
        "{}\n{}\n",
        case(reqs.clone(), json!([good])),
        json!({"case_id": "d", "task": "t", "completion_claimed": true, "requirements": [{"action": "x"}], "events": []})
    );
    let plain = run(&two, Mode::Plain).unwrap();
    assert!(
        plain.starts_with(
            "c                      VERIFIED_COMPLETE\nd                      UNVERIFIED\n"
        ),
        "{plain}"
    );
    let m: Value = serde_json::from_str(&run(&two, Mode::Metrics).unwrap()).unwrap();
    assert_eq!(m["status_counts"]["VERIFIED_COMPLETE"], 1);
    // --json output is one array whose items are the same values.
    let arr: Value = serde_json::from_str(&run(&two, Mode::Json).unwrap()).unwrap();
    assert_eq!(arr[0]["status"], "VERIFIED_COMPLETE");
    assert!(arr[1].get("unrequested_writes").is_none());
}

#[test]
fn both_readers_see_the_object_form_and_check_the_rest_of_the_line() {
    use evident_eval::case::{parse_case, parse_case_serde_json};
    let line = case(
        json!({"requirements": [], "writes": ["a"]}),
        json!([{"action": "a", "success": true}]),
    )
    .to_string();
    let (a, b) = (
        parse_case(line.as_bytes()).unwrap(),
        parse_case_serde_json(line.as_bytes()).unwrap(),
    );
    assert!(a.object_form && b.object_form);
    assert!(a.requirements.is_empty() && b.requirements.is_empty());
    // The events are still checked by seed 001's rules, with its messages.
    let bad = case(
        json!({"requirements": []}),
        json!([{"action": "a", "success": "yes"}]),
    )
    .to_string();
    let want = "events[0]: Each event requires boolean 'success', not a string.";
    assert_eq!(parse_case(bad.as_bytes()).unwrap_err().0, want);
    assert_eq!(parse_case_serde_json(bad.as_bytes()).unwrap_err().0, want);
    // An array of requirements is not the object form.
    let list = case(json!([{"action": "a"}]), json!([])).to_string();
    assert!(!parse_case(list.as_bytes()).unwrap().object_form);
}

#[test]
fn object_form_errors_name_the_line_and_path() {
    let e = run(
        &case(
            json!({"requirements": [{"action": "a"}], "write": ["a"]}),
            json!([]),
        )
        .to_string(),
        Mode::Plain,
    )
    .unwrap_err();
    assert_eq!(
        e,
        "cases.jsonl:1: requirements: unknown key 'write' (allowed: requirements, writes); hint: the list of world-changing actions is 'writes'"
    );
    let e = run(
        &case(
            json!({"requirements": [{"action": "a"}]}),
            json!([{"action": "a", "success": true, "arguments": [1]}]),
        )
        .to_string(),
        Mode::Plain,
    )
    .unwrap_err();
    assert_eq!(
        e,
        "cases.jsonl:1: events[0]: 'arguments' must be an object."
    );
    // Case-level checks come first, with seed 001's messages.
    let e = run(
        &json!({"case_id": "c", "task": "t", "completion_claimed": 1, "requirements": {}})
            .to_string(),
        Mode::Plain,
    )
    .unwrap_err();
    assert_eq!(
        e,
        "cases.jsonl:1: 'completion_claimed' must be boolean, not a number."
    );
}

#[test]
fn list_form_refuses_object_form_keys() {
    // Seed 001 would ignore them: a constraint the owner wrote would not be checked.
    for key in ["arguments", "evidence", "count"] {
        let line = case(
            json!([{"action": "a", key: {}}]),
            json!([{"action": "a", "success": true}]),
        )
        .to_string();
        let e = run(&line, Mode::Plain).unwrap_err();
        assert!(
            e.contains(&format!(
                "requirements[0]: '{key}' is a key of the object form"
            )),
            "{e}"
        );
        let e = evident_eval::case::parse_case_serde_json(line.as_bytes()).unwrap_err();
        assert!(
            e.0.contains(&format!("'{key}' is a key of the object form")),
            "{e}"
        );
        let file = serde_json::to_vec(&json!([{"action": "a", key: 1}])).unwrap();
        assert!(
            adapt::parse_requirements(&file)
                .unwrap_err()
                .to_string()
                .contains(key)
        );
    }
    // The honest twin: unknown keys that are not the object form's stay ignored.
    let line = case(
        json!([{"action": "a", "note": 1}]),
        json!([{"action": "a", "success": true}]),
    )
    .to_string();
    assert!(
        run(&line, Mode::Plain)
            .unwrap()
            .contains("VERIFIED_COMPLETE")
    );
}

const SPEC: &str = r#"{"requirements": [{"action": "a", "arguments": {"to": "x@example.com"}}], "writes": ["a", "b"]}"#;

/// The same object form through every adapter: a matching call verifies; a second,
/// unrequested write fails the case.
#[test]
fn object_form_works_with_every_adapter() {
    let spec = adapt::parse_requirements(SPEC.as_bytes()).unwrap();
    let head = r#""trace_id":"t","task":"x","completion_claimed":true"#;
    let traces: Vec<(Format, String, String)> = vec![
        (
            Format::Generic,
            format!(
                r#"{{{head},"events":[{{"action":"a","success":true,"arguments":{{"to":"x@example.com"}}}}]}}"#
            ),
            format!(
                r#"{{{head},"events":[{{"action":"a","success":true,"arguments":{{"to":"x@example.com"}}}},{{"action":"b","success":true}}]}}"#
            ),
        ),
        (
            Format::OpenAi,
            format!(
                r#"{{{head},"records":[{{"type":"tool_call","tool_call_id":"1","name":"a","arguments":{{"to":"x@example.com"}}}},{{"type":"tool_result","tool_call_id":"1","success":true}}]}}"#
            ),
            format!(
                r#"{{{head},"records":[{{"type":"tool_call","tool_call_id":"1","name":"a","arguments":{{"to":"x@example.com"}}}},{{"type":"tool_result","tool_call_id":"1","success":true}},{{"type":"tool_call","tool_call_id":"1","name":"b"}},{{"type":"tool_result","tool_call_id":"1","success":true}}]}}"#
            ),
        ),
        (
            Format::Anthropic,
            format!(
                r#"{{{head},"messages":[{{"role":"assistant","content":[{{"type":"tool_use","id":"u","name":"a","input":{{"to":"x@example.com"}}}}]}},{{"role":"user","content":[{{"type":"tool_result","tool_use_id":"u","content":"ok"}}]}}]}}"#
            ),
            format!(
                r#"{{{head},"messages":[{{"role":"assistant","content":[{{"type":"tool_use","id":"u","name":"a","input":{{"to":"x@example.com"}}}},{{"type":"tool_use","id":"v","name":"b","input":{{}}}}]}},{{"role":"user","content":[{{"type":"tool_result","tool_use_id":"u","content":"ok"}},{{"type":"tool_result","tool_use_id":"v","content":"ok"}}]}}]}}"#
            ),
        ),
        (
            Format::OpenAiResponses,
            format!(
                r#"{{{head},"items":[{{"type":"function_call","call_id":"c","name":"a","arguments":"{{\"to\":\"x@example.com\"}}"}},{{"type":"function_call_output","call_id":"c","output":"ok"}}]}}"#
            ),
            format!(
                r#"{{{head},"items":[{{"type":"function_call","call_id":"c","name":"a","arguments":"{{\"to\":\"x@example.com\"}}"}},{{"type":"function_call_output","call_id":"c","output":"ok"}},{{"type":"function_call","call_id":"d","name":"b","arguments":"{{}}"}},{{"type":"function_call_output","call_id":"d","output":"ok"}}]}}"#
            ),
        ),
        (
            Format::Mcp,
            format!(
                r#"{{{head},"messages":[{{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{{"name":"a","arguments":{{"to":"x@example.com"}}}}}},{{"jsonrpc":"2.0","id":1,"result":{{}}}}]}}"#
            ),
            format!(
                r#"{{{head},"messages":[{{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{{"name":"a","arguments":{{"to":"x@example.com"}}}}}},{{"jsonrpc":"2.0","id":1,"result":{{}}}},{{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{{"name":"b"}}}},{{"jsonrpc":"2.0","id":1,"result":{{}}}}]}}"#
            ),
        ),
        (
            Format::Otel,
            format!(
                r#"{{{head},"resourceSpans":[{{"scopeSpans":[{{"spans":[{{"spanId":"s1","startTimeUnixNano":"1","attributes":[{{"key":"gen_ai.operation.name","value":{{"stringValue":"execute_tool"}}}},{{"key":"gen_ai.tool.name","value":{{"stringValue":"a"}}}},{{"key":"gen_ai.tool.call.arguments","value":{{"stringValue":"{{\"to\":\"x@example.com\"}}"}}}}]}}]}}]}}]}}"#
            ),
            format!(
                r#"{{{head},"resourceSpans":[{{"scopeSpans":[{{"spans":[{{"spanId":"s1","startTimeUnixNano":"1","attributes":[{{"key":"gen_ai.operation.name","value":{{"stringValue":"execute_tool"}}}},{{"key":"gen_ai.tool.name","value":{{"stringValue":"a"}}}},{{"key":"gen_ai.tool.call.arguments","value":{{"stringValue":"{{\"to\":\"x@example.com\"}}"}}}}]}},{{"spanId":"s2","startTimeUnixNano":"2","attributes":[{{"key":"gen_ai.operation.name","value":{{"stringValue":"execute_tool"}}}},{{"key":"gen_ai.tool.name","value":{{"stringValue":"b"}}}}]}}]}}]}}]}}"#
            ),
        ),
        (
            Format::OpenAiChat,
            format!(
                r#"{{{head},"messages":[{{"role":"assistant","tool_calls":[{{"id":"1","type":"function","function":{{"name":"a","arguments":"{{\"to\":\"x@example.com\"}}"}}}}]}},{{"role":"tool","tool_call_id":"1","content":"ok"}}]}}"#
            ),
            format!(
                r#"{{{head},"messages":[{{"role":"assistant","tool_calls":[{{"id":"1","type":"function","function":{{"name":"a","arguments":"{{\"to\":\"x@example.com\"}}"}}}}]}},{{"role":"tool","tool_call_id":"1","content":"ok"}},{{"role":"assistant","tool_calls":[{{"id":"1","type":"function","function":{{"name":"b","arguments":"{{}}"}}}}]}},{{"role":"tool","tool_call_id":"1","content":"ok"}}]}}"#
            ),
        ),
        (
            Format::ClaudeCode,
            [
                r#"{"type":"assistant","message":{"role":"assistant","content":[{"type":"tool_use","id":"u","name":"a","input":{"to":"x@example.com"}}]}}"#,
                r#"{"type":"user","message":{"role":"user","content":[{"type":"tool_result","tool_use_id":"u","content":"ok"}]}}"#,
            ]
            .join("\n"),
            [
                r#"{"type":"assistant","message":{"role":"assistant","content":[{"type":"tool_use","id":"u","name":"a","input":{"to":"x@example.com"}},{"type":"tool_use","id":"v","name":"b","input":{}}]}}"#,
                r#"{"type":"user","message":{"role":"user","content":[{"type":"tool_result","tool_use_id":"u","content":"ok"},{"type":"tool_result","tool_use_id":"v","content":"ok"}]}}"#,
            ]
            .join("\n"),
        ),
        (
            Format::Codex,
            [
                r#"{"type":"response_item","payload":{"type":"function_call","call_id":"c","name":"a","arguments":"{\"to\":\"x@example.com\"}"}}"#,
                r#"{"type":"response_item","payload":{"type":"function_call_output","call_id":"c","output":"ok"}}"#,
            ]
            .join("\n"),
            [
                r#"{"type":"response_item","payload":{"type":"function_call","call_id":"c","name":"a","arguments":"{\"to\":\"x@example.com\"}"}}"#,
                r#"{"type":"response_item","payload":{"type":"function_call_output","call_id":"c","output":"ok"}}"#,
                r#"{"type":"response_item","payload":{"type":"function_call","call_id":"d","name":"b","arguments":"{}"}}"#,
                r#"{"type":"response_item","payload":{"type":"function_call_output","call_id":"d","output":"ok"}}"#,
            ]
            .join("\n"),
        ),
        (
            Format::Atif,
            r#"{"schema_version":"ATIF-v1.7","session_id":"s","agent":{"name":"a","version":"1"},"steps":[{"step_id":1,"source":"agent","message":"","tool_calls":[{"tool_call_id":"c","function_name":"a","arguments":{"to":"x@example.com"}}],"observation":{"results":[{"source_call_id":"c","content":"ok"}]}}]}"#.to_string(),
            r#"{"schema_version":"ATIF-v1.8","session_id":"s","agent":{"name":"a","version":"1"},"steps":[{"step_id":1,"source":"agent","message":"","tool_calls":[{"tool_call_id":"c","function_name":"a","arguments":{"to":"x@example.com"}},{"tool_call_id":"d","function_name":"b","arguments":{}}],"observation":{"results":[{"source_call_id":"d","content":"ok"},{"source_call_id":"c","content":"ok"}]}}]}"#.to_string(),
        ),
    ];
    assert_eq!(traces.len(), Format::ALL.len());
    for (format, good, extra) in traces {
        // The agent-native logs do not record the completion claim.
        let opts = adapt::AdaptOptions {
            claimed: format.is_native().then_some(true),
            ..Default::default()
        };
        for (trace, want) in [(good, "VERIFIED_COMPLETE"), (extra, "FAILED")] {
            let env = adapt::adapt_bytes_with(format, trace.as_bytes(), spec.clone(), "r", &opts)
                .unwrap_or_else(|e| panic!("{}: {e}", format.name()));
            let r = one(env.case_value());
            assert_eq!(r["status"], want, "{}: {r}", format.name());
        }
    }
}

#[test]
fn the_checked_in_schema_matches_the_types() {
    let file =
        PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../../schemas/requirements.schema.json");
    let generated = evident_eval::spec::schema();
    let checked_in: Value =
        serde_json::from_slice(&std::fs::read(&file).unwrap_or_default()).unwrap_or(Value::Null);
    assert_eq!(
        generated, checked_in,
        "schemas/requirements.schema.json drifted: run `cargo run -p evident-eval --bin evident-eval-bench -- schema > schemas/requirements.schema.json`"
    );
}

mod openai_chat {
    use super::*;

    fn opts(prefixes: &[&str], claimed: Option<bool>) -> AdaptOptions {
        AdaptOptions {
            error_prefixes: prefixes.iter().map(|s| s.to_string()).collect(),
            claimed,
        }
    }

    fn adapt_chat(messages: Value, o: &AdaptOptions) -> Result<adapt::Envelope, String> {
        let spec = adapt::parse_requirements(br#"[{"action": "a"}]"#).unwrap();
        adapt::adapt_bytes_with(
            Format::OpenAiChat,
            messages.to_string().as_bytes(),
            spec,
            "run-1",
            o,
        )
        .map_err(|e| e.to_string())
    }

    fn call(id: &str, name: &str, args: &str) -> Value {
        json!({"role": "assistant", "content": null, "tool_calls": [{"id": id, "type": "function", "function": {"name": name, "arguments": args}}]})
    }

    fn result(id: &str, content: &str) -> Value {
        json!({"role": "tool", "tool_call_id": id, "name": "x", "content": content})
    }

    #[test]
    fn reads_a_bare_message_array_with_reused_ids_and_error_prefixes() {
        let msgs = json!([
            {"role": "system", "content": "policy"},
            {"role": "user", "content": "hi"},
            call("c1", "a", "{\"x\": 1}"),
            result("c1", "Error: payment amount does not add up"),
            call("c1", "a", "{\"x\": 2}"),
            result("c1", "{\"reservation_id\": \"HATHAT\"}"),
            {"role": "assistant", "content": "Done!"}
        ]);
        let env = adapt_chat(msgs.clone(), &opts(&["Error"], Some(true))).unwrap();
        assert_eq!(env.trace_id, "run-1");
        assert_eq!(env.task, adapt::NO_TASK);
        assert!(env.completion_claimed);
        let got: Vec<_> = env
            .events
            .iter()
            .map(|e| {
                (
                    e.success,
                    e.evidence.len(),
                    e.arguments.clone().unwrap()["x"].clone(),
                )
            })
            .collect();
        assert_eq!(got, vec![(false, 0, json!(1)), (true, 1, json!(2))]);
        assert_eq!(env.source.adapter, "openai-chat@1");
        // Without a prefix every result is a success.
        let env = adapt_chat(msgs.clone(), &opts(&[], Some(false))).unwrap();
        assert!(env.events.iter().all(|e| e.success));
        // The claim is never read from the agent's "Done!": it must be given.
        let e = adapt_chat(msgs, &opts(&[], None)).unwrap_err();
        assert!(e.contains("--claimed"), "{e}");
    }

    #[test]
    fn an_object_with_messages_may_record_the_claim() {
        let t = json!({"trace_id": "r9", "task": "book", "completion_claimed": false, "messages": [call("1", "a", "{}"), result("1", "ok")]});
        let env = adapt_chat(t.clone(), &opts(&[], None)).unwrap();
        assert_eq!(
            (
                env.trace_id.as_str(),
                env.task.as_str(),
                env.completion_claimed
            ),
            ("r9", "book", false)
        );
        let e = adapt_chat(t, &opts(&[], Some(true))).unwrap_err();
        assert!(
            e.contains("completion_claimed is false in the trace but --claimed true"),
            "{e}"
        );
    }

    #[test]
    fn malformed_arguments_name_the_message_index() {
        let msgs = json!([{"role": "user", "content": "x"}, call("1", "a", "{\"x\": 1"), result("1", "ok")]);
        let e = adapt_chat(msgs, &opts(&[], Some(true))).unwrap_err();
        assert!(
            e.starts_with("messages[1].tool_calls[0].function.arguments is not valid JSON"),
            "{e}"
        );
        let msgs = json!([call("1", "a", "[1]"), result("1", "ok")]);
        let e = adapt_chat(msgs, &opts(&[], Some(true))).unwrap_err();
        assert!(
            e.contains("messages[0].tool_calls[0].function.arguments must be a JSON object"),
            "{e}"
        );
        let msgs = json!([call("1", "a", "{\"k\": 1, \"k\": 2}"), result("1", "ok")]);
        assert!(
            adapt_chat(msgs, &opts(&[], Some(true)))
                .unwrap_err()
                .contains("duplicate key")
        );
    }

    #[test]
    fn pairing_rejections() {
        let o = opts(&[], Some(true));
        let e = adapt_chat(json!([result("1", "ok"), call("1", "a", "{}")]), &o).unwrap_err();
        assert!(
            e.starts_with("messages[0]: tool message '1' has no earlier tool call"),
            "{e}"
        );
        let e = adapt_chat(json!([call("1", "a", "{}"), call("1", "a", "{}")]), &o).unwrap_err();
        assert!(
            e.contains("messages[1].tool_calls[0]: duplicate tool call id '1'"),
            "{e}"
        );
        let e = adapt_chat(json!([call("1", "a", "{}"), result("2", "ok")]), &o).unwrap_err();
        assert!(
            e.contains("tool message '2' has no earlier tool call"),
            "{e}"
        );
        let e = adapt_chat(
            json!([{"role": "function", "name": "a", "content": "x"}]),
            &o,
        )
        .unwrap_err();
        assert!(e.contains("legacy function role"), "{e}");
        let e = adapt_chat(json!([{"role": "robot", "content": "x"}]), &o).unwrap_err();
        assert!(e.contains("not a chat role"), "{e}");
        let e = adapt_chat(json!({"messages": {}}), &o).unwrap_err();
        assert!(e.contains("messages must be an array"), "{e}");
        // An interrupted run: the last call never got its result.
        let env = adapt_chat(json!([call("1", "a", "{}")]), &o).unwrap();
        assert!(env.events[0].unfinished && !env.events[0].success);
        assert_eq!(env.case_value()["events"][0]["unfinished"], true);
    }

    #[test]
    fn error_prefix_and_claimed_are_for_the_chat_format_only() {
        let t = br#"{"trace_id":"t","task":"x","completion_claimed":true,"events":[]}"#;
        let e = adapt::adapt_bytes_with(
            Format::Generic,
            t,
            adapt::parse_requirements(br#"[{"action":"a"}]"#).unwrap(),
            "r",
            &opts(&["E"], None),
        )
        .unwrap_err();
        assert!(e.to_string().contains("openai-chat format only"), "{e}");
    }
}
