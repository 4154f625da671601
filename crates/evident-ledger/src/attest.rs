//! Signatures over ledger records, and signed checkpoints of a ledger's head.
//!
//! A hash chain proves that nothing before a record changed, but anyone who can write
//! the store can append a well-chained record, or cut the tail off. So:
//!
//! - **Record signatures.** With a key, the writer signs each record's hash (Ed25519
//!   over DSSE's pre-authentication encoding with payload type [`RECORD_PAYLOAD_TYPE`]
//!   and the 64 hex digits of the hash as payload). The signature is stored beside the
//!   record (column `signature`), as `{"keyid", "sig", "verifier"}`; it is not part of
//!   the hashed body, since it signs that hash. `ledger verify --trust` refuses a
//!   record that no listed key signed under the verifier id it names.
//! - **Checkpoints.** A checkpoint is one signed JSON line saying "this ledger held
//!   `records` records and its head was `head`". The gate appends one to a file (kept
//!   where the ledger's writer cannot rewrite it) after each record; `ledger verify
//!   --checkpoint` then fails when a checkpointed record is gone (a truncated tail, an
//!   older copy restored) or is another record (the chain was rebuilt).

use base64::Engine as _;
use base64::engine::general_purpose::STANDARD as B64;
use ed25519_dalek::Signature;
use serde::{Deserialize, Serialize};

use evident_sign::canonical_json;
use evident_sign::{Key, TrustList, pae};

evident_format::message_error! {
    /// Why a record's or a checkpoint's signature does not vouch for it, for the message
    /// naming the record. A leaf: the message is all.
    pub struct Unsigned;
}

/// The DSSE payload type of a record signature (the payload is the record's hex hash).
pub const RECORD_PAYLOAD_TYPE: &str = "application/vnd.evident.ledger-record-hash";
/// The DSSE payload type of a checkpoint (the payload is its canonical JSON without
/// `keyid` and `sig`).
pub const CHECKPOINT_PAYLOAD_TYPE: &str = "application/vnd.evident.ledger-checkpoint+json";
/// The `type` field of a checkpoint line.
pub const CHECKPOINT_TYPE: &str = "evident-ledger-checkpoint";

/// A signature over one record's hash, as stored in the `signature` column.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct RecordSignature {
    /// The verifier id the key signs as (its trust-list `id`).
    pub verifier: String,
    /// `sha256:<hex>` of the public key (a hint; the trust list decides).
    pub keyid: String,
    /// Base64 of the Ed25519 signature.
    pub sig: String,
}

impl RecordSignature {
    /// Sign a record's hash.
    pub fn sign(hash: &str, key: &Key) -> RecordSignature {
        let sig: Signature = key.sign_pae(RECORD_PAYLOAD_TYPE, hash.as_bytes());
        RecordSignature {
            verifier: key.id().to_string(),
            keyid: key.keyid(),
            sig: B64.encode(sig.to_bytes()),
        }
    }

    /// The stored form (canonical JSON).
    pub fn to_text(&self) -> String {
        canonical_json(&serde_json::to_value(self).unwrap_or_default())
    }

    /// Check a stored signature (its text) over `hash` against a trust list. The error
    /// says why, for the message naming the record.
    pub fn check(text: Option<&str>, hash: &str, trust: &TrustList) -> Result<(), Unsigned> {
        let Some(text) = text else {
            return Err(
                "it is not signed (whoever appended it had no key the trust list names)".into(),
            );
        };
        let s: RecordSignature = serde_json::from_str(text)
            .map_err(|e| Unsigned(format!("its signature is malformed ({e})")))?;
        if !verifies(
            &trust_keys(trust, &s.verifier),
            RECORD_PAYLOAD_TYPE,
            hash.as_bytes(),
            &s.sig,
        ) {
            return Err(Unsigned(if trust.keys_for(&s.verifier).next().is_none() {
                format!(
                    "it is signed as {:?}, which is not in the trust list",
                    s.verifier
                )
            } else {
                format!(
                    "its signature does not verify with any key the trust list gives {:?}",
                    s.verifier
                )
            }));
        }
        Ok(())
    }
}

fn trust_keys<'a>(trust: &'a TrustList, id: &'a str) -> Vec<&'a ed25519_dalek::VerifyingKey> {
    trust.keys_for(id).collect()
}

fn verifies(
    keys: &[&ed25519_dalek::VerifyingKey],
    payload_type: &str,
    payload: &[u8],
    sig_b64: &str,
) -> bool {
    let Some(sig) = B64
        .decode(sig_b64.trim())
        .ok()
        .and_then(|b| <[u8; 64]>::try_from(b.as_slice()).ok())
        .map(|b| Signature::from_bytes(&b))
    else {
        return false;
    };
    let message = pae(payload_type, payload);
    keys.iter().any(|k| k.verify_strict(&message, &sig).is_ok())
}

