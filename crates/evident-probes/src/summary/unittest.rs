//! Python unittest's report, as `python -m unittest -v` (and Django's `runtests.py
//! -v 2`, which uses unittest's result class) writes it to stderr:
//!
//! ```text
//! test_ok (pkg.mod.Class.test_ok) ... ok
//! test_doc (pkg.mod.Class.test_doc)
//! First line of the docstring. ... FAIL
//! test_sub (pkg.mod.Class.test_sub) ...
//!   test_sub (pkg.mod.Class.test_sub) (i=1) ... FAIL
//! test_skip (pkg.mod.Class.test_skip) ... skipped 'why'
//! setUpClass (pkg.mod.Broken) ... ERROR
//! ----------------------------------------------------------------------
//! Ran 5 tests in 0.011s
//!
//! FAILED (failures=2, errors=1, skipped=1)
//! ```
//!
//! Python ≤ 3.10 writes `test_ok (pkg.mod.Class)` and no line for a failing subtest;
//! 3.12 closes a run of no test with `NO TESTS RAN`. A test's own output to stderr can
//! fall between a test's `...` and its result, which then stands alone on a line.
//!
//! The per-test result lines are counted (a test whose every line is `ok` passed), and
//! must agree with the closing lines: as many failures, errors, skips, expected
//! failures and unexpected successes, and as many tests as `Ran N tests` (class and
//! module fixtures such as `setUpClass` are results but not tests). A forged result
//! line, or a forged `ok` printed where the runner's `FAIL` belongs, breaks that
//! agreement and the report is unreadable. Without `-v` there are no per-test lines
//! and the counts are the closing lines' own (`passed` is then `Ran N` less every
//! other count, which a test with several failing subtests makes smaller than it is).
//!
//! When a run prints more than one closing summary (a test printed one), the last wins,
//! checked against the result lines since the summary before it, or since the start.

use super::{Counts, both};

/// Class and module fixtures: their failures and skips are results, never tests.
const FIXTURES: [&str; 4] = [
    "setUpClass",
    "tearDownClass",
    "setUpModule",
    "tearDownModule",
];

/// One result line's status.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Status {
    Ok,
    Fail,
    Error,
    Skipped,
    ExpectedFailure,
    UnexpectedSuccess,
}

/// The status a result line ends with, exactly as unittest writes it.
fn status(s: &str) -> Option<Status> {
    Some(match s {
        "ok" => Status::Ok,
        "FAIL" => Status::Fail,
        "ERROR" => Status::Error,
        "expected failure" => Status::ExpectedFailure,
        "unexpected success" => Status::UnexpectedSuccess,
        _ => {
            // `skipped {reason!r}`: a quoted Python string.
            let r = s.strip_prefix("skipped ")?;
            let quoted = r.len() >= 2
                && ((r.starts_with('\'') && r.ends_with('\''))
                    || (r.starts_with('"') && r.ends_with('"')));
            if !quoted {
                return None;
            }
            Status::Skipped
        }
    })
}

/// A test's description at the start of `t`: `name (dotted.id)`. Returns the
/// description (the test's key) and the rest of the line.
pub(crate) fn header(t: &str) -> Option<(&str, &str)> {
    let (name, rest) = t.split_once(" (")?;
    if name.is_empty() || name.contains(|c: char| c.is_whitespace() || c == '(' || c == ')') {
        return None;
    }
    let close = rest.find(')')?;
    let id = &rest[..close];
    let id_ok = !id.is_empty()
        && id
            .chars()
            .all(|c| c.is_alphanumeric() || c == '_' || c == '.' || c == '<' || c == '>');
    if !id_ok {
        return None;
    }
    let end = name.len() + 2 + close + 1;
    Some((&t[..end], &t[end..]))
}

/// `Ran 5 tests in 0.011s` → 5.
fn ran_line(t: &str) -> Option<u64> {
    let rest = t.strip_prefix("Ran ")?;
    let (n, rest) = rest.split_once(' ')?;
    let rest = rest
        .strip_prefix("tests in ")
        .or_else(|| rest.strip_prefix("test in "))?;
    rest.strip_suffix('s')?.parse::<f64>().ok()?;
    n.parse().ok()
}

/// The line after `Ran N tests`: `OK`, `FAILED (failures=1, errors=2)`, `NO TESTS RAN`.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
struct Closing {
    ran: u64,
    failed_word: bool,
    failures: u64,
    errors: u64,
    skipped: u64,
    expected_failures: u64,
    unexpected_successes: u64,
}

