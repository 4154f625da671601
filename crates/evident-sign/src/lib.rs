//! Ed25519 keys, DSSE envelopes over evidence items, trust lists, and authentication.
//!
//! # Key files
//! `evident key generate --out PATH` writes two JSON files:
//! - `PATH` (mode 0600), the private key:
//!   `{"type": "evident-ed25519-private-key", "version": 1, "id": "<verifier id>",
//!     "public_key": "<base64 of the 32-byte public key>",
//!     "private_key": "<base64 of the 32-byte Ed25519 seed>"}`
//! - `PATH.pub`, the public key, which is also a ready trust-list entry:
//!   `{"id": "<verifier id>", "public_key": "<base64>"}`.
//!
//! Base64 is the standard alphabet with padding (RFC 4648 § 4).
//!
//! # Envelopes
//! An evidence item is signed by putting a DSSE envelope in its `signature` field:
//! `{"payloadType": "application/vnd.evident.evidence+json", "payload": "<base64>",
//!   "signatures": [{"keyid": "sha256:<hex of SHA-256 of the public key>", "sig": "<base64>"}]}`.
//! The payload is the item's canonical JSON (see [`crate::canonical_json`]) with the
//! `signature` field removed; the signature is Ed25519 over DSSE's pre-authentication
//! encoding `"DSSEv1" SP len(type) SP type SP len(payload) SP payload`.

#![warn(missing_docs)]

use std::path::{Path, PathBuf};

use base64::Engine as _;
use base64::engine::general_purpose::STANDARD as B64;
use ed25519_dalek::{Signature, Signer as _, SigningKey, VerifyingKey};
use serde::Deserialize;
use serde_json::{Map, Value};
use sha2::{Digest as _, Sha256};

pub mod canon;

pub use canon::{CanonError, canonical_json, canonical_json_rfc8785, canonical_number};

/// The DSSE payload type of a signed evidence item.
pub const PAYLOAD_TYPE: &str = "application/vnd.evident.evidence+json";
/// The `type` field of a private key file.
pub const PRIVATE_KEY_TYPE: &str = "evident-ed25519-private-key";

/// A key file could not be read, parsed or written.
#[derive(Debug, thiserror::Error)]
pub enum KeyError {
    /// The file could not be read (missing, unreadable).
    #[error("cannot read key file {path}")]
    Read {
        /// The key file, as the user named it.
        path: String,
        /// What the operating system said.
        source: std::io::Error,
    },
    /// A key file could not be created or written.
    #[error("cannot write key file {path}")]
    Write {
        /// The file being written (the private key or its `.pub`).
        path: String,
        /// What the operating system said.
        source: std::io::Error,
    },
    /// A key file already exists: generating never replaces a key someone may rely on.
    #[error("{path} already exists; refusing to overwrite a key (remove it first)")]
    Exists {
        /// The file that is in the way.
        path: String,
    },
    /// The file is not JSON of the private key's shape.
    #[error("key file {path} is not a valid evident private key")]
    Json {
        /// The key file, as the user named it.
        path: String,
        /// serde_json's message names a line and column, never the value.
        source: serde_json::Error,
    },
    /// The file is not an evident private key, or its halves do not belong together.
    #[error("key file {path} is not a valid evident private key: {why}")]
    Invalid {
        /// The key file, as the user named it.
        path: String,
        /// What is wrong; never the key material.
        why: String,
    },
}

/// A signature could not be made.
#[derive(Debug, thiserror::Error)]
pub enum SignError {
    /// Only a JSON object has a `signature` field to carry the envelope.
    #[error("an evidence item to sign must be a JSON object, found {found}")]
    NotAnObject {
        /// The JSON type given instead (`an array`, `a string`, …).
        found: &'static str,
    },
}

/// An Ed25519 signing key with the verifier id it signs as.
#[derive(Clone)]
pub struct Key {
    id: String,
    key: SigningKey,
}

impl std::fmt::Debug for Key {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        // Never the private half.
        f.debug_struct("Key")
            .field("id", &self.id)
            .field("public_key", &self.public_key_base64())
            .finish()
    }
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct KeyFile {
    #[serde(rename = "type")]
    kind: String,
    version: u32,
    id: String,
    public_key: String,
    private_key: String,
}

