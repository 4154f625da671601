//! Completion as a calibrated belief (seed 004).
//!
//! A task's goal G starts at a low prior and moves only on evidence. Two kinds of
//! evidence are kept apart: DID (the action's own report: "my tool returned success")
//! and SAW (a fresh re-observation of the world after the last action). Correlated
//! confirmations count once: items sharing a causal lineage collapse to their strongest
//! member, and items derived from other evidence (an aggregate "verified") are dropped.
//! The goal is accepted only when the posterior clears a bar that rises with caution
//! and no counted fresh observation contradicts it.
//!
//! Pure: no clock, no I/O. Every item's fate and contribution is reported so a person
//! can see why the belief is where it is.

use std::collections::BTreeMap;

use serde::{Deserialize, Serialize};

/// Prior belief that a task's goal holds before any evidence (the seed's 0.15).
pub const PRIOR: f64 = 0.15;
/// Log-odds gain per unit of strength: an item moves the odds by `exp(±GAIN·strength)`.
pub const GAIN: f64 = 3.0;
/// The posterior is clamped to `[FLOOR, 1 − FLOOR]` so no belief becomes irrefutable.
pub const FLOOR: f64 = 1e-6;
/// The acceptance bar at caution 0.
pub const BASE_BAR: f64 = 0.95;
/// How much the bar rises per unit of caution (caution is in `[0, 1]`).
pub const CAUTION_STEP: f64 = 0.04;
/// Strength of a tool effect or an independent observation that supports the goal.
pub const STRENGTH_SUPPORT: f64 = 0.9;
/// Strength of any item that contradicts the goal.
pub const STRENGTH_CONTRARY: f64 = 0.85;
/// Strength of a bare success flag (a report with no tool run behind it).
pub const STRENGTH_BARE_FLAG: f64 = 0.3;

/// Which channel an item came through.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Epoch {
    /// The action runtime's own report of what it did (or of what it read back).
    Did,
    /// A fresh re-observation of the world after the last action, by an observer that
    /// does not reuse the action's result.
    Saw,
}

/// A reason outside the agent's control that made a tool fail. Retrying or replanning
/// will not help; a person must act.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Blocker {
    /// The agent lacks permission (EACCES, EPERM, read-only filesystem, 403).
    Permission,
    /// Something the tool needs is not installed or not reachable.
    MissingDependency,
}

impl Blocker {
    /// The words used in a routing reason.
    pub fn describe(self) -> &'static str {
        match self {
            Blocker::Permission => "permission denied",
            Blocker::MissingDependency => "a missing dependency",
        }
    }
}

/// One piece of evidence about one goal.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Item {
    /// The goal this item is about; items about another goal are not counted.
    pub goal: String,
    /// DID (the action's report) or SAW (a fresh observation).
    pub epoch: Epoch,
    /// Whether the item says the goal holds.
    pub supports: bool,
    /// How strong the item is, in `[0, 1]`.
    pub strength: f64,
    /// The causal source; items with equal lineage are one measurement.
    pub lineage: String,
    /// Derived from other evidence (an aggregate verdict); never counted.
    #[serde(default)]
    pub derived: bool,
    /// Set on a contrary item when the failure was caused outside the agent.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub blocker: Option<Blocker>,
    /// Free text shown to a person (what the tool said, what was observed).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub note: Option<String>,
}

impl Item {
    /// The log-odds this item would add if counted.
    pub fn weight(&self) -> f64 {
        let w = GAIN * self.strength;
        if self.supports { w } else { -w }
    }
}

/// What happened to one item.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(tag = "fate", rename_all = "snake_case")]
pub enum Fate {
    /// The strongest of its lineage: one update.
    Counted,
    /// Same lineage as a stronger item (or an equal one listed earlier); not counted.
    Collapsed {
        /// Index of the item that was counted for this lineage.
        into: usize,
    },
    /// Derived from other evidence; never counted.
    Derived,
    /// About another goal; not counted for this one.
    OtherGoal,
}

