//! The contract: what the task's owner requires, and how evident observes it.
//!
//! TOML or JSON, one schema (`evident schema contract`). The agent never chooses what
//! proves its work: every probe, target and expectation the gate uses comes from here.
//! Parsing is stricter than for claims: an unknown field is an error, not a warning,
//! because a misspelt key in an owner's contract would silently weaken the gate.
//! Secrets are never written inline; sources name the environment variable that holds
//! them (see `docs/probes.md`).

use evident_format::json::{self, Spans};
use evident_format::{CheckType, Error, Mutation, Policy};
use evident_probes::Source;
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};
use serde_json::{Map, Value};
use std::collections::HashSet;

/// What the owner requires before an agent's claim is accepted.
#[derive(Debug, Clone, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
#[schemars(title = "evident gate contract")]
pub struct Contract {
    /// The policy the verdict is decided under. The claim's own policy is ignored.
    pub policy: Policy,
    /// The checks the gate runs itself (TOML: `[[check]]`).
    #[serde(rename = "check", default)]
    pub checks: Vec<Check>,
    /// Verifiers whose signed evidence in the claim counts as independent
    /// (`{id, public_key}`; see `docs/ledger.md`). Without it, only the gate's own
    /// evidence counts.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub trust: Vec<TrustedVerifier>,
    /// Keys that may sign a snapshot (`evident snapshot --key`) besides the gate's own
    /// `--key` (TOML: `[[snapshot_signer]]`, `{id, public_key}`). A `[[trust]]` key
    /// vouches for evidence only, never for the state before the agent ran.
    #[serde(
        rename = "snapshot_signer",
        default,
        skip_serializing_if = "Vec::is_empty"
    )]
    pub snapshot_signers: Vec<TrustedVerifier>,
    /// Settings of the coding-agent stop hook (`evident hook`, docs/agents.md); the
    /// gate itself ignores them.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub hook: Option<HookSettings>,
    /// Sets of state recorded before the agent runs (`evident snapshot`) and compared
    /// at `gate --before`: every difference must be claimed (TOML: `[[snapshot]]`;
    /// docs/snapshots.md).
    #[serde(rename = "snapshot", default, skip_serializing_if = "Vec::is_empty")]
    pub snapshots: Vec<crate::snapshot::Snapshot>,
    /// How old a snapshot may be at gate time, in seconds (default a day): an
    /// agent's run takes longer than an observation's `max_age_s`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub snapshot_max_age_s: Option<f64>,
}

/// The `[hook]` table of a contract.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct HookSettings {
    /// `run` (default): the checks run even when nothing changed since the session's
    /// baseline; `allow`: a stop with no change goes through.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub no_change: Option<NoChange>,
    /// Consecutive refusals in one session after which the stop goes through,
    /// recorded unverified (default 3).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(range(min = 1))]
    pub max_refusals: Option<u32>,
}

/// What a hook does at a stop when nothing changed since the session's baseline.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum NoChange {
    /// Run the checks anyway: an unchanged tree may still not meet the contract.
    Run,
    /// Let the stop through: nothing was done, so there is nothing to verify.
    Allow,
}

/// Whether a `[[trust]]` key has the form a key file holds: standard base64 (with
/// padding) of 32 bytes. Caught here, the owner's mistake names the contract, line and
/// entry; whether the bytes are an Ed25519 point is checked where the key is used.
fn trusted_key_shape(text: &str) -> Result<(), KeyShape> {
    use base64::Engine;
    let text = text.trim();
    if text.len() == 64 && text.bytes().all(|b| b.is_ascii_hexdigit()) {
        return Err(KeyShape::Hex);
    }
    let bytes = base64::engine::general_purpose::STANDARD
        .decode(text)
        .map_err(|_| KeyShape::Key(evident_sign::PublicKeyError::NotBase64))?;
    if bytes.len() != 32 {
        return Err(KeyShape::Key(evident_sign::PublicKeyError::WrongLength {
            len: bytes.len(),
        }));
    }
    Ok(())
}

