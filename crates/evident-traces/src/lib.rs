//! A neutral trace of an agent session — ordered tool calls with their arguments,
//! results and error status (and where that status came from), timestamps where the
//! log has them, and the messages — read from every format evident knows:
//!
//! - agents' native logs: ATIF trajectories (Harbor), Claude Code session transcripts
//!   and `claude -p --output-format stream-json`, Codex rollout files and `codex exec
//!   --json` ([`atif`], [`claude_code`], [`codex`], which read bytes);
//! - the API and protocol formats of seed 001's adapters: [`generic`], [`openai`],
//!   [`anthropic`], [`responses`], [`mcp`], [`otel`] and [`chat`], which read the
//!   payload array of an already strictly parsed document ([`strict`]) and name JSON
//!   paths in their errors.
//!
//! Every call/result format pairs with one mechanism ([`Ids`], worded by `Pairing`):
//! a result before its call, an id already waiting for its result, or a result no call
//! waits for is an error naming the line or path and the id; a call left without a
//! result (an interrupted turn) is *unfinished*, never a success (in seed 001's own
//! formats, `generic` and `openai`, it is an error, as the peer behaves). What the
//! trace means as evidence is the caller's business (evident-eval maps it to seed 001
//! events): a reader never turns a call's arguments into anything but arguments.

#![warn(missing_docs)]

pub mod anthropic;
pub mod atif;
pub mod chat;
pub mod claude_code;
pub mod codex;
pub mod generic;
pub mod mcp;
pub mod openai;
pub mod otel;
pub mod responses;
pub mod strict;

use serde_json::{Map, Value};

/// Largest trace read (bytes).
pub const MAX_TRACE_BYTES: usize = 256 * 1024 * 1024;

/// A rejected trace: the file, the line (JSONL formats; 0 in one-document formats such
/// as ATIF, whose messages name the JSON path instead) and why.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Error {
    /// The name the caller gave the trace (usually its path), for the message.
    pub file: String,
    /// The 1-based line of a JSONL trace; 0 when the message names a JSON path.
    pub line: usize,
    /// What is wrong, in words a user can act on (without the file and line).
    pub message: String,
}

impl std::fmt::Display for Error {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        if self.line == 0 {
            write!(f, "{}: {}", self.file, self.message)
        } else {
            write!(f, "{}: line {}: {}", self.file, self.line, self.message)
        }
    }
}

impl std::error::Error for Error {}

/// Who wrote a message.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Role {
    /// The user: their first message is taken as the task.
    User,
    /// The agent under evaluation: its words are never read as evidence.
    Agent,
}

/// One message of the conversation, kept apart from the calls: what was asked and
/// said, never what ran.
#[derive(Debug, Clone, PartialEq)]
pub struct Message {
    /// Who wrote it.
    pub role: Role,
    /// Its text (text blocks joined by newlines; other blocks left out).
    pub text: String,
    /// The line (JSONL formats; 0 in one-document formats).
    pub line: usize,
}

/// Where a call's error status came from, so a heuristic is never shown as a fact.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum StatusFrom {
    /// The log's own error flag (`is_error`, `success`, `status`).
    Flag,
    /// A process exit code.
    ExitCode,
    /// No status field; the result text's first line reads `Exit code N` (a
    /// convention, not a field: shown as such).
    TextExitCode,
    /// No status field; the result text starts with `error:` (a convention).
    TextErrorPrefix,
    /// No status in the log: taken as not an error.
    #[default]
    Absent,
    /// A convention the format documents in place of a flag: the `openai-responses`
    /// rules (`status: "incomplete"`, an `error` member in the output) and an
    /// `--error-prefix` on `openai-chat` results.
    Convention,
}

/// The result a call got, as the log records it.
#[derive(Debug, Clone, PartialEq, Default)]
pub struct Outcome {
    /// The call failed, as far as the log says (see [`Outcome::status_from`]).
    pub is_error: bool,
    /// Where [`Outcome::is_error`] came from, so a guess is shown as one.
    pub status_from: StatusFrom,
    /// The result as text (empty when the log gives only [`Outcome::data`]).
    pub text: String,
    /// The result as a JSON object where the log gives one as structure rather than
    /// text (seed 001's `evidence`, MCP `structuredContent` or a JSON-RPC `error`, an
    /// OTel result attribute given as a map).
    pub data: Option<Map<String, Value>>,
    /// The line (JSONL formats; 0 in one-document formats).
    pub line: usize,
    /// Where the result text is, as a JSON path (one-document formats; empty in JSONL).
    pub path: String,
    /// When, as the log writes it (an RFC 3339 text, or OTel's Unix nanoseconds).
    pub time: Option<String>,
}

