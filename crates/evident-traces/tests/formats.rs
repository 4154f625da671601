//! The readers moved here from evident-eval's adapters, on the neutral trace itself
//! (evident-eval's parity tests check the seed 001 events made from it). Fixtures made
//! here, in the shapes each format documents: Anthropic Messages API `tool_use` /
//! `tool_result` content blocks (docs.anthropic.com, "Tool use"); OpenAI Responses API
//! `function_call` / `function_call_output` items and Chat Completions `tool_calls` /
//! `tool` messages (platform.openai.com API reference); MCP `tools/call` requests and
//! their JSON-RPC 2.0 responses with `isError` and `structuredContent`
//! (modelcontextprotocol.io, "Tools"); OTLP/JSON spans with the GenAI semantic
//! conventions' `execute_tool` operation (opentelemetry.io, gen-ai spans); seed 001's
//! generic events and openai tool records (shared/seeds, the peer's reference traces).

use evident_traces::{
    StatusFrom, anthropic, chat, claude_code, generic, mcp, openai, otel, responses,
};
use serde_json::{Value, json};

fn arr(v: Value) -> Vec<Value> {
    v.as_array().unwrap().clone()
}

#[test]
fn anthropic_parallel_calls_paired_by_id_failed_unfinished_and_messages() {
    let t = anthropic::read(
        &arr(json!([
            {"role": "user", "content": "Deploy it"},
            {"role": "assistant", "content": [
                {"type": "text", "text": "Running both."},
                {"type": "tool_use", "id": "a", "name": "build", "input": {"target": "x"}},
                {"type": "tool_use", "id": "b", "name": "test", "input": {}},
                {"type": "tool_use", "id": "c", "name": "deploy", "input": {}}
            ]},
            {"role": "user", "content": [
                {"type": "tool_result", "tool_use_id": "b", "content": "1 failed", "is_error": true},
                {"type": "tool_result", "tool_use_id": "a", "content": [{"type": "text", "text": "{\"ok\":"}, {"type": "text", "text": "true}"}]}
            ]}
        ])),
        "t",
    )
    .unwrap();
    assert_eq!(t.first_user_message(), Some("Deploy it"));
    assert_eq!(t.last_agent_message(), Some("Running both."));
    let ids: Vec<_> = t.calls.iter().map(|c| c.id.as_str()).collect();
    assert_eq!(ids, ["a", "b", "c"], "call order, not result order");
    let a = t.calls[0].outcome.as_ref().unwrap();
    assert!(!a.is_error && a.status_from == StatusFrom::Absent);
    assert_eq!(a.text, "{\"ok\":true}", "text blocks joined");
    assert_eq!(a.path, "messages[2].content[1].content");
    assert_eq!(t.calls[0].arguments, json!({"target": "x"}));
    let b = t.calls[1].outcome.as_ref().unwrap();
    assert!(b.is_error && b.status_from == StatusFrom::Flag);
    assert!(t.calls[2].outcome.is_none(), "unfinished, never a success");
}

#[test]
fn anthropic_rejects_a_result_before_its_call_naming_the_path() {
    let e = anthropic::read(
        &arr(json!([
            {"role": "user", "content": [{"type": "tool_result", "tool_use_id": "a", "content": "x"}]},
            {"role": "assistant", "content": [{"type": "tool_use", "id": "a", "name": "n", "input": {}}]}
        ])),
        "t",
    )
    .unwrap_err();
    assert_eq!(e.line, 0);
    assert!(
        e.message
            .starts_with("messages[0].content[0]: tool_result 'a' has no earlier tool_use"),
        "{e}"
    );
}

