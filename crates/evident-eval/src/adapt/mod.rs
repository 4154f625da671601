//! Trace adapters: an agent's recorded tool calls, in one of six formats, become a
//! canonical case (`case_id`, `task`, `completion_claimed`, `requirements`, `events`)
//! or a provenance envelope.
//!
//! Every format uses the same wrapper — `{trace_id, task, completion_claimed, <payload>}`
//! — because none of the native formats says what the task was or whether the agent
//! claimed completion. Requirements always come from a separate file: what proves the
//! work is the owner's contract, not something inferred from the agent's own trace.
//! Tool-call arguments never enter evidence: asking for an action is not proof it ran.

mod anthropic;
mod generic;
mod mcp;
mod openai;
mod otel;
mod responses;

use serde_json::{Map, Value, json};

use crate::pyjson::{self, PRETTY};
use crate::text::{py_blank, py_strip};

/// The trace formats `evident adapt` reads.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Format {
    Generic,
    OpenAi,
    Anthropic,
    OpenAiResponses,
    Mcp,
    Otel,
}

impl Format {
    pub const ALL: [Format; 6] = [
        Format::Generic,
        Format::OpenAi,
        Format::Anthropic,
        Format::OpenAiResponses,
        Format::Mcp,
        Format::Otel,
    ];

    /// The name on the command line.
    pub fn name(self) -> &'static str {
        match self {
            Format::Generic => "generic",
            Format::OpenAi => "openai",
            Format::Anthropic => "anthropic",
            Format::OpenAiResponses => "openai-responses",
            Format::Mcp => "mcp",
            Format::Otel => "otel",
        }
    }

    pub fn parse(name: &str) -> Option<Format> {
        Format::ALL.into_iter().find(|f| f.name() == name)
    }

    /// `source.adapter` and `source.source_type` in the envelope.
    fn ids(self) -> (&'static str, &'static str) {
        match self {
            Format::Generic => ("generic-json@1", "generic-json"),
            Format::OpenAi => ("openai-tool-trace@1", "openai-tool-trace"),
            Format::Anthropic => ("anthropic-messages@1", "anthropic-messages"),
            Format::OpenAiResponses => ("openai-responses@1", "openai-responses"),
            Format::Mcp => ("mcp-jsonrpc@1", "mcp-jsonrpc"),
            Format::Otel => ("otlp-genai@1", "otlp-genai"),
        }
    }

    /// The wrapper key that holds the native payload.
    pub fn payload_key(self) -> &'static str {
        match self {
            Format::Generic => "events",
            Format::OpenAi => "records",
            Format::Anthropic => "messages",
            Format::OpenAiResponses => "items",
            Format::Mcp => "messages",
            Format::Otel => "resourceSpans",
        }
    }
}

/// A rejected trace or requirements file; the message names the JSON path.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{0}")]
pub struct AdaptError(pub String);

pub(crate) fn err<T>(msg: impl Into<String>) -> Result<T, AdaptError> {
    Err(AdaptError(msg.into()))
}

/// One requirement of the owner's contract.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Requirement {
    pub action: String,
    pub evidence_fields: Vec<String>,
}

/// One adapted event.
#[derive(Debug, Clone, PartialEq)]
pub struct AdaptedEvent {
    pub action: String,
    pub success: bool,
    pub evidence: Map<String, Value>,
    pub source_event_id: Option<String>,
}

/// Where an envelope came from.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Source {
    pub adapter: &'static str,
    pub source_type: &'static str,
    pub source_ref: String,
    pub raw_sha256: String,
}

/// A trace converted into a case, with its provenance kept apart from its evidence.
#[derive(Debug, Clone, PartialEq)]
pub struct Envelope {
    pub trace_id: String,
    pub task: String,
    pub completion_claimed: bool,
    pub requirements: Vec<Requirement>,
    pub events: Vec<AdaptedEvent>,
    pub source: Source,
}

fn requirements_value(reqs: &[Requirement]) -> Value {
    Value::Array(
        reqs.iter()
            .map(|r| json!({"action": r.action, "evidence_fields": r.evidence_fields}))
            .collect(),
    )
}

impl Envelope {
    /// The canonical case (`case_id` = `trace_id`), one line of case JSONL.
    pub fn case_value(&self) -> Value {
        json!({
            "case_id": self.trace_id,
            "task": self.task,
            "completion_claimed": self.completion_claimed,
            "requirements": requirements_value(&self.requirements),
            "events": self.events.iter().map(|e| json!({
                "action": e.action,
                "success": e.success,
                "evidence": Value::Object(e.evidence.clone()),
            })).collect::<Vec<_>>(),
        })
    }

