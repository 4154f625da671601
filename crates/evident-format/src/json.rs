//! A strict JSON reader that remembers where every value came from.
//!
//! `serde_json::Value` keeps the last of two duplicate keys silently, so two readers
//! of the same document could see two different values. This reader refuses
//! duplicates at any depth, refuses invalid UTF-8, lone surrogates and nesting deeper
//! than [`MAX_DEPTH`], keeps numbers as their exact source text (serde_json's
//! `arbitrary_precision`), and records the line and column of every value under its
//! JSON path (`evidence[2].at`) so later, typed checks can point into the file.

use serde_json::{Map, Number, Value};
use std::collections::HashMap;
use std::str::FromStr;

/// Deepest nesting accepted; deeper input is refused rather than risking the stack.
pub const MAX_DEPTH: usize = 128;

/// A 1-based line and column in the source text. The column counts bytes (as
/// serde_json does), so positions are computed in one pass, never by rescanning.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Pos {
    pub line: usize,
    pub col: usize,
}

/// Where each value of a parsed document starts, by JSON path.
#[derive(Debug, Default, Clone)]
pub struct Spans(HashMap<String, Pos>);

impl Spans {
    /// The position of the value at `path` (`""` is the root), if it exists.
    pub fn get(&self, path: &str) -> Option<Pos> {
        self.0.get(path).copied()
    }

    /// Records where the value at `path` starts (for documents read by other parsers,
    /// such as TOML contracts).
    pub fn insert(&mut self, path: String, pos: Pos) {
        self.0.insert(path, pos);
    }

    /// The position of `path`, or of its nearest ancestor that exists.
    pub fn nearest(&self, path: &str) -> Option<Pos> {
        let mut p = path;
        loop {
            if let Some(pos) = self.get(p) {
                return Some(pos);
            }
            if p.is_empty() {
                return None;
            }
            p = parent_path(p);
        }
    }
}

/// The parent of a JSON path: `a.b[2]` → `a.b`, `a.b` → `a`, `a` → ``.
pub fn parent_path(path: &str) -> &str {
    match path.rfind(['.', '[']) {
        Some(i) => &path[..i],
        None => "",
    }
}

/// Appends an object key to a JSON path. Keys that are not plain identifiers are
/// quoted (`a["odd key"]`) so a path always reads back unambiguously.
pub fn push_key(path: &str, key: &str) -> String {
    let plain = !key.is_empty()
        && key
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || c == '_' || c == '-' || c == '$');
    match (path.is_empty(), plain) {
        (true, true) => key.to_string(),
        (false, true) => format!("{path}.{key}"),
        (_, false) => format!("{path}[{}]", serde_json::to_string(key).unwrap_or_default()),
    }
}

/// Appends an array index to a JSON path.
pub fn push_index(path: &str, index: usize) -> String {
    format!("{path}[{index}]")
}

/// A document that parsed: its value and where each part of it came from.
#[derive(Debug, Clone)]
pub struct Parsed {
    pub value: Value,
    pub spans: Spans,
}

/// Why the text is not strict JSON: a message, the JSON path reached, and where.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SyntaxError {
    pub message: String,
    /// The JSON path of the value being read when the error occurred (`""` = root).
    pub path: String,
    /// For a duplicate key: the key (the path names the object holding it).
    pub key: Option<String>,
    pub pos: Pos,
}

/// Parses `bytes` as one strict JSON document.
pub fn parse(bytes: &[u8]) -> Result<Parsed, SyntaxError> {
    let text = match std::str::from_utf8(bytes) {
        Ok(t) => t,
        Err(e) => {
            let good = &bytes[..e.valid_up_to()];
            let good = std::str::from_utf8(good).unwrap_or_default();
            return Err(SyntaxError {
                message: "the input is not valid UTF-8".into(),
                path: String::new(),
                key: None,
                pos: pos_at(good, good.len()),
            });
        }
    };
    let text = text.strip_prefix('\u{feff}').unwrap_or(text);
    let mut p = Parser {
        text,
        bytes: text.as_bytes(),
        i: 0,
        line: 1,
        line_start: 0,
        spans: Spans::default(),
    };
    p.skip_ws();
    if p.i == p.bytes.len() {
        return Err(p.error("the input is empty; expected a JSON document", ""));
    }
    let value = p.value(String::new(), 0)?;
    p.skip_ws();
    if p.i != p.bytes.len() {
        return Err(p.error("unexpected text after the JSON document", ""));
    }
    Ok(Parsed {
        value,
        spans: p.spans,
    })
}

/// Position of `offset` by scanning (only for errors outside the parser).
fn pos_at(text: &str, offset: usize) -> Pos {
    let before = &text.as_bytes()[..offset.min(text.len())];
    let line = before.iter().filter(|&&b| b == b'\n').count() + 1;
    let line_start = before
        .iter()
        .rposition(|&b| b == b'\n')
        .map_or(0, |i| i + 1);
    Pos {
        line,
        col: before.len() - line_start + 1,
    }
}