/// Why a `[[trust]]` key does not have a key file's form.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
enum KeyShape {
    /// Hex, which looks like a key but is not the form a key file holds.
    #[error("64 hex digits: hex is not accepted")]
    Hex,
    /// Not base64, or not 32 bytes (the same words as a key file's error).
    #[error(transparent)]
    Key(evident_sign::PublicKeyError),
}

/// A verifier the owner trusts, by id and Ed25519 public key.
#[derive(Debug, Clone, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct TrustedVerifier {
    /// The verifier id that evidence's `verifier.id` (or a check's `signed_by`) names.
    pub id: String,
    /// The public key as `evident key generate` writes it (standard base64 of 32 bytes).
    pub public_key: String,
}

/// One observation the gate makes, and what it must show.
#[derive(Debug, Clone, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct Check {
    /// Unique within the contract; shown in reports and JUnit.
    pub id: String,
    /// The kind of evidence this check produces, and so which rules decide it.
    pub check_type: CheckType,
    /// Which claimed mutations this check's evidence speaks for.
    pub covers: Covers,
    /// When the check applies: `always` (the default: a requirement of the task,
    /// whatever the claim lists) or `when_covered` (only when `covers` selects a claimed
    /// mutation; once it applies it is a requirement like any other).
    #[serde(default, skip_serializing_if = "Applies::is_always")]
    pub applies: Applies,
    /// What to observe (exactly one source: `command`, `http`, `file`, `sqlite`,
    /// `postgres`, `mysql`, `redis`, `git`, `browser`, `github_pr`).
    pub source: Source,
    /// What the observation must show. Default for `command`: `{exit_code = 0, ran = true}`;
    /// for a file postcondition `{matches = true}`; for `github_pr` every flag true;
    /// every other source needs one.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub expected: Option<Map<String, Value>>,
    /// A held-out check: run and counted like any other, but never shown to the agent
    /// by the service (`evident serve`'s contract views and the decisions it serves,
    /// `evident mcp`'s `get_contract`), so the agent cannot tailor its work to it.
    /// The ledger keeps it whole for the owner.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub hidden: bool,
    /// Privacy mode: every output (report, JSON, JUnit, Markdown, ledger) names only the
    /// kind of observation, its flags, counts and reason codes — never the path, file
    /// names, keys, values or repository the contract names. Only for sources whose
    /// observation holds no values (a file `postcondition`, `github_pr`).
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub private: bool,
}

impl Check {
    /// What the check observes, as every output shows it: the source's description, or
    /// only its kind when the check is `private`.
    pub fn target(&self) -> String {
        if self.private {
            self.source.private_target()
        } else {
            self.source.target()
        }
    }

    /// A probe error as outputs show it: in full, or for a `private` check only its kind
    /// and reason code.
    pub fn error_text(&self, e: &evident_probes::ProbeError) -> String {
        if self.private {
            e.public_message()
        } else {
            e.to_string()
        }
    }
}

/// When a check is a requirement of the task.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum Applies {
    /// Always: the claim's mutation list cannot make the check go away.
    #[default]
    Always,
    /// Only when `covers` selects at least one claimed mutation (one contract for
    /// several kinds of change).
    WhenCovered,
}

impl Applies {
    fn is_always(&self) -> bool {
        *self == Applies::Always
    }

    /// The name as written in contracts.
    pub fn as_str(self) -> &'static str {
        match self {
            Applies::Always => "always",
            Applies::WhenCovered => "when_covered",
        }
    }
}

