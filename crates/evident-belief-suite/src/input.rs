//! The `evident belief` input file, parsed strictly, and the belief's reports.
//!
//! ```json
//! { "goal": "out/report.txt contains 'FINAL REPORT'",
//!   "items": [
//!     { "epoch": "did", "supports": true,  "strength": 0.9,  "lineage": "did:out/report.txt" },
//!     { "epoch": "saw", "supports": false, "strength": 0.85, "lineage": "saw:filesystem:out/report.txt" } ] }
//! ```
//!
//! Unknown fields and duplicate keys are errors (a typo in `derived` must not silently
//! count an aggregate verdict). Every error names the JSON path.

use std::fmt::Write as _;

use evident_rules::belief::{
    self, Belief, BeliefError, Blocker, Epoch, Fate, Item, STRENGTH_CONTRARY, STRENGTH_SUPPORT,
};
use serde::{Deserialize, Serialize};

/// The file as written.
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct File {
    goal: String,
    items: Vec<Strict<FileItem>>,
}

/// Only a JSON object may stand for a struct: serde would otherwise also accept an
/// array of the fields in order (`["goal", []]`), which no one means.
#[derive(Debug)]
struct Strict<T>(T);

impl<'de, T: Deserialize<'de>> Deserialize<'de> for Strict<T> {
    fn deserialize<D: serde::Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        struct Only<T>(std::marker::PhantomData<T>);
        impl<'de, T: Deserialize<'de>> serde::de::Visitor<'de> for Only<T> {
            type Value = T;
            fn expecting(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
                f.write_str("a JSON object")
            }
            fn visit_map<A: serde::de::MapAccess<'de>>(self, map: A) -> Result<T, A::Error> {
                T::deserialize(serde::de::value::MapAccessDeserializer::new(map))
            }
        }
        d.deserialize_map(Only(std::marker::PhantomData))
            .map(Strict)
    }
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct FileItem {
    #[serde(default)]
    goal: Option<String>,
    epoch: Epoch,
    supports: bool,
    #[serde(default)]
    strength: Option<f64>,
    lineage: String,
    #[serde(default)]
    derived: bool,
    #[serde(default)]
    blocker: Option<Blocker>,
    #[serde(default)]
    note: Option<String>,
}

/// A parsed input: the goal and its items (defaults filled in).
#[derive(Debug, Clone, PartialEq)]
pub struct Input {
    /// The goal the belief is about.
    pub goal: String,
    /// The items; an item without `goal` is about the file's goal.
    pub items: Vec<Item>,
}

/// Why an input was refused: the JSON path and what is wrong there.
#[derive(Debug, Clone, PartialEq)]
pub struct InputError {
    /// JSON path, e.g. `items[2].strength` (`.` for the whole document).
    pub path: String,
    /// What is wrong.
    pub message: String,
}

impl std::fmt::Display for InputError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{}: {}", self.path, self.message)
    }
}

impl std::error::Error for InputError {}

impl From<BeliefError> for InputError {
    fn from(e: BeliefError) -> InputError {
        let path = match &e {
            BeliefError::Strength { index, .. } => format!("items[{index}].strength"),
            BeliefError::EmptyLineage { index } => format!("items[{index}].lineage"),
            BeliefError::Caution { .. } => "caution".to_owned(),
        };
        let full = e.to_string();
        let message = full
            .strip_prefix(&format!("{path}: "))
            .unwrap_or(&full)
            .to_owned();
        InputError { path, message }
    }
}

/// Parse an input file. Strength defaults to 0.9 for a supporting item and 0.85 for a
/// contrary one (the seed's values); `derived` defaults to false.
pub fn parse(bytes: &[u8]) -> Result<Input, InputError> {
    let de = &mut serde_json::Deserializer::from_slice(bytes);
    let Strict(file): Strict<File> = serde_path_to_error::deserialize(&mut *de).map_err(|e| {
        let path = e.path().to_string();
        InputError {
            path,
            message: e.into_inner().to_string(),
        }
    })?;
    de.end().map_err(|e| InputError {
        path: ".".into(),
        message: e.to_string(),
    })?;
    if file.goal.trim().is_empty() {
        return Err(InputError {
            path: "goal".into(),
            message: "must not be empty".into(),
        });
    }
    let goal = file.goal;
    let items = file
        .items
        .into_iter()
        .map(|Strict(i)| Item {
            goal: i.goal.unwrap_or_else(|| goal.clone()),
            epoch: i.epoch,
            supports: i.supports,
            strength: i.strength.unwrap_or(if i.supports {
                STRENGTH_SUPPORT
            } else {
                STRENGTH_CONTRARY
            }),
            lineage: i.lineage,
            derived: i.derived,
            blocker: i.blocker,
            note: i.note,
        })
        .collect();
    Ok(Input { goal, items })
}

