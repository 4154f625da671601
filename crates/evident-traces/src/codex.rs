//! Codex: rollout JSONL (`~/.codex/sessions/YYYY/MM/DD/rollout-*.jsonl`: lines
//! `{timestamp, type, payload}` with `type` `session_meta`, `turn_context`,
//! `response_item` — payload `message {role, content}`, `function_call {name,
//! arguments, call_id}`, `function_call_output {call_id, output}`, `custom_tool_call
//! {name, input, call_id}`, `custom_tool_call_output {call_id, output}` — and
//! `event_msg` — `user_message {message}`, `agent_message {message}`,
//! `exec_command_end {call_id, exit_code}`, `patch_apply_end {call_id, success}`),
//! and `codex exec --json` events (`item.started` / `item.completed` with an `item`
//! of type `agent_message {text}`, `command_execution {command, exit_code, status}`,
//! `file_change {changes: [{path, kind}], status}`). The variant is detected per line.
//!
//! In rollouts the user's words are the `event_msg` `user_message` (Codex injects
//! environment context and instructions as `response_item` user messages, which are
//! skipped). A shell call's status: the exit code of its `exec_command_end` (before or
//! after the output: that event is persisted only in some modes), else the
//! `metadata.exit_code` of the JSON Codex wraps the output in, else `success`, else
//! the `Exit code: N` / `Process exited with code N` header above `Output:` (a text
//! convention, recorded as [`StatusFrom::TextExitCode`]).

use serde_json::Value;

use crate::{
    Call, Error, Message, Outcome, Pairing, Role, StatusFrom, Trace, lines, patch_paths, text_of,
};

