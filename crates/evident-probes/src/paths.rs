//! Paths under the contract's root. `..` and absolute paths are refused lexically (so the
//! reason is exact), then cap-std opens beneath the root (openat2 RESOLVE_BENEATH where
//! the kernel has it), which refuses symlinks that lead out.

use std::io;
use std::path::{Component, Path, PathBuf};

use cap_std::ambient_authority;
use cap_std::fs::Dir;

use crate::error::{Escape, ProbeError};

/// The path as a relative path with no `..`; `""` and `"."` mean the root itself.
pub fn relative(path: &str) -> Result<PathBuf, ProbeError> {
    let p = Path::new(path);
    let mut out = PathBuf::new();
    for c in p.components() {
        match c {
            Component::Normal(n) => out.push(n),
            Component::CurDir => {}
            Component::ParentDir => {
                return Err(ProbeError::PathEscape {
                    path: path.to_string(),
                    via: Escape::DotDot,
                });
            }
            Component::RootDir | Component::Prefix(_) => {
                return Err(ProbeError::PathEscape {
                    path: path.to_string(),
                    via: Escape::Absolute,
                });
            }
        }
    }
    if path.contains('\0') {
        return Err(ProbeError::invalid("a path contains a NUL byte"));
    }
    if out.as_os_str().is_empty() {
        out.push(".");
    }
    Ok(out)
}

/// The root as a capability: nothing reached through it can leave it.
pub fn root_dir(root: &Path) -> Result<Dir, ProbeError> {
    Dir::open_ambient_dir(root, ambient_authority()).map_err(|e| ProbeError::Io {
        path: root.display().to_string(),
        reason: format!("cannot open the contract root: {}", io_reason(&e)),
    })
}

/// How every file the agent can touch is opened for reading: `O_NONBLOCK`, then the
/// opened object checked to be a regular file. A look (`stat`, a directory listing)
/// and the open are two steps; a FIFO renamed in between would block a plain open for
/// ever (no writer), and the gate with it, past its time limit: the blocking thread
/// never ends and the runtime waits for it. Non-blocking has no effect on reading a
/// regular file.
const NONBLOCK: rustix::fs::OFlags = rustix::fs::OFlags::NONBLOCK;

fn still_regular<M>(meta: M, is_file: impl Fn(&M) -> bool) -> io::Result<M> {
    if is_file(&meta) {
        Ok(meta)
    } else {
        Err(io::Error::other(
            "it is no longer a regular file (replaced while it was read)",
        ))
    }
}

/// Opens `path` beneath `dir` as a regular file ([`NONBLOCK`]), following symlinks
/// (within the root, as cap-std does) only when `follow`; with its metadata, taken
/// from the opened file.
pub fn open_regular(
    dir: &Dir,
    path: &Path,
    follow: bool,
) -> io::Result<(cap_std::fs::File, cap_std::fs::Metadata)> {
    use cap_std::fs::OpenOptionsExt;
    let mut flags = NONBLOCK;
    if !follow {
        flags |= rustix::fs::OFlags::NOFOLLOW;
    }
    let mut opts = cap_std::fs::OpenOptions::new();
    opts.read(true)
        .custom_flags(i32::try_from(flags.bits()).unwrap_or(0));
    let f = dir.open_with(path, &opts)?;
    let meta = still_regular(f.metadata()?, cap_std::fs::Metadata::is_file)?;
    Ok((f, meta))
}

/// [`open_regular`] for a path outside the root (a report the gate had written to its
/// own directory, a file of the tree being copied), never following a final symlink.
pub fn open_regular_path(path: &Path) -> io::Result<(std::fs::File, std::fs::Metadata)> {
    use std::os::unix::fs::OpenOptionsExt;
    let flags = NONBLOCK | rustix::fs::OFlags::NOFOLLOW;
    let f = std::fs::File::options()
        .read(true)
        .custom_flags(i32::try_from(flags.bits()).unwrap_or(0))
        .open(path)?;
    let meta = still_regular(f.metadata()?, std::fs::Metadata::is_file)?;
    Ok((f, meta))
}

/// An I/O error's reason without the OS's "(os error N)" noise.
pub fn io_reason(e: &io::Error) -> String {
    let s = e.to_string();
    match s.find(" (os error") {
        Some(i) => s[..i].to_string(),
        None => s,
    }
}

/// Is this error cap-std refusing a path that leads outside the root?
pub fn is_escape(e: &io::Error) -> bool {
    // cap-primitives reports escapes as PermissionDenied "a path led outside of the
    // filesystem"; openat2's EXDEV surfaces the same way.
    e.to_string().contains("outside of the filesystem") || e.raw_os_error() == Some(18)
}

/// Map an error opening `path` beneath the root into the precise reason.
pub fn open_error(path: &str, e: &io::Error) -> ProbeError {
    if is_escape(e) {
        ProbeError::PathEscape {
            path: path.to_string(),
            via: Escape::Symlink,
        }
    } else {
        ProbeError::Io {
            path: path.to_string(),
            reason: io_reason(e),
        }
    }
}

