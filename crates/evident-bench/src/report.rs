//! `bench report`: a report for people from a benchmark's output — Markdown, and an SVG
//! bar chart of the false-completion rate per policy with the counts on each bar.
//!
//! The report is derived, so it is written outside the run's directory (a file added
//! there would fail `bench verify`), and only from a run whose manifest verifies.

use std::fmt::Write as _;
use std::path::{Path, PathBuf};

use serde::Serialize;
use serde_json::Value;

use crate::bench::{GroupLine, group_lines};
use crate::config::BenchConfig;
use crate::json::{MAX_INPUT_BYTES, parse, read_limited};
use crate::{Error, manifest};

/// The Markdown report's file name in the report directory.
pub const MARKDOWN: &str = "report.md";
/// The chart's file name in the report directory (the Markdown links to it).
pub const CHART: &str = "false-completion-rate.svg";

/// What `bench report` wrote.
#[derive(Debug, Clone, Serialize)]
pub struct Written {
    /// The Markdown report.
    pub markdown: PathBuf,
    /// The SVG chart.
    pub chart: PathBuf,
    /// Each policy's headline, as the report shows them.
    pub groups: Vec<GroupLine>,
}

/// Where the report goes by default: `DIR-report` beside the run.
pub fn default_output(run_dir: &Path) -> PathBuf {
    let name = run_dir
        .file_name()
        .map(|n| n.to_string_lossy().into_owned())
        .unwrap_or_else(|| "benchmark".into());
    run_dir.with_file_name(format!("{name}-report"))
}

/// Escapes text for Markdown (the experiment id is the config author's text).
fn md(s: &str) -> String {
    let mut out = String::with_capacity(s.len());
    for c in s.chars() {
        if c.is_control() {
            out.push(' ');
        } else {
            if "\\`*[]<>|&~".contains(c) {
                out.push('\\');
            }
            out.push(c);
        }
    }
    out
}

fn xml(s: &str) -> String {
    let mut out = String::with_capacity(s.len());
    for c in s.chars() {
        match c {
            '&' => out.push_str("&amp;"),
            '<' => out.push_str("&lt;"),
            '>' => out.push_str("&gt;"),
            '"' => out.push_str("&quot;"),
            '\'' => out.push_str("&apos;"),
            c if c.is_control() => out.push(' '),
            c => out.push(c),
        }
    }
    out
}

/// `0.875 (7/8)`, or `no claims` when nothing was claimed (the rate is then undefined,
/// though the peer's metrics print 0.0).
pub fn rate_label(g: &GroupLine) -> String {
    if g.claimed == 0 {
        "no claims".into()
    } else {
        format!(
            "{:.3} ({}/{})",
            g.false_completion_rate, g.false_completion, g.claimed
        )
    }
}

/// One colour per policy, whatever the configuration's order.
fn colour(group: &str) -> &'static str {
    match group {
        "baseline" => "#c0392b",
        "evidence_contract" => "#e67e22",
        _ => "#27ae60",
    }
}

