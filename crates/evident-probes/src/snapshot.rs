//! The snapshot a command check runs in: a fresh directory outside the tree holding
//! exactly the files the claim's tree hash covers (tracked files and untracked files git
//! does not ignore; build output left out), protected paths at their base content, the
//! owner's overlay on top, and the declared environment linked in read-only. Every file
//! is written by evident with the snapshot's own modification time, so no build tool
//! takes an artefact for fresh because the agent set a source file's time back.
//!
//! Snapshots live in a slot per root and command under the gate's temporary directory
//! (`$TMPDIR/evident-UID/KEY/`), locked while a run uses it and emptied for every run:
//! nothing a run's code writes there is read by the next run.

use std::path::{Path, PathBuf};
use std::time::Instant;

use sha2::{Digest, Sha256};

use crate::error::ProbeError;
use crate::git::{Copier, Witness};
use crate::spec::CommandSpec;
use crate::{paths, protect};

fn serr(reason: impl Into<String>) -> ProbeError {
    ProbeError::Protect {
        reason: reason.into(),
    }
}

/// A prepared snapshot; the slot stays locked until it is dropped.
pub struct Snapshot {
    _lock: std::fs::File,
    /// The snapshot of the root (where the command's `cwd` is resolved).
    pub root: PathBuf,
    /// The slot: the snapshot and its private directories (the sandbox's writable area).
    pub slot: PathBuf,
    /// The private temporary directory (`TMPDIR`), emptied for every run.
    pub tmp: PathBuf,
    /// Where the gate's own reports go (pytest's JUnit), outside the snapshot.
    pub reports: PathBuf,
    /// `sha256:…` of the claimed tree the snapshot was copied from (the same hash as
    /// the claim's `tree_hash`); `None` for a root that is not a git work tree.
    pub tree_hash: Option<String>,
    /// Files and symlinks copied.
    pub files: u64,
    /// Bytes copied.
    pub bytes: u64,
    /// Claimed paths left out as build output.
    pub left_out: Vec<String>,
    /// The base commit of the protected paths.
    pub base_commit: Option<String>,
    /// The files laid from the base.
    pub protected: Vec<protect::Laid>,
    /// Files the overlay laid over the snapshot.
    pub overlay_files: u64,
    /// The declared environment: path relative to the root, its real path, its digest.
    pub environment: Vec<(String, PathBuf, String)>,
    /// The real places the run must not write (the root and its repository's `.git`).
    pub watched: Vec<PathBuf>,
}

/// Nothing of a run is kept once it is read: the snapshot, its temporary directory
/// (cargo's build among it) and the reports are removed, so slots cost no disk between
/// runs (the slot itself and its lock file stay, for the next run of the check).
impl Drop for Snapshot {
    fn drop(&mut self) {
        for d in ["tree", "tmp", "reports"] {
            let p = self.slot.join(d);
            if std::fs::symlink_metadata(&p).is_ok_and(|m| m.is_dir()) {
                protect::make_writable(&p);
                let _ = std::fs::remove_dir_all(&p);
            }
        }
    }
}

/// What a snapshot is made from.
pub struct Request<'a> {
    pub root: &'a Path,
    pub spec: &'a CommandSpec,
    /// The protected paths with `@baseline` already resolved.
    pub protect: Option<&'a crate::spec::Protect>,
    /// The commit the claimed tree is listed against (the session's baseline), else HEAD.
    pub baseline: Option<&'a str>,
    pub path_var: Option<&'a str>,
    pub deadline: Instant,
}

