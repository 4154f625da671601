//! ATIF, Harbor's Agent Trajectory Interchange Format (`schema_version` `ATIF-v1.0` to
//! `ATIF-v1.8`; the spec is rfcs/0001-trajectory-format.md in harbor-framework/harbor).
//! One JSON document: `steps[]`, each from `source` `system`, `user` or `agent`, with a
//! `message`, and for agent steps `tool_calls[] {tool_call_id, function_name,
//! arguments}` and `observation.results[] {source_call_id, content, extra}`. A result
//! is paired with a call **of the same step** by `source_call_id`; a result without
//! one is a non-tool action and is skipped. v1.7 added embedded
//! `subagent_trajectories[]` (read here, their calls marked as a subagent's) and
//! references by `trajectory_id` or `trajectory_path` (a path in the trace is never
//! opened: a trace must not make evident read other files).
//!
//! ATIF has no first-class error field. A result's status is read, in this order, from
//! `extra.is_error` (or `is_error` on the result, as some writers put it), then
//! `extra.exit_code`, then `extra.status`; failing those, from two documented text
//! conventions — a first line `Exit code N` and an `error:` prefix — recorded as
//! [`StatusFrom::TextExitCode`] and [`StatusFrom::TextErrorPrefix`] so a heuristic is
//! never presented as a fact.

use serde_json::{Map, Value};

use crate::{Call, Error, Message, Outcome, Pairing, Role, StatusFrom, Trace, text_of};

/// The ATIF versions read (`ATIF-v1.0` … `ATIF-v1.8`).
pub const VERSIONS: std::ops::RangeInclusive<u32> = 0..=8;

/// How deep embedded subagent trajectories may nest.
const MAX_DEPTH: usize = 16;

/// Tools that write the file named in their arguments (the names ATIF writers use for
/// Claude Code, OpenHands, mini-swe-agent and Harbor's own agents).
const WRITERS: &[(&str, &str)] = &[
    ("Write", "file_path"),
    ("Edit", "file_path"),
    ("MultiEdit", "file_path"),
    ("write_file", "path"),
    ("file_write", "path"),
    ("str_replace_editor", "path"),
    ("edit_file", "path"),
];

/// Tools that run a shell command (any file may change).
const SHELLS: &[&str] = &[
    "Bash",
    "bash",
    "shell",
    "bash_command",
    "execute_bash",
    "exec_command",
    "terminal",
    "run_command",
];

/// Reads one ATIF trajectory document (`file` names it in errors); a version outside
/// [`VERSIONS`] or a broken pairing is an error naming the JSON path.
pub fn read(bytes: &[u8], file: &str) -> Result<Trace, Error> {
    if bytes.len() > crate::MAX_TRACE_BYTES {
        return Err(at(
            file,
            "",
            format!("the trace exceeds {} bytes", crate::MAX_TRACE_BYTES),
        ));
    }
    let doc: Value = serde_json::from_slice(bytes)
        .map_err(|e| at(file, "", format!("not a JSON document: {e}")))?;
    let mut trace = Trace::default();
    trajectory(&doc, "", file, false, 0, &mut trace)?;
    Ok(trace)
}

fn at(file: &str, path: &str, message: String) -> Error {
    let message = if path.is_empty() {
        message
    } else {
        format!("{path}: {message}")
    };
    Error {
        file: file.into(),
        line: 0,
        message,
    }
}

fn trajectory(
    doc: &Value,
    path: &str,
    file: &str,
    subagent: bool,
    depth: usize,
    trace: &mut Trace,
) -> Result<(), Error> {
    let Some(obj) = doc.as_object() else {
        return Err(at(file, path, "a trajectory must be a JSON object".into()));
    };
    let here = |k: &str| {
        if path.is_empty() {
            k.to_string()
        } else {
            format!("{path}.{k}")
        }
    };
    version(obj.get("schema_version"), &here("schema_version"), file)?;
    let steps = obj
        .get("steps")
        .and_then(Value::as_array)
        .ok_or_else(|| at(file, &here("steps"), "missing, or not an array".into()))?;
    for (i, step_v) in steps.iter().enumerate() {
        step(
            step_v,
            &format!("{}[{i}]", here("steps")),
            file,
            subagent,
            trace,
        )?;
    }
    if let Some(subs) = obj.get("subagent_trajectories") {
        let Some(subs) = subs.as_array() else {
            return Err(at(
                file,
                &here("subagent_trajectories"),
                "not an array".into(),
            ));
        };
        if depth >= MAX_DEPTH {
            return Err(at(
                file,
                &here("subagent_trajectories"),
                format!("subagent trajectories nest deeper than {MAX_DEPTH}"),
            ));
        }
        for (i, sub) in subs.iter().enumerate() {
            trajectory(
                sub,
                &format!("{}[{i}]", here("subagent_trajectories")),
                file,
                true,
                depth + 1,
                trace,
            )?;
        }
    }
    Ok(())
}