fn closing_line(t: &str, ran: u64) -> Option<Closing> {
    let mut c = Closing {
        ran,
        ..Closing::default()
    };
    let rest = if let Some(r) = t.strip_prefix("FAILED") {
        c.failed_word = true;
        r
    } else if let Some(r) = t.strip_prefix("NO TESTS RAN") {
        r
    } else {
        t.strip_prefix("OK")?
    };
    if rest.is_empty() {
        return Some(c);
    }
    let infos = rest.strip_prefix(" (")?.strip_suffix(')')?;
    for info in infos.split(", ") {
        let (k, v) = info.split_once('=')?;
        let v: u64 = v.parse().ok()?;
        match k {
            "failures" => c.failures = v,
            "errors" => c.errors = v,
            "skipped" => c.skipped = v,
            "expected failures" => c.expected_failures = v,
            "unexpected successes" => c.unexpected_successes = v,
            _ => return None,
        }
    }
    Some(c)
}

/// Result lines since some point, grouped into tests (a test's lines are consecutive:
/// its subtests, then its own result).
#[derive(Debug, Clone, Default)]
struct Tally {
    lines: u64,
    fail: u64,
    error: u64,
    skipped: u64,
    expected_failures: u64,
    unexpected_successes: u64,
    /// Tests whose lines are finished.
    tests: u64,
    /// Those of them whose every line was `ok`.
    passed: u64,
    /// The test whose lines are being read, and whether they were all `ok`.
    current: Option<(String, bool)>,
}

impl Tally {
    fn record(&mut self, key: &str, st: Status) {
        self.lines = self.lines.saturating_add(1);
        let n = match st {
            Status::Ok => None,
            Status::Fail => Some(&mut self.fail),
            Status::Error => Some(&mut self.error),
            Status::Skipped => Some(&mut self.skipped),
            Status::ExpectedFailure => Some(&mut self.expected_failures),
            Status::UnexpectedSuccess => Some(&mut self.unexpected_successes),
        };
        if let Some(n) = n {
            *n = n.saturating_add(1);
        }
        let name = key.split(" (").next().unwrap_or(key);
        if FIXTURES.contains(&name) {
            return;
        }
        match &mut self.current {
            Some((k, all_ok)) if k == key => *all_ok &= st == Status::Ok,
            _ => {
                self.finish_test();
                self.current = Some((key.to_string(), st == Status::Ok));
            }
        }
    }

    fn finish_test(&mut self) {
        if let Some((_, all_ok)) = self.current.take() {
            self.tests = self.tests.saturating_add(1);
            if all_ok {
                self.passed = self.passed.saturating_add(1);
            }
        }
    }

    /// The counts when these lines agree with the closing lines.
    fn check(&self, c: &Closing) -> Result<Counts, String> {
        let mut t = self.clone();
        t.finish_test();
        let ours = [
            ("tests", t.tests, c.ran),
            ("failures", t.fail, c.failures),
            ("errors", t.error, c.errors),
            ("skipped", t.skipped, c.skipped),
            (
                "expected failures",
                t.expected_failures,
                c.expected_failures,
            ),
            (
                "unexpected successes",
                t.unexpected_successes,
                c.unexpected_successes,
            ),
        ];
        if let Some((what, lines, closing)) = ours.iter().find(|(_, a, b)| a != b) {
            return Err(format!(
                "unittest's per-test lines show {lines} {what}, its closing lines {closing} \
                 (a test printed result lines, its output split one, or Python ≤ 3.10 \
                 left a failing subtest unprinted)"
            ));
        }
        Ok(counts(c, t.passed))
    }
}

/// Counts from the closing lines, with `passed` given.
fn counts(c: &Closing, passed: u64) -> Counts {
    Counts {
        passed,
        failed: c
            .failures
            .saturating_add(c.errors)
            .saturating_add(c.unexpected_successes),
        skipped: c.skipped.saturating_add(c.expected_failures),
        errors: c.errors,
        expected_failures: c.expected_failures,
        unexpected_successes: c.unexpected_successes,
        ..Counts::default()
    }
}

