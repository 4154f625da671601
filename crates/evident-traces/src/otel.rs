//! `otel` (`otlp-genai@1`): OTLP/JSON spans with the OpenTelemetry GenAI conventions.
//! A span with `gen_ai.operation.name = execute_tool` is one tool call: the name is
//! `gen_ai.tool.name`, the id `gen_ai.tool.call.id` (else the span id), the order the
//! span start time (document order breaks ties; the start is the call's time, the end
//! its result's). Status `ERROR` (code 2) or an `error.type` attribute is a failure
//! (the log's flag). The result is `gen_ai.tool.call.result` (text, or a map as
//! [`Outcome::data`]); `gen_ai.tool.call.arguments` (a JSON object as text, or a
//! `kvlistValue`) is the call's arguments. Each span is a finished call, so there is
//! nothing to pair; a repeated id is an error.

use std::collections::HashSet;

use serde_json::{Map, Value};

use crate::{Call, Error, Outcome, StatusFrom, Trace, arguments_from_text, doc_err, py_blank};

/// An OTLP `AnyValue` (`{"stringValue": ..}` etc.) as plain JSON.
fn any_value(v: &Value, path: &str, file: &str) -> Result<Value, Error> {
    let Value::Object(o) = v else {
        return doc_err(file, format!("{path} must be an OTLP AnyValue object"));
    };
    if o.is_empty() {
        return Ok(Value::Null);
    }
    if o.len() != 1 {
        return doc_err(file, format!("{path} must have exactly one value member"));
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
            Err(_) => return doc_err(file, format!("{path}.intValue must be an integer")),
        },
        ("arrayValue", Value::Object(a)) => match a.get("values") {
            None => Value::Array(vec![]),
            Some(Value::Array(vs)) => Value::Array(
                vs.iter()
                    .enumerate()
                    .map(|(i, v)| any_value(v, &format!("{path}.arrayValue.values[{i}]"), file))
                    .collect::<Result<_, _>>()?,
            ),
            Some(_) => return doc_err(file, format!("{path}.arrayValue.values must be an array")),
        },
        ("kvlistValue", Value::Object(a)) => match a.get("values") {
            None => Value::Object(Map::new()),
            Some(Value::Array(_)) => Value::Object(attributes(
                a.get("values"),
                &format!("{path}.kvlistValue"),
                file,
            )?),
            Some(_) => return doc_err(file, format!("{path}.kvlistValue.values must be an array")),
        },
        ("bytesValue", Value::String(_)) => x.clone(),
        _ => return doc_err(file, format!("{path}: unsupported OTLP value '{k}'")),
    })
}

/// An OTLP attribute list as a map; a repeated key rejects the span.
fn attributes(list: Option<&Value>, path: &str, file: &str) -> Result<Map<String, Value>, Error> {
    let mut out = Map::new();
    let items = match list {
        None => return Ok(out),
        Some(Value::Array(a)) => a,
        Some(_) => return doc_err(file, format!("{path} must be an array")),
    };
    for (i, kv) in items.iter().enumerate() {
        let p = format!("{path}[{i}]");
        let Value::Object(kv) = kv else {
            return doc_err(file, format!("{p} must be an object"));
        };
        let Some(Value::String(key)) = kv.get("key") else {
            return doc_err(file, format!("{p}.key must be a string"));
        };
        let value = match kv.get("value") {
            None => Value::Null,
            Some(v) => any_value(v, &format!("{p}.value"), file)?,
        };
        if out.insert(key.clone(), value).is_some() {
            return doc_err(file, format!("{p}: duplicate attribute '{key}'"));
        }
    }
    Ok(out)
}

fn array<'a>(
    o: &'a Map<String, Value>,
    key: &str,
    path: &str,
    file: &str,
) -> Result<&'a [Value], Error> {
    match o.get(key) {
        None => Ok(&[]),
        Some(Value::Array(a)) => Ok(a),
        Some(_) => doc_err(file, format!("{path}.{key} must be an array")),
    }
}

fn start_time(span: &Map<String, Value>, path: &str, file: &str) -> Result<u64, Error> {
    match span.get("startTimeUnixNano") {
        Some(Value::String(s)) => s.parse().ok(),
        Some(Value::Number(n)) => n.as_u64(),
        _ => None,
    }
    .map_or_else(
        || {
            doc_err(
                file,
                format!("{path}.startTimeUnixNano must be an unsigned integer"),
            )
        },
        Ok,
    )
}

