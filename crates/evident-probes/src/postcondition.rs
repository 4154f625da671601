//! File postconditions (the reference's v0.7 SDK): an exact text file, a directory's
//! children, a JSON object. No symlink is followed anywhere on the path (each component
//! is opened `O_NOFOLLOW` from the one before), and the observation carries only the
//! kind, flags, counts and a fixed reason code — never a path, name, key or value — so a
//! check marked `private` can show it as it is.
//!
//! A *trusted* outcome is an observation (`matches` true or false, with the reason of a
//! non-match: `missing`, `wrong_type`, `content_mismatch`, `required_children_missing`,
//! `not_empty`, `unexpected_children`, `invalid_utf8`, `invalid_json`, `duplicate_key`,
//! `wrong_top_level`, `key_mismatch`). An *untrusted* one (`unsafe_path`, `io_error`,
//! `oversize`) is a [`ProbeError::Postcondition`]: nothing was observed.

use std::collections::BTreeSet;
use std::io::Read;
use std::path::Path;

use serde_json::{Map, Value};

use crate::Object;
use crate::error::ProbeError;
use crate::paths::{self, NoFollow};
use crate::spec::{
    DirectoryPostcondition, JsonObjectPostcondition, Postcondition, TextFilePostcondition,
};

/// Most directory entries read; a larger directory is not observed (`oversize`).
pub const MAX_DIR_ENTRIES: usize = 1_000_000;

/// What can be checked without touching the world: the strict path form, direct child
/// names, no duplicate child, no contradictory flags. `(field, message with a hint)`,
/// the field relative to the file source.
pub fn check(path: &str, pc: &Postcondition) -> Result<(), (String, String)> {
    paths::strict_components(path).map_err(|m| ("path".to_string(), m.to_string()))?;
    match pc {
        Postcondition::TextFile(_) => Ok(()),
        Postcondition::JsonObject(j) => match j.expected.keys().find(|k| k.trim().is_empty()) {
            Some(_) => Err((
                "postcondition.json_object.expected".into(),
                "an expected key is empty or blank (hint: name the key)".into(),
            )),
            None => Ok(()),
        },
        Postcondition::Directory(d) => {
            let at = |f: &str| format!("postcondition.directory.{f}");
            let mut seen = BTreeSet::new();
            for (i, c) in d.required_children.iter().enumerate() {
                let bad = c.is_empty()
                    || c.trim() != c
                    || c == "."
                    || c == ".."
                    || c.contains(['/', '\\', '\0'])
                    || (c.len() >= 2
                        && c.as_bytes()[0].is_ascii_alphabetic()
                        && c.as_bytes()[1] == b':');
                if bad {
                    return Err((
                        format!("{}[{i}]", at("required_children")),
                        "a required child must be a plain direct name: not empty, no surrounding whitespace, no `/` or `\\`, not `.` or `..` (hint: check the directory that holds it instead)".into(),
                    ));
                }
                if !seen.insert(c.as_str()) {
                    return Err((
                        format!("{}[{i}]", at("required_children")),
                        "this child is listed twice (hint: list each name once)".into(),
                    ));
                }
            }
            if d.exact_empty && !d.required_children.is_empty() {
                return Err((
                    at("exact_empty"),
                    "exact_empty with required_children can never be met (hint: drop one)".into(),
                ));
            }
            if d.exact_empty && d.exact_children {
                return Err((
                    at("exact_children"),
                    "exact_children with exact_empty says the same twice (hint: keep exact_empty)"
                        .into(),
                ));
            }
            if d.exact_children && d.required_children.is_empty() {
                return Err((
                    at("exact_children"),
                    "exact_children with no required_children means an empty directory (hint: write exact_empty = true)".into(),
                ));
            }
            Ok(())
        }
    }
}