/// An existing directory or file beneath the root, as an absolute canonical path for
/// tools that take a path (the git binary, SQLite, a command's cwd). Checked twice:
/// cap-std opens it beneath the root, and the canonical path must start with the
/// canonical root.
pub fn existing(root: &Path, path: &str, want_dir: bool) -> Result<PathBuf, ProbeError> {
    let rel = relative(path)?;
    let dir = root_dir(root)?;
    let meta = dir.metadata(&rel).map_err(|e| open_error(path, &e))?;
    if want_dir && !meta.is_dir() {
        return Err(ProbeError::Io {
            path: path.to_string(),
            reason: "not a directory".into(),
        });
    }
    if !want_dir && !meta.is_file() {
        return Err(ProbeError::Io {
            path: path.to_string(),
            reason: "not a regular file".into(),
        });
    }
    let canon_root = root.canonicalize().map_err(|e| ProbeError::Io {
        path: root.display().to_string(),
        reason: io_reason(&e),
    })?;
    let canon = canon_root
        .join(&rel)
        .canonicalize()
        .map_err(|e| open_error(path, &e))?;
    if !canon.starts_with(&canon_root) {
        return Err(ProbeError::PathEscape {
            path: path.to_string(),
            via: Escape::Symlink,
        });
    }
    Ok(canon)
}

