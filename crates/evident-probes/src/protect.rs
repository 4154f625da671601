//! Protected paths laid over a run's snapshot: every path matching the protected globs
//! holds its content at the base revision, and such paths absent at the base are
//! absent. Also the plain copy of a root that is not a git work tree, and the watch
//! on the real tree while an unsandboxed command runs.

use std::io::{BufRead, Read, Write};
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::Instant;

use globset::{GlobBuilder, GlobSet, GlobSetBuilder};

use crate::error::ProbeError;
use crate::spec::Protect;

/// Largest protected file read from the base revision.
const MAX_BLOB_BYTES: u64 = 256 * 1024 * 1024;

/// Deepest directory nesting copied; deeper is an error (a tree 1,000 levels deep
/// overflowed the stack of a recursive walk — found by the red team).
const MAX_DEPTH: usize = 128;
/// Most bytes a copy may hold (a sparse 100 GB file would fill the disk).
const MAX_COPY_BYTES: u64 = 8 * 1024 * 1024 * 1024;
/// Files larger than this are copied in chunks, with the deadline checked between.
const CHUNK: u64 = 8 * 1024 * 1024;

pub(crate) fn make_writable(dir: &Path) {
    use std::os::unix::fs::PermissionsExt;
    // Never through a symlink: only a real directory's own subtree is touched.
    if !std::fs::symlink_metadata(dir).is_ok_and(|m| m.is_dir()) {
        return;
    }
    // An explicit stack, not recursion: the tree is the agent's.
    let mut todo = vec![dir.to_path_buf()];
    while let Some(d) = todo.pop() {
        let Ok(rd) = std::fs::read_dir(&d) else {
            continue;
        };
        for e in rd.flatten() {
            if e.file_type().is_ok_and(|t| t.is_dir()) {
                let p = e.path();
                let _ = std::fs::set_permissions(&p, std::fs::Permissions::from_mode(0o700));
                todo.push(p);
            }
        }
    }
}

fn perr(reason: impl Into<String>) -> ProbeError {
    ProbeError::Protect {
        reason: reason.into(),
    }
}

/// The protected globs. `*` does not cross `/`; a pattern also covers everything under
/// a directory it matches.
pub struct Globs {
    set: GlobSet,
    /// Each pattern, and the length of its literal start (up to its first glob
    /// character; `None` when it has none).
    literal: Vec<(String, Option<usize>)>,
}

impl Globs {
    pub fn new(patterns: &[String]) -> Result<Globs, ProbeError> {
        if patterns.is_empty() {
            return Err(ProbeError::invalid("protect.paths is empty"));
        }
        let mut b = GlobSetBuilder::new();
        let mut literal = Vec::new();
        for p in patterns {
            let bad =
                |why: &str| ProbeError::invalid(format!("protect.paths: pattern {p:?} {why}"));
            if p.is_empty() {
                return Err(bad("is empty"));
            }
            if p.starts_with('/') {
                return Err(bad("is absolute (patterns are relative to the root)"));
            }
            if p.split('/').any(|c| c == ".." || c == ".") {
                return Err(bad("has a `.` or `..` component"));
            }
            let g = GlobBuilder::new(p.trim_end_matches('/'))
                .literal_separator(true)
                .backslash_escape(true)
                .build()
                .map_err(|e| bad(&format!("is not a glob: {e}")))?;
            b.add(g);
            literal.push((p.clone(), p.find(['*', '?', '[', '{', '\\'])));
        }
        let set = b
            .build()
            .map_err(|e| ProbeError::invalid(format!("protect.paths: {e}")))?;
        Ok(Globs { set, literal })
    }

    /// Could some pattern match a path strictly beneath directory `rel`?
    fn may_match_under(&self, rel: &str) -> bool {
        let dir = format!("{rel}/");
        self.literal.iter().any(|(pattern, lit_len)| {
            let Some(lit_len) = lit_len else {
                // No glob character: it names one path (and what lies beneath it).
                return pattern.starts_with(&dir);
            };
            // A glob's fixed directory part, which `rel/` must lie within; a glob whose
            // rest has no `/` and no `**` matches only directly in that directory.
            let lit = &pattern[..*lit_len];
            if lit.starts_with(&dir) {
                return true;
            }
            let fixed = lit.rfind('/').map_or("", |i| &lit[..=i]);
            let rest = &pattern[fixed.len()..];
            if rest.contains('/') || rest.contains("**") {
                dir.starts_with(fixed)
            } else {
                dir == fixed
            }
        })
    }

    /// Does `rel` (a `/`-separated path under the root) or one of its parent
    /// directories match?
    pub fn covers(&self, rel: &str) -> bool {
        let mut prefix = rel;
        loop {
            if self.set.is_match(prefix) {
                return true;
            }
            match prefix.rfind('/') {
                Some(i) => prefix = &prefix[..i],
                None => return false,
            }
        }
    }

    fn is_match(&self, rel: &str) -> bool {
        self.set.is_match(rel)
    }
}

