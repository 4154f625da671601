//! The Completion Claim v0.1 document (seed 000) as Rust types, and its strict reader.
//!
//! Reading is two passes: [`crate::json::check`] refuses malformed text and duplicate
//! keys, remembers positions and keeps the document as compact text (no `Value` of
//! it is built: a large claim is held once); then serde fills the types below from
//! that text, with the JSON path of any error tracked by `serde_path_to_error` and
//! unknown fields collected by `serde_ignored` (kept in [`ClaimDocument::raw`],
//! reported as warnings). Checks that need the whole document (duplicate mutation
//! ids, `covers` naming no mutation) run last.

use crate::json::{self, JsonText, Spans};
use crate::timestamp::Timestamp;
use crate::{Error, Warning};
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};
use serde_json::Value;
use std::collections::HashSet;
use std::fmt;

/// A Completion Claim v0.1: what an agent says it changed, and the evidence for it.
#[derive(Debug, Clone, Serialize, Deserialize, JsonSchema)]
#[schemars(title = "Completion Claim v0.1")]
pub struct Claim {
    /// Always `"0.1"`.
    pub spec_version: SpecVersion,
    /// What was asked.
    pub task: Task,
    /// What the agent asserts it did, in its own words. Recorded, never trusted.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub claimed_outcome: Option<String>,
    /// Every change the agent believes it made to the world.
    #[serde(default)]
    pub mutations: Vec<Mutation>,
    /// Observations of the world made after those changes.
    #[serde(default)]
    pub evidence: Vec<Evidence>,
    /// Which check types this class of task requires, and how fresh they must be.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub policy: Option<Policy>,
    /// A verdict written in the input is ignored and recomputed.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub verdict: Option<Value>,
    /// evident extension, written by the gate: the contract checks that applied to
    /// this task, each with the waves it was observed in. When present, only evidence of these checks counts, every
    /// one of them must be observed and satisfied, and a check with no item leaves the
    /// claim unverified (see docs/gate.md, "Checks are requirements"). Kept outside
    /// `policy` so that replacing the policy (`verify --policy`) cannot drop it.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub required_checks: Option<Vec<RequiredCheck>>,
    /// evident extension: the extensions this document uses beyond v0.1, by name. Today
    /// one: `"dom_assertion"`, which a policy may then require. Without it, a v0.1
    /// reader's refusal of an unknown check type in `policy.requires` stands.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub extensions: Vec<String>,
}

/// One contract check the task required, and the waves the gate observed it in: each
/// wave needs its own satisfying item, so dropping or forging the observation made
/// before (or after) the commands cannot leave a check looking complete.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct RequiredCheck {
    /// The check's id in the contract (the `check_id` of its evidence).
    pub id: String,
    /// The waves the check is observed in (`before`, `command`, `after`).
    pub waves: Vec<Wave>,
}

/// The only spec version this reader understands.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
pub enum SpecVersion {
    /// `"0.1"`: any other version is refused rather than read as this one.
    #[serde(rename = "0.1")]
    V0_1,
}

/// What was asked. `id` belongs to the caller.
#[derive(Debug, Clone, Serialize, Deserialize, JsonSchema)]
pub struct Task {
    /// The caller's name for the task: how records and reports of it are found again.
    pub id: String,
    /// What was asked, in words; shown to people, never decides anything.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub description: Option<String>,
    /// Who asked (a person, a ticket, a tool); shown, never decides anything.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub requested_by: Option<String>,
}

/// One change the agent believes it made.
#[derive(Debug, Clone, Serialize, Deserialize, JsonSchema)]
pub struct Mutation {
    /// Unique within the document; evidence names it in `covers`.
    pub id: String,
    /// What sort of change: `state_write`, `code_change`, `deploy`, … (free text).
    pub kind: String,
    /// What was changed (a table row, a file, a service), as the agent names it; shown only.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub target: Option<String>,
    /// When the change was made.
    pub at: Timestamp,
}

