//! Runners that are not installed here (go, cargo-nextest) are tested on recorded
//! output text: no Go toolchain or nextest binary is on this machine.

use evident_probes::Runner;
use evident_probes::summary::{Counts, parse_text, runner_from_argv};

const GO_V: &str = "=== RUN   TestAdd
--- PASS: TestAdd (0.00s)
=== RUN   TestSplit
=== RUN   TestSplit/empty
    --- PASS: TestSplit/empty (0.00s)
=== RUN   TestSplit/bad
    split_test.go:20: got 2 parts
    --- FAIL: TestSplit/bad (0.00s)
--- FAIL: TestSplit (0.00s)
=== RUN   TestNet
    net_test.go:9: no network
--- SKIP: TestNet (0.00s)
FAIL
FAIL	example.com/split	0.004s
ok  	example.com/add	0.002s
FAIL
";

const GO_JSON: &str = r#"{"Time":"2024-05-01T10:00:00Z","Action":"start","Package":"example.com/add"}
{"Time":"2024-05-01T10:00:00Z","Action":"run","Package":"example.com/add","Test":"TestAdd"}
{"Time":"2024-05-01T10:00:00Z","Action":"output","Package":"example.com/add","Test":"TestAdd","Output":"--- PASS: TestAdd (0.00s)\n"}
{"Time":"2024-05-01T10:00:00Z","Action":"pass","Package":"example.com/add","Test":"TestAdd","Elapsed":0}
{"Time":"2024-05-01T10:00:00Z","Action":"skip","Package":"example.com/add","Test":"TestSkip","Elapsed":0}
{"Time":"2024-05-01T10:00:00Z","Action":"pass","Package":"example.com/add","Elapsed":0.002}
"#;

const NEXTEST: &str = "    Starting 4 tests across 2 binaries (1 test skipped)
        PASS [   0.003s] fixture tests::adds
        PASS [   0.003s] fixture tests::more
        FAIL [   0.004s] fixture tests::flips
     TIMEOUT [  60.001s] fixture tests::hangs
------------
     Summary [  60.010s] 4 tests run: 2 passed, 1 failed, 1 timed out, 1 skipped
        FAIL [   0.004s] fixture tests::flips
error: test run failed
";

#[test]
fn go_test_verbose_counts_tests_and_subtests() {
    // Output of `go test -v ./...` (with the `--- PASS:` line inside the JSON output
    // event, the -json form must not double count: the JSON line starts with '{').
    assert_eq!(
        parse_text(GO_V, Some(Runner::Go)),
        Some((
            Runner::Go,
            Counts {
                passed: 2,
                failed: 2,
                skipped: 1,
                ..Counts::default()
            }
        ))
    );
    assert_eq!(parse_text(GO_V, None).map(|r| r.0), Some(Runner::Go));
}

#[test]
fn go_test_json_events() {
    assert_eq!(
        parse_text(GO_JSON, None),
        Some((
            Runner::Go,
            Counts {
                passed: 1,
                failed: 0,
                skipped: 1,
                ..Counts::default()
            }
        ))
    );
}

#[test]
fn go_test_without_v_has_no_counts() {
    assert_eq!(parse_text("ok  \texample.com/add\t0.002s\n", None), None);
    assert_eq!(
        parse_text("ok  \texample.com/add\t0.002s [no tests to run]\n", None),
        Some((Runner::Go, Counts::default()))
    );
}

#[test]
fn nextest_summary() {
    assert_eq!(
        parse_text(NEXTEST, None),
        Some((
            Runner::Nextest,
            Counts {
                passed: 2,
                failed: 2,
                skipped: 1,
                ..Counts::default()
            }
        ))
    );
    assert_eq!(
        parse_text(
            "     Summary [   0.000s] 0 tests run: 0 passed, 0 skipped\n",
            None
        ),
        Some((Runner::Nextest, Counts::default()))
    );
    assert_eq!(
        parse_text(
            "     Summary [   0.012s] 3 tests run: 3 passed (1 slow), 0 skipped\n",
            None
        ),
        Some((
            Runner::Nextest,
            Counts {
                passed: 3,
                failed: 0,
                skipped: 0,
                ..Counts::default()
            }
        ))
    );
}

#[test]
fn argv_decides_the_runner_before_output() {
    let v = |a: &[&str]| a.iter().map(|s| s.to_string()).collect::<Vec<_>>();
    assert_eq!(
        runner_from_argv(&v(&["cargo", "nextest", "run"])),
        Some(Runner::Nextest)
    );
    assert_eq!(
        runner_from_argv(&v(&["cargo", "test", "-p", "x"])),
        Some(Runner::Cargo)
    );
    assert_eq!(
        runner_from_argv(&v(&["python3", "-m", "pytest"])),
        Some(Runner::Pytest)
    );
    assert_eq!(
        runner_from_argv(&v(&["/usr/bin/pytest", "-q"])),
        Some(Runner::Pytest)
    );
    assert_eq!(
        runner_from_argv(&v(&["go", "test", "-v", "./..."])),
        Some(Runner::Go)
    );
    assert_eq!(runner_from_argv(&v(&["make", "check"])), None);
    // A pytest run whose test prints a libtest line is still read as pytest.
    let out = "test result: ok. 99 passed; 0 failed; 0 ignored\n==== 1 failed in 0.1s ====\n";
    assert_eq!(
        parse_text(out, runner_from_argv(&v(&["pytest"]))),
        Some((
            Runner::Pytest,
            Counts {
                passed: 0,
                failed: 1,
                skipped: 0,
                ..Counts::default()
            }
        ))
    );
}
