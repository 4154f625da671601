//! Records: how one is built, hashed and checked against its neighbours.
//!
//! A record's *body* is the canonical JSON ([`crate::canonical_json`]) of
//! `{v, id, time, kind, task_id, state, claim_digest, contract_digest, claim, contract,
//! verdict, prev_hash}`; its hash is the lowercase hex SHA-256 of the body's bytes. The
//! stores keep the body text verbatim, so checking a record is hashing bytes, and the
//! digests are SHA-256 over the documents' canonical JSON (each a slice of the body).

use serde::Deserialize;
use serde_json::value::RawValue;
use serde_json::{Value, json};
use sha2::{Digest as _, Sha256};
use time::OffsetDateTime;
use time::format_description::BorrowedFormatItem;
use time::macros::format_description;

use crate::canon::canonical_redacted;
use crate::redact::{redact_in_place, redact_text};
use evident_format::JsonText;
use evident_sign::canonical_json;
use evident_sign::{Key, TrustList};

/// The `prev_hash` of the first record.
pub const GENESIS: &str = "0000000000000000000000000000000000000000000000000000000000000000";
/// The record format version (`v`).
pub const VERSION: u32 = 1;

/// Times are stored in one fixed UTC form so that text order is time order.
pub const TIME_FORMAT: &[BorrowedFormatItem<'static>] =
    format_description!("[year]-[month]-[day]T[hour]:[minute]:[second].[subsecond digits:6]Z");

/// A decision to record.
#[derive(Debug, Clone, PartialEq, Default)]
pub struct NewEntry {
    /// `verify`, `gate`, … (what made the decision).
    pub kind: String,
    /// The claim's `task.id`, when it has one.
    pub task_id: Option<String>,
    /// The verdict state: `verified`, `unverified`, `refuted`, ….
    pub state: String,
    /// The claim document as given, as compact text (secrets are removed before it is
    /// stored); `json!({..}).into()` makes one from a value.
    pub claim: JsonText,
    /// The contract, when one was used (secrets removed before storing).
    pub contract: Option<Value>,
    /// The verdict as decided, as compact text (a verdict of 75,000 findings is a
    /// large document too; secrets are removed before it is stored).
    pub verdict: JsonText,
    /// Who asked for the decision and through what (`{"asked_by": "ci", "via":
    /// "http", "contract": "billing"}`), written by the surface that took the request,
    /// never by the agent. Stored in the body (so it is hashed) only when given: records
    /// without it keep the form older evident wrote.
    pub origin: Option<Value>,
}

/// One record of the ledger.
#[derive(Debug, Clone, PartialEq)]
pub struct Record {
    /// Position in the chain, from 1.
    pub id: u64,
    /// When it was appended (UTC, `YYYY-MM-DDTHH:MM:SS.ffffffZ`).
    pub time: String,
    /// What made the decision ([`NewEntry::kind`]).
    pub kind: String,
    /// The claim's `task.id`, when it has one.
    pub task_id: Option<String>,
    /// The verdict state recorded (`verified`, `refuted`, …).
    pub state: String,
    /// `sha256:<hex>` of the stored claim's canonical JSON.
    pub claim_digest: String,
    /// `sha256:<hex>` of the stored contract's canonical JSON.
    pub contract_digest: Option<String>,
    /// The claim with secrets removed. `Null` in the record an append returns: the
    /// claim is in the stored body (read the record back for it), and a large claim is
    /// not held a second time as a value.
    pub claim: Value,
    /// The contract with secrets removed.
    pub contract: Option<Value>,
    /// The verdict as decided, with secrets removed. `Null` in the record an append
    /// returns, as `claim` is: read the record back for it.
    pub verdict: Value,
    /// Who asked, through what ([`NewEntry::origin`]).
    pub origin: Option<Value>,
    /// The previous record's hash ([`GENESIS`] for the first).
    pub prev_hash: String,
    /// Hex SHA-256 of this record's body (all the fields above).
    pub hash: String,
    /// The writer's signature over `hash` ([`crate::attest::RecordSignature`] as JSON),
    /// when it had a key. Stored beside the body, not in it.
    pub signature: Option<Value>,
}

/// A stored body that does not parse as a record (serde_json says where).
#[derive(Debug, thiserror::Error)]
#[error("body is not a record")]
pub struct NotARecord(#[source] pub serde_json::Error);

impl Record {
    /// The record as JSON (the body's fields plus `hash`), as `show --json` and `export`
    /// print it.
    pub fn to_json(&self) -> Value {
        let mut v = body_value(self);
        if let Value::Object(m) = &mut v {
            m.insert("hash".into(), Value::String(self.hash.clone()));
            if let Some(sig) = &self.signature {
                m.insert("signature".into(), sig.clone());
            }
        }
        v
    }

    /// Parse a stored body (and its stored hash and signature) back into a record.
    pub fn from_body(
        body: &str,
        hash: &str,
        signature: Option<&str>,
    ) -> Result<Record, NotARecord> {
        let full: FullBody = crate::depth::from_str(body).map_err(NotARecord)?;
        Ok(Record {
            id: full.id,
            time: full.time,
            kind: full.kind,
            task_id: full.task_id,
            state: full.state,
            claim_digest: full.claim_digest,
            contract_digest: full.contract_digest,
            claim: full.claim,
            contract: full.contract.filter(|c| !c.is_null()),
            verdict: full.verdict,
            origin: full.origin,
            prev_hash: full.prev_hash,
            hash: hash.to_string(),
            signature: signature
                .map(|t| serde_json::from_str(t).unwrap_or_else(|_| Value::String(t.to_string()))),
        })
    }
}

/// A record without its documents (`claim`, `contract`): what `evident log` lists.
#[derive(Debug, Clone, PartialEq)]
pub struct Summary {
    /// Position in the chain, from 1.
    pub id: u64,
    /// When it was appended, in the stored form ([`format_time`]).
    pub time: String,
    /// What made the decision (`verify`, `gate`, …).
    pub kind: String,
    /// The claim's `task.id`, when it has one.
    pub task_id: Option<String>,
    /// The verdict state recorded.
    pub state: String,
    /// `sha256:<hex>` of the stored claim: names the claim without carrying it.
    pub claim_digest: String,
    /// `sha256:<hex>` of the stored contract, when one was used.
    pub contract_digest: Option<String>,
    /// The verdict as recorded.
    pub verdict: Value,
    /// Who asked, through what ([`NewEntry::origin`]).
    pub origin: Option<Value>,
    /// The previous record's hash ([`GENESIS`] for the first).
    pub prev_hash: String,
    /// This record's hash: what the next record and any signature bind to.
    pub hash: String,
}

impl Summary {
    /// As JSON (`evident log --json`).
    pub fn to_json(&self) -> Value {
        let mut v = json!({
            "id": self.id,
            "time": self.time,
            "kind": self.kind,
            "task_id": self.task_id,
            "state": self.state,
            "claim_digest": self.claim_digest,
            "contract_digest": self.contract_digest,
            "verdict": self.verdict,
            "prev_hash": self.prev_hash,
            "hash": self.hash,
        });
        if let (Some(o), Some(m)) = (&self.origin, v.as_object_mut()) {
            m.insert("origin".into(), o.clone());
        }
        v
    }
}

#[derive(Deserialize)]
struct FullBody {
    id: u64,
    time: String,
    kind: String,
    task_id: Option<String>,
    state: String,
    claim_digest: String,
    contract_digest: Option<String>,
    claim: Value,
    contract: Option<Value>,
    verdict: Value,
    #[serde(default)]
    origin: Option<Value>,
    prev_hash: String,
}

fn body_value(r: &Record) -> Value {
    let mut v = json!({
        "v": VERSION,
        "id": r.id,
        "time": r.time,
        "kind": r.kind,
        "task_id": r.task_id,
        "state": r.state,
        "claim_digest": r.claim_digest,
        "contract_digest": r.contract_digest,
        "claim": r.claim,
        "contract": r.contract,
        "verdict": r.verdict,
        "prev_hash": r.prev_hash,
    });
    if let (Some(o), Some(m)) = (&r.origin, v.as_object_mut()) {
        m.insert("origin".into(), o.clone());
    }
    v
}

/// `sha256:<hex>` of a text.
pub fn digest(text: &str) -> String {
    let hex = sha256_hex(text.as_bytes());
    let mut out = String::with_capacity(7 + 64);
    out.push_str("sha256:");
    out.push_str(std::str::from_utf8(&hex).unwrap_or_default());
    out
}

/// Hex SHA-256 of a body.
pub fn hash_body(body: &str) -> String {
    std::str::from_utf8(&sha256_hex(body.as_bytes()))
        .unwrap_or_default()
        .to_string()
}

/// Lowercase hex of a SHA-256, without allocating.
pub(crate) fn sha256_hex(bytes: &[u8]) -> [u8; 64] {
    const HEX: &[u8; 16] = b"0123456789abcdef";
    let d = Sha256::digest(bytes);
    let mut out = [0u8; 64];
    for (i, b) in d.iter().enumerate() {
        out[2 * i] = HEX[usize::from(b >> 4)];
        out[2 * i + 1] = HEX[usize::from(b & 15)];
    }
    out
}

/// Does `text` hash to the hex `hash`?
fn hash_matches(text: &str, hash: &str) -> bool {
    sha256_hex(text.as_bytes()).as_slice() == hash.as_bytes()
}

/// Does `text` have the digest `sha256:<hex>`?
fn digest_matches(text: &str, digest: &str) -> bool {
    digest
        .strip_prefix("sha256:")
        .is_some_and(|h| hash_matches(text, h))
}

/// An entry with secrets removed and digests computed, ready to be chained.
pub(crate) struct Prepared {
    kind: String,
    task_id: Option<String>,
    state: String,
    contract: Option<Value>,
    origin: Option<Value>,
    origin_text: Option<String>,
    claim_digest: String,
    contract_digest: Option<String>,
    /// Canonical JSON of the three documents, computed once outside the write lock.
    /// The claim's text is the start of the body: the rest is written after it in
    /// place, so a large claim is held as text once, not twice.
    claim_text: String,
    contract_text: Option<String>,
    verdict_text: String,
}

impl Prepared {
    pub(crate) fn new(entry: NewEntry) -> Prepared {
        // Redacted in place: a large document is not copied.
        let NewEntry {
            kind,
            task_id,
            state,
            claim,
            mut contract,
            verdict,
            mut origin,
        } = entry;
        if let Some(c) = &mut contract {
            redact_in_place(c);
        }
        if let Some(o) = &mut origin {
            redact_in_place(o);
        }
        let origin_text = origin.as_ref().map(canonical_json);
        const PREFIX: &str = "{\"claim\":";
        let contract_text = contract.as_ref().map(canonical_json);
        // Redacted and made canonical piece by piece, never as one value.
        let verdict_text = canonical_redacted(&verdict);
        drop(verdict);
        let mut claim_text = canonical_redacted(&claim);
        drop(claim);
        let claim_digest = digest(&claim_text);
        // Room for everything the body adds (a large block grows in place).
        claim_text.reserve(
            PREFIX.len()
                + contract_text.as_ref().map_or(4, String::len)
                + origin_text.as_ref().map_or(0, String::len)
                + verdict_text.len()
                + 600,
        );
        Prepared {
            kind: redact_text(&kind),
            task_id: task_id.as_deref().map(redact_text),
            state: redact_text(&state),
            claim_digest,
            contract_digest: contract_text.as_deref().map(digest),
            contract,
            origin,
            origin_text,
            claim_text,
            contract_text,
            verdict_text,
        }
    }

    /// The record that follows `prev` (`None` for the first), appended at `now`, signed
    /// with `key` when given. Returns the record, its body text and its signature text.
    pub(crate) fn chain(
        self,
        prev: Option<(u64, &str)>,
        now: OffsetDateTime,
        key: Option<&Key>,
    ) -> (Record, String, Option<String>) {
        let (id, prev_hash) = match prev {
            Some((id, hash)) => (id + 1, hash.to_string()),
            None => (1, GENESIS.to_string()),
        };
        let time = format_time(now);
        let Prepared {
            kind,
            task_id,
            state,
            contract,
            origin,
            origin_text,
            claim_digest,
            contract_digest,
            claim_text,
            contract_text,
            verdict_text,
        } = self;
        let parts = BodyParts {
            claim_digest: &claim_digest,
            contract_text: contract_text.as_deref(),
            contract_digest: contract_digest.as_deref(),
            id,
            kind: &kind,
            origin_text: origin_text.as_deref(),
            prev_hash: &prev_hash,
            state: &state,
            task_id: task_id.as_deref(),
            time: &time,
            verdict_text: &verdict_text,
        };
        let body = parts.write(claim_text);
        let hash = hash_body(&body);
        let signature = key.map(|k| crate::attest::RecordSignature::sign(&hash, k));
        let record = Record {
            id,
            time,
            kind,
            task_id,
            state,
            claim_digest,
            contract_digest,
            claim: Value::Null,
            contract,
            verdict: Value::Null,
            origin,
            prev_hash,
            hash,
            signature: signature
                .as_ref()
                .and_then(|s| serde_json::to_value(s).ok()),
        };
        (record, body, signature.map(|s| s.to_text()))
    }
}

/// Everything of a body but the claim.
struct BodyParts<'a> {
    claim_digest: &'a str,
    contract_text: Option<&'a str>,
    contract_digest: Option<&'a str>,
    id: u64,
    kind: &'a str,
    origin_text: Option<&'a str>,
    prev_hash: &'a str,
    state: &'a str,
    task_id: Option<&'a str>,
    time: &'a str,
    verdict_text: &'a str,
}

impl BodyParts<'_> {
    /// The canonical JSON of the record body, assembled around the claim's canonical
    /// text in RFC 8785 key order (equal to `canonical_json(body_value(..))`; tested).
    fn write(&self, claim_text: String) -> String {
        let s = |t: &str| canonical_json(&Value::String(t.to_string()));
        let opt = |t: Option<&str>| t.map_or_else(|| "null".to_string(), s);
        let mut b = claim_text;
        b.insert_str(0, "{\"claim\":");
        b.push_str(",\"claim_digest\":");
        b.push_str(&s(self.claim_digest));
        b.push_str(",\"contract\":");
        b.push_str(self.contract_text.unwrap_or("null"));
        b.push_str(",\"contract_digest\":");
        b.push_str(&opt(self.contract_digest));
        b.push_str(",\"id\":");
        b.push_str(&self.id.to_string());
        b.push_str(",\"kind\":");
        b.push_str(&s(self.kind));
        if let Some(o) = self.origin_text {
            b.push_str(",\"origin\":");
            b.push_str(o);
        }
        b.push_str(",\"prev_hash\":");
        b.push_str(&s(self.prev_hash));
        b.push_str(",\"state\":");
        b.push_str(&s(self.state));
        b.push_str(",\"task_id\":");
        b.push_str(&opt(self.task_id));
        b.push_str(",\"time\":");
        b.push_str(&s(self.time));
        b.push_str(",\"v\":");
        b.push_str(&VERSION.to_string());
        b.push_str(",\"verdict\":");
        b.push_str(self.verdict_text);
        b.push('}');
        b
    }
}

