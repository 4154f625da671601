//! `openai` (`openai-tool-trace@1`): the peer's simplified OpenAI-style records,
//! `tool_call` and `tool_result` paired by `tool_call_id` in record order (a result
//! before its call is refused; the peer's own traces are all in order), events in
//! call order.

use serde_json::Value;

use super::{AdaptError, AdaptedEvent, Pairing, err, opt_obj, req_str};

pub(crate) fn events(payload: &[Value]) -> Result<Vec<AdaptedEvent>, AdaptError> {
    let mut pairing = Pairing::new("tool_call", "tool_result", false);
    for (i, r) in payload.iter().enumerate() {
        let path = format!("records[{i}]");
        let Value::Object(o) = r else {
            return err(format!("{path} must be an object"));
        };
        match o.get("type").and_then(Value::as_str) {
            Some("tool_call") => {
                let id = req_str(o, "tool_call_id", &format!("{path}.tool_call_id"))?;
                let name = req_str(o, "name", &format!("{path}.name"))?;
                // Arguments never become evidence.
                let arguments = match o.get("arguments") {
                    None => None,
                    Some(_) => Some(opt_obj(o, "arguments", &format!("{path}.arguments"))?),
                };
                pairing.call(id, name, arguments, &path)?;
            }
            Some("tool_result") => {
                let id = req_str(o, "tool_call_id", &format!("{path}.tool_call_id"))?;
                let success = match o.get("success") {
                    Some(Value::Bool(b)) => *b,
                    _ => return err(format!("{path}.success must be a boolean")),
                };
                let evidence = opt_obj(o, "evidence", &format!("{path}.evidence"))?;
                pairing.result(&id, success, evidence, &path)?;
            }
            Some(other) => return err(format!("{path}: unsupported record type '{other}'")),
            None => {
                return err(format!(
                    "{path}: unsupported record type (type must be a string)"
                ));
            }
        }
    }
    pairing.finish()
}