/// One tool call and its result, if it got one.
#[derive(Debug, Clone, PartialEq, Default)]
pub struct Call {
    /// Empty only where the format makes ids optional (`generic` events).
    pub id: String,
    /// The tool's name as the log writes it (what a required action is matched against).
    pub name: String,
    /// `Null` when the log gives none.
    pub arguments: Value,
    /// The line (JSONL formats; 0 in one-document formats).
    pub line: usize,
    /// Where the call is, as a JSON path (one-document formats; empty in JSONL).
    pub path: String,
    /// When, as the log writes it (see [`Outcome::time`]).
    pub time: Option<String>,
    /// `None`: the call never got a result (unfinished).
    pub outcome: Option<Outcome>,
    /// Files the call says it writes (from its arguments: a path to write, a patch's
    /// file headers), as written in the log.
    pub writes: Vec<String>,
    /// A shell command: it may change any file.
    pub shell: bool,
    /// Inside a subagent (Claude Code sidechain).
    pub subagent: bool,
}

/// An agent session in a neutral form, whatever format it was read from.
#[derive(Debug, Clone, PartialEq, Default)]
pub struct Trace {
    /// The conversation, in the log's order.
    pub messages: Vec<Message>,
    /// The tool calls, in the order they were made.
    pub calls: Vec<Call>,
}

impl Trace {
    /// The task as the user gave it (`None` where the log does not record the prompt,
    /// as in `codex exec --json`).
    pub fn first_user_message(&self) -> Option<&str> {
        self.messages
            .iter()
            .find(|m| m.role == Role::User)
            .map(|m| m.text.as_str())
    }

    /// The agent's final words (what it says it did; never evidence that it did).
    pub fn last_agent_message(&self) -> Option<&str> {
        self.messages
            .iter()
            .rev()
            .find(|m| m.role == Role::Agent)
            .map(|m| m.text.as_str())
    }
}

/// The pairing rules every call/result format shares (the witnesses issue's
/// definitions), over call indices: a call whose id is still waiting for its result is a
/// *duplicate* (an id reused after its result arrived is a new call — real logs do
/// this); a result no call waits for is an *orphan*, or a *second result* when its id's
/// call was already answered; a result before its call is an orphan at that point.
/// Each format's reader words the errors (with its line or JSON path).
#[derive(Debug, Default)]
pub struct Ids {
    waiting: std::collections::HashMap<String, usize>,
    answered: std::collections::HashSet<String>,
}

/// Why a call or a result breaks the pairing rules.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Broken {
    /// A call whose id is still waiting for its result.
    Duplicate,
    /// A result no call waits for (or one before its call).
    Orphan,
    /// A result for an id whose call already has one.
    SecondResult,
}

impl Ids {
    /// A call with `id`, at `index` in the reader's own list.
    pub fn call(&mut self, id: &str, index: usize) -> Result<(), Broken> {
        if self.waiting.contains_key(id) {
            return Err(Broken::Duplicate);
        }
        self.answered.remove(id);
        self.waiting.insert(id.to_string(), index);
        Ok(())
    }

    /// A result for `id`: the index of the call it answers.
    pub fn result(&mut self, id: &str) -> Result<usize, Broken> {
        match self.waiting.remove(id) {
            Some(i) => {
                self.answered.insert(id.to_string());
                Ok(i)
            }
            None if self.answered.contains(id) => Err(Broken::SecondResult),
            None => Err(Broken::Orphan),
        }
    }
}

/// Strict pairing of results with calls by id into a [`Trace`], with the rules of
/// [`Ids`], worded with the format's own names for a call and a result. Errors are the
/// message alone; the reader adds the line or the JSON path.
pub(crate) struct Pairing {
    ids: Ids,
    call: &'static str,
    result: &'static str,
}

impl Default for Pairing {
    fn default() -> Self {
        Pairing::named("tool call", "tool result")
    }
}

impl Pairing {
    pub(crate) fn named(call: &'static str, result: &'static str) -> Self {
        Pairing {
            ids: Ids::default(),
            call,
            result,
        }
    }

