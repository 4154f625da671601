//! Markdown for CI job summaries (`$GITHUB_STEP_SUMMARY`): the verdict, the reason,
//! one table row per observation, and what did not run.

use crate::Decision;
use evident_rules::Code;
use std::fmt::Write;

/// Renders the decision as Markdown.
pub fn render(d: &Decision) -> String {
    let mut out = String::new();
    let v = &d.verdict;
    let icon = match v.state {
        evident_rules::State::Verified => "✅",
        evident_rules::State::Refuted => "❌",
        _ => "⚠️",
    };
    let _ = writeln!(
        out,
        "### {icon} evident {}: **{}** — task `{}`\n",
        d.kind.as_str(),
        v.state.as_str(),
        code(&d.claim.claim.task.id)
    );
    let _ = writeln!(out, "{}\n", cell(&v.reason));
    if let Some(c) = v.coverage {
        let _ = writeln!(
            out,
            "Coverage: {} of {} mutations covered by satisfying evidence\n",
            c.covered, c.total
        );
    }
    if !v.unmet.is_empty() {
        let _ = writeln!(out, "Unmet: `{}`\n", code(&v.unmet.join(", ")));
    }
    if !d.runs.is_empty() {
        let _ = writeln!(
            out,
            "| check | wave | result | observed |\n|---|---|---|---|"
        );
        for r in &d.runs {
            let f = v.findings.iter().find(|f| f.evidence == r.evidence);
            let result = match f {
                Some(f) if f.code == Code::Satisfies => "ok".to_string(),
                Some(f) => format!("{}: {}", f.code, f.detail),
                None => "no finding".into(),
            };
            let observed = match &r.error {
                Some(e) => format!("nothing: {e}"),
                None => super::split_failure(&r.observed).0.to_string(),
            };
            let _ = writeln!(
                out,
                "| `{}` | {} | {} | {} |",
                code(&r.check_id),
                r.wave.as_str(),
                cell(&result),
                cell(&short(&observed))
            );
        }
        out.push('\n');
        for r in d.runs.iter().filter(|r| r.error.is_none()) {
            let (_, failure) = super::split_failure(&r.observed);
            if let Some(names) = failure.first().filter(|l| l.starts_with("failed tests: ")) {
                let _ = writeln!(out, "- `{}`: {}", code(&r.check_id), cell(names));
            }
        }
    }
    for p in d.plan.iter().filter(|p| p.waves.is_empty()) {
        let _ = writeln!(out, "- not run: `{}` — {}", code(&p.check_id), cell(&p.why));
    }
    if let Some(r) = &d.record {
        let _ = writeln!(out, "\nRecorded as #{} (`{}`).", r.id, code(&r.hash));
    }
    out
}

/// Text inside a table cell: no pipe, no newline, no HTML.
fn cell(s: &str) -> String {
    s.chars()
        .map(|c| match c {
            '|' => '¦',
            '\n' | '\r' => ' ',
            '<' => '‹',
            '>' => '›',
            c if c.is_control() => ' ',
            c => c,
        })
        .collect()
}

/// Text inside backticks.
fn code(s: &str) -> String {
    cell(s).replace('`', "'")
}

fn short(s: &str) -> String {
    if s.chars().count() > 120 {
        format!("{}…", s.chars().take(119).collect::<String>())
    } else {
        s.to_string()
    }
}