/// Every git call of this module: the crate's hardened git (no system or user config,
/// no inherited `GIT_*`, every program- or file-naming key blanked) plus the
/// repository's own neutralising arguments.
struct Git<'a> {
    program: &'a Path,
    repo: &'a Path,
    extra: Vec<String>,
    /// Every git process is killed at this moment (a FIFO `.git/config` hung git, and
    /// the gate with it, past every limit; found by the red team).
    deadline: Instant,
}

/// Kills `child` at `deadline` unless the returned flag is set first.
fn watchdog(
    child: &std::process::Child,
    deadline: Instant,
) -> std::sync::Arc<std::sync::atomic::AtomicBool> {
    use std::sync::atomic::{AtomicBool, Ordering};
    let done = std::sync::Arc::new(AtomicBool::new(false));
    let flag = done.clone();
    let pid = i32::try_from(child.id())
        .ok()
        .and_then(rustix::process::Pid::from_raw);
    std::thread::spawn(move || {
        while !flag.load(Ordering::SeqCst) {
            if Instant::now() >= deadline {
                if let Some(pid) = pid {
                    let _ = rustix::process::kill_process(pid, rustix::process::Signal::KILL);
                }
                return;
            }
            std::thread::sleep(std::time::Duration::from_millis(20));
        }
    });
    done
}

impl Git<'_> {
    fn command(&self) -> Command {
        let mut c = crate::git::std_command(self.program, self.repo, None);
        c.args(&self.extra);
        c
    }

    /// Run git to completion and return stdout; a failure names the command.
    fn out(&self, args: &[&str]) -> Result<Vec<u8>, ProbeError> {
        let child = self
            .command()
            .args(args)
            .stdin(Stdio::null())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .map_err(|e| perr(format!("cannot run git: {e}")))?;
        let done = watchdog(&child, self.deadline);
        let out = child.wait_with_output();
        done.store(true, std::sync::atomic::Ordering::SeqCst);
        let out = out.map_err(|e| perr(format!("cannot run git: {e}")))?;
        if Instant::now() >= self.deadline {
            return Err(perr(format!(
                "git {} did not finish within the time limit",
                args.first().copied().unwrap_or("")
            )));
        }
        if !out.status.success() {
            let msg = String::from_utf8_lossy(&out.stderr);
            let first = msg.lines().find(|l| !l.trim().is_empty()).unwrap_or("");
            return Err(perr(format!(
                "git {} failed ({}): {}",
                args.first().copied().unwrap_or(""),
                out.status,
                first.trim()
            )));
        }
        Ok(out.stdout)
    }
}

/// A file of the base revision to put in the copy.
struct Entry {
    mode: String,
    oid: String,
    rel: String,
}

/// Lay the protected paths of `spec` over a snapshot: every file beneath `snap_top`
/// (the snapshot of the repository containing `root`) that the globs match is removed,
/// and the base revision's matching files are written in their place. Returns the base
/// commit and how many files came from it. Blocking; checks `deadline` as it goes.
pub fn apply(
    root: &Path,
    snap_root: &Path,
    spec: &Protect,
    git_program: &Path,
    deadline: Instant,
) -> Result<(String, Vec<Laid>), ProbeError> {
    crate::git::check_rev(&spec.base)?;
    // An abbreviated hash loses to a ref of the same name, which the agent can create
    // (`git update-ref refs/heads/1a2b3c4 …`; found by the red team): a base written in
    // hex must be a whole object id.
    let hexish = spec.base.len() >= 4 && spec.base.chars().all(|c| c.is_ascii_hexdigit());
    if hexish && spec.base.len() != 40 && spec.base.len() != 64 {
        return Err(perr(format!(
            "base {:?} is an abbreviated commit id, which a ref of the same name would shadow; write the full id",
            spec.base
        )));
    }
    let globs = Globs::new(&spec.paths)?;
    let mut g = Git {
        program: git_program,
        repo: root,
        extra: Vec::new(),
        deadline,
    };
    let config = g
        .out(crate::git::CONFIG_LIST_ARGS)
        .map_err(|_| perr("the root is not inside a git work tree"))?;
    g.extra = crate::git::neutralise(&config).map_err(|r| perr(r.to_string()))?;
    let prefix = String::from_utf8_lossy(&g.out(&["rev-parse", "--show-prefix"])?)
        .trim_end_matches('\n')
        .to_string();
    let wanted = format!("{}^{{commit}}", spec.base);
    let commit = g
        .out(&[
            "rev-parse",
            "--verify",
            "--quiet",
            "--end-of-options",
            &wanted,
        ])
        .map_err(|_| {
            perr(format!(
                "base {:?} is not a commit of the repository; hint: in CI, fetch it first (actions/checkout with `fetch-depth: 0`, or `git fetch origin BASE`)",
                spec.base
            ))
        })?;
    let base_commit = String::from_utf8_lossy(&commit).trim().to_string();

    // The protected files at base, relative to the root, from the commit and trees
    // hashed against their ids.
    let mut entries = Vec::new();
    for f in verified_files(&g, &base_commit)? {
        let path = String::from_utf8(f.path).map_err(|_| perr("a path at base is not UTF-8"))?;
        let Some(rel) = path.strip_prefix(prefix.as_str()) else {
            continue;
        };
        if globs.covers(rel) {
            entries.push(Entry {
                mode: format!("{:o}", f.mode),
                oid: f.oid,
                rel: rel.to_string(),
            });
        }
    }
    remove_matching(snap_root, &globs, deadline)?;
    write_base(&g, snap_root, &entries)?;
    refuse_shadows(snap_root, &entries)?;
    let laid = entries
        .into_iter()
        .filter(|e| e.mode == "100644" || e.mode == "100755" || e.mode == "120000")
        .map(|e| Laid {
            rel: e.rel,
            oid: e.oid,
            symlink: e.mode == "120000",
        })
        .collect();
    Ok((base_commit, laid))
}