/// Make the snapshot for one run.
pub async fn take(req: Request<'_>) -> Result<Snapshot, ProbeError> {
    let root = std::fs::canonicalize(req.root)
        .map_err(|e| serr(format!("the root: {}", paths::io_reason(&e))))?;
    let slot = slot_dir(&root, req.spec)?;
    let lock = lock_slot(&slot, req.deadline).await?;
    let snap_top = slot.join("tree");
    let tmp = slot.join("tmp");
    let reports = slot.join("reports");
    for d in [&snap_top, &tmp, &reports] {
        clear(d)?;
    }

    let deadline = req.deadline;
    let (tree_hash, files, bytes, left_out, prefix, top) =
        match open_repo(&root, req.path_var).await? {
            Some(w) => {
                let top = w.top().to_path_buf();
                let prefix = root
                    .strip_prefix(&top)
                    .map(Path::to_path_buf)
                    .unwrap_or_default();
                let commit = match req.baseline {
                    Some(b) => Some(w.resolve(b).await?.ok_or_else(|| {
                        serr(format!(
                            "the baseline {b:?} is not a commit of the repository"
                        ))
                    })?),
                    None => w.resolve("HEAD").await?,
                };
                let (changes, copier) = w
                    .snapshot(
                        commit.as_deref(),
                        Copier::new(snap_top.clone(), &prefix, deadline),
                    )
                    .await?;
                (
                    Some(changes.tree_hash),
                    copier.files,
                    copier.bytes,
                    copier.left_out,
                    prefix,
                    Some(top),
                )
            }
            None => {
                let (src, dst) = (root.clone(), snap_top.clone());
                let (files, bytes) =
                    tokio::task::spawn_blocking(move || protect::copy_plain(&src, &dst, deadline))
                        .await
                        .map_err(|e| serr(format!("copying the tree failed: {e}")))??;
                (None, files, bytes, Vec::new(), PathBuf::new(), None)
            }
        };
    let snap_root = snap_top.join(&prefix);
    std::fs::create_dir_all(&snap_root).map_err(|e| serr(format!("the snapshot root: {e}")))?;
    protect::check_ancestors(&slot)?;

    let mut base_commit = None;
    let mut protected = Vec::new();
    let mut overlay_files = 0;
    if let Some(p) = req.protect {
        let git = crate::command::resolve_program("git", &root, req.path_var)?;
        let (p, r, sr) = (p.clone(), root.clone(), snap_root.clone());
        let (commit, laid) =
            tokio::task::spawn_blocking(move || protect::apply(&r, &sr, &p, &git, deadline))
                .await
                .map_err(|e| serr(format!("protecting the snapshot failed: {e}")))??;
        base_commit = Some(commit);
        protected = laid;
        if let Some(o) = &req.protect.and_then(|p| p.overlay.clone()) {
            overlay_files = overlay(&root, &snap_root, o, req.path_var, deadline)?;
            protected = protect::restamp(&snap_root, protected);
        }
    }

    let mut environment = Vec::new();
    for rel in &req.spec.environment {
        environment.push(link_environment(&root, &snap_root, rel, deadline)?);
    }
    let watched = watched(&root, top.as_deref());
    Ok(Snapshot {
        _lock: lock,
        root: snap_root,
        slot,
        tmp,
        reports,
        tree_hash,
        files,
        bytes,
        left_out,
        base_commit,
        protected,
        overlay_files,
        environment,
        watched,
    })
}

/// The repository containing `root`, or `None` when no directory from `root` up holds
/// a `.git` (any other failure to open one is an error: fail closed).
async fn open_repo(root: &Path, path_var: Option<&str>) -> Result<Option<Witness>, ProbeError> {
    if !root.ancestors().any(|d| d.join(".git").exists()) {
        return Ok(None);
    }
    Witness::open(root, path_var).await.map(Some)
}

/// Where the base's test results for `spec` run in `root` are kept: beside the slots,
/// never inside one (a run writes only its slot: code under test rewrote the results
/// the next run trusted).
pub(crate) fn cache_file(
    root: &Path,
    spec: &CommandSpec,
    name: &str,
) -> Result<PathBuf, ProbeError> {
    let root = std::fs::canonicalize(root)
        .map_err(|e| serr(format!("the root: {}", paths::io_reason(&e))))?;
    let slot = slot_dir(&root, spec)?;
    let dir = slot
        .parent()
        .map(|p| p.join("results"))
        .ok_or_else(|| serr("the slot has no parent"))?;
    private_dir(&dir)?;
    Ok(dir.join(name))
}

