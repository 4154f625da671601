//! Changes nobody claimed. A contract's `[[snapshot]]` names sets of state (rows,
//! keys, files, a git tree) and how each item is named as a mutation target.
//! `evident snapshot` records the hash of every item before the agent runs, signed;
//! `evident gate --before FILE` reads the sets again, and every difference must be
//! the target of a claimed mutation, or the claim is not verified ("changed but not
//! claimed"). The snapshot file holds names and hashes, never values. See
//! docs/snapshots.md.

use std::collections::BTreeMap;
use std::time::Duration;

use evident_format::Timestamp;
use evident_probes::sets::{Item, SetSource};
use evident_probes::{Context, ProbeError};
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};
use serde_json::{Map, Value, json};
use sha2::{Digest, Sha256};

use crate::contract::Contract;

/// The format tag of a snapshot file.
pub const FORMAT: &str = "evident-snapshot/1";
/// Age past which a snapshot is refused when the contract sets no `snapshot_max_age_s`.
pub const DEFAULT_MAX_AGE_S: f64 = 86_400.0;
/// Most differences listed in a report (all are counted).
pub const MAX_SHOWN: usize = 50;

/// One `[[snapshot]]` of a contract.
#[derive(Debug, Clone, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct Snapshot {
    /// Unique among the contract's snapshots; the gate's check is `snapshot:<id>`.
    pub id: String,
    /// What is read (exactly one: `sqlite`, `postgres`, `mysql`, `redis`, `files`,
    /// `git`).
    pub source: SetSource,
    /// How an item is named as a mutation target: `{column}` of a row
    /// (`accounts/{id}`), `{path}` of a file (the default for files and git), `{key}`
    /// of a Redis key (the default for redis).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub target: Option<String>,
    /// The mutation kinds that can claim a difference in this set (default: rows and
    /// keys `state_write`, `db_write`; files `file_write`, `code_change`). A claimed
    /// mutation of another kind names nothing here, whatever its target.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub kinds: Option<Vec<String>>,
}

impl Snapshot {
    /// The template in force.
    pub fn template(&self) -> Option<&str> {
        self.target
            .as_deref()
            .or_else(|| self.source.default_target())
    }

    /// Whether a mutation of `kind` can refer to an item of this set.
    pub fn takes_kind(&self, kind: &str) -> bool {
        match &self.kinds {
            Some(k) => k.iter().any(|k| k == kind),
            None => self.source.default_kinds().contains(&kind),
        }
    }
}

/// `{name}` placeholders of a template, in order; `None` when braces do not pair.
fn placeholders(t: &str) -> Option<Vec<&str>> {
    let mut out = Vec::new();
    let mut rest = t;
    while let Some(i) = rest.find(['{', '}']) {
        if rest.as_bytes()[i] == b'}' {
            return None;
        }
        let after = &rest[i + 1..];
        let j = after.find('}')?;
        let name = &after[..j];
        if name.is_empty() || name.contains('{') {
            return None;
        }
        out.push(name);
        rest = &after[j + 1..];
    }
    Some(out)
}

/// Checks a contract's snapshots when it is read: ids, templates, sources.
pub fn validate(contract: &Contract) -> Result<(), (String, String)> {
    let mut ids = std::collections::HashSet::new();
    for (i, s) in contract.snapshots.iter().enumerate() {
        let at = |f: &str| format!("snapshot[{i}].{f}");
        if s.id.trim().is_empty() || s.id.contains(char::is_control) {
            return Err((at("id"), "a snapshot needs a non-empty id".into()));
        }
        if !ids.insert(s.id.as_str()) {
            return Err((at("id"), format!("duplicate snapshot id {:?}", s.id)));
        }
        // Its comparison is recorded as check `snapshot:<id>`: a check of that id would
        // let one's evidence stand for the other.
        let as_check = crate::run::snapshot_check_id(&s.id);
        if contract.checks.iter().any(|c| c.id == as_check) {
            return Err((
                at("id"),
                format!(
                    "a check is already named {as_check:?}, the id this snapshot's comparison takes"
                ),
            ));
        }
        match s.template() {
            None => {
                return Err((
                    at("target"),
                    format!(
                        "a {} snapshot needs a target template naming each row, e.g. \"accounts/{{id}}\"",
                        s.source.kind()
                    ),
                ));
            }
            Some(t) => match placeholders(t) {
                None => return Err((at("target"), format!("{t:?}: unpaired braces"))),
                Some(p) if p.is_empty() => {
                    return Err((
                        at("target"),
                        format!("{t:?} names no column: every item would have the same target"),
                    ));
                }
                Some(_) => {}
            },
        }
        if let Some(k) = &s.kinds
            && (k.is_empty() || k.iter().any(|k| k.trim().is_empty()))
        {
            return Err((
                at("kinds"),
                "kinds lists the mutation kinds that change this set, e.g. [\"state_write\"]; none may be empty".into(),
            ));
        }
        if let Err(e) = s.source.validate() {
            return Err((at("source"), e.to_string()));
        }
    }
    if let Some(a) = contract.snapshot_max_age_s
        && !(a.is_finite() && a > 0.0)
    {
        return Err((
            "snapshot_max_age_s".into(),
            "snapshot_max_age_s must be a positive number of seconds".into(),
        ));
    }
    Ok(())
}