/// A protected Python module `X.py` loses to a package `X/` or an extension `X.*.so`
/// beside it (Python's finder tries packages and extensions first): a `conftest/`
/// package of the agent's replaced the protected `conftest.py` and forged the reports.
fn refuse_shadows(snap_root: &Path, entries: &[Entry]) -> Result<(), ProbeError> {
    for e in entries.iter().filter(|e| e.mode != "120000") {
        let Some(stem) = e.rel.strip_suffix(".py") else {
            continue;
        };
        let (dir, name) = match stem.rsplit_once('/') {
            Some((d, n)) => (snap_root.join(d), n),
            None => (snap_root.to_path_buf(), stem),
        };
        let Ok(rd) = std::fs::read_dir(&dir) else {
            continue;
        };
        for other in rd.flatten() {
            let n = other.file_name().to_string_lossy().into_owned();
            let package = n == name;
            let extension = n
                .strip_prefix(name)
                .and_then(|r| r.strip_prefix('.'))
                .is_some_and(|ext| ext.ends_with("so") || ext.ends_with("pyd"));
            if package || extension {
                return Err(perr(format!(
                    "{} would be imported in place of the protected {} (a package or extension module of the same name); remove it",
                    stem.rsplit_once('/')
                        .map_or(n.clone(), |(d, _)| format!("{d}/{n}")),
                    e.rel
                )));
            }
        }
    }
    Ok(())
}

/// A file laid from the base, to check after the run that it is still the base's.
#[derive(Debug, Clone)]
pub struct Laid {
    /// Relative to the snapshot's root.
    pub rel: String,
    /// Its object id at the base (sha1 or sha256, by length).
    pub oid: String,
    symlink: bool,
}

/// The laid files as they are now, after the owner's overlay changed some of them:
/// the overlay's content is what the run must leave alone (files it removed are dropped).
pub fn restamp(snap_root: &Path, laid: Vec<Laid>) -> Vec<Laid> {
    laid.into_iter()
        .filter_map(|mut l| {
            l.oid = current_id(snap_root, &l)?;
            Some(l)
        })
        .collect()
}

/// A laid path's id in the snapshot now (`None`: gone, or of another type).
fn current_id(snap_root: &Path, l: &Laid) -> Option<String> {
    use std::os::unix::ffi::OsStrExt;
    let p = snap_root.join(&l.rel);
    let sha256 = l.oid.len() == 64;
    match std::fs::symlink_metadata(&p) {
        Ok(m) if l.symlink && m.file_type().is_symlink() => std::fs::read_link(&p)
            .ok()
            .map(|t| crate::git::blob_id(t.as_os_str().as_bytes(), sha256)),
        Ok(m) if !l.symlink && m.is_file() => {
            crate::git::file_blob_id(&p, m.len(), sha256, None).ok()
        }
        _ => None,
    }
}

/// The protected files the run changed in the snapshot: a build script or a test that
/// rewrote a protected test before it ran (a workspace member's `build.rs` did) makes
/// the run's result worthless, whatever it says.
pub fn tampered(snap_root: &Path, laid: &[Laid]) -> Vec<String> {
    laid.iter()
        .filter(|l| current_id(snap_root, l).as_deref() != Some(l.oid.as_str()))
        .map(|l| l.rel.clone())
        .collect()
}

/// Remove every entry beneath `root` the globs match (the agent's versions of the
/// protected paths). An explicit stack: the tree is the agent's.
fn remove_matching(root: &Path, globs: &Globs, deadline: Instant) -> Result<(), ProbeError> {
    let mut todo: Vec<(PathBuf, String)> = vec![(root.to_path_buf(), String::new())];
    while let Some((dir, rel)) = todo.pop() {
        if Instant::now() > deadline {
            return Err(perr("the time limit passed while protecting the snapshot"));
        }
        let rd = std::fs::read_dir(&dir).map_err(|e| perr(format!("{}: {e}", dir.display())))?;
        for e in rd.flatten() {
            let name = e.file_name().to_string_lossy().into_owned();
            let child = if rel.is_empty() {
                name
            } else {
                format!("{rel}/{name}")
            };
            let path = e.path();
            let is_dir = e.file_type().is_ok_and(|t| t.is_dir());
            if globs.is_match(&child) {
                let r = if is_dir {
                    make_writable(&path);
                    std::fs::remove_dir_all(&path)
                } else {
                    std::fs::remove_file(&path)
                };
                r.map_err(|err| perr(format!("{}: {err}", path.display())))?;
            } else if is_dir {
                todo.push((path, child));
            }
        }
    }
    Ok(())
}

