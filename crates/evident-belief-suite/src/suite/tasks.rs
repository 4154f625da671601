//! The task tables: seed 004's 11 tasks read from the embedded suite.json with their
//! goals made checkable, and evident's own tasks with hand-computed posteriors.

use std::collections::BTreeMap;

use evident_rules::belief::Epoch;
use serde::Deserialize;

use super::SuiteError;
use crate::goal::{Condition, Expect};
use crate::world::Action;

/// The peer's suite, embedded (see `tests/data/NOTE.md` for its source).
pub const PEER_SUITE_JSON: &str = include_str!("../../tests/data/suite.json");

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