/// Format a time the way records store it.
pub fn format_time(t: OffsetDateTime) -> String {
    let utc = t.to_offset(time::UtcOffset::UTC);
    utc.format(TIME_FORMAT)
        .unwrap_or_else(|_| "0000-00-00T00:00:00.000000Z".into())
}

/// One stored row as the stores return it.
#[derive(Debug, Clone)]
pub(crate) struct Row {
    pub id: i64,
    pub time: String,
    pub kind: String,
    pub task_id: Option<String>,
    pub state: String,
    pub prev_hash: String,
    pub hash: String,
    pub body: String,
    /// The stored signature over `hash` (JSON text), if any.
    pub signature: Option<String>,
}

/// A stored row with its indexed columns packed as a JSON array
/// `[time, kind, task_id, state, prev_hash, signature]`.
#[derive(Debug, Clone)]
pub(crate) struct PackedRow {
    pub id: i64,
    pub hash: String,
    pub cols: String,
    pub body: String,
}

impl PackedRow {
    pub(crate) fn unpack(self) -> Result<Row, Break> {
        type Cols = (
            String,
            String,
            Option<String>,
            String,
            String,
            Option<String>,
        );
        let (time, kind, task_id, state, prev_hash, signature): Cols =
            serde_json::from_str(&self.cols).map_err(|e| Break {
                id: u64::try_from(self.id).unwrap_or(0),
                reason: format!(
                    "record {}: its indexed columns cannot be read: {e}",
                    self.id
                ),
            })?;
        Ok(Row {
            id: self.id,
            time,
            kind,
            task_id,
            state,
            prev_hash,
            hash: self.hash,
            body: self.body,
            signature,
        })
    }
}

