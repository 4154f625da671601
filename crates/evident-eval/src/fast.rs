//! A hand-written JSON reader for case lines: the hot path of `evident eval`.
//!
//! Measured on this machine, a serde visitor over sonic-rs spent most of its time in
//! generic deserializer plumbing; this reader knows the case shape, borrows every
//! unescaped string from the line, skips unknown members without building anything,
//! and still checks the whole line is valid JSON (RFC 8259: no NaN, no comments, no
//! trailing commas, no raw control characters in strings, no lone surrogates). It
//! produces the same lenient values as the serde path in [`crate::case`], and the
//! tests check both agree on generated and hand-written lines.

use std::borrow::Cow;

use crate::case::{Kind, LBool, LEvidence, LList, LObj, LStr, RawCase, RawEvent, RawRequirement};
use crate::text::py_blank;

/// Deep enough for any real trace, shallow enough that recursion cannot overflow.
const MAX_DEPTH: usize = 512;

pub(crate) struct Reader<'a> {
    s: &'a str,
    b: &'a [u8],
    pos: usize,
}

type R<T> = Result<T, String>;

/// Index of the first `"`, `\\` or control character at or after `from`: eight bytes
/// at a time (strings in traces are short, so this beats a SIMD search's setup cost).
#[inline]
fn find_special(b: &[u8], from: usize) -> Option<usize> {
    const ONES: u64 = 0x0101_0101_0101_0101;
    const HIGH: u64 = 0x8080_8080_8080_8080;
    let mut i = from;
    while let Some(chunk) = b.get(i..i + 8) {
        let mut w = [0u8; 8];
        w.copy_from_slice(chunk);
        let x = u64::from_le_bytes(w);
        let q = x ^ (ONES * b'"' as u64);
        let s = x ^ (ONES * b'\\' as u64);
        let hit = (q.wrapping_sub(ONES) & !q)
            | (s.wrapping_sub(ONES) & !s)
            | (x.wrapping_sub(ONES * 0x20) & !x);
        let hit = hit & HIGH;
        if hit != 0 {
            return Some(i + (hit.trailing_zeros() / 8) as usize);
        }
        i += 8;
    }
    b.get(i..)?
        .iter()
        .position(|&c| c == b'"' || c == b'\\' || c < 0x20)
        .map(|p| i + p)
}

impl<'a> Reader<'a> {
    fn err<T>(&self, what: &str) -> R<T> {
        Err(format!("invalid JSON: {what} at column {}", self.pos + 1))
    }

    #[inline]
    fn ws(&mut self) {
        while let Some(&c) = self.b.get(self.pos) {
            if matches!(c, b' ' | b'\t' | b'\n' | b'\r') {
                self.pos += 1;
            } else {
                break;
            }
        }
    }

    #[inline]
    fn peek(&mut self) -> Option<u8> {
        self.ws();
        self.b.get(self.pos).copied()
    }

    #[inline]
    fn expect(&mut self, c: u8, what: &str) -> R<()> {
        if self.peek() == Some(c) {
            self.pos += 1;
            Ok(())
        } else {
            self.err(what)
        }
    }

