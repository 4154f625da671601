//! Strict JSON in, Python-compatible JSON out.
//!
//! Input: strict (no duplicate keys at any depth), by [`evident_traces::strict`].
//!
//! Output: the peer prints with `json.dumps(..., sort_keys=True, indent=2)` and digests
//! `json.dumps(..., sort_keys=True, separators=(",", ":"), ensure_ascii=False,
//! allow_nan=False)`. [`dumps`] reproduces both byte for byte, including Python's float
//! formatting, so `raw_sha256` equals the peer's.

use serde_json::Value;
use sha2::{Digest, Sha256};

use crate::text::{py_float_repr, write_json_str};

/// Parses JSON text strictly: valid UTF-8, no duplicate keys at any depth.
pub fn parse_strict(bytes: &[u8]) -> Result<Value, serde_json::Error> {
    evident_traces::strict::parse(bytes)
}

/// How [`dumps`] formats.
#[derive(Debug, Clone, Copy)]
pub struct Style {
    /// `Some(n)`: Python's `indent=n` (separators `,` and `: `); `None`: compact (`,` `:`).
    pub indent: Option<usize>,
    /// Python's `ensure_ascii`: non-ASCII characters written as `\uXXXX` escapes.
    pub ensure_ascii: bool,
    /// Python's `sort_keys`: object members in key order (else in the map's own order).
    pub sort_keys: bool,
}

/// The peer's digest form: sorted keys, compact, UTF-8 unescaped.
pub const CANONICAL: Style = Style {
    indent: None,
    ensure_ascii: false,
    sort_keys: true,
};
/// The peer's printed form: sorted keys, indent 2, ASCII-escaped.
pub const PRETTY: Style = Style {
    indent: Some(2),
    ensure_ascii: true,
    sort_keys: true,
};

/// Serializes like Python's `json.dumps` with the given style. Fails on numbers Python
/// would read as an infinite float (`1e400`), which `allow_nan=False` refuses.
pub fn dumps(v: &Value, style: Style) -> Result<String, DumpError> {
    let mut out = Vec::new();
    write(&mut out, v, style, 0)?;
    Ok(String::from_utf8(out)?)
}

/// Why a value cannot be written as Python's `json.dumps` would.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum DumpError {
    /// A number literal that does not read as a float.
    #[error("invalid number {0}")]
    InvalidNumber(String),
    /// A number Python reads as infinity (`allow_nan=False` refuses it).
    #[error("number {0} is out of range (Python reads it as infinity, which JSON cannot carry)")]
    OutOfRange(String),
    /// The output is not UTF-8 (cannot happen: every piece written is).
    #[error("the output is not UTF-8")]
    NotUtf8(#[from] std::string::FromUtf8Error),
}

/// SHA-256 (hex) of the canonical form.
pub fn canonical_sha256(v: &Value) -> Result<String, DumpError> {
    let s = dumps(v, CANONICAL)?;
    Ok(hex::encode(Sha256::digest(s.as_bytes())))
}

fn newline(out: &mut Vec<u8>, indent: Option<usize>, level: usize) {
    if let Some(n) = indent {
        out.push(b'\n');
        out.extend(std::iter::repeat_n(b' ', n * level));
    }
}

fn write(out: &mut Vec<u8>, v: &Value, st: Style, level: usize) -> Result<(), DumpError> {
    match v {
        Value::Null => out.extend_from_slice(b"null"),
        Value::Bool(b) => out.extend_from_slice(if *b { b"true" } else { b"false" }),
        Value::Number(n) => out.extend_from_slice(py_number(&n.to_string())?.as_bytes()),
        Value::String(s) => write_json_str(out, s, st.ensure_ascii),
        Value::Array(a) => {
            if a.is_empty() {
                out.extend_from_slice(b"[]");
                return Ok(());
            }
            out.push(b'[');
            for (i, x) in a.iter().enumerate() {
                if i > 0 {
                    out.push(b',');
                }
                newline(out, st.indent, level + 1);
                write(out, x, st, level + 1)?;
            }
            newline(out, st.indent, level);
            out.push(b']');
        }
        Value::Object(m) => {
            if m.is_empty() {
                out.extend_from_slice(b"{}");
                return Ok(());
            }
            let mut entries: Vec<(&String, &Value)> = m.iter().collect();
            if st.sort_keys {
                // Python sorts by code point; UTF-8 byte order is the same order.
                entries.sort_by(|a, b| a.0.cmp(b.0));
            }
            out.push(b'{');
            for (i, (k, x)) in entries.into_iter().enumerate() {
                if i > 0 {
                    out.push(b',');
                }
                newline(out, st.indent, level + 1);
                write_json_str(out, k, st.ensure_ascii);
                out.extend_from_slice(if st.indent.is_some() { b": " } else { b":" });
                write(out, x, st, level + 1)?;
            }
            newline(out, st.indent, level);
            out.push(b'}');
        }
    }
    Ok(())
}

/// A JSON number literal as Python re-serializes it: integers exactly (Python ints are
/// unbounded; `-0` is `0`), anything with a fraction or exponent as a float `repr`.
fn py_number(lit: &str) -> Result<String, DumpError> {
    if !lit.bytes().any(|b| matches!(b, b'.' | b'e' | b'E')) {
        return Ok(if lit == "-0" {
            "0".into()
        } else {
            lit.to_owned()
        });
    }
    let x: f64 = lit
        .parse()
        .map_err(|_| DumpError::InvalidNumber(lit.to_owned()))?;
    py_float_repr(x).ok_or_else(|| DumpError::OutOfRange(lit.to_owned()))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn rejects_duplicates_with_their_path() {
        let e = parse_strict(br#"{"a":[{"b":1,"b":2}]}"#).unwrap_err();
        assert!(e.to_string().contains("duplicate key 'b' at $.a[0]"), "{e}");
        assert!(parse_strict(br#"{"a":1,"b":{"a":2}}"#).is_ok());
        // Past 32 keys the check switches to a set: still exact, escapes decoded.
        let many: Vec<String> = (0..40).map(|i| format!("\"k{i}\":{i}")).collect();
        let obj = format!("{{\"x\":{{{}}}}}", many.join(","));
        assert!(parse_strict(obj.as_bytes()).is_ok());
        let dup = format!("{{\"x\":{{{},\"k\\u0033\":0}}}}", many.join(","));
        let e = parse_strict(dup.as_bytes()).unwrap_err();
        assert!(e.to_string().contains("duplicate key 'k3' at $.x"), "{e}");
        let e = parse_strict(br#"[{"a":{"b\u0020":1,"b ":2}}]"#).unwrap_err();
        assert!(
            e.to_string().contains("duplicate key 'b ' at $[0].a"),
            "{e}"
        );
    }

    #[test]
    fn canonical_form_matches_python() {
        let v = parse_strict(
            r#"{"b":[1.50,1E2,-0,12345678901234567890123],"a":"é\n","c":{}}"#.as_bytes(),
        )
        .unwrap();
        assert_eq!(
            dumps(&v, CANONICAL).unwrap(),
            "{\"a\":\"é\\n\",\"b\":[1.5,100.0,0,12345678901234567890123],\"c\":{}}"
        );
        assert_eq!(
            dumps(&v, PRETTY).unwrap(),
            "{\n  \"a\": \"\\u00e9\\n\",\n  \"b\": [\n    1.5,\n    100.0,\n    0,\n    12345678901234567890123\n  ],\n  \"c\": {}\n}"
        );
        let inf = parse_strict(b"[1e400]").unwrap();
        assert!(dumps(&inf, CANONICAL).is_err());
    }
}