/// One item's part in the belief.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Contribution {
    /// Position of the item in the input.
    pub index: usize,
    /// Counted, collapsed, dropped as derived, or about another goal.
    #[serde(flatten)]
    pub fate: Fate,
    /// Log-odds added to the belief (0 unless counted).
    pub log_odds: f64,
}

/// What to do when the goal is not accepted (the seed's routing).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum Route {
    /// Evidence is missing (no fresh observation, or not enough independent ones):
    /// observe the goal another way.
    ObserveAnotherWay,
    /// A fresh observation contradicts the goal: the plan did not work.
    Replan,
    /// A tool failed for a reason outside the agent: a person must act.
    Escalate,
}

/// The belief about one goal after weighing its evidence.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Belief {
    /// The goal.
    pub goal: String,
    /// The prior (always [`PRIOR`]).
    pub prior: f64,
    /// The posterior, clamped to `[FLOOR, 1 − FLOOR]`.
    pub posterior: f64,
    /// The caution used.
    pub caution: f64,
    /// The bar: `BASE_BAR + CAUTION_STEP · caution`.
    pub bar: f64,
    /// `posterior ≥ bar` and not vetoed.
    pub accepted: bool,
    /// A counted SAW item contradicts the goal. Such a goal is never accepted, however
    /// high the posterior: a goal is usually a conjunction ("a, b and c contain X"),
    /// and action reports about its other parts must not outvote a fresh look that
    /// found one part missing. (evident's addition; the seed has no veto.)
    pub vetoed: bool,
    /// Number of items counted (one per lineage).
    pub counted: usize,
    /// One entry per input item, in input order.
    pub contributions: Vec<Contribution>,
    /// Why the goal is not accepted and what to do; `None` when accepted.
    pub route: Option<Route>,
    /// One sentence a person can act on.
    pub reason: String,
}

/// Input the model refuses: it would otherwise silently compute nonsense.
#[derive(Debug, Clone, PartialEq)]
pub enum BeliefError {
    /// Strength must be a finite number in `[0, 1]`.
    Strength {
        /// Index of the offending item.
        index: usize,
        /// The value given.
        value: f64,
    },
    /// Lineage must be non-empty: an item with no source cannot be checked for
    /// independence.
    EmptyLineage {
        /// Index of the offending item.
        index: usize,
    },
    /// Caution must be a finite number in `[0, 1]`.
    Caution {
        /// The value given.
        value: f64,
    },
}

impl std::fmt::Display for BeliefError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            BeliefError::Strength { index, value } => write!(
                f,
                "items[{index}].strength: {value} is not a number in [0, 1]"
            ),
            BeliefError::EmptyLineage { index } => {
                write!(f, "items[{index}].lineage: must not be empty")
            }
            BeliefError::Caution { value } => {
                write!(f, "caution: {value} is not a number in [0, 1]")
            }
        }
    }
}

impl std::error::Error for BeliefError {}

/// The bar a posterior must reach: 0.95 at caution 0, 0.99 at caution 1.
pub fn bar(caution: f64) -> f64 {
    BASE_BAR + CAUTION_STEP * caution
}

/// The posterior from a sum of counted log-odds, clamped.
pub fn posterior_from_log_odds(sum: f64) -> f64 {
    let lo = (PRIOR / (1.0 - PRIOR)).ln() + sum;
    // Logistic written so that neither branch overflows.
    let p = if lo >= 0.0 {
        1.0 / (1.0 + (-lo).exp())
    } else {
        let e = lo.exp();
        e / (1.0 + e)
    };
    if p.is_nan() {
        // Only reachable with an infinite sum of both signs; treat as no evidence.
        return PRIOR;
    }
    p.clamp(FLOOR, 1.0 - FLOOR)
}

/// Goal polarity: whether the goal is a presence ("the file exists with X") or an
/// absence ("the lock file is gone"). Read from the operation, it tells the world how
/// to turn a tool report or an observation into support.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Polarity {
    /// The goal is that something is there.
    Presence,
    /// The goal is that something is gone.
    Absence,
}

/// Error texts that mean "the target is not there". For an absence goal a tool that
/// failed this way achieved the intent.
const NOT_THERE: [&str; 4] = ["not found", "no such", "does not exist", "cannot find"];