    /// Reads a string (the opening quote is at `pos`), borrowed when it has no escape.
    fn string(&mut self) -> R<Cow<'a, str>> {
        self.pos += 1;
        let start = self.pos;
        let Some(end) = find_special(self.b, start) else {
            self.pos = self.b.len();
            return self.err("unterminated string");
        };
        match self.b[end] {
            b'"' => {
                self.pos = end + 1;
                // `start` and `end` sit next to ASCII quotes, so they are char boundaries.
                return match self.s.get(start..end) {
                    Some(t) => Ok(Cow::Borrowed(t)),
                    None => self.err("invalid string"),
                };
            }
            b'\\' => {}
            _ => {
                self.pos = end;
                return self.err("control character in string");
            }
        }
        let mut out = String::with_capacity(end - start + 16);
        out.push_str(self.s.get(start..end).unwrap_or_default());
        self.pos = end;
        loop {
            let Some(&c) = self.b.get(self.pos) else {
                return self.err("unterminated string");
            };
            match c {
                b'"' => {
                    self.pos += 1;
                    return Ok(Cow::Owned(out));
                }
                b'\\' => {
                    self.pos += 1;
                    let Some(&e) = self.b.get(self.pos) else {
                        return self.err("unterminated escape");
                    };
                    self.pos += 1;
                    match e {
                        b'"' => out.push('"'),
                        b'\\' => out.push('\\'),
                        b'/' => out.push('/'),
                        b'b' => out.push('\u{8}'),
                        b'f' => out.push('\u{c}'),
                        b'n' => out.push('\n'),
                        b'r' => out.push('\r'),
                        b't' => out.push('\t'),
                        b'u' => {
                            let hi = self.hex4()?;
                            let cp = if (0xD800..0xDC00).contains(&hi) {
                                if self.b.get(self.pos..self.pos + 2) != Some(b"\\u") {
                                    return self.err("lone surrogate in \\u escape");
                                }
                                self.pos += 2;
                                let lo = self.hex4()?;
                                if !(0xDC00..0xE000).contains(&lo) {
                                    return self.err("lone surrogate in \\u escape");
                                }
                                0x10000 + ((hi - 0xD800) << 10) + (lo - 0xDC00)
                            } else if (0xDC00..0xE000).contains(&hi) {
                                return self.err("lone surrogate in \\u escape");
                            } else {
                                hi
                            };
                            match char::from_u32(cp) {
                                Some(ch) => out.push(ch),
                                None => return self.err("invalid \\u escape"),
                            }
                        }
                        _ => {
                            self.pos -= 1;
                            return self.err("invalid escape");
                        }
                    }
                }
                0..=0x1f => return self.err("control character in string"),
                _ => {
                    let run_end = find_special(self.b, self.pos).unwrap_or(self.b.len());
                    match self.s.get(self.pos..run_end) {
                        Some(t) => out.push_str(t),
                        None => return self.err("invalid string"),
                    }
                    self.pos = run_end;
                }
            }
        }
    }

    fn hex4(&mut self) -> R<u32> {
        let Some(h) = self.b.get(self.pos..self.pos + 4) else {
            return self.err("short \\u escape");
        };
        let mut v = 0u32;
        for &c in h {
            let d = match c {
                b'0'..=b'9' => c - b'0',
                b'a'..=b'f' => c - b'a' + 10,
                b'A'..=b'F' => c - b'A' + 10,
                _ => return self.err("invalid \\u escape"),
            };
            v = v * 16 + d as u32;
        }
        self.pos += 4;
        Ok(v)
    }

    /// Checks and skips a string without keeping it; returns whether it had an escape.
    fn skip_string(&mut self) -> R<bool> {
        // Fast path: no escape before the closing quote.
        if let Some(end) = find_special(self.b, self.pos + 1)
            && self.b[end] == b'"'
        {
            self.pos = end + 1;
            return Ok(false);
        }
        self.string().map(|_| true)
    }

    fn number(&mut self) -> R<()> {
        let b = self.b;
        let mut p = self.pos;
        if b.get(p) == Some(&b'-') {
            p += 1;
        }
        match b.get(p) {
            Some(b'0') => p += 1,
            Some(b'1'..=b'9') => {
                while matches!(b.get(p), Some(b'0'..=b'9')) {
                    p += 1;
                }
            }
            _ => {
                self.pos = p;
                return self.err("invalid number");
            }
        }
        if b.get(p) == Some(&b'.') {
            p += 1;
            if !matches!(b.get(p), Some(b'0'..=b'9')) {
                self.pos = p;
                return self.err("invalid number");
            }
            while matches!(b.get(p), Some(b'0'..=b'9')) {
                p += 1;
            }
        }
        if matches!(b.get(p), Some(b'e' | b'E')) {
            p += 1;
            if matches!(b.get(p), Some(b'+' | b'-')) {
                p += 1;
            }
            if !matches!(b.get(p), Some(b'0'..=b'9')) {
                self.pos = p;
                return self.err("invalid number");
            }
            while matches!(b.get(p), Some(b'0'..=b'9')) {
                p += 1;
            }
        }
        self.pos = p;
        Ok(())
    }

    fn literal(&mut self, word: &[u8]) -> R<()> {
        if self.b.get(self.pos..self.pos + word.len()) == Some(word) {
            self.pos += word.len();
            Ok(())
        } else {
            self.err("invalid literal")
        }
    }

    /// Checks and skips any value; returns its kind and whether it counts as present
    /// evidence (the peer's `_has_evidence_value`).
    fn skip_value(&mut self, depth: usize) -> R<(Kind, bool)> {
        if depth > MAX_DEPTH {
            return self.err("nesting too deep");
        }
        match self.peek() {
            Some(b'"') => {
                let start = self.pos + 1;
                let escaped = self.skip_string()?;
                let raw = self.s.get(start..self.pos - 1).unwrap_or_default();
                let present = if escaped {
                    // Re-read escaped strings to strip what they decode to.
                    let mut again = Reader {
                        s: self.s,
                        b: self.b,
                        pos: start - 1,
                    };
                    !py_blank(&again.string()?)
                } else {
                    !py_blank(raw)
                };
                Ok((Kind::String, present))
            }
            Some(b'{') => {
                self.pos += 1;
                if self.peek() == Some(b'}') {
                    self.pos += 1;
                    return Ok((Kind::Object, false));
                }
                loop {
                    if self.peek() != Some(b'"') {
                        return self.err("expected a string key");
                    }
                    self.skip_string()?;
                    self.expect(b':', "expected ':'")?;
                    self.skip_value(depth + 1)?;
                    match self.peek() {
                        Some(b',') => self.pos += 1,
                        Some(b'}') => {
                            self.pos += 1;
                            return Ok((Kind::Object, true));
                        }
                        _ => return self.err("expected ',' or '}'"),
                    }
                }
            }
            Some(b'[') => {
                self.pos += 1;
                if self.peek() == Some(b']') {
                    self.pos += 1;
                    return Ok((Kind::Array, false));
                }
                loop {
                    self.skip_value(depth + 1)?;
                    match self.peek() {
                        Some(b',') => self.pos += 1,
                        Some(b']') => {
                            self.pos += 1;
                            return Ok((Kind::Array, true));
                        }
                        _ => return self.err("expected ',' or ']'"),
                    }
                }
            }
            Some(b't') => self.literal(b"true").map(|_| (Kind::Bool, true)),
            Some(b'f') => self.literal(b"false").map(|_| (Kind::Bool, true)),
            Some(b'n') => self.literal(b"null").map(|_| (Kind::Null, false)),
            Some(b'-' | b'0'..=b'9') => self.number().map(|_| (Kind::Number, true)),
            Some(_) => self.err("expected a JSON value"),
            None => self.err("unexpected end of input"),
        }
    }

    /// Iterates an object's members: `f(reader, key)` must consume the value.
    fn object(&mut self, mut f: impl FnMut(&mut Self, Cow<'a, str>) -> R<()>) -> R<()> {
        self.pos += 1; // '{'
        if self.peek() == Some(b'}') {
            self.pos += 1;
            return Ok(());
        }
        loop {
            if self.peek() != Some(b'"') {
                return self.err("expected a string key");
            }
            let key = self.string()?;
            self.expect(b':', "expected ':'")?;
            f(self, key)?;
            match self.peek() {
                Some(b',') => self.pos += 1,
                Some(b'}') => {
                    self.pos += 1;
                    return Ok(());
                }
                _ => return self.err("expected ',' or '}'"),
            }
        }
    }

    /// Iterates an array's elements: `f(reader)` must consume the element.
    fn array(&mut self, mut f: impl FnMut(&mut Self) -> R<()>) -> R<()> {
        self.pos += 1; // '['
        if self.peek() == Some(b']') {
            self.pos += 1;
            return Ok(());
        }
        loop {
            f(self)?;
            match self.peek() {
                Some(b',') => self.pos += 1,
                Some(b']') => {
                    self.pos += 1;
                    return Ok(());
                }
                _ => return self.err("expected ',' or ']'"),
            }
        }
    }

    fn lstr(&mut self) -> R<LStr<'a>> {
        if self.peek() == Some(b'"') {
            Ok(LStr::Str(self.string()?))
        } else {
            Ok(LStr::Other(self.skip_value(1)?.0))
        }
    }

    fn lbool(&mut self) -> R<LBool> {
        match self.peek() {
            Some(b't') => self.literal(b"true").map(|_| LBool::Bool(true)),
            Some(b'f') => self.literal(b"false").map(|_| LBool::Bool(false)),
            _ => Ok(LBool::Other(self.skip_value(1)?.0)),
        }
    }

    fn list<T>(&mut self, mut item: impl FnMut(&mut Self) -> R<T>) -> R<LList<T>> {
        if self.peek() != Some(b'[') {
            return Ok(LList::Other(self.skip_value(1)?.0));
        }
        let mut v = Vec::with_capacity(8);
        self.array(|r| {
            v.push(item(r)?);
            Ok(())
        })?;
        Ok(LList::List(v))
    }

    fn evidence(&mut self) -> R<LEvidence<'a>> {
        if self.peek() != Some(b'{') {
            return Ok(LEvidence::Other(self.skip_value(1)?.0));
        }
        let mut v: Vec<(Cow<'a, str>, bool)> = Vec::with_capacity(8);
        let mut dup: Option<String> = None;
        self.object(|r, k| {
            let (_, present) = r.skip_value(3)?;
            if dup.is_none() && v.iter().any(|(seen, _)| *seen == k) {
                dup = Some(k.to_string());
            }
            v.push((k, present));
            Ok(())
        })?;
        if let Some(k) = dup {
            return Err(format!("duplicate key '{k}' in 'evidence'"));
        }
        Ok(LEvidence::Obj(v))
    }

    fn requirement(&mut self) -> R<LObj<RawRequirement<'a>>> {
        if self.peek() != Some(b'{') {
            return Ok(LObj::Other(self.skip_value(2)?.0));
        }
        let mut out = RawRequirement::default();
        let mut dup = None;
        self.object(|r, k| {
            match &*k {
                "action" => set(&mut out.action, r.lstr()?, "action", &mut dup),
                "evidence_fields" => set(
                    &mut out.evidence_fields,
                    r.list(|r| r.lstr())?,
                    "evidence_fields",
                    &mut dup,
                ),
                _ => {
                    r.skip_value(2)?;
                }
            }
            Ok(())
        })?;
        dup_err(dup)?;
        Ok(LObj::Obj(out))
    }

    fn event(&mut self) -> R<LObj<RawEvent<'a>>> {
        if self.peek() != Some(b'{') {
            return Ok(LObj::Other(self.skip_value(2)?.0));
        }
        let mut out = RawEvent::default();
        let mut dup = None;
        self.object(|r, k| {
            match &*k {
                "action" => set(&mut out.action, r.lstr()?, "action", &mut dup),
                "success" => set(&mut out.success, r.lbool()?, "success", &mut dup),
                "evidence" => set(&mut out.evidence, r.evidence()?, "evidence", &mut dup),
                _ => {
                    r.skip_value(2)?;
                }
            }
            Ok(())
        })?;
        dup_err(dup)?;
        Ok(LObj::Obj(out))
    }

    fn case(&mut self) -> R<LObj<RawCase<'a>>> {
        if self.peek() != Some(b'{') {
            return Ok(LObj::Other(self.skip_value(0)?.0));
        }
        let mut out = RawCase::default();
        let mut dup = None;
        self.object(|r, k| {
            match &*k {
                "case_id" => set(&mut out.case_id, r.lstr()?, "case_id", &mut dup),
                "task" => set(&mut out.task, r.lstr()?, "task", &mut dup),
                "completion_claimed" => set(
                    &mut out.completion_claimed,
                    r.lbool()?,
                    "completion_claimed",
                    &mut dup,
                ),
                "requirements" => set(
                    &mut out.requirements,
                    r.list(|r| r.requirement())?,
                    "requirements",
                    &mut dup,
                ),
                "events" => set(&mut out.events, r.list(|r| r.event())?, "events", &mut dup),
                _ => {
                    r.skip_value(1)?;
                }
            }
            Ok(())
        })?;
        dup_err(dup)?;
        Ok(LObj::Obj(out))
    }
}

/// Stores a known member; a second occurrence is remembered as a duplicate (reported
/// once the line is known to be valid JSON, like the serde path).
fn set<T>(slot: &mut Option<T>, v: T, key: &'static str, dup: &mut Option<&'static str>) {
    if slot.is_some() {
        dup.get_or_insert(key);
    }
    *slot = Some(v);
}

fn dup_err(dup: Option<&'static str>) -> R<()> {
    match dup {
        Some(k) => Err(format!("duplicate key '{k}'")),
        None => Ok(()),
    }
}

/// Reads one case line into the lenient form that [`crate::case`] validates.
pub(crate) fn read_case(line: &[u8]) -> R<LObj<RawCase<'_>>> {
    let s = match std::str::from_utf8(line) {
        Ok(s) => s,
        Err(e) => {
            return Err(format!(
                "invalid JSON: invalid UTF-8 at byte {}",
                e.valid_up_to() + 1
            ));
        }
    };
    let mut r = Reader { s, b: line, pos: 0 };
    let case = r.case()?;
    if r.peek().is_some() {
        return r.err("trailing characters");
    }
    Ok(case)
}
