//! Putting decisions on record (the ledger), with the warnings that say when the record
//! lies where the agent can write.

use crate::Decision;
use evident_format::Warning;
use evident_ledger::sign::Key;
use serde_json::Value;
use std::path::{Path, PathBuf};

/// Where (and whether) a decision is recorded.
#[derive(Debug, Clone, Default)]
pub struct Recording {
    /// Do not record.
    pub off: bool,
    /// A SQLite path or `postgres://…` (default: `$EVIDENT_LEDGER`, else
    /// `.evident/ledger.db` in the current directory).
    pub ledger: Option<String>,
    /// After recording, append a signed checkpoint of the ledger's head here (needs a key).
    pub checkpoint: Option<PathBuf>,
}

/// The record a decision was appended as.
#[derive(Debug, Clone)]
pub struct Recorded {
    /// The record's number in the ledger.
    pub id: u64,
    /// Its hash (the chain's link).
    pub hash: String,
    /// Where the ledger is (path or redacted URL).
    pub location: String,
    /// The id of the key that signed the record's hash, if any.
    pub signed_by: Option<String>,
}

/// Why a decision could not be recorded.
#[derive(Debug, thiserror::Error)]
pub enum RecordError {
    /// The ledger could not be opened or appended to.
    #[error("{0}")]
    Ledger(String),
    /// A checkpoint file was asked for without a key to sign it.
    #[error("--checkpoint needs --key: a checkpoint is only worth what its signature is")]
    CheckpointWithoutKey,
}

impl Recording {
    /// Appends the decision unless recording is off; the record's hash signed with
    /// `key` when given (and a checkpoint written when asked).
    pub fn record(
        &self,
        decision: &Decision,
        key: Option<&Key>,
    ) -> Result<Option<Recorded>, RecordError> {
        if self.off {
            return Ok(None);
        }
        if self.checkpoint.is_some() && key.is_none() {
            return Err(RecordError::CheckpointWithoutKey);
        }
        let ledger = evident_ledger::open(self.ledger.as_deref())
            .map_err(|e| RecordError::Ledger(e.to_string()))?;
        let mut claim = decision.document.clone();
        if let Some(obj) = claim.as_object_mut() {
            obj.remove("verdict");
        }
        let task_id = claim
            .pointer("/task/id")
            .and_then(Value::as_str)
            .map(str::to_string);
        let verdict = serde_json::to_value(&decision.verdict)
            .map_err(|e| RecordError::Ledger(e.to_string()))?;
        let record = ledger
            .append_signed(
                evident_ledger::NewEntry {
                    kind: decision.kind.as_str().to_string(),
                    task_id,
                    state: decision.verdict.state.as_str().to_string(),
                    claim,
                    contract: decision.contract.as_ref().map(|(_, c)| c.clone()),
                    verdict,
                },
                key,
            )
            .map_err(|e| RecordError::Ledger(e.to_string()))?;
        if let (Some(path), Some(key)) = (&self.checkpoint, key) {
            let cp =
                evident_ledger::Checkpoint::sign(ledger.location(), record.id, &record.hash, key);
            evident_ledger::attest::append_checkpoint(path, &cp)
                .map_err(|e| RecordError::Ledger(e.to_string()))?;
        }
        Ok(Some(Recorded {
            id: record.id,
            hash: record.hash.clone(),
            location: ledger.location().to_string(),
            signed_by: key.map(|k| k.id().to_string()),
        }))
    }

    /// Warnings for a ledger, checkpoint file or signing key that lies inside `root`,
    /// the contract root where the agent can write: an agent that can write the ledger
    /// can append to it or cut its tail, one that can write the checkpoint file can roll
    /// it back with the ledger, and one that can read the key can sign as the gate.
    pub fn placement_warnings(&self, key_path: Option<&Path>, root: &Path) -> Vec<Warning> {
        let mut out = Vec::new();
        let mut warn = |path: &str, message: String| {
            out.push(Warning {
                path: path.to_string(),
                pos: None,
                message,
            });
        };
        if !self.off
            && let Some(ledger) = evident_ledger::sqlite_path(self.ledger.as_deref())
            && inside(&ledger, root)
        {
            warn(
                "ledger",
                format!(
                    "the ledger {} lies inside the contract root {}, where the agent can write: it could append records or remove them; put the ledger outside the working tree (--ledger, $EVIDENT_LEDGER) or in PostgreSQL with an append-only role (docs/ledger.md)",
                    ledger.display(),
                    root.display()
                ),
            );
        }
        if let Some(cp) = &self.checkpoint
            && inside(cp, root)
        {
            warn(
                "checkpoint",
                format!(
                    "the checkpoint file {} lies inside the contract root {}, where the agent can write: it could roll it back together with the ledger; keep it where only the gate can write",
                    cp.display(),
                    root.display()
                ),
            );
        }
        if let Some(k) = key_path
            && inside(k, root)
        {
            warn(
                "key",
                format!(
                    "the signing key {} lies inside the contract root {}, where the agent can read it and sign as the gate; keep it outside the working tree",
                    k.display(),
                    root.display()
                ),
            );
        }
        out
    }
}

/// Is `path` (which need not exist yet) inside `root` (canonical)? Relative paths are
/// taken from the current directory; symbolic links in the existing part are followed.
fn inside(path: &Path, root: &Path) -> bool {
    let abs = if path.is_absolute() {
        path.to_path_buf()
    } else {
        match std::env::current_dir() {
            Ok(cwd) => cwd.join(path),
            Err(_) => return false,
        }
    };
    // Canonicalize the longest existing ancestor, then add back the rest.
    let mut existing = abs.as_path();
    let mut rest = Vec::new();
    loop {
        if let Ok(real) = existing.canonicalize() {
            let mut full = real;
            for part in rest.iter().rev() {
                full.push(part);
            }
            return full.starts_with(root);
        }
        match (existing.parent(), existing.file_name()) {
            (Some(parent), Some(name)) => {
                rest.push(name.to_os_string());
                existing = parent;
            }
            _ => return abs.starts_with(root),
        }
    }
}