/// The keys a postcondition observation has, with their JSON types (for the contract's
/// checks of `expected`).
pub fn observed_keys(pc: &Postcondition) -> &'static [(&'static str, &'static str)] {
    const COMMON: [(&str, &str); 4] = [
        ("postcondition", "a string"),
        ("trusted", "a boolean"),
        ("matches", "a boolean"),
        ("reason", "a string"),
    ];
    match pc {
        Postcondition::TextFile(_) => &[
            COMMON[0],
            COMMON[1],
            COMMON[2],
            COMMON[3],
            ("exists", "a boolean"),
            ("regular_file", "a boolean"),
            ("size_matches", "a boolean"),
            ("content_matches", "a boolean"),
        ],
        Postcondition::Directory(_) => &[
            COMMON[0],
            COMMON[1],
            COMMON[2],
            COMMON[3],
            ("exists", "a boolean"),
            ("directory", "a boolean"),
            ("required_children_present", "a boolean"),
            ("required_child_count", "an integer"),
            ("empty", "a boolean"),
            ("only_required_children", "a boolean"),
        ],
        Postcondition::JsonObject(_) => &[
            COMMON[0],
            COMMON[1],
            COMMON[2],
            COMMON[3],
            ("exists", "a boolean"),
            ("regular_file", "a boolean"),
            ("valid_utf8", "a boolean"),
            ("valid_json", "a boolean"),
            ("top_level_object", "a boolean"),
            ("expected_keys_present", "a boolean"),
            ("expected_values_match", "a boolean"),
            ("expected_key_count", "an integer"),
            ("key_count_matches", "a boolean"),
        ],
    }
}

/// Observes `pc` at `path` beneath `root` (blocking).
pub fn observe(
    path: &str,
    pc: &Postcondition,
    root: &Path,
    max_bytes: u64,
) -> Result<Object, ProbeError> {
    let parts = paths::strict_components(path).map_err(|m| ProbeError::invalid(m.0))?;
    let kind = pc.kind();
    let untrusted = |reason: &str, detail: String| ProbeError::Postcondition {
        postcondition: kind.into(),
        reason: reason.into(),
        path: path.into(),
        detail,
    };
    let mut obs = Observed::new(kind);
    let result = match pc {
        Postcondition::TextFile(t) => text_file(t, root, &parts, &mut obs),
        Postcondition::Directory(d) => directory(d, root, &parts, &mut obs),
        Postcondition::JsonObject(j) => json_object(j, root, &parts, max_bytes, &mut obs),
    };
    match result {
        Ok(reason) => Ok(obs.finish(reason)),
        Err(Fail::Missing) => Ok(obs.finish(Some("missing"))),
        Err(Fail::WrongType) => Ok(obs.finish(Some("wrong_type"))),
        Err(Fail::Unsafe(d)) => Err(untrusted("unsafe_path", d)),
        Err(Fail::Io(d)) => Err(untrusted("io_error", d)),
        Err(Fail::Oversize(d)) => Err(untrusted("oversize", d)),
    }
}

/// The flags of one observation, in the order they are set.
struct Observed {
    kind: &'static str,
    flags: Map<String, Value>,
}

impl Observed {
    fn new(kind: &'static str) -> Self {
        Observed {
            kind,
            flags: Map::new(),
        }
    }

    fn set(&mut self, key: &str, v: impl Into<Value>) {
        self.flags.insert(key.into(), v.into());
    }

    /// `reason` is `None` for a match.
    fn finish(self, reason: Option<&str>) -> Object {
        let mut o = Map::new();
        o.insert("postcondition".into(), Value::from(self.kind));
        o.insert("trusted".into(), Value::Bool(true));
        o.insert("matches".into(), Value::Bool(reason.is_none()));
        o.insert("reason".into(), reason.map_or(Value::Null, Value::from));
        o.extend(self.flags);
        o
    }
}

enum Fail {
    Missing,
    WrongType,
    Unsafe(String),
    Io(String),
    Oversize(String),
}

impl From<NoFollow> for Fail {
    fn from(e: NoFollow) -> Self {
        match e {
            NoFollow::Missing => Fail::Missing,
            NoFollow::Unsafe(d) => Fail::Unsafe(d),
            NoFollow::Io(d) => Fail::Io(d),
        }
    }
}

type Outcome = Result<Option<&'static str>, Fail>;

