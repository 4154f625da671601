//! The completion-judgment suite: seed 004's 11 tasks (parity) and evident's own.
//!
//! Each task runs for real in a fresh temporary directory: the world before the task is
//! written to disk, the agent's tool calls are performed, a DID item is made from each
//! tool's report and, after the last action, a SAW item from a fresh look at each goal
//! condition. The belief model then decides. Two other judges are computed on the same
//! world for comparison: the seed's existence-only observer, and naive counting (no
//! lineage collapse, no dropping of derived items).
//!
//! By topic: `tasks` (the task tables), `run` (running a task and the suite) and
//! `table` (the parity table). This file holds what they share.

mod run;
mod table;
mod tasks;

pub use run::{Judgement, Report, Summary, TOLERANCE, TaskResult, run_suite, run_task};
pub use table::{render_table, route_name};
pub use tasks::{PEER_SUITE_JSON, Source, Task, all_tasks, own_tasks, peer_tasks};

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

fn yes(b: bool) -> &'static str {
    if b { "yes" } else { "no" }
}
