//! What the pages show, built from decisions as the service serves them
//! ([`evident_pipeline::view`]: held-out checks already held out, secrets removed):
//! pure functions to plain strings and flags, which the templates lay out. Every
//! agent-written string passes through [`crate::text`] here; every index into the
//! decision's documents is checked (a record is data, and data can be anything).

use evident_format::{Claim, ClaimDocument, Evidence, Timestamp};
use evident_ledger::RecordSignature;
use evident_pipeline::view::{DecisionSummary, DecisionView};
use evident_rules::{Code, Verdict};
use evident_sign::TrustList;
use serde_json::{Map, Value};
use std::collections::{HashMap, HashSet};
use time::OffsetDateTime;

use crate::text::{self, LONG, SHORT, VALUE};

/// At most this many mutations and evidence items are drawn (timeline, matrix, checks);
/// the page says how many more the record holds.
pub const MAX_ITEMS: usize = 200;
/// The most characters of the task id shown in the verdict panel (all of it, up to
/// `LONG`, in the summary below).
pub const TASK_SHORT: usize = 80;
/// At most this many expected keys are drawn for one evidence item (those that differ
/// or were not observed first), and this many over the whole page.
pub const MAX_KEYS: usize = 100;
/// At most this many expected keys over the whole page (see [`MAX_KEYS`]).
pub const MAX_PAGE_KEYS: usize = 2000;
/// At most this many observed keys the expectation does not name, per item.
pub const MAX_EXTRA: usize = 50;
/// Characters of expected and observed values drawn over the whole page; past it a
/// value is cut to [`SPENT_VALUE`] characters. Each value is cut to `VALUE` anyway;
/// this bounds the page when a document holds thousands of them.
pub const MAX_PAGE_VALUES: usize = 500_000;
/// Characters of each value once [`MAX_PAGE_VALUES`] is spent: enough to recognise it.
pub const SPENT_VALUE: usize = 40;
/// The decision is shown as JSON up to this many characters.
pub const MAX_RAW: usize = 256 * 1024;

/// One row of the decisions list.
pub struct Row {
    /// The record's id in the ledger.
    pub id: u64,
    /// The decision's own page (`/decisions/{id}`).
    pub href: String,
    /// The verdict state as recorded.
    pub state: String,
    /// The state's CSS class ([`state_class`]): colour follows the state.
    pub state_class: &'static str,
    /// `blocked` / `allowed` for an unverified decision whose record says which.
    pub status: Option<String>,
    /// What made the decision (`verify`, `gate`, …), cut short.
    pub kind: String,
    /// The claim's `task.id`, or `—` when it has none.
    pub task: String,
    /// The contract's name, else the start of its digest, else `—`.
    pub contract: String,
    /// Who asked, when the serving surface recorded it.
    pub asked_by: Option<String>,
    /// When it was recorded, as shown.
    pub time: String,
    /// When it was recorded, as stored: the `<time datetime>` a script can read.
    pub time_iso: String,
}

/// The CSS class of a verdict state (unknown states get the neutral one).
pub fn state_class(state: &str) -> &'static str {
    match state {
        "verified" => "verified",
        "refuted" => "refuted",
        "partial" => "partial",
        "unverified" => "unverified",
        _ => "other",
    }
}

/// The short form of a `sha256:<hex>` digest or a hex hash: its first 12 hex digits.
pub fn short_digest(d: &str) -> String {
    let hex = d.strip_prefix("sha256:").unwrap_or(d);
    text::line(hex.get(..12).unwrap_or(hex), 12)
}

/// The contract column: the name the server recorded, else the contract's digest
/// (a CLI record names no contract file).
fn contract_label(name: Option<&str>, digest: Option<&str>) -> String {
    match (name, digest) {
        (Some(name), _) => text::line(name, SHORT),
        (None, Some(d)) => format!("sha256:{}…", short_digest(d)),
        (None, None) => "—".into(),
    }
}

/// `blocked`/`allowed` beside an unverified state (verified and refuted say it all).
fn status_of(state: &str, status: Option<&str>) -> Option<String> {
    status.filter(|s| *s != state).map(|s| text::line(s, 20))
}

/// A list row.
pub fn row(s: &DecisionSummary) -> Row {
    let state = s.state.as_str();
    Row {
        id: s.id,
        href: format!("/decisions/{}", s.id),
        state: state.into(),
        state_class: state_class(state),
        status: status_of(state, s.status.as_deref()),
        kind: text::line(&s.kind, 20),
        task: s
            .task_id
            .as_deref()
            .map_or_else(|| "—".into(), |t| text::line(t, SHORT)),
        contract: contract_label(s.contract.as_deref(), s.contract_digest.as_deref()),
        asked_by: s.asked_by.as_deref().map(|a| text::line(a, SHORT)),
        time: text::stored_time(&s.time),
        time_iso: text::line(&s.time, 40),
    }
}

