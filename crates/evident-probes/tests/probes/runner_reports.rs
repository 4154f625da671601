//! The runners' own reports, read from real captured output (tests/data/runners/, whose
//! README says how and with which version each file was made): pytest's JUnit XML and
//! its subtests word, coloured output, Python unittest and TAP (node's test runner,
//! tape, node-tap). Each attack or mismatch has its honest twin.

use evident_probes::Runner;
use evident_probes::summary::{
    Counts, Parser, Reading, failed_test_name, parse_junit, read_text, runner_from_argv, strip_ansi,
};

macro_rules! data {
    ($name:literal) => {
        include_str!(concat!("../data/runners/", $name))
    };
}

fn c(passed: u64, failed: u64, skipped: u64) -> Counts {
    Counts {
        passed,
        failed,
        skipped,
        ..Counts::default()
    }
}

fn counted(text: &str, runner: Runner) -> Counts {
    match read_text(text, Some(runner)) {
        Reading::Counted(r, c) => {
            assert_eq!(r, runner);
            c
        }
        other => panic!("{runner:?}: {other:?}"),
    }
}

fn unreadable(text: &str, runner: Runner) -> String {
    match read_text(text, Some(runner)) {
        Reading::Unreadable { runner: r, reason } => {
            assert_eq!(r, runner);
            reason
        }
        other => panic!("{runner:?}: expected unreadable, got {other:?}"),
    }
}

fn argv(a: &[&str]) -> Vec<String> {
    a.iter().map(|s| s.to_string()).collect()
}

// --- pytest ---------------------------------------------------------------------------

/// pytest 8.4.2 with pytest-subtests 0.15.0, `-rA`: a test printed a summary-looking
/// line (`==== 99 passed in 0.01s ====`, shown in the PASSES section) before the real
/// one, which wins; `3 subtests passed` is read.
#[test]
fn pytest_8_every_word_with_subtests() {
    let got = counted(data!("pytest-8.4.2-mix.txt"), Runner::Pytest);
    assert_eq!(
        got,
        Counts {
            errors: 1,
            xfailed: 1,
            xpassed: 1,
            subtests_passed: 3,
            ..c(7, 5, 2)
        }
    );
    // Detected without a runner too: the last pytest line, not the printed one.
    assert_eq!(
        read_text(data!("pytest-8.4.2-mix.txt"), None),
        Reading::Counted(Runner::Pytest, got)
    );
}

#[test]
fn pytest_9_every_word() {
    // pytest 9 counts a test with a failing subtest as failed ("contains 1 failed
    // subtest") beside the subtest's own failure.
    assert_eq!(
        counted(data!("pytest-9.2.0-mix.txt"), Runner::Pytest),
        Counts {
            errors: 1,
            xfailed: 1,
            xpassed: 1,
            ..c(6, 6, 2)
        }
    );
}

/// `2 passed, 4 subtests passed in 0.04s`: before, a line no runner read ("no test ran").
#[test]
fn pytest_subtests_passed_is_read() {
    let want = Counts {
        subtests_passed: 4,
        ..c(2, 0, 0)
    };
    for text in [
        data!("pytest-9.2.0-subtests-v.txt"),
        data!("pytest-9.2.0-subtests-q.txt"),
        data!("pytest-8.4.2-subtests-v.txt"),
        data!("pytest-8.4.2-subtests-q.txt"),
    ] {
        assert_eq!(counted(text, Runner::Pytest), want);
    }
    let line = "==== 141 passed, 5 skipped, 152 subtests passed in 3.02s ====";
    assert_eq!(
        counted(line, Runner::Pytest),
        Counts {
            subtests_passed: 152,
            ..c(141, 0, 5)
        }
    );
    // The observation keys: subtests beside the totals, in none of them.
    let keys = counted(line, Runner::Pytest).keys(Runner::Pytest);
    assert!(keys.contains(&("subtests_passed", 152)));
    assert!(keys.contains(&("passed", 141)));
}