/// One checkpoint: the ledger held `records` records, the last with hash `head`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Checkpoint {
    /// Always [`CHECKPOINT_TYPE`], so a stray JSON line is not taken for a checkpoint.
    #[serde(rename = "type")]
    pub kind: String,
    /// The checkpoint format version; only 1 exists.
    pub v: u32,
    /// The ledger's location as shown in messages (no password); informative.
    pub ledger: String,
    /// The head's id, which is also the number of records (ids run 1, 2, 3, …).
    pub records: u64,
    /// The head's hash.
    pub head: String,
    /// When the checkpoint was made (UTC).
    pub time: String,
    /// The verifier id of the key that signed it.
    pub verifier: String,
    /// `sha256:<hex>` of the signing public key (a hint; the trust list decides).
    pub keyid: String,
    /// Base64 of the Ed25519 signature over every other field.
    pub sig: String,
}

impl Checkpoint {
    /// A signed checkpoint of the head `(records, head)`.
    pub fn sign(ledger: &str, records: u64, head: &str, key: &Key) -> Checkpoint {
        let mut c = Checkpoint {
            kind: CHECKPOINT_TYPE.into(),
            v: 1,
            ledger: ledger.to_string(),
            records,
            head: head.to_string(),
            time: crate::record::format_time(time::OffsetDateTime::now_utc()),
            verifier: key.id().to_string(),
            keyid: key.keyid(),
            sig: String::new(),
        };
        let sig: Signature = key.sign_pae(CHECKPOINT_PAYLOAD_TYPE, c.payload().as_bytes());
        c.sig = B64.encode(sig.to_bytes());
        c
    }

    /// What the signature covers: every field but `keyid` and `sig`, canonical JSON.
    fn payload(&self) -> String {
        canonical_json(&serde_json::json!({
            "type": self.kind,
            "v": self.v,
            "ledger": self.ledger,
            "records": self.records,
            "head": self.head,
            "time": self.time,
            "verifier": self.verifier,
        }))
    }

    /// The line written to a checkpoint file (canonical JSON, no newline).
    pub fn to_line(&self) -> String {
        canonical_json(&serde_json::to_value(self).unwrap_or_default())
    }

    /// Does a key the trust list gives `verifier` sign this checkpoint?
    pub fn check(&self, trust: &TrustList) -> Result<(), Unsigned> {
        if self.kind != CHECKPOINT_TYPE || self.v != 1 {
            return Err(format!(
                "not a version 1 {CHECKPOINT_TYPE} (type {:?}, v {})",
                self.kind, self.v
            )
            .into());
        }
        let keys = trust_keys(trust, &self.verifier);
        if keys.is_empty() {
            return Err(format!(
                "it is signed as {:?}, which is not in the trust list",
                self.verifier
            )
            .into());
        }
        if !verifies(
            &keys,
            CHECKPOINT_PAYLOAD_TYPE,
            self.payload().as_bytes(),
            &self.sig,
        ) {
            return Err(format!(
                "its signature does not verify with any key the trust list gives {:?} (it was edited or forged)",
                self.verifier
            ).into());
        }
        Ok(())
    }
}

/// A checkpoint file could not be written or read, or holds a line that is not a
/// checkpoint a trusted key signed.
#[derive(Debug, thiserror::Error)]
pub enum CheckpointError {
    /// The checkpoint could not be appended (and so the head is not witnessed).
    #[error("cannot write checkpoint file {path}")]
    Write {
        /// The checkpoint file.
        path: String,
        /// What the operating system said.
        source: std::io::Error,
    },
    /// The checkpoint file could not be read.
    #[error("cannot read checkpoint file {path}")]
    Read {
        /// The checkpoint file.
        path: String,
        /// What the operating system said.
        source: std::io::Error,
    },
    /// A line is not a checkpoint a trusted key signed: someone else wrote there.
    #[error("checkpoint file {path}:{line}: {why}")]
    Invalid {
        /// The checkpoint file.
        path: String,
        /// The offending line, from 1.
        line: usize,
        /// Why it is refused (malformed, untrusted signer, bad signature).
        why: String,
    },
    /// The file has no checkpoint, so it can vouch for nothing (fail closed).
    #[error("checkpoint file {path} holds no checkpoint")]
    Empty {
        /// The checkpoint file.
        path: String,
    },
}

