//! The Claude Code and Codex readers on fixtures made here. Formats: Claude Code
//! session transcripts and `claude -p --output-format stream-json` (Anthropic's Claude
//! Code docs: message `content` blocks `tool_use {id, name, input}` and `tool_result
//! {tool_use_id, content, is_error}`, `isSidechain` for subagents, a final `result`
//! line in stream-json); Codex rollout JSONL (`{timestamp, type, payload}`:
//! `response_item` function_call / function_call_output / custom_tool_call, `event_msg`
//! user_message / exec_command_end) and `codex exec --json` (`item.started` /
//! `item.completed` with `command_execution {exit_code}` and `file_change {changes}`)
//! as the openai/codex repository documents them (docs/exec.md, codex-rs/protocol).

use evident_traces::{StatusFrom, claude_code, codex};
use serde_json::{Value, json};

fn jsonl(lines: &[Value]) -> Vec<u8> {
    let v: Vec<String> = lines.iter().map(Value::to_string).collect();
    (v.join("\n") + "\n").into_bytes()
}

fn user(content: Value) -> Value {
    json!({"type": "user", "message": {"role": "user", "content": content}})
}
fn assistant(content: Value) -> Value {
    json!({"type": "assistant", "message": {"role": "assistant", "content": content}})
}

#[test]
fn claude_code_parallel_calls_out_of_order_results_failed_unfinished_and_subagent() {
    let t = claude_code::read(
        &jsonl(&[
            user(json!("Fix the bug")),
            assistant(json!([
                {"type": "text", "text": "Looking."},
                {"type": "tool_use", "id": "a", "name": "Write", "input": {"file_path": "/r/x.py", "content": "1"}},
                {"type": "tool_use", "id": "b", "name": "Bash", "input": {"command": "pytest"}}
            ])),
            user(json!([{"type": "tool_result", "tool_use_id": "b", "content": [{"type": "text", "text": "1 failed"}], "is_error": true}])),
            user(json!([{"type": "tool_result", "tool_use_id": "a", "content": "ok"}])),
            json!({"type": "assistant", "isSidechain": true, "message": {"role": "assistant", "content": [
                {"type": "tool_use", "id": "c", "name": "Edit", "input": {"file_path": "/r/y.py"}}
            ]}}),
            assistant(json!([{"type": "text", "text": "Done."}])),
        ]),
        "t.jsonl",
    )
    .unwrap();
    assert_eq!(t.first_user_message(), Some("Fix the bug"));
    assert_eq!(t.last_agent_message(), Some("Done."));
    assert_eq!(t.calls.len(), 3);
    let a = &t.calls[0];
    assert_eq!(a.writes, ["/r/x.py"]);
    let oa = a.outcome.as_ref().unwrap();
    assert!(!oa.is_error && oa.status_from == StatusFrom::Absent && oa.text == "ok");
    let ob = t.calls[1].outcome.as_ref().unwrap();
    assert!(ob.is_error && ob.status_from == StatusFrom::Flag && t.calls[1].shell);
    assert!(
        t.calls[2].subagent && t.calls[2].outcome.is_none(),
        "unfinished, never a success"
    );
}

#[test]
fn claude_code_stream_json_result_is_the_last_message() {
    let t = claude_code::read(
        &jsonl(&[
            json!({"type": "system", "subtype": "init", "session_id": "s"}),
            user(json!("Do it")),
            assistant(json!([{"type": "text", "text": "Working"}])),
            json!({"type": "result", "subtype": "success", "is_error": false, "result": "All done"}),
        ]),
        "s.jsonl",
    )
    .unwrap();
    assert_eq!(t.last_agent_message(), Some("All done"));
}

