//! `openai-chat` (`openai-chat@1`): the Chat Completions message lists that
//! OpenAI-compatible frameworks record. `assistant` messages carry `tool_calls[]`
//! (`id`, `function.name`, `function.arguments` as JSON text); `tool` messages answer
//! one by `tool_call_id`. Ids are reused after their result in real logs, which is a
//! new call. The format has no error flag: a result whose content starts with one of
//! the caller's `error_prefixes` failed ([`StatusFrom::Convention`]); without one every
//! result succeeds. A call with no result is unfinished.

use serde_json::Value;

use crate::{
    Call, Error, Message, Outcome, Pairing, Role, StatusFrom, Trace, arguments_from_text, doc_err,
    joined_parts, req_str,
};

/// Reads a chat message list.
pub fn read(messages: &[Value], error_prefixes: &[String], file: &str) -> Result<Trace, Error> {
    let mut trace = Trace::default();
    let mut pairing = Pairing::named("tool call", "tool message");
    for (i, m) in messages.iter().enumerate() {
        let path = format!("messages[{i}]");
        let Value::Object(o) = m else {
            return doc_err(file, format!("{path} must be an object"));
        };
        let role = match o.get("role") {
            Some(Value::String(r)) => r.as_str(),
            _ => return doc_err(file, format!("{path}.role must be a string")),
        };
        match role {
            "system" | "developer" => {}
            "user" => {
                if let Some(Value::String(t)) = o.get("content") {
                    trace.messages.push(Message {
                        role: Role::User,
                        text: t.clone(),
                        line: 0,
                    });
                }
            }
            "assistant" => {
                if o.get("function_call").is_some_and(|f| !f.is_null()) {
                    return doc_err(
                        file,
                        format!(
                            "{path}: the legacy function_call is not supported (it has no id to pair its result by); hint: record tool_calls"
                        ),
                    );
                }
                if let Some(Value::String(t)) = o.get("content")
                    && !t.is_empty()
                {
                    trace.messages.push(Message {
                        role: Role::Agent,
                        text: t.clone(),
                        line: 0,
                    });
                }
                let calls = match o.get("tool_calls") {
                    None | Some(Value::Null) => continue,
                    Some(Value::Array(c)) => c,
                    Some(_) => return doc_err(file, format!("{path}.tool_calls must be an array")),
                };
                for (j, c) in calls.iter().enumerate() {
                    let cpath = format!("{path}.tool_calls[{j}]");
                    let Value::Object(c) = c else {
                        return doc_err(file, format!("{cpath} must be an object"));
                    };
                    match c.get("type") {
                        None => {}
                        Some(Value::String(t)) if t == "function" => {}
                        Some(_) => {
                            return doc_err(
                                file,
                                format!("{cpath}.type: only \"function\" tool calls are supported"),
                            );
                        }
                    }
                    let id = req_str(c, "id", &format!("{cpath}.id"), file)?;
                    let Some(Value::Object(f)) = c.get("function") else {
                        return doc_err(file, format!("{cpath}.function must be an object"));
                    };
                    let name = req_str(f, "name", &format!("{cpath}.function.name"), file)?;
                    let arguments = match f.get("arguments") {
                        None | Some(Value::Null) => Value::Null,
                        Some(Value::String(t)) => {
                            arguments_from_text(t, &format!("{cpath}.function.arguments"), file)?
                        }
                        Some(_) => {
                            return doc_err(
                                file,
                                format!("{cpath}.function.arguments must be a string (JSON text)"),
                            );
                        }
                    };
                    let call = Call {
                        id,
                        name,
                        arguments,
                        path: cpath.clone(),
                        ..Call::default()
                    };
                    if let Err(m) = pairing.call(&mut trace, call) {
                        return doc_err(file, format!("{cpath}: {m}"));
                    }
                }
            }
            "tool" => {
                let id = req_str(o, "tool_call_id", &format!("{path}.tool_call_id"), file)?;
                let text = match o.get("content") {
                    None | Some(Value::Null) => String::new(),
                    Some(Value::String(s)) => s.clone(),
                    Some(Value::Array(parts)) => {
                        joined_parts(parts, &["text"], &format!("{path}.content"), file)?
                    }
                    Some(_) => {
                        return doc_err(
                            file,
                            format!(
                                "{path}.content must be a string, an array of text parts, or null"
                            ),
                        );
                    }
                };
                let failed = error_prefixes.iter().any(|p| text.starts_with(p.as_str()));
                let outcome = Outcome {
                    is_error: failed,
                    status_from: if failed {
                        StatusFrom::Convention
                    } else {
                        StatusFrom::Absent
                    },
                    text,
                    path: format!("{path}.content"),
                    ..Outcome::default()
                };
                if let Err(m) = pairing.result(&mut trace, &id, outcome) {
                    return doc_err(file, format!("{path}: {m}"));
                }
            }
            "function" => {
                return doc_err(
                    file,
                    format!(
                        "{path}: the legacy function role is not supported (it has no id to pair by); hint: record tool messages"
                    ),
                );
            }
            other => {
                let shown: String = other.chars().take(40).collect();
                return doc_err(
                    file,
                    format!(
                        "{path}.role '{shown}' is not a chat role (system, developer, user, assistant, tool)"
                    ),
                );
            }
        }
    }
    Ok(trace)
}
