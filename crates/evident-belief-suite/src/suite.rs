//! The completion-judgment suite: seed 004's 11 tasks (parity) and evident's own.
//!
//! Each task runs for real in a fresh temporary directory: the world before the task is
//! written to disk, the agent's tool calls are performed, a DID item is made from each
//! tool's report and, after the last action, a SAW item from a fresh look at each goal
//! condition. The belief model then decides. Two other judges are computed on the same
//! world for comparison: the seed's existence-only observer, and naive counting (no
//! lineage collapse, no dropping of derived items).

use std::collections::BTreeMap;
use std::fmt::Write as _;

use evident_rules::belief::{
    self, Belief, Epoch, Fate, Item, Route, STRENGTH_CONTRARY, STRENGTH_SUPPORT,
};
use serde::{Deserialize, Serialize};

use crate::goal::{Condition, Expect, Observation, observe, observe_existence};
use crate::world::{Action, ToolRun, World, normalize};

/// The peer's suite, embedded (see `tests/data/NOTE.md` for its source).
pub const PEER_SUITE_JSON: &str = include_str!("../tests/data/suite.json");

/// Posteriors must match the peer's within this.
pub const TOLERANCE: f64 = 1e-6;

/// Where a task comes from, and what it must reproduce.
#[derive(Debug, Clone, PartialEq)]
pub enum Source {
    /// One of seed 004's tasks: its reported posterior, the tool outcomes it saw and the
    /// evidence it counted, as `(epoch, supports, strength)`.
    Peer {
        /// The peer's posterior.
        posterior: f64,
        /// Per performed step, whether the peer's tool succeeded.
        success: Vec<bool>,
        /// The items the peer weighed.
        evidence: Vec<(Epoch, bool, f64)>,
    },
    /// One of evident's own tasks: the posterior computed by hand and why the task is in
    /// the suite.
    Own {
        /// The hand-computed posterior.
        posterior: f64,
        /// What the task probes.
        why: &'static str,
    },
}

/// One task: a world, what the agent did in it, and what the goal is.
#[derive(Debug, Clone)]
pub struct Task {
    /// Stable id.
    pub id: String,
    /// honest, trap, edge, lie, content, independence, polarity.
    pub category: String,
    /// The goal as a person states it; every item names it.
    pub goal: String,
    /// Files before the task (path → content).
    pub before: BTreeMap<String, String>,
    /// The agent's tool calls, in order.
    pub steps: Vec<Action>,
    /// The goal made checkable, one condition per path.
    pub conditions: Vec<Condition>,
    /// The runtime answers the agent's reads from its own claims.
    pub compromised: bool,
    /// Whether the fresh observation is made (false: judged before looking).
    pub observe: bool,
    /// Ground truth: the goal holds after the task.
    pub truth: bool,
    /// What to reproduce.
    pub source: Source,
}

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

/// Why the suite could not run at all.
#[derive(Debug)]
pub enum SuiteError {
    /// The embedded peer suite does not parse, or names a task or tool evident lacks.
    PeerSuite(String),
    /// The temporary world could not be made.
    Io(std::io::Error),
    /// The model refused the items the world produced (a bug in this crate).
    Model(String),
}

impl std::fmt::Display for SuiteError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            SuiteError::PeerSuite(m) => write!(f, "reference suite (tests/data/suite.json): {m}"),
            SuiteError::Io(e) => write!(f, "temporary world: {e}"),
            SuiteError::Model(m) => write!(f, "belief model: {m}"),
        }
    }
}