fn field_text(v: &Value) -> String {
    match v {
        Value::String(s) => s.clone(),
        Value::Null => "null".into(),
        other => other.to_string(),
    }
}

/// A field a target template names that the source's item does not give.
#[derive(Debug)]
struct MissingField(String);

evident_format::message_error! {
    /// Why a snapshot could not be taken, or a snapshot file is refused. A leaf: the
    /// message names the snapshot and says what to do.
    pub struct SnapshotError;
}

/// The template filled in one pass: a value that itself contains `{name}` is kept as
/// written, never filled again (a row could otherwise rename itself). The missing
/// field's name, otherwise.
fn fill(template: &str, fields: &Map<String, Value>) -> Result<String, MissingField> {
    let mut out = String::new();
    let mut rest = template;
    while let Some(i) = rest.find('{') {
        out.push_str(&rest[..i]);
        let after = &rest[i + 1..];
        let Some(j) = after.find('}') else {
            out.push_str(&rest[i..]);
            return Ok(out);
        };
        let name = &after[..j];
        let v = fields
            .get(name)
            .ok_or_else(|| MissingField(name.to_string()))?;
        out.push_str(&field_text(v));
        rest = &after[j + 1..];
    }
    out.push_str(rest);
    Ok(out)
}

/// Each item's target: the template filled from its fields. A missing field or two
/// items with one target is an error (the set could not be compared item by item).
fn targets(s: &Snapshot, items: Vec<Item>) -> Result<BTreeMap<String, String>, SnapshotError> {
    let template = s.template().unwrap_or("{path}");
    let mut out = BTreeMap::new();
    for item in items {
        let t = fill(template, &item.fields).map_err(|MissingField(n)| {
            format!(
                "snapshot {:?}: the target template names {{{n}}}, which the source does not give (columns: {})",
                s.id,
                item.fields.keys().cloned().collect::<Vec<_>>().join(", ")
            )
        })?;
        if out.insert(t.clone(), item.sha256).is_some() {
            return Err(format!(
                "snapshot {:?}: two items have the target {t:?}; name them by a unique column",
                s.id
            )
            .into());
        }
    }
    Ok(out)
}

/// Reads one snapshot's set now: target → sha256.
pub async fn read(
    s: &Snapshot,
    ctx: &Context,
    limit: Duration,
) -> Result<BTreeMap<String, String>, SnapshotError> {
    let items = evident_probes::sets::read(&s.source, ctx, limit)
        .await
        .map_err(|e: ProbeError| format!("snapshot {:?}: {e}", s.id))?;
    targets(s, items)
}

/// `sha256:` of the contract as parsed: a snapshot is good only for this contract.
pub fn contract_digest(contract: &Contract) -> String {
    let text = serde_json::to_string(contract).unwrap_or_default();
    format!("sha256:{}", hex::encode(Sha256::digest(text.as_bytes())))
}

/// Takes the snapshot document for `contract` now (unsigned; the caller signs it).
pub async fn take(
    contract: &Contract,
    ctx: &Context,
    limit: Duration,
    verifier: &str,
) -> Result<Value, SnapshotError> {
    if contract.snapshots.is_empty() {
        return Err("the contract declares no [[snapshot]]".into());
    }
    let mut sets = Map::new();
    for s in &contract.snapshots {
        let set = read(s, ctx, limit).await?;
        sets.insert(s.id.clone(), json!(set));
    }
    Ok(json!({
        "format": FORMAT,
        "contract": contract_digest(contract),
        "taken_at": Timestamp::now().as_str(),
        "verifier": { "id": verifier },
        "sets": sets,
    }))
}