/// pytest's own JUnit XML: xfail as `<skipped type="pytest.xfail">`, strict XPASS as a
/// failure, non-strict XPASS as a plain pass (uncountable), subtest reports only in the
/// suite's `tests` (17 reports, 12 test cases).
#[test]
fn pytest_junit_counts_are_complete() {
    for xml in [data!("pytest-8.4.2-mix.xml"), data!("pytest-9.2.0-mix.xml")] {
        let r = parse_junit(xml).unwrap();
        assert_eq!(
            r.counts,
            Counts {
                errors: 1,
                xfailed: 1,
                subtests: 5,
                ..c(5, 5, 2)
            }
        );
        assert_eq!(r.cases.len(), 12);
        let keys = r.counts.keys(Runner::Junit);
        assert_eq!(
            keys,
            [
                ("passed", 5),
                ("failed", 5),
                ("skipped", 2),
                ("errors", 1),
                ("xfailed", 1),
                ("subtests", 5)
            ]
        );
    }
    // The honest twin of subtests: a report whose suite counts exactly its cases.
    let xml = r#"<testsuites><testsuite tests="2"><testcase classname="a" name="x"/><testcase classname="a" name="y"><skipped type="pytest.skip" message="m"/></testcase></testsuite></testsuites>"#;
    assert_eq!(parse_junit(xml).unwrap().counts, c(1, 0, 1));
}

// --- colour ---------------------------------------------------------------------------

#[test]
fn coloured_summaries_are_read() {
    assert_eq!(
        counted(data!("pytest-9.2.0-mix-color.txt"), Runner::Pytest),
        counted(data!("pytest-9.2.0-mix.txt"), Runner::Pytest)
    );
    for text in [
        data!("pytest-9.2.0-subtests-v-color.txt"),
        data!("pytest-8.4.2-subtests-color.txt"),
    ] {
        assert_eq!(
            counted(text, Runner::Pytest),
            Counts {
                subtests_passed: 4,
                ..c(2, 0, 0)
            }
        );
        assert!(text.contains("\x1b[32m"), "the fixture is coloured");
    }
    // libtest's colours end with `ESC ( B ESC [ m`.
    let cargo = data!("cargo-1.95.0-color.txt");
    assert!(cargo.contains("\x1b(B\x1b[m"));
    assert_eq!(
        read_text(cargo, None),
        Reading::Counted(
            Runner::Cargo,
            Counts {
                ignored: 1,
                ..c(1, 1, 1)
            }
        )
    );
    let mut p = Parser::default();
    cargo.lines().for_each(|l| p.feed_line(l));
    assert_eq!(p.failed_names(), ["tests::fails"]);
    // nextest: the Summary line is coloured word by word; the captured libtest lines
    // of the failing test do not make it cargo's.
    let nextest = data!("nextest-0.9.143-color.txt");
    assert_eq!(
        read_text(nextest, None),
        Reading::Counted(Runner::Nextest, c(1, 1, 1))
    );
    let mut p = Parser::default();
    nextest.lines().for_each(|l| p.feed_line(l));
    assert_eq!(p.failed_names(), ["colored tests::fails", "tests::fails"]);
}

#[test]
fn escape_sequences_are_removed() {
    for (line, want) in [
        ("\x1b[31m\x1b[1m1 failed\x1b[0m in 0.1s", "1 failed in 0.1s"),
        // OSC 8 hyperlinks, ended by ST or BEL.
        (
            "\x1b]8;;file:///t.py\x1b\\t.py\x1b]8;;\x1b\\ passed",
            "t.py passed",
        ),
        ("\x1b]0;title\x07ok", "ok"),
        ("\x1b(B\x1b[m.", "."),
        ("\u{9b}1mbold", "bold"),
        ("\x1b=\x1b>x", "x"),
        ("tail \x1b[", "tail "),
        ("tail \x1b", "tail "),
        ("no escapes", "no escapes"),
    ] {
        assert_eq!(strip_ansi(line), want, "{line:?}");
    }
}

