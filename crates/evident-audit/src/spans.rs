//! Test spans: how each runner is invoked, how its summary is read, and the two
//! separate facts the audit records: `ran` (the runner executed at least one test
//! the span names) and `passed` (exit zero, at least one test passed, none failed).

use crate::input::{Runner, SpanClaim};
use evident_probes::Runner as ProbeRunner;
use evident_probes::summary::{Counts, Parser};
use serde::Serialize;

/// What a span's runner reported: the shared summary parser's counts
/// (`evident_probes::summary`, the gate's reading), and whether a summary was found.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize)]
pub struct Summary {
    /// Passed, failed, skipped, … as the runner's summary line says.
    #[serde(flatten)]
    pub counts: Counts,
    /// A summary was found; without one the counts are zero and only the exit code speaks.
    pub summary_read: bool,
}

impl Summary {
    /// Tests that executed: passed (xpassed included), failed (pytest errors
    /// included) and pytest's xfailed, which ran and failed as expected. Skipped,
    /// deselected, ignored and filtered-out tests did not execute.
    pub fn executed(&self) -> u64 {
        self.counts
            .passed
            .saturating_add(self.counts.failed)
            .saturating_add(self.counts.xfailed)
    }
}

fn probe_runner(runner: Runner) -> ProbeRunner {
    match runner {
        Runner::Pytest => ProbeRunner::Pytest,
        Runner::Cargo => ProbeRunner::Cargo,
        Runner::Go => ProbeRunner::Go,
    }
}

/// The arguments (after the program) that run one span.
pub fn argv(span: &SpanClaim) -> Vec<String> {
    match span.runner {
        Runner::Pytest => vec!["-m".into(), "pytest".into(), span.name.clone(), "-q".into()],
        Runner::Cargo => {
            let mut a = vec!["test".to_string()];
            if let Some(p) = &span.package {
                a.push(format!("--package={p}"));
            }
            a.push("--".into());
            if span.exact {
                a.push("--exact".into());
            }
            a.push(span.name.clone());
            a
        }
        Runner::Go => vec![
            "test".into(),
            "-json".into(),
            "-count=1".into(),
            format!("-run={}", span.name),
            span.package.clone().unwrap_or_else(|| "./...".into()),
        ],
    }
}

/// The runner's summary from the shared parser that read its stdout.
pub fn summary(runner: Runner, parser: &Parser) -> Summary {
    match parser.result(Some(probe_runner(runner))) {
        Some((_, counts)) => Summary {
            counts,
            summary_read: true,
        },
        None => Summary::default(),
    }
}

/// [`summary`] of a recorded output (tests).
pub fn parse(runner: Runner, stdout: &str) -> Summary {
    let mut p = Parser::default();
    for line in stdout.lines() {
        p.feed_line(line);
    }
    summary(runner, &p)
}