impl Key {
    /// A fresh key from the operating system's random source.
    pub fn generate(id: &str) -> Key {
        let key = SigningKey::generate(&mut rand::rngs::OsRng);
        Key {
            id: id.to_string(),
            key,
        }
    }

    /// A key from its 32-byte seed (tests, and keys held elsewhere).
    pub fn from_seed(id: &str, seed: [u8; 32]) -> Key {
        Key {
            id: id.to_string(),
            key: SigningKey::from_bytes(&seed),
        }
    }

    /// An Ed25519 signature over DSSE's pre-authentication encoding of `payload` as
    /// `payload_type` ([`pae`]): what the ledger's record and checkpoint signatures
    /// are, without the private key leaving this crate.
    pub fn sign_pae(&self, payload_type: &str, payload: &[u8]) -> Signature {
        self.key.sign(&pae(payload_type, payload))
    }

    /// The verifier id this key signs as (the `id` of its trust-list entry).
    pub fn id(&self) -> &str {
        &self.id
    }

    /// The public key, base64 of its 32 bytes.
    pub fn public_key_base64(&self) -> String {
        B64.encode(self.key.verifying_key().as_bytes())
    }

    /// The public half as a trust-list entry.
    pub fn trusted(&self) -> TrustedVerifier {
        TrustedVerifier {
            id: self.id.clone(),
            public_key: self.key.verifying_key(),
        }
    }

    /// `sha256:<hex>` of the public key: the DSSE `keyid` hint.
    pub fn keyid(&self) -> String {
        keyid(&self.key.verifying_key())
    }

    /// The private key file's contents (JSON). Holds the secret: write it 0600.
    pub fn to_private_json(&self) -> String {
        let v = serde_json::json!({
            "type": PRIVATE_KEY_TYPE,
            "version": 1,
            "id": self.id,
            "public_key": self.public_key_base64(),
            "private_key": B64.encode(self.key.to_bytes()),
        });
        let mut s = serde_json::to_string_pretty(&v).unwrap_or_default();
        s.push('\n');
        s
    }

    /// The public key file's contents (JSON), a trust-list entry.
    pub fn to_public_json(&self) -> String {
        let v = serde_json::json!({ "id": self.id, "public_key": self.public_key_base64() });
        let mut s = serde_json::to_string_pretty(&v).unwrap_or_default();
        s.push('\n');
        s
    }

    /// Parse a private key file's contents; `path` only names it in errors.
    pub fn from_private_json(text: &str, path: &str) -> Result<Key, KeyError> {
        let invalid = |why: String| KeyError::Invalid {
            path: path.to_string(),
            why,
        };
        // serde_json's messages name a line and column, never the value.
        let file: KeyFile = serde_json::from_str(text).map_err(|source| KeyError::Json {
            path: path.to_string(),
            source,
        })?;
        if file.kind != PRIVATE_KEY_TYPE {
            return Err(invalid(format!(
                "`type` is {:?}, expected {PRIVATE_KEY_TYPE:?}",
                file.kind
            )));
        }
        if file.version != 1 {
            return Err(invalid(format!("unsupported `version` {}", file.version)));
        }
        let seed = B64
            .decode(file.private_key.trim())
            .ok()
            .and_then(|b| <[u8; 32]>::try_from(b.as_slice()).ok())
            .ok_or_else(|| invalid("`private_key` is not base64 of 32 bytes".into()))?;
        let key = Key {
            id: file.id,
            key: SigningKey::from_bytes(&seed),
        };
        let public = parse_public_key(&file.public_key)
            .map_err(|why| invalid(format!("`public_key`: {why}")))?;
        if public != key.key.verifying_key() {
            return Err(invalid(
                "`public_key` does not belong to `private_key` (the file was edited)".into(),
            ));
        }
        Ok(key)
    }

    /// Load a private key file.
    pub fn load(path: &Path) -> Result<Key, KeyError> {
        let shown = path.display().to_string();
        let text = std::fs::read_to_string(path).map_err(|source| KeyError::Read {
            path: shown.clone(),
            source,
        })?;
        Key::from_private_json(&text, &shown)
    }