struct Parser<'a> {
    text: &'a str,
    bytes: &'a [u8],
    i: usize,
    /// Current line (1-based) and the byte offset where it starts. Newlines occur only
    /// in whitespace between tokens (strings may not hold raw control characters).
    line: usize,
    line_start: usize,
    spans: Spans,
}

impl Parser<'_> {
    fn error(&self, message: impl Into<String>, path: &str) -> SyntaxError {
        // Back up to a char boundary so the column is computed on valid text.
        SyntaxError {
            message: message.into(),
            path: path.to_string(),
            key: None,
            pos: self.pos(),
        }
    }

    fn pos(&self) -> Pos {
        Pos {
            line: self.line,
            col: self.i.min(self.bytes.len()).saturating_sub(self.line_start) + 1,
        }
    }

    fn skip_ws(&mut self) {
        while let Some(&c @ (b' ' | b'\t' | b'\n' | b'\r')) = self.bytes.get(self.i) {
            self.i += 1;
            if c == b'\n' {
                self.line += 1;
                self.line_start = self.i;
            }
        }
    }

    fn peek(&self) -> Option<u8> {
        self.bytes.get(self.i).copied()
    }

    fn value(&mut self, path: String, depth: usize) -> Result<Value, SyntaxError> {
        if depth > MAX_DEPTH {
            return Err(self.error(format!("nesting is deeper than {MAX_DEPTH} levels"), &path));
        }
        let pos = self.pos();
        self.spans.0.insert(path.clone(), pos);
        match self.peek() {
            Some(b'{') => self.object(path, depth),
            Some(b'[') => self.array(path, depth),
            Some(b'"') => Ok(Value::String(self.string(&path)?)),
            Some(b't') => self.literal("true", Value::Bool(true), &path),
            Some(b'f') => self.literal("false", Value::Bool(false), &path),
            Some(b'n') => self.literal("null", Value::Null, &path),
            Some(b'-' | b'0'..=b'9') => self.number(&path),
            Some(_) => Err(self.error("expected a JSON value", &path)),
            None => Err(self.error("the input ends where a value was expected", &path)),
        }
    }

    fn literal(&mut self, word: &str, v: Value, path: &str) -> Result<Value, SyntaxError> {
        if self.bytes[self.i..].starts_with(word.as_bytes()) {
            self.i += word.len();
            Ok(v)
        } else {
            Err(self.error("expected a JSON value", path))
        }
    }

    fn object(&mut self, path: String, depth: usize) -> Result<Value, SyntaxError> {
        self.i += 1;
        let mut map = Map::new();
        self.skip_ws();
        if self.peek() == Some(b'}') {
            self.i += 1;
            return Ok(Value::Object(map));
        }
        loop {
            self.skip_ws();
            if self.peek() != Some(b'"') {
                return Err(self.error("expected a string key in the object", &path));
            }
            let key_start = self.i;
            let key = self.string(&path)?;
            if map.contains_key(&key) {
                self.i = key_start;
                let mut e = self.error(format!("duplicate key {key:?} in the object"), &path);
                e.key = Some(key);
                return Err(e);
            }
            self.skip_ws();
            if self.peek() != Some(b':') {
                return Err(self.error("expected ':' after the object key", &path));
            }
            self.i += 1;
            self.skip_ws();
            let child = push_key(&path, &key);
            let v = self.value(child, depth + 1)?;
            map.insert(key, v);
            self.skip_ws();
            match self.peek() {
                Some(b',') => self.i += 1,
                Some(b'}') => {
                    self.i += 1;
                    return Ok(Value::Object(map));
                }
                Some(_) => return Err(self.error("expected ',' or '}' in the object", &path)),
                None => return Err(self.error("the input ends inside an object", &path)),
            }
        }
    }

    fn array(&mut self, path: String, depth: usize) -> Result<Value, SyntaxError> {
        self.i += 1;
        let mut items = Vec::new();
        self.skip_ws();
        if self.peek() == Some(b']') {
            self.i += 1;
            return Ok(Value::Array(items));
        }
        loop {
            self.skip_ws();
            let child = push_index(&path, items.len());
            items.push(self.value(child, depth + 1)?);
            self.skip_ws();
            match self.peek() {
                Some(b',') => self.i += 1,
                Some(b']') => {
                    self.i += 1;
                    return Ok(Value::Array(items));
                }
                Some(_) => return Err(self.error("expected ',' or ']' in the array", &path)),
                None => return Err(self.error("the input ends inside an array", &path)),
            }
        }
    }

    fn number(&mut self, path: &str) -> Result<Value, SyntaxError> {
        let start = self.i;
        let b = self.bytes;
        let digits = |i: &mut usize| {
            let s = *i;
            while *i < b.len() && b[*i].is_ascii_digit() {
                *i += 1;
            }
            *i > s
        };
        let mut i = self.i;
        if b[i] == b'-' {
            i += 1;
        }
        if i < b.len() && b[i] == b'0' {
            i += 1;
            if i < b.len() && b[i].is_ascii_digit() {
                self.i = i;
                return Err(self.error("a number may not have a leading zero", path));
            }
        } else if !digits(&mut i) {
            self.i = i;
            return Err(self.error("expected digits in the number", path));
        }
        if i < b.len() && b[i] == b'.' {
            i += 1;
            if !digits(&mut i) {
                self.i = i;
                return Err(self.error("expected digits after the decimal point", path));
            }
        }
        if i < b.len() && (b[i] == b'e' || b[i] == b'E') {
            i += 1;
            if i < b.len() && (b[i] == b'+' || b[i] == b'-') {
                i += 1;
            }
            if !digits(&mut i) {
                self.i = i;
                return Err(self.error("expected digits in the exponent", path));
            }
        }
        self.i = i;
        let text = &self.text[start..i];
        match Number::from_str(text) {
            Ok(n) => Ok(Value::Number(n)),
            Err(_) => {
                self.i = start;
                Err(self.error("the number is out of range", path))
            }
        }
    }

    fn string(&mut self, path: &str) -> Result<String, SyntaxError> {
        self.i += 1; // opening quote
        let mut out = String::new();
        loop {
            let start = self.i;
            while let Some(&c) = self.bytes.get(self.i) {
                if c == b'"' || c == b'\\' || c < 0x20 {
                    break;
                }
                self.i += 1;
            }
            out.push_str(&self.text[start..self.i]);
            match self.peek() {
                Some(b'"') => {
                    self.i += 1;
                    return Ok(out);
                }
                Some(b'\\') => {
                    self.i += 1;
                    let c = self.escape(path)?;
                    out.push(c);
                }
                Some(_) => {
                    return Err(self.error("a control character must be escaped in a string", path));
                }
                None => return Err(self.error("the input ends inside a string", path)),
            }
        }
    }

    fn escape(&mut self, path: &str) -> Result<char, SyntaxError> {
        let c = match self.peek() {
            Some(b'"') => '"',
            Some(b'\\') => '\\',
            Some(b'/') => '/',
            Some(b'b') => '\u{8}',
            Some(b'f') => '\u{c}',
            Some(b'n') => '\n',
            Some(b'r') => '\r',
            Some(b't') => '\t',
            Some(b'u') => {
                self.i += 1;
                let hi = self.hex4(path)?;
                if (0xD800..0xDC00).contains(&hi) {
                    if !self.bytes[self.i..].starts_with(b"\\u") {
                        return Err(self.error("a lone surrogate in a \\u escape", path));
                    }
                    self.i += 2;
                    let lo = self.hex4(path)?;
                    if !(0xDC00..0xE000).contains(&lo) {
                        return Err(self.error("a lone surrogate in a \\u escape", path));
                    }
                    let cp = 0x10000 + ((hi - 0xD800) << 10) + (lo - 0xDC00);
                    return char::from_u32(cp)
                        .ok_or_else(|| self.error("an invalid \\u escape", path));
                }
                return char::from_u32(hi)
                    .ok_or_else(|| self.error("a lone surrogate in a \\u escape", path));
            }
            _ => return Err(self.error("an invalid escape in a string", path)),
        };
        self.i += 1;
        Ok(c)
    }

    fn hex4(&mut self, path: &str) -> Result<u32, SyntaxError> {
        let s = self
            .text
            .get(self.i..self.i + 4)
            .filter(|s| s.bytes().all(|b| b.is_ascii_hexdigit()))
            .ok_or_else(|| self.error("expected four hex digits after \\u", path))?;
        self.i += 4;
        u32::from_str_radix(s, 16).map_err(|_| self.error("expected four hex digits", path))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn positions_and_paths() {
        let p = parse(b"{\n  \"a\": [1, {\"b\": true}]\n}").unwrap();
        assert_eq!(p.spans.get("a"), Some(Pos { line: 2, col: 8 }));
        assert_eq!(p.spans.get("a[1].b"), Some(Pos { line: 2, col: 18 }));
    }

    #[test]
    fn duplicate_key_names_the_object() {
        let e = parse(br#"{"x": {"y": {"k": 1, "k": 2}}}"#).unwrap_err();
        assert_eq!(e.path, "x.y");
        assert!(e.message.contains("duplicate key \"k\""), "{}", e.message);
    }

    #[test]
    fn numbers_keep_their_text() {
        let p = parse(b"[9007199254740993, 1e2, -0.50]").unwrap();
        assert_eq!(p.value.to_string(), "[9007199254740993,1e+2,-0.50]");
    }

    #[test]
    fn refuses_bad_input() {
        for bad in [
            &b""[..],
            b"   ",
            b"{",
            b"[1,]",
            b"{\"a\":1,}",
            b"01",
            b"1.",
            b"-",
            b"\"\\ud800\"",
            b"\"a\nb\"",
            b"\xff",
            b"nul",
            b"{} {}",
            b"{'a':1}",
        ] {
            assert!(
                parse(bad).is_err(),
                "accepted {:?}",
                String::from_utf8_lossy(bad)
            );
        }
    }

    #[test]
    fn deep_nesting_is_refused_without_overflow() {
        let deep = "[".repeat(10_000) + &"]".repeat(10_000);
        let e = parse(deep.as_bytes()).unwrap_err();
        assert!(e.message.contains("deeper"));
    }
}
