//! `openai-chat` (`openai-chat@1`)'s wrapper: the messages are read by
//! [`evident_traces::chat`]; this reads what the trace may record around them. The
//! format has no claim: `completion_claimed` comes from the wrapper object when it has
//! one, else from `--claimed` — never from the agent's words.

use serde_json::Value;

use super::{AdaptError, AdaptOptions, Wrapper, err, req_str};
use crate::text::py_blank;

/// The task text when the trace does not record one (it labels the case only).
pub const NO_TASK: &str = "(not recorded in the chat trace)";

/// Reads an array of messages, or an object with `messages` (and optionally
/// `trace_id`, `task`, `completion_claimed`; other members are ignored).
pub(crate) fn wrapper<'a>(
    raw: &'a Value,
    source_ref: &str,
    opts: &AdaptOptions,
) -> Result<Wrapper<'a>, AdaptError> {
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
    Ok(Wrapper {
        trace_id,
        task,
        completion_claimed,
        payload: messages,
    })
}

/// Whether an `--error-prefix` is usable (a blank one would mark every result).
pub fn check_error_prefix(p: &str) -> Result<(), AdaptError> {
    if py_blank(p) {
        return err("--error-prefix must not be blank: it would mark every result as failed");
    }
    Ok(())
}