/// Copy a directory that is not a git work tree into `dest`: every file but `.git`,
/// build output and the usual environment directories (`node_modules`, `.venv`,
/// `venv`). Symlinks that leave the tree are refused.
pub fn copy_plain(src: &Path, dest: &Path, deadline: Instant) -> Result<(u64, u64), ProbeError> {
    let late = || -> Result<(), ProbeError> {
        if Instant::now() > deadline {
            Err(perr("the time limit passed while copying the tree"))
        } else {
            Ok(())
        }
    };
    let mut walk = Walk {
        globs: None,
        omit: &[],
        late: &late,
        files: 0,
        bytes: 0,
    };
    walk.copy_dir(src, dest, "")?;
    Ok((walk.files, walk.bytes))
}

/// Copy every file of the directory `src` over `dest` (the owner's overlay), replacing
/// what is there; symlinks are copied as symlinks. Returns files and bytes.
pub fn copy_over(src: &Path, dest: &Path, deadline: Instant) -> Result<(u64, u64), ProbeError> {
    let (mut files, mut bytes) = (0u64, 0u64);
    let mut todo = vec![(src.to_path_buf(), dest.to_path_buf(), 0usize)];
    while let Some((from_dir, to_dir, depth)) = todo.pop() {
        if depth > MAX_DEPTH || Instant::now() > deadline {
            return Err(perr("the overlay is too deep or took past the time limit"));
        }
        let dir = real_dir(&to_dir, "")?;
        let rd = std::fs::read_dir(&from_dir)
            .map_err(|e| perr(format!("overlay {}: {e}", from_dir.display())))?;
        for e in rd.flatten() {
            if e.file_name() == ".git" {
                continue;
            }
            let (from, to) = (e.path(), dir.join(e.file_name()));
            let meta = std::fs::symlink_metadata(&from)
                .map_err(|err| perr(format!("overlay {}: {err}", from.display())))?;
            if meta.is_dir() {
                if std::fs::symlink_metadata(&to).is_ok_and(|m| !m.is_dir()) {
                    let _ = std::fs::remove_file(&to);
                }
                todo.push((from, to, depth + 1));
                continue;
            }
            if let Ok(m) = std::fs::symlink_metadata(&to) {
                let r = if m.is_dir() {
                    make_writable(&to);
                    std::fs::remove_dir_all(&to)
                } else {
                    std::fs::remove_file(&to)
                };
                r.map_err(|err| perr(format!("{}: {err}", to.display())))?;
            }
            if meta.file_type().is_symlink() {
                let target = std::fs::read_link(&from)
                    .map_err(|err| perr(format!("overlay {}: {err}", from.display())))?;
                std::os::unix::fs::symlink(target, &to)
                    .map_err(|err| perr(format!("{}: {err}", to.display())))?;
            } else if meta.is_file() {
                std::fs::copy(&from, &to)
                    .map_err(|err| perr(format!("overlay {}: {err}", from.display())))?;
                bytes += meta.len();
            }
            files += 1;
        }
    }
    Ok((files, bytes))
}

struct Walk<'a> {
    globs: Option<&'a Globs>,
    omit: &'a [String],
    late: &'a dyn Fn() -> Result<(), ProbeError>,
    files: u64,
    bytes: u64,
}

