//! `anthropic` (`anthropic-messages@1`): Messages API transcripts. `tool_use` blocks
//! (assistant turns) pair with `tool_result` blocks (user turns) by `tool_use_id`; the
//! result must come after its call; `is_error: true` is a failure (the log's flag).
//! The result text is its content: a string, or the text blocks joined. A call with no
//! result is unfinished.

use serde_json::Value;

use crate::{
    Call, Error, Message, Outcome, Pairing, Role, StatusFrom, Trace, doc_err, joined_parts, req_str,
};

/// Reads the `messages` array of a Messages API transcript.
pub fn read(messages: &[Value], file: &str) -> Result<Trace, Error> {
    let mut trace = Trace::default();
    let mut pairing = Pairing::named("tool_use", "tool_result");
    for (i, m) in messages.iter().enumerate() {
        let path = format!("messages[{i}]");
        let Value::Object(o) = m else {
            return doc_err(file, format!("{path} must be an object"));
        };
        let role = match o.get("role").and_then(Value::as_str) {
            Some("user") => Role::User,
            Some("assistant") => Role::Agent,
            _ => {
                return doc_err(
                    file,
                    format!("{path}.role must be \"user\" or \"assistant\""),
                );
            }
        };
        let blocks = match o.get("content") {
            Some(Value::String(s)) => {
                trace.messages.push(Message {
                    role,
                    text: s.clone(),
                    line: 0,
                });
                continue;
            }
            Some(Value::Array(b)) => b,
            _ => {
                return doc_err(
                    file,
                    format!("{path}.content must be a string or an array of blocks"),
                );
            }
        };
        let mut texts = Vec::new();
        for (j, b) in blocks.iter().enumerate() {
            let bpath = format!("{path}.content[{j}]");
            let Value::Object(b) = b else {
                return doc_err(file, format!("{bpath} must be an object"));
            };
            match b.get("type").and_then(Value::as_str) {
                Some("tool_use") => {
                    if role != Role::Agent {
                        return doc_err(
                            file,
                            format!("{bpath}: tool_use outside an assistant message"),
                        );
                    }
                    let id = req_str(b, "id", &format!("{bpath}.id"), file)?;
                    let name = req_str(b, "name", &format!("{bpath}.name"), file)?;
                    let arguments = match b.get("input") {
                        None => Value::Null,
                        Some(v @ Value::Object(_)) => v.clone(),
                        Some(_) => {
                            return doc_err(file, format!("{bpath}.input must be an object"));
                        }
                    };
                    let call = Call {
                        id,
                        name,
                        arguments,
                        path: bpath.clone(),
                        ..Call::default()
                    };
                    if let Err(m) = pairing.call(&mut trace, call) {
                        return doc_err(file, format!("{bpath}: {m}"));
                    }
                }
                Some("tool_result") => {
                    if role != Role::User {
                        return doc_err(
                            file,
                            format!("{bpath}: tool_result outside a user message"),
                        );
                    }
                    let id = req_str(b, "tool_use_id", &format!("{bpath}.tool_use_id"), file)?;
                    let (is_error, status_from) = match b.get("is_error") {
                        None | Some(Value::Null) => (false, StatusFrom::Absent),
                        Some(Value::Bool(e)) => (*e, StatusFrom::Flag),
                        Some(_) => {
                            return doc_err(file, format!("{bpath}.is_error must be a boolean"));
                        }
                    };
                    let cpath = format!("{bpath}.content");
                    let text = match b.get("content") {
                        None | Some(Value::Null) => String::new(),
                        Some(Value::String(s)) => s.clone(),
                        Some(Value::Array(parts)) => joined_parts(parts, &["text"], &cpath, file)?,
                        Some(_) => {
                            return doc_err(
                                file,
                                format!("{cpath} must be a string or an array of blocks"),
                            );
                        }
                    };
                    let outcome = Outcome {
                        is_error,
                        status_from,
                        text,
                        path: cpath,
                        ..Outcome::default()
                    };
                    if let Err(m) = pairing.result(&mut trace, &id, outcome) {
                        return doc_err(file, format!("{bpath}: {m}"));
                    }
                }
                Some("text") => {
                    if let Some(t) = b.get("text").and_then(Value::as_str) {
                        texts.push(t);
                    }
                }
                Some(_) => {} // thinking, image, server tools: not client tool calls
                None => return doc_err(file, format!("{bpath}.type must be a string")),
            }
        }
        if !texts.is_empty() {
            trace.messages.push(Message {
                role,
                text: texts.join("\n"),
                line: 0,
            });
        }
    }
    Ok(trace)
}