// --- unittest -------------------------------------------------------------------------

/// Python 3.11: ok, FAIL, ERROR, skipped, expected failure, unexpected success, a
/// failing subtest, a docstring's first line, a log line between `...` and `ok`, and a
/// test that printed `Ran 99 tests` / `OK` to stderr before the real ones.
#[test]
fn unittest_verbose_counts_every_result() {
    let want = Counts {
        errors: 1,
        expected_failures: 1,
        unexpected_successes: 1,
        ..c(4, 4, 2)
    };
    assert_eq!(
        counted(data!("unittest-3.11.7-mod-v.txt"), Runner::Unittest),
        want
    );
    // Without -v only the closing lines speak: the same counts here.
    assert_eq!(
        counted(data!("unittest-3.11.7-mod.txt"), Runner::Unittest),
        want
    );
    assert_eq!(
        want.keys(Runner::Unittest),
        [
            ("passed", 4),
            ("failed", 4),
            ("skipped", 2),
            ("errors", 1),
            ("expected_failures", 1),
            ("unexpected_successes", 1)
        ]
    );
    let mut p = Parser::default();
    data!("unittest-3.11.7-mod-v.txt")
        .lines()
        .for_each(|l| p.feed_line(l));
    assert_eq!(
        p.failed_names(),
        [
            "test_errors (pkg.test_mod.Basic.test_errors)",
            "test_fails (pkg.test_mod.Basic.test_fails)",
            "test_subtests (pkg.test_mod.Basic.test_subtests) (i=1)"
        ]
    );
}

/// The honest twin: every test passes (a docstring line ending in `ok ... ok`, a test
/// named `test_ok_named_passed_ok`, a log line), on Python 3.10's and 3.11's formats.
#[test]
fn unittest_passing_runs() {
    let want = Counts {
        expected_failures: 1,
        ..c(4, 0, 2)
    };
    for text in [
        data!("unittest-3.11.7-pass-v.txt"),
        data!("unittest-3.10.13-pass-v.txt"),
        data!("unittest-3.11.7-pass.txt"),
    ] {
        assert_eq!(counted(text, Runner::Unittest), want);
    }
}

/// Subtests on 3.11 and 3.13: a test's failing subtests and its own error are one test
/// (`Ran 4 tests`), each its own failure; a skipped subtest is a skip.
#[test]
fn unittest_subtests() {
    let want = Counts {
        errors: 1,
        ..c(1, 4, 1)
    };
    assert_eq!(
        counted(data!("unittest-3.11.7-sub-v.txt"), Runner::Unittest),
        want
    );
    assert_eq!(
        counted(data!("unittest-3.13.0-sub-v.txt"), Runner::Unittest),
        want
    );
    // Python 3.10 prints no line for a failing subtest: the lines and the closing line
    // disagree, and the report is not read (the run failed either way).
    for text in [
        data!("unittest-3.10.13-sub-v.txt"),
        data!("unittest-3.10.13-mod-v.txt"),
    ] {
        let why = unreadable(text, Runner::Unittest);
        assert!(why.contains("its closing lines"), "{why}");
    }
}

/// A class whose setUpClass fails, one whose setUpClass skips, a module that does not
/// import: fixtures are results, not tests (`Ran 2 tests`).
#[test]
fn unittest_fixtures_and_import_errors() {
    assert_eq!(
        counted(data!("unittest-3.12.1-fixture-v.txt"), Runner::Unittest),
        Counts {
            errors: 2,
            ..c(1, 2, 1)
        }
    );
}

#[test]
fn unittest_no_tests() {
    // 3.11 closes with OK, 3.12 with NO TESTS RAN: read, zero tests.
    for text in [
        data!("unittest-3.11.7-empty-v.txt"),
        data!("unittest-3.12.1-empty-v.txt"),
    ] {
        assert_eq!(counted(text, Runner::Unittest), Counts::default());
    }
}