#[derive(Deserialize)]
struct BodyView<'a> {
    v: u32,
    id: u64,
    #[serde(borrow)]
    time: std::borrow::Cow<'a, str>,
    #[serde(borrow)]
    kind: std::borrow::Cow<'a, str>,
    #[serde(borrow)]
    task_id: Option<std::borrow::Cow<'a, str>>,
    #[serde(borrow)]
    state: std::borrow::Cow<'a, str>,
    #[serde(borrow)]
    claim_digest: std::borrow::Cow<'a, str>,
    #[serde(borrow)]
    contract_digest: Option<std::borrow::Cow<'a, str>>,
    #[serde(borrow)]
    claim: &'a RawValue,
    #[serde(borrow)]
    contract: &'a RawValue,
    #[serde(borrow)]
    #[allow(dead_code)]
    verdict: &'a RawValue,
    #[serde(borrow)]
    prev_hash: std::borrow::Cow<'a, str>,
}

/// Where and why the chain is broken.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Break {
    /// The id of the first record that does not verify (for a missing record, the id
    /// the chain expected there).
    pub id: u64,
    /// What is wrong with it and the likely cause (deleted, edited, truncated), for
    /// the person reading `ledger verify`.
    pub reason: String,
}

/// What `ledger verify` checks beyond the chain itself.
#[derive(Debug, Clone, Default)]
pub struct VerifyOptions {
    /// Also re-canonicalize each body (slower; catches a hand-written body whose hash
    /// was recomputed but which evident would never have written).
    pub deep: bool,
    /// Every record must be signed by a key this list gives the verifier id its
    /// signature names.
    pub trust: Option<TrustList>,
    /// Heads the chain must still hold (from signed checkpoints).
    pub checkpoints: Option<crate::attest::Expectations>,
}