/// `ran` and `passed` from the exit code and the counts.
///
/// pytest: exit 0 (all passed) or 1 (some failed) means tests executed; 2 (collection
/// error / interrupted), 4 (usage, e.g. node not found) and 5 (none collected) mean
/// nothing ran. When the summary is readable it must also show an executed test (so
/// "1 skipped", which exits 0, did not run). cargo and go: the summary decides `ran`.
pub fn judge(runner: Runner, returncode: Option<i32>, c: &Summary) -> (bool, bool) {
    let ran = match runner {
        Runner::Pytest => {
            matches!(returncode, Some(0) | Some(1)) && (!c.summary_read || c.executed() >= 1)
        }
        Runner::Cargo | Runner::Go => c.executed() >= 1,
    };
    let passed = ran
        && returncode == Some(0)
        && c.counts.failed == 0
        && (c.counts.passed >= 1 || (runner == Runner::Pytest && !c.summary_read));
    (ran, passed)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn pytest(text: &str) -> Summary {
        parse(Runner::Pytest, text)
    }

    #[test]
    fn pytest_summaries() {
        let c = pytest(".                                   [100%]\n1 passed in 0.01s\n");
        assert_eq!(
            (c.counts.passed, c.counts.failed, c.summary_read),
            (1, 0, true)
        );
        let c = pytest("F\nFAILED t.py::b - assert 0\n1 failed, 2 passed, 1 warning in 0.02s\n");
        assert_eq!((c.counts.passed, c.counts.failed), (2, 1));
        let c = pytest("\n\nno tests ran in 0.00s\n");
        assert!(c.summary_read && c.executed() == 0);
        let c = pytest("====== 1 skipped in 0.01s ======\n");
        assert_eq!((c.counts.skipped, c.executed()), (1, 0));
        let c = pytest("garbage\n");
        assert!(!c.summary_read);
        // The shared reading: an error is a failure (it executed), xfailed executed
        // without passing, xpassed is a pass.
        let c = pytest("1 error in 0.10s");
        assert_eq!((c.counts.errors, c.counts.failed, c.executed()), (1, 1, 1));
        let c = pytest("1 xfailed in 0.10s");
        assert_eq!((c.counts.passed, c.executed()), (0, 1));
        let c = pytest("1 xpassed in 0.10s");
        assert_eq!((c.counts.passed, c.executed()), (1, 1));
        // A test's own stdout line cannot replace the final summary.
        let c = pytest("3 passed in 0.01s\n1 failed in 0.02s\n");
        assert_eq!((c.counts.passed, c.counts.failed), (0, 1));
    }

    #[test]
    fn pytest_judgement() {
        let read = |p, f| Summary {
            counts: Counts {
                passed: p,
                failed: f,
                ..Counts::default()
            },
            summary_read: true,
        };
        assert_eq!(judge(Runner::Pytest, Some(0), &read(1, 0)), (true, true));
        assert_eq!(judge(Runner::Pytest, Some(1), &read(0, 1)), (true, false));
        assert_eq!(judge(Runner::Pytest, Some(4), &read(0, 0)), (false, false));
        assert_eq!(judge(Runner::Pytest, Some(5), &read(0, 0)), (false, false));
        assert_eq!(judge(Runner::Pytest, Some(2), &read(0, 0)), (false, false));
        // all skipped exits 0 but nothing ran
        let skipped = pytest("1 skipped in 0.01s");
        assert_eq!(judge(Runner::Pytest, Some(0), &skipped), (false, false));
        // an error ran and did not pass (pytest exits 1)
        let error = pytest("1 passed, 1 error in 0.01s");
        assert_eq!(judge(Runner::Pytest, Some(1), &error), (true, false));
        // unreadable summary: pytest's exit code decides (peer behaviour)
        assert_eq!(
            judge(Runner::Pytest, Some(0), &Summary::default()),
            (true, true)
        );
        assert_eq!(
            judge(Runner::Pytest, None, &Summary::default()),
            (false, false)
        );
    }

    const CARGO_OK: &str = "\nrunning 1 test\ntest tests::adds ... ok\n\ntest result: ok. 1 passed; 0 failed; 0 ignored; 0 measured; 0 filtered out; finished in 0.00s\n\n\nrunning 0 tests\n\ntest result: ok. 0 passed; 0 failed; 0 ignored; 0 measured; 0 filtered out; finished in 0.00s\n";
    const CARGO_NONE: &str = "\nrunning 0 tests\n\ntest result: ok. 0 passed; 0 failed; 0 ignored; 0 measured; 1 filtered out; finished in 0.00s\n";
    const CARGO_FAIL: &str = "\nrunning 1 test\ntest tests::adds ... FAILED\n\nfailures:\n\nfailures:\n    tests::adds\n\ntest result: FAILED. 0 passed; 1 failed; 0 ignored; 0 measured; 0 filtered out; finished in 0.00s\n";

    #[test]
    fn cargo_summaries_and_judgement() {
        let c = parse(Runner::Cargo, CARGO_OK);
        assert_eq!((c.counts.passed, c.counts.failed), (1, 0));
        assert_eq!(judge(Runner::Cargo, Some(0), &c), (true, true));
        let c = parse(Runner::Cargo, CARGO_NONE);
        assert_eq!(judge(Runner::Cargo, Some(0), &c), (false, false));
        let c = parse(Runner::Cargo, CARGO_FAIL);
        assert_eq!(judge(Runner::Cargo, Some(101), &c), (true, false));
        // compile error: no summary at all
        let c = parse(Runner::Cargo, "");
        assert_eq!(judge(Runner::Cargo, Some(101), &c), (false, false));
        // a pass count with a non-zero exit is not a pass
        assert_eq!(
            judge(Runner::Cargo, Some(101), &parse(Runner::Cargo, CARGO_OK)),
            (true, false)
        );
    }

    // Recorded by hand from `go test -json` / `go test -v` output formats (Go 1.22);
    // no Go toolchain runs here.
    const GO_JSON_PASS: &str = r#"{"Time":"2026-01-01T00:00:00Z","Action":"start","Package":"example.com/m"}
{"Time":"2026-01-01T00:00:00Z","Action":"run","Package":"example.com/m","Test":"TestAdd"}
{"Time":"2026-01-01T00:00:00Z","Action":"output","Package":"example.com/m","Test":"TestAdd","Output":"=== RUN   TestAdd\n"}
{"Time":"2026-01-01T00:00:00Z","Action":"output","Package":"example.com/m","Test":"TestAdd","Output":"--- PASS: TestAdd (0.00s)\n"}
{"Time":"2026-01-01T00:00:00Z","Action":"pass","Package":"example.com/m","Test":"TestAdd","Elapsed":0}
{"Time":"2026-01-01T00:00:00Z","Action":"output","Package":"example.com/m","Output":"PASS\n"}
{"Time":"2026-01-01T00:00:00Z","Action":"pass","Package":"example.com/m","Elapsed":0.002}
"#;
    const GO_JSON_NONE: &str = r#"{"Time":"2026-01-01T00:00:00Z","Action":"start","Package":"example.com/m"}
{"Time":"2026-01-01T00:00:00Z","Action":"output","Package":"example.com/m","Output":"testing: warning: no tests to run\n"}
{"Time":"2026-01-01T00:00:00Z","Action":"output","Package":"example.com/m","Output":"PASS\n"}
{"Time":"2026-01-01T00:00:00Z","Action":"output","Package":"example.com/m","Output":"ok  \texample.com/m\t0.002s [no tests to run]\n"}
{"Time":"2026-01-01T00:00:00Z","Action":"pass","Package":"example.com/m","Elapsed":0.002}
"#;
    const GO_JSON_FAIL: &str = r#"{"Action":"run","Package":"example.com/m","Test":"TestAdd"}
{"Action":"run","Package":"example.com/m","Test":"TestAdd/zero"}
{"Action":"fail","Package":"example.com/m","Test":"TestAdd/zero","Elapsed":0}
{"Action":"fail","Package":"example.com/m","Test":"TestAdd","Elapsed":0}
{"Action":"fail","Package":"example.com/m","Elapsed":0.003}
"#;
    const GO_VERBOSE: &str = "=== RUN   TestAdd\n=== RUN   TestAdd/zero\n--- PASS: TestAdd (0.00s)\n    --- PASS: TestAdd/zero (0.00s)\n=== RUN   TestSkip\n    m_test.go:9: later\n--- SKIP: TestSkip (0.00s)\nPASS\nok  \texample.com/m\t0.002s\n";
    const GO_BUILD_FAIL: &str = "# example.com/m [example.com/m.test]\n./m_test.go:5:2: undefined: Nope\nFAIL\texample.com/m [build failed]\n";

    #[test]
    fn go_summaries_and_judgement() {
        let c = parse(Runner::Go, GO_JSON_PASS);
        assert_eq!((c.counts.passed, c.counts.failed), (1, 0));
        assert_eq!(judge(Runner::Go, Some(0), &c), (true, true));
        let c = parse(Runner::Go, GO_JSON_NONE);
        assert_eq!(c.executed(), 0);
        assert_eq!(judge(Runner::Go, Some(0), &c), (false, false));
        let c = parse(Runner::Go, GO_JSON_FAIL);
        assert_eq!((c.counts.passed, c.counts.failed), (0, 2));
        assert_eq!(judge(Runner::Go, Some(1), &c), (true, false));
        let c = parse(Runner::Go, GO_VERBOSE);
        assert_eq!((c.counts.passed, c.counts.skipped), (2, 1));
        assert_eq!(judge(Runner::Go, Some(0), &c), (true, true));
        let c = parse(Runner::Go, GO_BUILD_FAIL);
        assert_eq!(judge(Runner::Go, Some(1), &c), (false, false));
    }

    #[test]
    fn argv_keeps_names_out_of_option_position() {
        let span = |runner, name: &str, package: Option<&str>| SpanClaim {
            runner,
            name: name.into(),
            package: package.map(Into::into),
            cwd: None,
            exact: true,
            expected_pass: true,
            pass_status_checked: true,
        };
        assert_eq!(
            argv(&span(Runner::Pytest, "t.py::x", None)),
            ["-m", "pytest", "t.py::x", "-q"]
        );
        assert_eq!(
            argv(&span(Runner::Cargo, "tests::adds", Some("fx"))),
            ["test", "--package=fx", "--", "--exact", "tests::adds"]
        );
        assert_eq!(
            argv(&span(Runner::Go, "^TestAdd$", None)),
            ["test", "-json", "-count=1", "-run=^TestAdd$", "./..."]
        );
    }
}
