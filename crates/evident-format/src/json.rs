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

/// Most JSON values (objects, arrays, strings, numbers, booleans, nulls) a document may
/// hold. Every value costs a position entry and, once typed, tens of bytes: a 31 MB
/// claim of one 15-million-zero array took 3.4 GiB to decide, where a claim of 75,000
/// evidence items (about 1.05 million values) takes a tenth of that. Twice that
/// benchmark is room for any real claim; past it the document is refused before it is
/// built.
pub const MAX_VALUES: usize = 2_000_000;

/// A 1-based line and column in the source text. The column counts bytes (as
/// serde_json does), so positions are computed in one pass, never by rescanning.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Pos {
    /// 1-based line.
    pub line: usize,
    /// 1-based column, in bytes from the start of the line.
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
    /// The document (duplicate keys refused, numbers kept exact).
    pub value: Value,
    /// Where each of its values starts, for messages about them.
    pub spans: Spans,
}

/// Why the text is not strict JSON: a message, the JSON path reached, and where.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SyntaxError {
    /// What is wrong, for a person.
    pub message: String,
    /// The JSON path of the value being read when the error occurred (`""` = root).
    pub path: String,
    /// For a duplicate key: the key (the path names the object holding it).
    pub key: Option<String>,
    /// Where in the text the reader found the problem.
    pub pos: Pos,
}

/// Parses `bytes` as one strict JSON document.
pub fn parse(bytes: &[u8]) -> Result<Parsed, SyntaxError> {
    let (value, spans, _) = read(bytes, true, true, MAX_DEPTH)?;
    Ok(Parsed { value, spans })
}

/// A document that passed the strict reader, kept as its compact text (see
/// [`JsonText`]) with the positions of its values: what a large claim is held as.
#[derive(Debug, Clone)]
pub struct Checked {
    /// The document as compact text, held once instead of as a `Value`.
    pub text: JsonText,
    /// Where each of its values starts, for messages about them.
    pub spans: Spans,
    /// The deepest nesting of arrays and objects (the root object is 1).
    pub depth: usize,
}

/// Reads `bytes` as [`parse`] does, with the same errors, without building a value:
/// the document is kept as text, about a sixth of what its `Value` would take.
pub fn check(bytes: &[u8]) -> Result<Checked, SyntaxError> {
    let mut depth = 0;
    let (_, spans, text) = read_with(bytes, false, true, MAX_DEPTH, &mut depth)?;
    Ok(Checked {
        text: JsonText(compact(text)),
        spans,
        depth,
    })
}

fn read(
    bytes: &[u8],
    build: bool,
    spans: bool,
    limit: usize,
) -> Result<(Value, Spans, &str), SyntaxError> {
    read_with(bytes, build, spans, limit, &mut 0)
}

/// The reader under [`parse`] and [`check`]: `build` makes the value (else `Null`),
/// `spans` records positions; nesting deeper than `limit` is refused; `max_depth` gets
/// the deepest nesting seen.
fn read_with<'a>(
    bytes: &'a [u8],
    build: bool,
    spans: bool,
    limit: usize,
    max_depth: &mut usize,
) -> Result<(Value, Spans, &'a str), SyntaxError> {
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
        build,
        spans,
        limit,
        values_left: if limit == usize::MAX {
            usize::MAX
        } else {
            MAX_VALUES
        },
        max_depth: 0,
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
    *max_depth = p.max_depth;
    let mut entries = p.positions;
    entries.sort_unstable_by_key(|e| e.0);
    entries.shrink_to_fit();
    Ok((value, Spans { entries }, text))
}

