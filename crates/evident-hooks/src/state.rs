//! The hook's state, outside the working tree: one file per session (its baseline,
//! its consecutive refusals, its last decision) and one lock per repository.
//!
//! Layout under the state directory (`--state-dir`, else evident's state directory,
//! [`evident_ledger::place::state_dir`]: `$XDG_STATE_HOME/evident`, else
//! `~/.local/state/evident`, on macOS `~/Library/Application Support/evident`):
//! `sessions/<id>.json` and `locks/<repo>.lock`, where `<id>` is the session id with
//! every character outside `[A-Za-z0-9_-]` dropped (at most 48 kept) followed by a hash
//! of the raw id and the repository, so two sessions (or one session in two
//! repositories) never share a file and no id can name a path.

use crate::error::{HookError, io, io_at, json};
use std::io::Write;
use std::path::{Path, PathBuf};

use serde::{Deserialize, Serialize};
use sha2::{Digest, Sha256};

/// What a session has recorded.
#[derive(Debug, Clone, Default, Serialize, Deserialize, PartialEq)]
pub struct Session {
    /// The agent's session id, as the event gave it.
    pub session_id: String,
    /// The repository's top directory the session works in.
    pub repo: String,
    /// The commit the session started from (first write wins).
    pub baseline: String,
    /// How the baseline was chosen (`session-start`, `merge-base with …`, `--base`).
    pub baseline_from: String,
    /// When the baseline was recorded (RFC 3339).
    pub started_at: String,
    /// Consecutive refused stops.
    #[serde(default)]
    pub refusals: u32,
    /// The last decision, reused while neither the tree nor the contract changed.
    #[serde(default)]
    pub last: Option<LastDecision>,
}

/// The last decision, reused while the tree and the contract are unchanged.
#[derive(Debug, Clone, Default, Serialize, Deserialize, PartialEq)]
pub struct LastDecision {
    /// The tree's hash when it was decided (`Changes::tree_hash`).
    pub tree_hash: String,
    /// The tree's hash after the gate ran (its own run may leave files such as
    /// `__pycache__/` behind): a next stop on that tree reuses the decision too.
    #[serde(default)]
    pub after_tree_hash: Option<String>,
    /// The contract's sha256 then: a changed contract is decided again.
    pub contract_hash: String,
    /// `verified`, `unverified`, `refuted`.
    pub state: String,
    /// The refusal reason (or the allow message) given then.
    pub text: String,
    /// The ledger record then (`#N in LOCATION (hash)`), when there was one.
    pub record: Option<String>,
    /// The digest of what the command checks read besides the tree (their declared
    /// environments) then; `None`: the decision may not be reused.
    #[serde(default)]
    pub environment: Option<String>,
}

/// The session's file name: its id's safe characters and a hash of the raw id and repo.
pub fn session_key(session_id: &str, repo: &Path) -> String {
    let clean: String = session_id
        .chars()
        .filter(|c| c.is_ascii_alphanumeric() || *c == '-' || *c == '_')
        .take(48)
        .collect();
    let mut h = Sha256::new();
    h.update(session_id.as_bytes());
    h.update([0]);
    h.update(repo.as_os_str().as_encoded_bytes());
    let hash = hex::encode(h.finalize());
    format!("{clean}-{}", &hash[..16])
}

/// Session files and repository locks in the state directory, each file MAC-sealed.
pub struct Store {
    dir: PathBuf,
    key: Vec<u8>,
}

/// A session file: the session and a MAC over it with the store's key, so an entry
/// written by hand (a moved baseline, a zeroed refusal count, a forged "verified") is
/// refused. The key lives in the state directory (owner-only), outside the tree.
#[derive(Serialize, Deserialize)]
struct Sealed {
    session: Session,
    mac: String,
}

fn mac(key: &[u8], s: &Session) -> String {
    let body = serde_json::to_string(s).unwrap_or_default();
    let inner = Sha256::new()
        .chain_update(key)
        .chain_update(body.as_bytes())
        .finalize();
    hex::encode(
        Sha256::new()
            .chain_update(key)
            .chain_update(inner)
            .finalize(),
    )
}

fn seal(key: &[u8], s: &Session) -> Result<Vec<u8>, HookError> {
    serde_json::to_vec_pretty(&Sealed {
        session: s.clone(),
        mac: mac(key, s),
    })
    .map_err(json("the session state"))
}

/// The store's key, created on first use from the system's random source.
fn load_key(dir: &Path) -> Result<Vec<u8>, HookError> {
    use std::io::Read;
    use std::os::unix::fs::OpenOptionsExt;
    let p = dir.join("key");
    if let Ok(k) = std::fs::read(&p)
        && k.len() == 32
    {
        return Ok(k);
    }
    let mut k = vec![0u8; 32];
    std::fs::File::open("/dev/urandom")
        .and_then(|mut f| f.read_exact(&mut k))
        .map_err(io("cannot read /dev/urandom"))?;
    match std::fs::OpenOptions::new()
        .write(true)
        .create_new(true)
        .mode(0o600)
        .open(&p)
    {
        Ok(mut f) => {
            f.write_all(&k).map_err(io_at(&p))?;
            Ok(k)
        }
        // Another hook made it first: use that one.
        Err(e) if e.kind() == std::io::ErrorKind::AlreadyExists => std::fs::read(&p)
            .ok()
            .filter(|k| k.len() == 32)
            .ok_or_else(|| format!("{}: the state key is damaged", p.display()).into()),
        Err(e) => Err(io_at(&p)(e)),
    }
}