/// Walks a chain in id order, one row at a time.
pub(crate) struct ChainChecker {
    expected_id: u64,
    prev_hash: String,
    pub(crate) checked: u64,
    options: VerifyOptions,
    /// Index into the checkpoints' heads of the next one to meet.
    next_head: usize,
}

impl ChainChecker {
    pub(crate) fn new(options: VerifyOptions) -> ChainChecker {
        ChainChecker {
            expected_id: 1,
            prev_hash: GENESIS.to_string(),
            checked: 0,
            options,
            next_head: 0,
        }
    }

    /// After the last row: a checkpointed head beyond the end of the chain means its
    /// tail is gone.
    pub(crate) fn finish(&self) -> Option<Break> {
        let heads = &self.options.checkpoints.as_ref()?.heads;
        let (id, hash, origin) = heads.get(self.next_head..)?.last()?;
        let have = self.checked;
        Some(Break {
            id: have + 1,
            reason: format!(
                "record {} is missing: {origin} says the ledger held {id} records with head {hash}, but it ends at record {have} (its tail was truncated, or an older copy was restored)",
                have + 1
            ),
        })
    }

    pub(crate) fn head(&self) -> Option<(u64, &str)> {
        (self.checked > 0).then(|| (self.expected_id - 1, self.prev_hash.as_str()))
    }