/// Selects claimed mutations. Every field given must match; at least one is required.
/// A mutation no check covers stays uncovered (and the claim cannot be verified).
#[derive(Debug, Clone, Default, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct Covers {
    /// The mutation's id, exactly.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub id: Option<String>,
    /// The mutation's kind, exactly (`code_change`, `state_write`, `deploy`, …).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub kind: Option<String>,
    /// The mutation's target: exact, or a glob when it contains `*`, `?` or `[`
    /// (`*` does not cross `/`; `**` does).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub target: Option<String>,
}

impl Covers {
    /// Whether `m` is selected.
    pub fn matches(&self, m: &Mutation) -> bool {
        self.selector().matches(m)
    }

    /// The selection with its glob compiled once, for matching many mutations.
    pub fn selector(&self) -> Selector<'_> {
        let glob = self
            .target
            .as_deref()
            .filter(|t| t.contains(['*', '?', '[']))
            .map(|t| {
                globset::GlobBuilder::new(t)
                    .literal_separator(true)
                    .build()
                    .map(|g| g.compile_matcher())
                    .ok()
            });
        Selector { covers: self, glob }
    }
}

/// [`Covers`] ready to match: `glob` is `Some` when the target is a pattern (`None`
/// inside when it does not compile, which matches nothing).
pub struct Selector<'a> {
    covers: &'a Covers,
    glob: Option<Option<globset::GlobMatcher>>,
}

impl Selector<'_> {
    /// Whether `m` is selected. A mutation whose target cannot be read one way only
    /// ([`canonical_target`] refuses it) is selected by no check, whatever its kind:
    /// it stays uncovered, so the claim cannot be verified.
    pub fn matches(&self, m: &Mutation) -> bool {
        let c = self.covers;
        let target = match m.target.as_deref() {
            None => None,
            Some(t) => match canonical_target(t) {
                Some(t) => Some(t),
                None => return false,
            },
        };
        c.id.as_ref().is_none_or(|id| id == &m.id)
            && c.kind.as_ref().is_none_or(|k| k == &m.kind)
            && c.target.as_ref().is_none_or(|t| {
                target.as_deref().is_some_and(|mt| match &self.glob {
                    None => canonical_target(t).is_some_and(|t| t == mt),
                    Some(g) => g.as_ref().is_some_and(|g| g.is_match(mt)),
                })
            })
    }
}

/// A mutation target in the one form checks match against: `./` segments, repeated
/// and trailing `/` removed (`./migrations//002.sql/` is `migrations/002.sql`).
/// `None` — matched by nothing — for a target that could name several things: a `..`
/// segment, control characters, or text not in Unicode NFC (`é` written as `e` and a
/// combining accent would otherwise dodge a check written with `é`).
pub fn canonical_target(t: &str) -> Option<std::borrow::Cow<'_, str>> {
    if t.chars().any(char::is_control) || !unicode_normalization::is_nfc(t) {
        return None;
    }
    let needs_work = t.starts_with("./")
        || t.contains("//")
        || t.contains("/./")
        || t.ends_with("/.")
        || (t.ends_with('/') && t.len() > 1);
    let plain = !needs_work;
    let segments = t.split('/');
    if t.split('/').any(|s| s == "..") {
        return None;
    }
    if plain {
        return Some(std::borrow::Cow::Borrowed(t));
    }
    let lead = if t.starts_with('/') { "/" } else { "" };
    let kept: Vec<&str> = segments.filter(|s| !s.is_empty() && *s != ".").collect();
    Some(std::borrow::Cow::Owned(format!("{lead}{}", kept.join("/"))))
}

/// A contract as read, with the positions of its parts (JSON only) for messages.
#[derive(Debug, Clone)]
pub struct ContractDocument {
    /// The typed contract the gate runs.
    pub contract: Contract,
    /// The document as read, kept so a record can copy it ([`Self::public_raw`]).
    pub raw: Value,
    /// Where each part of the contract starts, by JSON path (TOML and JSON).
    pub spans: Spans,
}