impl Store {
    /// The store at `dir` (created, owner-only). `dir` must not lie inside `repo`:
    /// the agent could forge its entries there.
    pub fn open(dir: &Path, repo: &Path) -> Result<Store, HookError> {
        for sub in ["sessions", "locks"] {
            std::fs::create_dir_all(dir.join(sub)).map_err(io(format!(
                "cannot create the state directory {}",
                dir.display()
            )))?;
        }
        let dir = dir.canonicalize().map_err(io_at(dir))?;
        if dir.starts_with(repo) {
            return Err(format!(
                "the state directory {} lies inside the repository {}, where the agent can write its baseline and decisions; hint: use a directory outside the working tree (--state-dir)",
                dir.display(),
                repo.display()
            ).into());
        }
        {
            use std::os::unix::fs::PermissionsExt;
            let _ = std::fs::set_permissions(&dir, std::fs::Permissions::from_mode(0o700));
        }
        let key = load_key(&dir)?;
        Ok(Store { dir, key })
    }

    /// The state directory, canonical.
    pub fn dir(&self) -> &Path {
        &self.dir
    }

    fn session_path(&self, key: &str) -> PathBuf {
        self.dir.join("sessions").join(format!("{key}.json"))
    }

    /// Where a session's snapshot (`[[snapshot]]`, taken at session start) is kept.
    pub fn snapshot_path(&self, key: &str) -> PathBuf {
        self.dir
            .join("sessions")
            .join(format!("{key}.snapshot.json"))
    }

    /// Keeps a snapshot document (first write wins). It needs no MAC: the gate
    /// accepts it only signed or recorded in its ledger.
    pub fn save_snapshot(path: &Path, doc: &serde_json::Value) -> Result<(), HookError> {
        let bytes = serde_json::to_vec_pretty(doc).map_err(json("the snapshot"))?;
        let mut f = std::fs::OpenOptions::new()
            .write(true)
            .create_new(true)
            .open(path)
            .map_err(io_at(path))?;
        f.write_all(&bytes)
            .and_then(|_| f.sync_all())
            .map_err(io_at(path))
    }

    /// The session's snapshot, if one was taken.
    pub fn load_snapshot(&self, key: &str) -> Result<Option<serde_json::Value>, HookError> {
        let p = self.snapshot_path(key);
        match std::fs::read(&p) {
            Ok(b) => serde_json::from_slice(&b).map(Some).map_err(json(format!(
                "{}: the session's snapshot is damaged",
                p.display()
            ))),
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(None),
            Err(e) => Err(io_at(&p)(e)),
        }
    }

    /// A session's state, `None` when it has none yet; `Err` when damaged or forged.
    pub fn load(&self, key: &str) -> Result<Option<Session>, HookError> {
        let p = self.session_path(key);
        match std::fs::read(&p) {
            Ok(b) => {
                let sealed: Sealed = serde_json::from_slice(&b).map_err(json(format!(
                    "{}: the session state is damaged",
                    p.display()
                )))?;
                if mac(&self.key, &sealed.session) != sealed.mac {
                    return Err(format!(
                        "{}: the session state was not written by evident (its MAC does not match): refusing to trust its baseline or decisions; hint: delete the file to start the session's state again from the default branch",
                        p.display()
                    ).into());
                }
                Ok(Some(sealed.session))
            }
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(None),
            Err(e) => Err(io_at(&p)(e)),
        }
    }

    /// Record a new session: first write wins (an existing file is left alone and
    /// returned).
    pub fn create(&self, key: &str, s: &Session) -> Result<Session, HookError> {
        let p = self.session_path(key);
        let bytes = seal(&self.key, s)?;
        match std::fs::OpenOptions::new()
            .write(true)
            .create_new(true)
            .open(&p)
        {
            Ok(mut f) => {
                f.write_all(&bytes)
                    .and_then(|_| f.sync_all())
                    .map_err(io_at(&p))?;
                Ok(s.clone())
            }
            Err(e) if e.kind() == std::io::ErrorKind::AlreadyExists => self
                .load(key)?
                .ok_or_else(|| format!("{}: vanished", p.display()).into()),
            Err(e) => Err(io_at(&p)(e)),
        }
    }

    /// Replace a session's file (refusal count, last decision), atomically.
    pub fn save(&self, key: &str, s: &Session) -> Result<(), HookError> {
        let p = self.session_path(key);
        let tmp = p.with_extension("json.tmp");
        let bytes = seal(&self.key, s)?;
        std::fs::write(&tmp, bytes)
            .and_then(|_| std::fs::rename(&tmp, &p))
            .map_err(io_at(&p))
    }

    /// Hold the repository's lock (gates on one repository run one at a time) until
    /// the returned file is dropped; waiting at most `wait` for another holder.
    pub fn lock(&self, repo: &Path, wait: std::time::Duration) -> Result<std::fs::File, HookError> {
        let name = hex::encode(Sha256::digest(repo.as_os_str().as_encoded_bytes()));
        let p = self.dir.join("locks").join(format!("{}.lock", &name[..32]));
        let f = std::fs::OpenOptions::new()
            .create(true)
            .truncate(false)
            .write(true)
            .open(&p)
            .map_err(io_at(&p))?;
        let until = std::time::Instant::now() + wait;
        loop {
            match f.try_lock() {
                Ok(()) => return Ok(f),
                Err(std::fs::TryLockError::WouldBlock) if std::time::Instant::now() < until => {
                    std::thread::sleep(std::time::Duration::from_millis(50));
                }
                Err(std::fs::TryLockError::WouldBlock) => {
                    return Err(format!(
                        "another stop in this repository is being checked and held the lock for {} s ({}); stop again once it is done",
                        wait.as_secs(),
                        p.display()
                    ).into());
                }
                Err(std::fs::TryLockError::Error(e)) => {
                    return Err(format!("{}: cannot lock: {e}", p.display()).into());
                }
            }
        }
    }
}
