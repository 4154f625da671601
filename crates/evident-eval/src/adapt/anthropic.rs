//! `anthropic` (`anthropic-messages@1`): Messages API transcripts. `tool_use` blocks
//! (assistant turns) pair with `tool_result` blocks (user turns) by `tool_use_id`; the
//! result must come after its call; `is_error: true` is a failure. Evidence is the
//! result content when it is a JSON object (a string, or the text blocks joined).

use serde_json::{Map, Value};

use super::{AdaptError, AdaptedEvent, Pairing, err, evidence_from_text, req_str};

pub(crate) fn events(payload: &[Value]) -> Result<Vec<AdaptedEvent>, AdaptError> {
    let mut pairing = Pairing::new("tool_use", "tool_result", true);
    for (i, m) in payload.iter().enumerate() {
        let path = format!("messages[{i}]");
        let Value::Object(o) = m else {
            return err(format!("{path} must be an object"));
        };
        let role = match o.get("role").and_then(Value::as_str) {
            Some(r @ ("user" | "assistant")) => r,
            _ => return err(format!("{path}.role must be \"user\" or \"assistant\"")),
        };
        let blocks = match o.get("content") {
            Some(Value::String(_)) => continue,
            Some(Value::Array(b)) => b,
            _ => {
                return err(format!(
                    "{path}.content must be a string or an array of blocks"
                ));
            }
        };
        for (j, b) in blocks.iter().enumerate() {
            let bpath = format!("{path}.content[{j}]");
            let Value::Object(b) = b else {
                return err(format!("{bpath} must be an object"));
            };
            match b.get("type").and_then(Value::as_str) {
                Some("tool_use") => {
                    if role != "assistant" {
                        return err(format!("{bpath}: tool_use outside an assistant message"));
                    }
                    let id = req_str(b, "id", &format!("{bpath}.id"))?;
                    let name = req_str(b, "name", &format!("{bpath}.name"))?;
                    let input = match b.get("input") {
                        None => None,
                        Some(Value::Object(m)) => Some(m.clone()),
                        Some(_) => return err(format!("{bpath}.input must be an object")),
                    };
                    pairing.call(id, name, input, &bpath)?;
                }
                Some("tool_result") => {
                    if role != "user" {
                        return err(format!("{bpath}: tool_result outside a user message"));
                    }
                    let id = req_str(b, "tool_use_id", &format!("{bpath}.tool_use_id"))?;
                    let is_error = match b.get("is_error") {
                        None | Some(Value::Null) => false,
                        Some(Value::Bool(e)) => *e,
                        Some(_) => return err(format!("{bpath}.is_error must be a boolean")),
                    };
                    let evidence = content_evidence(b.get("content"), &bpath)?;
                    pairing.result(&id, !is_error, evidence, &bpath)?;
                }
                Some(_) => {} // text, thinking, image, server tools: not client tool calls
                None => return err(format!("{bpath}.type must be a string")),
            }
        }
    }
    pairing.finish()
}

fn content_evidence(content: Option<&Value>, path: &str) -> Result<Map<String, Value>, AdaptError> {
    match content {
        None | Some(Value::Null) => Ok(Map::new()),
        Some(Value::String(s)) => evidence_from_text(s, &format!("{path}.content")),
        Some(Value::Array(parts)) => {
            let mut text = String::new();
            for (k, p) in parts.iter().enumerate() {
                let Value::Object(p) = p else {
                    return err(format!("{path}.content[{k}] must be an object"));
                };
                if p.get("type").and_then(Value::as_str) == Some("text") {
                    match p.get("text") {
                        Some(Value::String(t)) => text.push_str(t),
                        _ => return err(format!("{path}.content[{k}].text must be a string")),
                    }
                }
            }
            evidence_from_text(&text, &format!("{path}.content"))
        }
        Some(_) => err(format!(
            "{path}.content must be a string or an array of blocks"
        )),
    }
}
