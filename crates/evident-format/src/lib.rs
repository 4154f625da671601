//! The documents evident reads and writes, as Rust types, with strict parsing.
//!
//! - [`claim`]: the Completion Claim v0.1 (seed 000).
//! - [`json`]: the strict JSON reader under everything (duplicate keys refused,
//!   positions kept, numbers exact).
//! - [`timestamp`]: strict RFC 3339.
//!
//! Every error names the file, line and column, and the JSON path
//! (`evidence[2].at`). Unknown fields are kept and reported as [`Warning`]s, never
//! silently dropped. No I/O happens here.

#![warn(missing_docs)]

pub mod chain;
pub mod claim;
pub mod json;
pub mod timestamp;

pub use chain::{Chain, chain};
pub use claim::{
    CheckType, Claim, ClaimDocument, Evidence, GateRun, MaxAge, Mutation, OnUnverified, Policy,
    RequiredCheck, Task, Verifier, VerifierKind, Wave,
};
pub use json::{JsonText, Pos, Spans};
pub use timestamp::{Timestamp, TimestampError};

use serde::de::DeserializeOwned;
use serde_json::Value;
use std::fmt;

/// Invalid input: which file, where in it, which JSON path, and what is wrong.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Error {
    /// The name the input was read under (its path, or `-` for stdin).
    pub file: String,
    /// JSON path of the offending value (`""` = the document root).
    pub path: String,
    /// Line and column of that value (or its nearest ancestor), when it is in the text.
    pub pos: Option<Pos>,
    /// What is wrong, for a person.
    pub message: String,
}

impl Error {
    fn syntax(file: &str, e: json::SyntaxError) -> Self {
        Error {
            file: file.to_string(),
            path: e.path,
            pos: Some(e.pos),
            message: e.message,
        }
    }

    /// An error at `path`, positioned by `spans` (or its nearest existing ancestor).
    pub fn at(file: &str, spans: &Spans, path: String, message: String) -> Self {
        Error {
            file: file.to_string(),
            pos: spans.nearest(&path),
            path,
            message,
        }
    }
}

impl fmt::Display for Error {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}", self.file)?;
        if let Some(p) = self.pos {
            write!(f, ":{}:{}", p.line, p.col)?;
        }
        let path = if self.path.is_empty() {
            "(document root)"
        } else {
            &self.path
        };
        write!(f, ": at {path}: {}", self.message)
    }
}

impl std::error::Error for Error {}

/// Something accepted but worth a person's attention (an unknown field, a missing policy…).
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize)]
pub struct Warning {
    /// The document the warning is about (`None` for a warning about the run itself).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub file: Option<String>,
    /// JSON path of the value it is about (`""` = the document root).
    pub path: String,
    /// Line and column, for the text form only: positions are not part of the JSON report.
    #[serde(skip)]
    pub pos: Option<Pos>,
    /// What a person should know, in one sentence.
    pub message: String,
}

impl fmt::Display for Warning {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        if let Some(file) = &self.file {
            write!(f, "{file}:")?;
        }
        match self.pos {
            Some(p) => write!(
                f,
                "{}:{}: at {}: {}",
                p.line, p.col, self.path, self.message
            ),
            None if self.file.is_some() => write!(f, " at {}: {}", self.path, self.message),
            None => write!(f, "at {}: {}", self.path, self.message),
        }
    }
}

/// Fills `T` from a strictly parsed value: errors carry the JSON path (and position),
/// unknown fields come back as warnings.
pub fn typed<T: DeserializeOwned>(
    value: &Value,
    spans: &Spans,
    file: &str,
) -> Result<(T, Vec<Warning>), Error> {
    typed_with(value, spans, file, |m| m)
}

/// [`typed`] straight from strict compact text (see [`json::check`]), building no
/// `Value` of the document. Nesting deeper than serde_json's reader allows (127
/// levels) must go through [`typed`].
pub fn typed_text<T: DeserializeOwned>(
    text: &str,
    spans: &Spans,
    file: &str,
) -> Result<(T, Vec<Warning>), Error> {
    let mut de = serde_json::Deserializer::from_str(text);
    // Positions come from `spans`, by path: drop the reader's own, which count
    // within the compact text, so a message reads as it does from a value.
    typed_with(&mut de, spans, file, |m| match m.rfind(" at line ") {
        Some(i)
            if m[i + 9..]
                .split(" column ")
                .all(|n| !n.is_empty() && n.bytes().all(|b| b.is_ascii_digit())) =>
        {
            m[..i].to_string()
        }
        _ => m,
    })
}

fn typed_with<'de, T: serde::Deserialize<'de>, D: serde::Deserializer<'de>>(
    de: D,
    spans: &Spans,
    file: &str,
    message_of: impl Fn(String) -> String,
) -> Result<(T, Vec<Warning>), Error> {
    let mut ignored = Vec::new();
    let mut on_ignored = |p: serde_ignored::Path<'_>| ignored.push(ignored_path(&p));
    let de = serde_ignored::Deserializer::new(de, &mut on_ignored);
    let result: Result<T, _> = serde_path_to_error::deserialize(de);
    match result {
        Ok(t) => {
            let warnings = ignored
                .into_iter()
                .map(|path| Warning {
                    file: Some(file.to_string()),
                    pos: spans.nearest(&path),
                    message: "unknown field (kept, not used)".to_string(),
                    path,
                })
                .collect();
            Ok((t, warnings))
        }
        Err(e) => {
            let mut path = error_path(e.path());
            let mut message = message_of(e.inner().to_string());
            // "missing field `kind`" is about a field that is not there: name it.
            if let Some(field) = message
                .strip_prefix("missing field `")
                .and_then(|r| r.strip_suffix('`'))
            {
                path = json::push_key(&path, field);
                message = format!("missing required field {field:?}");
            }
            Err(Error::at(file, spans, path, message))
        }
    }
}

fn error_path(p: &serde_path_to_error::Path) -> String {
    use serde_path_to_error::Segment;
    let mut out = String::new();
    for seg in p.iter() {
        out = match seg {
            Segment::Seq { index } => json::push_index(&out, *index),
            Segment::Map { key } => json::push_key(&out, key),
            Segment::Enum { variant } => json::push_key(&out, variant),
            Segment::Unknown => out,
        };
    }
    out
}

fn ignored_path(p: &serde_ignored::Path<'_>) -> String {
    use serde_ignored::Path;
    match p {
        Path::Root => String::new(),
        Path::Seq { parent, index } => json::push_index(&ignored_path(parent), *index),
        Path::Map { parent, key } => json::push_key(&ignored_path(parent), key),
        Path::Some { parent } | Path::NewtypeStruct { parent } => ignored_path(parent),
        Path::NewtypeVariant { parent } => ignored_path(parent),
    }
}