/// What the page knows of the record before this one (the chain's link).
pub enum Prev {
    /// This is record 1: its `prev_hash` must be the genesis value.
    Genesis,
    /// The previous record's hash, as stored.
    Hash(String),
    /// The previous record could not be read (the reason).
    Unreadable(String),
}

/// The decision page.
pub struct Explained {
    /// The record's id in the ledger.
    pub id: u64,
    /// What made the decision (`verify`, `gate`, …), cut short.
    pub kind: String,
    /// A gate decision: evident observed the world under an owner's contract.
    pub is_gate: bool,
    /// A verify decision: decided from the evidence the document carried, which the
    /// page says plainly.
    pub is_verify: bool,
    /// The verdict state as recorded.
    pub state: String,
    /// The state's CSS class ([`state_class`]).
    pub state_class: &'static str,
    /// `blocked` / `allowed` beside an unverified state, when the record says which.
    pub status: Option<String>,
    /// The claim's `task.id` in full (up to the page's limit), or `—`.
    pub task: String,
    /// The task id as the verdict panel shows it: short, in the agent's typeface,
    /// never at heading size (it is the agent's text, beside the verdict).
    pub task_short: String,
    /// The claim's `task.description`: the agent's words, shown as its words.
    pub task_description: Option<String>,
    /// The claim's `task.requested_by`, as the claim says (not verified).
    pub requested_by: Option<String>,
    /// What the agent says it achieved, to set against the verdict.
    pub claimed_outcome: Option<String>,
    /// The contract's name, else the start of its digest, else `—`.
    pub contract: String,
    /// The contract's full digest, when one was used.
    pub contract_digest: Option<String>,
    /// Who asked, when the serving surface recorded it.
    pub asked_by: Option<String>,
    /// Through what it was asked (`http`, `mcp`, …), when a service recorded it.
    pub via: Option<String>,
    /// How many evidence items belong to held-out checks (shown without detail).
    pub held_out: usize,
    /// When it was recorded, as shown.
    pub time: String,
    /// When it was recorded, as stored (`<time datetime>`).
    pub time_iso: String,
    /// The verdict's `decided_at`, as shown: the instant freshness is measured from.
    pub decided_at: String,
    /// The verdict's `decided_at` as written (`<time datetime>`), or empty.
    pub decided_at_iso: String,
    /// The verdict's own sentence saying why it is what it is.
    pub reason: String,
    /// The verdict's `unmet` list: what the policy required and did not get.
    pub unmet: Vec<String>,
    /// The policy the decision was made under, as (label, value) rows.
    pub policy: Vec<(String, String)>,
    /// Set when the claim or verdict of the decision could not be read back: the page
    /// then shows the record and this reason, and nothing derived from them.
    pub unreadable: Option<String>,
    /// Mutations, evidence, the freshness window and the decision, in time order.
    pub timeline: Vec<Event>,
    /// One sentence on the freshness window (from when to when evidence counts).
    pub window: Option<String>,
    /// Which evidence covers which mutation.
    pub matrix: Matrix,
    /// Each drawn evidence item's observation next to its expectation.
    pub checks: Vec<Check>,
    /// Evidence items the record holds beyond those drawn ([`MAX_ITEMS`]).
    pub more_evidence: usize,
    /// Mutations the record holds beyond those drawn ([`MAX_ITEMS`]).
    pub more_mutations: usize,
    /// The ledger record: hash, chain link, signature status, raw JSON.
    pub record: RecordView,
}

/// One point on the timeline.
pub struct Event {
    /// When, as shown.
    pub time: String,
    /// When, as written (`<time datetime>`), or empty for a computed instant.
    pub time_iso: String,
    /// `mutation`, `evidence`, `window`, `decision`, `recorded`.
    pub class: &'static str,
    /// What happened (`mutation m1`, `[0] state_readback`, `decided: verified`).
    pub title: String,
    /// One sentence more: what changed, or who observed it and what it covers.
    pub detail: String,
    /// Where it lies relative to the decision (`3 min 2 s before the decision`).
    pub relative: String,
    /// Evidence only: `fresh`, `stale`, `future`, or empty.
    pub freshness: &'static str,
    /// Evidence only: the verdict's code for it (`satisfies`, `contradicts`, …).
    pub code: String,
    /// The code's CSS class (`satisfies`, `contradicts`, `unusable`, `none`).
    pub code_class: &'static str,
    /// Inside the freshness window (drawn inside its band).
    pub in_window: bool,
    /// A note about the gap since the previous point, when it is long.
    pub gap: Option<String>,
    /// The id of the card it links to on the page (`evidence-3`, `record`), or empty.
    pub anchor: String,
}

/// The coverage matrix: evidence items (rows) × mutations (columns).
pub struct Matrix {
    /// One per drawn mutation.
    pub columns: Vec<Column>,
    /// A column for task-level items (`covers` empty), when there are any.
    pub task_column: bool,
    /// One per drawn evidence item.
    pub rows: Vec<MatrixRow>,
}