impl Walk<'_> {
    /// Copy `src` into the existing directory `dst`, skipping `.git`, protected paths
    /// (they come from the base) and omitted ignored paths. Symlinks are copied as
    /// symlinks, never followed; sockets, FIFOs and devices are left out.
    fn copy_dir(&mut self, src: &Path, dst: &Path, rel: &str) -> Result<(), ProbeError> {
        let io = |p: &Path, e: std::io::Error| perr(format!("copying {}: {e}", p.display()));
        if rel.split('/').count() > MAX_DEPTH {
            return Err(perr(format!(
                "{rel}: directories nested deeper than {MAX_DEPTH} levels; refusing to copy the tree"
            )));
        }
        let rd = std::fs::read_dir(src).map_err(|e| io(src, e))?;
        for e in rd {
            let e = e.map_err(|e| io(src, e))?;
            let name = e.file_name();
            let Some(name_s) = name.to_str() else {
                return Err(perr(format!(
                    "{}: a file name that is not UTF-8",
                    src.display()
                )));
            };
            if name_s == ".git" {
                continue;
            }
            if self.globs.is_none()
                && (matches!(name_s, "node_modules" | ".venv" | "venv" | "__pycache__")
                    || name_s.ends_with(".pyc")
                    || name_s.ends_with(".pyo")
                    || (name_s == "target" && src.join("Cargo.toml").is_file()))
            {
                continue;
            }
            let child_rel = if rel.is_empty() {
                name_s.to_string()
            } else {
                format!("{rel}/{name_s}")
            };
            if self.globs.is_some_and(|g| g.is_match(&child_rel))
                || self.omit.binary_search(&child_rel).is_ok()
            {
                continue;
            }
            let from = e.path();
            let to = dst.join(&name);
            let meta = std::fs::symlink_metadata(&from).map_err(|e| io(&from, e))?;
            let ft = meta.file_type();
            if ft.is_dir() {
                std::fs::create_dir(&to).map_err(|e| io(&to, e))?;
                self.copy_dir(&from, &to, &child_rel)?;
                std::fs::set_permissions(&to, meta.permissions()).map_err(|e| io(&to, e))?;
            } else if ft.is_symlink() {
                // A symlink to a directory would bring in files that protected
                // patterns beneath it should have filtered (`tests -> fake_tests`).
                if std::fs::metadata(&from).is_ok_and(|m| m.is_dir())
                    && self.globs.is_some_and(|g| g.may_match_under(&child_rel))
                {
                    continue;
                }
                let target = std::fs::read_link(&from).map_err(|e| io(&from, e))?;
                if self.globs.is_none()
                    && !crate::git::symlink_stays_inside(child_rel.as_bytes(), {
                        use std::os::unix::ffi::OsStrExt;
                        target.as_os_str().as_bytes()
                    })
                {
                    return Err(perr(format!(
                        "{child_rel} is a symlink out of the tree (to {}); the snapshot does not follow it",
                        target.display()
                    )));
                }
                std::os::unix::fs::symlink(&target, &to).map_err(|e| io(&to, e))?;
                self.files += 1;
            } else if ft.is_file() {
                self.bytes = self.bytes.saturating_add(meta.len());
                if self.bytes > MAX_COPY_BYTES {
                    return Err(perr(format!(
                        "the tree holds more than {MAX_COPY_BYTES} bytes to copy (at {child_rel}); omit ignored build output (ignored = \"omit\")"
                    )));
                }
                // Opened without blocking and checked again (paths::open_regular): the
                // agent's process may rename a FIFO over it after the look.
                let (src, now) =
                    crate::paths::open_regular_path(&from).map_err(|e| io(&from, e))?;
                self.copy_in_chunks(src, &from, &to, now.len() > CHUNK)?;
                std::fs::set_permissions(&to, now.permissions()).map_err(|e| io(&to, e))?;
                self.files += 1;
                if self.files.is_multiple_of(256) {
                    (self.late)()?;
                }
            }
        }
        Ok(())
    }
}

impl Walk<'_> {
    /// A file copied from `src`; a large one (`chunked`) a chunk at a time with the
    /// deadline checked between chunks, so one huge (or sparse) file cannot hold the
    /// gate past its limit. A small one by `io::copy` (`copy_file_range`, which a
    /// copy-on-write file system can serve as a reflink).
    fn copy_in_chunks(
        &mut self,
        mut src: std::fs::File,
        from: &Path,
        to: &Path,
        chunked: bool,
    ) -> Result<(), ProbeError> {
        let io = |p: &Path, e: std::io::Error| perr(format!("copying {}: {e}", p.display()));
        let mut dst = std::fs::File::create(to).map_err(|e| io(to, e))?;
        if !chunked {
            std::io::copy(&mut src, &mut dst).map_err(|e| io(from, e))?;
            return Ok(());
        }
        let mut buf = vec![0u8; CHUNK as usize];
        loop {
            let n = src.read(&mut buf).map_err(|e| io(from, e))?;
            if n == 0 {
                break;
            }
            dst.write_all(&buf[..n]).map_err(|e| io(to, e))?;
            (self.late)()?;
        }
        Ok(())
    }
}

/// Runner configuration a test runner looks for in every parent directory of where it
/// runs: pytest's ini files and conftest.py, cargo's config and toolchain files.
const RUNNER_CONFIG: &[&str] = &[
    "pytest.ini",
    "pytest.toml",
    ".pytest.toml",
    "pyproject.toml",
    "tox.ini",
    "setup.cfg",
    "conftest.py",
    ".cargo/config.toml",
    ".cargo/config",
    "rust-toolchain.toml",
    "rust-toolchain",
];

/// The scratch copy lives in the gate's temporary directory, whose parents (`/tmp`,
/// `/`) anyone may have written to: a `/tmp/pytest.ini` + `/tmp/conftest.py`, or a
/// `/tmp/.cargo/config.toml` runner, would be picked up by the protected run (found by
/// the red team). Refuse a run whose scratch copy has runner configuration above it.
pub(crate) fn check_ancestors(scratch: &Path) -> Result<(), ProbeError> {
    for dir in scratch.ancestors().skip(1) {
        for name in RUNNER_CONFIG {
            let p = dir.join(name);
            if std::fs::symlink_metadata(&p).is_ok() {
                return Err(perr(format!(
                    "{} lies above the scratch copy, where pytest or cargo would read it: remove it or set TMPDIR to a directory only the gate can write",
                    p.display()
                )));
            }
        }
    }
    Ok(())
}

