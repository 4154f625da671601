//! Trace adapters: an agent's recorded tool calls, in any format evident knows, become
//! a canonical case (`case_id`, `task`, `completion_claimed`, `requirements`, `events`)
//! or a provenance envelope.
//!
//! Reading a format is `evident_traces`'s job: each reader gives one neutral trace
//! (calls with arguments, results, error status and where it came from), pairing
//! strictly with the one shared mechanism; this module only maps that trace to seed
//! 001 events ([`events_of`]) and adds the wrapper and provenance.
//!
//! Seed 001's formats use the same wrapper — `{trace_id, task, completion_claimed, <payload>}`
//! — because none of the native formats says what the task was or whether the agent
//! claimed completion. Requirements always come from a separate file: what proves the
//! work is the owner's contract, not something inferred from the agent's own trace.
//! Tool-call arguments never enter evidence: asking for an action is not proof it ran.

mod chat;
pub use chat::{NO_TASK, check_error_prefix};

use serde_json::{Map, Value, json};

use crate::case::CaseError;
use crate::pyjson::{self, PRETTY};
use crate::spec::{Spec, parse_spec};
use crate::text::{py_blank, py_strip};

/// The trace formats `evident adapt` reads.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Format {
    /// `generic`: events as given (`action`, `success`, `evidence`), no pairing.
    Generic,
    /// `openai`: `tool_call` / `tool_result` records paired by `tool_call_id`.
    OpenAi,
    /// `anthropic`: Messages API `tool_use` / `tool_result` blocks.
    Anthropic,
    /// `openai-responses`: Responses API `function_call` / `function_call_output` items.
    OpenAiResponses,
    /// `mcp`: JSON-RPC `tools/call` requests and their responses.
    Mcp,
    /// `otel`: OpenTelemetry GenAI `execute_tool` spans (OTLP JSON).
    Otel,
    /// `openai-chat`: Chat Completions message lists, which have no error flag.
    OpenAiChat,
    /// Claude Code session transcript JSONL or `claude -p --output-format stream-json`.
    ClaudeCode,
    /// Codex rollout JSONL or `codex exec --json`.
    Codex,
    /// Harbor's Agent Trajectory Interchange Format, v1.0 to v1.8.
    Atif,
}

impl Format {
    /// Every format, in the order `--help` lists them.
    pub const ALL: [Format; 10] = [
        Format::Generic,
        Format::OpenAi,
        Format::Anthropic,
        Format::OpenAiResponses,
        Format::Mcp,
        Format::Otel,
        Format::OpenAiChat,
        Format::ClaudeCode,
        Format::Codex,
        Format::Atif,
    ];

    /// An agent's native log, read by `evident_traces` into one neutral trace (it
    /// records neither a trace id nor whether the agent claimed completion).
    pub fn is_native(self) -> bool {
        matches!(self, Format::ClaudeCode | Format::Codex | Format::Atif)
    }

    /// Seed 001's own formats: a call that never gets a result is an error there (as
    /// the peer behaves); in agent-native logs it is an unfinished call.
    pub fn is_seed_format(self) -> bool {
        matches!(self, Format::Generic | Format::OpenAi)
    }

    /// The name on the command line.
    pub fn name(self) -> &'static str {
        match self {
            Format::Generic => "generic",
            Format::OpenAi => "openai",
            Format::Anthropic => "anthropic",
            Format::OpenAiResponses => "openai-responses",
            Format::Mcp => "mcp",
            Format::Otel => "otel",
            Format::OpenAiChat => "openai-chat",
            Format::ClaudeCode => "claude-code",
            Format::Codex => "codex",
            Format::Atif => "atif",
        }
    }

    /// The format a command-line name means (`None` for an unknown name).
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
            Format::OpenAiChat => ("openai-chat@1", "openai-chat-messages"),
            Format::ClaudeCode => ("claude-code-jsonl@1", "claude-code-jsonl"),
            Format::Codex => ("codex-jsonl@1", "codex-jsonl"),
            Format::Atif => ("atif@1", "atif-trajectory"),
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
            Format::OpenAiChat => "messages",
            Format::ClaudeCode | Format::Codex => "lines",
            Format::Atif => "steps",
        }
    }
}