/// `text` (strict JSON) without the whitespace between its tokens.
fn compact(text: &str) -> String {
    let b = text.as_bytes();
    let mut out = Vec::with_capacity(b.len());
    let mut i = 0;
    while i < b.len() {
        match b[i] {
            b' ' | b'\t' | b'\n' | b'\r' => i += 1,
            b'"' => {
                let end = string_end(b, i);
                out.extend_from_slice(&b[i..end]);
                i = end;
            }
            c => {
                out.push(c);
                i += 1;
            }
        }
    }
    out.shrink_to_fit();
    // Only ASCII whitespace was removed, so the text is still UTF-8.
    String::from_utf8(out).unwrap_or_default()
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
    /// Build the value (else only check it), and record positions.
    build: bool,
    spans: bool,
    /// Deepest nesting read: [`MAX_DEPTH`] for input.
    limit: usize,
    /// Values left before the document is refused ([`MAX_VALUES`] for input).
    values_left: usize,
    /// The deepest nesting of arrays and objects seen.
    max_depth: usize,
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
        if depth > self.limit {
            let limit = self.limit;
            return Err(self.error_here(format!("nesting is deeper than {limit} levels")));
        }
        let Some(left) = self.values_left.checked_sub(1) else {
            return Err(self.error_here(format!(
                "the document holds more than {MAX_VALUES} JSON values, this reader's limit"
            )));
        };
        self.values_left = left;
        if self.spans {
            let pos = self.pos();
            self.positions.push((h, clamp(pos.line), clamp(pos.col)));
        }
        match self.peek() {
            Some(b'{' | b'[') => {
                self.max_depth = self.max_depth.max(depth + 1);
                if self.peek() == Some(b'{') {
                    self.object(h, depth)
                } else {
                    self.array(h, depth)
                }
            }
            Some(b'"') => {
                let s = self.string()?;
                Ok(if self.build {
                    Value::String(s)
                } else {
                    Value::Null
                })
            }
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
                    if !self.build {
                        // The keys were kept only to find duplicates.
                        self.members.truncate(base);
                        return Ok(Value::Null);
                    }
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
        let mut index = 0;
        loop {
            self.skip_ws();
            let len = self.path.len();
            {
                use std::fmt::Write as _;
                let _ = write!(self.path, "[{index}]");
            }
            let v = self.value(PathHash::index(h, index), depth + 1)?;
            self.path.truncate(len);
            if self.build {
                self.items.push(v);
            }
            index += 1;
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
            Ok(_) if !self.build => Ok(Value::Null),
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

/// Where the string literal starting at `b[i]` (its opening quote) ends.
fn string_end(b: &[u8], i: usize) -> usize {
    let mut j = i + 1;
    while j < b.len() {
        match b[j] {
            b'\\' => j += 2,
            b'"' => return j + 1,
            _ => j += 1,
        }
    }
    b.len()
}

/// Where the value starting at `b[i]` of compact, strict JSON text ends.
fn value_end(b: &[u8], mut i: usize) -> usize {
    match b.get(i) {
        Some(b'"') => string_end(b, i),
        Some(b'{' | b'[') => {
            let mut depth = 0usize;
            while i < b.len() {
                match b[i] {
                    b'"' => {
                        i = string_end(b, i);
                        continue;
                    }
                    b'{' | b'[' => depth += 1,
                    b'}' | b']' => {
                        depth -= 1;
                        if depth == 0 {
                            return i + 1;
                        }
                    }
                    _ => {}
                }
                i += 1;
            }
            b.len()
        }
        _ => {
            while i < b.len() && !matches!(b[i], b',' | b'}' | b']') {
                i += 1;
            }
            i
        }
    }
}

/// The items of a compact JSON array's text (nothing for any other text).
pub fn elements(array: &str) -> impl Iterator<Item = &str> {
    let b = array.as_bytes();
    let mut i = if b.first() == Some(&b'[') && b.get(1) != Some(&b']') {
        1
    } else {
        b.len()
    };
    std::iter::from_fn(move || {
        if i >= b.len() {
            return None;
        }
        let end = value_end(b, i);
        let item = array.get(i..end)?;
        i = if b.get(end) == Some(&b',') {
            end + 1
        } else {
            b.len()
        };
        Some(item)
    })
}

/// The members of a compact JSON object's text (nothing for any other text): each
/// key's literal (quoted, as written) and the range of the member in `object` (from
/// the key's quote to the value's end), and the value's text.
fn member_spans(object: &str) -> impl Iterator<Item = (&str, std::ops::Range<usize>, &str)> {
    let b = object.as_bytes();
    let mut i = if b.first() == Some(&b'{') && b.get(1) != Some(&b'}') {
        1
    } else {
        b.len()
    };
    std::iter::from_fn(move || {
        if i >= b.len() || b[i] != b'"' {
            return None;
        }
        let key_end = string_end(b, i);
        let end = value_end(b, key_end + 1);
        let out = (
            object.get(i..key_end)?,
            i..end,
            object.get(key_end + 1..end)?,
        );
        i = if b.get(end) == Some(&b',') {
            end + 1
        } else {
            b.len()
        };
        Some(out)
    })
}

/// The members of a compact JSON object's text: each key (unescaped) and its value's
/// text, in document order.
pub fn members(object: &str) -> impl Iterator<Item = (std::borrow::Cow<'_, str>, &str)> {
    member_spans(object).map(|(key, _, value)| (unquote(key), value))
}

/// A key's literal as the string it stands for.
fn unquote(literal: &str) -> std::borrow::Cow<'_, str> {
    let inner = literal
        .get(1..literal.len().saturating_sub(1))
        .unwrap_or_default();
    if inner.contains('\\') {
        std::borrow::Cow::Owned(serde_json::from_str(literal).unwrap_or_default())
    } else {
        std::borrow::Cow::Borrowed(inner)
    }
}

/// `an object`, `an array`, `a string`, … of strict JSON text, for messages (as
/// [`crate::claim::json_type_name`] names a value).
pub fn type_name_of(text: &str) -> &'static str {
    match text.trim_start().as_bytes().first() {
        Some(b'{') => "an object",
        Some(b'[') => "an array",
        Some(b'"') => "a string",
        Some(b't' | b'f') => "a boolean",
        Some(b'n') => "null",
        _ => "a number",
    }
}

/// The value of a piece of compact strict JSON text (an item, a member).
///
/// The text is a [`JsonText`]'s, which holds what a reader or a value gave it, so it is
/// read without the input depth limit: a record the ledger keeps deeper than
/// [`MAX_DEPTH`] (it reads up to its own limit) must come back whole, never as `null`.
pub fn value_of(text: &str) -> Value {
    read(text.as_bytes(), true, false, usize::MAX).map_or(Value::Null, |(v, ..)| v)
}

/// A JSON document kept as compact text (no whitespace between tokens; strings and
/// numbers as written), made by [`check`] or from a value.
///
/// A claim of 100,000 evidence items is about 40 MB of text but six times that as a
/// `serde_json::Value` (an object member costs about 110 bytes before its key and
/// value), so the document a decision carries is kept as text: its top-level members
/// are read, replaced and appended to in place, and it is written out (as JSON with
/// [`serde::Serialize`], or canonically by the ledger) piece by piece, parsing only
/// small parts into values ([`SPLIT`]).
///
/// It also holds each evidence item's `expected` and `observed_value`: as `serde_json`
/// maps they cost about 600 bytes an item (an `IndexMap` entry, its hash table, a
/// string per key and number), as text their length. Read from a claim, such a value
/// is the strict reader's slice of the checked document (captured with serde_json's
/// `RawValue`), so numbers keep their digits; the rules parse it where they compare it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct JsonText(String);

/// Parts of a [`JsonText`] larger than this are written out container by container;
/// smaller ones are parsed into a `Value` and written whole.
pub const SPLIT: usize = 64 * 1024;

impl JsonText {
    /// The text of `value`.
    pub fn from_value(value: &Value) -> JsonText {
        JsonText(serde_json::to_string(value).unwrap_or_else(|_| "null".into()))
    }

    /// The text of a typed value, written straight from its `Serialize` (no `Value`
    /// of it is built: a verdict of 75,000 findings would be one). For types whose
    /// serialization writes each key once, as derived ones do.
    pub fn from_serialize<T: serde::Serialize + ?Sized>(
        value: &T,
    ) -> Result<JsonText, serde_json::Error> {
        serde_json::to_string(value).map(JsonText)
    }

    /// The compact text.
    pub fn as_str(&self) -> &str {
        &self.0
    }

    /// The whole document as a value (six times the text's size: for small documents
    /// and the few callers that must edit deep inside).
    pub fn to_value(&self) -> Value {
        value_of(&self.0)
    }

    /// Is the document an object?
    pub fn is_object(&self) -> bool {
        self.0.starts_with('{')
    }

    /// The value, when it is an object (parsed on each call).
    pub fn to_object(&self) -> Option<Map<String, Value>> {
        match self.to_value() {
            Value::Object(m) => Some(m),
            _ => None,
        }
    }

    /// `an object`, `a string`, `null`, … for messages.
    pub fn type_name(&self) -> &'static str {
        type_name_of(&self.0)
    }

    /// The text of the top-level member `key`.
    pub fn member(&self, key: &str) -> Option<&str> {
        self.find(key).map(|(_, v)| v)
    }

    /// The top-level member `key`, as a value.
    pub fn get(&self, key: &str) -> Option<Value> {
        self.member(key).map(value_of)
    }

    /// The items of the top-level array `key` (nothing when it is absent or not an array).
    pub fn items(&self, key: &str) -> impl Iterator<Item = &str> {
        elements(self.member(key).unwrap_or_default())
    }

    fn find(&self, key: &str) -> Option<(std::ops::Range<usize>, &str)> {
        member_spans(&self.0)
            .find(|(k, ..)| unquote(k) == key)
            .map(|(_, range, value)| (range, value))
    }

    /// Replaces the top-level member `key` (in place), or appends it. Nothing for a
    /// document that is not an object.
    pub fn set(&mut self, key: &str, value: &Value) {
        let text = serde_json::to_string(value).unwrap_or_else(|_| "null".into());
        match self.find(key) {
            Some((range, old)) => {
                let start = range.end - old.len();
                self.0.replace_range(start..range.end, &text);
            }
            None if self.is_object() => {
                let at = self.0.len() - 1;
                let sep = if self.0.len() > 2 { "," } else { "" };
                let key = serde_json::to_string(key).unwrap_or_default();
                self.0.insert_str(at, &format!("{sep}{key}:{text}"));
            }
            None => {}
        }
    }

    /// Removes the top-level member `key`, if present.
    pub fn remove(&mut self, key: &str) {
        if let Some((range, _)) = self.find(key) {
            let b = self.0.as_bytes();
            let cut = if b.get(range.end) == Some(&b',') {
                range.start..range.end + 1
            } else if b.get(range.start - 1) == Some(&b',') {
                range.start - 1..range.end
            } else {
                range
            };
            self.0.replace_range(cut, "");
        }
    }

    /// Appends `items` to the top-level array `key` (in place), creating it when
    /// absent. Nothing when `key` holds something other than an array.
    pub fn push_items<'v>(&mut self, key: &str, items: impl IntoIterator<Item = &'v Value>) {
        let mut text = String::new();
        for item in items {
            text.push(',');
            text.push_str(&serde_json::to_string(item).unwrap_or_else(|_| "null".into()));
        }
        if text.is_empty() {
            return;
        }
        match self.find(key) {
            Some((range, old)) if old.starts_with('[') => {
                let at = range.end - 1;
                let from = if old == "[]" { 1 } else { 0 };
                self.0.insert_str(at, &text[from..]);
            }
            Some(_) => {}
            None => self.set(key, &value_of(&format!("[{}]", &text[1..]))),
        }
    }
}

