//! `generic` (`generic-json@1`): the peer's format, events given directly.

use std::collections::HashSet;

use serde_json::Value;

use super::{AdaptError, AdaptedEvent, err, opt_obj, req_str};

pub(crate) fn events(payload: &[Value]) -> Result<Vec<AdaptedEvent>, AdaptError> {
    let mut seen = HashSet::new();
    let mut out = Vec::with_capacity(payload.len());
    for (i, e) in payload.iter().enumerate() {
        let path = format!("events[{i}]");
        let Value::Object(o) = e else {
            return err(format!("{path} must be an object"));
        };
        let action = req_str(o, "action", &format!("{path}.action"))?;
        let success = match o.get("success") {
            Some(Value::Bool(b)) => *b,
            _ => return err(format!("{path}.success must be a boolean")),
        };
        let evidence = opt_obj(o, "evidence", &format!("{path}.evidence"))?;
        let source_event_id = match o.get("source_event_id") {
            None => None,
            Some(_) => {
                let id = req_str(o, "source_event_id", &format!("{path}.source_event_id"))?;
                if !seen.insert(id.clone()) {
                    return err(format!("{path}: duplicate source_event_id '{id}'"));
                }
                Some(id)
            }
        };
        // Optional: what the agent asked for (read only by object-form requirements).
        let arguments = match o.get("arguments") {
            None => None,
            Some(_) => Some(opt_obj(o, "arguments", &format!("{path}.arguments"))?),
        };
        out.push(AdaptedEvent::new(
            action,
            success,
            evidence,
            source_event_id,
            arguments,
        ));
    }
    Ok(out)
}