    pub(crate) fn call(&mut self, trace: &mut Trace, call: Call) -> Result<(), PairingError> {
        if self.ids.call(&call.id, trace.calls.len()).is_err() {
            return Err(PairingError::CallPending {
                call: self.call,
                id: call.id,
            });
        }
        trace.calls.push(call);
        Ok(())
    }

    pub(crate) fn result(
        &mut self,
        trace: &mut Trace,
        id: &str,
        outcome: Outcome,
    ) -> Result<(), PairingError> {
        match self.ids.result(id) {
            Ok(i) => {
                trace.calls[i].outcome = Some(outcome);
                Ok(())
            }
            Err(Broken::SecondResult) => Err(PairingError::SecondResult {
                result: self.result,
                id: id.to_string(),
            }),
            Err(_) => Err(PairingError::Orphan {
                call: self.call,
                result: self.result,
                id: id.to_string(),
            }),
        }
    }

    /// Seed 001's formats: a call that never got a result is an error.
    pub(crate) fn require_results(&self, trace: &Trace) -> Result<(), PairingError> {
        match trace.calls.iter().find(|c| c.outcome.is_none()) {
            Some(c) => Err(PairingError::NoResult {
                call: self.call,
                id: c.id.clone(),
            }),
            None => Ok(()),
        }
    }
}

