//! `mcp` (`mcp-jsonrpc@1`): a log of JSON-RPC 2.0 messages. Each `tools/call` request
//! pairs with the response that has its `id`. `result.isError: true` is a tool
//! failure and a JSON-RPC `error` is a failed call. Evidence is
//! `result.structuredContent` when it is an object, else the text content blocks
//! joined, when they form a JSON object; for an `error` response, `{"error": <error>}`.

use std::collections::{HashMap, HashSet};

use serde_json::{Map, Value};

use super::{AdaptError, AdaptedEvent, Pairing, err, evidence_from_text, req_str};

/// A JSON-RPC id as a key that keeps `1` and `"1"` apart, and as display text.
fn id_key(id: &Value, path: &str) -> Result<(String, String), AdaptError> {
    match id {
        Value::String(s) => Ok((format!("s:{s}"), s.clone())),
        Value::Number(n) if n.is_i64() || n.is_u64() => Ok((format!("n:{n}"), n.to_string())),
        _ => err(format!("{path}.id must be a string or an integer")),
    }
}

pub(crate) fn events(payload: &[Value]) -> Result<Vec<AdaptedEvent>, AdaptError> {
    let mut pairing = Pairing::new("tools/call request", "response", true);
    // Requests of any method still waiting for their response (typed key → whether
    // it is a tools/call), so a stray response is caught; an id may be reused once
    // its response has arrived.
    let mut waiting: HashMap<String, bool> = HashMap::new();
    let mut answered: HashSet<String> = HashSet::new();
    // The id as text → its typed key (pairing and output use the text, so `1` and
    // `"1"` in one log would be ambiguous and are refused).
    let mut shown_ids: HashMap<String, String> = HashMap::new();
    for (i, m) in payload.iter().enumerate() {
        let path = format!("messages[{i}]");
        let Value::Object(o) = m else {
            return err(format!("{path} must be an object"));
        };
        if o.get("jsonrpc").and_then(Value::as_str) != Some("2.0") {
            return err(format!("{path}.jsonrpc must be \"2.0\""));
        }
        if let Some(method) = o.get("method") {
            let Value::String(method) = method else {
                return err(format!("{path}.method must be a string"));
            };
            let Some(id) = o.get("id") else { continue }; // a notification
            let (key, shown) = id_key(id, &path)?;
            if waiting.contains_key(&key) {
                return err(format!(
                    "{path}: duplicate request id {shown} (a request with this id is still waiting for its response)"
                ));
            }
            if shown_ids.get(&shown).is_some_and(|k| *k != key) {
                return err(format!(
                    "{path}: request id {shown} is used both as a string and as a number"
                ));
            }
            shown_ids.insert(shown.clone(), key.clone());
            answered.remove(&key);
            let is_tool_call = method == "tools/call";
            if is_tool_call {
                let Some(Value::Object(params)) = o.get("params") else {
                    return err(format!("{path}.params must be an object"));
                };
                let name = req_str(params, "name", &format!("{path}.params.name"))?;
                let arguments = match params.get("arguments") {
                    None => None,
                    Some(Value::Object(a)) => Some(a.clone()),
                    Some(_) => return err(format!("{path}.params.arguments must be an object")),
                };
                pairing.call(shown, name, arguments, &path)?;
            }
            waiting.insert(key, is_tool_call);
            continue;
        }
        let (has_result, has_error) = (o.contains_key("result"), o.contains_key("error"));
        if has_result == has_error {
            return err(format!(
                "{path}: a JSON-RPC message needs a method, or exactly one of result and error"
            ));
        }
        let Some(id) = o.get("id") else {
            return err(format!("{path}.id is missing"));
        };
        if id.is_null() && has_error {
            continue; // an error about an unparseable request: answers no call
        }
        let (key, shown) = id_key(id, &path)?;
        let Some(is_tool_call) = waiting.remove(&key) else {
            if answered.contains(&key) {
                return err(format!("{path}: duplicate response to request {shown}"));
            }
            return err(format!(
                "{path}: response {shown} has no earlier request waiting for it (a response before its request, or an orphan)"
            ));
        };
        answered.insert(key);
        if !is_tool_call {
            continue;
        }
        let (success, evidence) = if has_error {
            let e = &o["error"];
            if !e.is_object() {
                return err(format!("{path}.error must be an object"));
            }
            let mut m = Map::new();
            m.insert("error".into(), e.clone());
            (false, m)
        } else {
            let Value::Object(r) = &o["result"] else {
                return err(format!("{path}.result must be an object"));
            };
            let is_error = match r.get("isError") {
                None | Some(Value::Null) => false,
                Some(Value::Bool(b)) => *b,
                Some(_) => return err(format!("{path}.result.isError must be a boolean")),
            };
            (!is_error, result_evidence(r, &path)?)
        };
        pairing.result(&shown, success, evidence, &path)?;
    }
    pairing.finish()
}

fn result_evidence(r: &Map<String, Value>, path: &str) -> Result<Map<String, Value>, AdaptError> {
    if let Some(Value::Object(s)) = r.get("structuredContent") {
        return Ok(s.clone());
    }
    match r.get("content") {
        None | Some(Value::Null) => Ok(Map::new()),
        Some(Value::Array(parts)) => {
            let mut text = String::new();
            for (k, p) in parts.iter().enumerate() {
                let Value::Object(p) = p else {
                    return err(format!("{path}.result.content[{k}] must be an object"));
                };
                if p.get("type").and_then(Value::as_str) == Some("text") {
                    match p.get("text") {
                        Some(Value::String(t)) => text.push_str(t),
                        _ => {
                            return err(format!(
                                "{path}.result.content[{k}].text must be a string"
                            ));
                        }
                    }
                }
            }
            evidence_from_text(&text, &format!("{path}.result.content"))
        }
        Some(_) => err(format!("{path}.result.content must be an array")),
    }
}
