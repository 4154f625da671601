//! `otel` (`otlp-genai@1`): OTLP/JSON spans with the OpenTelemetry GenAI conventions.
//! A span with `gen_ai.operation.name = execute_tool` is one tool call: the action is
//! `gen_ai.tool.name`, the id `gen_ai.tool.call.id` (else the span id), the order the
//! span start time (document order breaks ties). Status `ERROR` (code 2) or an
//! `error.type` attribute is a failure. Evidence is `gen_ai.tool.call.result` when it
//! is a JSON object; `gen_ai.tool.call.arguments` (a JSON object as text, or a
//! `kvlistValue`) is the call's arguments, never evidence. Each span is a finished
//! call, so there is nothing to pair.

use std::collections::HashSet;

use serde_json::{Map, Value};

use super::{AdaptError, AdaptedEvent, arguments_from_text, err, evidence_from_text};

/// An OTLP `AnyValue` (`{"stringValue": ..}` etc.) as plain JSON.
fn any_value(v: &Value, path: &str) -> Result<Value, AdaptError> {
    let Value::Object(o) = v else {
        return err(format!("{path} must be an OTLP AnyValue object"));
    };
    if o.is_empty() {
        return Ok(Value::Null);
    }
    if o.len() != 1 {
        return err(format!("{path} must have exactly one value member"));
    }
    let Some((k, x)) = o.iter().next() else {
        return Ok(Value::Null);
    };
    Ok(match (k.as_str(), x) {
        ("stringValue", Value::String(_)) | ("boolValue", Value::Bool(_)) => x.clone(),
        ("doubleValue", Value::Number(_)) => x.clone(),
        ("intValue", Value::Number(n)) if n.is_i64() || n.is_u64() => x.clone(),
        // OTLP/JSON carries 64-bit integers as decimal strings.
        ("intValue", Value::String(s)) => match s.parse::<i64>() {
            Ok(n) => Value::from(n),
            Err(_) => return err(format!("{path}.intValue must be an integer")),
        },
        ("arrayValue", Value::Object(a)) => match a.get("values") {
            None => Value::Array(vec![]),
            Some(Value::Array(vs)) => Value::Array(
                vs.iter()
                    .enumerate()
                    .map(|(i, v)| any_value(v, &format!("{path}.arrayValue.values[{i}]")))
                    .collect::<Result<_, _>>()?,
            ),
            Some(_) => return err(format!("{path}.arrayValue.values must be an array")),
        },
        ("kvlistValue", Value::Object(a)) => match a.get("values") {
            None => Value::Object(Map::new()),
            Some(Value::Array(_)) => {
                Value::Object(attributes(a.get("values"), &format!("{path}.kvlistValue"))?)
            }
            Some(_) => return err(format!("{path}.kvlistValue.values must be an array")),
        },
        ("bytesValue", Value::String(_)) => x.clone(),
        _ => return err(format!("{path}: unsupported OTLP value '{k}'")),
    })
}

/// An OTLP attribute list as a map; a repeated key rejects the span.
fn attributes(list: Option<&Value>, path: &str) -> Result<Map<String, Value>, AdaptError> {
    let mut out = Map::new();
    let items = match list {
        None => return Ok(out),
        Some(Value::Array(a)) => a,
        Some(_) => return err(format!("{path} must be an array")),
    };
    for (i, kv) in items.iter().enumerate() {
        let p = format!("{path}[{i}]");
        let Value::Object(kv) = kv else {
            return err(format!("{p} must be an object"));
        };
        let Some(Value::String(key)) = kv.get("key") else {
            return err(format!("{p}.key must be a string"));
        };
        let value = match kv.get("value") {
            None => Value::Null,
            Some(v) => any_value(v, &format!("{p}.value"))?,
        };
        if out.insert(key.clone(), value).is_some() {
            return err(format!("{p}: duplicate attribute '{key}'"));
        }
    }
    Ok(out)
}

fn array<'a>(o: &'a Map<String, Value>, key: &str, path: &str) -> Result<&'a [Value], AdaptError> {
    match o.get(key) {
        None => Ok(&[]),
        Some(Value::Array(a)) => Ok(a),
        Some(_) => err(format!("{path}.{key} must be an array")),
    }
}

