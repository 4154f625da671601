//! The audit's input files are read with evident's strict JSON reader
//! (`evident_format::json`): duplicate keys refused at any depth, numbers kept exact,
//! nesting limited. Messages lead with the JSON path (`$.claims[2].nodeid`); for a
//! duplicate key the path names the key itself.

use serde_json::Value;

pub use evident_format::json::push_key;

/// Why a text is not one strict JSON document: where, and what is wrong.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{}: {message} (line {line}, column {column})", show_path(path))]
pub struct NotStrictJson {
    /// The JSON path of the problem (for a duplicate key, the key itself).
    pub path: String,
    /// What is wrong, for a person.
    pub message: String,
    /// The line of the problem, from 1.
    pub line: usize,
    /// The column of the problem, from 1.
    pub column: usize,
}

/// Parses `bytes` as one JSON document, refusing duplicate keys and trailing data.
/// The error message starts with the JSON path where the problem is (`$` is the root).
pub fn parse_strict(bytes: &[u8]) -> Result<Value, NotStrictJson> {
    evident_format::json::parse(bytes)
        .map(|p| p.value)
        .map_err(|e| {
            let path = match &e.key {
                Some(key) => push_key(&e.path, key),
                None => e.path.clone(),
            };
            NotStrictJson {
                path,
                message: e.message,
                line: e.pos.line,
                column: e.pos.col,
            }
        })
}

/// Shows a JSON path for a message: `$` for the root, else `$.a.b`.
pub fn show_path(path: &str) -> String {
    if path.is_empty() {
        "$".to_string()
    } else if path.starts_with('[') {
        format!("${path}")
    } else {
        format!("$.{path}")
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn duplicate_keys_are_refused_with_their_path() {
        let e = parse_strict(br#"{"claims":[{"a":1,"a":2}]}"#)
            .unwrap_err()
            .to_string();
        assert!(e.starts_with("$.claims[0].a: duplicate key"), "{e}");
        let e = parse_strict(br#"{"x":1,"x":1}"#).unwrap_err().to_string();
        assert!(e.starts_with("$.x: duplicate key"), "{e}");
    }

    #[test]
    fn numbers_keep_their_text_and_values_parse() {
        let v = parse_strict(br#"{"n": 9007199254740993, "f": 1.50, "s": "x", "b": [true, null]}"#)
            .unwrap();
        assert_eq!(v["n"].to_string(), "9007199254740993");
        assert_eq!(v["s"], "x");
        assert_eq!(v["b"][0], true);
        assert!(v["b"][1].is_null());
    }

    #[test]
    fn bad_input_is_an_error_not_a_panic() {
        for bad in [
            &b""[..],
            b"{",
            b"{\"a\":1} x",
            b"\xff\xfe",
            b"[1,]",
            b"{\"a\":\"\\ud800\"}",
        ] {
            let e = parse_strict(bad).unwrap_err().to_string();
            assert!(e.starts_with('$'), "{e}");
        }
        let deep = "[".repeat(200) + &"]".repeat(200);
        assert!(parse_strict(deep.as_bytes()).is_err());
    }
}