fn is_error_status(span: &Map<String, Value>, path: &str, file: &str) -> Result<bool, Error> {
    match span.get("status") {
        None | Some(Value::Null) => Ok(false),
        Some(Value::Object(s)) => match s.get("code") {
            None | Some(Value::Null) => Ok(false),
            Some(Value::Number(n)) => Ok(n.as_u64() == Some(2)),
            Some(Value::String(c)) => Ok(c == "STATUS_CODE_ERROR"),
            Some(_) => doc_err(
                file,
                format!("{path}.status.code must be a number or a status name"),
            ),
        },
        Some(_) => doc_err(file, format!("{path}.status must be an object")),
    }
}

/// Reads the `resourceSpans` array of an OTLP/JSON export.
pub fn read(resource_spans: &[Value], file: &str) -> Result<Trace, Error> {
    let mut found: Vec<(u64, usize, Call)> = Vec::new();
    let mut ids = HashSet::new();
    for (r, rs) in resource_spans.iter().enumerate() {
        let rpath = format!("resourceSpans[{r}]");
        let Value::Object(rs) = rs else {
            return doc_err(file, format!("{rpath} must be an object"));
        };
        for (s, ss) in array(rs, "scopeSpans", &rpath, file)?.iter().enumerate() {
            let spath = format!("{rpath}.scopeSpans[{s}]");
            let Value::Object(ss) = ss else {
                return doc_err(file, format!("{spath} must be an object"));
            };
            for (k, span) in array(ss, "spans", &spath, file)?.iter().enumerate() {
                let path = format!("{spath}.spans[{k}]");
                let Value::Object(span) = span else {
                    return doc_err(file, format!("{path} must be an object"));
                };
                let attrs =
                    attributes(span.get("attributes"), &format!("{path}.attributes"), file)?;
                if attrs.get("gen_ai.operation.name").and_then(Value::as_str)
                    != Some("execute_tool")
                {
                    continue;
                }
                let name = match attrs.get("gen_ai.tool.name") {
                    Some(Value::String(n)) if !py_blank(n) => n.clone(),
                    _ => {
                        return doc_err(
                            file,
                            format!(
                                "{path}: an execute_tool span needs a non-empty gen_ai.tool.name"
                            ),
                        );
                    }
                };
                let id = match attrs.get("gen_ai.tool.call.id") {
                    Some(Value::String(id)) if !id.is_empty() => id.clone(),
                    Some(_) => {
                        return doc_err(
                            file,
                            format!("{path}: gen_ai.tool.call.id must be a non-empty string"),
                        );
                    }
                    None => match span.get("spanId") {
                        Some(Value::String(id)) if !id.is_empty() => id.clone(),
                        _ => {
                            return doc_err(
                                file,
                                format!("{path}: needs gen_ai.tool.call.id or a spanId"),
                            );
                        }
                    },
                };
                if !ids.insert(id.clone()) {
                    return doc_err(file, format!("{path}: duplicate tool call id '{id}'"));
                }
                let failed =
                    is_error_status(span, &path, file)? || attrs.contains_key("error.type");
                let rpath = format!("{path}: gen_ai.tool.call.result");
                let (text, data) = match attrs.get("gen_ai.tool.call.result") {
                    Some(Value::String(t)) => (t.clone(), None),
                    Some(Value::Object(m)) => (String::new(), Some(m.clone())),
                    _ => (String::new(), None),
                };
                let arguments = match attrs.get("gen_ai.tool.call.arguments") {
                    None | Some(Value::Null) => Value::Null,
                    Some(Value::String(t)) => arguments_from_text(
                        t,
                        &format!("{path}: gen_ai.tool.call.arguments"),
                        file,
                    )?,
                    Some(m @ Value::Object(_)) => m.clone(),
                    Some(_) => {
                        return doc_err(
                            file,
                            format!("{path}: gen_ai.tool.call.arguments must be a JSON object"),
                        );
                    }
                };
                let start = start_time(span, &path, file)?;
                let end = match span.get("endTimeUnixNano") {
                    Some(Value::String(s)) => Some(s.clone()),
                    Some(Value::Number(n)) => Some(n.to_string()),
                    _ => None,
                };
                let order = found.len();
                let call = Call {
                    id,
                    name,
                    arguments,
                    time: Some(start.to_string()),
                    outcome: Some(Outcome {
                        is_error: failed,
                        status_from: if failed || span.get("status").is_some() {
                            StatusFrom::Flag
                        } else {
                            StatusFrom::Absent
                        },
                        text,
                        data,
                        path: rpath,
                        time: end,
                        ..Outcome::default()
                    }),
                    path,
                    ..Call::default()
                };
                found.push((start, order, call));
            }
        }
    }
    found.sort_by_key(|(t, i, _)| (*t, *i));
    Ok(Trace {
        messages: Vec::new(),
        calls: found.into_iter().map(|(_, _, c)| c).collect(),
    })
}