/// `$TMPDIR/evident-UID/KEY`: one slot per (root, command), owned by this user alone.
fn slot_dir(root: &Path, spec: &CommandSpec) -> Result<PathBuf, ProbeError> {
    use std::os::unix::fs::{DirBuilderExt, MetadataExt, PermissionsExt};
    let uid = rustix::process::getuid().as_raw();
    let base = std::env::temp_dir().join(format!("evident-{uid}"));
    match std::fs::DirBuilder::new().mode(0o700).create(&base) {
        Ok(()) => {}
        Err(e) if e.kind() == std::io::ErrorKind::AlreadyExists => {}
        Err(e) => return Err(serr(format!("{}: {e}", base.display()))),
    }
    // Someone else's directory, or a symlink planted in a shared /tmp, is refused.
    let m =
        std::fs::symlink_metadata(&base).map_err(|e| serr(format!("{}: {e}", base.display())))?;
    if !m.is_dir() || m.uid() != uid || m.permissions().mode() & 0o077 != 0 {
        return Err(serr(format!(
            "{} is not a private directory of this user; remove it",
            base.display()
        )));
    }
    let mut h = Sha256::new();
    h.update(root.as_os_str().as_encoded_bytes());
    h.update([0]);
    h.update(serde_json::to_vec(&(&spec.argv, &spec.cwd, spec.shell)).unwrap_or_default());
    let key = hex::encode(&h.finalize()[..8]);
    let name = root
        .file_name()
        .map(|n| n.to_string_lossy().into_owned())
        .unwrap_or_default()
        .chars()
        .filter(|c| c.is_ascii_alphanumeric() || *c == '-' || *c == '_')
        .take(32)
        .collect::<String>();
    let slot = base.join(format!("{name}-{key}"));
    private_dir(&slot)?;
    Ok(slot)
}

/// Make `dir` (or find it) as a real directory of this user's, never through a
/// symlink (a run's code, or another process, could plant one to make the gate write
/// elsewhere).
pub(crate) fn private_dir(dir: &Path) -> Result<(), ProbeError> {
    use std::os::unix::fs::{DirBuilderExt, MetadataExt};
    match std::fs::DirBuilder::new().mode(0o700).create(dir) {
        Ok(()) => {}
        Err(e) if e.kind() == std::io::ErrorKind::AlreadyExists => {}
        Err(e) => return Err(serr(format!("{}: {e}", dir.display()))),
    }
    let m = std::fs::symlink_metadata(dir).map_err(|e| serr(format!("{}: {e}", dir.display())))?;
    if !m.is_dir() || m.uid() != rustix::process::getuid().as_raw() {
        return Err(serr(format!(
            "{} is not a directory of this user's (a symlink?); remove it",
            dir.display()
        )));
    }
    Ok(())
}

/// Lock the slot (another run of the same check waits for it, up to the deadline).
async fn lock_slot(slot: &Path, deadline: Instant) -> Result<std::fs::File, ProbeError> {
    use std::os::unix::fs::OpenOptionsExt;
    let path = slot.join("lock");
    let f = std::fs::OpenOptions::new()
        .create(true)
        .truncate(false)
        .write(true)
        .custom_flags(libc::O_NOFOLLOW)
        .open(&path)
        .map_err(|e| serr(format!("{}: {e}", path.display())))?;
    loop {
        match rustix::fs::flock(&f, rustix::fs::FlockOperation::NonBlockingLockExclusive) {
            Ok(()) => return Ok(f),
            Err(rustix::io::Errno::WOULDBLOCK) if Instant::now() < deadline => {
                tokio::time::sleep(std::time::Duration::from_millis(50)).await;
            }
            Err(e) => {
                return Err(serr(format!(
                    "the snapshot slot {} is busy with another run of this check: {e}",
                    slot.display()
                )));
            }
        }
    }
}

/// Remove `dir` with everything in it (a run may leave read-only directories) and make
/// it again, empty.
fn clear(dir: &Path) -> Result<(), ProbeError> {
    match std::fs::symlink_metadata(dir) {
        // A symlink (planted by an earlier run's code) is removed, never followed.
        Ok(m) if !m.is_dir() => {
            std::fs::remove_file(dir).map_err(|e| serr(format!("{}: {e}", dir.display())))?
        }
        Ok(_) => {
            protect::make_writable(dir);
            std::fs::remove_dir_all(dir).map_err(|e| serr(format!("{}: {e}", dir.display())))?;
        }
        Err(_) => {}
    }
    private_dir(dir)
}

