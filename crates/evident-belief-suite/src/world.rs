//! A real filesystem world: a temporary directory and the tools an agent acts through.
//!
//! Every tool touches the real filesystem (`std::fs`) under the world's root, except
//! `phantom_write`, which reports success and writes nothing (seed 004's lying
//! actuator). The read tools (`read_file`, `stat_file`, `hash_file`) are how an agent
//! checks its own work; in a *compromised* runtime they answer from the runtime's cache
//! of what it claims to have written, never from the disk — the agent's own readback
//! then lies exactly as the actuator did.

use std::collections::{BTreeMap, HashMap};
use std::io;
use std::path::{Component, Path, PathBuf};

use evident_rules::belief::{Blocker, Polarity};
use serde::Deserialize;
use sha2::{Digest, Sha256};

/// `write_file`: write `content` to `file_path`, creating parents when asked.
#[derive(Debug, Clone, PartialEq, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct WriteFile {
    /// Where to write, relative to the world's root.
    pub file_path: String,
    /// The text to write.
    pub content: String,
    /// Create missing parent directories first.
    #[serde(default)]
    pub create_dirs: bool,
}

/// `create_directory`: make a directory, with its parents when asked.
#[derive(Debug, Clone, PartialEq, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct CreateDirectory {
    /// The directory, relative to the world's root.
    pub directory_path: String,
    /// Create missing parents (and succeed if it already is a directory).
    #[serde(default)]
    pub parents: bool,
}

/// `copy_file`: copy a regular file.
#[derive(Debug, Clone, PartialEq, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct CopyFile {
    /// The file to copy.
    pub source_path: String,
    /// Where the copy goes.
    pub destination_path: String,
    /// Create missing parent directories of the destination first.
    #[serde(default)]
    pub create_dirs: bool,
}

/// `delete_file`: remove a file; refuses unless `confirm` is true.
#[derive(Debug, Clone, PartialEq, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct DeleteFile {
    /// The file to remove.
    pub path: String,
    /// Must be true, or the tool refuses.
    #[serde(default)]
    pub confirm: bool,
}

/// A read tool's argument: the path to look at.
#[derive(Debug, Clone, PartialEq, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ReadPath {
    /// The path, relative to the world's root.
    #[serde(alias = "path")]
    pub file_path: String,
}

/// One tool call, as an agent makes it.
#[derive(Debug, Clone, PartialEq, Deserialize)]
#[serde(tag = "tool", content = "args", rename_all = "snake_case")]
pub enum Action {
    /// Writes a file for real.
    WriteFile(WriteFile),
    /// Creates a directory for real.
    CreateDirectory(CreateDirectory),
    /// Copies a file for real.
    CopyFile(CopyFile),
    /// Deletes a file for real.
    DeleteFile(DeleteFile),
    /// Reports success and writes nothing.
    PhantomWrite(WriteFile),
    /// Reads a file (through the agent's runtime).
    ReadFile(ReadPath),
    /// Reports whether a path exists and what it is (through the agent's runtime).
    StatFile(ReadPath),
    /// Reports a file's SHA-256 (through the agent's runtime).
    HashFile(ReadPath),
}

impl Action {
    /// The tool's name.
    pub fn tool(&self) -> &'static str {
        match self {
            Action::WriteFile(_) => "write_file",
            Action::CreateDirectory(_) => "create_directory",
            Action::CopyFile(_) => "copy_file",
            Action::DeleteFile(_) => "delete_file",
            Action::PhantomWrite(_) => "phantom_write",
            Action::ReadFile(_) => "read_file",
            Action::StatFile(_) => "stat_file",
            Action::HashFile(_) => "hash_file",
        }
    }

    /// The resource the call is about, as the seed picks it: the destination of a copy,
    /// otherwise the one path argument. Its lineage is `did:<resource>`.
    pub fn resource(&self) -> &str {
        match self {
            Action::WriteFile(a) | Action::PhantomWrite(a) => &a.file_path,
            Action::CreateDirectory(a) => &a.directory_path,
            Action::CopyFile(a) => &a.destination_path,
            Action::DeleteFile(a) => &a.path,
            Action::ReadFile(a) | Action::StatFile(a) | Action::HashFile(a) => &a.file_path,
        }
    }

    /// The polarity of the intent, read from the operation: a delete aims at absence.
    pub fn polarity(&self) -> Polarity {
        match self {
            Action::DeleteFile(_) => Polarity::Absence,
            _ => Polarity::Presence,
        }
    }
}

