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
}