/// Make `dir` (relative to `root`) a real directory, replacing whatever the agent's
/// tree put there (a file, or a symlink that could lead out of the copy).
fn real_dir(root: &Path, rel_dir: &str) -> Result<PathBuf, ProbeError> {
    let mut p = root.to_path_buf();
    for c in rel_dir.split('/').filter(|c| !c.is_empty()) {
        p.push(c);
        match std::fs::symlink_metadata(&p) {
            Ok(m) if m.file_type().is_dir() => {}
            Ok(_) => {
                std::fs::remove_file(&p).map_err(|e| perr(format!("{}: {e}", p.display())))?;
                std::fs::create_dir(&p).map_err(|e| perr(format!("{}: {e}", p.display())))?;
            }
            Err(_) => {
                std::fs::create_dir(&p).map_err(|e| perr(format!("{}: {e}", p.display())))?;
            }
        }
    }
    Ok(p)
}

/// Entries a [`Fingerprint`] holds at most; a larger tree is refused (it cannot be
/// watched).
const MAX_WATCHED: usize = 2_000_000;

/// The real tree as it was before a protected run: every entry under the watched
/// paths (`.git` included, symlinks not followed) with its type, size, inode and
/// modification and change times. A copy keeps the run's relative writes away from
/// the real tree, but not a write by absolute path (the red team's test appended to
/// the real `.git/config` and wrote a file beside the tests): comparing the two
/// fingerprints turns such a write into an error instead of a verdict.
#[derive(Debug, PartialEq, Eq)]
pub struct Fingerprint(std::collections::BTreeMap<PathBuf, Stamp>);

/// One entry's mode, size, inode, modification time (s, ns) and change time (s, ns).
type Stamp = (u32, u64, u64, i64, i64, i64, i64);

/// Take a [`Fingerprint`] of `paths`. Blocking; checks `deadline` as it goes.
pub fn fingerprint(paths: &[PathBuf], deadline: Instant) -> Result<Fingerprint, ProbeError> {
    use std::os::unix::fs::MetadataExt;
    let mut map = std::collections::BTreeMap::new();
    let mut stack: Vec<PathBuf> = paths.to_vec();
    while let Some(p) = stack.pop() {
        let m = match std::fs::symlink_metadata(&p) {
            Ok(m) => m,
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => continue,
            Err(e) => return Err(perr(format!("watching {}: {e}", p.display()))),
        };
        map.insert(
            p.clone(),
            (
                m.mode(),
                m.size(),
                m.ino(),
                m.mtime(),
                m.mtime_nsec(),
                m.ctime(),
                m.ctime_nsec(),
            ),
        );
        if map.len() > MAX_WATCHED {
            return Err(perr(format!(
                "the tree holds more than {MAX_WATCHED} entries, too many to watch the protected run's writes"
            )));
        }
        if map.len().is_multiple_of(4096) && Instant::now() > deadline {
            return Err(perr("the time limit passed while watching the tree"));
        }
        if m.is_dir() {
            let rd = std::fs::read_dir(&p)
                .map_err(|e| perr(format!("watching {}: {e}", p.display())))?;
            for e in rd {
                let e = e.map_err(|e| perr(format!("watching {}: {e}", p.display())))?;
                stack.push(e.path());
            }
        }
    }
    Ok(Fingerprint(map))
}

impl Fingerprint {
    /// What differs from `before`: up to five paths, each `added`, `removed` or
    /// `written`, relative to `root` where they lie under it.
    pub fn changes_since(&self, before: &Fingerprint, root: &Path) -> Vec<String> {
        let show = |p: &Path| {
            p.strip_prefix(root)
                .ok()
                .filter(|r| !r.as_os_str().is_empty())
                .unwrap_or(p)
                .display()
                .to_string()
        };
        let mut out = Vec::new();
        for (p, v) in &self.0 {
            match before.0.get(p) {
                None => out.push(format!("{} (added)", show(p))),
                Some(w) if w != v => out.push(format!("{} (written)", show(p))),
                Some(_) => {}
            }
        }
        for p in before.0.keys().filter(|p| !self.0.contains_key(*p)) {
            out.push(format!("{} (removed)", show(p)));
        }
        // A directory's times change with its entries: name the entries first.
        out.sort_by_key(|s| (s.ends_with("(written)"), s.clone()));
        out.truncate(5);
        out
    }
}

