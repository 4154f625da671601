//! One pipeline for every surface (the CLI today; the service, MCP and agent hooks
//! build on it): read → collect → decide → record, returning one typed [`Decision`]
//! that [`render`] turns into a report, JSON, JUnit or Markdown.
//!
//! - [`verify`]: decide a claim document as given (its evidence, under the owner's
//!   policy when one is given).
//! - [`gate`]: run an owner's contract against the world now and decide the claim.
//!
//! A library never prints and never picks an exit code: [`Decision::status`] says
//! what the decision means for the caller, and the caller maps it.

#![warn(missing_docs)]

pub mod catalog;
pub mod record;
pub mod render;
pub mod view;

use evident_format::{ClaimDocument, JsonText, OnUnverified, Policy, Timestamp, Warning};
use evident_gate::{CheckRun, ContractDocument, Planned, Settings};
use evident_rules::{Options, State, Verdict, decide};
use evident_sign::{Key, TrustList};
use serde_json::Value;

pub use record::{Origin, Recorded, Recording};

/// What produced a decision.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Kind {
    /// `verify`: a document decided from its own evidence.
    Verify,
    /// `gate`: an owner's contract run against the world.
    Gate,
}

impl Kind {
    /// The name recorded in the ledger.
    pub fn as_str(self) -> &'static str {
        match self {
            Kind::Verify => "verify",
            Kind::Gate => "gate",
        }
    }
}

/// Where the policy a decision was made under came from.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum PolicySource {
    /// The document's own (the agent's): its `on_unverified` never lowers the exit code.
    Document,
    /// The owner's policy file (`verify --policy`), by name.
    File(String),
    /// The contract's `[policy]`, by contract name.
    Contract(String),
}

impl PolicySource {
    /// One line for the report.
    pub fn describe(&self) -> String {
        match self {
            PolicySource::Document => {
                "from the document (the agent's); its on_unverified does not lower the exit code"
                    .into()
            }
            PolicySource::File(f) => format!("from {f} (the owner's), replacing the document's"),
            PolicySource::Contract(c) => format!("from the contract {c} (the owner's)"),
        }
    }
}

/// What a decision means for whoever asked: verified, refuted, or not verified — and
/// then whether the owner's policy lets it through.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Status {
    /// Verified.
    Verified,
    /// Fresh independent evidence contradicts the claim.
    Refuted,
    /// Not verified, and the policy blocks (`on_unverified = "block"`, the default).
    Blocked,
    /// Not verified, and the owner's policy lets it through (`warn` / `record`).
    Allowed,
}

/// One decision, with everything every surface shows or records.
#[derive(Debug, Clone)]
pub struct Decision {
    /// Verify or gate.
    pub kind: Kind,
    /// The decided document: the claim as given, with the gate's evidence appended, the
    /// owner's policy and `required_checks` in place (no `verdict`: see [`render::json`]),
    /// as compact text: a large claim is held once, not as a `Value` too.
    pub document: JsonText,
    /// The same, typed (scrubbed).
    pub claim: ClaimDocument,
    /// The verdict.
    pub verdict: Verdict,
    /// Gate only: each observation the gate made.
    pub runs: Vec<CheckRun>,
    /// Gate only: every check of the contract and whether it applied.
    pub plan: Vec<Planned>,
    /// Gate only: `--only` ran a subset, so the verdict is partial evidence.
    pub partial_run: bool,
    /// Gate only: the verifier id of the gate's evidence.
    pub verifier: Option<String>,
    /// Gate only: the contract's name (its file) and its document.
    pub contract: Option<(String, Value)>,
    /// Everything a person should know beside the verdict.
    pub warnings: Vec<Warning>,
    /// Where the policy came from.
    pub policy_source: PolicySource,
    /// What an unverified verdict does.
    pub on_unverified: OnUnverified,
    /// The ledger record, when the decision was recorded.
    pub record: Option<Recorded>,
}

impl Decision {
    /// What the decision means for the caller.
    pub fn status(&self) -> Status {
        match (self.verdict.state, self.on_unverified) {
            (State::Verified, _) => Status::Verified,
            (State::Refuted, _) => Status::Refuted,
            (State::Unverified | State::Partial, OnUnverified::Block) => Status::Blocked,
            (State::Unverified | State::Partial, OnUnverified::Warn | OnUnverified::Record) => {
                Status::Allowed
            }
        }
    }
}