/// The owner's overlay: a directory copied over the snapshot's root, or a unified diff
/// applied to it with `git apply` (no repository, no configuration).
fn overlay(
    root: &Path,
    snap_root: &Path,
    overlay: &str,
    path_var: Option<&str>,
    deadline: Instant,
) -> Result<u64, ProbeError> {
    let p = std::fs::canonicalize(overlay)
        .map_err(|e| serr(format!("overlay {overlay:?}: {}", paths::io_reason(&e))))?;
    if p.starts_with(root) {
        return Err(serr(format!(
            "overlay {overlay:?} lies inside the root, where the agent can edit it; keep it outside the tree"
        )));
    }
    if p.is_dir() {
        let (files, _) = protect::copy_over(&p, snap_root, deadline)?;
        return Ok(files);
    }
    let git = crate::command::resolve_program("git", root, path_var)?;
    let out = crate::git::std_command(&git, snap_root, None)
        .args(["apply", "--whitespace=nowarn", "--unsafe-paths", "--"])
        .arg(&p)
        .stdin(std::process::Stdio::null())
        .output()
        .map_err(|e| serr(format!("overlay: cannot run git apply: {e}")))?;
    if !out.status.success() {
        let msg = String::from_utf8_lossy(&out.stderr);
        return Err(serr(format!(
            "overlay {overlay:?} does not apply to the snapshot: {}",
            msg.lines().next().unwrap_or("").trim()
        )));
    }
    let text = std::fs::read_to_string(&p).unwrap_or_default();
    Ok(text.lines().filter(|l| l.starts_with("+++ ")).count() as u64)
}

/// Link a declared environment path into the snapshot (an absolute symlink to the real
/// one, read-only under the sandbox) and take its digest.
fn link_environment(
    root: &Path,
    snap_root: &Path,
    rel: &str,
    deadline: Instant,
) -> Result<(String, PathBuf, String), ProbeError> {
    let relp = paths::relative(rel)?;
    let real = root.join(&relp);
    let canon = std::fs::canonicalize(&real).map_err(|e| {
        serr(format!(
            "environment {rel:?}: {}; hint: create it first (e.g. `python -m venv .venv`, `npm ci`)",
            paths::io_reason(&e)
        ))
    })?;
    let digest = digest_tree(&canon, deadline)?;
    let link = snap_root.join(&relp);
    if let Some(parent) = link.parent() {
        std::fs::create_dir_all(parent).map_err(|e| serr(format!("environment {rel:?}: {e}")))?;
    }
    if std::fs::symlink_metadata(&link).is_ok() {
        // Tracked files where the environment goes: the environment wins, as at home.
        protect::make_writable(&link);
        let _ = std::fs::remove_dir_all(&link).or_else(|_| std::fs::remove_file(&link));
    }
    std::os::unix::fs::symlink(&canon, &link)
        .map_err(|e| serr(format!("environment {rel:?}: {e}")))?;
    Ok((rel.to_string(), canon, digest))
}

/// `sha256:…` over every entry beneath `dir`: its path, type, mode, size, modification
/// time and symlink target (metadata, not content: a dependency tree has thousands of
/// files, and any write changes a file's size or time).
pub fn digest_tree(dir: &Path, deadline: Instant) -> Result<String, ProbeError> {
    use std::os::unix::fs::MetadataExt;
    let mut entries: Vec<(PathBuf, String)> = Vec::new();
    let mut todo = vec![dir.to_path_buf()];
    while let Some(d) = todo.pop() {
        if Instant::now() > deadline {
            return Err(serr(
                "the time limit passed while taking the environment's digest",
            ));
        }
        let meta =
            std::fs::symlink_metadata(&d).map_err(|e| serr(format!("{}: {e}", d.display())))?;
        let rel = d.strip_prefix(dir).unwrap_or(&d).to_path_buf();
        let link = if meta.file_type().is_symlink() {
            std::fs::read_link(&d)
                .map(|t| t.display().to_string())
                .unwrap_or_default()
        } else {
            String::new()
        };
        entries.push((
            rel,
            format!(
                "{:o} {} {}.{} {link}",
                meta.mode(),
                meta.size(),
                meta.mtime(),
                meta.mtime_nsec()
            ),
        ));
        if meta.is_dir()
            && let Ok(rd) = std::fs::read_dir(&d)
        {
            todo.extend(rd.flatten().map(|e| e.path()));
        }
    }
    entries.sort();
    let mut h = Sha256::new();
    for (p, m) in &entries {
        h.update(p.as_os_str().as_encoded_bytes());
        h.update([0]);
        h.update(m.as_bytes());
        h.update([b'\n']);
    }
    Ok(format!("sha256:{}", hex::encode(h.finalize())))
}

/// The root, and the repository's `.git` when the root lies below the top.
fn watched(root: &Path, top: Option<&Path>) -> Vec<PathBuf> {
    let mut v = vec![root.to_path_buf()];
    if let Some(t) = top
        && t != root
    {
        let git = t.join(".git");
        if git.exists() {
            v.push(git);
        }
    }
    v
}