/// Every file of `commit`'s tree (what `git ls-tree -r` lists), read with `git
/// cat-file --batch` and every object hashed against its id. git checks a commit it
/// parses but not a tree it reads, so a tree object file the agent rewrote made `git
/// ls-tree` list the agent's own `tests/test_zip.py` "at base", its blob genuine
/// (found by the red team).
fn verified_files(g: &Git<'_>, commit: &str) -> Result<Vec<crate::git::TreeFile>, ProbeError> {
    let sha256 = commit.len() == 64;
    let c = read_verified(g, &[commit.to_string()], "commit")?.remove(0);
    let tree = c
        .split(|&b| b == b'\n')
        .next()
        .and_then(|l| std::str::from_utf8(l).ok())
        .and_then(|l| l.strip_prefix("tree "))
        .filter(|t| t.len() == commit.len())
        .ok_or_else(|| perr(format!("base commit {commit} names no tree")))?
        .to_string();
    let mut files = Vec::new();
    let mut level: Vec<(String, Vec<u8>)> = vec![(tree, Vec::new())];
    while !level.is_empty() {
        let ids: Vec<String> = level.iter().map(|(o, _)| o.clone()).collect();
        let trees = read_verified(g, &ids, "tree")?;
        let mut next = Vec::new();
        for ((_, prefix), content) in level.iter().zip(trees) {
            for e in crate::git::tree_entries(&content, sha256, prefix)? {
                if e.mode == 0o40000 {
                    next.push((e.oid, e.path));
                } else {
                    files.push(e);
                }
            }
        }
        level = next;
    }
    Ok(files)
}

/// Objects of one type, in order, each hashed against its id; a missing object or one
/// of another type is an error. Together at most [`MAX_BLOB_BYTES`].
fn read_verified(g: &Git<'_>, ids: &[String], kind: &str) -> Result<Vec<Vec<u8>>, ProbeError> {
    let mut v = Vec::with_capacity(ids.len());
    cat_verified(
        g,
        ids,
        kind,
        MAX_BLOB_BYTES,
        |i| format!("{kind} {} at base", ids[i]),
        |_, content| {
            v.push(content);
            Ok(())
        },
    )?;
    Ok(v)
}

/// The one reader of base objects: `ids` through one `git cat-file --batch` (killed at
/// the deadline; ids written from another thread so a full stdout pipe cannot
/// deadlock), each checked to be a `kind` object that hashes to its id — git checks
/// neither when it reads, so an object file the agent replaced would put its content
/// "at base" (found by the red team) — and handed to `each` in order. An object over
/// [`MAX_BLOB_BYTES`], or all of them over `total_limit`, is an error; `name(i)` says
/// what the i-th object is in errors.
fn cat_verified(
    g: &Git<'_>,
    ids: &[String],
    kind: &str,
    total_limit: u64,
    name: impl Fn(usize) -> String,
    mut each: impl FnMut(usize, Vec<u8>) -> Result<(), ProbeError>,
) -> Result<(), ProbeError> {
    if ids.is_empty() {
        return Ok(());
    }
    let mut child = g
        .command()
        .args(["cat-file", "--batch"])
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .spawn()
        .map_err(|e| perr(format!("cannot run git cat-file: {e}")))?;
    let done = watchdog(&child, g.deadline);
    let mut stdin = child
        .stdin
        .take()
        .ok_or_else(|| perr("git cat-file: no stdin"))?;
    let list: String = ids.iter().map(|id| format!("{id}\n")).collect();
    let writer = std::thread::spawn(move || {
        let _ = stdin.write_all(list.as_bytes());
    });
    let mut out = std::io::BufReader::new(
        child
            .stdout
            .take()
            .ok_or_else(|| perr("git cat-file: no stdout"))?,
    );
    let result = (|| {
        let mut total = 0u64;
        for (i, id) in ids.iter().enumerate() {
            let mut header = Vec::new();
            (&mut out)
                .take(512)
                .read_until(b'\n', &mut header)
                .map_err(|err| perr(format!("git cat-file: {err}")))?;
            if header.last() != Some(&b'\n') {
                return Err(perr("git cat-file: malformed header"));
            }
            let header = String::from_utf8_lossy(&header).trim_end().to_string();
            let mut f = header.split(' ');
            let (Some(got), Some(t), Some(size)) = (f.next(), f.next(), f.next()) else {
                return Err(perr(format!("{}: {header}", name(i))));
            };
            let size: u64 = size
                .parse()
                .map_err(|_| perr(format!("git cat-file: {header}")))?;
            if got != id || t != kind {
                return Err(perr(format!(
                    "{}: object {id} is not a {kind} ({header})",
                    name(i)
                )));
            }
            total = total.saturating_add(size);
            if size > MAX_BLOB_BYTES || total > total_limit {
                return Err(ProbeError::Oversize {
                    what: name(i),
                    limit: MAX_BLOB_BYTES.min(total_limit),
                });
            }
            let mut content = vec![0u8; usize::try_from(size).unwrap_or(usize::MAX)];
            out.read_exact(&mut content)
                .map_err(|err| perr(format!("git cat-file: {err}")))?;
            let mut nl = [0u8; 1];
            out.read_exact(&mut nl)
                .map_err(|err| perr(format!("git cat-file: {err}")))?;
            if crate::git::object_id(kind, &content, id.len() == 64) != *id {
                return Err(perr(format!(
                    "{}: object {id} does not hash to its id (the repository's object store was altered)",
                    name(i)
                )));
            }
            each(i, content)?;
        }
        Ok(())
    })();
    drop(out);
    let _ = child.kill();
    let _ = child.wait();
    done.store(true, std::sync::atomic::Ordering::SeqCst);
    let _ = writer.join();
    result
}

