//! Decisions as a service shows them (`evident serve`, `evident mcp`, the web page):
//! one versioned shape, [`DecisionView`], built either from a decision just made or
//! from its ledger record, and [`Decisions`], the ledger's read side (list with
//! filters and a cursor, get by id).
//!
//! Held-out checks (`hidden = true` in the recorded contract) stay held out here too:
//! their evidence items keep their place (finding indexes still point at the right
//! item) but lose target, expectation and observation, their ids become
//! `held-out-N`, and a verdict reason that would quote them is replaced. The ledger
//! itself keeps everything for the owner (`evident show`).

use crate::{Decision, Origin};
use evident_rules::{State, Verdict};
use schemars::JsonSchema;
use serde::Serialize;
use serde_json::{Map, Value};
use std::collections::HashMap;

/// The Decision schema's name and version; every decision carries it as `schema`.
pub const DECISION_SCHEMA: &str = "evident.decision/v1";

/// One decision as served.
#[derive(Debug, Clone, Serialize, JsonSchema)]
pub struct DecisionView {
    /// Always `evident.decision/v1` for this shape.
    pub schema: String,
    /// The ledger record's id.
    pub id: u64,
    /// The record's hash (its link in the chain).
    pub hash: String,
    /// The previous record's hash.
    pub prev_hash: String,
    /// When it was recorded (UTC).
    pub time: String,
    /// `verify` (a document decided from its own evidence under the server's policy)
    /// or `gate` (a contract run against the world).
    pub kind: String,
    /// The verdict's state.
    pub state: State,
    /// What the decision means for the caller: `verified`, `refuted`, `blocked`
    /// (unverified under `on_unverified = block`) or `allowed` (unverified under
    /// `warn`/`record`); absent for records that do not say.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub status: Option<String>,
    /// The claim's `task.id`.
    pub task_id: Option<String>,
    /// Who asked (the token's name), when the request was authenticated.
    pub asked_by: Option<String>,
    /// Through what (`http`, `mcp`, …), when recorded by a service.
    pub via: Option<String>,
    /// The contract a gate ran: its name and digest.
    pub contract: Option<ContractRef>,
    /// `sha256:<hex>` of the recorded claim.
    pub claim_digest: String,
    /// The verdict, with the reason for every evidence item.
    #[schemars(with = "Verdict")]
    pub verdict: Value,
    /// What a person should know beside the verdict (decisions just made only).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub warnings: Vec<Note>,
    /// The decided claim: the document as given, with the gate's evidence appended and
    /// the owner's policy in place (secrets removed).
    pub document: Value,
    /// The record's signature, when the server signs.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub signature: Option<Value>,
    /// How many evidence items belong to held-out checks (shown without detail).
    pub held_out: usize,
}

/// The contract of a gate decision.
#[derive(Debug, Clone, Serialize, JsonSchema)]
pub struct ContractRef {
    /// Its name on the server (absent for records written outside a service).
    pub name: Option<String>,
    /// `sha256:<hex>` of the contract as recorded (secrets removed).
    pub digest: String,
}

/// A warning: where, and what.
#[derive(Debug, Clone, Serialize, JsonSchema)]
pub struct Note {
    /// The JSON path it is about (`""`: the document).
    pub path: String,
    /// One sentence.
    pub message: String,
}

/// One decision in a listing.
#[derive(Debug, Clone, Serialize, JsonSchema)]
pub struct DecisionSummary {
    /// The record's id.
    pub id: u64,
    /// When it was recorded (UTC).
    pub time: String,
    /// `verify` or `gate`.
    pub kind: String,
    /// The verdict's state.
    pub state: State,
    /// `verified`, `refuted`, `blocked` or `allowed` (see [`DecisionView::status`]).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub status: Option<String>,
    /// The claim's `task.id`.
    pub task_id: Option<String>,
    /// Who asked.
    pub asked_by: Option<String>,
    /// Through what.
    pub via: Option<String>,
    /// The contract's name, for a gate recorded by a service.
    pub contract: Option<String>,
    /// `sha256:<hex>` of the contract.
    pub contract_digest: Option<String>,
    /// The record's hash.
    pub hash: String,
    /// Where to read it whole (`/v1/decisions/{id}`).
    pub href: String,
}

/// A page of decisions, newest first.
#[derive(Debug, Clone, Serialize, JsonSchema)]
pub struct DecisionPage {
    /// The decisions.
    pub items: Vec<DecisionSummary>,
    /// Pass as `cursor` for the next (older) page; absent on the last page.
    pub next_cursor: Option<String>,
}

