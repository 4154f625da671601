//! The contracts a service holds (`evident serve --contracts DIR`, `evident mcp`):
//! `DIR/NAME.toml` or `DIR/NAME.json`, by name only. A client names a contract, never a
//! path: names are plain (`[A-Za-z0-9][A-Za-z0-9_-]{0,63}`), so `..`, `/` and
//! dots never reach the file system. A contract runs with its own directory as root:
//! the directory of the file after symbolic links (an owner can link
//! `DIR/billing.toml` to `/srv/billing/contract.toml`).
//!
//! The views ([`ContractView`], [`ContractSummary`]) are what an agent may see: checks
//! marked `hidden = true` are left out (only counted) and secrets are removed.

use evident_gate::ContractDocument;
use schemars::JsonSchema;
use serde::Serialize;
use serde_json::{Map, Value};
use std::collections::HashMap;
use std::io::Read as _;
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex};

/// Largest contract file read.
pub const MAX_CONTRACT_BYTES: u64 = 1024 * 1024;

/// Whether `name` may name a served contract.
pub fn valid_name(name: &str) -> bool {
    let b = name.as_bytes();
    !b.is_empty()
        && b.len() <= 64
        && b[0].is_ascii_alphanumeric()
        && b.iter()
            .all(|c| c.is_ascii_alphanumeric() || *c == b'_' || *c == b'-')
}

/// Why a contract could not be served.
#[derive(Debug, Clone, thiserror::Error)]
pub enum CatalogError {
    /// The name is not a plain contract name (a path, dots, too long, …).
    #[error(
        "{0:?} is not a contract name: names are 1-64 letters, digits, '_' or '-', starting with a letter or digit (never a path)"
    )]
    BadName(String),
    /// No `NAME.toml` or `NAME.json` in the directory.
    #[error("no contract named {0:?}")]
    NotFound(String),
    /// Both `NAME.toml` and `NAME.json` exist.
    #[error("contract {0:?} exists as both .toml and .json; the owner must remove one")]
    Ambiguous(String),
    /// The file does not load (its full message goes to the server's log only: it
    /// names server paths).
    #[error("contract {name:?} does not load: {message}")]
    Invalid {
        /// The contract's name.
        name: String,
        /// What is wrong (names the file and JSON path).
        message: String,
    },
}

/// The contracts directory.
#[derive(Debug, Clone)]
pub struct Catalog {
    dir: PathBuf,
    /// One lock per contract root, shared by every clone (the HTTP API and the MCP
    /// endpoint of one server take the same lock).
    roots: Arc<Mutex<HashMap<PathBuf, Arc<tokio::sync::Mutex<()>>>>>,
}

/// One contract, loaded for a gate.
#[derive(Debug, Clone)]
pub struct Served {
    /// Its name.
    pub name: String,
    /// The contract as read.
    pub document: ContractDocument,
    /// Its root: the directory holding the file (after symbolic links).
    pub root: PathBuf,
    /// `sha256:<hex>` of the contract's canonical JSON with secrets removed: the
    /// `contract_digest` its ledger records carry.
    pub digest: String,
}

impl Catalog {
    /// The catalog of `dir` (which must be a directory).
    pub fn open(dir: &Path) -> std::io::Result<Catalog> {
        let dir = dir.canonicalize()?;
        if !dir.is_dir() {
            return Err(std::io::Error::new(
                std::io::ErrorKind::NotADirectory,
                format!("{} is not a directory", dir.display()),
            ));
        }
        Ok(Catalog {
            dir,
            roots: Arc::default(),
        })
    }