/// A snapshot file that passed every check: its sets, by snapshot id.
#[derive(Debug, Clone)]
pub struct Before {
    /// When the snapshot was taken; checked against `snapshot_max_age_s`.
    pub taken_at: Timestamp,
    /// Each snapshot id's items as taken: target → the hash of its content.
    pub sets: BTreeMap<String, BTreeMap<String, String>>,
}

/// Why the gate's ledger could not be read to look a snapshot up (any error; its
/// causes are shown).
pub type LedgerUnread = Box<dyn std::error::Error + Send + Sync>;

/// How a snapshot file is shown to be the owner's: a signed one by `authenticate`
/// (the gate's key or a `[[snapshot_signer]]`), an unsigned one by `recorded` (its
/// digest is in the gate's ledger for this contract; `Err` when the ledger could
/// not be read).
pub struct Provenance<'a> {
    /// Whether a signed snapshot's signature verifies with a key trusted for snapshots.
    pub authenticate: &'a dyn Fn(&Value) -> bool,
    /// Whether an unsigned snapshot's digest is in the gate's ledger for this contract.
    pub recorded: &'a dyn Fn(&Value) -> Result<bool, LedgerUnread>,
}

/// Checks a snapshot file for `contract` at `now`: signed by a key the gate trusts
/// for snapshots or recorded in its ledger ([`Provenance`]), taken for this contract,
/// not older than `snapshot_max_age_s` (nor from the future), holding exactly the
/// contract's snapshots. Why not, otherwise: the agent could have written or edited
/// it.
pub fn check(
    doc: &Value,
    contract: &Contract,
    now: &Timestamp,
    provenance: &Provenance<'_>,
) -> Result<Before, SnapshotError> {
    let obj = doc
        .as_object()
        .ok_or("the snapshot file is not a JSON object")?;
    if obj.get("format").and_then(Value::as_str) != Some(FORMAT) {
        return Err(format!("not an {FORMAT} file (format)").into());
    }
    if obj.get("signature").is_some() {
        if !(provenance.authenticate)(doc) {
            return Err("the snapshot's signature does not verify with the gate's key or a [[snapshot_signer]] key: it was edited, or signed by a key the gate does not trust for snapshots".into());
        }
    } else {
        match (provenance.recorded)(doc) {
            Ok(true) => {}
            Ok(false) => {
                return Err("the snapshot is unsigned and its hash is not recorded in the gate's ledger for this contract: take it with `evident snapshot` (with --key, or recording it in the ledger the gate reads); an unsigned, unrecorded or edited file could be the agent's".into());
            }
            Err(e) => {
                return Err(format!(
                    "the snapshot is unsigned and the gate's ledger could not be read to find it: {}",
                    evident_format::chain(&*e)
                ).into());
            }
        }
    }
    if obj.get("contract").and_then(Value::as_str) != Some(contract_digest(contract).as_str()) {
        return Err(
            "the snapshot was taken for another contract (or this contract changed since)".into(),
        );
    }
    let taken = obj
        .get("taken_at")
        .and_then(Value::as_str)
        .and_then(|t| Timestamp::parse(t).ok())
        .ok_or("the snapshot has no valid taken_at")?;
    let age = (now.instant() - taken.instant()).as_seconds_f64();
    let max = contract.snapshot_max_age_s.unwrap_or(DEFAULT_MAX_AGE_S);
    if age > max {
        return Err(format!(
            "the snapshot is stale: taken {age:.0} s ago, more than snapshot_max_age_s = {max}"
        )
        .into());
    }
    if age < -5.0 {
        return Err("the snapshot is dated in the future".into());
    }
    let sets: BTreeMap<String, BTreeMap<String, String>> =
        serde_json::from_value(obj.get("sets").cloned().unwrap_or(Value::Null))
            .map_err(|e| format!("the snapshot's sets are not readable: {e}"))?;
    let want: Vec<&str> = contract.snapshots.iter().map(|s| s.id.as_str()).collect();
    let have: Vec<&str> = sets.keys().map(String::as_str).collect();
    let mut want_sorted = want.clone();
    want_sorted.sort_unstable();
    if want_sorted != have {
        return Err(format!(
            "the snapshot holds sets {have:?}, the contract declares {want_sorted:?}"
        )
        .into());
    }
    Ok(Before {
        taken_at: taken,
        sets,
    })
}