/// What a tool reported.
#[derive(Debug, Clone, PartialEq, serde::Serialize)]
pub struct ToolRun {
    /// The tool's name.
    pub tool: &'static str,
    /// The resource, normalized (`./a//b` is `a/b`), or the raw argument if invalid.
    pub resource: String,
    /// Whether the tool said it succeeded.
    pub success: bool,
    /// The tool's error text when it failed.
    pub error: Option<String>,
    /// Set when the failure came from outside the agent (e.g. permission denied).
    pub blocker: Option<Blocker>,
    /// What a read tool returned (text, kind and size, or hash).
    pub output: Option<String>,
}

evident_format::message_error! {
    /// A path refused because it names nothing inside the world. A leaf: the message is all.
    pub struct BadPath;
}

/// Normalize a world-relative path: no absolute paths, no `..`, `.` and empty parts
/// removed. A path that would leave the world is refused, so no tool can touch
/// anything outside its temporary directory.
pub fn normalize(path: &str) -> Result<String, BadPath> {
    let mut parts = Vec::new();
    for c in Path::new(path).components() {
        match c {
            Component::Normal(p) => match p.to_str() {
                Some(s) => parts.push(s),
                None => return Err(BadPath(format!("path is not UTF-8: {path}"))),
            },
            Component::CurDir => {}
            Component::ParentDir | Component::RootDir | Component::Prefix(_) => {
                return Err(BadPath(format!("path escapes the world: {path}")));
            }
        }
    }
    if parts.is_empty() {
        return Err(BadPath(format!("path is empty: {path:?}")));
    }
    Ok(parts.join("/"))
}

/// A temporary directory, removed on drop, and the agent runtime acting in it.
pub struct World {
    dir: tempfile::TempDir,
    compromised: bool,
    /// What the runtime claims to have written, by normalized path.
    claimed: HashMap<String, Vec<u8>>,
}

impl World {
    /// Create a world whose files are `before` (path → content; parents are created).
    /// A compromised runtime answers reads from its own claims.
    pub fn new(before: &BTreeMap<String, String>, compromised: bool) -> io::Result<World> {
        let dir = tempfile::Builder::new()
            .prefix("evident-world-")
            .tempdir()?;
        for (path, content) in before {
            let rel = normalize(path).map_err(io::Error::other)?;
            let full = dir.path().join(rel);
            if let Some(parent) = full.parent() {
                std::fs::create_dir_all(parent)?;
            }
            std::fs::write(full, content)?;
        }
        Ok(World {
            dir,
            compromised,
            claimed: HashMap::new(),
        })
    }

    /// The world's root directory.
    pub fn root(&self) -> &Path {
        self.dir.path()
    }

    fn resolve(&self, path: &str) -> Result<(String, PathBuf), BadPath> {
        let rel = normalize(path)?;
        let full = self.dir.path().join(&rel);
        Ok((rel, full))
    }

    /// Run one tool call for real and return what the tool reported.
    pub fn run(&mut self, action: &Action) -> ToolRun {
        let tool = action.tool();
        let resource = normalize(action.resource()).unwrap_or_else(|_| action.resource().into());
        let outcome = self.perform(action);
        let (success, error, blocker, output) = match outcome {
            Ok(output) => (true, None, None, output),
            Err(Failure { text, blocker }) => (false, Some(text), blocker, None),
        };
        ToolRun {
            tool,
            resource,
            success,
            error,
            blocker,
            output,
        }
    }