impl ContractDocument {
    /// The contract as it may be recorded (the ledger keeps a copy): each `private`
    /// check's source reduced to its kind and counts, and its `covers.target` hidden,
    /// so the record names no path, file name, key, value or repository.
    pub fn public_raw(&self) -> Value {
        let mut raw = self.raw.clone();
        let Some(list) = raw.get_mut("check").and_then(Value::as_array_mut) else {
            return raw;
        };
        for (item, check) in list.iter_mut().zip(&self.contract.checks) {
            if !check.private {
                continue;
            }
            if let Some(obj) = item.as_object_mut() {
                obj.insert("source".into(), public_source(&check.source));
                if let Some(t) = obj
                    .get_mut("covers")
                    .and_then(Value::as_object_mut)
                    .and_then(|c| c.get_mut("target"))
                {
                    *t = Value::from("(private)");
                }
            }
        }
        raw
    }
}

/// A private check's source as recorded: kind, counts and flags only.
fn public_source(source: &Source) -> Value {
    use evident_probes::Postcondition as P;
    match source {
        Source::File(f) => match &f.postcondition {
            Some(P::TextFile(t)) => serde_json::json!({ "file": { "private": true,
                "postcondition": "text_file", "expected_size": t.expected_text.len() } }),
            Some(P::Directory(d)) => serde_json::json!({ "file": { "private": true,
                "postcondition": "directory", "required_child_count": d.required_children.len(),
                "exact_children": d.exact_children, "exact_empty": d.exact_empty } }),
            Some(P::JsonObject(j)) => serde_json::json!({ "file": { "private": true,
                "postcondition": "json_object", "expected_key_count": j.expected.len(),
                "exact_keys": j.exact_keys } }),
            None => serde_json::json!({ "file": { "private": true } }),
        },
        Source::GithubPr(g) => serde_json::json!({ "github_pr": { "private": true,
            "expected_state": g.expected_state, "merge_oid_expected": g.expected_merge_oid.is_some(),
            "head_repository_expected": g.expected_head_repository_id.is_some() } }),
        other => serde_json::json!({ other.kind(): { "private": true } }),
    }
}

impl Contract {
    /// The evident extensions the contract uses (by name, sorted): the decided claim
    /// document declares them in `extensions`, so it reads back under the strict
    /// claim reader (docs/browser.md).
    pub fn extensions(&self) -> Vec<&'static str> {
        let mut out: Vec<&'static str> = self
            .policy
            .requires
            .iter()
            .copied()
            .chain(self.checks.iter().map(|c| c.check_type))
            .filter_map(CheckType::extension)
            .collect();
        out.sort_unstable();
        out.dedup();
        out
    }

    /// Reads a contract. TOML when `file` ends in `.toml` (or the text is not JSON-like),
    /// JSON otherwise. `file` names the source in errors.
    pub fn parse(bytes: &[u8], file: &str) -> Result<ContractDocument, Error> {
        let (value, spans) = read_value(bytes, file)?;
        let (contract, ignored): (Contract, _) = evident_format::typed(&value, &spans, file)?;
        if let Some(w) = ignored.into_iter().next() {
            let message = unknown_field(&crate::contract_schema(), &w.path);
            return Err(Error::at(file, &spans, w.path, message));
        }
        contract.validate(file, &spans)?;
        Ok(ContractDocument {
            contract,
            raw: value,
            spans,
        })
    }
}

/// Reads an owner's policy for `verify --policy`: a policy object, or a contract whose
/// `policy` table is taken (TOML or JSON). Strict: an unknown key is an error, since a
/// misspelt `max_age_s` would silently weaken the decision.
pub fn parse_policy(bytes: &[u8], file: &str) -> Result<Policy, Error> {
    let (value, spans) = read_value(bytes, file)?;
    let (value, prefix) = match value.get("policy") {
        Some(p) if p.is_object() => (p.clone(), "policy"),
        _ => (value, ""),
    };
    let (policy, ignored): (Policy, _) =
        evident_format::typed(&value, &spans, file).map_err(|mut e| {
            if !prefix.is_empty() {
                e.path = format!("{prefix}.{}", e.path)
                    .trim_end_matches('.')
                    .to_string();
                e.pos = spans.nearest(&e.path);
            }
            e
        })?;
    if let Some(w) = ignored.into_iter().next() {
        let message = unknown_field(&schemars::schema_for!(Policy), &w.path);
        let path = if prefix.is_empty() {
            w.path
        } else {
            format!("{prefix}.{}", w.path)
        };
        return Err(Error::at(file, &spans, path, message));
    }
    Ok(policy)
}