/// One difference between the snapshot and now.
#[derive(Debug, Clone, Serialize)]
pub struct Difference {
    /// The item's name, as a claimed mutation must name it to account for the change.
    pub target: String,
    /// `added`, `removed` or `changed`.
    pub change: &'static str,
    /// Whether a claimed mutation names this item.
    pub claimed: bool,
    /// Why a mutation naming this target did not claim it, when one did not.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub note: Option<String>,
}

/// What each set's items are called, before and now: the names a mutation can mean.
pub type Names<'a> = Vec<Option<std::collections::BTreeSet<&'a str>>>;

/// For each snapshot, the targets that claimed mutations name in it, and for targets a
/// mutation could mean in several sets, why none of them is claimed. A mutation
/// names an item of a set only when its kind is one the set takes
/// ([`Snapshot::takes_kind`]: a `file_write` never claims a row) and its canonical
/// target is the item's own name. A mutation names one item: when its target is an
/// item of two sets its kind can refer to (two tables named alike, a row and a
/// Redis key), it claims neither, since a check proving one would excuse the other.
/// `names[k]` is `None` for a set that was not read.
pub fn claims(
    snapshots: &[Snapshot],
    names: &Names<'_>,
    mutations: &[(&str, &str)],
) -> Vec<BTreeMap<String, Option<String>>> {
    let mut out: Vec<BTreeMap<String, Option<String>>> = vec![BTreeMap::new(); snapshots.len()];
    for (kind, target) in mutations {
        let Some(t) = crate::contract::canonical_target(target) else {
            continue;
        };
        let refs: Vec<usize> = (0..snapshots.len())
            .filter(|&k| {
                snapshots[k].takes_kind(kind)
                    && names
                        .get(k)
                        .and_then(Option::as_ref)
                        .is_some_and(|n| n.contains(t.as_ref()))
            })
            .collect();
        match refs.as_slice() {
            [] => {}
            [k] => {
                out[*k].entry(t.to_string()).or_insert(None);
            }
            many => {
                let ids: Vec<&str> = many.iter().map(|&k| snapshots[k].id.as_str()).collect();
                let why = format!(
                    "a {kind} mutation of {t} could mean the item of snapshots {}; it claims none (give the snapshots distinct kinds or targets)",
                    ids.join(", ")
                );
                for &k in many {
                    out[k].insert(t.to_string(), Some(why.clone()));
                }
            }
        }
    }
    out
}

/// Every difference between `before` and `now`, each marked claimed when `claimed`
/// (from [`claims`]) names its target with no objection. An item whose own name is
/// not in canonical form (a row with id `4471/`) is never claimed: an added row must
/// not pass behind the claimed `accounts/4471`.
pub fn differences(
    before: &BTreeMap<String, String>,
    now: &BTreeMap<String, String>,
    claimed: &BTreeMap<String, Option<String>>,
) -> Vec<Difference> {
    let mut out = Vec::new();
    for (t, h) in before {
        match now.get(t) {
            None => out.push((t, "removed")),
            Some(h2) if h2 != h => out.push((t, "changed")),
            _ => {}
        }
    }
    for t in now.keys().filter(|t| !before.contains_key(*t)) {
        out.push((t, "added"));
    }
    out.sort();
    out.into_iter()
        .map(|(t, change)| {
            let canonical = crate::contract::canonical_target(t).is_some_and(|c| c == t.as_str());
            let claim = claimed.get(t).filter(|_| canonical);
            Difference {
                target: t.clone(),
                change,
                claimed: matches!(claim, Some(None)),
                note: claim.cloned().flatten(),
            }
        })
        .collect()
}