/// Why a path is not in the strict form: a fixed message with its hint.
#[derive(Debug, Clone, Copy, PartialEq, Eq, thiserror::Error)]
#[error("{0}")]
pub struct NotStrict(pub &'static str);

/// The strict form of a path (postconditions, after the reference): relative and
/// `/`-separated; no empty, `.` or `..` component, no backslash, no drive prefix, no NUL,
/// no surrounding whitespace. Its components, or why it is refused (a hint included).
pub fn strict_components(path: &str) -> Result<Vec<&str>, NotStrict> {
    if path.is_empty() {
        return Err(NotStrict(
            "the path is empty (hint: name a file or directory under the root)",
        ));
    }
    if path.trim() != path {
        return Err(NotStrict(
            "the path has leading or trailing whitespace (hint: remove it)",
        ));
    }
    if path.contains('\0') {
        return Err(NotStrict("the path contains a NUL byte"));
    }
    if path.contains('\\') {
        return Err(NotStrict(
            "the path contains a backslash (hint: separate components with /)",
        ));
    }
    let b = path.as_bytes();
    if b.len() >= 2 && b[0].is_ascii_alphabetic() && b[1] == b':' {
        return Err(NotStrict(
            "the path starts with a drive prefix (hint: write it relative to the root)",
        ));
    }
    if path.starts_with('/') {
        return Err(NotStrict(
            "the path is absolute (hint: write it relative to the contract's directory)",
        ));
    }
    let parts: Vec<&str> = path.split('/').collect();
    if parts
        .iter()
        .any(|p| p.is_empty() || *p == "." || *p == "..")
    {
        return Err(NotStrict(
            "the path has an empty, `.` or `..` component (hint: write it as a/b/c)",
        ));
    }
    Ok(parts)
}

/// Why a path could not be walked without following a symlink.
#[derive(Debug)]
pub enum NoFollow {
    /// Nothing at the path (or at one of its parents).
    Missing,
    /// A symlink, a non-directory parent, or an entry replaced while it was read.
    Unsafe(String),
    /// Any other I/O failure.
    Io(String),
}

fn errno_reason(e: rustix::io::Errno) -> String {
    io_reason(&io::Error::from(e))
}

/// The parent directory of `parts` beneath `root`, opened one component at a time with
/// `O_NOFOLLOW | O_DIRECTORY` from the one before: no symlink is followed on the way
/// and no rename of a parent can move the walk elsewhere.
pub fn open_parent_nofollow(root: &Path, parts: &[&str]) -> Result<rustix::fd::OwnedFd, NoFollow> {
    use rustix::fs::{Mode, OFlags};
    let dir = root_dir(root).map_err(|e| NoFollow::Io(e.to_string()))?;
    let flags = OFlags::RDONLY | OFlags::DIRECTORY | OFlags::NOFOLLOW | OFlags::CLOEXEC;
    let mut fd = rustix::fs::openat(&dir, ".", flags, Mode::empty())
        .map_err(|e| NoFollow::Io(errno_reason(e)))?;
    for part in parts.iter().take(parts.len().saturating_sub(1)) {
        fd = match rustix::fs::openat(&fd, *part, flags, Mode::empty()) {
            Ok(next) => next,
            Err(rustix::io::Errno::NOENT) => return Err(NoFollow::Missing),
            Err(rustix::io::Errno::LOOP | rustix::io::Errno::NOTDIR) => {
                return Err(NoFollow::Unsafe(
                    "a parent on the path is a symlink or not a directory".into(),
                ));
            }
            Err(e) => return Err(NoFollow::Io(errno_reason(e))),
        };
    }
    Ok(fd)
}

/// What is at `name` in `dir`, without following a symlink.
pub fn lstat_at(
    dir: &rustix::fd::OwnedFd,
    name: &str,
) -> Result<(rustix::fs::FileType, rustix::fs::Stat), NoFollow> {
    match rustix::fs::statat(dir, name, rustix::fs::AtFlags::SYMLINK_NOFOLLOW) {
        Ok(st) => Ok((rustix::fs::FileType::from_raw_mode(st.st_mode), st)),
        Err(rustix::io::Errno::NOENT) => Err(NoFollow::Missing),
        Err(e) => Err(NoFollow::Io(errno_reason(e))),
    }
}

/// Opens `name` in `dir` (`O_NOFOLLOW`, and `O_NONBLOCK` so a FIFO swapped in cannot
/// stall the read), and checks the opened object is the one `seen` described: the same
/// device and inode, of the same type.
pub fn open_seen(
    dir: &rustix::fd::OwnedFd,
    name: &str,
    seen: &rustix::fs::Stat,
    directory: bool,
) -> Result<rustix::fd::OwnedFd, NoFollow> {
    use rustix::fs::{Mode, OFlags};
    let mut flags =
        OFlags::RDONLY | OFlags::NOFOLLOW | OFlags::NONBLOCK | OFlags::NOCTTY | OFlags::CLOEXEC;
    if directory {
        flags |= OFlags::DIRECTORY;
    }
    let fd = match rustix::fs::openat(dir, name, flags, Mode::empty()) {
        Ok(fd) => fd,
        Err(rustix::io::Errno::NOENT) => return Err(NoFollow::Missing),
        Err(rustix::io::Errno::LOOP | rustix::io::Errno::NOTDIR) => {
            return Err(NoFollow::Unsafe(
                "the entry was replaced while it was read".into(),
            ));
        }
        Err(e) => return Err(NoFollow::Io(errno_reason(e))),
    };
    let now = rustix::fs::fstat(&fd).map_err(|e| NoFollow::Io(errno_reason(e)))?;
    if now.st_dev != seen.st_dev || now.st_ino != seen.st_ino || now.st_mode != seen.st_mode {
        return Err(NoFollow::Unsafe(
            "the entry was replaced while it was read".into(),
        ));
    }
    Ok(fd)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn lexical_refusals() {
        assert!(matches!(
            relative("../x"),
            Err(ProbeError::PathEscape {
                via: Escape::DotDot,
                ..
            })
        ));
        assert!(matches!(
            relative("a/../../x"),
            Err(ProbeError::PathEscape {
                via: Escape::DotDot,
                ..
            })
        ));
        assert!(matches!(
            relative("/etc/passwd"),
            Err(ProbeError::PathEscape {
                via: Escape::Absolute,
                ..
            })
        ));
        assert_eq!(relative("./a/b").unwrap(), PathBuf::from("a/b"));
        assert_eq!(relative("").unwrap(), PathBuf::from("."));
    }

    /// An entry swapped between the look and the open (a file renamed over it, a
    /// symlink put in its place) is refused, not read.
    #[test]
    fn an_entry_replaced_after_the_look_is_refused() {
        let d = tempfile::tempdir().unwrap();
        let root = d.path();
        std::fs::write(root.join("a"), "ready\n").unwrap();
        let parent = open_parent_nofollow(root, &["a"]).unwrap();
        let (_, seen) = lstat_at(&parent, "a").unwrap();
        assert!(open_seen(&parent, "a", &seen, false).is_ok(), "honest twin");
        std::fs::write(root.join("b"), "ready\n").unwrap();
        std::fs::rename(root.join("b"), root.join("a")).unwrap();
        assert!(matches!(
            open_seen(&parent, "a", &seen, false),
            Err(NoFollow::Unsafe(_))
        ));
        let (_, seen) = lstat_at(&parent, "a").unwrap();
        std::fs::remove_file(root.join("a")).unwrap();
        std::fs::write(root.join("c"), "ready\n").unwrap();
        std::os::unix::fs::symlink("c", root.join("a")).unwrap();
        assert!(matches!(
            open_seen(&parent, "a", &seen, false),
            Err(NoFollow::Unsafe(_))
        ));
    }

    #[test]
    fn strict_refusals() {
        for bad in [
            "", " a", "a ", "/a", "a//b", "a/./b", "a/../b", "..", ".", "a/", "a\\b", "C:x", "a\0b",
        ] {
            assert!(strict_components(bad).is_err(), "{bad:?}");
        }
        assert_eq!(
            strict_components("out/r.txt").unwrap(),
            vec!["out", "r.txt"]
        );
        assert_eq!(strict_components(".hidden").unwrap(), vec![".hidden"]);
    }
}