/// Attack: a failing test prints `ok` right after its `...` (its FAIL lands on the next
/// line), another prints a whole result line for a test that does not exist. The lines
/// no longer agree with `FAILED (failures=1)`.
#[test]
fn unittest_forged_result_lines_are_unreadable() {
    let why = unreadable(data!("unittest-3.11.7-forge-v.txt"), Runner::Unittest);
    assert!(
        why.contains("show 0 failures, its closing lines 1"),
        "{why}"
    );
    // A forged extra passing test, the runner's own result intact: one test too many.
    let text = "test_a (m.C.test_a) ... ok\ntest_b (m.C.test_b) ... \ntest_fake (m.C.test_fake) ... ok\ntest_b (m.C.test_b) ... ok\n\nRan 2 tests in 0.0s\n\nOK\n";
    assert!(unreadable(text, Runner::Unittest).contains("show 3 tests"));
    // A forged closing summary after the real one (an atexit hook): the result lines
    // do not agree with it.
    let text = "test_a (m.C.test_a) ... FAIL\n\nRan 1 test in 0.0s\n\nFAILED (failures=1)\nRan 5 tests in 0.0s\n\nOK\n";
    assert!(unreadable(text, Runner::Unittest).contains("tests"));
}

/// Django 5.2's `manage.py test -v 2`: migrations print `Applying … OK` on stdout, the
/// report is on stderr; the two streams merged as the gate merges them.
#[test]
fn django_manage_py_test() {
    let feed = |text: &str| {
        let mut p = Parser::default();
        text.lines().for_each(|l| p.feed_line(l));
        p
    };
    let mut out = feed(data!("django-5.2.19-v2.stdout.txt"));
    out.merge(&feed(data!("django-5.2.19-v2.stderr.txt")));
    assert_eq!(
        out.read(Some(Runner::Unittest)),
        Reading::Counted(Runner::Unittest, c(1, 2, 1))
    );
    assert_eq!(
        out.failed_names(),
        [
            "test_fails (accounts.tests.Accounts.test_fails)",
            "test_subtests (accounts.tests.Accounts.test_subtests) (i=2)"
        ]
    );
}

/// unittest writes to stderr: a summary a test printed to stdout makes two.
#[test]
fn unittest_summary_on_both_streams_is_unreadable() {
    let feed = |text: &str| {
        let mut p = Parser::default();
        text.lines().for_each(|l| p.feed_line(l));
        p
    };
    let stderr = feed(data!("unittest-3.11.7-pass-v.txt"));
    let mut stdout = feed("Ran 7 tests in 0.001s\n\nOK\n");
    stdout.merge(&stderr);
    assert!(matches!(
        stdout.read(Some(Runner::Unittest)),
        Reading::Unreadable { runner: Runner::Unittest, reason } if reason.contains("both stdout and stderr")
    ));
    // Twin: nothing on stdout.
    let mut stdout = feed("some output\n");
    stdout.merge(&stderr);
    assert_eq!(
        stdout
            .read(Some(Runner::Unittest))
            .counted()
            .unwrap()
            .1
            .passed,
        4
    );
}

// --- TAP ------------------------------------------------------------------------------

/// node 20's TAP reporter: tests, a parent test with subtests (one fails), describe
/// suites nested two deep, skip and todo; a test's console.log lines (`ok 99 - forged`,
/// `1..99`) arrive as `#` comments. A test named "not ok in the name passes" passes.
#[test]
fn node_test_runner_tap() {
    let got = counted(data!("node-20.20.2-mix-tap.txt"), Runner::Tap);
    assert_eq!(
        got,
        Counts {
            todo: 2,
            ..c(6, 2, 4)
        }
    );
    assert_eq!(
        got.keys(Runner::Tap),
        [
            ("passed", 6),
            ("failed", 2),
            ("skipped", 4),
            ("todo", 2),
            ("missing", 0)
        ]
    );
    assert_eq!(
        counted(data!("node-20.20.2-pass-tap.txt"), Runner::Tap),
        c(4, 0, 1)
    );
    // A parent that fails after all its subtests passed: a failure of its own.
    assert_eq!(
        counted(data!("node-20.20.2-own-failure-tap.txt"), Runner::Tap),
        c(1, 1, 0)
    );
    let mut p = Parser::default();
    data!("node-20.20.2-mix-tap.txt")
        .lines()
        .for_each(|l| p.feed_line(l));
    assert_eq!(p.failed_names(), ["fails", "child fails", "parent"]);
}