    /// The full envelope, as the peer's `--envelope` prints it.
    pub fn envelope_value(&self) -> Value {
        json!({
            "trace_id": self.trace_id,
            "task": self.task,
            "completion_claimed": self.completion_claimed,
            "requirements": requirements_value(&self.requirements),
            "events": self.events.iter().enumerate().map(|(i, e)| json!({
                "action": e.action,
                "success": e.success,
                "evidence": Value::Object(e.evidence.clone()),
                "sequence": i,
                "source_event_id": e.source_event_id,
            })).collect::<Vec<_>>(),
            "source": {
                "adapter": self.source.adapter,
                "source_type": self.source.source_type,
                "source_ref": self.source.source_ref,
                "raw_sha256": self.source.raw_sha256,
            },
        })
    }
}

/// Prints a value the way the peer does: sorted keys, indent 2, newline at the end.
pub fn to_pretty(v: &Value) -> Result<String, AdaptError> {
    pyjson::dumps(v, PRETTY)
        .map(|s| s + "\n")
        .map_err(AdaptError)
}

/// Reads a requirements file: a non-empty JSON array of `{action, evidence_fields?}`,
/// with the same rules (and `strip()`) as a case's requirements.
pub fn parse_requirements(bytes: &[u8]) -> Result<Vec<Requirement>, AdaptError> {
    let v = pyjson::parse_strict(bytes).map_err(AdaptError)?;
    let Value::Array(items) = v else {
        return err("requirements must be a non-empty JSON array");
    };
    if items.is_empty() {
        return err("requirements must be a non-empty JSON array");
    }
    let mut out = Vec::with_capacity(items.len());
    for (i, item) in items.iter().enumerate() {
        let Value::Object(o) = item else {
            return err(format!("[{i}]: Each requirement must be an object."));
        };
        let action = match o.get("action") {
            Some(Value::String(s)) if !py_blank(s) => py_strip(s).to_owned(),
            Some(Value::String(_)) | None => {
                return err(format!(
                    "[{i}]: Each requirement requires a non-empty 'action'."
                ));
            }
            Some(_) => return err(format!("[{i}].action must be a string")),
        };
        let fields = match o.get("evidence_fields") {
            None => Vec::new(),
            Some(Value::Array(fs)) => {
                let mut v = Vec::with_capacity(fs.len());
                for f in fs {
                    match f {
                        Value::String(s) if !py_blank(s) => v.push(py_strip(s).to_owned()),
                        _ => {
                            return err(format!(
                                "[{i}]: 'evidence_fields' must be a list of non-empty strings."
                            ));
                        }
                    }
                }
                v
            }
            Some(_) => {
                return err(format!(
                    "[{i}]: 'evidence_fields' must be a list of non-empty strings."
                ));
            }
        };
        out.push(Requirement {
            action,
            evidence_fields: fields,
        });
    }
    Ok(out)
}

/// The wrapper every format shares.
pub(crate) struct Wrapper<'a> {
    pub trace_id: String,
    pub task: String,
    pub completion_claimed: bool,
    pub payload: &'a [Value],
}

pub(crate) fn wrapper<'a>(v: &'a Value, payload_key: &str) -> Result<Wrapper<'a>, AdaptError> {
    let Value::Object(o) = v else {
        return err("the trace must be a JSON object");
    };
    let trace_id = req_str(o, "trace_id", "trace_id")?;
    let task = req_str(o, "task", "task")?;
    let completion_claimed = match o.get("completion_claimed") {
        Some(Value::Bool(b)) => *b,
        _ => return err("completion_claimed must be a boolean"),
    };
    let payload = match o.get(payload_key) {
        Some(Value::Array(a)) => a.as_slice(),
        _ => return err(format!("{payload_key} must be an array")),
    };
    Ok(Wrapper {
        trace_id,
        task,
        completion_claimed,
        payload,
    })
}

/// A required non-empty (after `strip()`) string member, returned as given.
pub(crate) fn req_str(o: &Map<String, Value>, key: &str, path: &str) -> Result<String, AdaptError> {
    match o.get(key) {
        Some(Value::String(s)) if !py_blank(s) => Ok(s.clone()),
        Some(Value::String(_)) => err(format!("{path} must be a non-empty string")),
        Some(_) => err(format!("{path} must be a non-empty string")),
        None => err(format!("{path} is missing (a non-empty string)")),
    }
}

/// An optional object member (absent → empty).
pub(crate) fn opt_obj(
    o: &Map<String, Value>,
    key: &str,
    path: &str,
) -> Result<Map<String, Value>, AdaptError> {
    match o.get(key) {
        None => Ok(Map::new()),
        Some(Value::Object(m)) => Ok(m.clone()),
        Some(_) => err(format!("{path} must be an object")),
    }
}