/// The observation of one snapshot check: what changed (capped), how much of it no
/// mutation claims, and the error that keeps the claim from being verified when any.
pub fn observation(diffs: &[Difference]) -> (Map<String, Value>, Option<String>) {
    let unclaimed: Vec<&Difference> = diffs.iter().filter(|d| !d.claimed).collect();
    let mut obj = Map::new();
    obj.insert("unclaimed_changes".into(), Value::from(unclaimed.len()));
    obj.insert("changes".into(), Value::from(diffs.len()));
    let shown: Vec<Value> = diffs
        .iter()
        .take(MAX_SHOWN)
        .map(|d| serde_json::to_value(d).unwrap_or(Value::Null))
        .collect();
    obj.insert("differences".into(), Value::Array(shown));
    if diffs.len() > MAX_SHOWN {
        obj.insert("differences_truncated".into(), Value::Bool(true));
    }
    let error = (!unclaimed.is_empty()).then(|| {
        let list: Vec<String> = unclaimed
            .iter()
            .take(10)
            .map(|d| format!("{} ({})", d.target, d.change))
            .collect();
        let more = unclaimed.len().saturating_sub(10);
        let note = unclaimed
            .iter()
            .find_map(|d| d.note.as_deref())
            .map(|n| format!(" ({n})"))
            .unwrap_or_default();
        format!(
            "changed but not claimed: {}{}; every change since the snapshot must be the target of a claimed mutation of a kind that changes this snapshot{note}",
            list.join(", "),
            if more > 0 { format!(" and {more} more") } else { String::new() }
        )
    });
    (obj, error)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn templates_pair_braces_and_fill_from_fields() {
        assert_eq!(placeholders("accounts/{id}"), Some(vec!["id"]));
        assert_eq!(placeholders("{a}/{b}"), Some(vec!["a", "b"]));
        assert_eq!(placeholders("x/{id"), None);
        assert_eq!(placeholders("x/}id{"), None);
        assert_eq!(placeholders("plain"), Some(vec![]));
    }

    /// A row whose value spells another placeholder is not filled twice (found by
    /// attacking the template: `a = "{b}"` would have become the value of b).
    #[test]
    fn a_value_is_never_filled_again() {
        let f: Map<String, Value> =
            serde_json::from_value(json!({"a": "{b}", "b": "4471"})).unwrap();
        assert_eq!(fill("{a}/{b}", &f).unwrap(), "{b}/4471");
        assert_eq!(
            fill("accounts/{id}", &f).map_err(|MissingField(n)| n),
            Err("id".to_string())
        );
    }

    #[test]
    fn contracts_refuse_bad_snapshots() {
        let bad = |text: &str, path: &str| {
            let e = Contract::parse(text.as_bytes(), "c.toml").unwrap_err();
            assert_eq!(e.path, path, "{e}");
        };
        let check = "[[check]]\nid = \"snapshot:a\"\ncheck_type = \"state_readback\"\ncovers = { kind = \"x\" }\nsource = { file = { path = \"f\" } }\nexpected = { exists = true }\n";
        let files = "[[snapshot]]\nid = \"a\"\nsource = { files = { path = \"d\" } }\n";
        bad(&format!("[policy]\n{check}{files}"), "snapshot[0].id");
        bad(
            "[policy]\n[[snapshot]]\nid = \"r\"\nsource = { sqlite = { path = \"b.db\", query = \"SELECT 1\" } }\n",
            "snapshot[0].target",
        );
        bad(
            "[policy]\n[[snapshot]]\nid = \"r\"\ntarget = \"accounts\"\nsource = { sqlite = { path = \"b.db\", query = \"SELECT 1\" } }\n",
            "snapshot[0].target",
        );
        bad(
            "[policy]\n[[snapshot]]\nid = \"r\"\nsource = { files = { path = \"../etc\" } }\n",
            "snapshot[0].source",
        );
        bad(
            &format!("snapshot_max_age_s = 0\n[policy]\n{files}"),
            "snapshot_max_age_s",
        );
        assert!(Contract::parse(format!("[policy]\n{files}").as_bytes(), "c.toml").is_ok());
    }

    #[test]
    fn differences_are_added_removed_changed() {
        let b: BTreeMap<String, String> = [("a", "1"), ("b", "2"), ("c", "3")]
            .map(|(k, v)| (k.into(), v.into()))
            .into();
        let n: BTreeMap<String, String> = [("a", "1"), ("b", "9"), ("d", "4")]
            .map(|(k, v)| (k.into(), v.into()))
            .into();
        let claimed: BTreeMap<String, Option<String>> = [("b".to_string(), None)].into();
        let d = differences(&b, &n, &claimed);
        let got: Vec<(&str, &str, bool)> = d
            .iter()
            .map(|d| (d.target.as_str(), d.change, d.claimed))
            .collect();
        assert_eq!(
            got,
            vec![
                ("b", "changed", true),
                ("c", "removed", false),
                ("d", "added", false)
            ]
        );
        let (obs, err) = observation(&d);
        assert_eq!(obs["unclaimed_changes"], 2);
        assert!(err.unwrap().contains("c (removed), d (added)"));
        let (_, none) = observation(&d[..1]);
        assert!(none.is_none());
    }
}
