//! `openai-responses` (`openai-responses@1`): Responses API items. `function_call`
//! pairs with a later `function_call_output` by `call_id`. The format has no success
//! flag, so: a call whose `status` is `"incomplete"` failed, and an output that is a
//! JSON object with an `error` member other than `null` or `false` failed; everything
//! else succeeded. Evidence is the output when it is a JSON object.

use serde_json::{Map, Value};

use super::{
    AdaptError, AdaptedEvent, Pairing, arguments_from_text, err, evidence_from_text, req_str,
};

pub(crate) fn events(payload: &[Value]) -> Result<Vec<AdaptedEvent>, AdaptError> {
    let mut pairing = Pairing::new("function_call", "function_call_output", true);
    let mut incomplete = std::collections::HashSet::new();
    for (i, item) in payload.iter().enumerate() {
        let path = format!("items[{i}]");
        let Value::Object(o) = item else {
            return err(format!("{path} must be an object"));
        };
        match o.get("type").and_then(Value::as_str) {
            Some("function_call") => {
                let id = req_str(o, "call_id", &format!("{path}.call_id"))?;
                let name = req_str(o, "name", &format!("{path}.name"))?;
                let arguments = match o.get("arguments") {
                    None => None,
                    Some(Value::String(t)) => {
                        Some(arguments_from_text(t, &format!("{path}.arguments"))?)
                    }
                    Some(_) => return err(format!("{path}.arguments must be a string")),
                };
                match o.get("status") {
                    None | Some(Value::Null) => {}
                    Some(Value::String(s)) if s == "incomplete" => {
                        incomplete.insert(id.clone());
                    }
                    Some(Value::String(s)) if s == "completed" || s == "in_progress" => {}
                    Some(_) => {
                        return err(format!(
                            "{path}.status must be \"completed\", \"in_progress\" or \"incomplete\""
                        ));
                    }
                }
                pairing.call(id, name, arguments, &path)?;
            }
            Some("function_call_output") => {
                let id = req_str(o, "call_id", &format!("{path}.call_id"))?;
                let evidence = output_evidence(o.get("output"), &path)?;
                let failed = incomplete.remove(&id)
                    || evidence
                        .get("error")
                        .is_some_and(|e| !matches!(e, Value::Null | Value::Bool(false)));
                pairing.result(&id, !failed, evidence, &path)?;
            }
            Some(_) => {} // messages, reasoning, hosted tools: not function calls
            None => return err(format!("{path}.type must be a string")),
        }
    }
    pairing.finish()
}

fn output_evidence(output: Option<&Value>, path: &str) -> Result<Map<String, Value>, AdaptError> {
    match output {
        Some(Value::String(s)) => evidence_from_text(s, &format!("{path}.output")),
        Some(Value::Array(parts)) => {
            let mut text = String::new();
            for (k, p) in parts.iter().enumerate() {
                let Value::Object(p) = p else {
                    return err(format!("{path}.output[{k}] must be an object"));
                };
                if matches!(
                    p.get("type").and_then(Value::as_str),
                    Some("input_text" | "output_text" | "text")
                ) {
                    match p.get("text") {
                        Some(Value::String(t)) => text.push_str(t),
                        _ => return err(format!("{path}.output[{k}].text must be a string")),
                    }
                }
            }
            evidence_from_text(&text, &format!("{path}.output"))
        }
        _ => err(format!(
            "{path}.output must be a string or an array of content parts"
        )),
    }
}