/// A mutation's column of the coverage matrix.
pub struct Column {
    /// The mutation's id, as items name it in `covers`.
    pub id: String,
    /// Its kind and target, as the claim gives them.
    pub label: String,
    /// Some item that satisfies names it: the change is backed by evidence.
    pub covered: bool,
    /// Which items cover it, or how many name it without satisfying.
    pub covered_text: String,
}

/// An evidence item's row of the coverage matrix.
pub struct MatrixRow {
    /// `[i] check_type check_id (wave)`.
    pub label: String,
    /// The item's card on the page (`evidence-{i}`).
    pub anchor: String,
    /// The finding's sentence (stale, self-attested, …), once for the row.
    pub why: String,
    /// One per column, in column order.
    pub cells: Vec<Cell>,
    /// The task-level cell, when the matrix has that column.
    pub task_cell: Option<Cell>,
}

/// One cell of the coverage matrix: what this item says of this mutation.
pub struct Cell {
    /// `satisfies`, `contradicts`, `unusable` or `none` (the item does not cover it).
    pub class: &'static str,
    /// The finding's code in words, or `—`.
    pub label: String,
}

/// One evidence item: its observation next to its expectation.
pub struct Check {
    /// The item's position in the claim's `evidence` (what findings refer to).
    pub index: usize,
    /// The card's id on the page (`evidence-{index}`), which the timeline links to.
    pub anchor: String,
    /// The item's `check_id`: which contract check it answers.
    pub check_id: Option<String>,
    /// What kind of observation it is (`state_readback`, `endpoint_health`, …).
    pub check_type: String,
    /// What was observed, or `-`.
    pub target: String,
    /// `before`, `command` or `after`: when the gate observed it relative to the
    /// contract's commands.
    pub wave: Option<String>,
    /// The `verifier.id` that says it made the observation.
    pub verifier: String,
    /// `independent`, `self_attested` or `absent`: whether the agent graded itself.
    pub verifier_kind: String,
    /// What the item's own signature amounts to, when it carries one: the agent can
    /// attach any bytes, so "signed" alone would read as authenticated. Accepted only
    /// when the verdict used the item (it then verified with a trusted key).
    pub signature: Option<&'static str>,
    /// When it was observed, as shown: what freshness is judged on.
    pub at: String,
    /// When it was observed, as written (`<time datetime>`).
    pub at_iso: String,
    /// The mutations it covers, or `the task (no mutation)`.
    pub covers: String,
    /// The verdict's code for it (`satisfies`, …), or `no finding`.
    pub code: String,
    /// The code's CSS class.
    pub code_class: &'static str,
    /// The finding's sentence: why the item counted or did not.
    pub detail: String,
    /// The expected keys drawn, those that differ or were not observed first.
    pub keys: Vec<KeyRow>,
    /// Expected keys not drawn (over [`MAX_KEYS`] or the page's allowance).
    pub more_keys: usize,
    /// Observed keys the expectation does not name, as (key, value).
    pub extra: Vec<(String, String)>,
    /// Other observed keys not drawn (over [`MAX_EXTRA`]).
    pub more_extra: usize,
    /// The item's `observation_error`: the observation itself failed.
    pub observation_error: Option<String>,
    /// `observed_value` is not an object: shown whole.
    pub observed_other: Option<String>,
    /// The item of a held-out check: its expectation and observation are not shown.
    pub held_out: bool,
}

/// One expected key.
pub struct KeyRow {
    /// The key, as the expectation names it.
    pub key: String,
    /// The expected value, as JSON (cut to fit the page).
    pub expected: String,
    /// The observed value, as JSON, or `—` when it was not observed.
    pub observed: String,
    /// `match`, `mismatch` or `missing`.
    pub class: &'static str,
    /// The class in words (`matches`, `differs`, `not observed`).
    pub label: &'static str,
}

/// The ledger record itself.
pub struct RecordView {
    /// The record's id in the ledger.
    pub id: u64,
    /// The record's hash: what the next record and its signature bind to.
    pub hash: String,
    /// The hash it says precedes it.
    pub prev_hash: String,
    /// The previous record's page, unless this is record 1.
    pub prev_href: Option<String>,
    /// `sha256:` of the stored claim, to match against a copy someone holds.
    pub claim_digest: String,
    /// `sha256:` of the stored contract, when one was used.
    pub contract_digest: Option<String>,
    /// `ok`, `bad` or `unknown`, and the sentence.
    pub link_class: &'static str,
    /// Whether `prev_hash` is the previous record's hash, in words.
    pub link_text: String,
    /// `ok` (verifies with a trusted key), `bad`, or `unknown` (no trust list, or
    /// unsigned without one).
    pub signature_class: &'static str,
    /// Who signed it and whether that was checked, in words.
    pub signature_text: String,
    /// The decision as JSON, as `GET /v1/decisions/{id}` serves it.
    pub raw: String,
}