/// Which decisions to list.
#[derive(Debug, Clone, Default)]
pub struct Query {
    /// `verified`, `unverified`, `refuted` or `partial`.
    pub state: Option<String>,
    /// The claim's `task.id`, exactly.
    pub task: Option<String>,
    /// `verify` or `gate`.
    pub kind: Option<String>,
    /// RFC 3339, a date, or an age (`30m`, `2h`, `7d`): only decisions since then.
    pub since: Option<String>,
    /// At most this many (default [`DEFAULT_LIMIT`], at most [`MAX_LIMIT`]).
    pub limit: Option<u64>,
    /// From a previous page's `next_cursor`.
    pub cursor: Option<String>,
}

/// Page size when none is asked for.
pub const DEFAULT_LIMIT: u64 = 50;
/// Largest page.
pub const MAX_LIMIT: u64 = 500;

/// Why a read failed.
#[derive(Debug, Clone, thiserror::Error)]
pub enum ReadError {
    /// A query parameter is not valid; `parameter` names it.
    #[error("{parameter}: {message}")]
    BadQuery {
        /// The parameter (`state`, `since`, `limit`, `cursor`, …).
        parameter: &'static str,
        /// What is wrong, with the forms accepted.
        message: String,
    },
    /// No such decision.
    #[error("no decision {0}")]
    NotFound(u64),
    /// The ledger failed.
    #[error("{0}")]
    Ledger(String),
}

/// The ledger's read side.
pub struct Decisions {
    ledger: evident_ledger::Ledger,
}

impl std::fmt::Debug for Decisions {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Decisions")
            .field("ledger", &self.ledger.location())
            .finish()
    }
}

impl Decisions {
    /// Reads through `ledger` (open it with [`evident_ledger::open`] so an empty ledger
    /// lists nothing rather than failing).
    pub fn new(ledger: evident_ledger::Ledger) -> Decisions {
        Decisions { ledger }
    }

    /// The ledger's location (password hidden).
    pub fn location(&self) -> &str {
        self.ledger.location()
    }

    /// A page of decisions, newest first. Blocking (call from a blocking thread).
    pub fn list(&self, q: &Query) -> Result<DecisionPage, ReadError> {
        let bad = |parameter, message: String| ReadError::BadQuery { parameter, message };
        if let Some(s) = &q.state
            && !["verified", "unverified", "refuted", "partial"].contains(&s.as_str())
        {
            return Err(bad(
                "state",
                format!("{s:?} is not a state: verified, unverified, refuted or partial"),
            ));
        }
        if let Some(k) = &q.kind
            && !["verify", "gate"].contains(&k.as_str())
        {
            return Err(bad("kind", format!("{k:?} is not a kind: verify or gate")));
        }
        let since = match &q.since {
            Some(t) => Some(
                evident_ledger::parse_time_bound(t, time::OffsetDateTime::now_utc())
                    .map_err(|m| bad("since", m.to_string()))?,
            ),
            None => None,
        };
        let limit = q.limit.unwrap_or(DEFAULT_LIMIT);
        if limit == 0 || limit > MAX_LIMIT {
            return Err(bad(
                "limit",
                format!("{limit} is out of range: 1 to {MAX_LIMIT}"),
            ));
        }
        let before = match &q.cursor {
            Some(c) => Some(parse_cursor(c).ok_or_else(|| {
                bad(
                    "cursor",
                    "not a cursor: pass a page's next_cursor unchanged".into(),
                )
            })?),
            None => None,
        };
        let filter = evident_ledger::Filter {
            state: q.state.clone(),
            task_id: q.task.clone(),
            kind: q.kind.clone(),
            since,
            before_id: before,
            // One more than asked: whether there is a next page.
            limit: Some(limit + 1),
            newest_first: true,
            ..Default::default()
        };
        let mut rows = self
            .ledger
            .list_summaries(&filter)
            .map_err(|e| ReadError::Ledger(e.to_string()))?;
        let more = rows.len() as u64 > limit;
        rows.truncate(limit as usize);
        let next_cursor = if more {
            rows.last().map(|r| cursor(r.id))
        } else {
            None
        };
        let items = rows
            .iter()
            .map(|s| {
                let origin = s.origin.as_ref();
                DecisionSummary {
                    id: s.id,
                    time: s.time.clone(),
                    kind: s.kind.clone(),
                    state: parse_state(&s.state),
                    status: status(&s.state, origin),
                    task_id: s.task_id.clone(),
                    asked_by: origin_str(origin, "asked_by"),
                    via: origin_str(origin, "via"),
                    contract: origin_str(origin, "contract"),
                    contract_digest: s.contract_digest.clone(),
                    hash: s.hash.clone(),
                    href: format!("/v1/decisions/{}", s.id),
                }
            })
            .collect();
        Ok(DecisionPage { items, next_cursor })
    }

