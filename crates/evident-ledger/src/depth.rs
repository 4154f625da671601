//! How deeply a stored record may nest: one limit that the writer checks and every
//! reader of stored JSON allows.
//!
//! serde_json's reader stops at 128 levels, but a claim at the format's own limit
//! (128 levels) sits one level deeper inside a record (`{"claim": …}`), and a gate's
//! evidence adds the depth of its observed values: such a record was written, and
//! then `show`, `GET /v1/decisions/{id}` and the page could not read it back. Now the
//! writer refuses an entry deeper than [`MAX_DEPTH`] before anything is stored, and
//! every reader reads up to it ([`from_str`]).

use serde::Deserialize;
use serde_json::Value;

/// Deepest nesting (objects and arrays) of a stored record body. Twice the claim
/// format's limit: a claim at that limit, inside a record, with a gate's observed
/// values (read under the same limit) in its evidence, fits with room to spare, and
/// the recursive code that handles a record (serialization, redaction, rendering)
/// stays far from the end of a 2 MiB thread stack.
pub const MAX_DEPTH: usize = 256;

/// The nesting of JSON text (`1` is 0, `[]` is 1, `[{}]` is 2), by one pass over the
/// bytes (the text is not parsed, and need not be valid).
pub fn of_text(text: &str) -> usize {
    let (mut depth, mut max) = (0usize, 0usize);
    let (mut in_string, mut escaped) = (false, false);
    for &b in text.as_bytes() {
        if in_string {
            match b {
                _ if escaped => escaped = false,
                b'\\' => escaped = true,
                b'"' => in_string = false,
                _ => {}
            }
            continue;
        }
        match b {
            b'"' => in_string = true,
            b'[' | b'{' => {
                depth += 1;
                max = max.max(depth);
            }
            b']' | b'}' => depth = depth.saturating_sub(1),
            _ => {}
        }
    }
    max
}

/// The nesting of a value, without recursion (the value may be the agent's).
pub fn of_value(v: &Value) -> usize {
    let mut max = 0;
    let mut stack = vec![(v, 1usize)];
    while let Some((v, d)) = stack.pop() {
        match v {
            Value::Array(a) => {
                max = max.max(d);
                stack.extend(a.iter().map(|x| (x, d + 1)));
            }
            Value::Object(m) => {
                max = max.max(d);
                stack.extend(m.values().map(|x| (x, d + 1)));
            }
            _ => {}
        }
    }
    max
}

/// Parses stored JSON nested up to [`MAX_DEPTH`] levels (deeper text is refused
/// before parsing, so the parser's recursion stays bounded).
pub fn from_str<'a, T: Deserialize<'a>>(text: &'a str) -> Result<T, serde_json::Error> {
    let depth = of_text(text);
    if depth > MAX_DEPTH {
        return Err(serde::de::Error::custom(format!(
            "nested {depth} levels deep, deeper than a record may be ({MAX_DEPTH})"
        )));
    }
    let mut de = serde_json::Deserializer::from_str(text);
    de.disable_recursion_limit();
    let v = T::deserialize(&mut de)?;
    de.end()?;
    Ok(v)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn nested(n: usize) -> String {
        format!("{}{}", "[".repeat(n), "]".repeat(n))
    }

    #[test]
    fn depth_counts_containers_not_brackets_in_strings() {
        assert_eq!(of_text("1"), 0);
        assert_eq!(of_text("[]"), 1);
        assert_eq!(of_text(r#"{"a": [{"b": "[[[{\"}"}]}"#), 3);
        let v: Value = serde_json::from_str(r#"{"a": [{"b": "[[["}], "c": 1}"#).unwrap();
        assert_eq!(of_value(&v), 3);
        assert_eq!(of_value(&Value::Null), 0);
    }

    #[test]
    fn reads_up_to_the_limit_and_refuses_past_it() {
        // serde_json alone refuses this; the ledger's reader does not.
        assert!(serde_json::from_str::<Value>(&nested(200)).is_err());
        let v: Value = from_str(&nested(MAX_DEPTH)).unwrap();
        assert_eq!(of_value(&v), MAX_DEPTH);
        let e = from_str::<Value>(&nested(MAX_DEPTH + 1)).unwrap_err();
        assert!(e.to_string().contains("256"), "{e}");
        assert!(from_str::<Value>("[1] x").is_err(), "trailing text refused");
    }
}