/// "unknown field `x`, expected one of `a`, `b`" (serde's words for a strict type) for
/// a field at `path` that a lenient type (the claim's [`Policy`]) ignored: the valid
/// names come from `schema`, so the list cannot drift from what the reader accepts.
fn unknown_field(schema: &schemars::Schema, path: &str) -> String {
    let (parent, field) = match path.rfind(['.', '[']) {
        Some(i) => (&path[..i], path[i..].trim_start_matches('.')),
        None => ("", path),
    };
    let mut message = format!("unknown field `{field}`");
    if let Some(names) = field_names(schema.as_value(), parent)
        && !names.is_empty()
    {
        let names: Vec<String> = names.iter().map(|n| format!("`{n}`")).collect();
        message.push_str(&format!(", expected one of {}", names.join(", ")));
    }
    message
}

/// The property names the schema allows in the object at `path` (plain keys and
/// `[N]` indexes only), or `None` when the path cannot be followed.
fn field_names(root: &Value, path: &str) -> Option<Vec<String>> {
    let mut nodes = expand(root, root, 0);
    for segment in path.split('.').filter(|s| !s.is_empty()) {
        let mut parts = segment.split('[');
        let key = parts.next().unwrap_or_default();
        if !key.is_empty() {
            nodes = step(root, &nodes, |n| n.get("properties")?.get(key));
        }
        for index in parts {
            index.strip_suffix(']')?.parse::<usize>().ok()?;
            nodes = step(root, &nodes, |n| n.get("items"));
        }
    }
    let mut names: Vec<String> = Vec::new();
    for n in &nodes {
        for k in n
            .get("properties")
            .and_then(Value::as_object)
            .into_iter()
            .flatten()
        {
            if !names.contains(k.0) {
                names.push(k.0.clone());
            }
        }
    }
    Some(names)
}

/// The schemas `next` leads to from each of `nodes`, expanded.
fn step<'a>(
    root: &'a Value,
    nodes: &[&'a Value],
    next: impl Fn(&'a Value) -> Option<&'a Value>,
) -> Vec<&'a Value> {
    nodes
        .iter()
        .filter_map(|n| next(n))
        .flat_map(|n| expand(root, n, 0))
        .collect()
}

/// `node` with its `$ref` followed and its `anyOf`/`oneOf`/`allOf` branches flattened.
fn expand<'a>(root: &'a Value, node: &'a Value, depth: usize) -> Vec<&'a Value> {
    if depth > 16 {
        return Vec::new();
    }
    let mut out = vec![node];
    if let Some(target) = node
        .get("$ref")
        .and_then(Value::as_str)
        .and_then(|r| r.strip_prefix('#'))
        .and_then(|pointer| root.pointer(pointer))
    {
        out.extend(expand(root, target, depth + 1));
    }
    for branches in ["anyOf", "oneOf", "allOf"] {
        for b in node
            .get(branches)
            .and_then(Value::as_array)
            .into_iter()
            .flatten()
        {
            out.extend(expand(root, b, depth + 1));
        }
    }
    out
}