/// One observation of the world, and what it was expected to show.
#[derive(Debug, Clone, Serialize, Deserialize, JsonSchema)]
pub struct Evidence {
    /// `test_run`, `endpoint_health` or `state_readback` (other names are kept, with a warning).
    pub check_type: String,
    /// What was observed (a URL, a command, a query), for the person reading; shown only.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub target: Option<String>,
    // Both values are kept as their text (see [`JsonText`]): a claim of many items
    // costs about its size, not a tree per item.
    /// What the observation must show: a JSON object (checked after typing).
    pub expected: JsonText,
    /// What was observed. Anything but an object is no observation.
    #[serde(default)]
    pub observed_value: JsonText,
    /// When the observation completed.
    pub at: Timestamp,
    /// Ids of the mutations this observation is about.
    #[serde(default)]
    pub covers: Vec<String>,
    /// Who observed.
    pub verifier: Verifier,
    /// evident extension: why the verifier tried and could not observe. An item with
    /// an error never satisfies or contradicts.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub observation_error: Option<String>,
    /// evident extension: a DSSE envelope signing this item (see `evident key`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub signature: Option<Value>,
    /// evident extension: [`Claim::binding`] of the claim this item was collected for.
    /// Signed with the item, it stops a signed observation being replayed into
    /// another claim that happens to use the same mutation ids.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub bound_to: Option<String>,
    /// evident extension: the id of the contract check that produced this item.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub check_id: Option<String>,
    /// evident extension: when the gate made this observation relative to the
    /// contract's commands (which run the agent's code).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub wave: Option<Wave>,
    /// evident extension: the gate run this item belongs to, with the checks that run
    /// required — under the item's signature, so a document's `required_checks` cannot
    /// be edited or dropped, and items of two runs cannot be mixed.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub run: Option<GateRun>,
}

/// One gate run, as each of its signed items records it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct GateRun {
    /// Unique per run.
    pub id: String,
    /// The checks the run required, each with its waves.
    pub required_checks: Vec<RequiredCheck>,
}

/// When a gate observation was made relative to the contract's commands. A readback
/// or endpoint check is observed before the commands and again after them, so the
/// agent's code cannot have the last word on the state the gate reads.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum Wave {
    /// Before any command of the contract ran (or the contract has none).
    Before,
    /// A command's own run.
    Command,
    /// After every command of the contract finished.
    After,
}

impl Wave {
    /// The name as written in documents.
    pub fn as_str(self) -> &'static str {
        match self {
            Wave::Before => "before",
            Wave::Command => "command",
            Wave::After => "after",
        }
    }
}

/// Who collected a piece of evidence.
#[derive(Debug, Clone, Serialize, Deserialize, JsonSchema)]
pub struct Verifier {
    /// Who it was; with a trust list, the name whose key must have signed the item.
    pub id: String,
    /// Whether the observation may count at all: only `independent` can.
    pub kind: VerifierKind,
}

/// The field that does the work: only `independent` evidence can satisfy or refute.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum VerifierKind {
    /// Someone other than the agent observed: the only kind that can satisfy or refute.
    Independent,
    /// The agent checked its own work: recorded, never counted.
    SelfAttested,
    /// No check happened; the item only says so.
    Absent,
}

/// The three check types of v0.1, and evident's extension `dom_assertion` (a rendered
/// page observed in a real browser; the spec's open question 3).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum CheckType {
    /// A test suite was run and its outcome observed.
    TestRun,
    /// A service endpoint was called and its answer observed.
    EndpointHealth,
    /// The changed state (a row, a file, a key) was read back.
    StateReadback,
    /// evident extension: a claim document may require it only when it declares
    /// `"extensions": ["dom_assertion"]`; a contract may always use it.
    DomAssertion,
}

impl CheckType {
    /// Every known type, in spec order: what [`CheckType::parse`] accepts.
    pub const ALL: [CheckType; 4] = [
        CheckType::TestRun,
        CheckType::EndpointHealth,
        CheckType::StateReadback,
        CheckType::DomAssertion,
    ];

