//! A small strict JSON reader for the audit's input files.
//!
//! `serde_json::Value` keeps the last of two duplicate keys silently; this reader
//! refuses duplicates at any depth and names the JSON path of the offending key
//! (`claims[2].nodeid`). Numbers keep their exact text (`arbitrary_precision`).

use serde::de::{self, DeserializeSeed, MapAccess, SeqAccess, Visitor};
use serde_json::{Map, Number, Value};
use std::fmt;
use std::str::FromStr;

/// Deepest nesting accepted; deeper input is refused rather than risking the stack.
pub const MAX_DEPTH: usize = 64;

/// The key serde_json uses to smuggle an arbitrary-precision number through a map.
const NUMBER_TOKEN: &str = "$serde_json::private::Number";

/// Parses `bytes` as one JSON document, refusing duplicate keys and trailing data.
/// The error message starts with the JSON path where the problem is (`$` is the root).
pub fn parse_strict(bytes: &[u8]) -> Result<Value, String> {
    let text = std::str::from_utf8(bytes)
        .map_err(|e| format!("$: not UTF-8 (invalid byte at offset {})", e.valid_up_to()))?;
    let mut de = serde_json::Deserializer::from_str(text);
    let value = Seed {
        path: String::new(),
        depth: 0,
    }
    .deserialize(&mut de)
    .map_err(|e| tidy(e.to_string()))?;
    de.end().map_err(|e| format!("$: {e}"))?;
    Ok(value)
}

fn tidy(message: String) -> String {
    // Our own errors already start with a path; serde_json's syntax errors do not.
    if message.starts_with("$") {
        message
    } else {
        format!("$: {message}")
    }
}

/// Appends an object key to a JSON path (`a.b`, or `a["odd key"]`).
pub fn push_key(path: &str, key: &str) -> String {
    let plain = !key.is_empty()
        && key
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || c == '_' || c == '-');
    if plain {
        if path.is_empty() {
            key.to_string()
        } else {
            format!("{path}.{key}")
        }
    } else {
        format!(
            "{path}[{}]",
            serde_json::to_string(key).unwrap_or_else(|_| "?".into())
        )
    }
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

struct Seed {
    path: String,
    depth: usize,
}

impl<'de> DeserializeSeed<'de> for Seed {
    type Value = Value;
    fn deserialize<D: de::Deserializer<'de>>(self, d: D) -> Result<Value, D::Error> {
        if self.depth > MAX_DEPTH {
            return Err(de::Error::custom(format!(
                "{}: nesting deeper than {MAX_DEPTH}",
                show_path(&self.path)
            )));
        }
        d.deserialize_any(self)
    }
}

impl<'de> Visitor<'de> for Seed {
    type Value = Value;
    fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
        f.write_str("a JSON value")
    }
    fn visit_bool<E>(self, v: bool) -> Result<Value, E> {
        Ok(Value::Bool(v))
    }
    fn visit_i64<E>(self, v: i64) -> Result<Value, E> {
        Ok(Value::Number(v.into()))
    }
    fn visit_u64<E>(self, v: u64) -> Result<Value, E> {
        Ok(Value::Number(v.into()))
    }
    fn visit_f64<E: de::Error>(self, v: f64) -> Result<Value, E> {
        Number::from_f64(v)
            .map(Value::Number)
            .ok_or_else(|| E::custom(format!("{}: not a finite number", show_path(&self.path))))
    }
    fn visit_str<E>(self, v: &str) -> Result<Value, E> {
        Ok(Value::String(v.to_string()))
    }
    fn visit_string<E>(self, v: String) -> Result<Value, E> {
        Ok(Value::String(v))
    }
    fn visit_unit<E>(self) -> Result<Value, E> {
        Ok(Value::Null)
    }
    fn visit_none<E>(self) -> Result<Value, E> {
        Ok(Value::Null)
    }
    fn visit_seq<A: SeqAccess<'de>>(self, mut seq: A) -> Result<Value, A::Error> {
        let mut out = Vec::new();
        loop {
            let seed = Seed {
                path: format!("{}[{}]", self.path, out.len()),
                depth: self.depth + 1,
            };
            match seq.next_element_seed(seed)? {
                Some(v) => out.push(v),
                None => return Ok(Value::Array(out)),
            }
        }
    }
    fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<Value, A::Error> {
        let mut out = Map::new();
        while let Some(key) = map.next_key::<String>()? {
            if key == NUMBER_TOKEN && out.is_empty() {
                let text: String = map.next_value()?;
                let n = Number::from_str(&text).map_err(|_| {
                    de::Error::custom(format!("{}: bad number", show_path(&self.path)))
                })?;
                return Ok(Value::Number(n));
            }
            let path = push_key(&self.path, &key);
            if out.contains_key(&key) {
                return Err(de::Error::custom(format!(
                    "{}: duplicate key",
                    show_path(&path)
                )));
            }
            let v = map.next_value_seed(Seed {
                path,
                depth: self.depth + 1,
            })?;
            out.insert(key, v);
        }
        Ok(Value::Object(out))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn duplicate_keys_are_refused_with_their_path() {
        let e = parse_strict(br#"{"claims":[{"a":1,"a":2}]}"#).unwrap_err();
        assert!(e.starts_with("$.claims[0].a: duplicate key"), "{e}");
        let e = parse_strict(br#"{"x":1,"x":1}"#).unwrap_err();
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
            let e = parse_strict(bad).unwrap_err();
            assert!(e.starts_with('$'), "{e}");
        }
        let deep = "[".repeat(200) + &"]".repeat(200);
        assert!(parse_strict(deep.as_bytes()).is_err());
    }
}