/// The document as a JSON value with positions: TOML when `file` ends in `.toml` (or
/// the text does not start like JSON), JSON otherwise.
fn read_value(bytes: &[u8], file: &str) -> Result<(Value, Spans), Error> {
    {
        let looks_json = bytes.iter().find(|b| !b.is_ascii_whitespace()) == Some(&b'{');
        let (value, spans) = if file.ends_with(".toml") || !looks_json {
            let value = toml_value(bytes, file)?;
            (
                value,
                toml_spans(std::str::from_utf8(bytes).unwrap_or_default()),
            )
        } else {
            let p = json::parse(bytes).map_err(|e| Error {
                file: file.into(),
                path: e.path,
                pos: Some(e.pos),
                message: e.message,
            })?;
            (p.value, p.spans)
        };
        Ok((value, spans))
    }
}

impl Contract {
    fn validate(&self, file: &str, spans: &Spans) -> Result<(), Error> {
        let err = |path: String, message: String| Err(Error::at(file, spans, path, message));
        if self.hook.as_ref().and_then(|h| h.max_refusals) == Some(0) {
            return err(
                "hook.max_refusals".into(),
                "max_refusals must be at least 1".into(),
            );
        }
        if let Err((path, message)) = crate::snapshot::validate(self) {
            return err(path, message);
        }
        for (i, t) in self.trust.iter().enumerate() {
            if t.id.trim().is_empty() {
                return err(
                    format!("trust[{i}].id"),
                    "a trusted verifier needs a non-empty id".into(),
                );
            }
            if let Err(why) = trusted_key_shape(&t.public_key) {
                return err(
                    format!("trust[{i}].public_key"),
                    format!(
                        "{why} (hint: copy the public_key of the KEY.pub file `evident key generate` writes: standard base64 of the 32-byte Ed25519 key)"
                    ),
                );
            }
        }
        let mut ids = HashSet::new();
        for (i, c) in self.checks.iter().enumerate() {
            if c.id.trim().is_empty() {
                return err(
                    format!("check[{i}].id"),
                    "a check needs a non-empty id".into(),
                );
            }
            if !ids.insert(c.id.as_str()) {
                return err(
                    format!("check[{i}].id"),
                    format!("duplicate check id {:?}", c.id),
                );
            }
            let cv = &c.covers;
            if cv.id.is_none() && cv.kind.is_none() && cv.target.is_none() {
                return err(
                    format!("check[{i}].covers"),
                    "covers must name an id, a kind or a target".into(),
                );
            }
            if let Some(t) = &cv.target
                && t.contains(['*', '?', '['])
                && let Err(e) = globset::Glob::new(t)
            {
                return err(
                    format!("check[{i}].covers.target"),
                    format!("bad glob: {e}"),
                );
            }
            for (field, value) in [("id", &cv.id), ("kind", &cv.kind), ("target", &cv.target)] {
                if value.as_deref().is_some_and(|v| v.trim().is_empty()) {
                    return err(
                        format!("check[{i}].covers.{field}"),
                        format!(
                            "covers.{field} is empty: it can select no mutation, so its evidence could never speak for one"
                        ),
                    );
                }
            }
            let allowed: &[&str] = match c.check_type {
                CheckType::TestRun => &["command", "signed_by"],
                CheckType::EndpointHealth => &["http", "signed_by"],
                CheckType::StateReadback => &[
                    "http",
                    "file",
                    "sqlite",
                    "postgres",
                    "mysql",
                    "redis",
                    "git",
                    "github_pr",
                    "signed_by",
                ],
                CheckType::DomAssertion => &["browser", "signed_by"],
            };
            if let Some((key, message)) = crate::lint::impossible_expectation(c) {
                return err(format!("check[{i}].expected.{key}"), message);
            }
            if let Some((path, message)) = crate::lint::inline_secret(c) {
                return err(format!("check[{i}].{path}"), message);
            }
            if let Err((field, message)) = c.source.check_fields() {
                return err(format!("check[{i}].source.{field}"), message);
            }
            if c.private && !c.source.values_free() {
                return err(
                    format!("check[{i}].private"),
                    format!(
                        "a {} observation shows the values it read, so it cannot be private (hint: private = true is for a file postcondition or github_pr)",
                        c.source.kind()
                    ),
                );
            }
            if let (Some(keys), Some(expected)) = (c.source.closed_keys(), &c.expected)
                && let Some(key) = expected.keys().find(|k| !keys.iter().any(|(n, _)| n == k))
            {
                let names: Vec<&str> = keys.iter().map(|(n, _)| *n).collect();
                return err(
                    format!("check[{i}].expected.{key}"),
                    format!(
                        "a {} source never observes {key:?}, so this expectation can never be met (hint: omit expected to require a full match, or use {})",
                        c.source.kind(),
                        names.join(", ")
                    ),
                );
            }
            if let Err(e) = c.source.validate() {
                return err(format!("check[{i}].source"), e.to_string());
            }
            if let Source::SignedBy(signer) = &c.source
                && !self.trust.iter().any(|t| &t.id == signer)
            {
                return err(
                    format!("check[{i}].source.signed_by"),
                    format!(
                        "the check delegates to {signer:?}, which no [[trust]] entry names; add [[trust]] id = {signer:?} with its public key"
                    ),
                );
            }
            if !allowed.contains(&c.source.kind()) {
                return err(
                    format!("check[{i}].source"),
                    format!(
                        "a {} check cannot use a {} source (allowed: {})",
                        c.check_type,
                        c.source.kind(),
                        allowed.join(", ")
                    ),
                );
            }
            match &c.expected {
                None if c.source.default_expected().is_none() => {
                    return err(
                        format!("check[{i}].expected"),
                        format!("a {} source needs an expected object", c.source.kind()),
                    );
                }
                Some(e) if e.is_empty() => {
                    return err(
                        format!("check[{i}].expected"),
                        "expected is empty: it would assert nothing".into(),
                    );
                }
                _ => {}
            }
            // An http probe observes `body_contains` as true/false for its own text. An
            // expected text is met by `true` only in endpoint_health, and only if it is
            // that same text; otherwise the verdict would rest on a text nobody looked
            // for, or refute a body that does contain it.
            if let (Source::Http(h), Some(Value::String(want))) = (
                &c.source,
                c.expected.as_ref().and_then(|e| e.get("body_contains")),
            ) {
                let path = format!("check[{i}].expected.body_contains");
                if c.check_type != CheckType::EndpointHealth {
                    return err(
                        path,
                        format!(
                            "a {} check observes body_contains as true or false: set source.http.body_contains = {want:?} and expect body_contains = true",
                            c.check_type
                        ),
                    );
                }
                if let Some(looked_for) = &h.body_contains
                    && looked_for != want
                {
                    return err(
                        path,
                        format!(
                            "expects the body to contain {want:?}, but the probe looks for {looked_for:?} (source.http.body_contains); write the text once"
                        ),
                    );
                }
            }
        }
        Ok(())
    }
}