    /// The name as written in documents (`test_run`, …).
    pub fn as_str(self) -> &'static str {
        match self {
            CheckType::TestRun => "test_run",
            CheckType::EndpointHealth => "endpoint_health",
            CheckType::StateReadback => "state_readback",
            CheckType::DomAssertion => "dom_assertion",
        }
    }

    /// The extension name a claim document must declare (in `extensions`) to require
    /// this type; `None` for the v0.1 types.
    pub fn extension(self) -> Option<&'static str> {
        match self {
            CheckType::DomAssertion => Some("dom_assertion"),
            _ => None,
        }
    }

    /// The type a document's name means; `None` for a name evident does not know.
    pub fn parse(s: &str) -> Option<Self> {
        Self::ALL.into_iter().find(|c| c.as_str() == s)
    }
}

impl fmt::Display for CheckType {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

/// Which check types a class of task requires, and how fresh evidence must be.
#[derive(Debug, Clone, Default, Serialize, Deserialize, JsonSchema)]
pub struct Policy {
    /// The policy's name, shown in reports so a reader knows which one decided.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub id: Option<String>,
    /// Check types that must each be satisfied by some usable evidence to verify.
    #[serde(default)]
    pub requires: Vec<CheckType>,
    /// Evidence older than this many seconds at decision time is stale (treated as absent).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub max_age_s: Option<MaxAge>,
    /// What an `unverified` verdict does: `block` (the default) exits 3; `warn`/`record` exit 0.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub on_unverified: Option<OnUnverified>,
    /// evident extension (the spec's open question 2): with `true`, a claim in which
    /// some mutations are covered by satisfying evidence and others are not is
    /// `partial` instead of `unverified`. Off by default.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub partial: Option<bool>,
}

/// A non-negative, finite number of seconds.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, JsonSchema)]
#[schemars(transparent)]
pub struct MaxAge(#[schemars(range(min = 0))] pub f64);

impl<'de> Deserialize<'de> for MaxAge {
    fn deserialize<D: serde::Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        let v = f64::deserialize(d)?;
        if !v.is_finite() || v < 0.0 {
            return Err(serde::de::Error::custom(format!(
                "max_age_s must be a non-negative number of seconds, not {v}"
            )));
        }
        Ok(MaxAge(v))
    }
}

/// What an `unverified` verdict does to the caller.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum OnUnverified {
    /// The default: unverified (or partial) stops the caller (exit 3, a refused stop).
    #[default]
    Block,
    /// The caller goes on (exit 0), with the verdict reported.
    Warn,
    /// The caller goes on (exit 0) and the verdict is only kept; evident treats it as `warn`.
    Record,
}

/// A claim as read: the typed view, the document as given (unknown fields kept, as
/// compact text), positions for error messages, and warnings.
#[derive(Debug, Clone)]
pub struct ClaimDocument {
    /// The name it was read under (its path, or `-`), for warnings about it.
    pub file: String,
    /// The typed claim the rules decide.
    pub claim: Claim,
    /// The document as given (compacted, unknown fields kept): what is recorded, rather
    /// than a re-serialized `claim`.
    pub raw: JsonText,
    /// Where each JSON path starts in the text, so later errors can name line and column.
    pub spans: Spans,
    /// What was accepted but not understood (unknown fields, kept in `raw`), for the report.
    pub warnings: Vec<Warning>,
}

impl Claim {
    /// Reads a claim strictly. `file` names the source in error messages (`-` for stdin).
    pub fn parse(bytes: &[u8], file: &str) -> Result<ClaimDocument, Error> {
        let checked = json::check(bytes).map_err(|e| Error::syntax(file, e))?;
        Self::from_checked(checked, file)
    }