    /// Check the next row; the first failure is returned.
    pub(crate) fn check(&mut self, row: &Row) -> Result<(), Break> {
        let expected = self.expected_id;
        let fail = |id: u64, reason: String| Err(Break { id, reason });
        let row_id = u64::try_from(row.id).unwrap_or(0);
        if row_id != expected {
            return if row_id > expected {
                fail(
                    expected,
                    format!(
                        "record {expected} is missing (the next stored record is {row_id}): deleted"
                    ),
                )
            } else {
                fail(
                    row_id,
                    format!("record id {} out of order (expected {expected})", row.id),
                )
            };
        }
        if !hash_matches(&row.body, &row.hash) {
            let actual = hash_body(&row.body);
            return fail(
                row_id,
                format!(
                    "record {row_id} was edited: its content hashes to {actual}, but it is stored with hash {}",
                    row.hash
                ),
            );
        }
        let view: BodyView<'_> = match crate::depth::from_str(&row.body) {
            Ok(v) => v,
            Err(e) => {
                return fail(
                    row_id,
                    format!("record {row_id}: body is not a record: {e}"),
                );
            }
        };
        if view.v != VERSION {
            return fail(
                row_id,
                format!("record {row_id}: unknown record version {}", view.v),
            );
        }
        if view.id != row_id {
            return fail(
                row_id,
                format!(
                    "record {row_id} holds the content of record {} (records reordered)",
                    view.id
                ),
            );
        }
        if view.prev_hash != self.prev_hash {
            return fail(
                row_id,
                format!(
                    "record {row_id} does not follow record {}: its prev_hash is {}, but record {}'s hash is {} (a record before it was edited, deleted or reordered)",
                    expected.saturating_sub(1),
                    view.prev_hash,
                    expected.saturating_sub(1),
                    self.prev_hash
                ),
            );
        }
        if row.prev_hash != view.prev_hash
            || row.time != view.time
            || row.kind != view.kind
            || row.state != view.state
            || row.task_id.as_deref() != view.task_id.as_deref()
        {
            return fail(
                row_id,
                format!(
                    "record {row_id}: its indexed columns (time, kind, task, state) were edited and no longer match its content"
                ),
            );
        }
        if !digest_matches(view.claim.get(), &view.claim_digest) {
            return fail(
                row_id,
                format!("record {row_id}: claim_digest does not match the stored claim"),
            );
        }
        let contract_ok = match (view.contract.get(), view.contract_digest.as_deref()) {
            ("null", None) => true,
            ("null", Some(_)) | (_, None) => false,
            (text, Some(d)) => digest_matches(text, d),
        };
        if !contract_ok {
            return fail(
                row_id,
                format!("record {row_id}: contract_digest does not match the stored contract"),
            );
        }
        if let Some(trust) = &self.options.trust
            && let Err(why) =
                crate::attest::RecordSignature::check(row.signature.as_deref(), &row.hash, trust)
        {
            return fail(
                row_id,
                format!("record {row_id} was not written by a trusted key: {why}"),
            );
        }
        if let Some(cp) = &self.options.checkpoints {
            while let Some((id, hash, origin)) = cp.heads.get(self.next_head) {
                if *id > row_id {
                    break;
                }
                if *id == row_id && *hash != row.hash {
                    return fail(
                        row_id,
                        format!(
                            "record {row_id} is not the record {origin} names (hash {hash}, found {}): the ledger was rewritten from here, or replaced by another copy",
                            row.hash
                        ),
                    );
                }
                self.next_head += 1;
            }
        }
        if self.options.deep {
            match crate::depth::from_str::<Value>(&row.body) {
                Ok(v) if canonical_json(&v) == row.body => {}
                _ => {
                    return fail(
                        row_id,
                        format!("record {row_id}: body is not in canonical form"),
                    );
                }
            }
        }
        self.expected_id += 1;
        self.prev_hash = row.hash.clone();
        self.checked += 1;
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn entry(n: u32) -> NewEntry {
        NewEntry {
            kind: "verify".into(),
            task_id: Some(format!("t{n}")),
            state: "verified".into(),
            claim: json!({"task": {"id": format!("t{n}")}, "password": "pw"}).into(),
            contract: None,
            verdict: json!({"state": "verified"}).into(),
            origin: None,
        }
    }