    /// One decision by record id. Blocking.
    pub fn get(&self, id: u64) -> Result<DecisionView, ReadError> {
        match self.ledger.get(id) {
            Ok(r) => Ok(DecisionView::from_record(&r)),
            Err(e) if e.kind == evident_ledger::ErrorKind::NotFound => Err(ReadError::NotFound(id)),
            Err(e) => Err(ReadError::Ledger(e.to_string())),
        }
    }
}

/// Cursors are opaque to clients; today they carry the last id of the page.
fn cursor(id: u64) -> String {
    format!("b{id}")
}

fn parse_cursor(c: &str) -> Option<u64> {
    let digits = c.strip_prefix('b')?;
    if digits.is_empty() || digits.len() > 19 || !digits.bytes().all(|b| b.is_ascii_digit()) {
        return None;
    }
    digits.parse().ok()
}

fn parse_state(s: &str) -> State {
    match s {
        "verified" => State::Verified,
        "refuted" => State::Refuted,
        "partial" => State::Partial,
        _ => State::Unverified,
    }
}

fn origin_str(origin: Option<&Value>, key: &str) -> Option<String> {
    origin?.get(key)?.as_str().map(str::to_string)
}

/// `verified`/`refuted`, or for anything else `blocked`/`allowed` by the recorded
/// `on_unverified`; `None` when the record does not say.
fn status(state: &str, origin: Option<&Value>) -> Option<String> {
    match state {
        "verified" | "refuted" => Some(state.to_string()),
        _ => match origin_str(origin, "on_unverified")?.as_str() {
            "block" => Some("blocked".into()),
            "warn" | "record" => Some("allowed".into()),
            _ => None,
        },
    }
}

impl DecisionView {
    /// The view of a ledger record.
    pub fn from_record(r: &evident_ledger::Record) -> DecisionView {
        let origin = r.origin.as_ref();
        let mut document = r.claim.clone();
        let mut verdict = r.verdict.clone();
        let held_out = match &r.contract {
            Some(c) => hide(&mut document, &mut verdict, c),
            None => 0,
        };
        DecisionView {
            schema: DECISION_SCHEMA.into(),
            id: r.id,
            hash: r.hash.clone(),
            prev_hash: r.prev_hash.clone(),
            time: r.time.clone(),
            kind: r.kind.clone(),
            state: parse_state(&r.state),
            status: status(&r.state, origin),
            task_id: r.task_id.clone(),
            asked_by: origin_str(origin, "asked_by"),
            via: origin_str(origin, "via"),
            contract: r.contract_digest.as_ref().map(|d| ContractRef {
                name: origin_str(origin, "contract"),
                digest: d.clone(),
            }),
            claim_digest: r.claim_digest.clone(),
            verdict,
            warnings: Vec::new(),
            document,
            signature: r.signature.clone(),
            held_out,
        }
    }

    /// The view of a decision just made and recorded (`None` when it was not
    /// recorded); `origin` is what the surface recorded with it.
    pub fn from_decision(d: &Decision, origin: Option<&Origin>) -> Option<DecisionView> {
        let rec = d.record.as_ref()?;
        let mut document = d.document.to_value();
        evident_ledger::redact_in_place(&mut document);
        if let Some(obj) = document.as_object_mut() {
            obj.remove("verdict");
        }
        let mut verdict =
            evident_ledger::redact_value(&serde_json::to_value(&d.verdict).unwrap_or_default());
        let held_out = match &d.contract {
            Some((_, c)) => hide(&mut document, &mut verdict, c),
            None => 0,
        };
        let state = d.verdict.state;
        let status = match d.status() {
            crate::Status::Verified => "verified",
            crate::Status::Refuted => "refuted",
            crate::Status::Blocked => "blocked",
            crate::Status::Allowed => "allowed",
        };
        let mut warnings: Vec<Note> = d
            .warnings
            .iter()
            .map(|w| Note {
                path: w.path.clone(),
                message: evident_ledger::redact::redact_text(&w.message),
            })
            .collect();
        if held_out > 0
            && let Some((_, c)) = &d.contract
        {
            // A warning may quote a held-out check (its id, its evidence item).
            let hidden = held_out_checks(c);
            warnings.retain(|w| {
                !w.path.starts_with("evidence")
                    && !hidden.keys().any(|id| w.message.contains(id.as_str()))
            });
        }
        Some(DecisionView {
            schema: DECISION_SCHEMA.into(),
            id: rec.id,
            hash: rec.hash.clone(),
            prev_hash: rec.prev_hash.clone(),
            time: rec.time.clone(),
            kind: d.kind.as_str().into(),
            state,
            status: Some(status.into()),
            task_id: Some(d.claim.claim.task.id.clone()),
            asked_by: origin.and_then(|o| o.asked_by.clone()),
            via: origin.map(|o| o.via.clone()),
            contract: rec.contract_digest.as_ref().map(|digest| ContractRef {
                name: d.contract.as_ref().map(|(n, _)| n.clone()),
                digest: digest.clone(),
            }),
            claim_digest: rec.claim_digest.clone(),
            verdict,
            warnings,
            document,
            signature: None,
            held_out,
        })
    }
}

