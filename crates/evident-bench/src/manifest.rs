//! The SHA-256 manifest of an output directory, and its check.
//!
//! `manifest.json` lists every file of the run but itself with its SHA-256. The check
//! walks the directory itself (never trusting the manifest's paths, never following a
//! symlink) and compares both ways: a listed file that is missing or changed, and —
//! beyond the peer, which ignores them — a file the manifest does not list, a symlink or
//! any other non-regular file, are all problems. The configuration's digest is
//! recomputed from the stored configuration as well.

use std::collections::BTreeMap;
use std::io::Read;
use std::path::{Path, PathBuf};

use serde::Serialize;
use serde_json::{Map, Value};
use sha2::{Digest, Sha256};

use evident_eval::pyjson;

use crate::Error;
use crate::json::{MAX_INPUT_BYTES, create, file_text, parse, read_limited};

/// The manifest's file name, at the top of the output directory (the one file it does
/// not list).
pub const MANIFEST: &str = "manifest.json";

/// More entries than any run writes (24,000 runs are 48,000 files).
const MAX_ENTRIES: usize = 1_000_000;

/// What is wrong with one path.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum ProblemKind {
    /// Listed, but no regular file is there.
    Missing,
    /// Listed, and its bytes hash differently.
    DigestMismatch,
    /// A regular file the manifest does not list.
    Untracked,
    /// A symlink, FIFO, socket or device (never followed, never listed).
    NotRegularFile,
    /// The stored configuration does not hash to the manifest's `config_digest`.
    ConfigDigestMismatch,
    /// Could not be read.
    Unreadable,
}

/// One thing wrong with an output directory, so a check lists every problem, not the
/// first.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Problem {
    /// The `/`-separated path relative to the directory.
    pub path: String,
    /// What kind of problem it is.
    pub problem: ProblemKind,
    /// The problem in words (the digests that differ, the error that stopped a read).
    pub detail: String,
}

/// The outcome of a check.
#[derive(Debug, Clone, Serialize)]
pub struct Verification {
    /// The directory checked.
    pub dir: PathBuf,
    /// `benchmark` (an `experiment_id`) or `sandbox` (a `suite_id`).
    pub kind: &'static str,
    /// The manifest's `experiment_id` or `suite_id`.
    pub id: String,
    /// Files the manifest lists.
    pub listed: usize,
    /// No problem was found: the directory is exactly what was written.
    pub ok: bool,
    /// Every problem found, in path order.
    pub problems: Vec<Problem>,
}

impl Verification {
    /// One line per problem.
    pub fn problems_text(&self) -> String {
        self.problems
            .iter()
            .map(|p| format!("{}: {}", p.path, p.detail))
            .collect::<Vec<_>>()
            .join("; ")
    }
}

/// Regular files under `dir` by their `/`-separated relative path (the top-level
/// manifest left out), and problems for everything else found. No recursion (a deep
/// tree cannot overflow the stack) and no symlink is followed.
fn walk(dir: &Path) -> Result<(BTreeMap<String, PathBuf>, Vec<Problem>), Error> {
    let mut files = BTreeMap::new();
    let mut problems = Vec::new();
    let mut stack: Vec<(PathBuf, String)> = vec![(dir.to_path_buf(), String::new())];
    let mut seen = 0usize;
    while let Some((abs, rel)) = stack.pop() {
        let entries = std::fs::read_dir(&abs).map_err(|e| Error::io(&abs, "read", &e))?;
        for entry in entries {
            let entry = entry.map_err(|e| Error::io(&abs, "read", &e))?;
            seen += 1;
            if seen > MAX_ENTRIES {
                return Err(Error::file(
                    dir,
                    format!("more than {MAX_ENTRIES} entries; refusing to walk it"),
                ));
            }
            let name = entry.file_name();
            let shown = name.to_string_lossy().into_owned();
            let child = if rel.is_empty() {
                shown.clone()
            } else {
                format!("{rel}/{shown}")
            };
            // DirEntry::file_type does not follow symlinks.
            let ft = entry
                .file_type()
                .map_err(|e| Error::io(&entry.path(), "stat", &e))?;
            if name.to_str().is_none() {
                problems.push(Problem {
                    path: child,
                    problem: ProblemKind::Untracked,
                    detail: "a name that is not UTF-8 (no manifest can list it)".into(),
                });
            } else if ft.is_dir() {
                stack.push((entry.path(), child));
            } else if ft.is_file() {
                if child != MANIFEST {
                    files.insert(child, entry.path());
                }
            } else {
                let what = if ft.is_symlink() {
                    "a symlink (never followed)"
                } else {
                    "not a regular file"
                };
                problems.push(Problem {
                    path: child,
                    problem: ProblemKind::NotRegularFile,
                    detail: what.into(),
                });
            }
        }
    }
    Ok((files, problems))
}

fn file_sha256(path: &Path) -> std::io::Result<String> {
    let mut f = std::fs::File::open(path)?;
    let mut h = Sha256::new();
    let mut buf = vec![0u8; 64 * 1024];
    loop {
        let n = f.read(&mut buf)?;
        if n == 0 {
            break;
        }
        h.update(&buf[..n]);
    }
    Ok(hex::encode(h.finalize()))
}