    fn chain(n: u32) -> Vec<Row> {
        signed_chain(n, None)
    }

    fn signed_chain(n: u32, key: Option<&Key>) -> Vec<Row> {
        let mut rows: Vec<Row> = Vec::new();
        for i in 0..n {
            extend(&mut rows, entry(i), key);
        }
        rows
    }

    fn extend(rows: &mut Vec<Row>, e: NewEntry, key: Option<&Key>) {
        {
            let p = Prepared::new(e);
            let prev = rows.last().map(|r| (r.id as u64, r.hash.as_str()));
            let (rec, body, signature) = p.chain(prev, OffsetDateTime::now_utc(), key);
            rows.push(Row {
                id: rec.id as i64,
                time: rec.time,
                kind: rec.kind,
                task_id: rec.task_id,
                state: rec.state,
                prev_hash: rec.prev_hash,
                hash: rec.hash,
                body,
                signature,
            });
        }
    }

    fn check_with(rows: &[Row], options: VerifyOptions) -> Result<u64, Break> {
        let mut c = ChainChecker::new(options);
        for r in rows {
            c.check(r)?;
        }
        c.finish().map_or(Ok(c.checked), Err)
    }

    #[test]
    fn with_a_trust_list_every_record_must_be_signed_by_a_listed_key() {
        let gate = Key::from_seed("evident-gate", [7; 32]);
        let trust = TrustList {
            verifiers: vec![gate.trusted()],
        };
        let opts = || VerifyOptions {
            trust: Some(trust.clone()),
            ..VerifyOptions::default()
        };
        let mut rows = signed_chain(3, Some(&gate));
        assert_eq!(check_with(&rows, opts()), Ok(3));
        // The agent appends a well-chained record: unsigned, or signed by its own key.
        let mut unsigned = rows.clone();
        extend(&mut unsigned, entry(9), None);
        assert_eq!(check(&unsigned), Ok(4), "the chain alone cannot tell");
        let b = check_with(&unsigned, opts()).unwrap_err();
        assert_eq!(b.id, 4);
        assert!(b.reason.contains("not signed"), "{}", b.reason);
        let agent = Key::from_seed("agent", [8; 32]);
        extend(&mut rows, entry(9), Some(&agent));
        let b = check_with(&rows, opts()).unwrap_err();
        assert_eq!(b.id, 4);
        assert!(b.reason.contains("not in the trust list"), "{}", b.reason);
        // A gate signature copied onto another record does not verify.
        let mut copied = signed_chain(2, Some(&gate));
        copied[1].signature = copied[0].signature.clone();
        assert_eq!(check_with(&copied, opts()).unwrap_err().id, 2);
    }