    /// Types a document that passed the strict reader.
    pub fn from_checked(checked: json::Checked, file: &str) -> Result<ClaimDocument, Error> {
        let json::Checked { text, spans, depth } = checked;
        if !text.is_object() {
            return Err(Error::at(
                file,
                &spans,
                String::new(),
                format!(
                    "a claim must be a JSON object, not {}",
                    json::type_name_of(text.as_str())
                ),
            ));
        }
        // serde_json's reader stops at 127 levels; the strict reader allows more, and
        // such a (rare) document is typed from its value instead.
        let (claim, warnings): (Claim, _) = if depth < 120 {
            crate::typed_text(text.as_str(), &spans, file)?
        } else {
            crate::typed(&text.to_value(), &spans, file)?
        };
        let doc = ClaimDocument {
            file: file.to_string(),
            claim,
            raw: text,
            spans,
            warnings,
        };
        doc.validate(file)?;
        Ok(doc)
    }
}

impl Claim {
    /// `sha256:<hex>` of what the claim says: the task (id, description, requested_by),
    /// the claimed outcome and the mutations (id, kind, target, time as written). A
    /// signed evidence item is bound to it, so neither the observation nor the words it
    /// was collected for can be swapped afterwards.
    pub fn binding(&self) -> String {
        use sha2::Digest;
        let mutations: Vec<Value> = self
            .mutations
            .iter()
            .map(|m| serde_json::json!([m.id, m.kind, m.target, m.at.as_str()]))
            .collect();
        let t = &self.task;
        let text = serde_json::json!([
            t.id,
            t.description,
            t.requested_by,
            self.claimed_outcome,
            mutations
        ])
        .to_string();
        format!(
            "sha256:{}",
            hex::encode(sha2::Sha256::digest(text.as_bytes()))
        )
    }
}

impl ClaimDocument {
    fn validate(&self, file: &str) -> Result<(), Error> {
        let err = |path: String, message: String| Err(Error::at(file, &self.spans, path, message));
        // A v0.1 reader refuses a check type it does not know in `requires`; evident
        // keeps that refusal for its own extension types unless the document says it
        // was written for them, so a plain v0.1 document reads the same everywhere.
        let requires = self.claim.policy.iter().flat_map(|p| p.requires.iter());
        for (i, t) in requires.enumerate() {
            if let Some(ext) = t.extension()
                && !self.claim.extensions.iter().any(|e| e == ext)
            {
                return err(
                    format!("policy.requires[{i}]"),
                    format!(
                        "unknown variant `{ext}`, expected one of `test_run`, `endpoint_health`, `state_readback` ({ext} is an evident extension: declare it with \"extensions\": [\"{ext}\"] at the top of the document)"
                    ),
                );
            }
        }
        for (i, e) in self.claim.extensions.iter().enumerate() {
            if !CheckType::ALL
                .iter()
                .any(|t| t.extension() == Some(e.as_str()))
            {
                return err(
                    format!("extensions[{i}]"),
                    format!("unknown extension {e:?} (known: dom_assertion)"),
                );
            }
        }
        let mut ids = HashSet::new();
        for (i, m) in self.claim.mutations.iter().enumerate() {
            if !ids.insert(m.id.as_str()) {
                return err(
                    format!("mutations[{i}].id"),
                    format!("duplicate mutation id {:?}", m.id),
                );
            }
        }
        for (i, e) in self.claim.evidence.iter().enumerate() {
            if !e.expected.is_object() {
                return err(
                    format!("evidence[{i}].expected"),
                    format!(
                        "expected must be a JSON object, not {}",
                        e.expected.type_name()
                    ),
                );
            }
            for (j, c) in e.covers.iter().enumerate() {
                if !ids.contains(c.as_str()) {
                    return err(
                        format!("evidence[{i}].covers[{j}]"),
                        format!("covers names {c:?}, which is not the id of any mutation"),
                    );
                }
            }
        }
        Ok(())
    }
}

/// `object`, `array`, `string`, … for messages.
pub fn json_type_name(v: &Value) -> &'static str {
    match v {
        Value::Null => "null",
        Value::Bool(_) => "a boolean",
        Value::Number(_) => "a number",
        Value::String(_) => "a string",
        Value::Array(_) => "an array",
        Value::Object(_) => "an object",
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_claim_must_be_an_object() {
        let e = Claim::parse(b"[1, 2, 3]", "x.json").unwrap_err();
        assert_eq!(e.path, "");
        assert!(e.message.contains("must be a JSON object"), "{e}");
    }
}