/// Builds the decision page from a decision as served.
pub fn decision(d: &DecisionView, prev: &Prev, trust: Option<&TrustList>) -> Explained {
    // The read side removed secrets when the record was appended; a ledger written by
    // an older or another writer is scrubbed again here, so no secret reaches the page.
    let mut claim_v = d.document.clone();
    evident_ledger::redact_in_place(&mut claim_v);
    let mut verdict_v = d.verdict.clone();
    evident_ledger::redact_in_place(&mut verdict_v);
    let record = record_view(d, prev, trust);
    let doc = Claim::parse(
        evident_sign::canonical_json(&claim_v).as_bytes(),
        &format!("record {}", d.id),
    );
    let verdict: Result<Verdict, serde_json::Error> = serde_json::from_value(verdict_v.clone());
    let (doc, verdict, unreadable) = match (doc, verdict) {
        (Ok(doc), Ok(v)) => (Some(doc), Some(v), None),
        (Err(e), _) => (
            None,
            None,
            Some(format!("its claim does not read as a claim: {e}")),
        ),
        (_, Err(e)) => (
            None,
            None,
            Some(format!("its verdict does not read as a verdict: {e}")),
        ),
    };
    let claim = doc.as_ref().map(|doc| &doc.claim);
    let decided = verdict.as_ref().map(|v| v.decided_at.clone());
    let state = d.state.as_str();
    let mut view = Explained {
        id: d.id,
        kind: text::line(&d.kind, 20),
        is_gate: d.kind == "gate",
        is_verify: d.kind == "verify",
        state: state.into(),
        state_class: state_class(state),
        status: status_of(state, d.status.as_deref()),
        task: d
            .task_id
            .as_deref()
            .map_or_else(|| "—".into(), |t| text::line(t, LONG)),
        task_short: d
            .task_id
            .as_deref()
            .map_or_else(|| "—".into(), |t| text::line(t, TASK_SHORT)),
        task_description: claim
            .and_then(|c| c.task.description.as_deref())
            .map(|t| text::lines(t, LONG)),
        requested_by: claim
            .and_then(|c| c.task.requested_by.as_deref())
            .map(|t| text::line(t, SHORT)),
        claimed_outcome: claim
            .and_then(|c| c.claimed_outcome.as_deref())
            .map(|t| text::lines(t, LONG)),
        contract: contract_label(
            d.contract.as_ref().and_then(|c| c.name.as_deref()),
            d.contract.as_ref().map(|c| c.digest.as_str()),
        ),
        contract_digest: d.contract.as_ref().map(|c| text::line(&c.digest, 80)),
        asked_by: d.asked_by.as_deref().map(|a| text::line(a, SHORT)),
        via: d.via.as_deref().map(|v| text::line(v, 40)),
        held_out: d.held_out,
        time: text::stored_time(&d.time),
        time_iso: text::line(&d.time, 40),
        decided_at: decided
            .as_ref()
            .map_or_else(|| "—".into(), |t| text::short_time(t.instant())),
        decided_at_iso: decided
            .as_ref()
            .map_or_else(String::new, |t| text::line(t.as_str(), 40)),
        reason: verdict_v
            .get("reason")
            .and_then(Value::as_str)
            .map_or_else(String::new, |r| text::lines(r, LONG)),
        unmet: verdict
            .as_ref()
            .map(|v| v.unmet.iter().map(|u| text::line(u, SHORT)).collect())
            .unwrap_or_default(),
        policy: Vec::new(),
        unreadable,
        timeline: Vec::new(),
        window: None,
        matrix: Matrix {
            columns: Vec::new(),
            task_column: false,
            rows: Vec::new(),
        },
        checks: Vec::new(),
        more_evidence: 0,
        more_mutations: 0,
        record,
    };
    if let (Some(doc), Some(verdict)) = (&doc, &verdict) {
        fill(&mut view, doc, verdict, &d.time, d.id);
    }
    view
}

