//! The artifacts' byte format, the peer's: JSON files indented by 2 with sorted keys,
//! UTF-8 unescaped and a trailing newline; JSONL lines compact with sorted keys. Both
//! through `evident-eval`'s Python-compatible writer, so floats print as Python prints
//! them and two runs are byte-identical.

use std::fs::OpenOptions;
use std::io::{Read, Write};
use std::path::Path;

use evident_eval::pyjson::{self, CANONICAL, Style};
use serde_json::Value;
use sha2::{Digest, Sha256};

use crate::Error;

/// `json.dumps(v, indent=2, sort_keys=True, ensure_ascii=False)`.
const FILE: Style = Style {
    indent: Some(2),
    ensure_ascii: false,
    sort_keys: true,
};

/// A JSON file's text.
pub(crate) fn file_text(v: &Value) -> Result<String, Error> {
    pyjson::dumps(v, FILE)
        .map(|s| s + "\n")
        .map_err(|e| Error(format!("cannot serialize an artifact: {e}")))
}

/// One JSONL line, without its newline.
pub(crate) fn line_text(v: &Value) -> Result<String, Error> {
    pyjson::dumps(v, CANONICAL).map_err(|e| Error(format!("cannot serialize an artifact: {e}")))
}

/// A JSONL file's text.
pub(crate) fn jsonl_text<'a>(vs: impl IntoIterator<Item = &'a Value>) -> Result<String, Error> {
    let mut out = String::new();
    for v in vs {
        out.push_str(&line_text(v)?);
        out.push('\n');
    }
    Ok(out)
}

pub(crate) fn sha256_hex(bytes: &[u8]) -> String {
    hex::encode(Sha256::digest(bytes))
}

/// Creates a new file in a directory this run made (never replaces one, never follows a
/// link someone planted there).
pub(crate) fn create(path: &Path, text: &str) -> Result<(), Error> {
    let mut f = OpenOptions::new()
        .write(true)
        .create_new(true)
        .open(path)
        .map_err(|e| Error::io(path, "create", &e))?;
    f.write_all(text.as_bytes())
        .map_err(|e| Error::io(path, "write", &e))
}

/// Largest configuration or manifest read.
pub(crate) const MAX_INPUT_BYTES: u64 = 16 * 1024 * 1024;

/// Reads a file up to `limit` bytes; a larger one is refused, not truncated.
pub(crate) fn read_limited(path: &Path, limit: u64) -> Result<Vec<u8>, Error> {
    let f = std::fs::File::open(path).map_err(|e| Error::io(path, "open", &e))?;
    let mut buf = Vec::new();
    f.take(limit + 1)
        .read_to_end(&mut buf)
        .map_err(|e| Error::io(path, "read", &e))?;
    if buf.len() as u64 > limit {
        return Err(Error::file(
            path,
            format!("larger than {limit} bytes; refusing to read it"),
        ));
    }
    Ok(buf)
}

/// Strict JSON (no duplicate keys at any depth); the error names the file.
pub(crate) fn parse(file: &str, bytes: &[u8]) -> Result<Value, Error> {
    pyjson::parse_strict(bytes).map_err(|e| Error(format!("{file}: $: not valid JSON: {e}")))
}