    /// Write `path` (private, 0600, created new) and `path.pub` (public). Refuses to
    /// overwrite either. Returns the public file's path.
    pub fn write_files(&self, path: &Path) -> Result<PathBuf, KeyError> {
        let mut pub_path = path.as_os_str().to_owned();
        pub_path.push(".pub");
        let pub_path = PathBuf::from(pub_path);
        for p in [path, pub_path.as_path()] {
            if p.exists() {
                return Err(KeyError::Exists {
                    path: p.display().to_string(),
                });
            }
        }
        write_new(path, self.to_private_json().as_bytes(), true)?;
        write_new(&pub_path, self.to_public_json().as_bytes(), false)?;
        Ok(pub_path)
    }
}

fn write_new(path: &Path, bytes: &[u8], private: bool) -> Result<(), KeyError> {
    use std::io::Write as _;
    let err = |source| KeyError::Write {
        path: path.display().to_string(),
        source,
    };
    let mut opts = std::fs::OpenOptions::new();
    opts.write(true).create_new(true);
    #[cfg(unix)]
    {
        use std::os::unix::fs::OpenOptionsExt as _;
        opts.mode(if private { 0o600 } else { 0o644 });
    }
    #[cfg(not(unix))]
    let _ = private;
    let mut f = opts.open(path).map_err(err)?;
    f.write_all(bytes).map_err(err)?;
    f.sync_all().map_err(err)?;
    Ok(())
}

fn keyid(key: &VerifyingKey) -> String {
    format!("sha256:{}", hex::encode(Sha256::digest(key.as_bytes())))
}

/// Why a text is not a base64 Ed25519 public key.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum PublicKeyError {
    /// The text is not standard base64 with padding.
    #[error("not standard base64")]
    NotBase64,
    /// The bytes are not 32 long.
    #[error("decodes to {len} bytes, an Ed25519 key has 32")]
    WrongLength {
        /// How many bytes the text decodes to.
        len: usize,
    },
    /// The 32 bytes are not a point on the curve.
    #[error("not a valid Ed25519 point")]
    NotAPoint,
}

/// Parse a base64 Ed25519 public key (32 bytes).
pub fn parse_public_key(text: &str) -> Result<VerifyingKey, PublicKeyError> {
    let bytes = B64
        .decode(text.trim())
        .map_err(|_| PublicKeyError::NotBase64)?;
    let arr = <[u8; 32]>::try_from(bytes.as_slice())
        .map_err(|_| PublicKeyError::WrongLength { len: bytes.len() })?;
    VerifyingKey::from_bytes(&arr).map_err(|_| PublicKeyError::NotAPoint)
}

/// DSSE pre-authentication encoding.
pub fn pae(payload_type: &str, payload: &[u8]) -> Vec<u8> {
    let mut out = Vec::with_capacity(payload.len() + payload_type.len() + 32);
    out.extend_from_slice(b"DSSEv1 ");
    out.extend_from_slice(payload_type.len().to_string().as_bytes());
    out.push(b' ');
    out.extend_from_slice(payload_type.as_bytes());
    out.push(b' ');
    out.extend_from_slice(payload.len().to_string().as_bytes());
    out.push(b' ');
    out.extend_from_slice(payload);
    out
}

/// The item without its `signature` field, as the canonical bytes a signature covers.
fn signed_content(item: &Map<String, Value>) -> String {
    let mut copy = item.clone();
    copy.shift_remove("signature");
    canonical_json(&Value::Object(copy))
}

/// The DSSE envelope over `item` (its `signature` field, if any, left out).
pub fn sign_evidence(item: &Value, key: &Key) -> Result<Value, SignError> {
    let Value::Object(map) = item else {
        return Err(SignError::NotAnObject {
            found: evident_format::claim::json_type_name(item),
        });
    };
    let payload = signed_content(map);
    let sig: Signature = key.key.sign(&pae(PAYLOAD_TYPE, payload.as_bytes()));
    Ok(serde_json::json!({
        "payloadType": PAYLOAD_TYPE,
        "payload": B64.encode(payload.as_bytes()),
        "signatures": [{ "keyid": key.keyid(), "sig": B64.encode(sig.to_bytes()) }],
    }))
}