/// Where each value of a TOML contract starts, by JSON path, so typed errors (an
/// unknown field, a wrong type) name a line and column as they do for JSON.
fn toml_spans(text: &str) -> Spans {
    let mut spans = Spans::default();
    spans.insert(String::new(), json::Pos { line: 1, col: 1 });
    let Ok(table) = toml::de::DeTable::parse(text) else {
        return spans;
    };
    let line_starts: Vec<usize> = std::iter::once(0)
        .chain(text.match_indices('\n').map(|(i, _)| i + 1))
        .collect();
    let pos = |offset: usize| {
        let line = line_starts.partition_point(|&s| s <= offset).max(1);
        json::Pos {
            line,
            col: offset - line_starts[line - 1] + 1,
        }
    };
    fn walk(
        v: &toml::Spanned<toml::de::DeValue<'_>>,
        path: String,
        pos: &dyn Fn(usize) -> json::Pos,
        spans: &mut Spans,
    ) {
        spans.insert(path.clone(), pos(v.span().start));
        match v.get_ref() {
            toml::de::DeValue::Table(t) => {
                for (k, child) in t.iter() {
                    walk(child, json::push_key(&path, k.get_ref()), pos, spans);
                }
            }
            toml::de::DeValue::Array(a) => {
                for (i, child) in a.iter().enumerate() {
                    walk(child, json::push_index(&path, i), pos, spans);
                }
            }
            _ => {}
        }
    }
    for (k, child) in table.get_ref().iter() {
        walk(child, json::push_key("", k.get_ref()), &pos, &mut spans);
    }
    spans
}