/// One output stream's unittest state.
#[derive(Debug, Clone, Default)]
pub(crate) struct Stream {
    /// The test whose description was printed and whose result was not yet, and
    /// whether its docstring's line comes next (the description stood alone).
    pending: Option<(String, bool)>,
    /// `Ran N tests` was the last line: the next one should close the run.
    ran: Option<u64>,
    /// Result lines since the last closing summary, and since the start.
    segment: Tally,
    total: Tally,
    /// The reading of the last closing summary.
    last: Option<Result<Counts, String>>,
    /// The reading of the other output stream, after [`Stream::merge`].
    other: Option<Result<Counts, String>>,
}

impl Stream {
    /// One trimmed, non-empty line.
    pub(crate) fn feed(&mut self, t: &str) {
        if let Some(n) = self.ran.take()
            && let Some(c) = closing_line(t, n)
        {
            self.close(c);
            return;
        }
        if let Some(n) = ran_line(t) {
            self.ran = Some(n);
            return;
        }
        self.result_line(t);
    }

    fn result_line(&mut self, t: &str) {
        // The line after a description alone is its docstring's first line, whatever
        // it looks like; the status follows its ` ... `.
        if let Some((key, true)) = &self.pending {
            let key = key.clone();
            self.pending = Some((key.clone(), false));
            if let Some(i) = t.rfind(" ... ")
                && let Some(st) = status(&t[i + 5..])
            {
                self.record(&key, st);
            }
            return;
        }
        if let Some((key, rest)) = header(t) {
            self.pending = Some((key.to_string(), rest.is_empty()));
            // `name (id) ... ok`; a subtest's `name (id) (i=1) ... FAIL`; or, when the
            // description has a docstring line, nothing (the status comes after it).
            let tail = match rest.find(" ... ") {
                Some(i) => &rest[i + 5..],
                None => return,
            };
            if let Some(st) = status(tail) {
                return self.record(key, st);
            }
            // Python ≤ 3.10: a test with a failing subtest prints no status, and the
            // next test's description follows on the same line.
            if header(tail).is_some() {
                return self.result_line(tail);
            }
            // A subtest's message holding ` ... `.
            if let Some(i) = t.rfind(" ... ")
                && let Some(st) = status(&t[i + 5..])
            {
                return self.record(key, st);
            }
            // Output of the test itself follows the `...`: the status comes later.
            return;
        }
        let Some((key, _)) = self.pending.clone() else {
            return;
        };
        // The status alone: the test printed a line of its own after the `...`.
        let st = status(t);
        if let Some(st) = st {
            self.record(&key, st);
        }
    }

    fn record(&mut self, key: &str, st: Status) {
        self.pending = None;
        self.segment.record(key, st);
        self.total.record(key, st);
    }

    fn close(&mut self, c: Closing) {
        let failing = c
            .failures
            .saturating_add(c.errors)
            .saturating_add(c.unexpected_successes)
            > 0;
        let reading = if failing != c.failed_word {
            Err(format!(
                "unittest's closing line says {} but counts {} failures, errors and unexpected successes",
                if c.failed_word { "FAILED" } else { "OK" },
                c.failures
                    .saturating_add(c.errors)
                    .saturating_add(c.unexpected_successes)
            ))
        } else if self.total.lines == 0 {
            // No per-test lines (no -v): the closing lines' counts.
            let not_passed = c
                .skipped
                .saturating_add(c.expected_failures)
                .saturating_add(c.unexpected_successes)
                .saturating_add(c.failures)
                .saturating_add(c.errors);
            Ok(counts(&c, c.ran.saturating_sub(not_passed)))
        } else {
            let seg = (self.segment.lines > 0).then(|| self.segment.check(&c));
            match seg {
                Some(Ok(counts)) => Ok(counts),
                Some(Err(e)) => self.total.check(&c).map_err(|_| e),
                None => self.total.check(&c),
            }
        };
        self.last = Some(reading);
        self.segment = Tally::default();
    }

    /// Combine with the other output stream's state: a report on both is unreadable.
    pub(crate) fn merge(&mut self, other: &Stream) {
        self.other = both(self.other.take(), other.reading(), "unittest summary");
    }