/// Parse and decide in one step; errors name the JSON path.
pub fn assess(bytes: &[u8], caution: f64) -> Result<(Input, Belief), InputError> {
    let input = parse(bytes)?;
    let b = belief::assess(&input.goal, &input.items, caution)?;
    Ok((input, b))
}

/// One item with its fate, for `--json`.
#[derive(Debug, Serialize)]
pub struct ItemReport<'a> {
    /// Position in the input.
    pub index: usize,
    /// The item as weighed.
    #[serde(flatten)]
    pub item: &'a Item,
    /// Counted, collapsed (into which), derived, other goal.
    #[serde(flatten)]
    pub fate: Fate,
    /// Log-odds added.
    pub log_odds: f64,
}

/// The `--json` document.
#[derive(Debug, Serialize)]
pub struct BeliefReport<'a> {
    /// The goal.
    pub goal: &'a str,
    /// Prior.
    pub prior: f64,
    /// Posterior.
    pub posterior: f64,
    /// Caution used.
    pub caution: f64,
    /// Bar.
    pub bar: f64,
    /// Accepted.
    pub accepted: bool,
    /// A counted fresh observation contradicts the goal (never accepted).
    pub vetoed: bool,
    /// Items counted.
    pub counted: usize,
    /// Route when not accepted.
    pub route: Option<belief::Route>,
    /// Reason.
    pub reason: &'a str,
    /// Every item and its fate.
    pub items: Vec<ItemReport<'a>>,
}

/// Build the `--json` document.
pub fn report<'a>(input: &'a Input, b: &'a Belief) -> BeliefReport<'a> {
    BeliefReport {
        goal: &b.goal,
        prior: b.prior,
        posterior: b.posterior,
        caution: b.caution,
        bar: b.bar,
        accepted: b.accepted,
        vetoed: b.vetoed,
        counted: b.counted,
        route: b.route,
        reason: &b.reason,
        items: b
            .contributions
            .iter()
            .filter_map(|c| {
                input.items.get(c.index).map(|item| ItemReport {
                    index: c.index,
                    item,
                    fate: c.fate,
                    log_odds: c.log_odds,
                })
            })
            .collect(),
    }
}

/// The human-readable report.
pub fn render(input: &Input, b: &Belief) -> String {
    let mut out = String::new();
    let _ = writeln!(out, "goal: {}", b.goal);
    let _ = writeln!(
        out,
        "{:>3}  {:<5} {:<8} {:>8}  {:<36} {:<16} {:>8}",
        "#", "epoch", "supports", "strength", "lineage", "fate", "log-odds"
    );
    for c in &b.contributions {
        let Some(i) = input.items.get(c.index) else {
            continue;
        };
        let fate = match c.fate {
            Fate::Counted => "counted".to_owned(),
            Fate::Collapsed { into } => format!("collapsed into {into}"),
            Fate::Derived => "dropped: derived".to_owned(),
            Fate::OtherGoal => "other goal".to_owned(),
        };
        let epoch = match i.epoch {
            Epoch::Did => "did",
            Epoch::Saw => "saw",
        };
        let _ = writeln!(
            out,
            "{:>3}  {:<5} {:<8} {:>8.2}  {:<36} {:<16} {:>+8.3}",
            c.index,
            epoch,
            if i.supports { "yes" } else { "no" },
            i.strength,
            i.lineage,
            fate,
            c.log_odds
        );
        if let Some(n) = &i.note {
            let _ = writeln!(out, "       {n}");
        }
    }
    let _ = writeln!(
        out,
        "prior {:.2} -> posterior {:.6} ({} counted of {}); bar {:.2} (caution {}) -> {}",
        b.prior,
        b.posterior,
        b.counted,
        b.contributions.len(),
        b.bar,
        b.caution,
        match (b.accepted, b.vetoed) {
            (true, _) => "ACCEPTED",
            (false, true) => "NOT ACCEPTED (vetoed by a fresh observation)",
            (false, false) => "NOT ACCEPTED",
        }
    );
    match b.route {
        Some(r) => {
            let _ = writeln!(out, "route: {} — {}", crate::suite::route_name(r), b.reason);
        }
        None => {
            let _ = writeln!(out, "{}", b.reason);
        }
    }
    out
}