impl std::fmt::Display for JsonText {
    /// The compact text.
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.0)
    }
}

impl Default for JsonText {
    /// `null`.
    fn default() -> JsonText {
        JsonText("null".into())
    }
}

impl From<Value> for JsonText {
    fn from(v: Value) -> JsonText {
        JsonText::from_value(&v)
    }
}

impl serde::Serialize for JsonText {
    fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        Piece(&self.0).serialize(s)
    }
}

impl<'de> serde::Deserialize<'de> for JsonText {
    /// From a JSON text deserializer, the value's slice of the text as it stands (the
    /// strict reader's compact text); from a `Value`, its compact serialization.
    fn deserialize<D: serde::Deserializer<'de>>(d: D) -> Result<JsonText, D::Error> {
        let raw = Box::<serde_json::value::RawValue>::deserialize(d)?;
        let text: Box<str> = raw.into();
        // Text read from a pretty document (a caller's own `serde_json::from_str`)
        // keeps its layout: compact it, so the text is one form whatever the source.
        if text
            .bytes()
            .any(|b| matches!(b, b' ' | b'\n' | b'\r' | b'\t'))
        {
            return Ok(JsonText::from_value(&value_of(&text)));
        }
        Ok(JsonText(text.into_string()))
    }
}

impl schemars::JsonSchema for JsonText {
    fn schema_name() -> std::borrow::Cow<'static, str> {
        Value::schema_name()
    }
    fn inline_schema() -> bool {
        true
    }
    fn json_schema(generator: &mut schemars::SchemaGenerator) -> schemars::Schema {
        Value::json_schema(generator)
    }
}