/// The ids of a contract's held-out checks, each with its alias (`held-out-1`, … in
/// contract order).
pub fn held_out_checks(contract: &Value) -> HashMap<String, String> {
    contract
        .get("check")
        .and_then(Value::as_array)
        .into_iter()
        .flatten()
        .filter(|c| c.get("hidden") == Some(&Value::Bool(true)))
        .filter_map(|c| c.get("id")?.as_str().map(str::to_string))
        .enumerate()
        .map(|(i, id)| (id, format!("held-out-{}", i + 1)))
        .collect()
}

/// Strips held-out checks' detail from a decided document and its verdict (see the
/// module doc). Returns how many evidence items were held out.
pub fn hide(document: &mut Value, verdict: &mut Value, contract: &Value) -> usize {
    let hidden = held_out_checks(contract);
    if hidden.is_empty() {
        return 0;
    }
    let alias = |id: &str| hidden.get(id).cloned();
    let rename_required = |list: &mut Value| {
        for rc in list.as_array_mut().into_iter().flatten() {
            if let Some(a) = rc.get("id").and_then(Value::as_str).and_then(alias) {
                rc["id"] = Value::String(a);
            }
        }
    };
    let mut held = Vec::new();
    let mut targets: Vec<String> = Vec::new();
    if let Some(items) = document.get_mut("evidence").and_then(Value::as_array_mut) {
        for (i, item) in items.iter_mut().enumerate() {
            if let Some(run) = item.get_mut("run")
                && let Some(list) = run.get_mut("required_checks")
            {
                rename_required(list);
            }
            let Some(a) = item.get("check_id").and_then(Value::as_str).and_then(alias) else {
                continue;
            };
            held.push(i);
            if let Some(t) = item.get("target").and_then(Value::as_str)
                && !t.is_empty()
            {
                targets.push(t.to_string());
            }
            let mut kept = Map::new();
            kept.insert("check_id".into(), Value::String(a));
            kept.insert("held_out".into(), Value::Bool(true));
            for k in ["check_type", "at", "covers", "verifier", "wave", "run"] {
                if let Some(v) = item.get(k) {
                    kept.insert(k.into(), v.clone());
                }
            }
            if item.get("observation_error").is_some() {
                kept.insert(
                    "observation_error".into(),
                    Value::String("not observed (detail held out)".into()),
                );
            }
            // Required by the claim format; says nothing.
            kept.insert("expected".into(), Value::Object(Map::new()));
            kept.insert("observed_value".into(), Value::Null);
            *item = Value::Object(kept);
        }
    }
    if let Some(list) = document.get_mut("required_checks") {
        rename_required(list);
    }
    let mut reason_names_one = false;
    if let Some(findings) = verdict.get_mut("findings").and_then(Value::as_array_mut) {
        for f in findings {
            let idx = f.get("evidence").and_then(Value::as_u64);
            if idx.is_some_and(|i| held.contains(&(i as usize))) {
                // A held-out item that decided something may be what the reason quotes.
                if f.get("used") == Some(&Value::Bool(true))
                    && f.get("code").and_then(Value::as_str) != Some("satisfies")
                {
                    reason_names_one = true;
                }
                f["detail"] = Value::String(
                    "a held-out check: what it expects and observed is not shown".into(),
                );
            }
        }
    }
    if let Some(unmet) = verdict.get_mut("unmet").and_then(Value::as_array_mut) {
        for u in unmet {
            if let Some(a) = u
                .as_str()
                .and_then(|s| s.strip_prefix("check:"))
                .and_then(alias)
            {
                *u = Value::String(format!("check:{a}"));
            }
        }
    }
    if let Some(reason) = verdict.get("reason").and_then(Value::as_str) {
        reason_names_one |= hidden.keys().any(|id| reason.contains(id.as_str()))
            || targets.iter().any(|t| reason.contains(t.as_str()));
    }
    if reason_names_one {
        let state = verdict
            .get("state")
            .and_then(Value::as_str)
            .unwrap_or("unverified")
            .to_string();
        let mut first = state.clone();
        if let Some(c) = first.get_mut(..1) {
            c.make_ascii_uppercase();
        }
        verdict["reason"] = Value::String(format!(
            "{first}: the reason names a held-out check, so it is not shown; see the findings and unmet for what is shown."
        ));
    }
    held.len()
}