    /// The lock a gate under `root` holds while it runs: gates on the same root run one
    /// at a time (one gate's commands must not change what another's after-readback
    /// sees); gates on different roots do not wait for each other.
    pub fn root_lock(&self, root: &Path) -> Arc<tokio::sync::Mutex<()>> {
        let mut m = self
            .roots
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner);
        m.entry(root.to_path_buf()).or_default().clone()
    }

    /// The directory.
    pub fn dir(&self) -> &Path {
        &self.dir
    }

    /// The names of every `NAME.toml` / `NAME.json` with a valid name, sorted.
    pub fn names(&self) -> Vec<String> {
        let mut names: Vec<String> = std::fs::read_dir(&self.dir)
            .into_iter()
            .flatten()
            .filter_map(|e| {
                let name = e.ok()?.file_name().into_string().ok()?;
                let stem = name
                    .strip_suffix(".toml")
                    .or_else(|| name.strip_suffix(".json"))?;
                valid_name(stem).then(|| stem.to_string())
            })
            .collect();
        names.sort();
        names.dedup();
        names
    }

    /// Reads the contract `name`.
    pub fn load(&self, name: &str) -> Result<Served, CatalogError> {
        if !valid_name(name) {
            return Err(CatalogError::BadName(name.to_string()));
        }
        let candidates: Vec<PathBuf> = ["toml", "json"]
            .iter()
            .map(|ext| self.dir.join(format!("{name}.{ext}")))
            .filter(|p| p.symlink_metadata().is_ok())
            .collect();
        let path = match candidates.as_slice() {
            [] => return Err(CatalogError::NotFound(name.to_string())),
            [one] => one,
            _ => return Err(CatalogError::Ambiguous(name.to_string())),
        };
        let invalid = |message: String| CatalogError::Invalid {
            name: name.to_string(),
            message,
        };
        let real = path
            .canonicalize()
            .map_err(|e| invalid(format!("{}: {e}", path.display())))?;
        // A FIFO or device would hang or flood the reader: regular files only.
        let meta = std::fs::metadata(&real).map_err(|e| invalid(format!("{e}")))?;
        if !meta.is_file() {
            return Err(invalid(format!("{} is not a regular file", real.display())));
        }
        let mut bytes = Vec::new();
        std::fs::File::open(&real)
            .and_then(|f| f.take(MAX_CONTRACT_BYTES + 1).read_to_end(&mut bytes))
            .map_err(|e| invalid(format!("{}: {e}", real.display())))?;
        if bytes.len() as u64 > MAX_CONTRACT_BYTES {
            return Err(invalid(format!(
                "{} is larger than {MAX_CONTRACT_BYTES} bytes",
                real.display()
            )));
        }
        let shown = path.display().to_string();
        let document =
            evident_gate::Contract::parse(&bytes, &shown).map_err(|e| invalid(e.to_string()))?;
        let root = real
            .parent()
            .map(Path::to_path_buf)
            .ok_or_else(|| invalid("the contract file has no directory".into()))?;
        // What the ledger records (a private check's source reduced to kinds and counts).
        let digest = contract_digest(&document.public_raw());
        Ok(Served {
            name: name.to_string(),
            document,
            root,
            digest,
        })
    }

    /// Every contract, as an agent may see it; one that does not load is listed with
    /// `error` (the detail goes to `on_error`, for the server's log).
    pub fn list(&self, on_error: &dyn Fn(&CatalogError)) -> Vec<ContractSummary> {
        self.names()
            .into_iter()
            .map(|name| match self.load(&name) {
                Ok(s) => s.summary(),
                Err(e) => {
                    on_error(&e);
                    ContractSummary {
                        name,
                        digest: None,
                        policy_id: None,
                        requires: Vec::new(),
                        checks: 0,
                        hidden_checks: 0,
                        error: Some("does not load (the server's log says why)".into()),
                    }
                }
            })
            .collect()
    }
}

/// `sha256:<hex>` of a contract as the ledger records it (secrets removed).
pub fn contract_digest(raw: &Value) -> String {
    evident_ledger::record::digest(&evident_sign::canonical_json(
        &evident_ledger::redact_value(raw),
    ))
}

/// A contract in a listing.
#[derive(Debug, Clone, Serialize, JsonSchema)]
pub struct ContractSummary {
    /// The name to gate with (`POST /v1/gate/{name}`).
    pub name: String,
    /// `sha256:<hex>` of the contract (what its decisions' `contract.digest` say).
    pub digest: Option<String>,
    /// The policy's id.
    pub policy_id: Option<String>,
    /// The check types the policy requires.
    pub requires: Vec<String>,
    /// Checks shown.
    pub checks: usize,
    /// Held-out checks (run and counted, not shown).
    pub hidden_checks: usize,
    /// Set when the contract does not load.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub error: Option<String>,
}

/// What the gate will check under a contract, as an agent may see it.
#[derive(Debug, Clone, Serialize, JsonSchema)]
pub struct ContractView {
    /// The contract's name.
    pub name: String,
    /// `sha256:<hex>` of the contract.
    pub digest: String,
    /// The policy the claim is decided under.
    pub policy: evident_format::Policy,
    /// The checks the gate runs, except held-out ones.
    pub checks: Vec<CheckView>,
    /// How many held-out checks also run (`hidden = true`): they count like any other.
    pub hidden_checks: usize,
    /// Ids of verifiers whose signed evidence the contract accepts.
    pub trusted_verifiers: Vec<String>,
}

