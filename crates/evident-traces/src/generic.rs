//! `generic` (`generic-json@1`): seed 001's peer format, events given directly as
//! `{action, success, evidence?, source_event_id?, arguments?}`. Each event is one
//! finished call: its `success` is the log's flag, its `evidence` the result's
//! [`Outcome::data`]. There is nothing to pair; a repeated `source_event_id` is an error.

use std::collections::HashSet;

use serde_json::{Map, Value};

use crate::{Call, Error, Outcome, StatusFrom, Trace, doc_err, opt_obj, req_str};

/// Reads the `events` array of a generic trace.
pub fn read(events: &[Value], file: &str) -> Result<Trace, Error> {
    let mut seen = HashSet::new();
    let mut trace = Trace::default();
    for (i, e) in events.iter().enumerate() {
        let path = format!("events[{i}]");
        let Value::Object(o) = e else {
            return doc_err(file, format!("{path} must be an object"));
        };
        let name = req_str(o, "action", &format!("{path}.action"), file)?;
        let success = match o.get("success") {
            Some(Value::Bool(b)) => *b,
            _ => return doc_err(file, format!("{path}.success must be a boolean")),
        };
        let evidence = opt_obj(o, "evidence", &format!("{path}.evidence"), file)?;
        let id = match o.get("source_event_id") {
            None => String::new(),
            Some(_) => {
                let id = req_str(
                    o,
                    "source_event_id",
                    &format!("{path}.source_event_id"),
                    file,
                )?;
                if !seen.insert(id.clone()) {
                    return doc_err(file, format!("{path}: duplicate source_event_id '{id}'"));
                }
                id
            }
        };
        // Optional: what the agent asked for (read only by object-form requirements).
        let arguments = opt_obj(o, "arguments", &format!("{path}.arguments"), file)?
            .map_or(Value::Null, Value::Object);
        trace.calls.push(Call {
            id,
            name,
            arguments,
            outcome: Some(Outcome {
                is_error: !success,
                status_from: StatusFrom::Flag,
                data: Some(evidence.unwrap_or_else(Map::new)),
                path: path.clone(),
                ..Outcome::default()
            }),
            path,
            ..Call::default()
        });
    }
    Ok(trace)
}