fn version(v: Option<&Value>, path: &str, file: &str) -> Result<(), Error> {
    let s = v.and_then(Value::as_str).ok_or_else(|| {
        at(
            file,
            path,
            "missing; an ATIF trajectory names its version (\"ATIF-v1.7\")".into(),
        )
    })?;
    let minor = s
        .strip_prefix("ATIF-v1.")
        .and_then(|m| m.parse::<u32>().ok());
    match minor {
        Some(m) if VERSIONS.contains(&m) => Ok(()),
        _ => Err(at(
            file,
            path,
            format!(
                "{s:?} is not an ATIF version evident reads (ATIF-v1.{} to ATIF-v1.{}); hint: a newer version needs a newer evident",
                VERSIONS.start(),
                VERSIONS.end()
            ),
        )),
    }
}

fn step(v: &Value, path: &str, file: &str, subagent: bool, trace: &mut Trace) -> Result<(), Error> {
    let Some(s) = v.as_object() else {
        return Err(at(file, path, "a step must be a JSON object".into()));
    };
    let source = s.get("source").and_then(Value::as_str).ok_or_else(|| {
        at(
            file,
            &format!("{path}.source"),
            "missing; one of system, user, agent".into(),
        )
    })?;
    let role = match source {
        "user" => Some(Role::User),
        "agent" => Some(Role::Agent),
        "system" => None,
        other => {
            return Err(at(
                file,
                &format!("{path}.source"),
                format!("{other:?} is not one of system, user, agent"),
            ));
        }
    };
    let text = text_of(s.get("message").unwrap_or(&Value::Null));
    if let Some(role) = role
        && !subagent
        && !text.trim().is_empty()
    {
        trace.messages.push(Message {
            role,
            text,
            line: 0,
        });
    }
    // Calls and results pair within the step: a fresh pairing for each.
    let mut pairing = Pairing::default();
    let first_call = trace.calls.len();
    if let Some(calls) = s.get("tool_calls") {
        let calls = calls
            .as_array()
            .ok_or_else(|| at(file, &format!("{path}.tool_calls"), "not an array".into()))?;
        if role != Some(Role::Agent) && !calls.is_empty() {
            return Err(at(
                file,
                &format!("{path}.tool_calls"),
                format!("a {source} step has tool calls; only agent steps call tools"),
            ));
        }
        for (j, c) in calls.iter().enumerate() {
            let cpath = format!("{path}.tool_calls[{j}]");
            let mut call = tool_call(c, &cpath, file, subagent)?;
            call.time = crate::timestamp(v);
            pairing
                .call(trace, call)
                .map_err(|m| at(file, &cpath, m.to_string()))?;
        }
    }
    let results = match s.get("observation") {
        None | Some(Value::Null) => return Ok(()),
        Some(o) => o.get("results").and_then(Value::as_array).ok_or_else(|| {
            at(
                file,
                &format!("{path}.observation.results"),
                "missing, or not an array".into(),
            )
        })?,
    };
    for (j, r) in results.iter().enumerate() {
        let rpath = format!("{path}.observation.results[{j}]");
        let Some(r) = r.as_object() else {
            return Err(at(file, &rpath, "a result must be a JSON object".into()));
        };
        let id = match r.get("source_call_id") {
            None | Some(Value::Null) => continue, // a non-tool action
            Some(Value::String(id)) => id,
            Some(_) => {
                return Err(at(
                    file,
                    &format!("{rpath}.source_call_id"),
                    "not a string".into(),
                ));
            }
        };
        let text = text_of(r.get("content").unwrap_or(&Value::Null));
        let (is_error, status_from) = status(r, &text);
        pairing
            .result(
                trace,
                id,
                Outcome {
                    is_error,
                    status_from,
                    text,
                    path: rpath.clone(),
                    time: crate::timestamp(v),
                    ..Outcome::default()
                },
            )
            .map_err(|_| {
                let elsewhere = trace.calls[..first_call].iter().any(|c| &c.id == id);
                at(
                    file,
                    &format!("{rpath}.source_call_id"),
                    if elsewhere {
                        format!(
                            "{id:?} names a call of an earlier step; ATIF pairs a result with a call of its own step"
                        )
                    } else {
                        format!(
                            "{id:?} names no tool call of this step waiting for a result (an orphan, or a second result)"
                        )
                    },
                )
            })?;
    }
    Ok(())
}

