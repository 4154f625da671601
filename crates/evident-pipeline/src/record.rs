//! Putting decisions on record (the ledger), with the warnings that say when the record
//! lies where the agent can write.

use crate::Decision;
use evident_format::Warning;
use evident_sign::Key;
use serde_json::Value;
use std::path::{Path, PathBuf};

/// Where (and whether) a decision is recorded.
#[derive(Debug, Clone, Default)]
pub struct Recording {
    /// Do not record.
    pub off: bool,
    /// A SQLite path or `postgres://…` (default: `$EVIDENT_LEDGER`, else the current
    /// repository's ledger in the state directory, [`evident_ledger::default_location`]).
    pub ledger: Option<String>,
    /// After recording, append a signed checkpoint of the ledger's head here (needs a key).
    pub checkpoint: Option<PathBuf>,
    /// An open ledger's writer to record through instead of opening `ledger` for each
    /// decision (a server: one connection, concurrent appends grouped into one commit).
    pub appender: Option<evident_ledger::Appender>,
    /// Who asked and through what, recorded with the decision (see [`Origin`]).
    pub origin: Option<Origin>,
}

/// Who asked for a decision, through which surface: recorded in the ledger record's
/// `origin` (hashed with the rest), written by the surface that took the request and
/// never by the agent.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Origin {
    /// The surface: `http`, `mcp`, … .
    pub via: String,
    /// The authenticated caller (a token's name), when there is one.
    pub asked_by: Option<String>,
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
    /// When it was appended (the ledger's time form).
    pub time: String,
    /// The previous record's hash.
    pub prev_hash: String,
    /// `sha256:<hex>` of the recorded contract (secrets removed), for a gate.
    pub contract_digest: Option<String>,
    /// `sha256:<hex>` of the recorded claim.
    pub claim_digest: String,
}

impl Recorded {
    /// What a decision appended as `record` in the ledger at `location` is recorded as.
    pub fn of(record: &evident_ledger::Record, location: &str, key: Option<&Key>) -> Recorded {
        Recorded {
            id: record.id,
            hash: record.hash.clone(),
            location: location.to_string(),
            signed_by: key.map(|k| k.id().to_string()),
            time: record.time.clone(),
            prev_hash: record.prev_hash.clone(),
            contract_digest: record.contract_digest.clone(),
            claim_digest: record.claim_digest.clone(),
        }
    }
}

/// The record's `origin`: the surface's word, the contract's name and what an
/// unverified verdict does (so a reader of the ledger can tell a blocked decision from
/// one let through).
fn origin_value(o: &Origin, decision: &Decision) -> Value {
    let mut m = serde_json::Map::new();
    m.insert("via".into(), Value::String(o.via.clone()));
    if let Some(who) = &o.asked_by {
        m.insert("asked_by".into(), Value::String(who.clone()));
    }
    if let Some((name, _)) = &decision.contract {
        m.insert("contract".into(), Value::String(name.clone()));
    }
    m.insert(
        "on_unverified".into(),
        serde_json::to_value(decision.on_unverified).unwrap_or(Value::Null),
    );
    m.insert(
        "policy_source".into(),
        Value::String(
            match &decision.policy_source {
                crate::PolicySource::Document => "document",
                crate::PolicySource::File(_) => "owner",
                crate::PolicySource::Contract(_) => "contract",
            }
            .into(),
        ),
    );
    Value::Object(m)
}

/// Why a decision could not be recorded.
#[derive(Debug, thiserror::Error)]
pub enum RecordError {
    /// The ledger could not be opened or appended to.
    #[error(transparent)]
    Ledger(#[from] evident_ledger::Error),
    /// The checkpoint could not be appended to its file.
    #[error(transparent)]
    Checkpoint(#[from] evident_ledger::attest::CheckpointError),
    /// The verdict could not be made into the entry's JSON.
    #[error("the verdict cannot be written as JSON")]
    Verdict(#[source] serde_json::Error),
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
        let entry = self.entry(decision)?;
        let opened;
        let (record, location) = match &self.appender {
            Some(a) => (a.append(entry, key), a.location()),
            None => {
                opened = evident_ledger::open(self.ledger.as_deref())?;
                (opened.append_signed(entry, key), opened.location())
            }
        };
        let record = record?;
        if let (Some(path), Some(key)) = (&self.checkpoint, key) {
            let cp = evident_ledger::Checkpoint::sign(location, record.id, &record.hash, key);
            evident_ledger::attest::append_checkpoint(path, &cp)?;
        }
        Ok(Some(Recorded::of(&record, location, key)))
    }

    /// The ledger entry for a decision (the decided document without its verdict, the
    /// verdict, the contract, this recording's origin): what [`Recording::record`]
    /// appends, for a caller that appends it itself (a server appending asynchronously
    /// through [`evident_ledger::Appender::append_async`]).
    pub fn entry(&self, decision: &Decision) -> Result<evident_ledger::NewEntry, RecordError> {
        let mut claim = decision.document.clone();
        claim.remove("verdict");
        let task_id = claim
            .get("task")
            .and_then(|t| t.get("id")?.as_str().map(str::to_string));
        let verdict = evident_format::JsonText::from_serialize(&decision.verdict)
            .map_err(RecordError::Verdict)?;
        Ok(evident_ledger::NewEntry {
            kind: decision.kind.as_str().to_string(),
            task_id,
            state: decision.verdict.state.as_str().to_string(),
            claim,
            contract: decision.contract.as_ref().map(|(_, c)| c.clone()),
            verdict,
            origin: self.origin.as_ref().map(|o| origin_value(o, decision)),
        })
    }

    /// Warnings for a ledger, checkpoint file or signing key that lies inside `root`,
    /// the contract root where the agent can write: an agent that can write the ledger
    /// can append to it or cut its tail, one that can write the checkpoint file can roll
    /// it back with the ledger, and one that can read the key can sign as the gate.
    pub fn placement_warnings(&self, key_path: Option<&Path>, root: &Path) -> Vec<Warning> {
        let mut out = Vec::new();
        let mut warn = |path: &str, message: String| {
            out.push(Warning {
                file: None,
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
