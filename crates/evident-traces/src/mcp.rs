//! `mcp` (`mcp-jsonrpc@1`): a log of JSON-RPC 2.0 messages. Each `tools/call` request
//! pairs with the response that has its `id`. `result.isError: true` is a tool
//! failure and a JSON-RPC `error` is a failed call (both the log's flag). The result
//! is `result.structuredContent` when it is an object ([`Outcome::data`]), else the
//! text content blocks joined; for an `error` response, `{"error": <error>}` as data.
//! Requests of every method pair with their responses by the shared rules ([`Ids`]), so
//! a stray response is caught; a `tools/call` with no response is unfinished.

use std::collections::HashMap;

use serde_json::{Map, Value};

use crate::{Broken, Call, Error, Ids, Outcome, StatusFrom, Trace, doc_err, joined_parts, req_str};

/// Marks a request that is not a `tools/call` in the id pairing.
const NOT_A_TOOL_CALL: usize = usize::MAX;

/// A JSON-RPC id as a key that keeps `1` and `"1"` apart, and as display text.
fn id_key(id: &Value, path: &str, file: &str) -> Result<(String, String), Error> {
    match id {
        Value::String(s) => Ok((format!("s:{s}"), s.clone())),
        Value::Number(n) if n.is_i64() || n.is_u64() => Ok((format!("n:{n}"), n.to_string())),
        _ => doc_err(file, format!("{path}.id must be a string or an integer")),
    }
}

/// Reads the `messages` array of a JSON-RPC log.
pub fn read(messages: &[Value], file: &str) -> Result<Trace, Error> {
    let mut trace = Trace::default();
    // Every request by its typed key → the index of its call in the trace.
    let mut ids = Ids::default();
    // The id as text → its typed key (the trace uses the text, so `1` and `"1"` in
    // one log would be ambiguous and are refused).
    let mut shown_ids: HashMap<String, String> = HashMap::new();
    for (i, m) in messages.iter().enumerate() {
        let path = format!("messages[{i}]");
        let Value::Object(o) = m else {
            return doc_err(file, format!("{path} must be an object"));
        };
        if o.get("jsonrpc").and_then(Value::as_str) != Some("2.0") {
            return doc_err(file, format!("{path}.jsonrpc must be \"2.0\""));
        }
        if let Some(method) = o.get("method") {
            let Value::String(method) = method else {
                return doc_err(file, format!("{path}.method must be a string"));
            };
            let Some(id) = o.get("id") else { continue }; // a notification
            let (key, shown) = id_key(id, &path, file)?;
            let is_tool_call = method == "tools/call";
            let index = if is_tool_call {
                trace.calls.len()
            } else {
                NOT_A_TOOL_CALL
            };
            if ids.call(&key, index).is_err() {
                return doc_err(
                    file,
                    format!(
                        "{path}: duplicate request id {shown} (a request with this id is still waiting for its response)"
                    ),
                );
            }
            if shown_ids.get(&shown).is_some_and(|k| *k != key) {
                return doc_err(
                    file,
                    format!("{path}: request id {shown} is used both as a string and as a number"),
                );
            }
            shown_ids.insert(shown.clone(), key);
            if is_tool_call {
                let Some(Value::Object(params)) = o.get("params") else {
                    return doc_err(file, format!("{path}.params must be an object"));
                };
                let name = req_str(params, "name", &format!("{path}.params.name"), file)?;
                let arguments = match params.get("arguments") {
                    None => Value::Null,
                    Some(a @ Value::Object(_)) => a.clone(),
                    Some(_) => {
                        return doc_err(file, format!("{path}.params.arguments must be an object"));
                    }
                };
                trace.calls.push(Call {
                    id: shown,
                    name,
                    arguments,
                    path,
                    ..Call::default()
                });
            }
            continue;
        }
        let (has_result, has_error) = (o.contains_key("result"), o.contains_key("error"));
        if has_result == has_error {
            return doc_err(
                file,
                format!(
                    "{path}: a JSON-RPC message needs a method, or exactly one of result and error"
                ),
            );
        }
        let Some(id) = o.get("id") else {
            return doc_err(file, format!("{path}.id is missing"));
        };
        if id.is_null() && has_error {
            continue; // an error about an unparseable request: answers no call
        }
        let (key, shown) = id_key(id, &path, file)?;
        let index = match ids.result(&key) {
            Ok(i) => i,
            Err(Broken::SecondResult) => {
                return doc_err(
                    file,
                    format!("{path}: duplicate response to request {shown}"),
                );
            }
            Err(_) => {
                return doc_err(
                    file,
                    format!(
                        "{path}: response {shown} has no earlier request waiting for it (a response before its request, or an orphan)"
                    ),
                );
            }
        };
        if index == NOT_A_TOOL_CALL {
            continue;
        }
        let outcome = if has_error {
            let e = &o["error"];
            if !e.is_object() {
                return doc_err(file, format!("{path}.error must be an object"));
            }
            let mut data = Map::new();
            data.insert("error".into(), e.clone());
            Outcome {
                is_error: true,
                status_from: StatusFrom::Flag,
                data: Some(data),
                path: format!("{path}.error"),
                ..Outcome::default()
            }
        } else {
            let Value::Object(r) = &o["result"] else {
                return doc_err(file, format!("{path}.result must be an object"));
            };
            let (is_error, status_from) = match r.get("isError") {
                None | Some(Value::Null) => (false, StatusFrom::Absent),
                Some(Value::Bool(b)) => (*b, StatusFrom::Flag),
                Some(_) => {
                    return doc_err(file, format!("{path}.result.isError must be a boolean"));
                }
            };
            let cpath = format!("{path}.result.content");
            let (text, data) = match r.get("structuredContent") {
                Some(Value::Object(s)) => (String::new(), Some(s.clone())),
                _ => match r.get("content") {
                    None | Some(Value::Null) => (String::new(), None),
                    Some(Value::Array(parts)) => {
                        (joined_parts(parts, &["text"], &cpath, file)?, None)
                    }
                    Some(_) => return doc_err(file, format!("{cpath} must be an array")),
                },
            };
            Outcome {
                is_error,
                status_from,
                text,
                data,
                path: cpath,
                ..Outcome::default()
            }
        };
        trace.calls[index].outcome = Some(outcome);
    }
    Ok(trace)
}