/// The entry at the end of `parts`, checked to be `want` without following a link.
fn open_entry(
    root: &Path,
    parts: &[&str],
    want: rustix::fs::FileType,
    obs: &mut Observed,
) -> Result<rustix::fd::OwnedFd, Fail> {
    let parent = paths::open_parent_nofollow(root, parts)?;
    let name = parts.last().copied().unwrap_or(".");
    let (ft, st) = paths::lstat_at(&parent, name)?;
    obs.set("exists", true);
    if ft == rustix::fs::FileType::Symlink {
        return Err(Fail::Unsafe("the path is a symlink".into()));
    }
    if ft != want {
        return Err(Fail::WrongType);
    }
    Ok(paths::open_seen(
        &parent,
        name,
        &st,
        want == rustix::fs::FileType::Directory,
    )?)
}

/// Reads at most `limit` bytes; `Ok((bytes, more))` where `more` says the file goes on.
fn read_up_to(fd: rustix::fd::OwnedFd, limit: u64) -> Result<(Vec<u8>, bool), Fail> {
    let file = std::fs::File::from(fd);
    let mut kept = Vec::new();
    file.take(limit.saturating_add(1))
        .read_to_end(&mut kept)
        .map_err(|e| Fail::Io(paths::io_reason(&e)))?;
    let more = kept.len() as u64 > limit;
    kept.truncate(usize::try_from(limit).unwrap_or(usize::MAX));
    Ok((kept, more))
}

fn text_file(t: &TextFilePostcondition, root: &Path, parts: &[&str], o: &mut Observed) -> Outcome {
    for k in ["exists", "regular_file", "size_matches", "content_matches"] {
        o.set(k, false);
    }
    let fd = open_entry(root, parts, rustix::fs::FileType::RegularFile, o)?;
    o.set("regular_file", true);
    let want = t.expected_text.as_bytes();
    // One byte past the expected text is enough to know the content differs.
    let (got, more) = read_up_to(fd, want.len() as u64)?;
    let size = !more && got.len() == want.len();
    let content = size && got == want;
    o.set("size_matches", size);
    o.set("content_matches", content);
    Ok((!content).then_some("content_mismatch"))
}

fn directory(d: &DirectoryPostcondition, root: &Path, parts: &[&str], o: &mut Observed) -> Outcome {
    o.set("exists", false);
    o.set("directory", false);
    o.set("required_children_present", false);
    o.set("required_child_count", d.required_children.len());
    if d.exact_empty {
        o.set("empty", false);
    }
    if d.exact_children {
        o.set("only_required_children", false);
    }
    let fd = open_entry(root, parts, rustix::fs::FileType::Directory, o)?;
    o.set("directory", true);
    let required: BTreeSet<&[u8]> = d.required_children.iter().map(|c| c.as_bytes()).collect();
    let mut found: BTreeSet<&[u8]> = BTreeSet::new();
    let mut empty = true;
    let mut other = false;
    let mut dir = rustix::fs::Dir::new(fd).map_err(|e| Fail::Io(io_errno(e)))?;
    let mut seen = 0usize;
    while let Some(entry) = dir.read() {
        let entry = entry.map_err(|e| Fail::Io(io_errno(e)))?;
        let name = entry.file_name().to_bytes();
        if name == b"." || name == b".." {
            continue;
        }
        seen += 1;
        if seen > MAX_DIR_ENTRIES {
            return Err(Fail::Oversize(format!(
                "the directory has more than {MAX_DIR_ENTRIES} entries"
            )));
        }
        empty = false;
        if d.exact_empty {
            break;
        }
        match required.get(name) {
            Some(r) => {
                found.insert(r);
            }
            None => other = true,
        }
        if !d.exact_children && !required.is_empty() && found.len() == required.len() {
            break;
        }
    }
    if d.exact_empty {
        o.set("empty", empty);
        if !empty {
            o.set("required_children_present", true);
            return Ok(Some("not_empty"));
        }
    }
    let present = found.len() == required.len();
    o.set("required_children_present", present);
    if d.exact_children {
        o.set("only_required_children", !other);
    }
    if !present {
        return Ok(Some("required_children_missing"));
    }
    if d.exact_children && other {
        return Ok(Some("unexpected_children"));
    }
    Ok(None)
}