/// Sign `item` and store the envelope in its `signature` field.
pub fn attach_signature(item: &mut Value, key: &Key) -> Result<(), SignError> {
    let envelope = sign_evidence(item, key)?;
    if let Value::Object(map) = item {
        map.insert("signature".into(), envelope);
    }
    Ok(())
}

/// One trusted verifier: evidence whose `verifier.id` is `id` must be signed by
/// `public_key`. An id may be listed more than once (key rotation).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct TrustedVerifier {
    /// The `verifier.id` this key may sign evidence as.
    pub id: String,
    /// The Ed25519 key a signature must verify with.
    pub public_key: VerifyingKey,
}

impl TrustedVerifier {
    /// The public key, base64.
    pub fn public_key_base64(&self) -> String {
        B64.encode(self.public_key.as_bytes())
    }
}

/// A trust list: `{"verifiers": [{"id": ..., "public_key": ...}]}` (JSON or TOML).
/// A single entry (the `.pub` file `evident key generate` writes) is also accepted.
/// Deserializes from the same shape, so a contract can embed it.
#[derive(Debug, Clone, Default, PartialEq, Eq, Deserialize)]
#[serde(try_from = "TrustListFile")]
pub struct TrustList {
    /// Every trusted (id, key) pair, in file order; an empty list trusts no one.
    pub verifiers: Vec<TrustedVerifier>,
}

#[derive(Deserialize)]
#[serde(untagged)]
enum TrustListFile {
    List(TrustListShape),
    Single(EntryShape),
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct TrustListShape {
    verifiers: Vec<EntryShape>,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct EntryShape {
    id: String,
    public_key: String,
}

/// A trust list could not be read or parsed.
#[derive(Debug, thiserror::Error)]
pub enum TrustError {
    /// The file could not be read (missing, unreadable).
    #[error("cannot read trust list {path}")]
    Read {
        /// The trust list, as the user named it.
        path: String,
        /// What the operating system said.
        source: std::io::Error,
    },
    /// The file is not a trust list, or an entry's key does not decode.
    #[error("trust list {path}")]
    Invalid {
        /// The trust list, as the user named it.
        path: String,
        /// What is wrong, naming the entry (`verifiers[2].public_key: …`).
        source: TrustListError,
    },
}

/// A text or value is not a trust list. Its message quotes the parser's (a leaf: the
/// parser's message comes before the expected shape, so it is not a separate cause).
#[derive(Debug, thiserror::Error)]
pub enum TrustListError {
    /// JSON text that does not parse as a trust list.
    #[error(
        "not a trust list ({error}); expected {{\"verifiers\": [{{\"id\": ..., \"public_key\": ...}}]}}"
    )]
    Json {
        /// serde_json's error, naming the line and column (and the entry, for a bad key).
        error: serde_json::Error,
    },
    /// TOML text that does not parse as a trust list.
    #[error(
        "not a trust list ({}); expected [[verifiers]] tables with id and public_key",
        error.message()
    )]
    Toml {
        /// The TOML parser's error (its one-line message is shown, not its snippet).
        error: toml::de::Error,
    },
    /// A JSON value (embedded in another document) that is not a trust list.
    #[error(transparent)]
    Value(serde_json::Error),
}

/// One trust-list entry is unusable; serde quotes this message, so it is a leaf.
#[derive(Debug, thiserror::Error)]
pub enum TrustEntryError {
    /// The entry's `id` is the empty string.
    #[error("{at}id is empty")]
    EmptyId {
        /// `verifiers[i].`, or nothing for a single entry.
        at: String,
    },
    /// The entry's `public_key` does not decode.
    #[error("{at}public_key: {error}")]
    PublicKey {
        /// `verifiers[i].`, or nothing for a single entry.
        at: String,
        /// Why the key does not decode.
        error: PublicKeyError,
    },
}

