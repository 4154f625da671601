//! Files beneath a root for callers outside the gate (the sandbox world in
//! `evident-bench`): the file probe's read, plus a write and a remove, all through the
//! same safe-path layer (`paths`): `..` and absolute paths refused lexically, then
//! cap-std beneath the root, which refuses symlinks that lead out. One layer, so a path
//! the gate would refuse to read is a path the sandbox refuses to write.

use std::io::Write;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU64, Ordering};

use crate::error::{Escape, ProbeError};
use crate::spec::FileSpec;
use crate::{Object, file, paths};

/// The lexical check every probe path gets: relative, no `..`, no NUL (`""` and `"."`
/// are the root itself).
pub fn relative(path: &str) -> Result<PathBuf, ProbeError> {
    paths::relative(path)
}

/// The file probe, blocking: what `gate` observes for a `file` source.
pub fn observe_file(spec: &FileSpec, root: &Path) -> Result<Object, ProbeError> {
    file::observe_blocking(spec, root)
}

/// Temp names are unique within the process; `create_new` catches anything else.
static SEQ: AtomicU64 = AtomicU64::new(0);

/// Writes `bytes` to `path` beneath `root` atomically: missing parent directories are
/// created, the bytes go to a temp file in the same directory, are fsynced, then
/// renamed over the target. An existing target must be a regular file (a write replaces
/// files, never links or directories).
pub fn write_file(root: &Path, path: &str, bytes: &[u8]) -> Result<(), ProbeError> {
    let rel = target(path)?;
    let dir = paths::root_dir(root)?;
    let parent = rel.parent().filter(|p| !p.as_os_str().is_empty());
    if let Some(p) = parent {
        // Resolve first: an existing parent that is a symlink out is an escape, not
        // "already exists".
        match dir.metadata(p) {
            Ok(m) if m.is_dir() => {}
            Ok(_) => return Err(io(path, "a parent component is not a directory")),
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => {
                if let Ok(m) = dir.symlink_metadata(p)
                    && m.file_type().is_symlink()
                {
                    return Err(ProbeError::DanglingSymlink {
                        path: path.to_string(),
                    });
                }
                dir.create_dir_all(p)
                    .map_err(|e| paths::open_error(path, &e))?;
            }
            Err(e) => return Err(paths::open_error(path, &e)),
        }
    }
    check_replaceable(&dir, &rel, path)?;
    let name = rel.file_name().map(|n| n.to_string_lossy().into_owned());
    let name = name.unwrap_or_default();
    let mut opts = cap_std::fs::OpenOptions::new();
    opts.write(true).create_new(true);
    let (tmp, mut f) = {
        let mut tries = 0;
        loop {
            let n = SEQ.fetch_add(1, Ordering::Relaxed);
            let tmp_name = format!(".{name}.evident-{}-{n}.tmp", std::process::id());
            let tmp = match parent {
                Some(p) => p.join(tmp_name),
                None => PathBuf::from(tmp_name),
            };
            match dir.open_with(&tmp, &opts) {
                Ok(f) => break (tmp, f),
                Err(e) if e.kind() == std::io::ErrorKind::AlreadyExists && tries < 8 => {
                    tries += 1;
                }
                Err(e) => return Err(paths::open_error(path, &e)),
            }
        }
    };
    let written = f
        .write_all(bytes)
        .and_then(|()| f.sync_all())
        .and_then(|()| {
            drop(f);
            dir.rename(&tmp, &dir, &rel)
        });
    if let Err(e) = written {
        let _ = dir.remove_file(&tmp);
        return Err(paths::open_error(path, &e));
    }
    Ok(())
}

/// Removes the file at `path` beneath `root`; an absent file is not an error. Only a
/// regular file is removed.
pub fn remove_file(root: &Path, path: &str) -> Result<(), ProbeError> {
    let rel = target(path)?;
    let dir = paths::root_dir(root)?;
    match dir.symlink_metadata(&rel) {
        Ok(m) if m.is_file() => dir
            .remove_file(&rel)
            .map_err(|e| paths::open_error(path, &e)),
        Ok(_) => check_replaceable(&dir, &rel, path),
        // ENOTDIR: a parent is a file, so nothing is at this path.
        Err(e) if e.kind() == std::io::ErrorKind::NotFound || e.raw_os_error() == Some(20) => {
            Ok(())
        }
        Err(e) => Err(paths::open_error(path, &e)),
    }
}

/// A path that names a file, not the root.
fn target(path: &str) -> Result<PathBuf, ProbeError> {
    let rel = paths::relative(path)?;
    if rel == Path::new(".") {
        return Err(io(path, "names the root directory, not a file"));
    }
    Ok(rel)
}

/// An existing target must be a regular file; a symlink that leads out is an escape.
fn check_replaceable(dir: &cap_std::fs::Dir, rel: &Path, path: &str) -> Result<(), ProbeError> {
    match dir.symlink_metadata(rel) {
        Ok(m) if m.is_file() => Ok(()),
        Ok(m) if m.file_type().is_symlink() => match dir.metadata(rel) {
            Err(e) if paths::is_escape(&e) => Err(ProbeError::PathEscape {
                path: path.to_string(),
                via: Escape::Symlink,
            }),
            _ => Err(io(
                path,
                "is a symlink; a write replaces files, never links",
            )),
        },
        Ok(_) => Err(io(path, "is not a regular file")),
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(()),
        Err(e) => Err(paths::open_error(path, &e)),
    }
}