/// One check of a [`ContractView`].
#[derive(Debug, Clone, Serialize, JsonSchema)]
pub struct CheckView {
    /// The check's id.
    pub id: String,
    /// Its check type.
    pub check_type: evident_format::CheckType,
    /// Which claimed mutations its evidence speaks for.
    pub covers: evident_gate::Covers,
    /// `always` or `when_covered`.
    pub applies: evident_gate::Applies,
    /// The source's kind (`command`, `http`, `sqlite`, …).
    pub source: String,
    /// What it observes, in words (the command, URL or query; no secret).
    pub target: String,
    /// What the observation must show.
    pub expected: Map<String, Value>,
}

impl Served {
    /// The contract as an agent may see it.
    pub fn view(&self) -> ContractView {
        let c = &self.document.contract;
        let checks = c
            .checks
            .iter()
            .filter(|k| !k.hidden)
            .map(|k| CheckView {
                id: k.id.clone(),
                check_type: k.check_type,
                covers: if k.private {
                    // A private check's covers.target may be the path it keeps private.
                    evident_gate::Covers {
                        target: k.covers.target.as_ref().map(|_| "(private)".to_string()),
                        ..k.covers.clone()
                    }
                } else {
                    k.covers.clone()
                },
                applies: k.applies,
                source: k.source.kind().to_string(),
                target: evident_ledger::redact::redact_text(&k.target()),
                expected: match evident_ledger::redact_value(&Value::Object(
                    k.expected
                        .clone()
                        .or_else(|| k.source.default_expected())
                        .unwrap_or_default(),
                )) {
                    Value::Object(m) => m,
                    _ => Map::new(),
                },
            })
            .collect();
        ContractView {
            name: self.name.clone(),
            digest: self.digest.clone(),
            policy: c.policy.clone(),
            checks,
            hidden_checks: c.checks.iter().filter(|k| k.hidden).count(),
            trusted_verifiers: c.trust.iter().map(|t| t.id.clone()).collect(),
        }
    }

    /// The contract in a listing.
    pub fn summary(&self) -> ContractSummary {
        let c = &self.document.contract;
        ContractSummary {
            name: self.name.clone(),
            digest: Some(self.digest.clone()),
            policy_id: c.policy.id.clone(),
            requires: c
                .policy
                .requires
                .iter()
                .map(|t| t.as_str().to_string())
                .collect(),
            checks: c.checks.iter().filter(|k| !k.hidden).count(),
            hidden_checks: c.checks.iter().filter(|k| k.hidden).count(),
            error: None,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A served contract's view of a private check names no path, name, key or value,
    /// and its digest is the one its ledger records carry (of the recorded, reduced copy).
    #[test]
    fn a_private_check_is_served_without_its_values() {
        let d = tempfile::tempdir().unwrap();
        let text = "[policy]\n[[check]]\nid = \"p\"\ncheck_type = \"state_readback\"\ncovers = { kind = \"file_write\", target = \"cnry9-target\" }\nprivate = true\nsource = { file = { path = \"cnry9/out.json\", postcondition = { json_object = { expected = { cnry9_key = \"cnry9-value\" } } } } }\n";
        std::fs::write(d.path().join("c.toml"), text).unwrap();
        let served = Catalog::open(d.path()).unwrap().load("c").unwrap();
        let view = serde_json::to_string(&served.view()).unwrap();
        assert!(!view.contains("cnry9"), "{view}");
        assert!(
            view.contains("json_object postcondition (private)"),
            "{view}"
        );
        assert_eq!(
            served.digest,
            contract_digest(&served.document.public_raw())
        );
        assert_ne!(served.digest, contract_digest(&served.document.raw));
        // Twin: the same check without private shows its path.
        std::fs::write(
            d.path().join("c.toml"),
            text.replace("private = true\n", ""),
        )
        .unwrap();
        let served = Catalog::open(d.path()).unwrap().load("c").unwrap();
        assert!(
            serde_json::to_string(&served.view())
                .unwrap()
                .contains("cnry9")
        );
    }

    #[test]
    fn names_are_plain_never_paths() {
        for ok in ["billing", "a", "B-2_x", &"x".repeat(64)] {
            assert!(valid_name(ok), "{ok}");
        }
        for bad in [
            "",
            ".",
            "..",
            "../x",
            "a/b",
            "a\\b",
            "a.toml",
            "-x",
            "_x",
            "x y",
            "é",
            "a\0",
            "%2e%2e",
            &"x".repeat(65),
        ] {
            assert!(!valid_name(bad), "{bad:?}");
        }
    }
}