impl TryFrom<TrustListFile> for TrustList {
    type Error = TrustEntryError;
    fn try_from(file: TrustListFile) -> Result<Self, TrustEntryError> {
        let (entries, single) = match file {
            TrustListFile::List(l) => (l.verifiers, false),
            TrustListFile::Single(e) => (vec![e], true),
        };
        let mut verifiers = Vec::with_capacity(entries.len());
        for (i, e) in entries.into_iter().enumerate() {
            let at = if single {
                String::new()
            } else {
                format!("verifiers[{i}].")
            };
            if e.id.is_empty() {
                return Err(TrustEntryError::EmptyId { at });
            }
            let public_key = parse_public_key(&e.public_key)
                .map_err(|error| TrustEntryError::PublicKey { at, error })?;
            verifiers.push(TrustedVerifier {
                id: e.id,
                public_key,
            });
        }
        Ok(TrustList { verifiers })
    }
}

impl TrustList {
    /// Parse JSON text.
    pub fn from_json(text: &str) -> Result<TrustList, TrustListError> {
        serde_json::from_str(text).map_err(|error| TrustListError::Json { error })
    }

    /// Parse TOML text (`[[verifiers]]` tables with `id` and `public_key`).
    pub fn from_toml(text: &str) -> Result<TrustList, TrustListError> {
        toml::from_str(text).map_err(|error| TrustListError::Toml { error })
    }

    /// Parse a JSON value (for a trust list embedded in another document).
    pub fn from_value(value: &Value) -> Result<TrustList, TrustListError> {
        TrustList::deserialize(value).map_err(TrustListError::Value)
    }

    /// Read a file: TOML when it ends in `.toml`, JSON otherwise.
    pub fn load(path: &Path) -> Result<TrustList, TrustError> {
        let shown = path.display().to_string();
        let text = std::fs::read_to_string(path).map_err(|source| TrustError::Read {
            path: shown.clone(),
            source,
        })?;
        let is_toml = path
            .extension()
            .is_some_and(|e| e.eq_ignore_ascii_case("toml"));
        let parsed = if is_toml {
            TrustList::from_toml(&text)
        } else {
            TrustList::from_json(&text)
        };
        parsed.map_err(|source| TrustError::Invalid {
            path: shown,
            source,
        })
    }

    /// The keys listed for a verifier id.
    pub fn keys_for<'a>(&'a self, id: &'a str) -> impl Iterator<Item = &'a VerifyingKey> + 'a {
        self.verifiers
            .iter()
            .filter(move |v| v.id == id)
            .map(|v| &v.public_key)
    }
}

/// Why an evidence item is not authenticated by a trust list.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum AuthError {
    /// The item is not a JSON object, so it names no verifier and carries no envelope.
    #[error("the evidence item is {found}, not an object")]
    NotAnObject {
        /// The JSON type found instead.
        found: &'static str,
    },
    /// Without `verifier.id` there is no way to pick the keys that may sign it.
    #[error("the evidence item has no `verifier.id` string")]
    NoVerifierId,
    /// The item has no `signature` field: a trust list admits only signed evidence.
    #[error("the evidence item carries no `signature` envelope")]
    Unsigned,
    /// The item names a verifier the owner does not trust, however well it is signed.
    #[error("verifier {id:?} is not in the trust list")]
    UntrustedVerifier {
        /// The item's `verifier.id`.
        id: String,
    },
    /// The `signature` field is not a DSSE envelope evident can read.
    #[error("the `signature` envelope is malformed: {why}")]
    BadEnvelope {
        /// Which part is missing or does not decode.
        why: String,
    },
    /// The envelope is over something other than an evidence item (a ledger record's
    /// hash, say), so it cannot vouch for one.
    #[error("the envelope's payloadType is {found:?}, expected {PAYLOAD_TYPE:?}")]
    WrongPayloadType {
        /// The envelope's `payloadType`.
        found: String,
    },
    /// No signature verifies with any key trusted for this verifier: forged, or signed
    /// with a key the owner has not listed.
    #[error("no signature in the envelope verifies with a key the trust list gives {id:?}")]
    BadSignature {
        /// The item's `verifier.id`.
        id: String,
    },
    /// The signature is genuine but over different content: the item was edited after
    /// it was signed.
    #[error("the item differs from what was signed ({detail}); it was changed after signing")]
    ContentMismatch {
        /// The top-level fields that differ.
        detail: String,
    },
}