/// Write the protected files of the base revision into the copy, reading the blobs
/// with one `git cat-file --batch` ([`cat_verified`]).
fn write_base(g: &Git<'_>, copy_root: &Path, entries: &[Entry]) -> Result<u64, ProbeError> {
    use std::os::unix::fs::PermissionsExt;
    let blobs: Vec<&Entry> = entries
        .iter()
        .filter(|e| e.mode == "100644" || e.mode == "100755" || e.mode == "120000")
        .collect();
    let ids: Vec<String> = blobs.iter().map(|e| e.oid.clone()).collect();
    cat_verified(
        g,
        &ids,
        "blob",
        u64::MAX,
        |i| format!("protected file {:?} at base", blobs[i].rel),
        |i, content| {
            let e = blobs[i];
            let (parent, name) = match e.rel.rsplit_once('/') {
                Some((p, n)) => (p, n),
                None => ("", e.rel.as_str()),
            };
            let dir = real_dir(copy_root, parent)?;
            let to = dir.join(name);
            if let Ok(m) = std::fs::symlink_metadata(&to) {
                // Only a directory can be here (the copy skipped protected paths):
                // the agent's tree had a directory where the base has a file.
                let r = if m.file_type().is_dir() {
                    make_writable(&to);
                    std::fs::remove_dir_all(&to)
                } else {
                    std::fs::remove_file(&to)
                };
                r.map_err(|err| perr(format!("{}: {err}", to.display())))?;
            }
            if e.mode == "120000" {
                let target = String::from_utf8(content)
                    .map_err(|_| perr(format!("symlink {:?} at base is not UTF-8", e.rel)))?;
                std::os::unix::fs::symlink(target, &to)
                    .map_err(|err| perr(format!("{}: {err}", to.display())))?;
            } else {
                let mut f = std::fs::File::create_new(&to)
                    .map_err(|err| perr(format!("{}: {err}", to.display())))?;
                f.write_all(&content)
                    .map_err(|err| perr(format!("{}: {err}", to.display())))?;
                let mode = if e.mode == "100755" { 0o755 } else { 0o644 };
                f.set_permissions(std::fs::Permissions::from_mode(mode))
                    .map_err(|err| perr(format!("{}: {err}", to.display())))?;
            }
            Ok(())
        },
    )?;
    Ok(blobs.len() as u64)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn globs_cover_directories_and_stay_in_components() {
        let g = Globs::new(&[
            "tests/**".into(),
            "conftest.py".into(),
            "*.ini".into(),
            "docs".into(),
        ])
        .unwrap();
        assert!(g.covers("tests/test_a.py"));
        assert!(g.covers("tests/sub/x.py"));
        assert!(!g.covers("tests"));
        assert!(g.covers("conftest.py"));
        assert!(!g.covers("sub/conftest.py"));
        assert!(g.covers("pytest.ini"));
        assert!(!g.covers("sub/pytest.ini"), "* does not cross /");
        assert!(g.covers("docs/a/b.md"));
        for bad in ["", "/abs", "../x", "a/./b"] {
            assert!(Globs::new(&[bad.into()]).is_err(), "{bad}");
        }
        assert!(Globs::new(&[]).is_err());
        assert!(g.may_match_under("tests"));
        assert!(!g.may_match_under("src"));
        assert!(
            !g.may_match_under("docs"),
            "docs itself is matched, not beneath"
        );
        let any = Globs::new(&["**/conftest.py".into()]).unwrap();
        assert!(any.may_match_under("src"));
        let nested = Globs::new(&["pkg/tests/*.py".into()]).unwrap();
        assert!(nested.may_match_under("pkg"));
        assert!(nested.may_match_under("pkg/tests"));
        assert!(!nested.may_match_under("lib"));
    }
}

#[cfg(test)]
mod above {
    use super::*;

    /// `/tmp/pytest.ini` + `/tmp/conftest.py` above the scratch copy were read by the
    /// protected run (found by the red team): refused; a clean parent is fine.
    #[test]
    fn runner_config_above_the_scratch_copy_is_refused() {
        let outer = tempfile::tempdir().unwrap();
        let scratch = outer.path().join("evident-protect-x");
        std::fs::create_dir(&scratch).unwrap();
        assert!(
            check_ancestors(&scratch).is_ok() || std::path::Path::new("/tmp/pytest.ini").exists()
        );
        std::fs::write(outer.path().join("conftest.py"), "x = 1\n").unwrap();
        let e = check_ancestors(&scratch).unwrap_err().to_string();
        assert!(
            e.contains("conftest.py") && e.contains("above the scratch copy"),
            "{e}"
        );
        std::fs::remove_file(outer.path().join("conftest.py")).unwrap();
        std::fs::create_dir(outer.path().join(".cargo")).unwrap();
        std::fs::write(outer.path().join(".cargo/config.toml"), "").unwrap();
        assert!(check_ancestors(&scratch).is_err());
    }
}