/// Tool output text as evidence: a JSON object → that object; any other text → no
/// evidence. A duplicate key inside the output rejects the trace (its value would be
/// ambiguous).
pub(crate) fn evidence_from_text(text: &str, path: &str) -> Result<Map<String, Value>, AdaptError> {
    let t = text.trim_start();
    if !t.starts_with('{') {
        return Ok(Map::new());
    }
    match serde_json::from_str::<Value>(text) {
        Ok(Value::Object(_)) => match pyjson::parse_strict(text.as_bytes()) {
            Ok(Value::Object(m)) => Ok(m),
            Ok(_) => Ok(Map::new()),
            Err(e) => err(format!("{path}: the tool output is JSON with {e}")),
        },
        _ => Ok(Map::new()),
    }
}

/// Adapts a parsed trace. `raw` is the whole parsed trace file (for `raw_sha256`).
pub fn adapt(
    format: Format,
    raw: &Value,
    requirements: Vec<Requirement>,
    source_ref: &str,
) -> Result<Envelope, AdaptError> {
    if py_blank(source_ref) {
        return err("--source-ref must be a non-empty string");
    }
    let w = wrapper(raw, format.payload_key())?;
    let events = match format {
        Format::Generic => generic::events(w.payload)?,
        Format::OpenAi => openai::events(w.payload)?,
        Format::Anthropic => anthropic::events(w.payload)?,
        Format::OpenAiResponses => responses::events(w.payload)?,
        Format::Mcp => mcp::events(w.payload)?,
        Format::Otel => otel::events(w.payload)?,
    };
    let raw_sha256 = pyjson::canonical_sha256(raw).map_err(AdaptError)?;
    let (adapter, source_type) = format.ids();
    Ok(Envelope {
        trace_id: w.trace_id,
        task: w.task,
        completion_claimed: w.completion_claimed,
        requirements,
        events,
        source: Source {
            adapter,
            source_type,
            source_ref: source_ref.to_owned(),
            raw_sha256,
        },
    })
}

/// Parses the trace bytes strictly, then adapts them.
pub fn adapt_bytes(
    format: Format,
    trace: &[u8],
    requirements: Vec<Requirement>,
    source_ref: &str,
) -> Result<Envelope, AdaptError> {
    let raw = pyjson::parse_strict(trace).map_err(AdaptError)?;
    adapt(format, &raw, requirements, source_ref)
}

/// Pairs calls with results by id: the shared bookkeeping of the call/result formats.
/// Events come out in call order.
pub(crate) struct Pairing {
    kind_call: &'static str,
    kind_result: &'static str,
    calls: Vec<(String, String)>,
    index: std::collections::HashMap<String, usize>,
    results: Vec<Option<(bool, Map<String, Value>)>>,
}

impl Pairing {
    pub fn new(kind_call: &'static str, kind_result: &'static str) -> Self {
        Pairing {
            kind_call,
            kind_result,
            calls: Vec::new(),
            index: Default::default(),
            results: Vec::new(),
        }
    }

    pub fn call(&mut self, id: String, name: String, path: &str) -> Result<(), AdaptError> {
        if self.index.contains_key(&id) {
            return err(format!("{path}: duplicate {} id '{id}'", self.kind_call));
        }
        self.index.insert(id.clone(), self.calls.len());
        self.calls.push((id, name));
        self.results.push(None);
        Ok(())
    }

    pub fn has_call(&self, id: &str) -> bool {
        self.index.contains_key(id)
    }

    pub fn result(
        &mut self,
        id: &str,
        success: bool,
        evidence: Map<String, Value>,
        path: &str,
    ) -> Result<(), AdaptError> {
        let Some(&i) = self.index.get(id) else {
            return err(format!("{path}: {} '{id}' has no call", self.kind_result));
        };
        if self.results[i].is_some() {
            return err(format!("{path}: duplicate {} id '{id}'", self.kind_result));
        }
        self.results[i] = Some((success, evidence));
        Ok(())
    }

    pub fn finish(self) -> Result<Vec<AdaptedEvent>, AdaptError> {
        let mut out = Vec::with_capacity(self.calls.len());
        for ((id, name), r) in self.calls.into_iter().zip(self.results) {
            let Some((success, evidence)) = r else {
                return err(format!("{} '{id}' has no result", self.kind_call));
            };
            out.push(AdaptedEvent {
                action: name,
                success,
                evidence,
                source_event_id: Some(id),
            });
        }
        Ok(out)
    }
}