    /// `None` when no closing summary was seen; else its counts, or why they do not
    /// hold together.
    pub(crate) fn reading(&self) -> Option<Result<Counts, String>> {
        both(self.last.clone(), self.other.clone(), "unittest summary")
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn read(text: &str) -> Option<Result<Counts, String>> {
        let mut s = Stream::default();
        for line in text.lines() {
            let t = line.trim();
            if !t.is_empty() {
                s.feed(t);
            }
        }
        s.reading()
    }

    #[test]
    fn headers_and_statuses() {
        assert_eq!(
            header("test_a (pkg.mod.C.test_a) ... ok"),
            Some(("test_a (pkg.mod.C.test_a)", " ... ok"))
        );
        assert_eq!(
            header("setUpModule (pkg.mod)"),
            Some(("setUpModule (pkg.mod)", ""))
        );
        assert_eq!(header("test a::b ... ok"), None);
        assert_eq!(header("Connecting (retry 2) ... ok"), None);
        assert_eq!(header("(x) ... ok"), None);
        assert_eq!(status("skipped 'a ... b'"), Some(Status::Skipped));
        assert_eq!(status("skipped \"it's\""), Some(Status::Skipped));
        assert_eq!(status("skipped why"), None);
        assert_eq!(status("OK"), None);
        assert_eq!(ran_line("Ran 1 test in 0.000s"), Some(1));
        assert_eq!(ran_line("Ran 12 tests in 1.5s"), Some(12));
        assert_eq!(ran_line("Ran 12 tests"), None);
        assert_eq!(ran_line("Ran out of tests in 3s"), None);
        assert_eq!(
            closing_line("FAILED (failures=1, expected failures=2)", 3),
            Some(Closing {
                ran: 3,
                failed_word: true,
                failures: 1,
                expected_failures: 2,
                ..Closing::default()
            })
        );
        assert_eq!(closing_line("OK (skipped=1, flaky=2)", 3), None);
        assert_eq!(closing_line("OKAY", 3), None);
    }

    #[test]
    fn a_closing_word_that_contradicts_its_counts_is_unreadable() {
        let r = read("Ran 1 test in 0.0s\n\nOK (failures=1)\n").unwrap();
        assert!(r.unwrap_err().contains("says OK"));
        let r = read("Ran 1 test in 0.0s\n\nFAILED\n").unwrap();
        assert!(r.unwrap_err().contains("says FAILED"));
    }

    #[test]
    fn ran_must_be_followed_by_its_status() {
        assert_eq!(read("Ran 3 tests in 0.0s\nsomething else\nOK\n"), None);
        assert_eq!(read("OK\n"), None);
    }

    #[test]
    fn a_subtest_message_with_dots() {
        let out = "test_s (m.C.test_s) ... \n  test_s (m.C.test_s) [a ... b] (i=1) ... FAIL\n\nRan 1 test in 0.0s\n\nFAILED (failures=1)\n";
        let c = read(out).unwrap().unwrap();
        assert_eq!((c.passed, c.failed), (0, 1));
    }

    /// A test printed `Ran 2 tests` / `OK` in the middle of the run: the real summary is
    /// checked against every result line since the start, and agrees.
    #[test]
    fn a_summary_printed_mid_run_does_not_split_the_count() {
        let out = "test_a (m.C.test_a) ... ok\ntest_b (m.C.test_b) ... \nRan 2 tests in 0.0s\n\nOK\nok\ntest_c (m.C.test_c) ... FAIL\n\nRan 3 tests in 0.0s\n\nFAILED (failures=1)\n";
        let c = read(out).unwrap().unwrap();
        assert_eq!((c.passed, c.failed), (2, 1));
    }

    /// Two real runs in one stream (a script running two suites): the last one's counts,
    /// as for pytest.
    #[test]
    fn two_runs_the_last_wins() {
        let run = |name: &str, st: &str, closing: &str| {
            format!("{name} (m.C.{name}) ... {st}\n\nRan 1 test in 0.0s\n\n{closing}\n")
        };
        let out = run("test_a", "FAIL", "FAILED (failures=1)") + &run("test_b", "ok", "OK");
        let c = read(&out).unwrap().unwrap();
        assert_eq!((c.passed, c.failed), (1, 0));
    }

    #[test]
    fn two_streams_with_a_summary_are_unreadable() {
        let mut a = Stream::default();
        let mut b = Stream::default();
        for t in ["Ran 1 test in 0.0s", "OK"] {
            a.feed(t);
            b.feed(t);
        }
        a.merge(&b);
        assert!(
            a.reading()
                .unwrap()
                .unwrap_err()
                .contains("both stdout and stderr")
        );
        let mut c = Stream::default();
        c.merge(&b);
        assert_eq!(c.reading().unwrap().unwrap().passed, 1);
    }
}