fn fill(view: &mut Explained, doc: &ClaimDocument, verdict: &Verdict, recorded: &str, id: u64) {
    let c = &doc.claim;
    let decided = verdict.decided_at.instant();
    let max_age = c.policy.as_ref().and_then(|p| p.max_age_s).map(|m| m.0);
    if let Some(p) = &c.policy {
        let requires: Vec<&str> = p.requires.iter().map(|t| t.as_str()).collect();
        view.policy = vec![
            (
                "policy".into(),
                p.id.as_deref()
                    .map_or_else(|| "(no id)".into(), |i| text::line(i, SHORT)),
            ),
            (
                "requires".into(),
                if requires.is_empty() {
                    "no check type".into()
                } else {
                    requires.join(", ")
                },
            ),
            (
                "max age".into(),
                max_age.map_or_else(|| "none".into(), |m| format!("{} s", fmt_num(m))),
            ),
            (
                "on unverified".into(),
                match p.on_unverified.unwrap_or_default() {
                    evident_format::OnUnverified::Block => "block",
                    evident_format::OnUnverified::Warn => "warn",
                    evident_format::OnUnverified::Record => "record",
                }
                .into(),
            ),
        ];
    } else {
        view.policy = vec![("policy".into(), "none in the document".into())];
    }
    let finding = |i: usize| {
        verdict
            .findings
            .get(i)
            .filter(|f| f.evidence == i)
            .or_else(|| verdict.findings.iter().find(|f| f.evidence == i))
    };
    // Which items are drawn, when there are more than MAX_ITEMS: the agent writes its
    // items first and the gate appends its own, so "the first 200" would let a claim
    // padded with its own items push the gate's contradicting check off the page.
    // Items that decided something (used, or contradicting) are drawn first; of the
    // mutations, those such an item names, then those left uncovered.
    let decisive = |i: usize| finding(i).is_some_and(|f| f.used || f.code == Code::Contradicts);
    let evidence: Vec<(usize, &Evidence)> = pick(c.evidence.len(), |i| u8::from(!decisive(i)))
        .into_iter()
        .map(|i| (i, &c.evidence[i]))
        .collect();
    let mut named_decisive: HashSet<&str> = HashSet::new();
    let mut satisfied_ids: HashMap<&str, Vec<usize>> = HashMap::new();
    let mut named_ids: HashMap<&str, usize> = HashMap::new();
    for (i, e) in c.evidence.iter().enumerate() {
        let sat = finding(i).is_some_and(|f| f.code == Code::Satisfies);
        for id in e.covers.iter().collect::<HashSet<_>>() {
            *named_ids.entry(id.as_str()).or_default() += 1;
            if sat {
                satisfied_ids.entry(id.as_str()).or_default().push(i);
            }
            if decisive(i) {
                named_decisive.insert(id.as_str());
            }
        }
    }
    let mutations: Vec<&evident_format::Mutation> = pick(c.mutations.len(), |j| {
        let id = c.mutations[j].id.as_str();
        if named_decisive.contains(id) {
            0
        } else if !satisfied_ids.contains_key(id) {
            1
        } else {
            2
        }
    })
    .into_iter()
    .map(|j| &c.mutations[j])
    .collect();
    view.more_mutations = c.mutations.len() - mutations.len();
    view.more_evidence = c.evidence.len() - evidence.len();

    // The freshness window: [decided − max_age, decided].
    view.window = Some(match max_age {
        Some(m) => format!(
            "Evidence counts only when observed within {} before the decision: from {} to {}.",
            text::duration(m),
            window_start(decided, m).map_or_else(|| "the beginning".into(), text::short_time),
            text::short_time(decided)
        ),
        None => "The policy sets no max_age_s: evidence of any age counts.".into(),
    });

    // Coverage, by mutation (over every item, drawn or not).
    view.matrix.columns = mutations
        .iter()
        .map(|m| {
            let by = satisfied_ids.get(m.id.as_str());
            Column {
                id: text::line(&m.id, 60),
                label: format!(
                    "{} {}",
                    text::line(&m.kind, 60),
                    text::line(m.target.as_deref().unwrap_or("-"), 60)
                ),
                covered: by.is_some(),
                covered_text: match by {
                    None => format!(
                        "not covered ({} item(s) name it)",
                        named_ids.get(m.id.as_str()).copied().unwrap_or(0)
                    ),
                    Some(by) => {
                        let mut t = format!(
                            "covered by {}",
                            by.iter()
                                .take(20)
                                .map(|i| format!("[{i}]"))
                                .collect::<Vec<_>>()
                                .join(", ")
                        );
                        if by.len() > 20 {
                            t.push_str(&format!(" and {} more", by.len() - 20));
                        }
                        t
                    }
                },
            }
        })
        .collect();
    view.matrix.task_column = evidence.iter().any(|(_, e)| e.covers.is_empty());
    let mut budget = Budget::default();
    let raw_items: Vec<&str> = doc.raw.items("evidence").collect();
    for &(i, e) in &evidence {
        let f = finding(i);
        let covers: HashSet<&str> = e.covers.iter().map(String::as_str).collect();
        let (class, label, why) = match f {
            Some(f) => (
                code_class(f.code),
                cell_label(f.code),
                text::line(&f.detail, 400),
            ),
            None => ("unusable", "no finding".into(), String::new()),
        };
        // The finding's sentence is the row's, once: repeated in each of up to
        // 200 x 200 cells it would make the page hundreds of megabytes.
        let cell = |covers: bool| {
            if covers {
                Cell {
                    class,
                    label: label.clone(),
                }
            } else {
                Cell {
                    class: "none",
                    label: "—".into(),
                }
            }
        };
        view.matrix.rows.push(MatrixRow {
            label: item_label(i, e),
            anchor: format!("evidence-{i}"),
            why,
            cells: mutations
                .iter()
                .map(|m| cell(covers.contains(m.id.as_str())))
                .collect(),
            task_cell: view.matrix.task_column.then(|| cell(e.covers.is_empty())),
        });
        view.checks
            .push(check(i, raw_items.get(i).copied(), e, f, &mut budget));
    }

    // The timeline.
    let mut events: Vec<(OffsetDateTime, Event)> = Vec::new();
    let rel = |t: OffsetDateTime| {
        let s = text::seconds_between(t, decided);
        if s.abs() < 0.0005 {
            "at the decision".to_string()
        } else if s > 0.0 {
            format!("{} before the decision", text::duration(s))
        } else {
            format!("{} after the decision", text::duration(s))
        }
    };
    let in_window = |t: OffsetDateTime| {
        let age = text::seconds_between(t, decided);
        age >= 0.0 && max_age.is_none_or(|m| age <= m)
    };
    for m in &mutations {
        let t = m.at.instant();
        events.push((
            t,
            Event {
                time: text::short_time(t),
                time_iso: text::line(m.at.as_str(), 40),
                class: "mutation",
                title: format!("mutation {}", text::line(&m.id, SHORT)),
                detail: format!(
                    "{} {} (the agent says it made this change then)",
                    text::line(&m.kind, SHORT),
                    text::line(m.target.as_deref().unwrap_or("-"), SHORT)
                ),
                relative: rel(t),
                freshness: "",
                code: String::new(),
                code_class: "none",
                in_window: max_age.is_some() && in_window(t),
                gap: None,
                anchor: String::new(),
            },
        ));
    }
    for &(i, e) in &evidence {
        let t = e.at.instant();
        let age = text::seconds_between(t, decided);
        let freshness = if age < 0.0 {
            "future"
        } else if max_age.is_some_and(|m| age > m) {
            "stale"
        } else {
            "fresh"
        };
        let f = finding(i);
        let who = if e.verifier.kind == evident_format::VerifierKind::Independent {
            text::line(&e.verifier.id, SHORT)
        } else {
            format!(
                "{} ({})",
                text::line(&e.verifier.id, SHORT),
                verifier_kind(e)
            )
        };
        events.push((
            t,
            Event {
                time: text::short_time(t),
                time_iso: text::line(e.at.as_str(), 40),
                class: "evidence",
                title: item_label(i, e),
                detail: format!("observed by {who}; covers {}", covers_text(e),),
                relative: rel(t),
                freshness,
                code: f.map_or_else(String::new, |f| f.code.as_str().to_string()),
                code_class: f.map_or("unusable", |f| code_class(f.code)),
                in_window: max_age.is_some() && freshness == "fresh",
                gap: None,
                anchor: format!("evidence-{i}"),
            },
        ));
    }
    if let Some(m) = max_age
        && let Some(start) = window_start(decided, m)
    {
        events.push((
            start,
            Event {
                time: text::short_time(start),
                time_iso: String::new(),
                class: "window",
                title: "freshness window opens".into(),
                detail: format!(
                    "max_age_s = {}: evidence observed before this is stale",
                    fmt_num(m)
                ),
                relative: rel(start),
                freshness: "",
                code: String::new(),
                code_class: "none",
                in_window: true,
                gap: None,
                anchor: String::new(),
            },
        ));
    }
    events.push((
        decided,
        Event {
            time: text::short_time(decided),
            time_iso: text::line(verdict.decided_at.as_str(), 40),
            class: "decision",
            title: format!("decided: {}", verdict.state.as_str()),
            detail: if max_age.is_some() {
                "the freshness window closes".into()
            } else {
                String::new()
            },
            relative: String::new(),
            freshness: "",
            code: verdict.state.as_str().into(),
            code_class: state_class(verdict.state.as_str()),
            in_window: max_age.is_some(),
            gap: None,
            anchor: String::new(),
        },
    ));
    if let Ok(t) = Timestamp::parse(recorded) {
        let t = t.instant();
        events.push((
            t,
            Event {
                time: text::short_time(t),
                time_iso: text::line(recorded, 40),
                class: "recorded",
                title: format!("recorded as #{id}"),
                detail: String::new(),
                relative: rel(t),
                freshness: "",
                code: String::new(),
                code_class: "none",
                in_window: false,
                gap: None,
                anchor: "record".into(),
            },
        ));
    }
    // Stable: at the same instant, mutations come before evidence before the window.
    events.sort_by_key(|(t, _)| *t);
    let mut last: Option<OffsetDateTime> = None;
    for (t, e) in &mut events {
        if let Some(prev) = last {
            let gap = text::seconds_between(prev, *t);
            if gap >= 3600.0 {
                e.gap = Some(format!("{} later", text::duration(gap)));
            }
        }
        last = Some(*t);
    }
    view.timeline = events.into_iter().map(|(_, e)| e).collect();
}