/// Reads a Codex rollout or `codex exec --json` output, either variant line by line
/// (`file` names it in errors, with the line).
pub fn read(bytes: &[u8], file: &str) -> Result<Trace, Error> {
    let mut trace = Trace::default();
    let mut pairing = Pairing::default();
    let mut exit_codes: std::collections::HashMap<String, i64> = Default::default();
    let err = |line: usize, message: String| Error {
        file: file.into(),
        line,
        message,
    };
    for item in lines(bytes, file)? {
        let (line, v) = item?;
        let kind = v.get("type").and_then(Value::as_str).unwrap_or("");
        match kind {
            "response_item" | "event_msg" => {
                let p = v.get("payload").unwrap_or(&Value::Null);
                let ptype = p.get("type").and_then(Value::as_str).unwrap_or("");
                let call_id = || {
                    p.get("call_id")
                        .and_then(Value::as_str)
                        .map(str::to_string)
                        .ok_or_else(|| err(line, format!("a {ptype} has no call_id")))
                };
                match (kind, ptype) {
                    ("response_item", "message")
                        if p.get("role").and_then(Value::as_str) == Some("assistant") =>
                    {
                        let t = text_of(p.get("content").unwrap_or(&Value::Null));
                        if !t.is_empty() {
                            trace.messages.push(Message {
                                role: Role::Agent,
                                text: t,
                                line,
                            });
                        }
                    }
                    ("event_msg", "user_message") => {
                        if let Some(t) = p.get("message").and_then(Value::as_str) {
                            trace.messages.push(Message {
                                role: Role::User,
                                text: t.into(),
                                line,
                            });
                        }
                    }
                    (
                        "response_item",
                        "function_call" | "custom_tool_call" | "local_shell_call",
                    ) => {
                        let name = p
                            .get("name")
                            .and_then(Value::as_str)
                            .unwrap_or(if ptype == "local_shell_call" {
                                "local_shell"
                            } else {
                                ""
                            })
                            .to_string();
                        let arguments = match p
                            .get("arguments")
                            .or_else(|| p.get("input"))
                            .or_else(|| p.get("action"))
                        {
                            // function_call arguments are a JSON string.
                            Some(Value::String(s)) if ptype == "function_call" => {
                                serde_json::from_str(s).unwrap_or(Value::String(s.clone()))
                            }
                            Some(x) => x.clone(),
                            None => Value::Null,
                        };
                        let patch = match &arguments {
                            Value::String(s) if name == "apply_patch" => Some(s.clone()),
                            Value::Object(o) if name == "apply_patch" => {
                                o.get("input").and_then(Value::as_str).map(str::to_string)
                            }
                            Value::Object(o) => {
                                o.get("command").and_then(Value::as_array).and_then(|c| {
                                    (c.first().and_then(Value::as_str) == Some("apply_patch"))
                                        .then(|| {
                                            c.get(1).and_then(Value::as_str).map(str::to_string)
                                        })
                                        .flatten()
                                })
                            }
                            _ => None,
                        };
                        let writes = patch.as_deref().map(patch_paths).unwrap_or_default();
                        let shell = writes.is_empty()
                            && matches!(
                                name.as_str(),
                                "shell"
                                    | "local_shell"
                                    | "exec_command"
                                    | "container.exec"
                                    | "shell_command"
                            );
                        pairing
                            .call(
                                &mut trace,
                                Call {
                                    id: call_id()?,
                                    name,
                                    arguments,
                                    line,
                                    outcome: None,
                                    writes,
                                    shell,
                                    subagent: false,
                                    time: crate::timestamp(&v),
                                    ..Call::default()
                                },
                            )
                            .map_err(|m| err(line, m.to_string()))?;
                    }
                    (
                        "response_item",
                        "function_call_output"
                        | "custom_tool_call_output"
                        | "local_shell_call_output",
                    ) => {
                        let id = call_id()?;
                        let out = p.get("output").unwrap_or(&Value::Null);
                        let (text, flag) = match out {
                            Value::Object(o) => (
                                text_of(o.get("content").unwrap_or(&Value::Null)),
                                o.get("success").and_then(Value::as_bool).map(|s| !s),
                            ),
                            other => (text_of(other), None),
                        };
                        // Codex's own wrapper of a shell call's output:
                        // {"output": …, "metadata": {"exit_code": N, …}} as a string.
                        let (is_error, status_from) =
                            match (exit_codes.get(&id), wrapped_exit_code(&text), flag) {
                                (Some(c), _, _) => (*c != 0, StatusFrom::ExitCode),
                                (None, Some(c), _) => (c != 0, StatusFrom::ExitCode),
                                (None, None, Some(e)) => (e, StatusFrom::Flag),
                                (None, None, None) => match header_exit_code(&text) {
                                    Some(c) => (c != 0, StatusFrom::TextExitCode),
                                    None => (false, StatusFrom::Absent),
                                },
                            };
                        pairing
                            .result(
                                &mut trace,
                                &id,
                                Outcome {
                                    is_error,
                                    status_from,
                                    text,
                                    line,
                                    time: crate::timestamp(&v),
                                    ..Outcome::default()
                                },
                            )
                            .map_err(|m| err(line, m.to_string()))?;
                    }
                    ("event_msg", "exec_command_end") => {
                        if let Some(c) = p.get("exit_code").and_then(Value::as_i64) {
                            let id = call_id()?;
                            // The end event may be written after the output: the exit
                            // code still decides the call it ends.
                            match trace
                                .calls
                                .iter_mut()
                                .rev()
                                .find(|k| k.id == id)
                                .and_then(|k| k.outcome.as_mut())
                            {
                                Some(o) => {
                                    o.is_error = c != 0;
                                    o.status_from = StatusFrom::ExitCode;
                                }
                                None => {
                                    exit_codes.insert(id, c);
                                }
                            }
                        }
                    }
                    _ => {}
                }
            }
            "item.started" | "item.completed" => {
                let it = v
                    .get("item")
                    .ok_or_else(|| err(line, format!("a {kind} event has no item")))?;
                let id = it
                    .get("id")
                    .and_then(Value::as_str)
                    .ok_or_else(|| err(line, "an item has no id".into()))?
                    .to_string();
                let itype = it.get("type").and_then(Value::as_str).unwrap_or("");
                if itype == "agent_message" {
                    if kind == "item.completed"
                        && let Some(t) = it.get("text").and_then(Value::as_str)
                    {
                        trace.messages.push(Message {
                            role: Role::Agent,
                            text: t.into(),
                            line,
                        });
                    }
                    continue;
                }
                if !matches!(
                    itype,
                    "command_execution" | "file_change" | "mcp_tool_call" | "web_search"
                ) {
                    continue;
                }
                // An item completed without being started is one event: call and result.
                if kind == "item.started"
                    || !trace
                        .calls
                        .iter()
                        .any(|c| c.id == id && c.outcome.is_none())
                {
                    let writes = it
                        .get("changes")
                        .and_then(Value::as_array)
                        .map(|a| {
                            a.iter()
                                .filter_map(|c| {
                                    c.get("path").and_then(Value::as_str).map(str::to_string)
                                })
                                .collect()
                        })
                        .unwrap_or_default();
                    pairing
                        .call(
                            &mut trace,
                            Call {
                                id: id.clone(),
                                name: itype.to_string(),
                                arguments: it.clone(),
                                line,
                                outcome: None,
                                writes,
                                shell: itype == "command_execution",
                                subagent: false,
                                ..Call::default()
                            },
                        )
                        .map_err(|m| err(line, m.to_string()))?;
                }
                if kind == "item.completed" {
                    let status = it.get("status").and_then(Value::as_str);
                    let (is_error, status_from) =
                        match (it.get("exit_code").and_then(Value::as_i64), status) {
                            (Some(c), _) => (c != 0, StatusFrom::ExitCode),
                            (None, Some(s)) => (s != "completed", StatusFrom::Flag),
                            (None, None) => (false, StatusFrom::Absent),
                        };
                    let text = it.get("aggregated_output").map(text_of).unwrap_or_default();
                    pairing
                        .result(
                            &mut trace,
                            &id,
                            Outcome {
                                is_error,
                                status_from,
                                text,
                                line,
                                ..Outcome::default()
                            },
                        )
                        .map_err(|m| err(line, m.to_string()))?;
                }
            }
            _ => {}
        }
    }
    Ok(trace)
}

/// The exit code in Codex's JSON wrapper of a shell call's output (`{"output": …,
/// "metadata": {"exit_code": N}}`, serialised into the output string).
fn wrapped_exit_code(text: &str) -> Option<i64> {
    if !text.trim_start().starts_with('{') {
        return None;
    }
    let v: Value = serde_json::from_str(text).ok()?;
    v.get("metadata")?.get("exit_code")?.as_i64()
}

/// The exit code in the header Codex writes before a command's output (`Exit code: N`
/// as the first line, or `Process exited with code N` among the header lines before
/// `Output:`). Only the header is read: what follows `Output:` is the command's own.
fn header_exit_code(text: &str) -> Option<i64> {
    for (i, l) in text.lines().enumerate() {
        let l = l.trim_end();
        if l == "Output:" {
            break;
        }
        if i == 0
            && let Some(n) = l.strip_prefix("Exit code: ")
        {
            return n.trim().parse().ok();
        }
        if let Some(n) = l.strip_prefix("Process exited with code ") {
            return n.trim().parse().ok();
        }
        if i >= 8 {
            break;
        }
    }
    None
}