fn io(path: &str, reason: &str) -> ProbeError {
    ProbeError::Io {
        path: path.to_string(),
        reason: reason.to_string(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn spec(path: &str) -> FileSpec {
        FileSpec {
            path: path.into(),
            text: true,
            contains: vec![],
            pointers: Default::default(),
            max_bytes: None,
            postcondition: None,
        }
    }

    #[test]
    fn writes_atomically_and_reads_back_through_the_probe() {
        let t = tempfile::tempdir().unwrap();
        write_file(t.path(), "a/b/c.txt", b"one").unwrap();
        write_file(t.path(), "a/b/c.txt", b"two").unwrap();
        let o = observe_file(&spec("a/b/c.txt"), t.path()).unwrap();
        assert_eq!(o["text"], "two");
        // No temp file is left beside it.
        let names: Vec<_> = std::fs::read_dir(t.path().join("a/b"))
            .unwrap()
            .map(|e| e.unwrap().file_name())
            .collect();
        assert_eq!(names, vec![std::ffi::OsString::from("c.txt")]);
        remove_file(t.path(), "a/b/c.txt").unwrap();
        remove_file(t.path(), "a/b/c.txt").unwrap();
        remove_file(t.path(), "nowhere/x").unwrap();
        let o = observe_file(&spec("a/b/c.txt"), t.path()).unwrap();
        assert_eq!(o["exists"], false);
    }

    #[test]
    fn dotdot_absolute_and_root_are_refused() {
        let t = tempfile::tempdir().unwrap();
        let root = t.path().join("root");
        std::fs::create_dir(&root).unwrap();
        for (p, via) in [("../x", Escape::DotDot), ("/tmp/x", Escape::Absolute)] {
            match write_file(&root, p, b"x") {
                Err(ProbeError::PathEscape { via: v, .. }) => assert_eq!(v, via, "{p}"),
                other => panic!("{p}: {other:?}"),
            }
        }
        assert!(!t.path().join("x").exists());
        assert!(matches!(
            write_file(&root, ".", b"x"),
            Err(ProbeError::Io { .. })
        ));
    }

    #[test]
    fn symlinks_that_lead_out_are_refused_and_nothing_escapes() {
        let t = tempfile::tempdir().unwrap();
        let root = t.path().join("root");
        let outside = t.path().join("outside");
        std::fs::create_dir(&root).unwrap();
        std::fs::create_dir(&outside).unwrap();
        std::fs::write(outside.join("f"), b"keep").unwrap();
        std::os::unix::fs::symlink(&outside, root.join("link")).unwrap();
        std::os::unix::fs::symlink(outside.join("f"), root.join("file-link")).unwrap();
        std::os::unix::fs::symlink("../outside", root.join("rel-link")).unwrap();
        for p in [
            "link/escape.txt",
            "link/deeper/escape.txt",
            "rel-link/escape.txt",
        ] {
            match write_file(&root, p, b"x") {
                Err(ProbeError::PathEscape {
                    via: Escape::Symlink,
                    ..
                }) => {}
                other => panic!("{p}: {other:?}"),
            }
        }
        match write_file(&root, "file-link", b"x") {
            Err(ProbeError::PathEscape {
                via: Escape::Symlink,
                ..
            }) => {}
            other => panic!("file-link: {other:?}"),
        }
        assert!(remove_file(&root, "link/f").is_err());
        assert!(remove_file(&root, "file-link").is_err());
        let mut left: Vec<_> = std::fs::read_dir(&outside)
            .unwrap()
            .map(|e| e.unwrap().file_name())
            .collect();
        left.sort();
        assert_eq!(left, vec![std::ffi::OsString::from("f")]);
        assert_eq!(std::fs::read(outside.join("f")).unwrap(), b"keep");
        // The honest twin: a symlinked directory that stays inside the root is the
        // same directory (as the file probe reads it).
        std::fs::create_dir(root.join("real")).unwrap();
        std::os::unix::fs::symlink("real", root.join("inner")).unwrap();
        write_file(&root, "inner/ok.txt", b"fine").unwrap();
        assert_eq!(std::fs::read(root.join("real/ok.txt")).unwrap(), b"fine");
    }

    #[test]
    fn a_non_file_target_is_not_replaced() {
        let t = tempfile::tempdir().unwrap();
        std::fs::create_dir(t.path().join("d")).unwrap();
        assert!(matches!(
            write_file(t.path(), "d", b"x"),
            Err(ProbeError::Io { .. })
        ));
        std::fs::write(t.path().join("f"), b"x").unwrap();
        assert!(matches!(
            write_file(t.path(), "f/under", b"x"),
            Err(ProbeError::Io { .. })
        ));
        assert!(t.path().join("d").is_dir());
    }
}