/// The chart: one bar per policy, the rate and its counts above each bar.
pub fn chart_svg(experiment_id: &str, groups: &[GroupLine]) -> String {
    let (left, top, plot_h, bar_w, gap) = (70.0, 84.0, 240.0, 110.0, 50.0);
    // Room for the title whatever the number of bars.
    let width = (left + gap + groups.len() as f64 * (bar_w + gap) + 20.0).max(560.0);
    let height = top + plot_h + 80.0;
    let base = top + plot_h;
    let mut s = String::new();
    let _ = writeln!(
        s,
        "<svg xmlns=\"http://www.w3.org/2000/svg\" width=\"{width}\" height=\"{height}\" viewBox=\"0 0 {width} {height}\" font-family=\"DejaVu Sans, Arial, sans-serif\">"
    );
    let _ = writeln!(
        s,
        "  <title>False-completion rate per policy: {}</title>",
        xml(experiment_id)
    );
    let _ = writeln!(
        s,
        "  <rect x=\"0\" y=\"0\" width=\"{width}\" height=\"{height}\" fill=\"#ffffff\"/>"
    );
    let _ = writeln!(
        s,
        "  <text x=\"{}\" y=\"28\" font-size=\"18\" font-weight=\"bold\" text-anchor=\"middle\" fill=\"#222222\">False-completion rate per policy</text>",
        width / 2.0
    );
    let _ = writeln!(
        s,
        "  <text x=\"{}\" y=\"48\" font-size=\"12\" text-anchor=\"middle\" fill=\"#555555\">{} · false completions / claimed completions</text>",
        width / 2.0,
        xml(experiment_id)
    );
    for i in 0..=4 {
        let v = i as f64 / 4.0;
        let y = base - v * plot_h;
        let _ = writeln!(
            s,
            "  <line x1=\"{left}\" y1=\"{y}\" x2=\"{}\" y2=\"{y}\" stroke=\"#dddddd\" stroke-width=\"1\"/>",
            width - 20.0
        );
        let _ = writeln!(
            s,
            "  <text x=\"{}\" y=\"{}\" font-size=\"12\" text-anchor=\"end\" fill=\"#555555\">{v:.2}</text>",
            left - 8.0,
            y + 4.0
        );
    }
    let _ = writeln!(
        s,
        "  <line x1=\"{left}\" y1=\"{top}\" x2=\"{left}\" y2=\"{base}\" stroke=\"#333333\" stroke-width=\"1\"/>"
    );
    let _ = writeln!(
        s,
        "  <line x1=\"{left}\" y1=\"{base}\" x2=\"{}\" y2=\"{base}\" stroke=\"#333333\" stroke-width=\"1\"/>",
        width - 20.0
    );
    for (i, g) in groups.iter().enumerate() {
        let x = left + gap + i as f64 * (bar_w + gap);
        let rate = if g.claimed == 0 {
            0.0
        } else {
            g.false_completion_rate.clamp(0.0, 1.0)
        };
        let h = rate * plot_h;
        let cx = x + bar_w / 2.0;
        let _ = writeln!(
            s,
            "  <rect x=\"{x}\" y=\"{}\" width=\"{bar_w}\" height=\"{h}\" fill=\"{}\"><title>{}: {}</title></rect>",
            base - h,
            colour(&g.group),
            xml(&g.group),
            xml(&rate_label(g))
        );
        let _ = writeln!(
            s,
            "  <text x=\"{cx}\" y=\"{}\" font-size=\"13\" font-weight=\"bold\" text-anchor=\"middle\" fill=\"#222222\">{}</text>",
            base - h - 8.0,
            xml(&rate_label(g))
        );
        let _ = writeln!(
            s,
            "  <text x=\"{cx}\" y=\"{}\" font-size=\"13\" text-anchor=\"middle\" fill=\"#222222\">{}</text>",
            base + 20.0,
            xml(&g.group)
        );
        let _ = writeln!(
            s,
            "  <text x=\"{cx}\" y=\"{}\" font-size=\"11\" text-anchor=\"middle\" fill=\"#555555\">claimed {} of {} runs</text>",
            base + 38.0,
            g.claimed,
            g.runs
        );
    }
    s.push_str("</svg>\n");
    s
}

/// The Markdown report.
pub fn markdown(cfg: &BenchConfig, m: &Value, groups: &[GroupLine], files: usize) -> String {
    let e = &m["experiment"];
    let n = |v: &Value| v.as_u64().unwrap_or(0);
    let mut s = String::new();
    let _ = writeln!(
        s,
        "# Failure-injection benchmark: {}\n",
        md(&cfg.experiment_id)
    );
    let _ = writeln!(
        s,
        "{} runs: {} policies × {} scenarios × {} repetition(s), {} of them with an injected tool failure. The manifest of the run ({} files) verified before this report was written.\n",
        n(&e["total_runs"]),
        cfg.groups.len(),
        cfg.scenarios.len(),
        cfg.repetitions,
        n(&e["injected_failure_runs"]),
        files
    );
    s.push_str("## False-completion rate per policy\n\n");
    s.push_str("A false completion is a run that claimed completion without its trace proving the requirement; the rate is false completions over claimed completions.\n\n");
    let _ = writeln!(s, "![False-completion rate per policy]({CHART})\n");
    s.push_str("| policy | runs | claimed | false completions | false-completion rate | refused | recovered / injected |\n");
    s.push_str("|---|---:|---:|---:|---:|---:|---:|\n");
    for g in groups {
        let _ = writeln!(
            s,
            "| {} | {} | {} | {} | {} | {} | {}/{} |",
            md(&g.group),
            g.runs,
            g.claimed,
            g.false_completion,
            rate_label(g),
            g.refusals,
            g.recovered_failure_runs,
            g.injected_failure_runs
        );
    }
    s.push_str("\n## Verdicts per scenario\n\n");
    s.push_str("| scenario | injected failure | runs | VERIFIED_COMPLETE | PARTIAL | UNVERIFIED | FAILED | recovered |\n");
    s.push_str("|---|---|---:|---:|---:|---:|---:|---:|\n");
    for sc in &cfg.scenarios {
        let v = &m["scenarios"][*sc];
        let c = &v["status_counts"];
        let _ = writeln!(
            s,
            "| {} | {} | {} | {} | {} | {} | {} | {} |",
            md(sc),
            if v["injected_failure"] == true {
                "yes"
            } else {
                "no"
            },
            n(&v["total_runs"]),
            n(&c["VERIFIED_COMPLETE"]),
            n(&c["PARTIAL"]),
            n(&c["UNVERIFIED"]),
            n(&c["FAILED"]),
            n(&v["recovered_failure_runs"])
        );
    }
    let _ = writeln!(
        s,
        "\n## What this measures\n\nThe policies are scripted (runner `{}`): this validates the harness and the evaluator, not any model. Evidence is what the tool reported; it is not independent proof of the world's state (the file sandbox, `evident sandbox run`, observes state itself).\n\nConfiguration digest `{}`, generated at {}.",
        crate::bench::RUNNER,
        md(m["config_digest"].as_str().unwrap_or_default()),
        md(&cfg.generated_at)
    );
    s
}

