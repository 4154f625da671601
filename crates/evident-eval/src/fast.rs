//! A hand-written JSON reader for case lines: the hot path of `evident eval`.
//!
//! Measured on this machine, a serde visitor over sonic-rs (the first version) needed
//! 3.1 µs of CPU per case, most of it in generic deserializer plumbing, and rejected
//! numbers that overflow a float, which Python reads as infinity; this reader knows the case shape, borrows every
//! unescaped string from the line, skips unknown members without building anything,
//! and still checks the whole line is valid JSON (RFC 8259: no NaN, no comments, no
//! trailing commas, no raw control characters in strings, no lone surrogates). It
//! produces the same lenient values as the serde path in [`crate::case`], and the
//! tests check both agree on generated and hand-written lines.

use std::borrow::Cow;

use crate::case::{
    Case, Event, Kind, LBool, LStr, Requirement, idx, object_form_only, string_field, strip_cow,
};
use crate::text::py_blank;

/// Deep enough for any real trace, shallow enough that recursion cannot overflow.
const MAX_DEPTH: usize = 512;

pub(crate) struct Reader<'a> {
    s: &'a str,
    b: &'a [u8],
    pos: usize,
}

type R<T> = Result<T, crate::case::CaseError>;

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
        Err(format!("invalid JSON: {what} at column {}", self.pos + 1).into())
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

    /// Reads `requirements[i]` straight into the case; the first problem is kept in
    /// `b.req_err` (reported after the case-level checks, in the peer's order).
    fn requirement(&mut self, i: usize, b: &mut Builder<'a>) -> R<()> {
        if self.peek() != Some(b'{') {
            self.skip_value(2)?;
            b.req_err.get_or_insert_with(|| {
                format!("requirements[{i}]: Each requirement must be an object.")
            });
            return Ok(());
        }
        let start = b.case.fields.len();
        let mut action: Option<LStr<'a>> = None;
        // None: absent; Some(None): a good list; Some(Some(msg)): its problem.
        let mut fields: Option<Option<String>> = None;
        // Keys of the object form: refused here (fixed order, as the serde path).
        let mut object_keys = [false; 3];
        self.object(|r, k| {
            match &*k {
                "action" => {
                    if action.is_some() {
                        b.dup.get_or_insert("action");
                    }
                    action = Some(r.lstr()?);
                }
                "evidence_fields" => {
                    if fields.is_some() {
                        b.dup.get_or_insert("evidence_fields");
                        b.case.fields.truncate(start);
                    }
                    if r.peek() != Some(b'[') {
                        let k = r.skip_value(2)?.0;
                        fields = Some(Some(format!(
                            "requirements[{i}]: 'evidence_fields' must be a list of non-empty strings, not {k}."
                        )));
                    } else {
                        let mut bad = false;
                        r.array(|r| {
                            match r.lstr()? {
                                LStr::Str(s) if !bad && !py_blank(&s) => b.case.fields.push(strip_cow(s)),
                                _ => bad = true,
                            }
                            Ok(())
                        })?;
                        fields = Some(bad.then(|| {
                            format!("requirements[{i}]: 'evidence_fields' must be a list of non-empty strings.")
                        }));
                    }
                }
                key @ ("arguments" | "evidence" | "count") => {
                    let j = match key {
                        "arguments" => 0,
                        "evidence" => 1,
                        _ => 2,
                    };
                    if object_keys[j] {
                        b.dup.get_or_insert(match j {
                            0 => "arguments",
                            1 => "evidence",
                            _ => "count",
                        });
                    }
                    object_keys[j] = true;
                    r.skip_value(2)?;
                }
                _ => {
                    r.skip_value(2)?;
                }
            }
            Ok(())
        })?;
        if b.req_err.is_some() {
            b.case.fields.truncate(start);
            return Ok(());
        }
        if let Some(j) = object_keys.iter().position(|&x| x) {
            b.req_err = Some(object_form_only(i, ["arguments", "evidence", "count"][j]));
            return Ok(());
        }
        let action = match string_field(action, "'action'") {
            Ok(Some(a)) if !a.is_empty() => a,
            Ok(_) => {
                b.req_err = Some(format!(
                    "requirements[{i}]: Each requirement requires a non-empty 'action'."
                ));
                return Ok(());
            }
            Err(m) => {
                b.req_err = Some(format!("requirements[{i}]: {m}"));
                return Ok(());
            }
        };
        if let Some(Some(m)) = fields {
            b.req_err = Some(m);
            return Ok(());
        }
        b.case.requirements.push(Requirement {
            action,
            fields: (idx(start), idx(b.case.fields.len())),
        });
        Ok(())
    }

    /// Reads `events[i]` straight into the case; the first problem goes to `b.ev_err`.
    fn event(&mut self, i: usize, b: &mut Builder<'a>) -> R<()> {
        if self.peek() != Some(b'{') {
            self.skip_value(2)?;
            b.ev_err
                .get_or_insert_with(|| format!("events[{i}]: Each event must be an object."));
            return Ok(());
        }
        let start = b.case.evidence.len();
        let mut action: Option<LStr<'a>> = None;
        let mut success: Option<LBool> = None;
        let mut evidence_bad: Option<Kind> = None;
        let mut evidence_seen = false;
        let mut dup_key: Option<String> = None;
        self.object(|r, k| {
            match &*k {
                "action" => {
                    if action.is_some() {
                        b.dup.get_or_insert("action");
                    }
                    action = Some(r.lstr()?);
                }
                "success" => {
                    if success.is_some() {
                        b.dup.get_or_insert("success");
                    }
                    success = Some(r.lbool()?);
                }
                "evidence" => {
                    if evidence_seen {
                        b.dup.get_or_insert("evidence");
                        b.case.evidence.truncate(start);
                    }
                    evidence_seen = true;
                    if r.peek() != Some(b'{') {
                        evidence_bad = Some(r.skip_value(2)?.0);
                    } else {
                        r.object(|r, key| {
                            let (_, present) = r.skip_value(3)?;
                            if dup_key.is_none()
                                && b.case.evidence[start..]
                                    .iter()
                                    .any(|(seen, _)| *seen == key)
                            {
                                dup_key = Some(key.to_string());
                            }
                            b.case.evidence.push((key, present));
                            Ok(())
                        })?;
                    }
                }
                _ => {
                    r.skip_value(2)?;
                }
            }
            Ok(())
        })?;
        if let Some(k) = dup_key {
            return Err(format!("duplicate key '{k}' in 'evidence'").into());
        }
        if b.ev_err.is_some() {
            b.case.evidence.truncate(start);
            return Ok(());
        }
        let problem = match string_field(action, "'action'") {
            Ok(Some(a)) if !a.is_empty() => match success {
                Some(LBool::Bool(ok)) => match evidence_bad {
                    None => {
                        let ev = (idx(start), idx(b.case.evidence.len()));
                        b.case.events.push(Event {
                            action: a,
                            success: ok,
                            evidence: ev,
                        });
                        return Ok(());
                    }
                    Some(k) => format!("events[{i}]: 'evidence' must be an object, not {k}."),
                },
                Some(LBool::Other(k)) => {
                    format!("events[{i}]: Each event requires boolean 'success', not {k}.")
                }
                None => format!("events[{i}]: Each event requires boolean 'success'."),
            },
            Ok(_) => format!("events[{i}]: Each event requires a non-empty 'action'."),
            Err(m) => format!("events[{i}]: {m}"),
        };
        b.ev_err = Some(problem);
        Ok(())
    }

    /// Reads a list member (`requirements` or `events`) element by element.
    fn list_into(&mut self, b: &mut Builder<'a>, which: List) -> R<Seen> {
        if self.peek() != Some(b'[') {
            return Ok(Seen::Other(self.skip_value(1)?.0));
        }
        let mut n = 0usize;
        self.array(|r| {
            match which {
                List::Requirements => r.requirement(n, b)?,
                List::Events => r.event(n, b)?,
            }
            n += 1;
            Ok(())
        })?;
        Ok(Seen::Array(n))
    }

    fn case(&mut self) -> R<Case<'a>> {
        if self.peek() != Some(b'{') {
            let k = self.skip_value(0)?.0;
            if self.peek().is_some() {
                return self.err("trailing characters");
            }
            return Err(format!("Each case must be an object, not {k}.").into());
        }
        let mut b = Builder {
            case: Case::default(),
            req_err: None,
            ev_err: None,
            dup: None,
        };
        b.case.requirements.reserve(6);
        b.case.events.reserve(8);
        b.case.fields.reserve(16);
        b.case.evidence.reserve(32);
        let (mut case_id, mut task, mut claimed) = (None, None, None);
        let (mut reqs, mut events) = (Seen::Missing, Seen::Missing);
        self.object(|r, k| {
            match &*k {
                "case_id" => {
                    if case_id.is_some() {
                        b.dup.get_or_insert("case_id");
                    }
                    case_id = Some(r.lstr()?);
                }
                "task" => {
                    if task.is_some() {
                        b.dup.get_or_insert("task");
                    }
                    task = Some(r.lstr()?);
                }
                "completion_claimed" => {
                    if claimed.is_some() {
                        b.dup.get_or_insert("completion_claimed");
                    }
                    claimed = Some(r.lbool()?);
                }
                "requirements" => {
                    if !matches!(reqs, Seen::Missing) {
                        b.dup.get_or_insert("requirements");
                    }
                    reqs = if r.peek() == Some(b'{') {
                        // The object form: read in full by `constrain` afterwards.
                        r.skip_value(1)?;
                        Seen::Object
                    } else {
                        r.list_into(&mut b, List::Requirements)?
                    };
                }
                "events" => {
                    if !matches!(events, Seen::Missing) {
                        b.dup.get_or_insert("events");
                    }
                    events = r.list_into(&mut b, List::Events)?;
                }
                _ => {
                    r.skip_value(1)?;
                }
            }
            Ok(())
        })?;
        if self.peek().is_some() {
            return self.err("trailing characters");
        }
        if let Some(k) = b.dup {
            return Err(format!("duplicate key '{k}'").into());
        }
        // The peer's checks, in its order.
        let case_id = string_field(case_id, "'case_id'")?.unwrap_or_default();
        let task = string_field(task, "'task'")?.unwrap_or_default();
        if case_id.is_empty() || task.is_empty() {
            return Err("A case requires non-empty 'case_id' and 'task'.".into());
        }
        b.case.completion_claimed = match claimed {
            Some(LBool::Bool(v)) => v,
            Some(LBool::Other(k)) => {
                return Err(format!("'completion_claimed' must be boolean, not {k}.").into());
            }
            None => return Err("'completion_claimed' must be boolean (it is missing).".into()),
        };
        match reqs {
            Seen::Array(n) if n > 0 => {}
            Seen::Object => b.case.object_form = true,
            Seen::Other(k) => {
                return Err(format!("'requirements' must be a non-empty list, not {k}.").into());
            }
            _ => return Err("'requirements' must be a non-empty list.".into()),
        }
        if let Seen::Other(k) = events {
            return Err(format!("'events' must be a list, not {k}.").into());
        }
        if let Some(m) = b.req_err.take().or(b.ev_err.take()) {
            return Err(m.into());
        }
        b.case.case_id = case_id;
        Ok(b.case)
    }
}

#[derive(Clone, Copy)]
enum List {
    Requirements,
    Events,
}

/// What a list member turned out to be.
enum Seen {
    Missing,
    Other(Kind),
    Array(usize),
    /// `requirements` only: the object form.
    Object,
}

/// The case being built, with the first problem of each list kept for later.
struct Builder<'a> {
    case: Case<'a>,
    req_err: Option<String>,
    ev_err: Option<String>,
    dup: Option<&'static str>,
}

/// Reads and validates one case line (the same answers and messages as
/// [`crate::case::validate`] over the serde path).
pub(crate) fn read_case(line: &[u8]) -> R<Case<'_>> {
    let s = match std::str::from_utf8(line) {
        Ok(s) => s,
        Err(e) => {
            return Err(format!(
                "invalid JSON: invalid UTF-8 at byte {}",
                e.valid_up_to() + 1
            )
            .into());
        }
    };
    let mut r = Reader { s, b: line, pos: 0 };
    r.case()
}