/// The indexes of at most [`MAX_ITEMS`] of `n` items, those of the lowest rank
/// first (then in document order), returned in document order.
fn pick(n: usize, rank: impl Fn(usize) -> u8) -> Vec<usize> {
    let mut idx: Vec<usize> = (0..n).collect();
    if n > MAX_ITEMS {
        idx.sort_by_key(|&i| (rank(i), i));
        idx.truncate(MAX_ITEMS);
        idx.sort_unstable();
    }
    idx
}

/// What is left of the page's allowance for key rows and value characters.
struct Budget {
    keys: usize,
    chars: usize,
}

impl Default for Budget {
    fn default() -> Self {
        Budget {
            keys: MAX_PAGE_KEYS,
            chars: MAX_PAGE_VALUES,
        }
    }
}

impl Budget {
    /// A value as shown, cut harder once the page's allowance is spent.
    fn value(&mut self, v: &Value) -> String {
        let max = if self.chars > 0 { VALUE } else { SPENT_VALUE };
        let shown = text::json(v, max);
        self.chars = self.chars.saturating_sub(shown.chars().count());
        shown
    }
}

fn window_start(decided: OffsetDateTime, max_age: f64) -> Option<OffsetDateTime> {
    time::Duration::checked_seconds_f64(max_age).and_then(|d| decided.checked_sub(d))
}