fn io_errno(e: rustix::io::Errno) -> String {
    paths::io_reason(&std::io::Error::from(e))
}

fn json_object(
    j: &JsonObjectPostcondition,
    root: &Path,
    parts: &[&str],
    max_bytes: u64,
    o: &mut Observed,
) -> Outcome {
    for k in [
        "exists",
        "regular_file",
        "valid_utf8",
        "valid_json",
        "top_level_object",
        "expected_keys_present",
        "expected_values_match",
    ] {
        o.set(k, false);
    }
    o.set("expected_key_count", j.expected.len());
    if j.exact_keys {
        o.set("key_count_matches", false);
    }
    let fd = open_entry(root, parts, rustix::fs::FileType::RegularFile, o)?;
    o.set("regular_file", true);
    let (bytes, more) = read_up_to(fd, max_bytes)?;
    if more {
        return Err(Fail::Oversize(format!(
            "the file exceeds the limit of {max_bytes} bytes"
        )));
    }
    if std::str::from_utf8(&bytes).is_err() {
        return Ok(Some("invalid_utf8"));
    }
    o.set("valid_utf8", true);
    // A byte-order mark is not JSON (RFC 8259 §8.1); the reference refuses it too.
    if bytes.starts_with("\u{feff}".as_bytes()) {
        return Ok(Some("invalid_json"));
    }
    let doc = match evident_format::json::parse(&bytes) {
        Ok(p) => p.value,
        Err(e) if e.key.is_some() => return Ok(Some("duplicate_key")),
        Err(_) => return Ok(Some("invalid_json")),
    };
    o.set("valid_json", true);
    let Value::Object(got) = doc else {
        return Ok(Some("wrong_top_level"));
    };
    o.set("top_level_object", true);
    let present = j.expected.keys().all(|k| got.contains_key(k));
    let values = present
        && j.expected
            .iter()
            .all(|(k, want)| got.get(k).is_some_and(|g| same(want, g)));
    o.set("expected_keys_present", present);
    o.set("expected_values_match", values);
    let count = got.len() == j.expected.len();
    if j.exact_keys {
        o.set("key_count_matches", count);
    }
    let ok = present && values && (count || !j.exact_keys);
    Ok((!ok).then_some("key_mismatch"))
}

/// Whole-value equality: objects with the same keys, arrays of the same length, each
/// member equal; numbers by exact decimal value (the verdict's rule, `1 = 1.0`);
/// every other value with its type (`true ≠ 1`).
fn same(a: &Value, b: &Value) -> bool {
    match (a, b) {
        (Value::Object(x), Value::Object(y)) => {
            x.len() == y.len() && x.iter().all(|(k, v)| y.get(k).is_some_and(|w| same(v, w)))
        }
        (Value::Array(x), Value::Array(y)) => {
            x.len() == y.len() && x.iter().zip(y).all(|(v, w)| same(v, w))
        }
        (Value::Number(_), Value::Number(_)) => matches!(
            evident_rules::compare::compare_value(a, b, String::new()),
            evident_rules::compare::Cmp::Match
        ),
        _ => a == b,
    }
}

/// The default expectation of a postcondition check: it matches.
pub fn default_expected() -> Object {
    let mut m = Map::new();
    m.insert("matches".into(), Value::Bool(true));
    m
}

#[cfg(test)]
mod tests {
    use super::same;
    use serde_json::json;

    #[test]
    fn whole_values() {
        assert!(same(&json!(1), &json!(1.0)));
        assert!(!same(&json!(true), &json!(1)));
        assert!(!same(&json!([true]), &json!([1])));
        assert!(same(
            &json!({"a": {"b": [1, 2]}}),
            &json!({"a": {"b": [1.0, 2]}})
        ));
        assert!(!same(
            &json!({"a": {"b": 1}}),
            &json!({"a": {"b": 1, "c": 2}})
        ));
        assert!(!same(
            &json!({"a": {"b": 1, "c": 2}}),
            &json!({"a": {"b": 1}})
        ));
        assert!(!same(&json!(null), &json!(0)));
        assert!(!same(&json!("1"), &json!(1)));
    }
}
