//! The run: each task performed for real in a fresh temporary world, its DID and SAW
//! items weighed by the belief model, compared with the other two judges and with what
//! the task must reproduce, and the totals over the suite.

use evident_rules::belief::{self, Belief, Epoch, Fate, Item, STRENGTH_CONTRARY, STRENGTH_SUPPORT};
use serde::Serialize;

use super::tasks::{Source, Task, all_tasks};
use super::{SuiteError, yes};
use crate::goal::{Condition, Observation, observe, observe_existence};
use crate::world::{Action, ToolRun, World, normalize};

/// Posteriors must match the peer's within this.
pub const TOLERANCE: f64 = 1e-6;

/// What one judge concluded.
#[derive(Debug, Clone, Copy, PartialEq, Serialize)]
pub struct Judgement {
    /// Posterior.
    pub posterior: f64,
    /// Posterior ≥ bar.
    pub accepted: bool,
}

/// One task's result.
#[derive(Debug, Clone, Serialize)]
pub struct TaskResult {
    /// Task id.
    pub id: String,
    /// Task category.
    pub category: String,
    /// `peer` or `evident`.
    pub source: &'static str,
    /// The goal.
    pub goal: String,
    /// Declared ground truth.
    pub truth: bool,
    /// Whether every goal condition holds in the world after the task (checked
    /// independently of the evidence; must equal `truth`).
    pub world_truth: bool,
    /// evident's posterior.
    pub posterior: f64,
    /// The peer's reported posterior, or the hand-computed one for evident's tasks.
    pub reported: f64,
    /// evident accepted the goal.
    pub accepted: bool,
    /// `accepted == truth`.
    pub correct: bool,
    /// The seed's existence-only observer on the same world (the seed's acceptance
    /// rule: posterior ≥ bar, no veto).
    pub existence_only: Judgement,
    /// Counting every item, ignoring lineage and derivation.
    pub naive: Judgement,
    /// What each tool reported.
    pub runs: Vec<ToolRun>,
    /// The evidence weighed.
    pub items: Vec<Item>,
    /// The belief, with every item's fate.
    pub belief: Belief,
    /// Parity or truth failures; empty when the task passes.
    pub problems: Vec<String>,
}

/// Counts over the whole suite.
#[derive(Debug, Clone, Serialize)]
pub struct Summary {
    /// All tasks run.
    pub tasks: usize,
    /// Tasks from the peer's suite.
    pub reference_tasks: usize,
    /// evident's own tasks.
    pub own_tasks: usize,
    /// Tasks whose verdict equals the truth.
    pub correct: usize,
    /// Accepted while the goal does not hold.
    pub false_completions: usize,
    /// Not accepted while the goal holds.
    pub false_incompletions: usize,
    /// Tasks with any parity or truth problem.
    pub tasks_with_problems: usize,
    /// Largest |posterior − reported| over all tasks.
    pub max_deviation: f64,
    /// False completions of the seed's existence-only observer.
    pub existence_only_false_completions: usize,
    /// False completions when counting naively.
    pub naive_false_completions: usize,
    /// False completions evident would make without its SAW veto (posterior ≥ bar alone).
    pub without_veto_false_completions: usize,
    /// No wrong verdict, no false completion, no problem.
    pub passed: bool,
}

/// The whole run.
#[derive(Debug, Clone, Serialize)]
pub struct Report {
    /// Per task, peer tasks first.
    pub tasks: Vec<TaskResult>,
    /// Totals.
    pub summary: Summary,
}

fn did_item(goal: &str, run: &ToolRun, action: &Action) -> Item {
    let supports = action
        .polarity()
        .did_supports(run.success, run.error.as_deref());
    let outcome = match (&run.error, &run.output) {
        (Some(e), _) => format!("failed: {e}"),
        (None, Some(o)) => format!("ok: {}", o.trim_end()),
        (None, None) => "ok".to_owned(),
    };
    Item {
        goal: goal.to_owned(),
        epoch: Epoch::Did,
        supports,
        strength: if supports {
            STRENGTH_SUPPORT
        } else {
            STRENGTH_CONTRARY
        },
        lineage: format!("did:{}", run.resource),
        derived: false,
        blocker: if supports { None } else { run.blocker },
        note: Some(format!("{} {} {outcome}", run.tool, run.resource)),
    }
}

fn saw_item(goal: &str, c: &Condition, o: &Observation) -> Option<Item> {
    let (supports, detail) = match o {
        Observation::Holds(d) => (true, d),
        Observation::Fails(d) => (false, d),
        Observation::Indeterminate(_) => return None,
    };
    let path = normalize(&c.path).unwrap_or_else(|_| c.path.clone());
    Some(Item {
        goal: goal.to_owned(),
        epoch: Epoch::Saw,
        supports,
        strength: if supports {
            STRENGTH_SUPPORT
        } else {
            STRENGTH_CONTRARY
        },
        lineage: format!("saw:filesystem:{path}"),
        derived: false,
        blocker: None,
        note: Some(detail.clone()),
    })
}

fn judge(goal: &str, items: &[Item]) -> Result<Belief, SuiteError> {
    belief::assess(goal, items, 0.0).map_err(|e| SuiteError::Model(e.to_string()))
}