/// TOML → JSON value, so both forms go through one typed reader. TOML datetimes are
/// refused where a string is expected (write times as strings).
fn toml_value(bytes: &[u8], file: &str) -> Result<Value, Error> {
    let text = std::str::from_utf8(bytes).map_err(|_| Error {
        file: file.into(),
        path: String::new(),
        pos: None,
        message: "the contract is not valid UTF-8".into(),
    })?;
    let table: toml::Table = toml::from_str(text).map_err(|e| {
        let pos = e.span().map(|s| {
            let before = &text[..s.start.min(text.len())];
            json::Pos {
                line: before.matches('\n').count() + 1,
                col: before.len() - before.rfind('\n').map_or(0, |i| i + 1) + 1,
            }
        });
        Error {
            file: file.into(),
            path: String::new(),
            pos,
            message: e.message().to_string(),
        }
    })?;
    toml_to_json(toml::Value::Table(table), "").map_err(|(path, message)| Error {
        file: file.into(),
        path,
        pos: None,
        message,
    })
}

/// TOML → JSON. `nan` and `inf` have no JSON form: an error at their path (as `null`
/// they would be met by a NULL column).
fn toml_to_json(v: toml::Value, path: &str) -> Result<Value, (String, String)> {
    Ok(match v {
        toml::Value::String(s) => Value::String(s),
        toml::Value::Integer(i) => Value::from(i),
        toml::Value::Float(f) => match serde_json::Number::from_f64(f) {
            Some(n) => Value::Number(n),
            None => {
                return Err((
                    path.to_string(),
                    format!("{f} is not a JSON number (nan and inf cannot be compared)"),
                ));
            }
        },
        toml::Value::Boolean(b) => Value::Bool(b),
        toml::Value::Datetime(d) => Value::String(d.to_string()),
        toml::Value::Array(a) => Value::Array(
            a.into_iter()
                .enumerate()
                .map(|(i, v)| toml_to_json(v, &json::push_index(path, i)))
                .collect::<Result<_, _>>()?,
        ),
        toml::Value::Table(t) => Value::Object(
            t.into_iter()
                .map(|(k, v)| {
                    let child = json::push_key(path, &k);
                    toml_to_json(v, &child).map(|v| (k, v))
                })
                .collect::<Result<_, _>>()?,
        ),
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn field_names_follow_keys_indexes_refs_and_branches() {
        let schema = crate::contract_schema();
        let root = schema.as_value();
        let top = field_names(root, "").unwrap();
        assert_eq!(top[..2], ["policy".to_string(), "check".to_string()]);
        let check = field_names(root, "check[0]").unwrap();
        assert!(check.iter().any(|n| n == "check_type"), "{check:?}");
        assert!(check.iter().any(|n| n == "covers"), "{check:?}");
        // `max_age_s` is `anyOf [MaxAge, null]`: no object, so no names.
        assert_eq!(field_names(root, "policy.max_age_s"), Some(Vec::new()));
        // A path the schema cannot follow names nothing.
        assert_eq!(field_names(root, "check[x]"), None);
        assert_eq!(field_names(root, "nothing.here"), Some(Vec::new()));
        assert_eq!(
            unknown_field(&schema, "nothing.here"),
            "unknown field `here`"
        );
    }
}