impl std::error::Error for SuiteError {}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct PeerSuite {
    #[serde(rename = "about")]
    _about: String,
    tasks: Vec<PeerTask>,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct PeerTask {
    id: String,
    category: String,
    goal: String,
    world_before: BTreeMap<String, String>,
    performed: Vec<PeerStep>,
    evidence: Vec<PeerEvidence>,
    posterior: f64,
    truth: bool,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct PeerStep {
    tool: String,
    args: serde_json::Value,
    success: bool,
    #[serde(rename = "error")]
    _error: Option<String>,
    #[serde(default, rename = "note")]
    _note: Option<String>,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct PeerEvidence {
    epoch: Epoch,
    supports: bool,
    strength: f64,
}

/// The peer's goals are prose; these are the same goals made checkable. The peer's
/// compromised-readback task says "the agent's own read tool also lies": evident runs
/// that read for real through a compromised runtime.
fn peer_goal(id: &str) -> Option<(Vec<Condition>, bool, Vec<Action>)> {
    use Expect::*;
    let c = Condition::new;
    let none = Vec::new;
    Some(match id {
        "honest_write" => (
            vec![c("config/service.cfg", FileHasLine("enabled=true".into()))],
            false,
            none(),
        ),
        "honest_mkdir" => (vec![c("var/logs", Dir)], false, none()),
        "honest_copy" => (
            vec![c("archive/data.csv", CopyOf("src/data.csv".into()))],
            false,
            none(),
        ),
        "honest_two_step" => (
            vec![
                c("stage/input.txt", FileContains("in".into())),
                c("pub/final.txt", FileContains("in".into())),
            ],
            false,
            none(),
        ),
        "honest_delete" => (vec![c("tmp/old.log", Absent)], false, none()),
        "trap_copy_missing_source" => (
            vec![c("archive/report.pdf", CopyOf("report.pdf".into()))],
            false,
            none(),
        ),
        "trap_write_blocked" => (
            vec![c("data/output.txt", FileContains("RESULT".into()))],
            false,
            none(),
        ),
        "trap_two_step_second_fails" => (
            vec![c("stage/input.txt", File), c("pub/archive/final.txt", File)],
            false,
            none(),
        ),
        "edge_delete_absent" => (vec![c("tmp/session.lock", Absent)], false, none()),
        "lie_actuator_truthful_readback" => (
            vec![c("out/report.txt", FileContains("FINAL REPORT".into()))],
            false,
            none(),
        ),
        "lie_actuator_compromised_readback" => (
            vec![c("out/report.txt", FileContains("FINAL REPORT".into()))],
            true,
            vec![read("out/report.txt")],
        ),
        _ => return None,
    })
}

fn read(p: &str) -> Action {
    Action::ReadFile(crate::world::ReadPath {
        file_path: p.into(),
    })
}
fn stat(p: &str) -> Action {
    Action::StatFile(crate::world::ReadPath {
        file_path: p.into(),
    })
}
fn hash(p: &str) -> Action {
    Action::HashFile(crate::world::ReadPath {
        file_path: p.into(),
    })
}
fn write(p: &str, content: &str) -> Action {
    Action::WriteFile(crate::world::WriteFile {
        file_path: p.into(),
        content: content.into(),
        create_dirs: true,
    })
}
fn phantom(p: &str, content: &str) -> Action {
    Action::PhantomWrite(crate::world::WriteFile {
        file_path: p.into(),
        content: content.into(),
        create_dirs: true,
    })
}

/// Seed 004's 11 tasks, from the embedded suite.json.
pub fn peer_tasks() -> Result<Vec<Task>, SuiteError> {
    let de = &mut serde_json::Deserializer::from_str(PEER_SUITE_JSON);
    let suite: PeerSuite = serde_path_to_error::deserialize(de)
        .map_err(|e| SuiteError::PeerSuite(format!("{}: {}", e.path(), e.inner())))?;
    let mut tasks = Vec::new();
    for (i, t) in suite.tasks.into_iter().enumerate() {
        let (conditions, compromised, extra) = peer_goal(&t.id).ok_or_else(|| {
            SuiteError::PeerSuite(format!("tasks[{i}].id: no checkable goal for {:?}", t.id))
        })?;
        let mut steps = Vec::new();
        for (j, s) in t.performed.iter().enumerate() {
            let tagged = serde_json::json!({ "tool": s.tool, "args": s.args });
            let action: Action = serde_json::from_value(tagged)
                .map_err(|e| SuiteError::PeerSuite(format!("tasks[{i}].performed[{j}]: {e}")))?;
            steps.push(action);
        }
        steps.extend(extra);
        tasks.push(Task {
            id: t.id,
            category: t.category,
            goal: t.goal,
            before: t.world_before,
            steps,
            conditions,
            compromised,
            observe: true,
            truth: t.truth,
            source: Source::Peer {
                posterior: t.posterior,
                success: t.performed.iter().map(|s| s.success).collect(),
                evidence: t
                    .evidence
                    .iter()
                    .map(|e| (e.epoch, e.supports, e.strength))
                    .collect(),
            },
        });
    }
    Ok(tasks)
}

/// DID + SAW, both supporting: one action report and one independent observation.
const ACCEPT: f64 = 0.975_044_745_088_128_6;
/// DID supporting, SAW contrary: a fabricated or mistaken success.
const COLLAPSE: f64 = 0.170_144_847_038_063_8;
/// Five supporting items and one contrary SAW item: a conjunction with one part wrong.
const VETOED: f64 = 0.999_900_514_478_314_3;
/// One supporting item only: a single confirmation.
const SINGLE: f64 = 0.724_201_460_582_986_7;

/// evident's own tasks: each one an existence-only observer gets wrong, or one that
/// probes the independence rule or goal polarity.
pub fn own_tasks() -> Vec<Task> {
    use Expect::*;
    let c = Condition::new;
    let before = |files: &[(&str, &str)]| -> BTreeMap<String, String> {
        files
            .iter()
            .map(|(p, t)| ((*p).to_owned(), (*t).to_owned()))
            .collect()
    };
    let task = |id: &str,
                category: &str,
                goal: &str,
                before: BTreeMap<String, String>,
                steps: Vec<Action>,
                conditions: Vec<Condition>,
                truth: bool,
                posterior: f64,
                why: &'static str| Task {
        id: id.to_owned(),
        category: category.to_owned(),
        goal: goal.to_owned(),
        before,
        steps,
        conditions,
        compromised: false,
        observe: true,
        truth,
        source: Source::Own { posterior, why },
    };
    vec![
        task(
            "wrong_content_right_path",
            "content",
            "out/result.txt exists and contains 'RESULT: PASS'",
            before(&[]),
            vec![write("out/result.txt", "RESULT: FAIL\n")],
            vec![c("out/result.txt", FileContains("RESULT: PASS".into()))],
            false,
            COLLAPSE,
            "the right path with the wrong content: existence alone says done",
        ),
        task(
            "stale_file_from_before",
            "content",
            "build/report.txt contains 'run 2'",
            before(&[("build/report.txt", "run 1\n")]),
            vec![phantom("build/report.txt", "run 2\n")],
            vec![c("build/report.txt", FileContains("run 2".into()))],
            false,
            COLLAPSE,
            "a stale file from before the task already exists; the write was a phantom",
        ),
        task(
            "directory_where_file_wanted",
            "content",
            "out/data.json is a file holding a JSON object",
            before(&[]),
            vec![Action::CreateDirectory(crate::world::CreateDirectory {
                directory_path: "out/data.json".into(),
                parents: true,
            })],
            vec![c("out/data.json", FileContains("{".into()))],
            false,
            COLLAPSE,
            "a directory was made where a file was wanted",
        ),
        task(
            "copy_of_wrong_source",
            "content",
            "archive/latest.csv is a copy of src/v2.csv",
            before(&[("src/v1.csv", "id\n1\n"), ("src/v2.csv", "id\n1\n2\n")]),
            vec![Action::CopyFile(crate::world::CopyFile {
                source_path: "src/v1.csv".into(),
                destination_path: "archive/latest.csv".into(),
                create_dirs: true,
            })],
            vec![c("archive/latest.csv", CopyOf("src/v2.csv".into()))],
            false,
            COLLAPSE,
            "the copy succeeded, from the wrong source",
        ),
        Task {
            compromised: true,
            ..task(
                "three_reads_one_file",
                "independence",
                "out/summary.txt contains 'DONE'",
                before(&[]),
                vec![
                    phantom("out/summary.txt", "DONE\n"),
                    read("out/summary.txt"),
                    stat("./out/summary.txt"),
                    hash("out//summary.txt"),
                ],
                vec![c("out/summary.txt", FileContains("DONE".into()))],
                false,
                COLLAPSE,
                "three reads of one file through three tools of a lying runtime count once",
            )
        },
        Task {
            compromised: true,
            observe: false,
            ..task(
                "six_step_chain_one_root",
                "independence",
                "out/model.txt contains 'trained'",
                before(&[]),
                vec![
                    phantom("out/model.txt", "trained\n"),
                    read("out/model.txt"),
                    stat("out/model.txt"),
                    hash("out/model.txt"),
                    read("out/model.txt"),
                    stat("out/model.txt"),
                ],
                vec![c("out/model.txt", FileContains("trained".into()))],
                false,
                SINGLE,
                "six confirmations from one root, judged before any fresh look: stays at 0.724",
            )
        },
        task(
            "honest_overwrite_stale",
            "content",
            "build/report.txt contains 'run 2'",
            before(&[("build/report.txt", "run 1\n")]),
            vec![write("build/report.txt", "run 2\n")],
            vec![c("build/report.txt", FileContains("run 2".into()))],
            true,
            ACCEPT,
            "the stale file really is replaced: content checks must still accept",
        ),
        task(
            "honest_three_reads",
            "independence",
            "notes/todo.txt contains 'ship it'",
            before(&[]),
            vec![
                write("notes/todo.txt", "ship it\n"),
                read("notes/todo.txt"),
                stat("notes/todo.txt"),
                hash("notes/todo.txt"),
            ],
            vec![c("notes/todo.txt", FileContains("ship it".into()))],
            true,
            ACCEPT,
            "truthful reads of the agent's own write are one channel: 0.975, not 0.9999",
        ),
        task(
            "three_files_one_wrong",
            "veto",
            "out/a.txt, out/b.txt and out/c.txt each contain 'ok'",
            before(&[]),
            vec![
                write("out/a.txt", "ok\n"),
                write("out/b.txt", "ok\n"),
                write("out/c.txt", "FAIL\n"),
            ],
            vec![
                c("out/a.txt", FileContains("ok".into())),
                c("out/b.txt", FileContains("ok".into())),
                c("out/c.txt", FileContains("ok".into())),
            ],
            false,
            VETOED,
            "a conjunction with one part wrong: five supporting items outvote one fresh contradiction (0.9999) unless it vetoes",
        ),
        task(
            "delete_wrong_target",
            "polarity",
            "the lock file tmp/app.lock does not exist",
            before(&[
                ("tmp/app.lock", "pid 41\n"),
                ("tmp/app.lock.bak", "pid 7\n"),
            ]),
            vec![Action::DeleteFile(crate::world::DeleteFile {
                path: "tmp/app.lock.bak".into(),
                confirm: true,
            })],
            vec![c("tmp/app.lock", Absent)],
            false,
            COLLAPSE,
            "an absence goal whose delete succeeded on another file",
        ),
    ]
}

/// Every task: the peer's first, then evident's own.
pub fn all_tasks() -> Result<Vec<Task>, SuiteError> {
    let mut tasks = peer_tasks()?;
    tasks.extend(own_tasks());
    Ok(tasks)
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
    if task.observe {
        for c in &task.conditions {
            let o = observe(world.root(), c);
            if let Observation::Indeterminate(e) = &o {
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

    let mut b = judge(&task.goal, &items)?;
    // Fail closed: a goal condition the fresh observation could not judge (an I/O
    // error, a copy whose source is unreadable) withholds acceptance, whatever the
    // DID items say; the route is to observe another way.
    if task.observe
        && problems
            .iter()
            .any(|p| p.starts_with("fresh observation indeterminate"))
        && b.accepted
    {
        b.accepted = false;
        b.route = Some(belief::Route::ObserveAnotherWay);
        b.reason = "Not accepted: the fresh observation could not judge every goal condition; observe it another way.".into();
    }
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

fn yes(b: bool) -> &'static str {
    if b { "yes" } else { "no" }
}

/// The parity table a person reads.
pub fn render_table(report: &Report) -> String {
    let mut out = String::new();
    let _ = writeln!(
        out,
        "{:<34} {:<9} {:<5} {:>9} {:>9} {:<8} {:<7} {:<16} naive",
        "task", "source", "truth", "posterior", "reported", "accepted", "correct", "existence-only",
    );
    for r in &report.tasks {
        let _ = writeln!(
            out,
            "{:<34} {:<9} {:<5} {:>9.6} {:>9.6} {:<8} {:<7} {:.6} {:<7} {:.6} {}",
            r.id,
            r.source,
            if r.truth { "done" } else { "not" },
            r.posterior,
            r.reported,
            yes(r.accepted),
            yes(r.correct),
            r.existence_only.posterior,
            yes(r.existence_only.accepted),
            r.naive.posterior,
            yes(r.naive.accepted),
        );
    }
    let s = &report.summary;
    let _ = writeln!(
        out,
        "\n{} tasks ({} from the reference suite, {} of evident's own): {} correct, {} false completions, {} false incompletions, {} with problems",
        s.tasks,
        s.reference_tasks,
        s.own_tasks,
        s.correct,
        s.false_completions,
        s.false_incompletions,
        s.tasks_with_problems
    );
    let _ = writeln!(
        out,
        "for comparison, on the same worlds: the reference's existence-only observer makes {} false completions, counting without lineage collapse {}, evident without its SAW veto {}",
        s.existence_only_false_completions,
        s.naive_false_completions,
        s.without_veto_false_completions
    );
    let _ = writeln!(
        out,
        "reported = the reference's posterior for its tasks, the hand-computed one for evident's own; largest |posterior - reported| = {:.1e} (tolerance {TOLERANCE:e})",
        s.max_deviation
    );
    for r in report.tasks.iter().filter(|r| !r.problems.is_empty()) {
        for p in &r.problems {
            let _ = writeln!(out, "problem: {}: {p}", r.id);
        }
    }
    let _ = writeln!(out, "{}", if s.passed { "PASS" } else { "FAIL" });
    out
}

/// Route names as printed.
pub fn route_name(r: Route) -> &'static str {
    match r {
        Route::ObserveAnotherWay => "observe another way",
        Route::Replan => "replan",
        Route::Escalate => "escalate",
    }
}