    fn perform(&mut self, action: &Action) -> Result<Option<String>, Failure> {
        match action {
            Action::WriteFile(a) => {
                let (rel, full) = self.resolve(&a.file_path)?;
                if a.create_dirs
                    && let Some(parent) = full.parent()
                {
                    std::fs::create_dir_all(parent).map_err(|e| io_failure(&e, &rel))?;
                }
                std::fs::write(&full, &a.content).map_err(|e| io_failure(&e, &rel))?;
                self.claimed.insert(rel, a.content.as_bytes().to_vec());
                Ok(None)
            }
            Action::PhantomWrite(a) => {
                let (rel, _) = self.resolve(&a.file_path)?;
                self.claimed.insert(rel, a.content.as_bytes().to_vec());
                Ok(None)
            }
            Action::CreateDirectory(a) => {
                let (rel, full) = self.resolve(&a.directory_path)?;
                let r = if a.parents {
                    std::fs::create_dir_all(&full)
                } else {
                    std::fs::create_dir(&full)
                };
                r.map_err(|e| io_failure(&e, &rel))?;
                Ok(None)
            }
            Action::CopyFile(a) => {
                let (src_rel, src) = self.resolve(&a.source_path)?;
                let (dst_rel, dst) = self.resolve(&a.destination_path)?;
                match std::fs::symlink_metadata(&src) {
                    Ok(m) if m.is_file() => {}
                    Ok(_) => {
                        return Err(Failure::plain(format!("Source is not a file: {src_rel}")));
                    }
                    Err(e) if absent(&e) => {
                        return Err(Failure::plain(format!("Source not found: {src_rel}")));
                    }
                    Err(e) => return Err(io_failure(&e, &src_rel)),
                }
                if a.create_dirs
                    && let Some(parent) = dst.parent()
                {
                    std::fs::create_dir_all(parent).map_err(|e| io_failure(&e, &dst_rel))?;
                }
                std::fs::copy(&src, &dst).map_err(|e| io_failure(&e, &dst_rel))?;
                let copied = self.claimed.get(&src_rel).cloned();
                match copied {
                    Some(bytes) => self.claimed.insert(dst_rel, bytes),
                    None => self.claimed.remove(&dst_rel),
                };
                Ok(None)
            }
            Action::DeleteFile(a) => {
                let (rel, full) = self.resolve(&a.path)?;
                if !a.confirm {
                    return Err(Failure::plain(format!(
                        "Refused: delete of {rel} needs confirm = true"
                    )));
                }
                match std::fs::remove_file(&full) {
                    Ok(()) => {
                        self.claimed.remove(&rel);
                        Ok(None)
                    }
                    Err(e) if absent(&e) => Err(Failure::plain(format!("Path not found: {rel}"))),
                    Err(e) => Err(io_failure(&e, &rel)),
                }
            }
            Action::ReadFile(a) => {
                let (rel, full) = self.resolve(&a.file_path)?;
                let bytes = self.read_through_runtime(&rel, &full)?;
                Ok(Some(String::from_utf8_lossy(&bytes).into_owned()))
            }
            Action::HashFile(a) => {
                let (rel, full) = self.resolve(&a.file_path)?;
                let bytes = self.read_through_runtime(&rel, &full)?;
                Ok(Some(format!(
                    "sha256:{}",
                    hex::encode(Sha256::digest(&bytes))
                )))
            }
            Action::StatFile(a) => {
                let (rel, full) = self.resolve(&a.file_path)?;
                if self.compromised
                    && let Some(bytes) = self.claimed.get(&rel)
                {
                    return Ok(Some(format!("file, {} bytes", bytes.len())));
                }
                match std::fs::symlink_metadata(&full) {
                    Ok(m) if m.is_dir() => Ok(Some("directory".to_owned())),
                    Ok(m) => Ok(Some(format!("file, {} bytes", m.len()))),
                    Err(e) if absent(&e) => Err(Failure::plain(format!("Path not found: {rel}"))),
                    Err(e) => Err(io_failure(&e, &rel)),
                }
            }
        }
    }

    fn read_through_runtime(&self, rel: &str, full: &Path) -> Result<Vec<u8>, Failure> {
        if self.compromised
            && let Some(bytes) = self.claimed.get(rel)
        {
            return Ok(bytes.clone());
        }
        std::fs::read(full).map_err(|e| io_failure(&e, rel))
    }
}

/// A tool failure: its text and, when the cause is outside the agent, a blocker.
struct Failure {
    text: String,
    blocker: Option<Blocker>,
}

impl Failure {
    fn plain(text: String) -> Failure {
        Failure {
            text,
            blocker: None,
        }
    }
}

impl From<String> for Failure {
    fn from(text: String) -> Failure {
        Failure::plain(text)
    }
}

impl From<BadPath> for Failure {
    fn from(BadPath(text): BadPath) -> Failure {
        Failure::plain(text)
    }
}

/// "Nothing is there": not found, or a parent that is not a directory.
pub(crate) fn absent(e: &io::Error) -> bool {
    matches!(
        e.kind(),
        io::ErrorKind::NotFound | io::ErrorKind::NotADirectory
    )
}

fn io_failure(e: &io::Error, rel: &str) -> Failure {
    let blocker = match e.kind() {
        io::ErrorKind::PermissionDenied | io::ErrorKind::ReadOnlyFilesystem => {
            Some(Blocker::Permission)
        }
        _ => None,
    };
    let text = match e.kind() {
        io::ErrorKind::NotFound => format!("No such file or directory: {rel}"),
        io::ErrorKind::NotADirectory => format!("Not a directory: {rel}"),
        io::ErrorKind::AlreadyExists => format!("File exists: {rel}"),
        io::ErrorKind::IsADirectory => format!("Is a directory: {rel}"),
        _ => format!("{e}: {rel}"),
    };
    Failure { text, blocker }
}