fn fmt_num(n: f64) -> String {
    if n.fract() == 0.0 && n.abs() < 1e15 {
        format!("{}", n as i64)
    } else {
        format!("{n}")
    }
}

fn code_class(code: Code) -> &'static str {
    match code {
        Code::Satisfies => "satisfies",
        Code::Contradicts => "contradicts",
        _ => "unusable",
    }
}

fn cell_label(code: Code) -> String {
    match code {
        Code::Satisfies | Code::Contradicts => code.as_str().into(),
        other => format!("not usable: {}", other.as_str()),
    }
}

fn verifier_kind(e: &Evidence) -> &'static str {
    match e.verifier.kind {
        evident_format::VerifierKind::Independent => "independent",
        evident_format::VerifierKind::SelfAttested => "self_attested",
        evident_format::VerifierKind::Absent => "absent",
    }
}

fn covers_text(e: &Evidence) -> String {
    if e.covers.is_empty() {
        "the task (no mutation)".into()
    } else {
        text::line(&e.covers.join(", "), SHORT)
    }
}

/// `[1] state_readback zip-4472 (before)`.
fn item_label(i: usize, e: &Evidence) -> String {
    let mut s = format!("[{i}] {}", text::line(&e.check_type, SHORT));
    if let Some(id) = &e.check_id {
        s.push(' ');
        s.push_str(&text::line(id, SHORT));
    }
    if let Some(w) = e.wave {
        s.push_str(&format!(" ({})", w.as_str()));
    }
    s
}

/// One evidence item's card; `raw` is the item's text in the document.
fn check(
    i: usize,
    raw: Option<&str>,
    e: &Evidence,
    f: Option<&evident_rules::Finding>,
    budget: &mut Budget,
) -> Check {
    let held_out = raw
        .map(evident_format::json::value_of)
        .and_then(|item| item.get("held_out").cloned())
        == Some(Value::Bool(true));
    let (expected, observed) = (e.expected.to_object(), e.observed_value.to_object());
    let (expected, observed) = (expected.as_ref(), observed.as_ref());
    let health = e.check_type == "endpoint_health";
    let empty = Map::new();
    let judged: Vec<(&String, &Value, Option<&Value>, &'static str, &'static str)> = expected
        .unwrap_or(&empty)
        .iter()
        .map(|(k, want)| {
            let got = observed.and_then(|o| o.get(k));
            let (class, label) = match got {
                None => ("missing", "not observed"),
                Some(_) => {
                    let mut one = Map::new();
                    one.insert(k.clone(), want.clone());
                    match evident_rules::compare::compare_object(
                        &one,
                        observed.unwrap_or(&empty),
                        health,
                    ) {
                        evident_rules::compare::Cmp::Match => ("match", "matches"),
                        evident_rules::compare::Cmp::Missing(_) => ("missing", "not observed"),
                        evident_rules::compare::Cmp::Contradiction { .. } => {
                            ("mismatch", "differs")
                        }
                    }
                }
            };
            (k, want, got, class, label)
        })
        .collect();
    // Keys that differ or were not observed are drawn before those that match.
    let room = MAX_KEYS.min(budget.keys);
    let mut order: Vec<usize> = (0..judged.len()).collect();
    if judged.len() > room {
        order.sort_by_key(|&n| (judged[n].3 == "match", n));
        order.truncate(room);
        order.sort_unstable();
    }
    budget.keys -= order.len();
    let more_keys = judged.len() - order.len();
    let keys = order
        .into_iter()
        .map(|n| {
            let (k, want, got, class, label) = judged[n];
            KeyRow {
                key: text::line(k, SHORT),
                expected: budget.value(want),
                observed: got.map_or_else(|| "—".into(), |g| budget.value(g)),
                class,
                label,
            }
        })
        .collect();
    let extra: Vec<(String, String)> = observed
        .map(|o| {
            o.iter()
                .filter(|(k, _)| expected.is_none_or(|x| !x.contains_key(*k)))
                .take(MAX_EXTRA)
                .map(|(k, v)| (text::line(k, SHORT), budget.value(v)))
                .collect()
        })
        .unwrap_or_default();
    let more_extra = observed.map_or(0, |o| {
        o.keys()
            .filter(|k| expected.is_none_or(|x| !x.contains_key(*k)))
            .count()
            - extra.len()
    });
    Check {
        index: i,
        anchor: format!("evidence-{i}"),
        check_id: e.check_id.as_deref().map(|s| text::line(s, SHORT)),
        check_type: text::line(&e.check_type, SHORT),
        target: text::line(e.target.as_deref().unwrap_or("-"), 400),
        wave: e.wave.map(|w| w.as_str().to_string()),
        verifier: text::line(&e.verifier.id, SHORT),
        verifier_kind: verifier_kind(e).into(),
        signature: e.signature.as_ref().map(|_| {
            if f.is_some_and(|f| f.used) {
                "signature accepted by the verdict"
            } else {
                "carries a signature the verdict did not accept"
            }
        }),
        at: text::short_time(e.at.instant()),
        at_iso: text::line(e.at.as_str(), 40),
        covers: covers_text(e),
        code: f.map_or_else(|| "no finding".into(), |f| f.code.as_str().to_string()),
        code_class: f.map_or("unusable", |f| code_class(f.code)),
        detail: f.map_or_else(String::new, |f| text::line(&f.detail, LONG)),
        keys,
        more_keys,
        extra,
        more_extra,
        observation_error: e.observation_error.as_deref().map(|s| text::lines(s, LONG)),
        observed_other: (!held_out && !e.observed_value.is_object())
            .then(|| budget.value(&e.observed_value.to_value())),
        held_out,
    }
}