    #[test]
    fn checkpoints_catch_a_truncated_tail_and_a_rebuilt_chain() {
        let rows = chain(4);
        let at = |id: usize| crate::attest::Expectations {
            heads: vec![(
                id as u64,
                rows[id - 1].hash.clone(),
                "checkpoint cp:1".into(),
            )],
        };
        let opts = |e| VerifyOptions {
            checkpoints: Some(e),
            ..VerifyOptions::default()
        };
        assert_eq!(check_with(&rows, opts(at(4))), Ok(4));
        assert_eq!(
            check_with(&rows, opts(at(2))),
            Ok(4),
            "later records are fine"
        );
        let b = check_with(&rows[..2], opts(at(4))).unwrap_err();
        assert_eq!(b.id, 3);
        assert!(b.reason.contains("truncated"), "{}", b.reason);
        // The same length, other records: a chain rebuilt from record 3 on.
        let mut rebuilt = rows[..2].to_vec();
        extend(&mut rebuilt, entry(7), None);
        extend(&mut rebuilt, entry(8), None);
        let b = check_with(&rebuilt, opts(at(4))).unwrap_err();
        assert_eq!(b.id, 4);
        assert!(b.reason.contains("rewritten"), "{}", b.reason);
    }

    fn check(rows: &[Row]) -> Result<u64, Break> {
        let mut c = ChainChecker::new(VerifyOptions {
            deep: true,
            ..VerifyOptions::default()
        });
        for r in rows {
            c.check(r)?;
        }
        Ok(c.checked)
    }

