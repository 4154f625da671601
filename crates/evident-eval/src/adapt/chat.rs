//! `openai-chat` (`openai-chat@1`): the Chat Completions message lists that
//! OpenAI-compatible frameworks record. `assistant` messages carry `tool_calls[]`
//! (`id`, `function.name`, `function.arguments` as JSON text); `tool` messages answer
//! one by `tool_call_id`. Pairing is strict (see [`super::Pairing`]); ids are reused
//! after their result in real logs, which is a new call. The format has no error
//! flag and no claim: a result whose content starts with an `--error-prefix` failed
//! (without one every result succeeds), and `completion_claimed` comes from the
//! wrapper object when it has one, else from `--claimed` — never from the agent's
//! words. Evidence is the result content when it is a JSON object.

use serde_json::Value;

use super::{
    AdaptError, AdaptOptions, AdaptedEvent, Pairing, arguments_from_text, err, evidence_from_text,
    req_str,
};
use crate::text::py_blank;

/// The task text when the trace does not record one (it labels the case only).
pub const NO_TASK: &str = "(not recorded in the chat trace)";

type Adapted = (String, String, bool, Vec<AdaptedEvent>);

/// Reads an array of messages, or an object with `messages` (and optionally
/// `trace_id`, `task`, `completion_claimed`; other members are ignored).
pub(crate) fn adapt(
    raw: &Value,
    source_ref: &str,
    opts: &AdaptOptions,
) -> Result<Adapted, AdaptError> {
    let (messages, wrapper) = match raw {
        Value::Array(m) => (m.as_slice(), None),
        Value::Object(o) => match o.get("messages") {
            Some(Value::Array(m)) => (m.as_slice(), Some(o)),
            _ => {
                return err(
                    "messages must be an array (or give the trace as an array of messages)",
                );
            }
        },
        _ => {
            return err(
                "an openai-chat trace must be an array of messages or an object with messages",
            );
        }
    };
    let member = |key: &str, default: &str| -> Result<String, AdaptError> {
        match wrapper {
            Some(o) if o.contains_key(key) => req_str(o, key, key),
            _ => Ok(default.to_owned()),
        }
    };
    let trace_id = member("trace_id", source_ref)?;
    let task = member("task", NO_TASK)?;
    let recorded = match wrapper.and_then(|o| o.get("completion_claimed")) {
        None => None,
        Some(Value::Bool(b)) => Some(*b),
        Some(_) => return err("completion_claimed must be a boolean"),
    };
    let completion_claimed = match (recorded, opts.claimed) {
        (Some(t), Some(c)) if t != c => {
            return err(format!(
                "completion_claimed is {t} in the trace but --claimed {c} was given"
            ));
        }
        (Some(t), _) => t,
        (None, Some(c)) => c,
        (None, None) => {
            return err(
                "the chat format does not record whether the agent claimed completion; hint: pass --claimed true|false (it is never read from the agent's words)",
            );
        }
    };
    Ok((
        trace_id,
        task,
        completion_claimed,
        events(messages, &opts.error_prefixes)?,
    ))
}

fn events(messages: &[Value], error_prefixes: &[String]) -> Result<Vec<AdaptedEvent>, AdaptError> {
    let mut pairing = Pairing::new("tool call", "tool message", true);
    for (i, m) in messages.iter().enumerate() {
        let path = format!("messages[{i}]");
        let Value::Object(o) = m else {
            return err(format!("{path} must be an object"));
        };
        let role = match o.get("role") {
            Some(Value::String(r)) => r.as_str(),
            _ => return err(format!("{path}.role must be a string")),
        };
        match role {
            "system" | "developer" | "user" => {}
            "assistant" => {
                if o.get("function_call").is_some_and(|f| !f.is_null()) {
                    return err(format!(
                        "{path}: the legacy function_call is not supported (it has no id to pair its result by); hint: record tool_calls"
                    ));
                }
                let calls = match o.get("tool_calls") {
                    None | Some(Value::Null) => continue,
                    Some(Value::Array(c)) => c,
                    Some(_) => return err(format!("{path}.tool_calls must be an array")),
                };
                for (j, c) in calls.iter().enumerate() {
                    let cpath = format!("{path}.tool_calls[{j}]");
                    let Value::Object(c) = c else {
                        return err(format!("{cpath} must be an object"));
                    };
                    match c.get("type") {
                        None => {}
                        Some(Value::String(t)) if t == "function" => {}
                        Some(_) => {
                            return err(format!(
                                "{cpath}.type: only \"function\" tool calls are supported"
                            ));
                        }
                    }
                    let id = req_str(c, "id", &format!("{cpath}.id"))?;
                    let Some(Value::Object(f)) = c.get("function") else {
                        return err(format!("{cpath}.function must be an object"));
                    };
                    let name = req_str(f, "name", &format!("{cpath}.function.name"))?;
                    let arguments = match f.get("arguments") {
                        None | Some(Value::Null) => None,
                        Some(Value::String(t)) => Some(arguments_from_text(
                            t,
                            &format!("{cpath}.function.arguments"),
                        )?),
                        Some(_) => {
                            return err(format!(
                                "{cpath}.function.arguments must be a string (JSON text)"
                            ));
                        }
                    };
                    pairing.call(id, name, arguments, &cpath)?;
                }
            }
            "tool" => {
                let id = req_str(o, "tool_call_id", &format!("{path}.tool_call_id"))?;
                let text = content_text(o.get("content"), &path)?;
                let failed = error_prefixes.iter().any(|p| text.starts_with(p.as_str()));
                let evidence = evidence_from_text(&text, &format!("{path}.content"))?;
                pairing.result(&id, !failed, evidence, &path)?;
            }
            "function" => {
                return err(format!(
                    "{path}: the legacy function role is not supported (it has no id to pair by); hint: record tool messages"
                ));
            }
            other => {
                let shown: String = other.chars().take(40).collect();
                return err(format!(
                    "{path}.role '{shown}' is not a chat role (system, developer, user, assistant, tool)"
                ));
            }
        }
    }
    pairing.finish()
}

/// A tool message's content: a string, an array of text parts (joined), or null.
fn content_text(content: Option<&Value>, path: &str) -> Result<String, AdaptError> {
    match content {
        None | Some(Value::Null) => Ok(String::new()),
        Some(Value::String(s)) => Ok(s.clone()),
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
            Ok(text)
        }
        Some(_) => err(format!(
            "{path}.content must be a string, an array of text parts, or null"
        )),
    }
}

/// Whether an `--error-prefix` is usable (a blank one would mark every result).
pub fn check_error_prefix(p: &str) -> Result<(), String> {
    if py_blank(p) {
        return Err(
            "--error-prefix must not be blank: it would mark every result as failed".into(),
        );
    }
    Ok(())
}