/// Why the pipeline could not decide (or could not record what it decided).
#[derive(Debug, thiserror::Error)]
pub enum Error {
    /// A trust list was given without the owner's policy.
    #[error(
        "a trust list needs the owner's policy: a trust list means the owner is deciding, so the owner's policy must replace the one the document carries"
    )]
    TrustWithoutPolicy,
    /// The async runtime for the probes could not start.
    #[error("cannot start the async runtime")]
    Runtime(#[source] std::io::Error),
    /// The contract's `[[trust]]` list does not load (a key that does not decode).
    #[error("contract trust list: {at}")]
    Trust {
        /// The entry (`trust[2].public_key`), after the contract's name when known.
        at: String,
        /// Why its key does not decode.
        source: evident_sign::PublicKeyError,
    },
    /// The decision was made but could not be appended to the ledger: a verdict
    /// nobody can look up later cannot be audited.
    #[error("the decision could not be recorded")]
    Record {
        /// The decision that was made (shown, then refused).
        decision: Box<Decision>,
        /// Why recording failed.
        source: record::RecordError,
    },
}

/// Inputs of [`verify`].
pub struct VerifyRequest<'a> {
    /// The parsed document.
    pub document: ClaimDocument,
    /// The decision time (default: now).
    pub now: Option<Timestamp>,
    /// With a trust list, `independent` evidence counts only when signed by a listed
    /// key over exactly its content (and bound to this claim). Needs `policy`.
    pub trust: Option<TrustList>,
    /// The owner's policy (name, policy), replacing the document's.
    pub policy: Option<(String, Policy)>,
    /// Overrides what an unverified verdict does (the command line's word).
    pub on_unverified: Option<OnUnverified>,
    /// Report partial coverage as `partial` (policy.partial).
    pub partial: bool,
    /// Where to record the decision.
    pub recording: Recording,
    /// Signs the ledger record's hash.
    pub key: Option<&'a Key>,
}

/// Decides a claim document from its own evidence.
pub fn verify(req: VerifyRequest<'_>) -> Result<Decision, Error> {
    let VerifyRequest {
        document: mut doc,
        now,
        trust,
        policy,
        on_unverified,
        partial,
        recording,
        key,
    } = req;
    if trust.is_some() && policy.is_none() {
        return Err(Error::TrustWithoutPolicy);
    }
    let policy_source = match policy {
        Some((name, p)) => {
            if let Ok(v) = serde_json::to_value(&p) {
                doc.raw.set("policy", &v);
            }
            doc.claim.policy = Some(p);
            PolicySource::File(name)
        }
        None => PolicySource::Document,
    };
    if partial {
        doc.claim.policy.get_or_insert_with(Policy::default).partial = Some(true);
    }
    let decided_at = now.unwrap_or_else(Timestamp::now);
    let options = match &trust {
        None => Options::default(),
        Some(trust) => {
            let binding = doc.claim.binding();
            // One item at a time: the document is never a value as a whole.
            Options {
                authenticated: Some(
                    doc.raw
                        .items("evidence")
                        .map(|text| {
                            let item = evident_format::json::value_of(text);
                            evident_sign::authenticate(&item, trust).is_ok()
                                && evident_gate::run::bound_here(&item, &binding)
                        })
                        .collect(),
                ),
            }
        }
    };
    let verdict = decide(&doc.claim, &decided_at, &options);
    let warnings = render::decision_warnings(&doc, &verdict, options.authenticated.is_some());
    // The document's own on_unverified is the agent's word: only the owner's policy
    // file or the caller may let an unverified claim through.
    let on_unverified = match (on_unverified, &policy_source) {
        (Some(o), _) => o,
        (None, PolicySource::Document) => OnUnverified::Block,
        (None, _) => doc
            .claim
            .policy
            .as_ref()
            .and_then(|p| p.on_unverified)
            .unwrap_or_default(),
    };
    let document = std::mem::take(&mut doc.raw);
    let decision = Decision {
        kind: Kind::Verify,
        document,
        claim: doc,
        verdict,
        runs: Vec::new(),
        plan: Vec::new(),
        partial_run: false,
        verifier: None,
        contract: None,
        warnings,
        policy_source,
        on_unverified,
        record: None,
    };
    finish(decision, &recording, key)
}

