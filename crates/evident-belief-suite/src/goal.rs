//! Goals made checkable, and the fresh observer that checks them (SAW).
//!
//! The observer reads the real filesystem under the world's root directly, never
//! through the agent's runtime, and only after the last action. Unlike the seed's
//! observer, which asks only "does the target exist?", it checks the goal itself: the
//! content, the kind (file or directory), the bytes of a copy.

use std::path::Path;

use evident_rules::belief::Polarity;
use serde::Serialize;

use crate::world::{BadPath, absent, normalize};

/// What must be true of one path.
#[derive(Debug, Clone, PartialEq, Serialize)]
#[serde(tag = "expect", content = "value", rename_all = "snake_case")]
pub enum Expect {
    /// A regular file is there.
    File,
    /// A regular file is there and its bytes contain this text.
    FileContains(String),
    /// A regular file is there and one of its lines is exactly this text.
    FileHasLine(String),
    /// A directory is there.
    Dir,
    /// A regular file is there whose bytes equal those of this other path, read now.
    CopyOf(String),
    /// Nothing is there (an absence goal).
    Absent,
}

/// One checkable part of a goal: a path and what must be true of it.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Condition {
    /// World-relative path.
    pub path: String,
    /// What must hold there.
    #[serde(flatten)]
    pub expect: Expect,
}

impl Condition {
    /// A condition on `path`.
    pub fn new(path: &str, expect: Expect) -> Condition {
        Condition {
            path: path.to_owned(),
            expect,
        }
    }

    /// Presence or absence: read from what the goal asks for.
    pub fn polarity(&self) -> Polarity {
        match self.expect {
            Expect::Absent => Polarity::Absence,
            _ => Polarity::Presence,
        }
    }
}

/// What a fresh look found.
#[derive(Debug, Clone, PartialEq, Serialize)]
#[serde(tag = "found", content = "detail", rename_all = "snake_case")]
pub enum Observation {
    /// The condition holds.
    Holds(String),
    /// The condition does not hold.
    Fails(String),
    /// The observer could not look (an I/O error other than "not there"). Never a
    /// match and never a contradiction: no SAW item is made.
    Indeterminate(String),
}

impl Observation {
    fn judge(holds: bool, detail: String) -> Observation {
        if holds {
            Observation::Holds(detail)
        } else {
            Observation::Fails(detail)
        }
    }
}

enum Kind {
    Missing,
    File,
    Dir,
    Other,
}

fn kind(full: &Path) -> Result<Kind, std::io::Error> {
    match std::fs::symlink_metadata(full) {
        Ok(m) if m.is_file() => Ok(Kind::File),
        Ok(m) if m.is_dir() => Ok(Kind::Dir),
        Ok(_) => Ok(Kind::Other),
        Err(e) if absent(&e) => Ok(Kind::Missing),
        Err(e) => Err(e),
    }
}

/// Check `c` against the world under `root`, now, content and all.
pub fn observe(root: &Path, c: &Condition) -> Observation {
    let full = match normalize(&c.path) {
        Ok(rel) => root.join(rel),
        Err(BadPath(e)) => return Observation::Indeterminate(e),
    };
    let k = match kind(&full) {
        Ok(k) => k,
        Err(e) => return Observation::Indeterminate(format!("{}: {e}", c.path)),
    };
    let what = |k: &Kind| match k {
        Kind::Missing => "nothing",
        Kind::File => "a file",
        Kind::Dir => "a directory",
        Kind::Other => "something that is neither a file nor a directory",
    };
    match (&c.expect, &k) {
        (Expect::Absent, _) => Observation::judge(
            matches!(k, Kind::Missing),
            format!("{} is {}", c.path, what(&k)),
        ),
        (Expect::Dir, _) => Observation::judge(
            matches!(k, Kind::Dir),
            format!("{} is {}", c.path, what(&k)),
        ),
        (_, Kind::File) => {
            let bytes = match std::fs::read(&full) {
                Ok(b) => b,
                Err(e) => return Observation::Indeterminate(format!("{}: {e}", c.path)),
            };
            check_content(root, c, &bytes)
        }
        _ => Observation::Fails(format!("{} is {}, not a file", c.path, what(&k))),
    }
}

fn check_content(root: &Path, c: &Condition, bytes: &[u8]) -> Observation {
    match &c.expect {
        Expect::File => Observation::Holds(format!("{} is a file", c.path)),
        Expect::FileContains(needle) => {
            let holds = contains(bytes, needle.as_bytes());
            let verb = if holds {
                "contains"
            } else {
                "does not contain"
            };
            Observation::judge(holds, format!("{} {verb} {needle:?}", c.path))
        }
        Expect::FileHasLine(line) => {
            let text = String::from_utf8_lossy(bytes);
            let holds = text.lines().any(|l| l.trim_end_matches('\r') == line);
            let verb = if holds { "has" } else { "has no" };
            Observation::judge(holds, format!("{} {verb} the line {line:?}", c.path))
        }
        Expect::CopyOf(source) => {
            let src = match normalize(source) {
                Ok(rel) => root.join(rel),
                Err(BadPath(e)) => return Observation::Indeterminate(e),
            };
            if src.is_dir() {
                return Observation::Fails(format!(
                    "{source} is a directory, so {} cannot be a copy of it",
                    c.path
                ));
            }
            match std::fs::read(&src) {
                Ok(orig) => {
                    let holds = orig == bytes;
                    let verb = if holds { "equals" } else { "differs from" };
                    Observation::judge(holds, format!("{} {verb} {source}", c.path))
                }
                Err(e) if absent(&e) => Observation::Fails(format!(
                    "{source} is not there, so {} cannot be a copy of it",
                    c.path
                )),
                Err(e) => Observation::Indeterminate(format!("{source}: {e}")),
            }
        }
        Expect::Dir | Expect::Absent => Observation::Fails(format!("{} is a file", c.path)),
    }
}

fn contains(hay: &[u8], needle: &[u8]) -> bool {
    needle.is_empty() || hay.windows(needle.len()).any(|w| w == needle)
}

/// The seed's observer, kept for comparison: only "is anything at the path?", with
/// goal polarity. It cannot tell a stale file, a wrong copy or a directory from the
/// file that was wanted.
pub fn observe_existence(root: &Path, c: &Condition) -> Observation {
    let full = match normalize(&c.path) {
        Ok(rel) => root.join(rel),
        Err(BadPath(e)) => return Observation::Indeterminate(e),
    };
    match kind(&full) {
        Ok(k) => {
            let present = !matches!(k, Kind::Missing);
            let detail = format!(
                "{} {}",
                c.path,
                if present { "exists" } else { "does not exist" }
            );
            Observation::judge(c.polarity().saw_supports(present), detail)
        }
        Err(e) => Observation::Indeterminate(format!("{}: {e}", c.path)),
    }
}