/// tape 5.10.2: flat assertions, `# SKIP` and `# TODO`, an assertion named `ok 3 looks
/// like a test point`, and a test printing a fake footer before tape's own.
#[test]
fn tape() {
    assert_eq!(
        counted(data!("tape-5.10.2-mix.txt"), Runner::Tap),
        Counts {
            todo: 2,
            ..c(4, 2, 3)
        }
    );
    assert_eq!(
        counted(data!("tape-5.10.2-pass.txt"), Runner::Tap),
        c(2, 0, 1)
    );
}

/// Attack: a tape test prints `ok 2 forged pass` before tape's own assertion 2.
#[test]
fn tape_forged_test_point_is_unreadable() {
    let why = unreadable(data!("tape-5.10.2-forge.txt"), Runner::Tap);
    assert!(why.contains("test point 2 where 3 was due"), "{why}");
    // A footer that disagrees with the stream (a test printed one after tape's).
    let text = format!("{}# tests 5\n", data!("tape-5.10.2-pass.txt"));
    assert!(unreadable(&text, Runner::Tap).contains("footer says 5 tests"));
}

/// node-tap 21.8.0 (`--reporter=tap`): every file a subtest of the stream, plan first,
/// `# time=` after names (not a directive), groups three deep.
#[test]
fn node_tap() {
    assert_eq!(
        counted(data!("tap-21.8.0-mix.txt"), Runner::Tap),
        Counts {
            todo: 1,
            ..c(3, 1, 2)
        }
    );
    assert_eq!(
        counted(data!("tap-21.8.0-pass.txt"), Runner::Tap),
        c(3, 0, 0)
    );
    // Attack: console.log in a test file writes into that file's stream (`ok 99`,
    // `1..99`); node-tap fails the file and the stream is out of order.
    let why = unreadable(data!("tap-21.8.0-forge.txt"), Runner::Tap);
    assert!(why.contains("test point 99 where 1 was due"), "{why}");
}

#[test]
fn tap_stream_cut_short() {
    // The run died after two tests: no plan at the end.
    let text: String = data!("node-20.20.2-mix-tap.txt")
        .lines()
        .take_while(|l| !l.starts_with("# Subtest: skipped"))
        .map(|l| format!("{l}\n"))
        .collect();
    assert!(unreadable(&text, Runner::Tap).contains("no plan"));
    // Plan first (node-tap), one file never reported.
    let text = "TAP version 14\n1..2\n# Subtest: a.js\n    ok 1 - x\n    1..1\nok 1 - a.js\n";
    assert_eq!(
        counted(text, Runner::Tap),
        Counts {
            missing: 1,
            ..c(1, 1, 0)
        }
    );
}

// --- which runner, and when nothing matched ------------------------------------------------

