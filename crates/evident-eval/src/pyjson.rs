//! Strict JSON in, Python-compatible JSON out.
//!
//! Input: `serde_json::Value` keeps the last of two equal keys silently; a trace with
//! `"success": false, "success": true` must not be read either way, so documents are
//! first walked by a visitor that rejects duplicate keys and names their JSON path.
//!
//! Output: the peer prints with `json.dumps(..., sort_keys=True, indent=2)` and digests
//! `json.dumps(..., sort_keys=True, separators=(",", ":"), ensure_ascii=False,
//! allow_nan=False)`. [`dumps`] reproduces both byte for byte, including Python's float
//! formatting, so `raw_sha256` equals the peer's.

use std::collections::HashSet;
use std::fmt;

use serde::de::{self, DeserializeSeed, Deserializer, MapAccess, SeqAccess, Visitor};
use serde_json::Value;
use sha2::{Digest, Sha256};

use crate::text::{py_float_repr, write_json_str};

/// Parses JSON text strictly: valid UTF-8, no duplicate keys at any depth.
pub fn parse_strict(bytes: &[u8]) -> Result<Value, String> {
    let mut de = serde_json::Deserializer::from_slice(bytes);
    DupCheck {
        parent: None,
        seg: Seg::Root,
    }
    .deserialize(&mut de)
    .map_err(|e| e.to_string())?;
    serde_json::from_slice(bytes).map_err(|e| e.to_string())
}

/// One step of the JSON path, kept borrowed: the path text is built only for an error
/// (building it for every value cost more than the rest of the check).
enum Seg<'p> {
    Root,
    Index(usize),
    Key(&'p str),
}

struct DupCheck<'p> {
    parent: Option<&'p DupCheck<'p>>,
    seg: Seg<'p>,
}

impl DupCheck<'_> {
    /// `$`, `$.a.b[2]`, as before.
    fn path(&self) -> String {
        let mut segs = Vec::new();
        let mut cur = Some(self);
        while let Some(c) = cur {
            segs.push(&c.seg);
            cur = c.parent;
        }
        let mut out = String::new();
        for s in segs.into_iter().rev() {
            match s {
                Seg::Root => out.push('$'),
                Seg::Index(i) => out.push_str(&format!("[{i}]")),
                Seg::Key(k) => {
                    out.push('.');
                    out.push_str(k);
                }
            }
        }
        out
    }
}

/// A map key, borrowed from the input when it has no escapes.
struct BorrowedKey<'de>(std::borrow::Cow<'de, str>);

impl<'de> serde::Deserialize<'de> for BorrowedKey<'de> {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        struct V;
        impl<'de> Visitor<'de> for V {
            type Value = BorrowedKey<'de>;
            fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                f.write_str("an object key")
            }
            fn visit_borrowed_str<E: de::Error>(self, v: &'de str) -> Result<Self::Value, E> {
                Ok(BorrowedKey(std::borrow::Cow::Borrowed(v)))
            }
            fn visit_str<E: de::Error>(self, v: &str) -> Result<Self::Value, E> {
                Ok(BorrowedKey(std::borrow::Cow::Owned(v.to_owned())))
            }
        }
        d.deserialize_str(V)
    }
}

impl<'de> DeserializeSeed<'de> for DupCheck<'_> {
    type Value = ();
    fn deserialize<D: Deserializer<'de>>(self, d: D) -> Result<(), D::Error> {
        d.deserialize_any(self)
    }
}