impl Polarity {
    /// Whether a fresh observation of the target supports the goal.
    pub fn saw_supports(self, target_present: bool) -> bool {
        match self {
            Polarity::Presence => target_present,
            Polarity::Absence => !target_present,
        }
    }

    /// Whether an action's own report supports the goal. For an absence goal, a failure
    /// whose error says the target is not there counts as intent achieved.
    pub fn did_supports(self, success: bool, error: Option<&str>) -> bool {
        if success {
            return true;
        }
        match (self, error) {
            (Polarity::Absence, Some(e)) => {
                let e = e.to_lowercase();
                NOT_THERE.iter().any(|p| e.contains(p))
            }
            _ => false,
        }
    }
}

/// Whether `a` outranks `b` within one lineage: stronger wins; on equal strength a
/// contrary item wins (the conservative choice), then a DID item (an observation that
/// shares its lineage with an action report is not independent of it). On a full tie
/// the earlier item is kept; the result is the same either way, so order never matters.
fn outranks(a: &Item, b: &Item) -> bool {
    if a.strength != b.strength {
        return a.strength > b.strength;
    }
    if a.supports != b.supports {
        return !a.supports;
    }
    a.epoch == Epoch::Did && b.epoch == Epoch::Saw
}

/// Weigh `items` for `goal` at `caution` (in `[0, 1]`).
///
/// Rules, in order: items about another goal and derived items are not counted; the
/// rest group by lineage and only the strongest of each group counts; the counted
/// log-odds are summed in lineage order (so item order never changes the result, not
/// even in the last bit) and the posterior is clamped once, at the end. The goal is
/// accepted when the posterior reaches the bar and no counted SAW item contradicts it.
pub fn assess(goal: &str, items: &[Item], caution: f64) -> Result<Belief, BeliefError> {
    if !caution.is_finite() || !(0.0..=1.0).contains(&caution) {
        return Err(BeliefError::Caution { value: caution });
    }
    for (index, item) in items.iter().enumerate() {
        if !item.strength.is_finite() || !(0.0..=1.0).contains(&item.strength) {
            return Err(BeliefError::Strength {
                index,
                value: item.strength,
            });
        }
        if item.lineage.is_empty() {
            return Err(BeliefError::EmptyLineage { index });
        }
    }

    // Strongest item per lineage.
    let mut best: BTreeMap<&str, usize> = BTreeMap::new();
    for (index, item) in items.iter().enumerate() {
        if item.goal != goal || item.derived {
            continue;
        }
        best.entry(item.lineage.as_str())
            .and_modify(|b| {
                if outranks(item, &items[*b]) {
                    *b = index;
                }
            })
            .or_insert(index);
    }

    let contributions: Vec<Contribution> = items
        .iter()
        .enumerate()
        .map(|(index, item)| {
            let fate = if item.goal != goal {
                Fate::OtherGoal
            } else if item.derived {
                Fate::Derived
            } else {
                match best.get(item.lineage.as_str()) {
                    Some(&b) if b == index => Fate::Counted,
                    Some(&b) => Fate::Collapsed { into: b },
                    None => Fate::Counted, // unreachable: every kept item has an entry
                }
            };
            let log_odds = if fate == Fate::Counted {
                item.weight()
            } else {
                0.0
            };
            Contribution {
                index,
                fate,
                log_odds,
            }
        })
        .collect();

    let sum: f64 = best.values().map(|&i| items[i].weight()).sum();
    let posterior = posterior_from_log_odds(sum);
    let bar = bar(caution);
    let counted: Vec<&Item> = best.values().map(|&i| &items[i]).collect();
    let vetoed = counted.iter().any(|i| i.epoch == Epoch::Saw && !i.supports);
    let accepted = posterior >= bar && !vetoed;
    let (route, reason) = route(goal, items, &counted, posterior, bar, accepted);

    Ok(Belief {
        goal: goal.to_owned(),
        prior: PRIOR,
        posterior,
        caution,
        bar,
        accepted,
        vetoed,
        counted: counted.len(),
        contributions,
        route,
        reason,
    })
}

