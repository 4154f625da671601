//! A strict JSON reader that remembers where every value came from.
//!
//! `serde_json::Value` keeps the last of two duplicate keys silently, so two readers
//! of the same document could see two different values. This reader refuses
//! duplicates at any depth, refuses invalid UTF-8, lone surrogates and nesting deeper
//! than [`MAX_DEPTH`], keeps numbers as their exact source text (serde_json's
//! `arbitrary_precision`), and records the line and column of every value under its
//! JSON path (`evidence[2].at`) so later, typed checks can point into the file.
//!
//! Memory: a claim can hold 100,000 evidence items, so nothing here is kept per value
//! beyond the value itself and one 16-byte position entry — a hash of its path, not
//! the path (see [`Spans`]); objects and arrays are built at their exact size.

use serde_json::{Map, Number, Value};
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
///
/// Kept as `(hash of the path, line, column)` sorted by hash — 16 bytes a value, where
/// a map from path strings took about 100. Paths are hashed segment by segment
/// ([`PathHash`]), so the parser never builds a path string per value. Two paths with
/// the same 64-bit hash (about one chance in 10^7 for a million values) would only
/// give a message the other's position; positions never decide anything.
#[derive(Debug, Default, Clone)]
pub struct Spans {
    entries: Vec<(u64, u32, u32)>,
}

impl Spans {
    /// The position of the value at `path` (`""` is the root), if it exists.
    pub fn get(&self, path: &str) -> Option<Pos> {
        let h = PathHash::of(path)?;
        let i = self.entries.binary_search_by_key(&h, |e| e.0).ok()?;
        let (_, line, col) = self.entries[i];
        Some(Pos {
            line: line as usize,
            col: col as usize,
        })
    }