/// Inputs of [`gate`].
pub struct GateRequest<'a> {
    /// The owner's contract, as read.
    pub contract: &'a ContractDocument,
    /// The contract's name (its file), for reports and the ledger.
    pub contract_name: String,
    /// The agent's claim.
    pub claim: ClaimDocument,
    /// How to run the checks (its `verifier_id` is replaced by the key's id when a key
    /// signs the evidence).
    pub settings: Settings,
    /// Signs each evidence item the gate collects, and the ledger record's hash.
    pub key: Option<&'a Key>,
    /// Where the key was read from (a key inside the contract root is warned about).
    pub key_path: Option<&'a std::path::Path>,
    /// Where to record the decision.
    pub recording: Recording,
    /// The snapshot file `evident snapshot` wrote before the agent ran (`gate
    /// --before`), as read; checked here against the contract, the clock and the
    /// gate's key or the contract's `[[trust]]`.
    pub before: Option<Value>,
}

/// Runs the owner's contract against the world now and decides the claim.
///
/// Blocking: the checks run on a runtime of their own, which is shut down before the
/// decision is recorded (the ledger's own I/O must not run inside it). From async code,
/// call it on a thread of its own.
pub fn gate(req: GateRequest<'_>) -> Result<Decision, Error> {
    let GateRequest {
        contract,
        contract_name,
        claim,
        mut settings,
        key,
        key_path,
        recording,
        before,
    } = req;
    if let Some(k) = key {
        settings.verifier_id = k.id().to_string();
    }
    let trust = trust_list(&contract.contract.trust).map_err(|e| match e {
        Error::Trust { at, source } => Error::Trust {
            at: format!("{contract_name}: {at}"),
            source,
        },
        e => e,
    })?;
    let authenticate = |item: &Value| {
        trust
            .as_ref()
            .is_some_and(|t| evident_sign::authenticate(item, t).is_ok())
    };
    let sign = |item: &Value| key.and_then(|k| evident_sign::sign_evidence(item, k).ok());
    let root = settings.context.root.clone();
    let before = before
        .map(|doc| check_snapshot(&doc, &contract.contract, key, recording.ledger.as_deref()));
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()
        .map_err(Error::Runtime)?;
    let outcome = runtime.block_on(evident_gate::run::run_with_before(
        &contract.contract,
        claim,
        &settings,
        before.as_ref(),
        &authenticate,
        &sign,
    ));
    drop(runtime);
    let mut warnings = render::decision_warnings(&outcome.claim, &outcome.verdict, true);
    warnings.extend(outcome.warnings.iter().cloned());
    warnings.extend(recording.placement_warnings(key_path, &root));
    let decision = Decision {
        kind: Kind::Gate,
        document: outcome.document,
        claim: outcome.claim,
        verdict: outcome.verdict,
        runs: outcome.runs,
        plan: outcome.plan,
        partial_run: outcome.partial,
        verifier: Some(settings.verifier_id.clone()),
        contract: Some((contract_name.clone(), contract.public_raw())),
        warnings,
        policy_source: PolicySource::Contract(contract_name),
        on_unverified: outcome.on_unverified,
        record: None,
    };
    finish(decision, &recording, key)
}

/// The ledger kind of a snapshot's record (`evident snapshot` without a key).
pub const SNAPSHOT_KIND: &str = "snapshot";

/// `sha256:` of a snapshot document's canonical JSON: what its ledger record holds.
pub fn snapshot_digest(doc: &Value) -> String {
    evident_ledger::record::digest(&evident_sign::canonical_json(doc))
}

/// Records an unsigned snapshot in the ledger at `ledger` (the default location when
/// `None`): its digest, its contract and when it was taken — hashes only, like the
/// file. The record's id and the ledger's location.
pub fn record_snapshot(
    doc: &Value,
    ledger: Option<&str>,
) -> Result<(u64, String), evident_ledger::Error> {
    let opened = evident_ledger::open(ledger)?;
    let entry = evident_ledger::NewEntry {
        kind: SNAPSHOT_KIND.into(),
        task_id: None,
        state: "recorded".into(),
        claim: serde_json::json!({
            "snapshot": snapshot_digest(doc),
            "contract": doc.get("contract"),
            "taken_at": doc.get("taken_at"),
        })
        .into(),
        contract: None,
        verdict: serde_json::json!({ "state": "recorded" }).into(),
        origin: None,
    };
    let r = opened.append(entry)?;
    Ok((r.id, opened.location().to_string()))
}

