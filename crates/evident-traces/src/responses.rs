//! `openai-responses` (`openai-responses@1`): Responses API items. `function_call`
//! pairs with a later `function_call_output` by `call_id`. The format has no success
//! flag, so: a call whose `status` is `"incomplete"` failed (the log's status), and an
//! output that is a JSON object with an `error` member other than `null` or `false`
//! failed (a convention, recorded as [`StatusFrom::Convention`]); everything else
//! succeeded. A call with no output is unfinished.

use std::collections::HashSet;

use serde_json::Value;

use crate::{
    Call, Error, Message, Outcome, Pairing, Role, StatusFrom, Trace, arguments_from_text, doc_err,
    joined_parts, req_str,
};

/// Reads the `items` array of a Responses API log.
pub fn read(items: &[Value], file: &str) -> Result<Trace, Error> {
    let mut trace = Trace::default();
    let mut pairing = Pairing::named("function_call", "function_call_output");
    let mut incomplete = HashSet::new();
    for (i, item) in items.iter().enumerate() {
        let path = format!("items[{i}]");
        let Value::Object(o) = item else {
            return doc_err(file, format!("{path} must be an object"));
        };
        match o.get("type").and_then(Value::as_str) {
            Some("function_call") => {
                let id = req_str(o, "call_id", &format!("{path}.call_id"), file)?;
                let name = req_str(o, "name", &format!("{path}.name"), file)?;
                let arguments = match o.get("arguments") {
                    None => Value::Null,
                    Some(Value::String(t)) => {
                        arguments_from_text(t, &format!("{path}.arguments"), file)?
                    }
                    Some(_) => return doc_err(file, format!("{path}.arguments must be a string")),
                };
                match o.get("status") {
                    None | Some(Value::Null) => {}
                    Some(Value::String(s)) if s == "incomplete" => {
                        incomplete.insert(id.clone());
                    }
                    Some(Value::String(s)) if s == "completed" || s == "in_progress" => {}
                    Some(_) => {
                        return doc_err(
                            file,
                            format!(
                                "{path}.status must be \"completed\", \"in_progress\" or \"incomplete\""
                            ),
                        );
                    }
                }
                let call = Call {
                    id,
                    name,
                    arguments,
                    path: path.clone(),
                    ..Call::default()
                };
                if let Err(m) = pairing.call(&mut trace, call) {
                    return doc_err(file, format!("{path}: {m}"));
                }
            }
            Some("function_call_output") => {
                let id = req_str(o, "call_id", &format!("{path}.call_id"), file)?;
                let opath = format!("{path}.output");
                let text = match o.get("output") {
                    Some(Value::String(s)) => s.clone(),
                    Some(Value::Array(parts)) => {
                        joined_parts(parts, &["input_text", "output_text", "text"], &opath, file)?
                    }
                    _ => {
                        return doc_err(
                            file,
                            format!("{opath} must be a string or an array of content parts"),
                        );
                    }
                };
                let (is_error, status_from) = if incomplete.remove(&id) {
                    (true, StatusFrom::Flag)
                } else if error_member(&text) {
                    (true, StatusFrom::Convention)
                } else {
                    (false, StatusFrom::Absent)
                };
                let outcome = Outcome {
                    is_error,
                    status_from,
                    text,
                    path: opath,
                    ..Outcome::default()
                };
                if let Err(m) = pairing.result(&mut trace, &id, outcome) {
                    return doc_err(file, format!("{path}: {m}"));
                }
            }
            Some("message") => {
                let role = match o.get("role").and_then(Value::as_str) {
                    Some("user") => Role::User,
                    Some("assistant") => Role::Agent,
                    _ => continue, // system, developer
                };
                let text = match o.get("content") {
                    Some(Value::String(s)) => s.clone(),
                    Some(Value::Array(parts)) => parts
                        .iter()
                        .filter_map(|p| p.get("text").and_then(Value::as_str))
                        .collect::<Vec<_>>()
                        .join("\n"),
                    _ => String::new(),
                };
                if !text.is_empty() {
                    trace.messages.push(Message {
                        role,
                        text,
                        line: 0,
                    });
                }
            }
            Some(_) => {} // reasoning, hosted tools: not function calls
            None => return doc_err(file, format!("{path}.type must be a string")),
        }
    }
    Ok(trace)
}

/// Whether the output is a JSON object whose `error` member is neither `null` nor `false`.
fn error_member(text: &str) -> bool {
    if !text.trim_start().starts_with('{') {
        return false;
    }
    match serde_json::from_str::<Value>(text) {
        Ok(Value::Object(o)) => o
            .get("error")
            .is_some_and(|e| !matches!(e, Value::Null | Value::Bool(false))),
        _ => false,
    }
}