    /// Records where the value at `path` starts (for documents read by other parsers,
    /// such as TOML contracts).
    pub fn insert(&mut self, path: String, pos: Pos) {
        if let Some(h) = PathHash::of(&path) {
            let e = (h, clamp(pos.line), clamp(pos.col));
            match self.entries.binary_search_by_key(&h, |e| e.0) {
                Ok(i) => self.entries[i] = e,
                Err(i) => self.entries.insert(i, e),
            }
        }
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

fn clamp(n: usize) -> u32 {
    u32::try_from(n).unwrap_or(u32::MAX)
}

/// The hash of a JSON path, built one segment at a time: the parser extends its
/// parent's hash as it descends, and [`PathHash::of`] reads a path string back into
/// the same segments.
pub struct PathHash;

impl PathHash {
    /// The root's hash.
    pub const ROOT: u64 = 0x243f_6a88_85a3_08d3;

    /// The hash of `parent`'s member `key`.
    pub fn key(parent: u64, key: &str) -> u64 {
        let mut h: u64 = 0xcbf2_9ce4_8422_2325;
        for b in key.bytes() {
            h ^= u64::from(b);
            h = h.wrapping_mul(0x0100_0000_01b3);
        }
        mix(parent.rotate_left(23) ^ mix(h ^ 0x6b65_7973))
    }

    /// The hash of `parent`'s item `index`.
    pub fn index(parent: u64, index: usize) -> u64 {
        mix(parent.rotate_left(23) ^ mix(index as u64 ^ 0x6974_656d_7300_0000))
    }

    /// The hash of a path as [`push_key`] and [`push_index`] write it (`a.b[2]`,
    /// `a["odd key"]`), or `None` when it is not such a path.
    pub fn of(path: &str) -> Option<u64> {
        let b = path.as_bytes();
        let mut h = Self::ROOT;
        let mut i = 0;
        while i < b.len() {
            match b[i] {
                b'[' if b.get(i + 1) == Some(&b'"') => {
                    // A quoted key: a JSON string literal, then `]`.
                    let start = i + 1;
                    let mut j = start + 1;
                    while j < b.len() && b[j] != b'"' {
                        j += if b[j] == b'\\' { 2 } else { 1 };
                    }
                    let key: String = serde_json::from_str(path.get(start..=j)?).ok()?;
                    if b.get(j + 1) != Some(&b']') {
                        return None;
                    }
                    h = Self::key(h, &key);
                    i = j + 2;
                }
                b'[' => {
                    let end = i + 1 + path[i + 1..].find(']')?;
                    h = Self::index(h, path[i + 1..end].parse().ok()?);
                    i = end + 1;
                }
                c => {
                    if c == b'.' {
                        i += 1;
                    } else if i > 0 {
                        return None;
                    }
                    let end = path[i..].find(['.', '[']).map_or(b.len(), |e| i + e);
                    h = Self::key(h, &path[i..end]);
                    i = end;
                }
            }
        }
        Some(h)
    }
}

/// splitmix64's finalizer.
fn mix(mut z: u64) -> u64 {
    z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
    z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
    z ^ (z >> 31)
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
    let mut out = path.to_string();
    append_key(&mut out, key);
    out
}

/// [`push_key`] in place.
fn append_key(path: &mut String, key: &str) {
    let plain = !key.is_empty()
        && key
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || c == '_' || c == '-' || c == '$');
    if plain {
        if !path.is_empty() {
            path.push('.');
        }
        path.push_str(key);
    } else {
        path.push('[');
        path.push_str(&serde_json::to_string(key).unwrap_or_default());
        path.push(']');
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
        path: String::new(),
        positions: Vec::new(),
        members: Vec::new(),
        items: Vec::new(),
    };
    p.skip_ws();
    if p.i == p.bytes.len() {
        return Err(p.error_here("the input is empty; expected a JSON document"));
    }
    let value = p.value(PathHash::ROOT, 0)?;
    p.skip_ws();
    if p.i != p.bytes.len() {
        return Err(p.error_here("unexpected text after the JSON document"));
    }
    let mut entries = p.positions;
    entries.sort_unstable_by_key(|e| e.0);
    entries.shrink_to_fit();
    Ok(Parsed {
        value,
        spans: Spans { entries },
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
    /// The JSON path of the value being read, for error messages (extended and cut
    /// back as the parser descends and returns).
    path: String,
    /// `(path hash, line, column)` of every value, sorted when parsing ends.
    positions: Vec<(u64, u32, u32)>,
    /// Members of the objects and items of the arrays being read, innermost last: an
    /// object or array takes its own off the end when it closes, at its exact size.
    members: Vec<(String, Value)>,
    items: Vec<Value>,
}

impl Parser<'_> {
    /// An error at the current position, in the value at the current path.
    fn error_here(&self, message: impl Into<String>) -> SyntaxError {
        SyntaxError {
            message: message.into(),
            path: self.path.clone(),
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

    /// The value at the current path, whose hash is `h`.
    fn value(&mut self, h: u64, depth: usize) -> Result<Value, SyntaxError> {
        if depth > MAX_DEPTH {
            return Err(self.error_here(format!("nesting is deeper than {MAX_DEPTH} levels")));
        }
        let pos = self.pos();
        self.positions.push((h, clamp(pos.line), clamp(pos.col)));
        match self.peek() {
            Some(b'{') => self.object(h, depth),
            Some(b'[') => self.array(h, depth),
            Some(b'"') => Ok(Value::String(self.string()?)),
            Some(b't') => self.literal("true", Value::Bool(true)),
            Some(b'f') => self.literal("false", Value::Bool(false)),
            Some(b'n') => self.literal("null", Value::Null),
            Some(b'-' | b'0'..=b'9') => self.number(),
            Some(_) => Err(self.error_here("expected a JSON value")),
            None => Err(self.error_here("the input ends where a value was expected")),
        }
    }

    fn literal(&mut self, word: &str, v: Value) -> Result<Value, SyntaxError> {
        if self.bytes[self.i..].starts_with(word.as_bytes()) {
            self.i += word.len();
            Ok(v)
        } else {
            Err(self.error_here("expected a JSON value"))
        }
    }

    fn object(&mut self, h: u64, depth: usize) -> Result<Value, SyntaxError> {
        self.i += 1;
        self.skip_ws();
        if self.peek() == Some(b'}') {
            self.i += 1;
            return Ok(Value::Object(Map::new()));
        }
        let base = self.members.len();
        // Keys seen, by hash, once an object is too large to scan (most are small).
        let mut seen: Option<std::collections::HashSet<u64>> = None;
        loop {
            self.skip_ws();
            if self.peek() != Some(b'"') {
                return Err(self.error_here("expected a string key in the object"));
            }
            let key_start = self.i;
            let key = self.string()?;
            let mine = &self.members[base..];
            let duplicate = if mine.len() < 32 {
                mine.iter().any(|(k, _)| *k == key)
            } else {
                let set = seen
                    .get_or_insert_with(|| mine.iter().map(|(k, _)| PathHash::key(0, k)).collect());
                // A hash seen before is confirmed by a scan (rare).
                !set.insert(PathHash::key(0, &key)) && mine.iter().any(|(k, _)| *k == key)
            };
            if duplicate {
                self.i = key_start;
                let mut e = self.error_here(format!("duplicate key {key:?} in the object"));
                e.key = Some(key);
                return Err(e);
            }
            self.skip_ws();
            if self.peek() != Some(b':') {
                return Err(self.error_here("expected ':' after the object key"));
            }
            self.i += 1;
            self.skip_ws();
            let len = self.path.len();
            append_key(&mut self.path, &key);
            let v = self.value(PathHash::key(h, &key), depth + 1)?;
            self.path.truncate(len);
            self.members.push((key, v));
            self.skip_ws();
            match self.peek() {
                Some(b',') => self.i += 1,
                Some(b'}') => {
                    self.i += 1;
                    let mut map = Map::with_capacity(self.members.len() - base);
                    map.extend(self.members.drain(base..));
                    return Ok(Value::Object(map));
                }
                Some(_) => return Err(self.error_here("expected ',' or '}' in the object")),
                None => return Err(self.error_here("the input ends inside an object")),
            }
        }
    }

    fn array(&mut self, h: u64, depth: usize) -> Result<Value, SyntaxError> {
        self.i += 1;
        self.skip_ws();
        if self.peek() == Some(b']') {
            self.i += 1;
            return Ok(Value::Array(Vec::new()));
        }
        let base = self.items.len();
        loop {
            self.skip_ws();
            let index = self.items.len() - base;
            let len = self.path.len();
            {
                use std::fmt::Write as _;
                let _ = write!(self.path, "[{index}]");
            }
            let v = self.value(PathHash::index(h, index), depth + 1)?;
            self.path.truncate(len);
            self.items.push(v);
            self.skip_ws();
            match self.peek() {
                Some(b',') => self.i += 1,
                Some(b']') => {
                    self.i += 1;
                    let items: Vec<Value> = self.items.drain(base..).collect();
                    return Ok(Value::Array(items));
                }
                Some(_) => return Err(self.error_here("expected ',' or ']' in the array")),
                None => return Err(self.error_here("the input ends inside an array")),
            }
        }
    }

    fn number(&mut self) -> Result<Value, SyntaxError> {
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
                return Err(self.error_here("a number may not have a leading zero"));
            }
        } else if !digits(&mut i) {
            self.i = i;
            return Err(self.error_here("expected digits in the number"));
        }
        if i < b.len() && b[i] == b'.' {
            i += 1;
            if !digits(&mut i) {
                self.i = i;
                return Err(self.error_here("expected digits after the decimal point"));
            }
        }
        if i < b.len() && (b[i] == b'e' || b[i] == b'E') {
            i += 1;
            if i < b.len() && (b[i] == b'+' || b[i] == b'-') {
                i += 1;
            }
            if !digits(&mut i) {
                self.i = i;
                return Err(self.error_here("expected digits in the exponent"));
            }
        }
        self.i = i;
        let text = &self.text[start..i];
        match Number::from_str(text) {
            Ok(n) => Ok(Value::Number(n)),
            Err(_) => {
                self.i = start;
                Err(self.error_here("the number is out of range"))
            }
        }
    }

    fn string(&mut self) -> Result<String, SyntaxError> {
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
                    let c = self.escape()?;
                    out.push(c);
                }
                Some(_) => {
                    return Err(self.error_here("a control character must be escaped in a string"));
                }
                None => return Err(self.error_here("the input ends inside a string")),
            }
        }
    }

    fn escape(&mut self) -> Result<char, SyntaxError> {
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
                let hi = self.hex4()?;
                if (0xD800..0xDC00).contains(&hi) {
                    if !self.bytes[self.i..].starts_with(b"\\u") {
                        return Err(self.error_here("a lone surrogate in a \\u escape"));
                    }
                    self.i += 2;
                    let lo = self.hex4()?;
                    if !(0xDC00..0xE000).contains(&lo) {
                        return Err(self.error_here("a lone surrogate in a \\u escape"));
                    }
                    let cp = 0x10000 + ((hi - 0xD800) << 10) + (lo - 0xDC00);
                    return char::from_u32(cp)
                        .ok_or_else(|| self.error_here("an invalid \\u escape"));
                }
                return char::from_u32(hi)
                    .ok_or_else(|| self.error_here("a lone surrogate in a \\u escape"));
            }
            _ => return Err(self.error_here("an invalid escape in a string")),
        };
        self.i += 1;
        Ok(c)
    }

    fn hex4(&mut self) -> Result<u32, SyntaxError> {
        let s = self
            .text
            .get(self.i..self.i + 4)
            .filter(|s| s.bytes().all(|b| b.is_ascii_hexdigit()))
            .ok_or_else(|| self.error_here("expected four hex digits after \\u"))?;
        self.i += 4;
        u32::from_str_radix(s, 16).map_err(|_| self.error_here("expected four hex digits"))
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
    fn every_value_has_its_position_by_path() {
        let text = "{\"a\": {\"odd key\": [1, {\"b.c\": 2}], \"x\": \"y\"}, \"0\": 3}";
        let p = parse(text.as_bytes()).unwrap();
        for (path, col) in [
            ("", 1),
            ("a", 7),
            ("a[\"odd key\"]", 19),
            ("a[\"odd key\"][0]", 20),
            ("a[\"odd key\"][1][\"b.c\"]", 31),
            ("a.x", 41),
            ("0", 52),
        ] {
            assert_eq!(p.spans.get(path), Some(Pos { line: 1, col }), "{path}");
        }
        assert_eq!(p.spans.get("a.nope"), None);
        assert_eq!(p.spans.get("a[7]"), None);
        assert_eq!(p.spans.get("a[\"odd key\"]x"), None);
        assert_eq!(
            p.spans.nearest("a.x.deeper"),
            Some(Pos { line: 1, col: 41 })
        );
        // The paths the parser hashes are the ones push_key and push_index write.
        let path = push_index(&push_key(&push_key("", "a"), "odd key"), 1);
        assert_eq!(
            p.spans.get(&push_key(&path, "b.c")),
            Some(Pos { line: 1, col: 31 })
        );
        let mut s = Spans::default();
        s.insert("k[2]".into(), Pos { line: 4, col: 5 });
        assert_eq!(s.get("k[2]"), Some(Pos { line: 4, col: 5 }));
    }

    #[test]
    fn a_duplicate_in_a_large_object_is_found() {
        let mut text = String::from("{");
        for i in 0..100 {
            text.push_str(&format!("\"k{i}\": {i}, "));
        }
        text.push_str("\"k57\": 0}");
        let e = parse(text.as_bytes()).unwrap_err();
        assert_eq!(e.key.as_deref(), Some("k57"));
        let ok = text.replace("\"k57\": 0", "\"k100\": 0");
        assert_eq!(
            parse(ok.as_bytes())
                .unwrap()
                .value
                .as_object()
                .unwrap()
                .len(),
            101
        );
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