/// A rejected trace or requirements file; the message names the JSON path.
#[derive(Debug, thiserror::Error)]
pub enum AdaptError {
    /// The trace or requirements do not have the shape the format needs.
    #[error("{0}")]
    Invalid(String),
    /// The text is not strict JSON (serde_json's message names line and column).
    #[error(transparent)]
    Json(#[from] serde_json::Error),
    /// An object-form requirements document is rejected.
    #[error(transparent)]
    Spec(#[from] CaseError),
    /// The case cannot be printed as the peer would (a number it reads as infinity).
    #[error(transparent)]
    Dump(#[from] pyjson::DumpError),
    /// A trace reader rejected the document.
    #[error(transparent)]
    Trace(#[from] evident_traces::Error),
}

pub(crate) fn err<T>(msg: impl Into<String>) -> Result<T, AdaptError> {
    Err(AdaptError::Invalid(msg.into()))
}

/// One requirement of the owner's contract.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Requirement {
    /// The action that must have succeeded (stripped, as a case's requirement is).
    pub action: String,
    /// Evidence fields the action's latest event must carry, with values that count.
    pub evidence_fields: Vec<String>,
}

/// A requirements file: seed 001's list, or the object form ([`crate::spec`]).
#[derive(Debug, Clone, PartialEq)]
pub enum Requirements {
    /// The list form: each action and the evidence fields it needs.
    List(Vec<Requirement>),
    /// The object form: arguments, evidence values, counts and allowed writes.
    Spec(Spec),
}

impl From<Vec<Requirement>> for Requirements {
    fn from(v: Vec<Requirement>) -> Self {
        Requirements::List(v)
    }
}

impl From<Spec> for Requirements {
    fn from(s: Spec) -> Self {
        Requirements::Spec(s)
    }
}

/// What the command line adds to a trace that does not record it (only the
/// `openai-chat` format reads these).
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct AdaptOptions {
    /// A tool result whose content starts with one of these marks a failed call (the
    /// chat format has no error flag). Empty: every result is a success.
    pub error_prefixes: Vec<String>,
    /// `completion_claimed` when the trace does not record it.
    pub claimed: Option<bool>,
}

/// One adapted event.
#[derive(Debug, Clone, PartialEq)]
pub struct AdaptedEvent {
    /// The tool's name, which a requirement's action is matched against.
    pub action: String,
    /// The result was not an error (false for an unfinished call).
    pub success: bool,
    /// What the result showed (its structured data, or its text when a JSON object).
    pub evidence: Map<String, Value>,
    /// The call's id in the trace, so an envelope's event can be found in the log.
    pub source_event_id: Option<String>,
    /// What the agent asked for; never evidence. Output only with object-form
    /// requirements (seed 001's case format has no such member).
    pub arguments: Option<Map<String, Value>>,
    /// The call never got a result (agent-native logs only); `success` is false.
    pub unfinished: bool,
}

impl AdaptedEvent {
    pub(crate) fn new(
        action: String,
        success: bool,
        evidence: Map<String, Value>,
        source_event_id: Option<String>,
        arguments: Option<Map<String, Value>>,
    ) -> Self {
        AdaptedEvent {
            action,
            success,
            evidence,
            source_event_id,
            arguments,
            unfinished: false,
        }
    }

    /// The event's members in the canonical case (`arguments` only for the object
    /// form, `unfinished` only when set, so seed 001's output is unchanged).
    fn case_members(&self, object_form: bool) -> Map<String, Value> {
        let mut m = Map::new();
        m.insert("action".into(), Value::String(self.action.clone()));
        m.insert("success".into(), Value::Bool(self.success));
        m.insert("evidence".into(), Value::Object(self.evidence.clone()));
        if let (true, Some(a)) = (object_form, &self.arguments) {
            m.insert("arguments".into(), Value::Object(a.clone()));
        }
        if self.unfinished {
            m.insert("unfinished".into(), Value::Bool(true));
        }
        m
    }
}

/// Where an envelope came from.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Source {
    /// The adapter and its version (`openai-tool-trace@1`), so a reader knows the mapping.
    pub adapter: &'static str,
    /// The kind of log it read (`openai-tool-trace`).
    pub source_type: &'static str,
    /// The caller's name for the trace (`--source-ref`), to find it again.
    pub source_ref: String,
    /// SHA-256 (hex) of what was read — the bytes of an agent-native log, else the
    /// trace re-serialized canonically — so the envelope pins its input.
    pub raw_sha256: String,
}

/// A trace converted into a case, with its provenance kept apart from its evidence.
#[derive(Debug, Clone, PartialEq)]
pub struct Envelope {
    /// The wrapper's `trace_id` (without a wrapper, the `--source-ref`): the case id.
    pub trace_id: String,
    /// What the agent was asked to do.
    pub task: String,
    /// Whether the agent said it was done: the claim the evidence is checked against.
    pub completion_claimed: bool,
    /// The owner's requirements, from their own file (never from the trace).
    pub requirements: Requirements,
    /// One event per call, in the trace's order.
    pub events: Vec<AdaptedEvent>,
    /// Where the trace came from.
    pub source: Source,
}

fn requirements_value(reqs: &Requirements) -> Value {
    match reqs {
        Requirements::List(reqs) => Value::Array(
            reqs.iter()
                .map(|r| json!({"action": r.action, "evidence_fields": r.evidence_fields}))
                .collect(),
        ),
        Requirements::Spec(s) => s.to_value(),
    }
}

impl Envelope {
    /// The canonical case (`case_id` = `trace_id`), one line of case JSONL.
    pub fn case_value(&self) -> Value {
        json!({
            "case_id": self.trace_id,
            "task": self.task,
            "completion_claimed": self.completion_claimed,
            "requirements": requirements_value(&self.requirements),
            "events": self.events.iter().map(|e| Value::Object(e.case_members(self.object_form())))
                .collect::<Vec<_>>(),
        })
    }

    fn object_form(&self) -> bool {
        matches!(self.requirements, Requirements::Spec(_))
    }

    /// The full envelope, as the peer's `--envelope` prints it.
    pub fn envelope_value(&self) -> Value {
        json!({
            "trace_id": self.trace_id,
            "task": self.task,
            "completion_claimed": self.completion_claimed,
            "requirements": requirements_value(&self.requirements),
            "events": self.events.iter().enumerate().map(|(i, e)| {
                let mut m = e.case_members(self.object_form());
                m.insert("sequence".into(), json!(i));
                m.insert("source_event_id".into(), json!(e.source_event_id));
                Value::Object(m)
            }).collect::<Vec<_>>(),
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
        .map_err(AdaptError::from)
}

/// The same JSON on one line (a case line of `evident eval`), with a final newline.
pub fn to_line(v: &Value) -> Result<String, AdaptError> {
    let style = pyjson::Style {
        indent: None,
        ..PRETTY
    };
    pyjson::dumps(v, style)
        .map(|s| s + "\n")
        .map_err(AdaptError::from)
}

/// Reads a requirements file: seed 001's non-empty JSON array of `{action,
/// evidence_fields?}` (the same rules, and `strip()`, as a case's requirements), or
/// the object form (`{"requirements": [...], "writes": [...]}`, [`crate::spec`]).
pub fn parse_requirements(bytes: &[u8]) -> Result<Requirements, AdaptError> {
    let v = pyjson::parse_strict(bytes)?;
    if v.is_object() {
        return parse_spec(&v, "")
            .map(Requirements::Spec)
            .map_err(AdaptError::from);
    }
    parse_requirement_list(v).map(Requirements::List)
}

fn parse_requirement_list(v: Value) -> Result<Vec<Requirement>, AdaptError> {
    let Value::Array(items) = v else {
        return err("requirements must be a non-empty JSON array or an object");
    };
    if items.is_empty() {
        return err("requirements must be a non-empty JSON array");
    }
    let mut out = Vec::with_capacity(items.len());
    for (i, item) in items.iter().enumerate() {
        let Value::Object(o) = item else {
            return err(format!("[{i}]: Each requirement must be an object."));
        };
        for key in ["arguments", "evidence", "count"] {
            if o.contains_key(key) {
                return err(crate::case::object_form_only(i, key).replacen("requirements", "", 1));
            }
        }
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
    requirements: impl Into<Requirements>,
    source_ref: &str,
) -> Result<Envelope, AdaptError> {
    adapt_with(
        format,
        raw,
        requirements,
        source_ref,
        &AdaptOptions::default(),
    )
}

/// [`adapt`] with the command line's additions for formats that do not record them.
pub fn adapt_with(
    format: Format,
    raw: &Value,
    requirements: impl Into<Requirements>,
    source_ref: &str,
    opts: &AdaptOptions,
) -> Result<Envelope, AdaptError> {
    if py_blank(source_ref) {
        return err("--source-ref must be a non-empty string");
    }
    if format.is_native() {
        return err(format!(
            "the {} format is an agent's native log: adapt its bytes (adapt_bytes)",
            format.name()
        ));
    }
    if format != Format::OpenAiChat && (!opts.error_prefixes.is_empty() || opts.claimed.is_some()) {
        return err(format!(
            "--error-prefix and --claimed apply to the openai-chat format only ({} records success and the claim itself)",
            format.name()
        ));
    }
    use evident_traces as t;
    let (trace_id, task, completion_claimed, trace) = if format == Format::OpenAiChat {
        let w = chat::wrapper(raw, source_ref, opts)?;
        let trace = t::chat::read(w.payload, &opts.error_prefixes, "trace");
        (w.trace_id, w.task, w.completion_claimed, trace)
    } else {
        let w = wrapper(raw, format.payload_key())?;
        let trace = match format {
            Format::Generic => t::generic::read(w.payload, "trace"),
            Format::OpenAi => t::openai::read(w.payload, "trace"),
            Format::Anthropic => t::anthropic::read(w.payload, "trace"),
            Format::OpenAiResponses => t::responses::read(w.payload, "trace"),
            Format::Mcp => t::mcp::read(w.payload, "trace"),
            Format::Otel
            | Format::OpenAiChat
            | Format::ClaudeCode
            | Format::Codex
            | Format::Atif => t::otel::read(w.payload, "trace"),
        };
        (w.trace_id, w.task, w.completion_claimed, trace)
    };
    // One-document readers start their messages with the JSON path; the file is the
    // caller's to name.
    let events = events_of(trace.map_err(|e| AdaptError::Invalid(e.message))?.calls)?;
    let raw_sha256 = pyjson::canonical_sha256(raw)?;
    let (adapter, source_type) = format.ids();
    Ok(Envelope {
        trace_id,
        task,
        completion_claimed,
        requirements: requirements.into(),
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
    requirements: impl Into<Requirements>,
    source_ref: &str,
) -> Result<Envelope, AdaptError> {
    adapt_bytes_with(
        format,
        trace,
        requirements,
        source_ref,
        &AdaptOptions::default(),
    )
}

/// [`adapt_bytes`] with the command line's additions.
pub fn adapt_bytes_with(
    format: Format,
    trace: &[u8],
    requirements: impl Into<Requirements>,
    source_ref: &str,
    opts: &AdaptOptions,
) -> Result<Envelope, AdaptError> {
    if format.is_native() {
        return adapt_native(format, trace, requirements.into(), source_ref, opts);
    }
    let raw = pyjson::parse_strict(trace)?;
    adapt_with(format, &raw, requirements, source_ref, opts)
}

/// Agent-native logs through `evident_traces`: each tool call is an event named
/// after the tool, its success the log's error status (a call with no result is
/// unfinished, never a success), its evidence the result text when that is a JSON
/// object (never the arguments). The log records neither a trace id nor whether the
/// agent claimed completion: the id is `--source-ref`, the claim `--claimed`.
fn adapt_native(
    format: Format,
    trace: &[u8],
    requirements: Requirements,
    source_ref: &str,
    opts: &AdaptOptions,
) -> Result<Envelope, AdaptError> {
    use sha2::Digest;
    if py_blank(source_ref) {
        return err("--source-ref must be a non-empty string");
    }
    if !opts.error_prefixes.is_empty() {
        return err(format!(
            "--error-prefix applies to the openai-chat format only ({} records each result's status)",
            format.name()
        ));
    }
    let Some(completion_claimed) = opts.claimed else {
        return err(format!(
            "the {} format does not record whether the agent claimed completion; hint: pass --claimed true|false (it is never read from the agent's words)",
            format.name()
        ));
    };
    let t = match format {
        Format::ClaudeCode => evident_traces::claude_code::read(trace, "trace"),
        Format::Atif => evident_traces::atif::read(trace, "trace"),
        _ => evident_traces::codex::read(trace, "trace"),
    }?;
    // `codex exec --json` does not record the prompt: say so rather than invent one.
    let task = t
        .first_user_message()
        .filter(|m| !py_blank(m))
        .unwrap_or("(the log does not record the task)")
        .to_owned();
    let events = events_of(t.calls)?;
    let (adapter, source_type) = format.ids();
    Ok(Envelope {
        trace_id: source_ref.to_owned(),
        task,
        completion_claimed,
        requirements,
        events,
        source: Source {
            adapter,
            source_type,
            source_ref: source_ref.to_owned(),
            raw_sha256: hex::encode(sha2::Sha256::digest(trace)),
        },
    })
}

/// Seed 001 events from a neutral trace, one per call in the trace's order: named
/// after the tool, its success the result's error status (a call with no result is
/// unfinished, never a success), its evidence the result's structured data, else its
/// text when that is a JSON object (strictly: a duplicate key rejects the trace), and
/// never the arguments (asking for an action is not proof it ran; they are kept apart
/// for object-form requirements).
pub fn events_of(calls: Vec<evident_traces::Call>) -> Result<Vec<AdaptedEvent>, AdaptError> {
    let mut events = Vec::with_capacity(calls.len());
    for c in calls {
        let unfinished = c.outcome.is_none();
        let (success, evidence) = match c.outcome {
            Some(o) => {
                let evidence = match o.data {
                    Some(d) => d,
                    None if o.path.is_empty() => {
                        evidence_from_text(&o.text, &format!("line {} (call {:?})", c.line, c.id))?
                    }
                    None => evidence_from_text(&o.text, &o.path)?,
                };
                (!o.is_error, evidence)
            }
            None => (false, Map::new()),
        };
        let arguments = match c.arguments {
            Value::Object(m) => Some(m),
            _ => None,
        };
        let id = (!c.id.is_empty()).then_some(c.id);
        let mut e = AdaptedEvent::new(c.name, success, evidence, id, arguments);
        e.unfinished = unfinished;
        events.push(e);
    }
    Ok(events)
}
