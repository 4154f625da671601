//! Claude Code: the session transcript JSONL (`~/.claude/projects/<project>/<session>.jsonl`)
//! and `claude -p --output-format stream-json` output. Both hold one JSON object a
//! line; `type: "user" | "assistant"` lines carry an Anthropic `message` whose content
//! is a string or blocks: assistant `tool_use {id, name, input}`, user `tool_result
//! {tool_use_id, content, is_error}` (the transcript also keeps `toolUseResult` beside
//! it, which is not needed here). `isSidechain: true` marks a subagent's lines; lines
//! with `isMeta: true` are injected by Claude Code, not typed by the user. stream-json
//! ends with a `type: "result"` line whose `result` is the final text. Other line types
//! (`summary`, `system`, `file-history-snapshot`, ...) are skipped.

use serde_json::Value;

use crate::{
    Call, Error, Message, Outcome, Pairing, Role, StatusFrom, Trace, line_err, lines, text_of,
};

/// Tools that write the file named in their input.
const WRITERS: &[(&str, &str)] = &[
    ("Write", "file_path"),
    ("Edit", "file_path"),
    ("MultiEdit", "file_path"),
    ("NotebookEdit", "notebook_path"),
];

/// Reads a Claude Code transcript or stream-json output (`file` names it in errors,
/// with the line); a sidechain's calls are kept and marked [`Call::subagent`], but no
/// sidechain or injected (`isMeta`) text becomes a message.
pub fn read(bytes: &[u8], file: &str) -> Result<Trace, Error> {
    let mut trace = Trace::default();
    let mut pairing = Pairing::default();
    for item in lines(bytes, file)? {
        let (line, v) = item?;
        let kind = v.get("type").and_then(Value::as_str).unwrap_or("");
        let sidechain = v.get("isSidechain").and_then(Value::as_bool) == Some(true);
        match kind {
            "user" | "assistant" => {}
            "result" => {
                if let Some(t) = v.get("result").and_then(Value::as_str) {
                    trace.messages.push(Message {
                        role: Role::Agent,
                        text: t.to_string(),
                        line,
                    });
                }
                continue;
            }
            _ => continue,
        }
        let Some(message) = v.get("message") else {
            return Err(Error {
                file: file.into(),
                line,
                message: format!("a {kind} line has no message"),
            });
        };
        let content = message.get("content").unwrap_or(&Value::Null);
        let meta = v.get("isMeta").and_then(Value::as_bool) == Some(true);
        let blocks: Vec<Value> = match content {
            Value::String(s) => vec![serde_json::json!({"type": "text", "text": s})],
            Value::Array(a) => a.clone(),
            _ => Vec::new(),
        };
        let mut texts = Vec::new();
        for b in &blocks {
            match b.get("type").and_then(Value::as_str) {
                Some("text") => {
                    if let Some(t) = b.get("text").and_then(Value::as_str) {
                        texts.push(t.to_string());
                    }
                }
                Some("tool_use") if kind == "assistant" => {
                    let id = b.get("id").and_then(Value::as_str).ok_or_else(|| Error {
                        file: file.into(),
                        line,
                        message: "a tool_use block has no id".into(),
                    })?;
                    let name = b
                        .get("name")
                        .and_then(Value::as_str)
                        .unwrap_or("")
                        .to_string();
                    let input = b.get("input").cloned().unwrap_or(Value::Null);
                    let writes = WRITERS
                        .iter()
                        .filter(|(n, _)| *n == name)
                        .filter_map(|(_, k)| input.get(*k).and_then(Value::as_str))
                        .map(str::to_string)
                        .collect();
                    pairing
                        .call(
                            &mut trace,
                            Call {
                                id: id.to_string(),
                                shell: name == "Bash",
                                name,
                                arguments: input,
                                line,
                                outcome: None,
                                writes,
                                subagent: sidechain,
                                time: crate::timestamp(&v),
                                ..Call::default()
                            },
                        )
                        .map_err(|m| line_err(file, line, m.to_string()))?;
                }
                Some("tool_result") if kind == "user" => {
                    let id = b
                        .get("tool_use_id")
                        .and_then(Value::as_str)
                        .ok_or_else(|| Error {
                            file: file.into(),
                            line,
                            message: "a tool_result block has no tool_use_id".into(),
                        })?;
                    let (is_error, status_from) = match b.get("is_error").and_then(Value::as_bool) {
                        Some(e) => (e, StatusFrom::Flag),
                        None => (false, StatusFrom::Absent),
                    };
                    pairing
                        .result(
                            &mut trace,
                            id,
                            Outcome {
                                is_error,
                                status_from,
                                text: text_of(b.get("content").unwrap_or(&Value::Null)),
                                line,
                                time: crate::timestamp(&v),
                                ..Outcome::default()
                            },
                        )
                        .map_err(|m| line_err(file, line, m.to_string()))?;
                }
                _ => {}
            }
        }
        if !(texts.is_empty() || meta || sidechain) {
            trace.messages.push(Message {
                role: if kind == "user" {
                    Role::User
                } else {
                    Role::Agent
                },
                text: texts.join("\n"),
                line,
            });
        }
    }
    Ok(trace)
}
