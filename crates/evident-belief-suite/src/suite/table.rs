//! The table output: the parity table a person reads, and route names as printed.

use std::fmt::Write as _;

use evident_rules::belief::Route;

use super::run::{Report, TOLERANCE};
use super::yes;

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