impl AuthError {
    /// A short stable code for reports.
    pub fn code(&self) -> &'static str {
        match self {
            AuthError::NotAnObject { .. } => "not_an_object",
            AuthError::NoVerifierId => "no_verifier_id",
            AuthError::Unsigned => "unsigned",
            AuthError::UntrustedVerifier { .. } => "untrusted_verifier",
            AuthError::BadEnvelope { .. } => "bad_envelope",
            AuthError::WrongPayloadType { .. } => "wrong_payload_type",
            AuthError::BadSignature { .. } => "bad_signature",
            AuthError::ContentMismatch { .. } => "content_mismatch",
        }
    }
}

/// Check that `item` carries, in its `signature` field, a DSSE envelope signed by a key
/// the trust list gives the item's `verifier.id`, over exactly the item's own content
/// (its canonical JSON without `signature`).
pub fn authenticate(item: &Value, trust: &TrustList) -> Result<(), AuthError> {
    let Value::Object(map) = item else {
        return Err(AuthError::NotAnObject {
            found: evident_format::claim::json_type_name(item),
        });
    };
    let id = map
        .get("verifier")
        .and_then(|v| v.get("id"))
        .and_then(Value::as_str)
        .ok_or(AuthError::NoVerifierId)?;
    let envelope = map.get("signature").ok_or(AuthError::Unsigned)?;
    let keys: Vec<&VerifyingKey> = trust.keys_for(id).collect();
    if keys.is_empty() {
        return Err(AuthError::UntrustedVerifier { id: id.to_string() });
    }
    let bad = |why: &str| AuthError::BadEnvelope {
        why: why.to_string(),
    };
    let env = envelope
        .as_object()
        .ok_or_else(|| bad("`signature` is not an object"))?;
    let payload_type = env
        .get("payloadType")
        .and_then(Value::as_str)
        .ok_or_else(|| bad("no `payloadType` string"))?;
    if payload_type != PAYLOAD_TYPE {
        return Err(AuthError::WrongPayloadType {
            found: payload_type.to_string(),
        });
    }
    let payload = env
        .get("payload")
        .and_then(Value::as_str)
        .ok_or_else(|| bad("no `payload` string"))?;
    let payload = B64
        .decode(payload)
        .map_err(|_| bad("`payload` is not standard base64"))?;
    let sigs = env
        .get("signatures")
        .and_then(Value::as_array)
        .ok_or_else(|| bad("no `signatures` array"))?;
    let message = pae(payload_type, &payload);
    let mut verified = false;
    for s in sigs {
        let Some(sig) = s
            .get("sig")
            .and_then(Value::as_str)
            .and_then(|t| B64.decode(t).ok())
            .and_then(|b| Signature::from_slice(&b).ok())
        else {
            continue;
        };
        if keys.iter().any(|k| k.verify_strict(&message, &sig).is_ok()) {
            verified = true;
            break;
        }
    }
    if !verified {
        return Err(AuthError::BadSignature { id: id.to_string() });
    }
    let content = signed_content(map);
    if content.as_bytes() != payload.as_slice() {
        return Err(AuthError::ContentMismatch {
            detail: describe_difference(map, &payload),
        });
    }
    Ok(())
}