impl<'de> Visitor<'de> for DupCheck<'_> {
    type Value = ();
    fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("any JSON value")
    }
    fn visit_bool<E>(self, _: bool) -> Result<(), E> {
        Ok(())
    }
    fn visit_i64<E>(self, _: i64) -> Result<(), E> {
        Ok(())
    }
    fn visit_u64<E>(self, _: u64) -> Result<(), E> {
        Ok(())
    }
    fn visit_f64<E>(self, _: f64) -> Result<(), E> {
        Ok(())
    }
    fn visit_str<E>(self, _: &str) -> Result<(), E> {
        Ok(())
    }
    fn visit_unit<E>(self) -> Result<(), E> {
        Ok(())
    }
    fn visit_seq<A: SeqAccess<'de>>(self, mut seq: A) -> Result<(), A::Error> {
        let mut i = 0usize;
        while seq
            .next_element_seed(DupCheck {
                parent: Some(&self),
                seg: Seg::Index(i),
            })?
            .is_some()
        {
            i += 1;
        }
        Ok(())
    }
    fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<(), A::Error> {
        // Small objects are searched linearly; large ones get a set.
        let mut seen: Vec<std::borrow::Cow<'de, str>> = Vec::new();
        let mut big: Option<HashSet<std::borrow::Cow<'de, str>>> = None;
        while let Some(BorrowedKey(k)) = map.next_key::<BorrowedKey<'de>>()? {
            // serde_json's arbitrary_precision carries numbers as a one-key map.
            if k == "$serde_json::private::Number" {
                map.next_value::<de::IgnoredAny>()?;
                continue;
            }
            let repeated = match &mut big {
                Some(set) => !set.insert(k.clone()),
                None if seen.contains(&k) => true,
                None => {
                    seen.push(k.clone());
                    if seen.len() > 32 {
                        big = Some(seen.drain(..).collect());
                    }
                    false
                }
            };
            if repeated {
                return Err(de::Error::custom(format_args!(
                    "duplicate key '{k}' at {}",
                    self.path()
                )));
            }
            map.next_value_seed(DupCheck {
                parent: Some(&self),
                seg: Seg::Key(&k),
            })?;
        }
        Ok(())
    }
}

/// How [`dumps`] formats.
#[derive(Debug, Clone, Copy)]
pub struct Style {
    /// `Some(n)`: Python's `indent=n` (separators `,` and `: `); `None`: compact (`,` `:`).
    pub indent: Option<usize>,
    pub ensure_ascii: bool,
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
pub fn dumps(v: &Value, style: Style) -> Result<String, String> {
    let mut out = Vec::new();
    write(&mut out, v, style, 0)?;
    String::from_utf8(out).map_err(|e| e.to_string())
}

/// SHA-256 (hex) of the canonical form.
pub fn canonical_sha256(v: &Value) -> Result<String, String> {
    let s = dumps(v, CANONICAL)?;
    Ok(hex::encode(Sha256::digest(s.as_bytes())))
}

fn newline(out: &mut Vec<u8>, indent: Option<usize>, level: usize) {
    if let Some(n) = indent {
        out.push(b'\n');
        out.extend(std::iter::repeat_n(b' ', n * level));
    }
}

fn write(out: &mut Vec<u8>, v: &Value, st: Style, level: usize) -> Result<(), String> {
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
fn py_number(lit: &str) -> Result<String, String> {
    if !lit.bytes().any(|b| matches!(b, b'.' | b'e' | b'E')) {
        return Ok(if lit == "-0" {
            "0".into()
        } else {
            lit.to_owned()
        });
    }
    let x: f64 = lit.parse().map_err(|_| format!("invalid number {lit}"))?;
    py_float_repr(x).ok_or_else(|| {
        format!(
            "number {lit} is out of range (Python reads it as infinity, which JSON cannot carry)"
        )
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn rejects_duplicates_with_their_path() {
        let e = parse_strict(br#"{"a":[{"b":1,"b":2}]}"#).unwrap_err();
        assert!(e.contains("duplicate key 'b' at $.a[0]"), "{e}");
        assert!(parse_strict(br#"{"a":1,"b":{"a":2}}"#).is_ok());
        // Past 32 keys the check switches to a set: still exact, escapes decoded.
        let many: Vec<String> = (0..40).map(|i| format!("\"k{i}\":{i}")).collect();
        let obj = format!("{{\"x\":{{{}}}}}", many.join(","));
        assert!(parse_strict(obj.as_bytes()).is_ok());
        let dup = format!("{{\"x\":{{{},\"k\\u0033\":0}}}}", many.join(","));
        let e = parse_strict(dup.as_bytes()).unwrap_err();
        assert!(e.contains("duplicate key 'k3' at $.x"), "{e}");
        let e = parse_strict(br#"[{"a":{"b\u0020":1,"b ":2}}]"#).unwrap_err();
        assert!(e.contains("duplicate key 'b ' at $[0].a"), "{e}");
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