/// Withholds acceptance when a fresh observation could not judge every goal condition
/// (`unjudged`: an I/O error, a copy whose source is unreadable): fail closed, whatever
/// the DID items say, and route to observing another way. Kept apart from [`assess`]
/// because an unjudged condition yields no item to weigh; a belief that is not
/// accepted, or whose conditions were all judged, is returned unchanged.
pub fn withhold_unjudged(mut belief: Belief, unjudged: bool) -> Belief {
    if unjudged && belief.accepted {
        belief.accepted = false;
        belief.route = Some(Route::ObserveAnotherWay);
        belief.reason = "Not accepted: the fresh observation could not judge every goal condition; observe it another way.".into();
    }
    belief
}

/// The routing reason. Escalation looks at every non-derived item of the goal, not
/// only the counted ones: a tool that was blocked by something outside the agent is a
/// fact even when a stronger report of the same lineage outranks it.
fn route(
    goal: &str,
    items: &[Item],
    counted: &[&Item],
    posterior: f64,
    bar: f64,
    accepted: bool,
) -> (Option<Route>, String) {
    if accepted {
        return (
            None,
            format!("accepted: posterior {posterior:.6} reached the bar {bar:.2}"),
        );
    }
    let blocker = items
        .iter()
        .filter(|i| i.goal == goal && !i.derived && !i.supports)
        .filter_map(|i| i.blocker)
        .min();
    if let Some(b) = blocker {
        return (
            Some(Route::Escalate),
            format!(
                "escalate to a person: a tool failed because of {}, which is outside the agent",
                b.describe()
            ),
        );
    }
    if counted.iter().any(|i| i.epoch == Epoch::Saw && !i.supports) {
        let veto = if posterior >= bar {
            format!(
                " (the posterior {posterior:.6} clears the bar, but a contradicting fresh observation vetoes acceptance)"
            )
        } else {
            String::new()
        };
        return (
            Some(Route::Replan),
            format!("the plan did not work: a fresh observation contradicts the goal{veto}"),
        );
    }
    if !counted.iter().any(|i| i.epoch == Epoch::Saw) {
        return (
            Some(Route::ObserveAnotherWay),
            "no fresh observation yet: observe the goal another way, independently of the tool that acted".to_owned(),
        );
    }
    (
        Some(Route::ObserveAnotherWay),
        format!(
            "not enough independent evidence (posterior {posterior:.6} < bar {bar:.2}): add an observation through another channel"
        ),
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn prior_alone_is_the_prior() {
        let b = assess("g", &[], 0.0).unwrap();
        assert!((b.posterior - PRIOR).abs() < 1e-12);
        assert!(!b.accepted);
    }

    fn item(epoch: Epoch, lineage: &str) -> Item {
        Item {
            goal: "g".into(),
            epoch,
            supports: true,
            strength: STRENGTH_SUPPORT,
            lineage: lineage.into(),
            derived: false,
            blocker: None,
            note: None,
        }
    }

    #[test]
    fn an_unjudged_condition_withholds_an_accepted_belief() {
        let items = [item(Epoch::Did, "did:a"), item(Epoch::Saw, "saw:a")];
        let accepted = assess("g", &items, 0.0).unwrap();
        assert!(accepted.accepted, "DID + SAW supporting clears the bar");

        let withheld = withhold_unjudged(accepted.clone(), true);
        assert!(!withheld.accepted);
        assert_eq!(withheld.route, Some(Route::ObserveAnotherWay));
        assert!(withheld.reason.contains("could not judge"));
        assert_eq!(
            withheld.posterior, accepted.posterior,
            "the posterior is kept"
        );

        // Every condition judged: unchanged.
        assert_eq!(withhold_unjudged(accepted.clone(), false), accepted);
        // Not accepted anyway: unchanged, its own route and reason kept.
        let short = assess("g", &items[..1], 0.0).unwrap();
        assert!(!short.accepted);
        assert_eq!(withhold_unjudged(short.clone(), true), short);
    }
}