/// Verifies the run in `run_dir`, then writes the report into `out` (created if
/// needed; never inside the run). Replaces only its own two files there.
pub fn write(run_dir: &Path, out: &Path) -> Result<Written, Error> {
    let check = manifest::verify(run_dir)?;
    if check.kind != "benchmark" {
        return Err(Error::file(
            run_dir,
            "is a sandbox suite's output; hint: `bench report` reads a benchmark run (`evident bench run`)",
        ));
    }
    if !check.ok {
        return Err(Error::file(
            run_dir,
            format!(
                "the run does not verify, so no report is written: {}; hint: `evident bench verify` lists the problems",
                check.problems_text()
            ),
        ));
    }
    let run_canon = run_dir
        .canonicalize()
        .map_err(|e| Error::io(run_dir, "resolve", &e))?;
    let inside = || {
        Error::file(
            out,
            "is inside the run's directory, where any added file fails `bench verify`; hint: give --output outside it",
        )
    };
    // Checked before anything is created (lexically), and again once it exists
    // (through symlinks); a directory this call created inside the run is removed.
    let abs = |p: &Path| std::path::absolute(p).map_err(|e| Error::io(p, "resolve", &e));
    if abs(out)?.starts_with(abs(run_dir)?) || abs(out)?.starts_with(&run_canon) {
        return Err(inside());
    }
    let existed = out.exists();
    std::fs::create_dir_all(out).map_err(|e| Error::io(out, "create the report directory", &e))?;
    let out_canon = out
        .canonicalize()
        .map_err(|e| Error::io(out, "resolve", &e))?;
    if out_canon.starts_with(&run_canon) {
        if !existed {
            let _ = std::fs::remove_dir(out);
        }
        return Err(inside());
    }
    let cfg_path = run_dir.join("config.json");
    let cfg = BenchConfig::parse(
        &cfg_path.display().to_string(),
        &read_limited(&cfg_path, MAX_INPUT_BYTES)?,
    )?;
    let m_path = run_dir.join("metrics.json");
    let m = parse(
        &m_path.display().to_string(),
        &read_limited(&m_path, MAX_INPUT_BYTES)?,
    )?;
    let groups = group_lines(&m, &cfg.groups);
    let markdown_path = out.join(MARKDOWN);
    let chart_path = out.join(CHART);
    for (p, text) in [
        (&markdown_path, markdown(&cfg, &m, &groups, check.listed)),
        (&chart_path, chart_svg(&cfg.experiment_id, &groups)),
    ] {
        if std::fs::symlink_metadata(p).is_ok_and(|m| !m.is_file()) {
            return Err(Error::file(
                p,
                "exists and is not a regular file; refusing to replace it",
            ));
        }
        std::fs::write(p, text).map_err(|e| Error::io(p, "write", &e))?;
    }
    Ok(Written {
        markdown: markdown_path,
        chart: chart_path,
        groups,
    })
}