    #[test]
    fn the_assembled_body_is_the_canonical_json_of_the_record() {
        let origins = [None, Some(json!({"via": "http", "asked_by": "ci \"x\""}))];
        for (contract, origin) in [None, Some(json!({"b": 1, "a": "\u{1}x\"y"}))]
            .into_iter()
            .flat_map(|c| origins.clone().map(|o| (c.clone(), o)))
        {
            let mut e = entry(1);
            e.contract = contract;
            e.origin = origin;
            e.task_id = None;
            e.kind = "gate \"quoted\"".into();
            let claim = crate::redact_value(&e.claim.to_value());
            let verdict = crate::redact_value(&e.verdict.to_value());
            let p = Prepared::new(e);
            let (mut rec, body, sig) = p.chain(Some((41, "ab")), OffsetDateTime::now_utc(), None);
            assert_eq!(sig, None);
            assert_eq!((&rec.claim, &rec.verdict), (&Value::Null, &Value::Null));
            (rec.claim, rec.verdict) = (claim, verdict);
            assert_eq!(body, canonical_json(&body_value(&rec)));
            assert_eq!(rec.hash, hash_body(&body));
            assert_eq!(rec.id, 42);
        }
    }

    #[test]
    fn a_large_claim_is_redacted_and_canonical_piece_by_piece() {
        // Larger than SPLIT at the top, in `evidence` and in a secret-named member, so
        // every branch of the piecewise writer runs; small parts hold secrets too.
        let items: Vec<Value> = (0..3000)
            .map(|i| {
                json!({"z": i, "a": {"api_key": format!("k{i}"), "url": "postgres://u:pw@h/db"},
                       "\u{e9}": "Bearer abc.def", "n": [1.50, -0, 1e2], "empty_token": ""})
            })
            .collect();
        let big: Vec<Value> = (0..3000).map(|i| json!({"v": i})).collect();
        let doc = json!({"task": {"id": "t"}, "evidence": items, "session_token": big,
                         "b": {"inner": big.clone(), "password": big}});
        let text = JsonText::from_value(&doc);
        assert!(text.as_str().len() > 4 * evident_format::json::SPLIT);
        let piecewise = canonical_redacted(&text);
        assert_eq!(piecewise, canonical_json(&crate::redact_value(&doc)));
        assert!(!piecewise.contains("k17") && !piecewise.contains(":pw@"));
    }

    #[test]
    fn a_fresh_chain_verifies_and_holds_no_secret() {
        let rows = chain(5);
        assert_eq!(check(&rows), Ok(5));
        assert!(rows.iter().all(|r| !r.body.contains("\"pw\"")));
        let rec = Record::from_body(&rows[1].body, &rows[1].hash, None).unwrap();
        assert_eq!(rec.prev_hash, rows[0].hash);
        assert_eq!(rec.to_json()["hash"], json!(rows[1].hash));
    }

    #[test]
    fn edits_deletions_and_reorders_are_found() {
        let rows = chain(5);
        let mut edited = rows.clone();
        edited[2].body = edited[2].body.replace("verified", "refuted");
        assert_eq!(check(&edited).unwrap_err().id, 3);

        // Edited and re-hashed: caught at the next link.
        let mut rehashed = rows.clone();
        rehashed[2].body = rehashed[2].body.replace(
            r#""verdict":{"state":"verified"}"#,
            r#""verdict":{"state":"refuted"}"#,
        );
        assert!(rehashed[2].body.contains("refuted"));
        rehashed[2].hash = hash_body(&rehashed[2].body);
        assert_eq!(check(&rehashed).unwrap_err().id, 4);

        let mut deleted = rows.clone();
        deleted.remove(2);
        let b = check(&deleted).unwrap_err();
        assert_eq!(b.id, 3);
        assert!(b.reason.contains("missing"), "{}", b.reason);

        // Contents swapped between two ids.
        let mut swapped = rows.clone();
        let (a, b2) = (swapped[1].clone(), swapped[2].clone());
        swapped[1] = Row { id: 2, ..b2 };
        swapped[2] = Row { id: 3, ..a };
        let b = check(&swapped).unwrap_err();
        assert_eq!(b.id, 2);
        assert!(b.reason.contains("reordered"), "{}", b.reason);

        // A column edited without the body (would make `log --state` lie).
        let mut column = rows.clone();
        column[4].state = "refuted".into();
        assert_eq!(check(&column).unwrap_err().id, 5);
    }
}