fn tool_call(v: &Value, path: &str, file: &str, subagent: bool) -> Result<Call, Error> {
    let Some(c) = v.as_object() else {
        return Err(at(file, path, "a tool call must be a JSON object".into()));
    };
    let id = c
        .get("tool_call_id")
        .and_then(Value::as_str)
        .filter(|s| !s.is_empty())
        .ok_or_else(|| {
            at(
                file,
                &format!("{path}.tool_call_id"),
                "missing, empty or not a string".into(),
            )
        })?;
    let name = c
        .get("function_name")
        .and_then(Value::as_str)
        .ok_or_else(|| {
            at(
                file,
                &format!("{path}.function_name"),
                "missing, or not a string".into(),
            )
        })?;
    let arguments = match c.get("arguments") {
        Some(Value::Object(m)) => Value::Object(m.clone()),
        None | Some(Value::Null) => Value::Object(Map::new()),
        Some(_) => {
            return Err(at(
                file,
                &format!("{path}.arguments"),
                "must be a JSON object".into(),
            ));
        }
    };
    let mut writes: Vec<String> = WRITERS
        .iter()
        .filter(|(n, _)| *n == name)
        .filter_map(|(_, k)| arguments.get(*k).and_then(Value::as_str))
        .map(str::to_string)
        .collect();
    if name == "apply_patch"
        && let Some(p) = arguments
            .get("patch")
            .or_else(|| arguments.get("input"))
            .and_then(Value::as_str)
    {
        writes.extend(crate::patch_paths(p));
    }
    Ok(Call {
        id: id.to_string(),
        shell: SHELLS.contains(&name),
        name: name.to_string(),
        arguments,
        line: 0,
        outcome: None,
        writes,
        subagent,
        path: path.to_string(),
        ..Call::default()
    })
}

/// A result's error status and where it came from (see the module docs for the order).
fn status(r: &Map<String, Value>, text: &str) -> (bool, StatusFrom) {
    let extra = r.get("extra").and_then(Value::as_object);
    let get = |k: &str| extra.and_then(|e| e.get(k));
    if let Some(e) = get("is_error")
        .or_else(|| r.get("is_error"))
        .and_then(Value::as_bool)
    {
        return (e, StatusFrom::Flag);
    }
    // An exit code however the producer wrote it: 1, 137.0 or "1" (a float or a
    // string of digits is still the process's code, never "no status").
    if let Some(code) = get("exit_code").and_then(|c| match c {
        Value::Number(n) => n.as_i64().map(|i| i != 0).or(n.as_f64().map(|f| f != 0.0)),
        Value::String(s) => s.trim().parse::<i64>().ok().map(|i| i != 0),
        _ => None,
    }) {
        return (code, StatusFrom::ExitCode);
    }
    if let Some(s) = get("status").and_then(Value::as_str) {
        match s.to_ascii_lowercase().as_str() {
            // A call stopped before it finished (interrupted, aborted, killed) is no
            // success either.
            "error" | "errored" | "failed" | "failure" | "cancelled" | "canceled" | "timeout"
            | "timed_out" | "interrupted" | "aborted" | "killed" | "terminated" | "rejected"
            | "denied" | "incomplete" | "crashed" => {
                return (true, StatusFrom::Flag);
            }
            "ok" | "success" | "succeeded" | "completed" => return (false, StatusFrom::Flag),
            _ => {}
        }
    }
    let first = text.lines().next().unwrap_or("").trim();
    if let Some(n) = first
        .strip_prefix("Exit code ")
        .or_else(|| first.strip_prefix("Exit code: "))
        .and_then(|n| n.trim().parse::<i64>().ok())
    {
        return (n != 0, StatusFrom::TextExitCode);
    }
    if first.to_ascii_lowercase().starts_with("error:") {
        return (true, StatusFrom::TextErrorPrefix);
    }
    (false, StatusFrom::Absent)
}