/// Append one checkpoint line to `path` (created if missing) and flush it to disk.
pub fn append_checkpoint(
    path: &std::path::Path,
    checkpoint: &Checkpoint,
) -> Result<(), CheckpointError> {
    use std::io::Write as _;
    let err = |source| CheckpointError::Write {
        path: path.display().to_string(),
        source,
    };
    let mut f = std::fs::OpenOptions::new()
        .append(true)
        .create(true)
        .open(path)
        .map_err(err)?;
    let mut line = checkpoint.to_line();
    line.push('\n');
    // One write of the whole line: with O_APPEND, concurrent gates never interleave.
    f.write_all(line.as_bytes()).map_err(err)?;
    f.sync_all().map_err(err)?;
    Ok(())
}

/// What a checkpoint file asks of a ledger: for each checkpointed head id, the hash
/// it must have, and where that was said (for messages).
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Expectations {
    /// `(id, hash, origin)`, sorted by id.
    pub heads: Vec<(u64, String, String)>,
}

impl Expectations {
    /// The largest checkpointed id.
    pub fn max_id(&self) -> Option<u64> {
        self.heads.iter().map(|h| h.0).max()
    }
}

/// Read a checkpoint file: every line must be a checkpoint a key of the trust list
/// signed (a line that is not is someone else writing where only the gate should).
/// Files are read up to 64 MiB.
pub fn read_checkpoints(
    path: &std::path::Path,
    trust: &TrustList,
) -> Result<Expectations, CheckpointError> {
    use std::io::Read as _;
    let shown = path.display().to_string();
    let mut text = String::new();
    std::fs::File::open(path)
        .and_then(|f| f.take(64 << 20).read_to_string(&mut text))
        .map_err(|source| CheckpointError::Read {
            path: shown.clone(),
            source,
        })?;
    let mut heads = Vec::new();
    for (n, line) in text.lines().enumerate() {
        if line.trim().is_empty() {
            continue;
        }
        let invalid = |why: String| CheckpointError::Invalid {
            path: shown.clone(),
            line: n + 1,
            why,
        };
        let c: Checkpoint =
            serde_json::from_str(line).map_err(|e| invalid(format!("not a checkpoint: {e}")))?;
        c.check(trust).map_err(|Unsigned(why)| invalid(why))?;
        heads.push((
            c.records,
            c.head.clone(),
            format!(
                "checkpoint {shown}:{} (signed by {:?} at {})",
                n + 1,
                c.verifier,
                c.time
            ),
        ));
    }
    if heads.is_empty() {
        return Err(CheckpointError::Empty { path: shown });
    }
    heads.sort_by_key(|h| h.0);
    Ok(Expectations { heads })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn trust(k: &Key) -> TrustList {
        TrustList {
            verifiers: vec![k.trusted()],
        }
    }

    #[test]
    fn record_signatures_bind_the_hash_and_the_key() {
        let gate = Key::from_seed("evident-gate", [7; 32]);
        let agent = Key::from_seed("evident-gate", [9; 32]);
        let hash = "ab".repeat(32);
        let s = RecordSignature::sign(&hash, &gate).to_text();
        assert_eq!(
            RecordSignature::check(Some(&s), &hash, &trust(&gate)),
            Ok(())
        );
        // Another record's hash, another key under the same id, no signature at all.
        assert!(RecordSignature::check(Some(&s), &"cd".repeat(32), &trust(&gate)).is_err());
        let forged = RecordSignature::sign(&hash, &agent).to_text();
        let e = RecordSignature::check(Some(&forged), &hash, &trust(&gate)).unwrap_err();
        assert!(e.0.contains("does not verify"), "{e}");
        let e = RecordSignature::check(None, &hash, &trust(&gate)).unwrap_err();
        assert!(e.0.contains("not signed"), "{e}");
        let other = Key::from_seed("agent", [3; 32]);
        let e = RecordSignature::check(
            Some(&RecordSignature::sign(&hash, &other).to_text()),
            &hash,
            &trust(&gate),
        )
        .unwrap_err();
        assert!(e.0.contains("not in the trust list"), "{e}");
    }

    #[test]
    fn checkpoints_verify_only_as_signed() {
        let gate = Key::from_seed("evident-gate", [7; 32]);
        let c = Checkpoint::sign("ledger.db", 4, &"ab".repeat(32), &gate);
        assert_eq!(c.check(&trust(&gate)), Ok(()));
        let line = c.to_line();
        let back: Checkpoint = serde_json::from_str(&line).unwrap();
        assert_eq!(back.check(&trust(&gate)), Ok(()));
        let mut older = back.clone();
        older.records = 3;
        assert!(older.check(&trust(&gate)).is_err());
        // A record signature is not a checkpoint signature (payload types differ).
        let mut swapped = back;
        swapped.sig = RecordSignature::sign(&swapped.payload(), &gate).sig;
        assert!(swapped.check(&trust(&gate)).is_err());
    }
}
