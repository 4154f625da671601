//! `openai` (`openai-tool-trace@1`): seed 001's simplified OpenAI-style records,
//! `tool_call {tool_call_id, name, arguments?}` and `tool_result {tool_call_id,
//! success, evidence?}` paired by `tool_call_id` in record order. The result's
//! `success` is the log's flag and its `evidence` the result's [`Outcome::data`]. A
//! call with no result is an error here (the peer's rule for its own format).

use serde_json::{Map, Value};

use crate::{Call, Error, Outcome, Pairing, StatusFrom, Trace, doc_err, opt_obj, req_str};

/// Reads the `records` array of an openai tool trace.
pub fn read(records: &[Value], file: &str) -> Result<Trace, Error> {
    let mut trace = Trace::default();
    let mut pairing = Pairing::named("tool_call", "tool_result");
    for (i, r) in records.iter().enumerate() {
        let path = format!("records[{i}]");
        let Value::Object(o) = r else {
            return doc_err(file, format!("{path} must be an object"));
        };
        match o.get("type").and_then(Value::as_str) {
            Some("tool_call") => {
                let id = req_str(o, "tool_call_id", &format!("{path}.tool_call_id"), file)?;
                let name = req_str(o, "name", &format!("{path}.name"), file)?;
                let arguments = opt_obj(o, "arguments", &format!("{path}.arguments"), file)?
                    .map_or(Value::Null, Value::Object);
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
            Some("tool_result") => {
                let id = req_str(o, "tool_call_id", &format!("{path}.tool_call_id"), file)?;
                let success = match o.get("success") {
                    Some(Value::Bool(b)) => *b,
                    _ => return doc_err(file, format!("{path}.success must be a boolean")),
                };
                let evidence = opt_obj(o, "evidence", &format!("{path}.evidence"), file)?;
                let outcome = Outcome {
                    is_error: !success,
                    status_from: StatusFrom::Flag,
                    data: Some(evidence.unwrap_or_else(Map::new)),
                    path: path.clone(),
                    ..Outcome::default()
                };
                if let Err(m) = pairing.result(&mut trace, &id, outcome) {
                    return doc_err(file, format!("{path}: {m}"));
                }
            }
            Some(other) => {
                return doc_err(file, format!("{path}: unsupported record type '{other}'"));
            }
            None => {
                return doc_err(
                    file,
                    format!("{path}: unsupported record type (type must be a string)"),
                );
            }
        }
    }
    pairing
        .require_results(&trace)
        .or_else(|m| doc_err(file, m.to_string()))?;
    Ok(trace)
}
