//! Test spans: how each runner is invoked, how its summary is read, and the two
//! separate facts the audit records: `ran` (the runner executed at least one test
//! the span names) and `passed` (exit zero, at least one test passed, none failed).

use crate::input::{Runner, SpanClaim};
use serde::Serialize;

/// Test counts read from a runner's own summary.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize)]
pub struct Counts {
    pub passed: u64,
    pub failed: u64,
    pub skipped: u64,
    /// pytest errors (setup/teardown) and xfail/xpass: executed, neither pass nor fail.
    pub other_executed: u64,
    /// Whether a summary was found at all.
    pub summary_read: bool,
}

impl Counts {
    pub fn executed(&self) -> u64 {
        self.passed + self.failed + self.other_executed
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

/// Reads the counts from a runner's stdout.
pub fn parse(runner: Runner, stdout: &str) -> Counts {
    match runner {
        Runner::Pytest => parse_pytest(stdout),
        Runner::Cargo => parse_cargo(stdout),
        Runner::Go => {
            let json = parse_go_json(stdout);
            if json.summary_read {
                json
            } else {
                parse_go_verbose(stdout)
            }
        }
    }
}

/// `ran` and `passed` from the exit code and the counts.
///
/// pytest: exit 0 (all passed) or 1 (some failed) means tests executed; 2 (collection
/// error / interrupted), 4 (usage, e.g. node not found) and 5 (none collected) mean
/// nothing ran. When the summary is readable it must also show an executed test (so
/// "1 skipped", which exits 0, did not run). cargo and go: the summary decides `ran`.
pub fn judge(runner: Runner, returncode: Option<i32>, c: &Counts) -> (bool, bool) {
    let ran = match runner {
        Runner::Pytest => {
            matches!(returncode, Some(0) | Some(1)) && (!c.summary_read || c.executed() >= 1)
        }
        Runner::Cargo | Runner::Go => c.executed() >= 1,
    };
    let passed = ran
        && returncode == Some(0)
        && c.failed == 0
        && (c.passed >= 1 || (runner == Runner::Pytest && !c.summary_read));
    (ran, passed)
}

fn add_count(c: &mut Counts, n: u64, word: &str) -> bool {
    match word {
        "passed" => c.passed += n,
        "failed" => c.failed += n,
        "skipped" => c.skipped += n,
        "error" | "errors" | "xfailed" | "xpassed" => c.other_executed += n,
        "deselected" | "warning" | "warnings" | "rerun" | "reruns" => {}
        _ => return false,
    }
    true
}

/// pytest's final summary line: `1 failed, 2 passed, 1 warning in 0.12s`, possibly
/// framed with `=` (without `-q`), or `no tests ran in 0.01s`.
pub fn parse_pytest(stdout: &str) -> Counts {
    for line in stdout.lines().rev() {
        let line = line.trim().trim_matches('=').trim();
        if line.is_empty() {
            continue;
        }
        let Some((left, right)) = line.rsplit_once(" in ") else {
            continue;
        };
        if !right.trim_end().ends_with('s') {
            continue;
        }
        if left == "no tests ran" {
            return Counts {
                summary_read: true,
                ..Counts::default()
            };
        }
        let mut c = Counts::default();
        let ok = left.split(", ").all(|item| {
            let mut it = item.split_whitespace();
            match (
                it.next().and_then(|n| n.parse::<u64>().ok()),
                it.next(),
                it.next(),
            ) {
                (Some(n), Some(word), None) => add_count(&mut c, n, word),
                _ => false,
            }
        });
        if ok {
            c.summary_read = true;
            return c;
        }
    }
    Counts::default()
}

/// Sums every libtest `test result:` line (one per test binary and doc-tests):
/// `test result: ok. 1 passed; 0 failed; 2 ignored; 0 measured; 3 filtered out; ...`.
pub fn parse_cargo(stdout: &str) -> Counts {
    let mut c = Counts::default();
    for line in stdout.lines() {
        let Some(rest) = line.trim().strip_prefix("test result: ") else {
            continue;
        };
        let Some((_, counts)) = rest.split_once(". ") else {
            continue;
        };
        c.summary_read = true;
        for item in counts.split(';') {
            let mut it = item.split_whitespace();
            if let (Some(n), Some(word)) =
                (it.next().and_then(|n| n.parse::<u64>().ok()), it.next())
            {
                match word {
                    "passed" => c.passed += n,
                    "failed" => c.failed += n,
                    "ignored" => c.skipped += n,
                    _ => {}
                }
            }
        }
    }
    c
}

/// `go test -json`: one JSON event per line; a test's final `pass`, `fail` or `skip`
/// action is counted (sub-tests included). Lines that are not events are ignored.
pub fn parse_go_json(stdout: &str) -> Counts {
    let mut c = Counts::default();
    for line in stdout.lines() {
        let Ok(serde_json::Value::Object(ev)) = serde_json::from_str::<serde_json::Value>(line)
        else {
            continue;
        };
        let action = ev.get("Action").and_then(|a| a.as_str()).unwrap_or("");
        if matches!(
            action,
            "pass" | "fail" | "skip" | "output" | "run" | "start"
        ) {
            c.summary_read = true;
        }
        let is_test = ev
            .get("Test")
            .and_then(|t| t.as_str())
            .is_some_and(|t| !t.is_empty());
        if !is_test {
            continue;
        }
        match action {
            "pass" => c.passed += 1,
            "fail" => c.failed += 1,
            "skip" => c.skipped += 1,
            _ => {}
        }
    }
    c
}

/// `go test -v` text: `--- PASS: TestX (0.00s)`, `--- FAIL: ...`, `--- SKIP: ...`
/// (indented for sub-tests).
pub fn parse_go_verbose(stdout: &str) -> Counts {
    let mut c = Counts::default();
    for line in stdout.lines() {
        let t = line.trim_start();
        if let Some(rest) = t.strip_prefix("--- ") {
            c.summary_read = true;
            if rest.starts_with("PASS: ") {
                c.passed += 1;
            } else if rest.starts_with("FAIL: ") {
                c.failed += 1;
            } else if rest.starts_with("SKIP: ") {
                c.skipped += 1;
            }
        } else if t.starts_with("ok ")
            || t.starts_with("ok\t")
            || t.starts_with("FAIL")
            || t == "PASS"
        {
            c.summary_read = true;
        }
    }
    c
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn pytest_summaries() {
        let c = parse_pytest(".                                   [100%]\n1 passed in 0.01s\n");
        assert_eq!((c.passed, c.failed, c.summary_read), (1, 0, true));
        let c =
            parse_pytest("F\nFAILED t.py::b - assert 0\n1 failed, 2 passed, 1 warning in 0.02s\n");
        assert_eq!((c.passed, c.failed), (2, 1));
        let c = parse_pytest("\n\nno tests ran in 0.00s\n");
        assert!(c.summary_read && c.executed() == 0);
        let c = parse_pytest("====== 1 skipped in 0.01s ======\n");
        assert_eq!((c.skipped, c.executed()), (1, 0));
        let c = parse_pytest("garbage\n");
        assert!(!c.summary_read);
        let c = parse_pytest("1 error in 0.10s");
        assert_eq!(c.other_executed, 1);
    }

    #[test]
    fn pytest_judgement() {
        let read = |p, f| Counts {
            passed: p,
            failed: f,
            summary_read: true,
            ..Counts::default()
        };
        assert_eq!(judge(Runner::Pytest, Some(0), &read(1, 0)), (true, true));
        assert_eq!(judge(Runner::Pytest, Some(1), &read(0, 1)), (true, false));
        assert_eq!(judge(Runner::Pytest, Some(4), &read(0, 0)), (false, false));
        assert_eq!(judge(Runner::Pytest, Some(5), &read(0, 0)), (false, false));
        assert_eq!(judge(Runner::Pytest, Some(2), &read(0, 0)), (false, false));
        // all skipped exits 0 but nothing ran
        let skipped = Counts {
            skipped: 1,
            summary_read: true,
            ..Counts::default()
        };
        assert_eq!(judge(Runner::Pytest, Some(0), &skipped), (false, false));
        // unreadable summary: pytest's exit code decides (peer behaviour)
        assert_eq!(
            judge(Runner::Pytest, Some(0), &Counts::default()),
            (true, true)
        );
        assert_eq!(
            judge(Runner::Pytest, None, &Counts::default()),
            (false, false)
        );
    }

    const CARGO_OK: &str = "\nrunning 1 test\ntest tests::adds ... ok\n\ntest result: ok. 1 passed; 0 failed; 0 ignored; 0 measured; 0 filtered out; finished in 0.00s\n\n\nrunning 0 tests\n\ntest result: ok. 0 passed; 0 failed; 0 ignored; 0 measured; 0 filtered out; finished in 0.00s\n";
    const CARGO_NONE: &str = "\nrunning 0 tests\n\ntest result: ok. 0 passed; 0 failed; 0 ignored; 0 measured; 1 filtered out; finished in 0.00s\n";
    const CARGO_FAIL: &str = "\nrunning 1 test\ntest tests::adds ... FAILED\n\nfailures:\n\nfailures:\n    tests::adds\n\ntest result: FAILED. 0 passed; 1 failed; 0 ignored; 0 measured; 0 filtered out; finished in 0.00s\n";

    #[test]
    fn cargo_summaries_and_judgement() {
        let c = parse_cargo(CARGO_OK);
        assert_eq!((c.passed, c.failed), (1, 0));
        assert_eq!(judge(Runner::Cargo, Some(0), &c), (true, true));
        let c = parse_cargo(CARGO_NONE);
        assert_eq!(judge(Runner::Cargo, Some(0), &c), (false, false));
        let c = parse_cargo(CARGO_FAIL);
        assert_eq!(judge(Runner::Cargo, Some(101), &c), (true, false));
        // compile error: no summary at all
        let c = parse_cargo("");
        assert_eq!(judge(Runner::Cargo, Some(101), &c), (false, false));
        // a pass count with a non-zero exit is not a pass
        assert_eq!(
            judge(Runner::Cargo, Some(101), &parse_cargo(CARGO_OK)),
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
        assert_eq!((c.passed, c.failed), (1, 0));
        assert_eq!(judge(Runner::Go, Some(0), &c), (true, true));
        let c = parse(Runner::Go, GO_JSON_NONE);
        assert!(c.summary_read);
        assert_eq!(judge(Runner::Go, Some(0), &c), (false, false));
        let c = parse(Runner::Go, GO_JSON_FAIL);
        assert_eq!((c.passed, c.failed), (0, 2));
        assert_eq!(judge(Runner::Go, Some(1), &c), (true, false));
        let c = parse(Runner::Go, GO_VERBOSE);
        assert_eq!((c.passed, c.skipped), (2, 1));
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