fn start_time(span: &Map<String, Value>, path: &str) -> Result<u64, AdaptError> {
    match span.get("startTimeUnixNano") {
        Some(Value::String(s)) => s.parse().ok(),
        Some(Value::Number(n)) => n.as_u64(),
        _ => None,
    }
    .map_or_else(
        || {
            err(format!(
                "{path}.startTimeUnixNano must be an unsigned integer"
            ))
        },
        Ok,
    )
}

fn is_error_status(span: &Map<String, Value>, path: &str) -> Result<bool, AdaptError> {
    match span.get("status") {
        None | Some(Value::Null) => Ok(false),
        Some(Value::Object(s)) => match s.get("code") {
            None | Some(Value::Null) => Ok(false),
            Some(Value::Number(n)) => Ok(n.as_u64() == Some(2)),
            Some(Value::String(c)) => Ok(c == "STATUS_CODE_ERROR"),
            Some(_) => err(format!(
                "{path}.status.code must be a number or a status name"
            )),
        },
        Some(_) => err(format!("{path}.status must be an object")),
    }
}

pub(crate) fn events(payload: &[Value]) -> Result<Vec<AdaptedEvent>, AdaptError> {
    let mut found: Vec<(u64, usize, AdaptedEvent)> = Vec::new();
    let mut ids = HashSet::new();
    for (r, rs) in payload.iter().enumerate() {
        let rpath = format!("resourceSpans[{r}]");
        let Value::Object(rs) = rs else {
            return err(format!("{rpath} must be an object"));
        };
        for (s, ss) in array(rs, "scopeSpans", &rpath)?.iter().enumerate() {
            let spath = format!("{rpath}.scopeSpans[{s}]");
            let Value::Object(ss) = ss else {
                return err(format!("{spath} must be an object"));
            };
            for (k, span) in array(ss, "spans", &spath)?.iter().enumerate() {
                let path = format!("{spath}.spans[{k}]");
                let Value::Object(span) = span else {
                    return err(format!("{path} must be an object"));
                };
                let attrs = attributes(span.get("attributes"), &format!("{path}.attributes"))?;
                if attrs.get("gen_ai.operation.name").and_then(Value::as_str)
                    != Some("execute_tool")
                {
                    continue;
                }
                let action = match attrs.get("gen_ai.tool.name") {
                    Some(Value::String(n)) if !crate::text::py_blank(n) => n.clone(),
                    _ => {
                        return err(format!(
                            "{path}: an execute_tool span needs a non-empty gen_ai.tool.name"
                        ));
                    }
                };
                let id = match attrs.get("gen_ai.tool.call.id") {
                    Some(Value::String(id)) if !id.is_empty() => id.clone(),
                    Some(_) => {
                        return err(format!(
                            "{path}: gen_ai.tool.call.id must be a non-empty string"
                        ));
                    }
                    None => match span.get("spanId") {
                        Some(Value::String(id)) if !id.is_empty() => id.clone(),
                        _ => return err(format!("{path}: needs gen_ai.tool.call.id or a spanId")),
                    },
                };
                if !ids.insert(id.clone()) {
                    return err(format!("{path}: duplicate tool call id '{id}'"));
                }
                let failed = is_error_status(span, &path)? || attrs.contains_key("error.type");
                let evidence = match attrs.get("gen_ai.tool.call.result") {
                    None | Some(Value::Null) => Map::new(),
                    Some(Value::String(t)) => {
                        evidence_from_text(t, &format!("{path}: gen_ai.tool.call.result"))?
                    }
                    Some(Value::Object(m)) => m.clone(),
                    Some(_) => Map::new(),
                };
                let arguments = match attrs.get("gen_ai.tool.call.arguments") {
                    None | Some(Value::Null) => None,
                    Some(Value::String(t)) => Some(arguments_from_text(
                        t,
                        &format!("{path}: gen_ai.tool.call.arguments"),
                    )?),
                    Some(Value::Object(m)) => Some(m.clone()),
                    Some(_) => {
                        return err(format!(
                            "{path}: gen_ai.tool.call.arguments must be a JSON object"
                        ));
                    }
                };
                let start = start_time(span, &path)?;
                let order = found.len();
                found.push((
                    start,
                    order,
                    AdaptedEvent::new(action, !failed, evidence, Some(id), arguments),
                ));
            }
        }
    }
    found.sort_by_key(|(t, i, _)| (*t, *i));
    Ok(found.into_iter().map(|(_, _, e)| e).collect())
}
