//! A neutral trace of an agent session — ordered tool calls with their arguments,
//! results and error status (and where that status came from), and the messages —
//! read from agents' native logs: ATIF trajectories (Harbor), Claude Code session
//! transcripts and `claude -p --output-format stream-json`, Codex rollout files and
//! `codex exec --json`. Readers pair strictly (see [`Pairing`]): a result before its call, an id
//! already waiting for its result, or a result no call waits for is an error naming
//! the line and the id; a call left without a result (an interrupted turn) is
//! *unfinished*, never a success.

pub mod atif;
pub mod claude_code;
pub mod codex;

use serde_json::Value;

/// Largest trace read (bytes).
pub const MAX_TRACE_BYTES: usize = 256 * 1024 * 1024;

/// A rejected trace: the file, the line (JSONL formats; 0 in one-document formats such
/// as ATIF, whose messages name the JSON path instead) and why.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Error {
    pub file: String,
    pub line: usize,
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
    User,
    Agent,
}

#[derive(Debug, Clone, PartialEq)]
pub struct Message {
    pub role: Role,
    pub text: String,
    pub line: usize,
}

/// Where a call's error status came from, so a heuristic is never shown as a fact.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
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
    Absent,
}

#[derive(Debug, Clone, PartialEq)]
pub struct Outcome {
    pub is_error: bool,
    pub status_from: StatusFrom,
    pub text: String,
    pub line: usize,
}

#[derive(Debug, Clone, PartialEq)]
pub struct Call {
    pub id: String,
    pub name: String,
    pub arguments: Value,
    pub line: usize,
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

#[derive(Debug, Clone, PartialEq, Default)]
pub struct Trace {
    pub messages: Vec<Message>,
    pub calls: Vec<Call>,
}

impl Trace {
    pub fn first_user_message(&self) -> Option<&str> {
        self.messages
            .iter()
            .find(|m| m.role == Role::User)
            .map(|m| m.text.as_str())
    }
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

/// Strict pairing of results with calls by id into a [`Trace`] (see [`Ids`]).
#[derive(Default)]
pub(crate) struct Pairing {
    ids: Ids,
}

impl Pairing {
    pub(crate) fn call(&mut self, trace: &mut Trace, call: Call, file: &str) -> Result<(), Error> {
        if self.ids.call(&call.id, trace.calls.len()).is_err() {
            return Err(Error {
                file: file.into(),
                line: call.line,
                message: format!(
                    "tool call id {:?} is already waiting for its result (a duplicate call)",
                    call.id
                ),
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
        file: &str,
    ) -> Result<(), Error> {
        match self.ids.result(id) {
            Ok(i) => {
                trace.calls[i].outcome = Some(outcome);
                Ok(())
            }
            Err(why) => Err(Error {
                file: file.into(),
                line: outcome.line,
                message: match why {
                    Broken::SecondResult => format!(
                        "tool result for id {id:?}: its call already has a result (a second result)"
                    ),
                    _ => format!(
                        "tool result for id {id:?} has no call waiting for it (an orphan, or a result before its call)"
                    ),
                },
            }),
        }
    }
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