#[test]
fn responses_status_says_where_it_came_from() {
    let t = responses::read(
        &arr(json!([
            {"type": "message", "role": "user", "content": [{"type": "input_text", "text": "Go"}]},
            {"type": "function_call", "call_id": "1", "name": "a", "arguments": "{\"k\":1}", "status": "incomplete"},
            {"type": "function_call", "call_id": "2", "name": "b", "arguments": ""},
            {"type": "function_call", "call_id": "3", "name": "c", "arguments": "{}"},
            {"type": "function_call_output", "call_id": "3", "output": "plain"},
            {"type": "function_call_output", "call_id": "2", "output": "{\"error\":\"quota\"}"},
            {"type": "function_call_output", "call_id": "1", "output": "{}"},
            {"type": "function_call", "call_id": "4", "name": "d", "arguments": "{}"}
        ])),
        "t",
    )
    .unwrap();
    assert_eq!(t.first_user_message(), Some("Go"));
    let s: Vec<_> = t
        .calls
        .iter()
        .map(|c| c.outcome.as_ref().map(|o| (o.is_error, o.status_from)))
        .collect();
    assert_eq!(
        s,
        [
            Some((true, StatusFrom::Flag)),
            Some((true, StatusFrom::Convention)),
            Some((false, StatusFrom::Absent)),
            None
        ]
    );
    assert_eq!(t.calls[0].arguments, json!({"k": 1}));
    assert_eq!(t.calls[1].arguments, json!({}), "empty text: no arguments");
    // Arguments are read strictly: a duplicate key is refused, naming the path.
    let e = responses::read(
        &arr(json!([{"type": "function_call", "call_id": "1", "name": "a", "arguments": "{\"k\":1,\"k\":2}"}])),
        "t",
    )
    .unwrap_err();
    assert!(
        e.message.contains("items[0].arguments") && e.message.contains("duplicate key 'k'"),
        "{e}"
    );
}

#[test]
fn mcp_structured_content_is_data_and_every_request_pairs() {
    let t = mcp::read(
        &arr(json!([
            {"jsonrpc": "2.0", "id": 1, "method": "tools/call", "params": {"name": "a", "arguments": {"q": 1}}},
            {"jsonrpc": "2.0", "id": 2, "method": "tools/list"},
            {"jsonrpc": "2.0", "id": "x", "method": "tools/call", "params": {"name": "b"}},
            {"jsonrpc": "2.0", "method": "notifications/progress"},
            {"jsonrpc": "2.0", "id": 2, "result": {"tools": []}},
            {"jsonrpc": "2.0", "id": "x", "error": {"code": -32000, "message": "down"}},
            {"jsonrpc": "2.0", "id": 1, "result": {"structuredContent": {"n": 3}, "content": [{"type": "text", "text": "3"}]}},
            {"jsonrpc": "2.0", "id": 3, "method": "tools/call", "params": {"name": "c"}}
        ])),
        "t",
    )
    .unwrap();
    assert_eq!(t.calls.len(), 3, "tools/list is not a tool call");
    let a = t.calls[0].outcome.as_ref().unwrap();
    assert_eq!(a.data, Some(json!({"n": 3}).as_object().unwrap().clone()));
    let b = t.calls[1].outcome.as_ref().unwrap();
    assert!(b.is_error && b.status_from == StatusFrom::Flag);
    assert_eq!(b.data.as_ref().unwrap()["error"]["message"], "down");
    assert_eq!(t.calls[1].arguments, Value::Null);
    assert!(t.calls[2].outcome.is_none(), "unfinished");
    // A response to a request of another method, twice: a second result.
    let e = mcp::read(
        &arr(json!([
            {"jsonrpc": "2.0", "id": 2, "method": "tools/list"},
            {"jsonrpc": "2.0", "id": 2, "result": {}},
            {"jsonrpc": "2.0", "id": 2, "result": {}}
        ])),
        "t",
    )
    .unwrap_err();
    assert!(
        e.message
            .contains("messages[2]: duplicate response to request 2"),
        "{e}"
    );
}

#[test]
fn otel_orders_by_start_time_and_keeps_the_times() {
    let span = |id: &str, start: &str, end: &str, extra: Value| {
        let mut attrs = vec![
            json!({"key": "gen_ai.operation.name", "value": {"stringValue": "execute_tool"}}),
            json!({"key": "gen_ai.tool.name", "value": {"stringValue": id}}),
        ];
        attrs.extend(arr(extra));
        json!({"spanId": id, "startTimeUnixNano": start, "endTimeUnixNano": end, "attributes": attrs})
    };
    let t = otel::read(
        &arr(json!([{"scopeSpans": [{"spans": [
            span("late", "20", "25", json!([])),
            span("early", "10", "12", json!([{"key": "gen_ai.tool.call.result", "value": {"stringValue": "{\"a\":1}"}}])),
        ]}]}])),
        "t",
    )
    .unwrap();
    let names: Vec<_> = t.calls.iter().map(|c| c.name.as_str()).collect();
    assert_eq!(names, ["early", "late"]);
    assert_eq!(t.calls[0].time.as_deref(), Some("10"));
    let o = t.calls[0].outcome.as_ref().unwrap();
    assert_eq!(
        (o.time.as_deref(), o.text.as_str()),
        (Some("12"), "{\"a\":1}")
    );
}