/// Why a call or result does not pair up; becomes the message of a trace [`Error`].
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub(crate) enum PairingError {
    /// A second call with the id of one still waiting for its result.
    #[error("duplicate {call} id '{}' (a call with this id is still waiting for its result)", id.escape_debug())]
    CallPending { call: &'static str, id: String },
    /// A second result for a call that already has one.
    #[error("duplicate {result} id '{}' (its call already has a result)", id.escape_debug())]
    SecondResult { result: &'static str, id: String },
    /// A result with no call waiting for it.
    #[error("{result} '{}' has no earlier {call} waiting for it (a result before its call, or an orphan)", id.escape_debug())]
    Orphan {
        call: &'static str,
        result: &'static str,
        id: String,
    },
    /// A call that never got a result.
    #[error("{call} '{}' has no result", id.escape_debug())]
    NoResult { call: &'static str, id: String },
}

/// Python's `str.isspace()` for one character (what `strip()` removes): Rust's
/// whitespace plus U+001C..U+001F, which Python also counts (bidi class B/S).
#[inline]
pub fn is_py_space(c: char) -> bool {
    c.is_whitespace() || ('\u{1c}'..='\u{1f}').contains(&c)
}

/// Whether a string is empty after Python's `strip()`.
pub fn py_blank(s: &str) -> bool {
    s.trim_matches(is_py_space).is_empty()
}

/// A one-document reader's error: no line, the message starts with the JSON path.
pub(crate) fn doc_err<T>(file: &str, message: impl Into<String>) -> Result<T, Error> {
    Err(Error {
        file: file.into(),
        line: 0,
        message: message.into(),
    })
}

/// A required non-empty (after `strip()`) string member, returned as given.
pub(crate) fn req_str(
    o: &Map<String, Value>,
    key: &str,
    path: &str,
    file: &str,
) -> Result<String, Error> {
    match o.get(key) {
        Some(Value::String(s)) if !py_blank(s) => Ok(s.clone()),
        Some(_) => doc_err(file, format!("{path} must be a non-empty string")),
        None => doc_err(file, format!("{path} is missing (a non-empty string)")),
    }
}

/// An optional object member (absent → `None`).
pub(crate) fn opt_obj(
    o: &Map<String, Value>,
    key: &str,
    path: &str,
    file: &str,
) -> Result<Option<Map<String, Value>>, Error> {
    match o.get(key) {
        None => Ok(None),
        Some(Value::Object(m)) => Ok(Some(m.clone())),
        Some(_) => doc_err(file, format!("{path} must be an object")),
    }
}

/// A JSON object given as text (the chat, Responses and OTel formats' arguments): it
/// must parse strictly to an object; an empty string means no arguments.
pub(crate) fn arguments_from_text(text: &str, path: &str, file: &str) -> Result<Value, Error> {
    if text.trim().is_empty() {
        return Ok(Value::Object(Map::new()));
    }
    match strict::parse(text.as_bytes()) {
        Ok(v @ Value::Object(_)) => Ok(v),
        Ok(_) => doc_err(file, format!("{path} must be a JSON object, given as text")),
        Err(e) => doc_err(
            file,
            format!("{path} is not valid JSON ({e}): the call's arguments cannot be read"),
        ),
    }
}

/// Text of `[{type: "text", text}, ...]` parts whose type is one of `types`, joined
/// with nothing (as seed 001's adapters read tool output); a part that is not an
/// object, or a text part whose `text` is not a string, rejects the trace.
pub(crate) fn joined_parts(
    parts: &[Value],
    types: &[&str],
    path: &str,
    file: &str,
) -> Result<String, Error> {
    let mut text = String::new();
    for (k, p) in parts.iter().enumerate() {
        let Value::Object(p) = p else {
            return doc_err(file, format!("{path}[{k}] must be an object"));
        };
        if p.get("type")
            .and_then(Value::as_str)
            .is_some_and(|t| types.contains(&t))
        {
            match p.get("text") {
                Some(Value::String(t)) => text.push_str(t),
                _ => return doc_err(file, format!("{path}[{k}].text must be a string")),
            }
        }
    }
    Ok(text)
}

/// A JSONL reader's error at `line`.
pub(crate) fn line_err(file: &str, line: usize, message: String) -> Error {
    Error {
        file: file.into(),
        line,
        message,
    }
}

/// A line's or step's `timestamp`, as written.
pub(crate) fn timestamp(v: &Value) -> Option<String> {
    v.get("timestamp")
        .and_then(Value::as_str)
        .map(str::to_string)
}

/// Read JSONL: each non-empty line one JSON object.
pub(crate) fn lines<'a>(
    bytes: &'a [u8],
    file: &'a str,
) -> Result<impl Iterator<Item = Result<(usize, Value), Error>> + 'a, Error> {
    if bytes.len() > MAX_TRACE_BYTES {
        return Err(Error {
            file: file.into(),
            line: 0,
            message: format!("the trace exceeds {MAX_TRACE_BYTES} bytes"),
        });
    }
    Ok(bytes
        .split(|&b| b == b'\n')
        .enumerate()
        .filter(|(_, l)| !l.iter().all(u8::is_ascii_whitespace))
        .map(move |(i, l)| {
            let v: Value = serde_json::from_slice(l).map_err(|e| Error {
                file: file.into(),
                line: i + 1,
                message: format!("not JSON: {e}"),
            })?;
            if !v.is_object() {
                return Err(Error {
                    file: file.into(),
                    line: i + 1,
                    message: "a line is not a JSON object".into(),
                });
            }
            Ok((i + 1, v))
        }))
}

pub(crate) fn text_of(v: &Value) -> String {
    match v {
        Value::String(s) => s.clone(),
        Value::Array(a) => a
            .iter()
            .filter_map(|b| b.get("text").and_then(Value::as_str).or_else(|| b.as_str()))
            .collect::<Vec<_>>()
            .join("\n"),
        Value::Null => String::new(),
        other => other.to_string(),
    }
}

/// Files named by an `apply_patch` patch (`*** Add File:`, `*** Update File:`,
/// `*** Delete File:`, `*** Move to:`).
pub fn patch_paths(patch: &str) -> Vec<String> {
    let mut out = Vec::new();
    for l in patch.lines() {
        for p in [
            "*** Add File: ",
            "*** Update File: ",
            "*** Delete File: ",
            "*** Move to: ",
        ] {
            if let Some(rest) = l.strip_prefix(p) {
                let rest = rest.trim();
                if !rest.is_empty() && !out.iter().any(|x| x == rest) {
                    out.push(rest.to_string());
                }
            }
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::{Broken, Ids};

    #[test]
    fn the_pairing_rules() {
        let mut ids = Ids::default();
        assert_eq!(
            ids.result("a"),
            Err(Broken::Orphan),
            "a result before its call"
        );
        ids.call("a", 0).unwrap();
        assert_eq!(ids.call("a", 1), Err(Broken::Duplicate));
        assert_eq!(ids.result("a"), Ok(0));
        assert_eq!(ids.result("a"), Err(Broken::SecondResult));
        // Reused after its result: a new call.
        ids.call("a", 2).unwrap();
        assert_eq!(ids.result("a"), Ok(2));
        assert_eq!(ids.result("b"), Err(Broken::Orphan));
    }
}