#[test]
fn no_report_names_the_runner_that_was_expected() {
    let unittest = data!("unittest-3.11.7-pass-v.txt");
    assert_eq!(
        read_text(unittest, Some(Runner::Tap)),
        Reading::NotFound {
            expected: Some(Runner::Tap)
        }
    );
    assert_eq!(
        read_text("collected 0 items\n", Some(Runner::Pytest)),
        Reading::NotFound {
            expected: Some(Runner::Pytest)
        }
    );
    // Without a runner, unittest and TAP are not guessed from the output.
    assert_eq!(
        read_text(unittest, None),
        Reading::NotFound { expected: None }
    );
    assert_eq!(
        read_text(data!("tape-5.10.2-pass.txt"), None),
        Reading::NotFound { expected: None }
    );
    // Twin: the report read when the runner is named.
    assert!(matches!(
        read_text(unittest, Some(Runner::Unittest)),
        Reading::Counted(Runner::Unittest, _)
    ));
    // What was printed instead.
    let mut p = Parser::default();
    data!("pytest-9.2.0-mix.txt")
        .lines()
        .for_each(|l| p.feed_line(l));
    assert_eq!(p.seen(), [Runner::Pytest]);
    assert_eq!(
        p.read(Some(Runner::Unittest)),
        Reading::NotFound {
            expected: Some(Runner::Unittest)
        }
    );
    // `no tests ran` is a report of zero tests, not a missing one.
    assert_eq!(
        read_text("==== no tests ran in 0.01s ====", Some(Runner::Pytest)),
        Reading::Counted(Runner::Pytest, Counts::default())
    );
}

#[test]
fn argv_names_unittest_and_tap() {
    let r = |a: &[&str]| runner_from_argv(&argv(a));
    for a in [
        &["python3", "-m", "unittest", "-v"][..],
        &[
            "/usr/bin/python3.11",
            "-m",
            "unittest",
            "discover",
            "-s",
            "tests",
        ],
        &["python", "-B", "-munittest", "tests.test_x"],
        &["python3", "-X", "dev", "-W", "error", "-m", "unittest"],
    ] {
        assert_eq!(r(a), Some(Runner::Unittest), "{a:?}");
    }
    for a in [
        &["node", "--test"][..],
        &["node", "--test", "--test-reporter=tap", "test/"],
        &["node", "--import", "tsx", "--test", "src/"],
        &[
            "node",
            "--test",
            "--test-reporter",
            "spec",
            "--test-reporter",
            "tap",
        ],
        &["tape", "test/*.js"],
        &["npx", "tape", "test/*.js"],
        &["./node_modules/.bin/tape", "t.js"],
        &["node", "node_modules/tape/bin/tape", "t.js"],
        &["npx", "--yes", "tap", "--reporter=tap"],
        &["tap"],
        &["tap", "-Rtap", "t.js"],
        &["pnpm", "exec", "tape", "t.js"],
        &["yarn", "tape", "t.js"],
    ] {
        assert_eq!(r(a), Some(Runner::Tap), "{a:?}");
    }
    for a in [
        &["npm", "test"][..],
        &["npm", "run", "test"],
        &["yarn", "test"],
        &["node", "app.js", "--test"],
        &["node", "--test", "--test-reporter=spec"],
        &["tap", "-R", "spec"],
        &["tap", "--reporter=dot"],
        &["python3", "script.py", "-m", "unittest"],
        &["python3", "-c", "import unittest"],
        &["make", "check"],
    ] {
        assert_eq!(r(a), None, "{a:?}");
    }
    // Words that are arguments, not programs, name nothing new.
    assert_eq!(r(&["cargo", "test", "tape"]), Some(Runner::Cargo));
    assert_eq!(
        r(&["python3", "-m", "pytest", "-k", "unittest"]),
        Some(Runner::Pytest)
    );
}

#[test]
fn failing_test_names_of_the_new_runners() {
    for (line, name) in [
        (
            "FAIL: test_x (pkg.mod.C.test_x)",
            Some("test_x (pkg.mod.C.test_x)"),
        ),
        (
            "ERROR: setUpClass (pkg.mod.C)",
            Some("setUpClass (pkg.mod.C)"),
        ),
        ("ERROR: something went wrong", None),
        ("not ok 3 - fails", Some("fails")),
        ("not ok 5 - todo failing # TODO later", None),
        (
            "FAIL [   0.017s] (2/2) colored tests::fails",
            Some("colored tests::fails"),
        ),
        (
            "FAIL [   0.004s] billing tests::adds",
            Some("billing tests::adds"),
        ),
    ] {
        assert_eq!(failed_test_name(line), name, "{line}");
    }
}