/// Name the top-level fields that differ between the item and the signed payload.
fn describe_difference(item: &Map<String, Value>, payload: &[u8]) -> String {
    let Ok(Value::Object(signed)) = serde_json::from_slice::<Value>(payload) else {
        return "the payload is not a JSON object".into();
    };
    let mut names: Vec<&str> = Vec::new();
    for (k, v) in item {
        if k == "signature" {
            continue;
        }
        match signed.get(k) {
            Some(s) if canonical_json(s) == canonical_json(v) => {}
            _ => names.push(k),
        }
    }
    for k in signed.keys() {
        if !item.contains_key(k) {
            names.push(k);
        }
    }
    if names.is_empty() {
        "the payload is not in canonical form".into()
    } else {
        let list: Vec<String> = names.iter().map(|n| format!("`{n}`")).collect();
        format!("field {} changed", list.join(", "))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn item() -> Value {
        json!({
            "check_type": "state_readback",
            "target": "accounts/4471",
            "expected": { "billing_zip": "94107" },
            "observed_value": { "billing_zip": "94107" },
            "at": "2026-08-27T18:04:09Z",
            "covers": ["m1"],
            "verifier": { "id": "evident-gate", "kind": "independent" }
        })
    }

    fn key() -> Key {
        Key::from_seed("evident-gate", [7; 32])
    }

    fn trust() -> TrustList {
        TrustList {
            verifiers: vec![key().trusted()],
        }
    }

    fn signed() -> Value {
        let mut it = item();
        attach_signature(&mut it, &key()).unwrap();
        it
    }

    #[test]
    fn round_trip_passes() {
        assert_eq!(authenticate(&signed(), &trust()), Ok(()));
    }

    #[test]
    fn key_order_and_number_spelling_do_not_matter() {
        // The same content re-written: keys in another order, 94107 as 94107.0.
        let mut it = json!({
            "verifier": { "kind": "independent", "id": "evident-gate" },
            "n": 1.0,
        });
        let env = sign_evidence(&it, &key()).unwrap();
        it = json!({ "n": 1, "verifier": { "id": "evident-gate", "kind": "independent" } });
        it["signature"] = env;
        assert_eq!(authenticate(&it, &trust()), Ok(()));
    }

    #[test]
    fn each_tampered_field_is_detected() {
        type Tamper = Box<dyn Fn(&mut Value)>;
        let cases: Vec<(&str, Tamper)> = vec![
            (
                "value",
                Box::new(|v| v["observed_value"]["billing_zip"] = json!("94108")),
            ),
            (
                "value type",
                Box::new(|v| v["observed_value"]["billing_zip"] = json!(94107)),
            ),
            (
                "expected",
                Box::new(|v| v["expected"]["billing_zip"] = json!("00000")),
            ),
            (
                "time",
                Box::new(|v| v["at"] = json!("2026-08-27T18:04:10Z")),
            ),
            ("covers", Box::new(|v| v["covers"] = json!(["m1", "m2"]))),
            ("covers emptied", Box::new(|v| v["covers"] = json!([]))),
            ("target", Box::new(|v| v["target"] = json!("accounts/4472"))),
            (
                "check type",
                Box::new(|v| v["check_type"] = json!("test_run")),
            ),
            (
                "kind",
                Box::new(|v| v["verifier"]["kind"] = json!("self_attested")),
            ),
            ("added field", Box::new(|v| v["extra"] = json!(true))),
            (
                "removed field",
                Box::new(|v| {
                    v.as_object_mut().unwrap().shift_remove("expected");
                }),
            ),
        ];
        for (name, tamper) in cases {
            let mut it = signed();
            tamper(&mut it);
            let got = authenticate(&it, &trust());
            assert!(
                matches!(got, Err(AuthError::ContentMismatch { .. })),
                "{name}: {got:?}"
            );
        }
    }

    #[test]
    fn a_single_byte_flip_anywhere_in_a_value_fails() {
        let base = signed();
        let zip = base["observed_value"]["billing_zip"]
            .as_str()
            .unwrap()
            .to_string();
        for i in 0..zip.len() {
            let mut bytes = zip.clone().into_bytes();
            bytes[i] ^= 1;
            let mut it = base.clone();
            it["observed_value"]["billing_zip"] = json!(String::from_utf8(bytes).unwrap());
            assert!(authenticate(&it, &trust()).is_err(), "byte {i}");
        }
    }

    #[test]
    fn numbers_beyond_double_precision_are_bound_exactly() {
        let mut it = json!({ "observed_value": { "n": 9007199254740993u64 },
            "verifier": { "id": "evident-gate", "kind": "independent" } });
        attach_signature(&mut it, &key()).unwrap();
        assert_eq!(authenticate(&it, &trust()), Ok(()));
        it["observed_value"]["n"] = json!(9007199254740992u64);
        assert!(matches!(
            authenticate(&it, &trust()),
            Err(AuthError::ContentMismatch { .. })
        ));
    }

    #[test]
    fn forged_items_fail() {
        // No signature at all.
        assert_eq!(authenticate(&item(), &trust()), Err(AuthError::Unsigned));
        // Signed by a key the trust list does not give this id.
        let mut it = item();
        attach_signature(&mut it, &Key::from_seed("evident-gate", [8; 32])).unwrap();
        assert!(matches!(
            authenticate(&it, &trust()),
            Err(AuthError::BadSignature { .. })
        ));
        // A listed key, but the item claims another verifier id.
        let mut it = item();
        it["verifier"]["id"] = json!("someone-else");
        attach_signature(&mut it, &key()).unwrap();
        assert!(matches!(
            authenticate(&it, &trust()),
            Err(AuthError::UntrustedVerifier { .. })
        ));
        // A valid envelope copied from another item.
        let other = signed();
        let mut it = item();
        it["observed_value"]["billing_zip"] = json!("10001");
        it["signature"] = other["signature"].clone();
        assert!(matches!(
            authenticate(&it, &trust()),
            Err(AuthError::ContentMismatch { .. })
        ));
        // The payload swapped but the signature kept.
        let mut it = signed();
        let forged = B64.encode(b"{}");
        it["signature"]["payload"] = json!(forged);
        assert!(matches!(
            authenticate(&it, &trust()),
            Err(AuthError::BadSignature { .. })
        ));
        // Wrong payload type.
        let mut it = signed();
        it["signature"]["payloadType"] = json!("application/json");
        assert!(matches!(
            authenticate(&it, &trust()),
            Err(AuthError::WrongPayloadType { .. })
        ));
        // Garbage envelopes never panic.
        for env in [
            json!(null),
            json!("x"),
            json!({}),
            json!({"payloadType": PAYLOAD_TYPE, "payload": "!!", "signatures": []}),
            json!({"payloadType": PAYLOAD_TYPE, "payload": "e30=", "signatures": [{"sig": 5}, {"sig": "AAAA"}]}),
        ] {
            let mut it = item();
            it["signature"] = env;
            assert!(authenticate(&it, &trust()).is_err());
        }
        assert!(authenticate(&json!([1]), &trust()).is_err());
        // An empty trust list authenticates nothing.
        assert!(authenticate(&signed(), &TrustList::default()).is_err());
    }

    #[test]
    fn key_files_round_trip_and_reject_edits() {
        let k = key();
        let text = k.to_private_json();
        let back = Key::from_private_json(&text, "k.json").unwrap();
        assert_eq!(back.public_key_base64(), k.public_key_base64());
        assert_eq!(back.id(), "evident-gate");
        let edited = text.replace(
            &k.public_key_base64(),
            &Key::from_seed("x", [9; 32]).public_key_base64(),
        );
        let err = Key::from_private_json(&edited, "k.json")
            .unwrap_err()
            .to_string();
        assert!(err.contains("does not belong"), "{err}");
        let err = Key::from_private_json("{}", "k.json")
            .unwrap_err()
            .to_string();
        assert!(err.contains("k.json"), "{err}");
        // The debug form never shows the private half.
        let secret = B64.encode(k.key.to_bytes());
        assert!(!format!("{k:?}").contains(&secret));
    }

    #[test]
    fn trust_lists_parse_from_json_toml_and_a_pub_file() {
        let k = key();
        let json_text = format!(
            r#"{{"verifiers": [{{"id": "evident-gate", "public_key": "{}"}}]}}"#,
            k.public_key_base64()
        );
        let toml_text = format!(
            "[[verifiers]]\nid = \"evident-gate\"\npublic_key = \"{}\"\n",
            k.public_key_base64()
        );
        let a = TrustList::from_json(&json_text).unwrap();
        let b = TrustList::from_toml(&toml_text).unwrap();
        let c = TrustList::from_json(&k.to_public_json()).unwrap();
        assert_eq!(a, b);
        assert_eq!(a, c);
        let err = TrustList::from_json(r#"{"verifiers": [{"id": "a", "public_key": "AAAA"}]}"#)
            .unwrap_err()
            .to_string();
        assert!(err.contains("verifiers[0].public_key"), "{err}");
        assert!(TrustList::from_json(r#"{"verifiers": [{"id": "a"}]}"#).is_err());
        assert!(TrustList::from_toml("verifiers = 3").is_err());
    }
}