/// A part of a [`JsonText`], written as its value would be, without building the
/// value of anything larger than [`SPLIT`].
pub struct Piece<'a>(pub &'a str);

impl serde::Serialize for Piece<'_> {
    fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        Rewrite::new(self.0, &|v| v, &|k| k.to_string()).serialize(s)
    }
}

/// A part of a [`JsonText`] written as [`Piece`] writes it, with `value` applied to
/// every part no larger than [`SPLIT`] and `key` to the member names of larger objects:
/// how a large document is rewritten (its secrets scrubbed) without ever being one
/// value. Two names that `key` maps to the same text keep the first member.
pub struct Rewrite<'a> {
    text: &'a str,
    value: &'a dyn Fn(Value) -> Value,
    key: &'a dyn Fn(&str) -> String,
}

impl<'a> Rewrite<'a> {
    /// `text` (compact strict JSON) rewritten by `value` and `key`.
    pub fn new(
        text: &'a str,
        value: &'a dyn Fn(Value) -> Value,
        key: &'a dyn Fn(&str) -> String,
    ) -> Rewrite<'a> {
        Rewrite { text, value, key }
    }

    fn part(&self, text: &'a str) -> Rewrite<'a> {
        Rewrite { text, ..*self }
    }
}

impl serde::Serialize for Rewrite<'_> {
    fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        use serde::ser::{SerializeMap, SerializeSeq};
        let text = self.text;
        if text.len() <= SPLIT {
            return (self.value)(value_of(text)).serialize(s);
        }
        match text.as_bytes().first() {
            Some(b'{') => {
                let mut seen = std::collections::HashSet::new();
                let mut map = s.serialize_map(None)?;
                for (k, v) in members(text) {
                    let k = (self.key)(&k);
                    if seen.insert(k.clone()) {
                        map.serialize_entry(&k, &self.part(v))?;
                    }
                }
                map.end()
            }
            Some(b'[') => {
                let mut seq = s.serialize_seq(None)?;
                for item in elements(text) {
                    seq.serialize_element(&self.part(item))?;
                }
                seq.end()
            }
            _ => (self.value)(value_of(text)).serialize(s),
        }
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
    fn check_reads_as_parse_does() {
        let docs: [&[u8]; 6] = [
            b"{\n  \"a\": [1, {\"b\": \"x\\u0041\\n\"}],\n  \"c\": -0.50e3 }",
            "\u{feff}[true, false, null, \"\u{e9} \\\" ,:{}[]\"]".as_bytes(),
            b"{\"k\": {}, \"l\": [], \"m\": [[], {}]}",
            b"{\"x\": {\"y\": {\"k\": 1, \"k\": 2}}}",
            b"[1, 2,]",
            b"\"unterminated",
        ];
        for d in docs {
            match (check(d), parse(d)) {
                (Ok(c), Ok(p)) => {
                    assert_eq!(c.text.to_value(), p.value);
                    assert!(
                        !c.text.as_str().contains(['\n', ' '])
                            || c.text.as_str().contains('\u{e9}')
                    );
                    assert_eq!(c.spans.get("a[1].b"), p.spans.get("a[1].b"));
                    assert_eq!(c.spans.get("c"), p.spans.get("c"));
                }
                (Err(c), Err(p)) => assert_eq!(c, p),
                (c, p) => panic!("check {c:?} but parse {p:?}"),
            }
        }
        assert_eq!(check(b"[[1]]").unwrap().depth, 2);
        assert_eq!(check(b"{\"a\": {\"b\": [3]}}").unwrap().depth, 3);
    }

    /// An edit of the text and the same edit of the value.
    type EditPair = (
        Box<dyn Fn(&mut JsonText)>,
        Box<dyn Fn(&mut Map<String, Value>)>,
    );

    /// red11: one array of 15.5 million zeros (a 31 MB claim) took 3.4 GiB to decide.
    /// Past MAX_VALUES the reader refuses, checking or parsing, and names where; at the
    /// limit it reads (the twin).
    #[test]
    fn a_document_past_the_value_limit_is_refused() {
        let doc = |n: usize| {
            let mut t = String::with_capacity(2 * n + 2);
            t.push('[');
            for i in 0..n {
                if i > 0 {
                    t.push(',');
                }
                t.push('0');
            }
            t.push(']');
            t
        };
        // The array itself is one value.
        let over = doc(MAX_VALUES);
        let e = check(over.as_bytes()).unwrap_err();
        assert!(e.message.contains("more than 2000000 JSON values"), "{e:?}");
        assert_eq!(e.path, format!("[{}]", MAX_VALUES - 1));
        assert!(parse(over.as_bytes()).is_err());
        let at = doc(MAX_VALUES - 1);
        assert!(check(at.as_bytes()).is_ok());
        // Reading back a kept text has no limit.
        assert_eq!(value_of(&over).as_array().map(Vec::len), Some(MAX_VALUES));
    }

    #[test]
    fn text_edits_are_value_edits() {
        let original = serde_json::json!({"a": 1, "evidence": [{"x": "y,}"}], "b\\": "]", "c": {}});
        let cases: Vec<EditPair> = vec![
            (
                Box::new(|t| t.set("a", &serde_json::json!([2]))),
                Box::new(|m| {
                    m.insert("a".into(), serde_json::json!([2]));
                }),
            ),
            (
                Box::new(|t| t.set("new", &Value::Null)),
                Box::new(|m| {
                    m.insert("new".into(), Value::Null);
                }),
            ),
            (
                Box::new(|t| t.remove("a")),
                Box::new(|m| {
                    m.shift_remove("a");
                }),
            ),
            (
                Box::new(|t| t.remove("evidence")),
                Box::new(|m| {
                    m.shift_remove("evidence");
                }),
            ),
            (
                Box::new(|t| t.remove("c")),
                Box::new(|m| {
                    m.shift_remove("c");
                }),
            ),
            (
                Box::new(|t| t.remove("b\\")),
                Box::new(|m| {
                    m.shift_remove("b\\");
                }),
            ),
            (Box::new(|t| t.remove("absent")), Box::new(|_| {})),
            (
                Box::new(|t| {
                    t.push_items(
                        "evidence",
                        &[serde_json::json!(1), serde_json::json!({"z": []})],
                    )
                }),
                Box::new(|m| {
                    if let Some(Value::Array(a)) = m.get_mut("evidence") {
                        a.push(serde_json::json!(1));
                        a.push(serde_json::json!({"z": []}));
                    }
                }),
            ),
            (
                Box::new(|t| t.push_items("fresh", &[serde_json::json!(3)])),
                Box::new(|m| {
                    m.insert("fresh".into(), serde_json::json!([3]));
                }),
            ),
            (
                Box::new(|t| t.push_items("a", &[serde_json::json!(3)])),
                Box::new(|_| {}),
            ),
        ];
        for (i, (edit_text, edit_value)) in cases.iter().enumerate() {
            let mut t = JsonText::from_value(&original);
            edit_text(&mut t);
            let mut v = original.clone();
            edit_value(v.as_object_mut().unwrap());
            assert_eq!(t.to_value(), v, "case {i}: {t}");
            assert_eq!(parse(t.as_str().as_bytes()).unwrap().value, v, "case {i}");
        }
        let mut only = JsonText::from_value(&serde_json::json!({"k": 1}));
        only.remove("k");
        assert_eq!(only.as_str(), "{}");
        only.push_items("e", &[Value::Bool(true)]);
        only.push_items("e", &[Value::Null]);
        assert_eq!(only.as_str(), "{\"e\":[true,null]}");
        assert_eq!(only.get("e"), Some(serde_json::json!([true, null])));
        assert_eq!(only.items("e").collect::<Vec<_>>(), ["true", "null"]);
    }

    #[test]
    fn a_large_text_is_written_as_its_value() {
        let items: Vec<Value> = (0..2000)
            .map(|i| serde_json::json!({"i": i, "s": format!("\"{i}\u{e9}\\"), "n": [1.5, {"d": {}}, []]}))
            .collect();
        let v = serde_json::json!({"evidence": items, "verdict": null, "big": {"inner": items.clone(), "x": "y"}, "e": {}});
        let text = check(serde_json::to_string_pretty(&v).unwrap().as_bytes())
            .unwrap()
            .text;
        assert!(text.as_str().len() > 2 * SPLIT);
        assert_eq!(
            serde_json::to_string_pretty(&text).unwrap(),
            serde_json::to_string_pretty(&v).unwrap()
        );
        assert_eq!(
            serde_json::to_string(&text).unwrap(),
            serde_json::to_string(&v).unwrap()
        );
        assert_eq!(text.items("evidence").count(), 2000);
        assert_eq!(
            members(text.as_str())
                .map(|(k, _)| k.into_owned())
                .collect::<Vec<_>>(),
            ["evidence", "verdict", "big", "e"]
        );
    }

    #[test]
    fn deep_nesting_is_refused_without_overflow() {
        let deep = "[".repeat(10_000) + &"]".repeat(10_000);
        let e = parse(deep.as_bytes()).unwrap_err();
        assert!(e.message.contains("deeper"));
    }

    #[test]
    fn an_evidence_value_keeps_the_strict_readers_slice_and_compacts_anything_else() {
        #[derive(serde::Deserialize)]
        struct Item {
            v: JsonText,
        }
        // From the strict reader's compact text: the slice as written, digits and
        // escapes kept (a 2^53 + 1 stays itself; a float is not rounded).
        let checked =
            check(br#"{"v": {"n": 9007199254740993, "f": 1.10, "s": "\u00e9"}}"#).unwrap();
        let item: Item = serde_json::from_str(checked.text.as_str()).unwrap();
        assert_eq!(
            item.v.as_str(),
            r#"{"n":9007199254740993,"f":1.10,"s":"\u00e9"}"#
        );
        assert!(item.v.is_object());
        let m = item.v.to_object().unwrap();
        assert_eq!(m["n"].to_string(), "9007199254740993");
        assert_eq!(m["s"], Value::String("é".into()));
        // Serialized as the value it holds (the escape decoded, the digits kept).
        assert_eq!(
            serde_json::to_string(&item.v).unwrap(),
            r#"{"n":9007199254740993,"f":1.10,"s":"é"}"#
        );
        // From a pretty document read by someone else's serde_json: compacted.
        let item: Item = serde_json::from_str("{\n  \"v\": [ 1,\n 2 ]\n}").unwrap();
        assert_eq!(item.v.as_str(), "[1,2]");
        assert!(!item.v.is_object() && item.v.to_object().is_none());
        assert_eq!(item.v.type_name(), "an array");
        // From a value (a deep document is typed from its value).
        let item: Item =
            serde_json::from_value(serde_json::json!({"v": {"a": [true, null]}})).unwrap();
        assert_eq!(item.v.as_str(), r#"{"a":[true,null]}"#);
        // Written back as the value it holds.
        let out = serde_json::to_string(&serde_json::json!({"v": item.v.to_value()})).unwrap();
        assert_eq!(
            out,
            serde_json::to_string(&serde_json::json!({"v": {"a": [true, null]}})).unwrap()
        );
        assert_eq!(JsonText::default().as_str(), "null");
    }
}