#[test]
fn chat_error_prefix_is_a_convention_and_ids_may_be_reused_after_their_result() {
    let call = |id: &str| json!({"role": "assistant", "content": null, "tool_calls": [{"id": id, "type": "function", "function": {"name": "a", "arguments": "{}"}}]});
    let res = |id: &str, c: &str| json!({"role": "tool", "tool_call_id": id, "content": c});
    let msgs = arr(json!([
        {"role": "user", "content": "Do it"},
        call("c1"),
        res("c1", "ERROR: no"),
        call("c1"),
        res("c1", "{\"ok\":1}")
    ]));
    let t = chat::read(&msgs, &["ERROR:".to_string()], "t").unwrap();
    assert_eq!(t.first_user_message(), Some("Do it"));
    let s: Vec<_> = t
        .calls
        .iter()
        .map(|c| c.outcome.as_ref().map(|o| (o.is_error, o.status_from)))
        .collect();
    assert_eq!(
        s,
        [
            Some((true, StatusFrom::Convention)),
            Some((false, StatusFrom::Absent))
        ]
    );
    // Without a prefix, nothing marks a failure.
    let t = chat::read(&msgs, &[], "t").unwrap();
    assert!(
        t.calls
            .iter()
            .all(|c| !c.outcome.as_ref().unwrap().is_error)
    );
}

#[test]
fn seed_formats_give_structured_results_and_refuse_a_call_without_one() {
    let t = generic::read(
        &arr(json!([
            {"action": "a", "success": true, "evidence": {"id": 1}},
            {"action": "b", "success": false, "source_event_id": "e2", "arguments": {"x": 1}}
        ])),
        "t",
    )
    .unwrap();
    assert_eq!(t.calls[0].id, "", "generic ids are optional");
    assert_eq!(
        t.calls[0].outcome.as_ref().unwrap().data.as_ref().unwrap()["id"],
        1
    );
    let b = t.calls[1].outcome.as_ref().unwrap();
    assert!(b.is_error && b.status_from == StatusFrom::Flag && b.data == Some(Default::default()));
    let call = json!({"type": "tool_call", "tool_call_id": "c1", "name": "a"});
    let e = openai::read(std::slice::from_ref(&call), "t").unwrap_err();
    assert_eq!(e.message, "tool_call 'c1' has no result");
    let t = openai::read(
        &[call, json!({"type": "tool_result", "tool_call_id": "c1", "success": true, "evidence": {"k": "v"}})],
        "t",
    )
    .unwrap();
    assert_eq!(
        t.calls[0].outcome.as_ref().unwrap().data.as_ref().unwrap()["k"],
        "v"
    );
    assert_eq!(t.calls[0].arguments, Value::Null);
}

#[test]
fn jsonl_readers_keep_timestamps() {
    let lines = [
        json!({"type": "assistant", "timestamp": "2026-12-01T10:00:00Z", "message": {"role": "assistant", "content": [{"type": "tool_use", "id": "a", "name": "Bash", "input": {}}]}}),
        json!({"type": "user", "timestamp": "2026-12-01T10:00:02Z", "message": {"role": "user", "content": [{"type": "tool_result", "tool_use_id": "a", "content": "ok"}]}}),
    ];
    let bytes: String = lines.iter().map(|l| l.to_string() + "\n").collect();
    let t = claude_code::read(bytes.as_bytes(), "t.jsonl").unwrap();
    assert_eq!(t.calls[0].time.as_deref(), Some("2026-12-01T10:00:00Z"));
    assert_eq!(
        t.calls[0].outcome.as_ref().unwrap().time.as_deref(),
        Some("2026-12-01T10:00:02Z")
    );
}