/// Run one task in a fresh temporary world.
pub fn run_task(task: &Task) -> Result<TaskResult, SuiteError> {
    let mut world = World::new(&task.before, task.compromised).map_err(SuiteError::Io)?;
    let runs: Vec<ToolRun> = task.steps.iter().map(|a| world.run(a)).collect();
    let did: Vec<Item> = runs
        .iter()
        .zip(&task.steps)
        .map(|(r, a)| did_item(&task.goal, r, a))
        .collect();

    let mut items = did.clone();
    let mut existence_items = did;
    let mut problems = Vec::new();
    let mut unjudged = false;
    if task.observe {
        for c in &task.conditions {
            let o = observe(world.root(), c);
            if let Observation::Indeterminate(e) = &o {
                unjudged = true;
                problems.push(format!("fresh observation indeterminate: {e}"));
            }
            items.extend(saw_item(&task.goal, c, &o));
            existence_items.extend(saw_item(&task.goal, c, &observe_existence(world.root(), c)));
        }
    }
    let world_truth = task
        .conditions
        .iter()
        .all(|c| matches!(observe(world.root(), c), Observation::Holds(_)));

    // Fail closed: a goal condition the fresh observation could not judge vetoes
    // acceptance (the rule is `belief::withhold_unjudged`).
    let b = belief::withhold_unjudged(judge(&task.goal, &items)?, unjudged);
    let ex = judge(&task.goal, &existence_items)?;
    let naive_p = belief::posterior_from_log_odds(items.iter().map(Item::weight).sum());
    let naive = Judgement {
        posterior: naive_p,
        accepted: naive_p >= belief::bar(0.0),
    };

    if world_truth != task.truth {
        problems.push(format!(
            "declared truth {} but the world after the task says {}",
            task.truth, world_truth
        ));
    }
    if b.accepted != task.truth {
        problems.push(format!(
            "verdict {} but the truth is {}",
            yes(b.accepted),
            task.truth
        ));
    }
    let (reported, source) = match &task.source {
        Source::Peer {
            posterior,
            success,
            evidence,
        } => {
            for (i, (run, want)) in runs.iter().zip(success).enumerate() {
                if run.success != *want {
                    problems.push(format!(
                        "step {i} ({}): the real tool reported success={} but the reference's reported {}",
                        run.tool, run.success, want
                    ));
                }
            }
            let mut mine: Vec<(Epoch, bool, f64)> = b
                .contributions
                .iter()
                .filter(|c| c.fate == Fate::Counted)
                .map(|c| {
                    let i = &items[c.index];
                    (i.epoch, i.supports, i.strength)
                })
                .collect();
            let mut theirs = evidence.clone();
            let key = |a: &(Epoch, bool, f64), b: &(Epoch, bool, f64)| {
                (a.0, a.1).cmp(&(b.0, b.1)).then(a.2.total_cmp(&b.2))
            };
            mine.sort_by(key);
            theirs.sort_by(key);
            let same = mine.len() == theirs.len()
                && mine
                    .iter()
                    .zip(&theirs)
                    .all(|(a, b)| a.0 == b.0 && a.1 == b.1 && (a.2 - b.2).abs() < 1e-12);
            if !same {
                problems.push(format!(
                    "counted evidence {mine:?} differs from the reference's {theirs:?}"
                ));
            }
            (*posterior, "reference")
        }
        Source::Own { posterior, .. } => (*posterior, "evident"),
    };
    if (b.posterior - reported).abs() > TOLERANCE || b.posterior.is_nan() {
        problems.push(format!(
            "posterior {:.9} differs from the reported {:.9} by more than {TOLERANCE:e}",
            b.posterior, reported
        ));
    }

    Ok(TaskResult {
        id: task.id.clone(),
        category: task.category.clone(),
        source,
        goal: task.goal.clone(),
        truth: task.truth,
        world_truth,
        posterior: b.posterior,
        reported,
        accepted: b.accepted,
        correct: b.accepted == task.truth,
        existence_only: Judgement {
            posterior: ex.posterior,
            accepted: ex.posterior >= ex.bar,
        },
        naive,
        runs,
        items,
        belief: b,
        problems,
    })
}

/// Run every task and total the results.
pub fn run_suite() -> Result<Report, SuiteError> {
    let tasks = all_tasks()?;
    let results = tasks.iter().map(run_task).collect::<Result<Vec<_>, _>>()?;
    let count = |f: &dyn Fn(&TaskResult) -> bool| results.iter().filter(|r| f(r)).count();
    let false_completions = count(&|r| r.accepted && !r.truth);
    let correct = count(&|r| r.correct);
    let tasks_with_problems = count(&|r| !r.problems.is_empty());
    let summary = Summary {
        tasks: results.len(),
        reference_tasks: count(&|r| r.source == "reference"),
        own_tasks: count(&|r| r.source == "evident"),
        correct,
        false_completions,
        false_incompletions: count(&|r| !r.accepted && r.truth),
        tasks_with_problems,
        max_deviation: results
            .iter()
            .map(|r| (r.posterior - r.reported).abs())
            .fold(0.0, f64::max),
        existence_only_false_completions: count(&|r| r.existence_only.accepted && !r.truth),
        naive_false_completions: count(&|r| r.naive.accepted && !r.truth),
        without_veto_false_completions: count(&|r| r.posterior >= r.belief.bar && !r.truth),
        passed: correct == results.len() && false_completions == 0 && tasks_with_problems == 0,
    };
    Ok(Report {
        tasks: results,
        summary,
    })
}