fn record_view(d: &DecisionView, prev: &Prev, trust: Option<&TrustList>) -> RecordView {
    let (link_class, link_text) = match prev {
        Prev::Genesis if d.prev_hash == evident_ledger::GENESIS => (
            "ok",
            "the first record: it follows the genesis value".to_string(),
        ),
        Prev::Genesis => (
            "bad",
            "the first record, but its prev_hash is not the genesis value".to_string(),
        ),
        Prev::Hash(h) if *h == d.prev_hash => (
            "ok",
            format!(
                "follows record #{}: its prev_hash is that record's hash",
                d.id.saturating_sub(1)
            ),
        ),
        Prev::Hash(h) => (
            "bad",
            format!(
                "does not follow record #{}: that record's hash is {}",
                d.id.saturating_sub(1),
                text::line(h, 64)
            ),
        ),
        Prev::Unreadable(why) => (
            "unknown",
            format!(
                "record #{} could not be read: {}",
                d.id.saturating_sub(1),
                text::line(why, 400)
            ),
        ),
    };
    let sig_text = d.signature.as_ref().map(evident_sign::canonical_json);
    let parsed: Option<Result<RecordSignature, serde_json::Error>> =
        sig_text.as_deref().map(serde_json::from_str);
    let (signature_class, signature_text) = match (parsed, trust) {
        (None, Some(_)) => (
            "bad",
            "not signed: whoever appended it had no key the trust list names".to_string(),
        ),
        (None, None) => ("unknown", "not signed".to_string()),
        (Some(Err(e)), _) => (
            "bad",
            format!(
                "the signature is malformed ({})",
                text::line(&e.to_string(), 400)
            ),
        ),
        (Some(Ok(s)), None) => (
            "unknown",
            format!(
                "signed as {} (key {}); not checked: the page was given no trust list",
                text::line(&s.verifier, SHORT),
                text::line(&s.keyid, 80)
            ),
        ),
        (Some(Ok(s)), Some(trust)) => {
            match RecordSignature::check(sig_text.as_deref(), &d.hash, trust) {
                Ok(()) => (
                    "ok",
                    format!(
                        "signed as {} (key {}): the signature verifies with a key the trust list gives it",
                        text::line(&s.verifier, SHORT),
                        text::line(&s.keyid, 80)
                    ),
                ),
                Err(why) => ("bad", text::line(&why.0, 400)),
            }
        }
    };
    // The decision as `GET /v1/decisions/{id}` serves it (held-out detail removed).
    let mut shown = serde_json::to_value(d).unwrap_or_default();
    evident_ledger::redact_in_place(&mut shown);
    let raw = serde_json::to_string_pretty(&shown).unwrap_or_default();
    RecordView {
        id: d.id,
        hash: text::line(&d.hash, 80),
        prev_hash: text::line(&d.prev_hash, 80),
        prev_href: (d.id > 1).then(|| format!("/decisions/{}", d.id - 1)),
        claim_digest: text::line(&d.claim_digest, 80),
        contract_digest: d.contract.as_ref().map(|c| text::line(&c.digest, 80)),
        link_class,
        link_text,
        signature_class,
        signature_text,
        raw: text::lines(&raw, MAX_RAW),
    }
}