/// Whether an unsigned snapshot's digest is recorded in the ledger at `ledger` for the
/// contract it names, by a record no older than `max_age_s`.
fn snapshot_recorded(
    doc: &Value,
    ledger: Option<&str>,
    max_age_s: f64,
) -> Result<bool, evident_ledger::Error> {
    let opened = match evident_ledger::open_existing(ledger) {
        Ok(l) => l,
        Err(e) if e.kind == evident_ledger::ErrorKind::NotFound => return Ok(false),
        Err(e) => return Err(e),
    };
    let now = time::OffsetDateTime::now_utc();
    // A little before the limit, so a record appended as the snapshot was taken is
    // found; the snapshot's own taken_at decides staleness.
    let since = now - time::Duration::seconds_f64(max_age_s.min(1e9) + 60.0);
    let filter = evident_ledger::Filter {
        kind: Some(SNAPSHOT_KIND.into()),
        since: Some(evident_ledger::format_time(since)),
        newest_first: true,
        limit: Some(10_000),
        ..Default::default()
    };
    let digest = snapshot_digest(doc);
    let records = opened.list(&filter)?;
    Ok(records.iter().any(|r| {
        r.claim.get("snapshot").and_then(Value::as_str) == Some(digest.as_str())
            && r.claim.get("contract") == doc.get("contract")
    }))
}

/// A snapshot file checked for `contract` now: signed by the gate's own key or a
/// `[[snapshot_signer]]` of the contract (never a `[[trust]]` key: those vouch for
/// evidence, not for the state before the agent ran), or unsigned and recorded in
/// the gate's ledger at `ledger`; for this contract, fresh.
pub fn check_snapshot(
    doc: &Value,
    contract: &evident_gate::Contract,
    key: Option<&Key>,
    ledger: Option<&str>,
) -> Result<evident_gate::snapshot::Before, evident_gate::snapshot::SnapshotError> {
    let mut entries = contract.snapshot_signers.clone();
    if let Some(k) = key {
        entries.push(evident_gate::contract::TrustedVerifier {
            id: k.id().to_string(),
            public_key: k.public_key_base64(),
        });
    }
    let trust = trust_list(&entries)
        .map_err(|e| evident_gate::snapshot::SnapshotError(evident_format::chain(&e)))?;
    let authenticate = |v: &Value| {
        trust
            .as_ref()
            .is_some_and(|t| evident_sign::authenticate(v, t).is_ok())
    };
    let max_age = contract
        .snapshot_max_age_s
        .unwrap_or(evident_gate::snapshot::DEFAULT_MAX_AGE_S);
    let recorded = |v: &Value| snapshot_recorded(v, ledger, max_age).map_err(Into::into);
    evident_gate::snapshot::check(
        doc,
        contract,
        &Timestamp::now(),
        &evident_gate::snapshot::Provenance {
            authenticate: &authenticate,
            recorded: &recorded,
        },
    )
}

/// The trust list a contract embeds, if any.
pub fn trust_list(
    entries: &[evident_gate::contract::TrustedVerifier],
) -> Result<Option<TrustList>, Error> {
    if entries.is_empty() {
        return Ok(None);
    }
    let mut verifiers = Vec::with_capacity(entries.len());
    for (i, e) in entries.iter().enumerate() {
        let public_key =
            evident_sign::parse_public_key(&e.public_key).map_err(|source| Error::Trust {
                at: format!("trust[{i}].public_key"),
                source,
            })?;
        verifiers.push(evident_sign::TrustedVerifier {
            id: e.id.clone(),
            public_key,
        });
    }
    Ok(Some(TrustList { verifiers }))
}

/// Records the decision (unless recording is off) and hands it back.
fn finish(
    mut decision: Decision,
    recording: &Recording,
    key: Option<&Key>,
) -> Result<Decision, Error> {
    match recording.record(&decision, key) {
        Ok(r) => {
            decision.record = r;
            Ok(decision)
        }
        Err(source) => Err(Error::Record {
            decision: Box::new(decision),
            source,
        }),
    }
}

#[cfg(test)]
mod trust_tests {
    use super::trust_list;
    use evident_gate::contract::TrustedVerifier;

    #[test]
    fn a_bad_key_names_its_trust_entry() {
        let entry = |key: &str| TrustedVerifier {
            id: "ci".into(),
            public_key: key.into(),
        };
        let good = evident_sign::Key::generate("ci").public_key_base64();
        let e = trust_list(&[entry(&good), entry("7d5bde8a")]).unwrap_err();
        assert!(e.to_string().contains("trust[1].public_key"), "{e}");
        assert!(!e.to_string().contains("verifiers"), "{e}");
        let list = trust_list(&[entry(&good)]).unwrap().unwrap();
        assert_eq!(list.verifiers.len(), 1);
        assert!(trust_list(&[]).unwrap().is_none());
    }
}