#[test]
fn claude_code_rejects_orphans_results_before_calls_and_duplicates() {
    let orphan = claude_code::read(
        &jsonl(&[user(
            json!([{"type": "tool_result", "tool_use_id": "z", "content": "x"}]),
        )]),
        "o.jsonl",
    )
    .unwrap_err();
    assert!(
        orphan.line == 1 && orphan.message.contains("'z'"),
        "{orphan}"
    );
    let early = claude_code::read(
        &jsonl(&[
            user(json!([{"type": "tool_result", "tool_use_id": "a", "content": "x"}])),
            assistant(json!([{"type": "tool_use", "id": "a", "name": "Bash", "input": {}}])),
        ]),
        "e.jsonl",
    )
    .unwrap_err();
    assert!(early.message.contains("before its call"), "{early}");
    let dup = claude_code::read(
        &jsonl(&[
            assistant(json!([{"type": "tool_use", "id": "a", "name": "Bash", "input": {}}])),
            assistant(json!([{"type": "tool_use", "id": "a", "name": "Bash", "input": {}}])),
        ]),
        "d.jsonl",
    )
    .unwrap_err();
    assert!(dup.line == 2 && dup.message.contains("duplicate"), "{dup}");
    // An id reused after its result arrived is a new call.
    let t = claude_code::read(
        &jsonl(&[
            assistant(json!([{"type": "tool_use", "id": "a", "name": "Bash", "input": {}}])),
            user(json!([{"type": "tool_result", "tool_use_id": "a", "content": "x"}])),
            assistant(json!([{"type": "tool_use", "id": "a", "name": "Bash", "input": {}}])),
        ]),
        "r.jsonl",
    )
    .unwrap();
    assert_eq!(t.calls.len(), 2);
    assert!(
        claude_code::read(b"{not json\n", "b.jsonl")
            .unwrap_err()
            .line
            == 1
    );
}

fn item(kind: &str, payload: Value) -> Value {
    json!({"timestamp": "2026-12-01T10:00:00Z", "type": kind, "payload": payload})
}

#[test]
fn codex_rollout_exit_codes_decide_and_patches_name_files() {
    let t = codex::read(
        &jsonl(&[
            item("session_meta", json!({"id": "s", "cwd": "/r"})),
            item("response_item", json!({"type": "message", "role": "user", "content": [{"type": "input_text", "text": "<environment_context/>"}]})),
            item("event_msg", json!({"type": "user_message", "message": "Fix it"})),
            item("response_item", json!({"type": "function_call", "name": "shell", "arguments": "{\"command\":[\"pytest\"]}", "call_id": "c1"})),
            item("response_item", json!({"type": "function_call", "name": "shell", "arguments": "{\"command\":[\"apply_patch\",\"*** Begin Patch\\n*** Add File: new.py\\n+x\\n*** End Patch\"]}", "call_id": "c2"})),
            item("event_msg", json!({"type": "exec_command_end", "call_id": "c2", "exit_code": 0})),
            item("response_item", json!({"type": "function_call_output", "call_id": "c2", "output": "{\"output\":\"ok\"}"})),
            item("event_msg", json!({"type": "exec_command_end", "call_id": "c1", "exit_code": 1})),
            item("response_item", json!({"type": "function_call_output", "call_id": "c1", "output": "1 failed"})),
            item("response_item", json!({"type": "custom_tool_call", "name": "apply_patch", "call_id": "c3", "input": "*** Begin Patch\n*** Update File: a.py\n*** Move to: b.py\n*** End Patch"})),
            item("response_item", json!({"type": "message", "role": "assistant", "content": [{"type": "output_text", "text": "Fixed."}]})),
        ]),
        "rollout.jsonl",
    )
    .unwrap();
    assert_eq!(t.first_user_message(), Some("Fix it"));
    assert_eq!(t.last_agent_message(), Some("Fixed."));
    let c1 = t.calls[0].outcome.as_ref().unwrap();
    assert!(c1.is_error && c1.status_from == StatusFrom::ExitCode && t.calls[0].shell);
    assert_eq!(t.calls[1].writes, ["new.py"]);
    assert!(!t.calls[1].outcome.as_ref().unwrap().is_error);
    assert_eq!(t.calls[2].writes, ["a.py", "b.py"]);
    assert!(t.calls[2].outcome.is_none(), "interrupted: unfinished");
    let orphan = codex::read(
        &jsonl(&[item(
            "response_item",
            json!({"type": "function_call_output", "call_id": "q", "output": "x"}),
        )]),
        "o",
    )
    .unwrap_err();
    assert!(orphan.message.contains("orphan"));
}