/// Writes `manifest.json`: the header's members plus `files`. Returns how many files it
/// lists.
pub(crate) fn write(dir: &Path, header: Value) -> Result<usize, Error> {
    let (files, problems) = walk(dir)?;
    if let Some(p) = problems.first() {
        return Err(Error::file(dir, format!("{}: {}", p.path, p.detail)));
    }
    let mut listed = Map::new();
    for (rel, abs) in &files {
        let d = file_sha256(abs).map_err(|e| Error::io(abs, "read", &e))?;
        listed.insert(rel.clone(), Value::String(d));
    }
    let mut m = header.as_object().cloned().unwrap_or_default();
    m.insert("files".into(), Value::Object(listed));
    create(&dir.join(MANIFEST), &file_text(&Value::Object(m))?)?;
    Ok(files.len())
}

fn is_digest(s: &str) -> bool {
    s.len() == 64 && s.bytes().all(|b| b.is_ascii_hexdigit())
}

/// Checks `dir` against its manifest. `Err` when the manifest itself cannot be read or
/// is malformed; otherwise every problem found, in path order.
pub fn verify(dir: &Path) -> Result<Verification, Error> {
    let mpath = dir.join(MANIFEST);
    let shown = mpath.display().to_string();
    match std::fs::symlink_metadata(&mpath) {
        Ok(m) if m.is_file() => {}
        Ok(_) => {
            return Err(Error::file(
                &mpath,
                "not a regular file (a symlink is never followed)",
            ));
        }
        Err(e) => {
            return Err(Error(format!(
                "{shown}: cannot read the manifest: {e}; hint: give the directory `evident bench run` or `evident sandbox run` wrote"
            )));
        }
    }
    let v = parse(&shown, &read_limited(&mpath, MAX_INPUT_BYTES)?)?;
    let text = |key: &str| match v.get(key) {
        Some(Value::String(s)) => Ok(s.clone()),
        _ => Err(Error::at(&shown, &format!("$.{key}"), "must be a string")),
    };
    if text("schema_version")? != "1" {
        return Err(Error::at(
            &shown,
            "$.schema_version",
            "unsupported version; hint: \"1\" is the only one",
        ));
    }
    let (kind, id, config_file) = match (v.get("experiment_id"), v.get("suite_id")) {
        (Some(_), None) => ("benchmark", text("experiment_id")?, "config.json"),
        (None, Some(_)) => ("sandbox", text("suite_id")?, "suite_config.json"),
        _ => {
            return Err(Error::at(
                &shown,
                "$",
                "must have exactly one of experiment_id (a benchmark) and suite_id (a sandbox suite)",
            ));
        }
    };
    let config_digest = text("config_digest")?;
    let Some(Value::Object(listed)) = v.get("files") else {
        return Err(Error::at(
            &shown,
            "$.files",
            "must be an object mapping each file's path to its SHA-256",
        ));
    };
    for (k, d) in listed {
        match d {
            Value::String(s) if is_digest(s) => {}
            _ => {
                return Err(Error::at(
                    &shown,
                    &format!("$.files[{k:?}]"),
                    "must be a SHA-256 digest (64 hex digits)",
                ));
            }
        }
    }
    let (found, mut problems) = walk(dir)?;
    for (rel, want) in listed {
        let want = want.as_str().unwrap_or_default();
        match found.get(rel) {
            None => problems.push(Problem {
                path: rel.clone(),
                problem: ProblemKind::Missing,
                detail: "listed in the manifest but not here as a regular file".into(),
            }),
            Some(abs) => match file_sha256(abs) {
                Ok(got) if got.eq_ignore_ascii_case(want) => {}
                Ok(got) => problems.push(Problem {
                    path: rel.clone(),
                    problem: ProblemKind::DigestMismatch,
                    detail: format!("changed: SHA-256 {got}, the manifest says {want}"),
                }),
                Err(e) => problems.push(Problem {
                    path: rel.clone(),
                    problem: ProblemKind::Unreadable,
                    detail: format!("cannot read: {e}"),
                }),
            },
        }
    }
    for rel in found.keys() {
        if !listed.contains_key(rel) {
            problems.push(Problem {
                path: rel.clone(),
                problem: ProblemKind::Untracked,
                detail: "not listed in the manifest (nothing may be added to a run)".into(),
            });
        }
    }
    // The configuration the run says it ran must hash to the digest it records.
    if let Some(abs) = found.get(config_file)
        && listed.contains_key(config_file)
    {
        let got = read_limited(abs, MAX_INPUT_BYTES)
            .and_then(|b| parse(config_file, &b))
            .and_then(|c| pyjson::canonical_sha256(&c).map_err(|e| Error(e.to_string())));
        match got {
            Ok(d) if d == config_digest => {}
            Ok(d) => problems.push(Problem {
                path: config_file.into(),
                problem: ProblemKind::ConfigDigestMismatch,
                detail: format!("hashes to {d}, the manifest's config_digest is {config_digest}"),
            }),
            Err(e) => problems.push(Problem {
                path: config_file.into(),
                problem: ProblemKind::Unreadable,
                detail: e.0,
            }),
        }
    }
    problems.sort_by(|a, b| a.path.cmp(&b.path));
    Ok(Verification {
        dir: dir.to_path_buf(),
        kind,
        id,
        listed: listed.len(),
        ok: problems.is_empty(),
        problems,
    })
}