#[test]
fn codex_exec_json_items_pair_by_id() {
    let t = codex::read(
        &jsonl(&[
            json!({"type": "thread.started", "thread_id": "t"}),
            json!({"type": "item.started", "item": {"id": "i1", "type": "command_execution", "command": "pytest", "status": "in_progress"}}),
            json!({"type": "item.started", "item": {"id": "i2", "type": "command_execution", "command": "ls", "status": "in_progress"}}),
            json!({"type": "item.completed", "item": {"id": "i2", "type": "command_execution", "command": "ls", "exit_code": 0, "aggregated_output": "a", "status": "completed"}}),
            json!({"type": "item.completed", "item": {"id": "i1", "type": "command_execution", "command": "pytest", "exit_code": 2, "status": "failed"}}),
            json!({"type": "item.completed", "item": {"id": "i3", "type": "file_change", "changes": [{"path": "calc.py", "kind": "update"}], "status": "completed"}}),
            json!({"type": "item.completed", "item": {"id": "i4", "type": "agent_message", "text": "Done"}}),
        ]),
        "exec.jsonl",
    )
    .unwrap();
    assert_eq!(t.calls.len(), 3);
    assert!(t.calls[0].outcome.as_ref().unwrap().is_error);
    assert!(!t.calls[1].outcome.as_ref().unwrap().is_error);
    assert_eq!(t.calls[2].writes, ["calc.py"]);
    assert_eq!(t.last_agent_message(), Some("Done"));
    let dup = codex::read(
        &jsonl(&[
            json!({"type": "item.started", "item": {"id": "i1", "type": "command_execution"}}),
            json!({"type": "item.started", "item": {"id": "i1", "type": "command_execution"}}),
        ]),
        "d",
    )
    .unwrap_err();
    assert!(dup.message.contains("duplicate"));
}

/// red13: a Codex rollout keeps a shell call's exit code inside the output string
/// (`{"output": …, "metadata": {"exit_code": N}}`, or a header `Exit code: N` /
/// `Process exited with code N` before `Output:`), and `exec_command_end` is not
/// persisted by default — or comes after the output. Each of these failed calls was
/// read as a success; their twins with exit code 0 stay successes.
#[test]
fn codex_exit_codes_in_the_output_or_after_it_decide() {
    let shell = |id: &str| {
        item(
            "response_item",
            json!({"type": "function_call", "name": "shell", "arguments": "{\"command\":[\"pytest\"]}", "call_id": id}),
        )
    };
    let out = |id: &str, output: String| {
        item(
            "response_item",
            json!({"type": "function_call_output", "call_id": id, "output": output}),
        )
    };
    let wrapped = |code: i64| {
        json!({"output": "Output:\nExit code: 0\n", "metadata": {"exit_code": code, "duration_seconds": 0.1}}).to_string()
    };
    for code in [1, 0] {
        let t = codex::read(
            &jsonl(&[
                shell("a"),
                out("a", wrapped(code)),
                shell("b"),
                out("b", format!("Exit code: {code}\nWall time: 0.1 seconds\nOutput:\nExit code: 0\n")),
                shell("c"),
                out("c", format!("Chunk ID: 1\nWall time: 0.1 seconds\nProcess exited with code {code}\nOutput:\nProcess exited with code 0\n")),
                shell("d"),
                out("d", "1 failed".into()),
                item("event_msg", json!({"type": "exec_command_end", "call_id": "d", "exit_code": code})),
            ]),
            "rollout.jsonl",
        )
        .unwrap();
        let o: Vec<_> = t.calls.iter().map(|c| c.outcome.clone().unwrap()).collect();
        for (c, o) in t.calls.iter().zip(&o) {
            assert_eq!(o.is_error, code != 0, "call {} with exit code {code}", c.id);
        }
        assert_eq!(o[0].status_from, StatusFrom::ExitCode);
        assert_eq!(o[1].status_from, StatusFrom::TextExitCode);
        assert_eq!(o[2].status_from, StatusFrom::TextExitCode);
        assert_eq!(o[3].status_from, StatusFrom::ExitCode);
    }
    // What a command prints after `Output:` is its own, never a status.
    let t = codex::read(
        &jsonl(&[shell("e"), out("e", "Output:\nExit code: 1\n".into())]),
        "r",
    )
    .unwrap();
    let o = t.calls[0].outcome.as_ref().unwrap();
    assert_eq!((o.is_error, o.status_from), (false, StatusFrom::Absent));
}
