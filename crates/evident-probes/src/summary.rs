//! Reading test counts from a runner's own closing lines, and named test results from
//! its machine report. Parsing is line by line and streaming, so output of any size is
//! read without being kept. Terminal colours and other escape sequences (`--color=yes`,
//! `--color always`) are removed from each line before it is read.
//!
//! cargo test: every `test result: ok. N passed; N failed; N ignored; ...; N filtered
//! out` line, summed (one per test binary and doc-test run). cargo nextest: the
//! `Summary [..] N tests run: N passed, N failed, N skipped` line (`timed out` counts
//! as failed; `3/5 tests run` leaves 2 not run). pytest: the last `N passed, N failed,
//! ... in 0.1s` line, every word of it. go test: `--- PASS/FAIL/SKIP:` lines of `-v`
//! (subtests included) or `pass/fail/skip` test events of `-json`; plain `go test`
//! prints no per-test lines, so its output has no counts. Python unittest: the
//! per-test lines of `-v`, which must agree with the closing `Ran N tests` and
//! `OK`/`FAILED (...)` lines ([`unittest`]). TAP: the test points of a TAP 13/14
//! stream, its plan and its subtests ([`tap`]). JUnit XML: the `<testcase>`
//! elements, read with an XML parser (a `<testsuite>` written inside a comment or a
//! CDATA section is text, never counted).
//!
//! The totals `passed`, `failed` and `skipped` mean the same for every runner:
//! `failed` includes errors, `passed` includes pytest's xpassed, and `skipped` counts
//! every collected test that did not run (ignored, filtered out, deselected, xfailed,
//! not run). The runner's own words are kept beside them.

use std::borrow::Cow;

use serde::Serialize;

use crate::spec::Runner;

pub mod tap;
pub mod unittest;

/// Test counts from one run. `passed`, `failed` and `skipped` are totals; the other
/// fields are the runner's own words, each already included in one of the totals.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize)]
pub struct Counts {
    /// Tests that passed.
    pub passed: u64,
    /// Tests that failed (errors included).
    pub failed: u64,
    /// Tests that did not run (ignored, deselected, xfailed included).
    pub skipped: u64,
    /// pytest / JUnit errors (in `failed`).
    pub errors: u64,
    /// pytest deselected (in `skipped`).
    pub deselected: u64,
    /// pytest xfailed (in `skipped`).
    pub xfailed: u64,
    /// pytest xpassed (in `passed`).
    pub xpassed: u64,
    /// cargo ignored (in `skipped`).
    pub ignored: u64,
    /// cargo filtered out (in `skipped`).
    pub filtered_out: u64,
    /// nextest tests not run after a cancellation (in `skipped`).
    pub not_run: u64,
    /// pytest's `N subtests passed` (pytest 9's built-in `subtests` fixture with `-v` or
    /// `-q`, or the pytest-subtests plugin): subtests are not tests, so in no total (a
    /// failing subtest is in pytest's own `failed`).
    #[serde(skip_serializing_if = "is_zero")]
    pub subtests_passed: u64,
    /// JUnit: results a `<testsuite>` counts in `tests` beyond its `<testcase>` elements —
    /// pytest's subtest reports, written into their test's element (in no total).
    #[serde(skip_serializing_if = "is_zero")]
    pub subtests: u64,
    /// unittest expected failures (in `skipped`, like pytest's xfailed).
    #[serde(skip_serializing_if = "is_zero")]
    pub expected_failures: u64,
    /// unittest unexpected successes (in `failed`: they fail unittest's run).
    #[serde(skip_serializing_if = "is_zero")]
    pub unexpected_successes: u64,
    /// TAP test points marked `# TODO` (in `skipped`: their result does not count).
    #[serde(skip_serializing_if = "is_zero")]
    pub todo: u64,
    /// TAP tests the plan announced that never reported (in `failed`).
    #[serde(skip_serializing_if = "is_zero")]
    pub missing: u64,
}

/// The counts added for pytest's subtests, unittest and TAP are left out of serialized
/// `Counts` (the audit's span records) when zero, so records of other runs are unchanged.
fn is_zero(n: &u64) -> bool {
    *n == 0
}

impl Counts {
    fn add(&mut self, o: Counts) {
        self.passed = self.passed.saturating_add(o.passed);
        self.failed = self.failed.saturating_add(o.failed);
        self.skipped = self.skipped.saturating_add(o.skipped);
        self.errors = self.errors.saturating_add(o.errors);
        self.deselected = self.deselected.saturating_add(o.deselected);
        self.xfailed = self.xfailed.saturating_add(o.xfailed);
        self.xpassed = self.xpassed.saturating_add(o.xpassed);
        self.ignored = self.ignored.saturating_add(o.ignored);
        self.filtered_out = self.filtered_out.saturating_add(o.filtered_out);
        self.not_run = self.not_run.saturating_add(o.not_run);
        self.subtests_passed = self.subtests_passed.saturating_add(o.subtests_passed);
        self.subtests = self.subtests.saturating_add(o.subtests);
        self.expected_failures = self.expected_failures.saturating_add(o.expected_failures);
        self.unexpected_successes = self
            .unexpected_successes
            .saturating_add(o.unexpected_successes);
        self.todo = self.todo.saturating_add(o.todo);
        self.missing = self.missing.saturating_add(o.missing);
    }

    /// The observed keys for this runner, in a stable order: the totals, then the
    /// runner's own words.
    pub fn keys(&self, runner: Runner) -> Vec<(&'static str, u64)> {
        let mut k = vec![
            ("passed", self.passed),
            ("failed", self.failed),
            ("skipped", self.skipped),
        ];
        match runner {
            Runner::Pytest => k.extend([
                ("errors", self.errors),
                ("deselected", self.deselected),
                ("xfailed", self.xfailed),
                ("xpassed", self.xpassed),
                ("subtests_passed", self.subtests_passed),
            ]),
            Runner::Cargo => k.extend([
                ("ignored", self.ignored),
                ("filtered_out", self.filtered_out),
            ]),
            Runner::Nextest => k.push(("not_run", self.not_run)),
            Runner::Junit => k.extend([
                ("errors", self.errors),
                ("xfailed", self.xfailed),
                ("subtests", self.subtests),
            ]),
            Runner::Go => {}
            Runner::Unittest => k.extend([
                ("errors", self.errors),
                ("expected_failures", self.expected_failures),
                ("unexpected_successes", self.unexpected_successes),
            ]),
            Runner::Tap => k.extend([("todo", self.todo), ("missing", self.missing)]),
        }
        k
    }
}

/// How one test case ended, as its runner's machine report says.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum Outcome {
    /// The case passed.
    Passed,
    /// The case failed (or errored).
    Failed,
    /// The case did not run.
    Skipped,
}

/// One test case of a machine report: JUnit `classname` and `name`, or go's package
/// and test.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Case {
    /// JUnit `classname` (go: the package).
    pub group: String,
    /// JUnit `name` (go: the test).
    pub name: String,
    /// How it ended.
    pub outcome: Outcome,
}

/// Most test cases kept from a `go test -json` stream.
const MAX_CASES: usize = 1_000_000;

/// Streaming state for every runner at once; the one to use is chosen at the end.
#[derive(Debug, Clone, Default)]
pub struct Parser {
    cargo: Option<Counts>,
    nextest: Option<Counts>,
    pytest: Option<Counts>,
    go: Option<Counts>,
    /// Test events of `go test -json` (a machine report: test output is wrapped in
    /// `output` events, so a test cannot print one).
    go_cases: Vec<Case>,
    go_cases_overflow: bool,
    unittest: unittest::Stream,
    tap: tap::Stream,
    /// Names of failing tests as the runners print them (at most [`MAX_FAILED_NAMES`]):
    /// shown to whoever reads a failed run, never used to decide.
    failed_names: Vec<String>,
}

/// What a run's output says of its tests, for the runner that was expected
/// ([`Parser::read`]).
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Reading {
    /// The runner's report was read.
    Counted(Runner, Counts),
    /// No report of the runner was found: the run's output shows no test ran.
    /// `expected` is the runner asked for (named by the contract or implied by argv);
    /// `None` when none was, and no summary of any runner read by default was found.
    NotFound {
        /// The runner whose report was looked for.
        expected: Option<Runner>,
    },
    /// The runner's report was found but does not hold together, so it is not read:
    /// unittest's per-test lines disagree with its closing lines, a TAP stream has no
    /// plan or its test points are out of order, or a report is on both output streams.
    Unreadable {
        /// The runner whose report it is.
        runner: Runner,
        /// What does not hold together.
        reason: String,
    },
}

impl Reading {
    /// The runner and its counts, when the report was read.
    pub fn counted(&self) -> Option<(Runner, Counts)> {
        match self {
            Reading::Counted(r, c) => Some((*r, *c)),
            _ => None,
        }
    }
}

/// Most failing test names kept from a run's output.
pub const MAX_FAILED_NAMES: usize = 20;
/// Longest failing test name kept, in bytes.
const MAX_NAME: usize = 200;

/// The test a runner's line reports as failed: cargo's `test a::b ... FAILED` (or the
/// `---- a::b stdout ----` header of its output), pytest's
/// `FAILED path::test - why`, nextest's `FAIL [ 0.1s] crate a::b`, go's `--- FAIL: TestX (0.0s)`,
/// unittest's `FAIL: test_x (pkg.mod.C.test_x)` / `ERROR: …` headers, TAP's
/// `not ok 3 - name` (not a `# TODO` or `# SKIP` one).
pub fn failed_test_name(t: &str) -> Option<&str> {
    let name = if let Some(rest) = t.strip_prefix("test ") {
        rest.strip_suffix(" ... FAILED")?
    } else if let Some(rest) = t.strip_prefix("---- ") {
        // cargo's header of a failed test's output, printed with --quiet too.
        rest.strip_suffix(" stdout ----")?
    } else if let Some(rest) = t.strip_prefix("FAILED ") {
        // Not unittest's closing `FAILED (failures=1)`.
        if rest.starts_with('(') {
            return None;
        }
        rest.split(" - ").next()?
    } else if let Some(rest) = t.strip_prefix("FAIL [") {
        // nextest 0.9.1xx puts a `(2/5)` counter before the name.
        let name = rest.split_once(']')?.1.trim_start();
        match name.strip_prefix('(').and_then(|r| r.split_once(") ")) {
            Some((counter, n)) if counter.bytes().all(|b| b.is_ascii_digit() || b == b'/') => n,
            _ => name,
        }
    } else if let Some(rest) = t.strip_prefix("--- FAIL: ") {
        rest.rsplit_once(" (").map_or(rest, |(n, _)| n)
    } else if let Some(rest) = t
        .strip_prefix("FAIL: ")
        .or_else(|| t.strip_prefix("ERROR: "))
    {
        unittest::header(rest)?;
        rest
    } else if t.starts_with("not ok") {
        tap::failed_name(t)?
    } else {
        return None;
    };
    let name = name.trim();
    (!name.is_empty() && name.len() <= MAX_NAME).then_some(name)
}

/// `line` without terminal escape sequences: CSI (`ESC [ … m`, colours and cursor
/// moves), OSC (`ESC ] … BEL` or `ESC \`, such as hyperlinks), the other string
/// sequences (DCS, SOS, PM, APC) and the short escapes (`ESC ( B`, `ESC =`). Borrowed
/// when the line has none. An unterminated sequence runs to the end of the line.
pub fn strip_ansi(line: &str) -> Cow<'_, str> {
    const CSI_8BIT: char = '\u{9b}';
    const ST_8BIT: char = '\u{9c}';
    if !line.contains(['\x1b', CSI_8BIT]) {
        return Cow::Borrowed(line);
    }
    let mut out = String::with_capacity(line.len());
    let mut chars = line.chars().peekable();
    // The body of a string sequence, to BEL, ST or `ESC \`.
    let skip_string = |chars: &mut std::iter::Peekable<std::str::Chars<'_>>| {
        while let Some(c) = chars.next() {
            match c {
                '\x07' | ST_8BIT => break,
                '\x1b' if chars.peek() == Some(&'\\') => {
                    chars.next();
                    break;
                }
                _ => {}
            }
        }
    };
    // Parameters and intermediates, to the final byte (0x40..=0x7e).
    let skip_csi = |chars: &mut std::iter::Peekable<std::str::Chars<'_>>| {
        for c in chars.by_ref() {
            if ('\x40'..='\x7e').contains(&c) {
                break;
            }
        }
    };
    while let Some(c) = chars.next() {
        match c {
            CSI_8BIT => skip_csi(&mut chars),
            '\x1b' => match chars.next() {
                Some('[') => skip_csi(&mut chars),
                Some(']' | 'P' | 'X' | '^' | '_') => skip_string(&mut chars),
                // nF: intermediates (0x20..=0x2f), then one final byte (`ESC ( B`).
                Some(c) if ('\x20'..='\x2f').contains(&c) => {
                    while chars.next_if(|c| ('\x20'..='\x2f').contains(c)).is_some() {}
                    chars.next();
                }
                // Fp, Fe, Fs: one byte (`ESC =`, `ESC M`), or the end of the line.
                _ => {}
            },
            _ => out.push(c),
        }
    }
    Cow::Owned(out)
}

impl Parser {
    /// Reads one line of output into every runner's state; the runner is chosen at the end.
    pub fn feed_line(&mut self, line: &str) {
        let line = strip_ansi(line);
        // TAP needs the indentation (subtests); the other formats are read trimmed.
        self.tap.feed(line.trim_end());
        let t = line.trim();
        if t.is_empty() {
            return;
        }
        if let Some(name) = failed_test_name(t)
            && self.failed_names.len() < MAX_FAILED_NAMES
            && !self.failed_names.iter().any(|n| n == name)
        {
            self.failed_names.push(name.to_string());
        }
        if let Some(c) = cargo_line(t) {
            self.cargo.get_or_insert_default().add(c);
        }
        if let Some(c) = nextest_line(t) {
            // nextest prints one Summary line; the last one wins.
            self.nextest = Some(c);
        }
        if let Some(c) = pytest_line(t) {
            self.pytest = Some(c);
        }
        if let Some((c, case)) = go_line(t) {
            self.go.get_or_insert_default().add(c);
            if let Some(case) = case {
                if self.go_cases.len() < MAX_CASES {
                    self.go_cases.push(case);
                } else {
                    self.go_cases_overflow = true;
                }
            }
        }
        self.unittest.feed(t);
    }

    /// Combine with the parser of the other output stream. Test cases are not merged:
    /// only stdout carries go's machine report. A unittest or TAP report found on both
    /// streams is unreadable (one of them was printed by a test).
    pub fn merge(&mut self, other: &Parser) {
        fn sum(a: &mut Option<Counts>, b: Option<Counts>) {
            if let Some(b) = b {
                a.get_or_insert_default().add(b);
            }
        }
        for name in &other.failed_names {
            if self.failed_names.len() < MAX_FAILED_NAMES && !self.failed_names.contains(name) {
                self.failed_names.push(name.clone());
            }
        }
        sum(&mut self.cargo, other.cargo);
        sum(&mut self.go, other.go);
        if other.nextest.is_some() {
            self.nextest = other.nextest;
        }
        if self.pytest.is_none() {
            self.pytest = other.pytest;
        }
        self.unittest.merge(&other.unittest);
        self.tap.merge(&other.tap);
    }

    /// The failing tests the output named, in the order seen.
    pub fn failed_names(&self) -> &[String] {
        &self.failed_names
    }

    /// The test events of `go test -json` seen on this stream, or an error when there
    /// were more than can be kept.
    pub fn go_cases(&self) -> Result<&[Case], TooManyCases> {
        if self.go_cases_overflow {
            return Err(TooManyCases);
        }
        Ok(&self.go_cases)
    }

    /// The counts for `runner`, or for the first runner whose summary was seen (nextest,
    /// cargo, pytest, go) when none is named. `None` when nothing was read: see
    /// [`Parser::read`] for which runner was expected and why.
    pub fn result(&self, runner: Option<Runner>) -> Option<(Runner, Counts)> {
        self.read(runner).counted()
    }

    /// What the output says for `runner` (named by the contract or implied by argv):
    /// its counts, that no report of it was found, or that its report does not hold
    /// together. With no runner, the first of nextest, cargo, pytest and go whose
    /// summary was seen; unittest and TAP are read only when named or implied by argv
    /// (`ok 1` and `Ran 1 test` are easy lines for a test, or another tool, to print).
    pub fn read(&self, runner: Option<Runner>) -> Reading {
        let get = |r: Runner| -> Option<Result<Counts, String>> {
            match r {
                Runner::Cargo => self.cargo.map(Ok),
                Runner::Nextest => self.nextest.map(Ok),
                Runner::Pytest => self.pytest.map(Ok),
                Runner::Go => self.go.map(Ok),
                Runner::Junit => None,
                Runner::Unittest => self.unittest.reading(),
                Runner::Tap => self.tap.reading(),
            }
        };
        match runner {
            Some(r) => match get(r) {
                Some(Ok(c)) => Reading::Counted(r, c),
                Some(Err(reason)) => Reading::Unreadable { runner: r, reason },
                None => Reading::NotFound { expected: Some(r) },
            },
            None => [Runner::Nextest, Runner::Cargo, Runner::Pytest, Runner::Go]
                .into_iter()
                .find_map(|r| match get(r) {
                    Some(Ok(c)) => Some(Reading::Counted(r, c)),
                    _ => None,
                })
                .unwrap_or(Reading::NotFound { expected: None }),
        }
    }

    /// The runners whose report appears in the output, read or not (for telling a
    /// reader what was printed instead of the expected runner's report).
    pub fn seen(&self) -> Vec<Runner> {
        [
            (Runner::Nextest, self.nextest.is_some()),
            (Runner::Cargo, self.cargo.is_some()),
            (Runner::Pytest, self.pytest.is_some()),
            (Runner::Go, self.go.is_some()),
            (Runner::Unittest, self.unittest.reading().is_some()),
            (Runner::Tap, self.tap.reading().is_some()),
        ]
        .into_iter()
        .filter_map(|(r, seen)| seen.then_some(r))
        .collect()
    }
}

/// The reading of two streams: either one, or an error when both have one.
pub(crate) fn both(
    a: Option<Result<Counts, String>>,
    b: Option<Result<Counts, String>>,
    what: &str,
) -> Option<Result<Counts, String>> {
    match (a, b) {
        (Some(Err(e)), _) | (_, Some(Err(e))) => Some(Err(e)),
        (Some(Ok(_)), Some(Ok(_))) => Some(Err(format!(
            "a {what} on both stdout and stderr: one of them was printed by a test"
        ))),
        (a, b) => a.or(b),
    }
}

/// Parse a whole recorded output at once (for tests and offline use).
pub fn parse_text(text: &str, runner: Option<Runner>) -> Option<(Runner, Counts)> {
    read_text(text, runner).counted()
}

/// [`Parser::read`] of a whole recorded output.
pub fn read_text(text: &str, runner: Option<Runner>) -> Reading {
    let mut p = Parser::default();
    for line in text.lines() {
        p.feed_line(line);
    }
    p.read(runner)
}

/// The runner implied by the argv, so a test that prints another runner's summary line
/// cannot change which format is read. unittest: `python -m unittest`. TAP: `tape`,
/// `tap` (node-tap) and `node --test`, run directly, through `npx`-style launchers or
/// as `node path/to/tape`, unless a reporter other than TAP is chosen. `npm test`
/// names no runner.
pub fn runner_from_argv(argv: &[String]) -> Option<Runner> {
    let base = |s: &String| s.rsplit('/').next().unwrap_or(s).to_string();
    let words: Vec<String> = argv.iter().map(base).collect();
    let has = |w: &str| words.iter().any(|x| x == w);
    if has("nextest") || has("cargo-nextest") {
        Some(Runner::Nextest)
    } else if python_module(&words) == Some("unittest") {
        Some(Runner::Unittest)
    } else if words.iter().any(|w| is_pytest_word(w)) {
        Some(Runner::Pytest)
    } else if words.first().is_some_and(|w| w == "cargo") && has("test") {
        Some(Runner::Cargo)
    } else if words.first().is_some_and(|w| w == "go") && has("test") {
        Some(Runner::Go)
    } else if tap_program(argv) {
        Some(Runner::Tap)
    } else {
        None
    }
}

/// The module of `python -m MODULE` (or `-mMODULE`), when argv[0] is a Python.
fn python_module(words: &[String]) -> Option<&str> {
    let (prog, args) = words.split_first()?;
    let python = prog
        .strip_prefix("python")
        .is_some_and(|v| v.is_empty() || v.bytes().all(|b| b.is_ascii_digit() || b == b'.'));
    if !python {
        return None;
    }
    let mut it = args.iter();
    while let Some(a) = it.next() {
        if a == "-m" {
            return it.next().map(String::as_str);
        }
        if let Some(m) = a.strip_prefix("-m") {
            return Some(m);
        }
        // Options before -m; anything else is a script, and no module runs.
        if !a.starts_with('-') || a == "-c" || a == "-" {
            return None;
        }
        // `-X dev`, `-W error`: the value is the next word.
        if a == "-X" || a == "-W" {
            it.next();
        }
    }
    None
}

/// `tape …`, `tap …` (node-tap, reporter TAP or not chosen) or `node --test …` (reporter
/// TAP or not chosen), run directly, through `npx`, `pnpx`, `bunx`, `pnpm exec`,
/// `yarn`, `npm exec`, or as `node …/tape`.
fn tap_program(argv: &[String]) -> bool {
    let base = |s: &str| s.rsplit('/').next().unwrap_or(s).to_string();
    let mut words: &[String] = argv;
    // Launchers: the program is their first word that is not an option.
    let launcher = |w: &[String]| -> Option<usize> {
        let first = base(w.first()?);
        let skip = match first.as_str() {
            "npx" | "pnpx" | "bunx" => 1,
            "pnpm" | "npm" if w.get(1).is_some_and(|a| a == "exec") => 2,
            "yarn" if w.get(1).is_some_and(|a| a == "exec" || a == "run") => 2,
            "yarn" => 1,
            _ => return None,
        };
        let rest = w.get(skip..)?;
        rest.iter()
            .position(|a| !a.starts_with('-'))
            .map(|p| skip + p)
    };
    if let Some(i) = launcher(words) {
        words = &words[i..];
    }
    let Some((prog, args)) = words.split_first() else {
        return false;
    };
    let prog = base(prog);
    // `node path/to/tape x.js`: the script is the program.
    let (prog, args) = if prog == "node" || prog == "nodejs" {
        // node's options that take the next word as their value.
        const VALUED: [&str; 12] = [
            "-r",
            "--require",
            "--import",
            "--loader",
            "--experimental-loader",
            "-C",
            "--conditions",
            "--test-reporter",
            "--test-reporter-destination",
            "--test-name-pattern",
            "--test-skip-pattern",
            "--test-concurrency",
        ];
        let mut script = None;
        let mut i = 0;
        while let Some(a) = args.get(i) {
            if a == "--" {
                script = Some(i + 1).filter(|&j| j < args.len());
                break;
            }
            if !a.starts_with('-') {
                script = Some(i);
                break;
            }
            i += if VALUED.contains(&a.as_str()) { 2 } else { 1 };
        }
        let options = &args[..script.unwrap_or(args.len()).min(args.len())];
        if options.iter().any(|a| a == "--test") {
            return reporter_is_tap(options, "--test-reporter", None);
        }
        match script {
            Some(i) => (base(&args[i]), &args[i + 1..]),
            None => return false,
        }
    } else {
        (prog, args)
    };
    match prog.as_str() {
        "tape" => true,
        "tap" => reporter_is_tap(args, "--reporter", Some("-R")),
        _ => false,
    }
}

/// No reporter chosen, or one of the chosen reporters is `tap`.
fn reporter_is_tap(args: &[String], long: &str, short: Option<&str>) -> bool {
    let mut chosen = Vec::new();
    let mut it = args.iter();
    while let Some(a) = it.next() {
        if a == long || short.is_some_and(|s| a == s) {
            chosen.extend(it.next().cloned());
        } else if let Some(v) = a.strip_prefix(long).and_then(|r| r.strip_prefix('=')) {
            chosen.push(v.to_string());
        } else if let Some(v) = short
            .and_then(|s| a.strip_prefix(s))
            .filter(|v| !v.is_empty())
        {
            chosen.push(v.trim_start_matches('=').to_string());
        }
    }
    chosen.is_empty() || chosen.iter().any(|r| r == "tap")
}

/// `pytest`, `py.test` or a `pytest-3` style launcher (a basename).
pub fn is_pytest_word(w: &str) -> bool {
    w == "pytest" || w == "py.test" || w.starts_with("pytest-")
}

/// `N word` → (N, word).
fn count_word(part: &str) -> Option<(u64, &str)> {
    let part = part.trim();
    let (n, rest) = part.split_once(' ')?;
    let n: u64 = n.parse().ok()?;
    Some((n, rest.trim()))
}

fn cargo_line(t: &str) -> Option<Counts> {
    let rest = t.strip_prefix("test result: ")?;
    let (_, counts) = rest.split_once(". ")?;
    let mut c = Counts::default();
    let mut seen = false;
    for part in counts.split(';') {
        let Some((n, word)) = count_word(part) else {
            continue;
        };
        match word {
            "passed" => {
                c.passed = n;
                seen = true;
            }
            "failed" => c.failed = n,
            "ignored" => c.ignored = n,
            "filtered out" => c.filtered_out = n,
            _ => {}
        }
    }
    c.skipped = c.ignored.saturating_add(c.filtered_out);
    seen.then_some(c)
}

fn nextest_line(t: &str) -> Option<Counts> {
    let rest = t.strip_prefix("Summary [")?;
    let (_, after) = rest.split_once(']')?;
    let (head, list) = after.split_once("run:")?;
    let mut c = Counts::default();
    // "5/10 tests run": a cancelled run; the other 5 did not run.
    if let Some((ran, total)) = head
        .split_whitespace()
        .next()
        .and_then(|w| w.split_once('/'))
        && let (Ok(ran), Ok(total)) = (ran.parse::<u64>(), total.parse::<u64>())
    {
        c.not_run = total.saturating_sub(ran);
    }
    let mut seen = false;
    for part in list.split(',') {
        let Some((n, word)) = count_word(part) else {
            continue;
        };
        // "3 passed (1 slow)", "1 timed out", "2 skipped".
        let word = word.split(" (").next().unwrap_or(word);
        match word {
            "passed" => {
                c.passed = n;
                seen = true;
            }
            "failed" | "timed out" | "exec failed" => c.failed = c.failed.saturating_add(n),
            "skipped" => c.skipped = n,
            _ => {}
        }
    }
    c.skipped = c.skipped.saturating_add(c.not_run);
    seen.then_some(c)
}

fn pytest_line(t: &str) -> Option<Counts> {
    let t = t.trim_matches(|ch| ch == '=' || ch == ' ');
    let (body, after) = t.rsplit_once(" in ")?;
    // "0.12s", "1.00s (0:00:01)"
    let secs = after.split_whitespace().next()?;
    let secs = secs.strip_suffix('s')?;
    secs.parse::<f64>().ok()?;
    let mut c = Counts::default();
    // "no tests ran" alone, or "no tests ran, 3 deselected" style tails.
    let body = match body.strip_prefix("no tests ran") {
        Some("") => return Some(c),
        Some(rest) => rest.strip_prefix(", ")?,
        None => body,
    };
    for part in body.split(", ") {
        let (n, word) = count_word(part)?;
        match word {
            "passed" => c.passed = c.passed.saturating_add(n),
            "xpassed" => c.xpassed = c.xpassed.saturating_add(n),
            "failed" => c.failed = c.failed.saturating_add(n),
            "error" | "errors" => c.errors = c.errors.saturating_add(n),
            "skipped" => c.skipped = c.skipped.saturating_add(n),
            "xfailed" => c.xfailed = c.xfailed.saturating_add(n),
            "deselected" => c.deselected = c.deselected.saturating_add(n),
            // Subtests (pytest 9, pytest-subtests) are not tests: pytest counts a failing
            // one as `failed` itself; `subtests failed` is registered by the plugin too.
            "subtests passed" | "subtests xpassed" => {
                c.subtests_passed = c.subtests_passed.saturating_add(n)
            }
            "subtests failed" => c.failed = c.failed.saturating_add(n),
            "subtests skipped" | "subtests xfailed" => {}
            "warning" | "warnings" | "rerun" | "reruns" => {}
            _ => return None,
        }
    }
    c.passed = c.passed.saturating_add(c.xpassed);
    c.failed = c.failed.saturating_add(c.errors);
    c.skipped = c
        .skipped
        .saturating_add(c.xfailed)
        .saturating_add(c.deselected);
    Some(c)
}

fn go_line(t: &str) -> Option<(Counts, Option<Case>)> {
    let mut c = Counts::default();
    if t.starts_with('{') && t.contains("\"Action\"") {
        let v: serde_json::Value = serde_json::from_str(t).ok()?;
        let test = v.get("Test")?.as_str()?;
        let outcome = match v.get("Action")?.as_str()? {
            "pass" => {
                c.passed = 1;
                Outcome::Passed
            }
            "fail" => {
                c.failed = 1;
                Outcome::Failed
            }
            "skip" => {
                c.skipped = 1;
                Outcome::Skipped
            }
            _ => return None,
        };
        let group = v
            .get("Package")
            .and_then(|p| p.as_str())
            .unwrap_or("")
            .to_string();
        return Some((
            c,
            Some(Case {
                group,
                name: test.to_string(),
                outcome,
            }),
        ));
    }
    if t.starts_with("--- PASS: ") {
        c.passed = 1;
    } else if t.starts_with("--- FAIL: ") {
        c.failed = 1;
    } else if t.starts_with("--- SKIP: ") {
        c.skipped = 1;
    } else if t.starts_with("ok ")
        && (t.ends_with("[no tests to run]") || t.ends_with("[no test files]"))
        || t.starts_with("? ") && t.ends_with("[no test files]")
    {
        // A package that ran nothing: go was seen, with zero counts.
    } else {
        return None;
    }
    Some((c, None))
}

/// The deepest element nesting a JUnit report may have. roxmltree has no limit and
/// recurses once per open element: 10,000 nested `<a>` (30 KB, under the 16 MiB file
/// cap) overflowed the stack and aborted the process. This depth parses in a 2 MiB
/// thread (a tokio worker's stack) with room to spare.
pub const MAX_JUNIT_DEPTH: usize = 256;

/// The deepest element nesting roxmltree reaches on `xml`, never less: it counts the
/// way roxmltree's tokenizer recurses (comments, CDATA sections and processing
/// instructions end at their first terminator and hold no elements; an attribute value
/// holds no `<`). Where it disagrees, roxmltree has already refused the text.
fn element_depth(xml: &str) -> usize {
    let b = xml.as_bytes();
    let past = |from: usize, end: &[u8]| {
        b.get(from..)
            .and_then(|rest| rest.windows(end.len()).position(|w| w == end))
            .map_or(b.len(), |p| from + p + end.len())
    };
    let (mut i, mut depth, mut max) = (0, 0usize, 0);
    while let Some(p) = b[i..].iter().position(|&c| c == b'<').map(|p| i + p) {
        let rest = &b[p..];
        i = if rest.starts_with(b"<!--") {
            past(p + 4, b"-->")
        } else if rest.starts_with(b"<![CDATA[") {
            past(p + 9, b"]]>")
        } else if rest.starts_with(b"<?") {
            past(p + 2, b"?>")
        } else if rest.starts_with(b"</") {
            depth = depth.saturating_sub(1);
            p + 2
        } else if rest.starts_with(b"<!") {
            p + 2
        } else {
            depth += 1;
            max = max.max(depth);
            // The start tag, to its `>` outside quotes; `/>` closes it at once. A `<`
            // ends it too (roxmltree refuses that), and is scanned as markup.
            let mut quote = None;
            let mut j = p + 1;
            while let Some(&c) = b.get(j) {
                match (c, quote) {
                    (b'<', _) => break,
                    (b'"' | b'\'', None) => quote = Some(c),
                    (c, Some(q)) if c == q => quote = None,
                    (b'>', None) => {
                        if b[j - 1] == b'/' {
                            depth -= 1;
                        }
                        j += 1;
                        break;
                    }
                    _ => {}
                }
                j += 1;
            }
            j
        };
    }
    max
}

/// A JUnit XML report: its counts and its test cases.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Report {
    /// The totals of the report's test cases.
    pub counts: Counts,
    /// Every test case, so `tests_passed` can name tests one by one.
    pub cases: Vec<Case>,
}

/// More `go test -json` test events than a stream keeps ([`MAX_CASES`]).
#[derive(Debug, Clone, Copy, PartialEq, Eq, thiserror::Error)]
#[error("more than {MAX_CASES} test events")]
pub struct TooManyCases;

/// Why a JUnit report is refused.
#[derive(Debug, thiserror::Error)]
pub enum JunitError {
    /// Elements nested deeper than [`MAX_JUNIT_DEPTH`].
    #[error("elements nested deeper than {MAX_JUNIT_DEPTH} (a JUnit report needs a few)")]
    TooDeep,
    /// The text is not XML (or declares a document type).
    #[error("not XML")]
    Xml(#[from] roxmltree::Error),
    /// A `tests`/`errors`/`failures`/`skipped` attribute that is not a count.
    #[error("attribute {attribute}={value:?} of <{element}> is not a count")]
    NotACount {
        /// The attribute's name.
        attribute: String,
        /// Its value as written.
        value: String,
        /// `testsuite` or `testsuites`.
        element: &'static str,
    },
    /// A `<testsuite>` with test cases but no `tests` count.
    #[error("<testsuite> has no tests attribute")]
    NoTestsAttribute,
    /// Neither a `<testsuite>` nor a `<testsuites>` element.
    #[error("no <testsuite> or <testsuites> element")]
    NoSuite,
}

/// Read a JUnit XML report with an XML parser: comments, CDATA sections and text
/// (captured test output) are never elements. Counts come from the `<testcase>`
/// elements (a `<failure>` child is a failure, `<error>` an error, `<skipped>` a skip,
/// none a pass); a report with no `<testcase>` at all is counted from its
/// `<testsuite>` attributes (or `<testsuites>` when it has no `<testsuite>`).
///
/// pytest's own words, as its junitxml plugin writes them (8.4 and 9.2): an expected
/// failure is `<skipped type="pytest.xfail">` (`xfailed`, in `skipped`); a strict
/// XPASS is a `<failure message="[XPASS(strict)] …">` (failed, as pytest's summary
/// counts it); a non-strict XPASS is a plain passing `<testcase/>`, so no reader of the
/// file can tell it (`xpassed` stays 0; it is in `passed`). A subtest's report goes into
/// its test's element (a failing subtest makes the test's case failed) and is counted
/// in the suite's `tests` only: `subtests` is the difference, per suite with cases.
/// A document type declaration is refused (no entity expansion), and so is one nested
/// deeper than [`MAX_JUNIT_DEPTH`] elements.
pub fn parse_junit(xml: &str) -> Result<Report, JunitError> {
    if element_depth(xml) > MAX_JUNIT_DEPTH {
        return Err(JunitError::TooDeep);
    }
    let doc = roxmltree::Document::parse(xml)?;
    let mut report = Report::default();
    let mut suites: Vec<Counts> = Vec::new();
    let mut totals: Option<Counts> = None;
    let mut subtests = 0u64;
    for node in doc.descendants().filter(|n| n.is_element()) {
        match node.tag_name().name() {
            "testcase" => {
                let child = |n: &str| {
                    node.children()
                        .any(|c| c.is_element() && c.tag_name().name() == n)
                };
                let mut c = Counts::default();
                let outcome = if child("error") {
                    c.failed = 1;
                    c.errors = 1;
                    Outcome::Failed
                } else if child("failure") {
                    c.failed = 1;
                    Outcome::Failed
                } else if let Some(skip) = node
                    .children()
                    .find(|c| c.is_element() && c.tag_name().name() == "skipped")
                {
                    c.skipped = 1;
                    // pytest writes an expected failure as a skip of its own type.
                    if skip.attribute("type") == Some("pytest.xfail") {
                        c.xfailed = 1;
                    }
                    Outcome::Skipped
                } else {
                    c.passed = 1;
                    Outcome::Passed
                };
                report.counts.add(c);
                report.cases.push(Case {
                    group: node.attribute("classname").unwrap_or("").to_string(),
                    name: node.attribute("name").unwrap_or("").to_string(),
                    outcome,
                });
            }
            name @ ("testsuite" | "testsuites") => {
                let get = |k: &str| -> Result<u64, JunitError> {
                    match node.attribute(k) {
                        None => Ok(0),
                        Some(v) => v.trim().parse::<u64>().map_err(|_| JunitError::NotACount {
                            attribute: k.to_string(),
                            value: v.to_string(),
                            element: if name == "testsuite" {
                                "testsuite"
                            } else {
                                "testsuites"
                            },
                        }),
                    }
                };
                let tests = get("tests")?;
                let errors = get("errors")?;
                let failed = get("failures")?.saturating_add(errors);
                let skipped = get("skipped")?.saturating_add(get("disabled")?);
                let c = Counts {
                    passed: tests.saturating_sub(failed).saturating_sub(skipped),
                    failed,
                    skipped,
                    errors,
                    ..Counts::default()
                };
                let has_tests = node.attribute("tests").is_some();
                if name == "testsuite" {
                    if !has_tests {
                        return Err(JunitError::NoTestsAttribute);
                    }
                    // pytest counts every subtest report in `tests` but writes it into
                    // its test's element: the difference is the subtests.
                    let cases = node
                        .children()
                        .filter(|c| c.is_element() && c.tag_name().name() == "testcase")
                        .count() as u64;
                    if cases > 0 {
                        subtests = subtests.saturating_add(tests.saturating_sub(cases));
                    }
                    suites.push(c);
                } else if totals.is_none() && has_tests {
                    totals = Some(c);
                }
            }
            _ => {}
        }
    }
    if !report.cases.is_empty() {
        report.counts.subtests = subtests;
        return Ok(report);
    }
    if !suites.is_empty() {
        for s in suites {
            report.counts.add(s);
        }
        return Ok(report);
    }
    match totals {
        Some(t) => {
            report.counts = t;
            Ok(report)
        }
        None => Err(JunitError::NoSuite),
    }
}

/// What a machine report says of one named test.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum Named {
    /// At least one case matched and every one passed.
    Passed,
    /// A matching case failed.
    Failed,
    /// No matching case failed and one was skipped.
    Skipped,
    /// No test case of that name is in the report.
    Absent,
}

impl Named {
    /// The status as observations write it (`passed`, `absent`, …).
    pub fn name(self) -> &'static str {
        match self {
            Named::Passed => "passed",
            Named::Failed => "failed",
            Named::Skipped => "skipped",
            Named::Absent => "absent",
        }
    }
}

/// pytest's JUnit names for a node id, as its junitxml plugin derives them
/// (`mangle_test_address`): `tests/test_zip.py::TestZip::test_a[1]` →
/// classname `tests.test_zip.TestZip`, name `test_a[1]`.
pub fn pytest_junit_name(nodeid: &str) -> Option<(String, String)> {
    let (path, bracket, params) = match nodeid.split_once('[') {
        Some((p, rest)) => (p, "[", rest),
        None => (nodeid, "", ""),
    };
    let mut names: Vec<String> = path.split("::").map(String::from).collect();
    if names.len() < 2 {
        return None;
    }
    let file = names[0].replace('/', ".");
    names[0] = file.strip_suffix(".py").map(String::from).unwrap_or(file);
    let last = names.pop()?;
    Some((names.join("."), format!("{last}{bracket}{params}")))
}

/// The status of test `wanted` in `cases`. With `pytest`, `wanted` is a node id
/// (`tests/test_zip.py::test_rejects_letters`) matched through [`pytest_junit_name`];
/// otherwise it matches a case whose `name` is `wanted` or whose `group::name` is.
/// A test passed only when at least one case matches and every matching case passed,
/// so a second case of the same name cannot cover a failure.
pub fn named_status(cases: &[Case], wanted: &str, pytest: bool) -> Named {
    let pytest_names = if pytest {
        pytest_junit_name(wanted)
    } else {
        None
    };
    let matches = |c: &&Case| match &pytest_names {
        Some((group, name)) => &c.group == group && &c.name == name,
        None if pytest => false,
        None => {
            c.name == wanted
                || wanted
                    .strip_prefix(c.group.as_str())
                    .and_then(|r| r.strip_prefix("::"))
                    .is_some_and(|r| r == c.name)
        }
    };
    let mut status = Named::Absent;
    for c in cases.iter().filter(matches) {
        status = match (status, c.outcome) {
            (Named::Failed, _) | (_, Outcome::Failed) => Named::Failed,
            (Named::Skipped, _) | (_, Outcome::Skipped) => Named::Skipped,
            _ => Named::Passed,
        };
    }
    status
}

#[cfg(test)]
mod failed_names {
    use super::{Parser, failed_test_name};

    #[test]
    fn each_runner_names_its_failing_tests() {
        for (line, name) in [
            ("test tests::adds ... FAILED", Some("tests::adds")),
            ("---- tests::adds stdout ----", Some("tests::adds")),
            (
                "FAILED tests/test_a.py::test_b - assert 1 == 2",
                Some("tests/test_a.py::test_b"),
            ),
            (
                "FAILED tests/test_a.py::test_b",
                Some("tests/test_a.py::test_b"),
            ),
            (
                "FAIL [   0.004s] billing tests::adds",
                Some("billing tests::adds"),
            ),
            ("--- FAIL: TestAdd (0.00s)", Some("TestAdd")),
            ("test tests::adds ... ok", None),
            ("FAILED", None),
            ("test result: FAILED. 1 passed; 1 failed", None),
        ] {
            assert_eq!(failed_test_name(line), name, "{line}");
        }
    }

    #[test]
    fn names_are_kept_once_and_capped() {
        let mut p = Parser::default();
        p.feed_line("test a ... FAILED");
        p.feed_line("---- a stdout ----");
        for i in 0..100 {
            p.feed_line(&format!("test t{i} ... FAILED"));
        }
        assert_eq!(p.failed_names().len(), super::MAX_FAILED_NAMES);
        assert_eq!(p.failed_names()[0], "a");
        assert_eq!(p.failed_names()[1], "t0");
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn c(passed: u64, failed: u64, skipped: u64) -> Counts {
        Counts {
            passed,
            failed,
            skipped,
            ..Counts::default()
        }
    }

    proptest::proptest! {
        #[test]
        fn parsers_never_panic(text in "\\PC{0,200}") {
            let _ = parse_text(&text, None);
            let _ = read_text(&text, Some(Runner::Unittest));
            let _ = read_text(&text, Some(Runner::Tap));
            let _ = strip_ansi(&text);
            let _ = parse_junit(&text);
            let _ = pytest_junit_name(&text);
            let _ = named_status(&[], &text, true);
        }

        /// Lines made of TAP's and unittest's pieces, at any indentation, in any order.
        #[test]
        fn tap_and_unittest_like_input_never_panics(
            lines in proptest::collection::vec((0usize..14, proptest::prop_oneof![
                proptest::strategy::Just("ok".to_string()),
                proptest::strategy::Just("not ok 1 - a # TODO".to_string()),
                "(not )?ok [0-9]{1,3}( - [a-z#\\\\ ]{0,6})?",
                "1\\.\\.[0-9]{1,2}",
                proptest::strategy::Just("---".to_string()),
                proptest::strategy::Just("...".to_string()),
                proptest::strategy::Just("Bail out!".to_string()),
                proptest::strategy::Just("TAP version 14".to_string()),
                "# (tests|fail|cancelled) [0-9]",
                "test_[a-z] \\(m\\.C\\.test_[a-z]\\)( \\(i=1\\))?( \\.\\.\\. (ok|FAIL|ERROR|skipped 'x'|expected failure|unexpected success))?",
                "Ran [0-9] tests? in 0\\.0s",
                "(OK|FAILED|NO TESTS RAN)( \\((failures|errors|skipped)=[0-9]\\))?",
                "\\x1b\\[[0-9;]{0,4}[a-zA-Z]?",
            ]), 0..40),
        ) {
            let text: String = lines
                .iter()
                .map(|(indent, l)| format!("{}{l}\n", " ".repeat(*indent)))
                .collect();
            for r in [Runner::Tap, Runner::Unittest] {
                if let Reading::Counted(_, c) = read_text(&text, Some(r)) {
                    let _ = c.keys(r);
                }
            }
        }

        #[test]
        fn junit_like_input_never_panics(
            attrs in proptest::collection::vec(("[a-z]{1,8}", "[0-9a-z\"' ]{0,6}"), 0..5),
            tail in "[<>/=\"' a-z!\\[\\]-]{0,20}",
        ) {
            let mut xml = String::from("<testsuite");
            for (k, v) in attrs {
                xml.push_str(&format!(" {k}=\"{v}\""));
            }
            xml.push_str(&tail);
            let _ = parse_junit(&xml);
        }
    }

    #[test]
    fn cargo_sums_binaries() {
        let out = "running 2 tests\ntest a ... ok\ntest result: ok. 2 passed; 0 failed; 1 ignored; 0 measured; 3 filtered out; finished in 0.00s\n\n   Doc-tests x\ntest result: FAILED. 1 passed; 2 failed; 0 ignored; 0 measured; 0 filtered out; finished in 0.01s\n";
        let (r, got) = parse_text(out, None).unwrap();
        assert_eq!(r, Runner::Cargo);
        assert_eq!(
            got,
            Counts {
                ignored: 1,
                filtered_out: 3,
                ..c(3, 2, 4)
            }
        );
    }

    #[test]
    fn nextest_cancelled_run_counts_not_run() {
        let out = "     Summary [   0.52s] 5/10 tests run: 4 passed, 1 failed, 2 skipped\n";
        let (_, got) = parse_text(out, None).unwrap();
        assert_eq!(
            got,
            Counts {
                not_run: 5,
                ..c(4, 1, 7)
            }
        );
    }

    #[test]
    fn pytest_every_word() {
        let out =
            "collected 4 items\n\n==== 2 passed, 1 failed, 1 skipped, 2 warnings in 0.12s ====\n";
        assert_eq!(parse_text(out, None), Some((Runner::Pytest, c(2, 1, 1))));
        assert_eq!(
            parse_text("===== no tests ran in 0.01s =====", None),
            Some((Runner::Pytest, Counts::default()))
        );
        assert_eq!(
            parse_text("1 error in 0.05s", None).map(|r| r.1),
            Some(Counts {
                errors: 1,
                ..c(0, 1, 0)
            })
        );
        // Deselected and xfailed tests did not run: they count as skipped.
        let line = "== 3 passed, 1 failed, 2 errors, 1 skipped, 4 deselected, 1 xfailed, 2 xpassed in 0.3s ==";
        assert_eq!(
            parse_text(line, None).map(|r| r.1),
            Some(Counts {
                errors: 2,
                deselected: 4,
                xfailed: 1,
                xpassed: 2,
                ..c(5, 3, 6)
            })
        );
        assert_eq!(
            parse_text("==== no tests ran, 3 deselected in 0.01s ====", None).map(|r| r.1),
            Some(Counts {
                deselected: 3,
                ..c(0, 0, 3)
            })
        );
        assert_eq!(parse_text("we met 2 friends in 3s", None), None);
    }

    #[test]
    fn junit_suites_and_cases() {
        let xml = r#"<?xml version="1.0"?><testsuites tests="9"><testsuite name="a" tests="3" failures="1" errors="0" skipped="1"/><testsuite name='b' tests='2'/></testsuites>"#;
        assert_eq!(parse_junit(xml).unwrap().counts, c(3, 1, 1));
        assert!(parse_junit("<testsuite tests=\"x\"/>").is_err());
        assert!(parse_junit("<html/>").is_err());
        assert!(parse_junit("<testsuite tests=\"1\">").is_err(), "unclosed");
        let xml = r#"<testsuites><testsuite name="pytest" tests="4"><testcase classname="tests.test_zip" name="test_ok"/><testcase classname="tests.test_zip" name="test_bad"><failure message="x"/></testcase><testcase classname="tests.test_zip" name="test_err"><error message="e"/></testcase><testcase classname="t" name="s"><skipped/></testcase></testsuite></testsuites>"#;
        let r = parse_junit(xml).unwrap();
        assert_eq!(
            r.counts,
            Counts {
                errors: 1,
                ..c(1, 2, 1)
            }
        );
        assert_eq!(r.cases.len(), 4);
    }

    /// The forged suite: captured output in CDATA or a comment is text, not elements.
    #[test]
    fn junit_cdata_and_comments_are_not_counted() {
        let forged: String = (0..40)
            .map(|i| format!("<testcase classname=\"f\" name=\"t{i}\"/>"))
            .collect();
        let xml = format!(
            r#"<testsuites><testsuite name="pytest" tests="1" failures="1"><testcase classname="tests.test_a" name="test_x"><failure message="no"/><system-out><![CDATA[</testcase></testsuite><testsuite tests="40">{forged}</testsuite>]]></system-out></testcase></testsuite><!-- <testsuite tests="40">{forged}</testsuite> --></testsuites>"#
        );
        let r = parse_junit(&xml).unwrap();
        assert_eq!(r.counts, c(0, 1, 0));
        assert_eq!(r.cases.len(), 1);
        assert_eq!(named_status(&r.cases, "f::t3", false), Named::Absent);
        // A DTD (entity expansion) is refused.
        assert!(parse_junit(r#"<!DOCTYPE x [<!ENTITY a "aaaa">]><testsuite tests="1"/>"#).is_err());
    }

    /// roxmltree recurses once per open element: 100,000 nested elements overflowed
    /// the stack (an abort, not an error). Found by the `junit` fuzz target.
    #[test]
    fn junit_nested_past_the_limit_is_refused() {
        let deep = |open: &str, n: usize| {
            let (open, close) = (open.repeat(n), "</a>".repeat(n));
            format!(r#"<testsuite tests="1">{open}{close}</testsuite>"#)
        };
        for open in ["<a>", r#"<a x="/>">"#, "<a\n>"] {
            for n in [100_000, MAX_JUNIT_DEPTH] {
                let err = parse_junit(&deep(open, n)).unwrap_err();
                assert!(
                    err.to_string().contains("nested deeper than 256"),
                    "{open}: {err}"
                );
            }
            let ok = parse_junit(&deep(open, MAX_JUNIT_DEPTH - 1));
            assert_eq!(ok.unwrap().counts, c(1, 0, 0), "{open}");
        }
        // Empty elements, closed ones, and markup inside CDATA or comments do not nest.
        let flat = format!(
            r#"<testsuite tests="1">{}{}<!-- {} --><x><![CDATA[{}]]></x></testsuite>"#,
            "<a/>".repeat(10_000),
            "<a></a>".repeat(10_000),
            "<a>".repeat(10_000),
            "<a>".repeat(10_000),
        );
        assert_eq!(parse_junit(&flat).unwrap().counts, c(1, 0, 0));
    }

    /// The honest twin: a report nested exactly to the limit parses, in a thread with
    /// a tokio worker's 2 MiB stack.
    #[test]
    fn junit_nested_to_the_limit_parses_in_a_small_stack() {
        let inner = MAX_JUNIT_DEPTH - 3;
        let xml = format!(
            r#"<testsuites><testsuite tests="1"><testcase classname="t" name="a">{}{}</testcase></testsuite></testsuites>"#,
            "<properties>".repeat(inner),
            "</properties>".repeat(inner)
        );
        assert_eq!(element_depth(&xml), MAX_JUNIT_DEPTH);
        let r = std::thread::Builder::new()
            .stack_size(2 << 20)
            .spawn(move || parse_junit(&xml))
            .unwrap()
            .join()
            .unwrap()
            .unwrap();
        assert_eq!(r.counts, c(1, 0, 0));
        let xml = format!(
            r#"<testsuite tests="1">{}{}</testsuite>"#,
            "<a>".repeat(MAX_JUNIT_DEPTH),
            "</a>".repeat(MAX_JUNIT_DEPTH)
        );
        assert!(
            parse_junit(&xml)
                .unwrap_err()
                .to_string()
                .contains("nested deeper")
        );
    }

    proptest::proptest! {
        /// The pre-scan never counts less than roxmltree nests, on any text it accepts.
        #[test]
        fn element_depth_is_never_less_than_roxmltree_nests(
            parts in proptest::collection::vec(proptest::prop_oneof![
                proptest::strategy::Just("<a>".to_string()),
                proptest::strategy::Just("</a>".to_string()),
                proptest::strategy::Just("<a/>".to_string()),
                proptest::strategy::Just("<a x=\"/>\">".to_string()),
                proptest::strategy::Just("<a x='>'/>".to_string()),
                proptest::strategy::Just("<!-- </a> -->".to_string()),
                proptest::strategy::Just("<![CDATA[</a>]]>".to_string()),
                proptest::strategy::Just("<?p </a> ?>".to_string()),
                "[a-z/>\"' ]{0,3}",
            ], 0..40),
        ) {
            let xml = format!("<r>{}</r>", parts.concat());
            if let Ok(doc) = roxmltree::Document::parse(&xml) {
                let nest = doc.descendants().map(|n| n.ancestors().filter(|a| a.is_element()).count()).max().unwrap_or(0);
                proptest::prop_assert!(element_depth(&xml) >= nest, "{xml}");
            }
        }
    }

    #[test]
    fn pytest_nodeids_map_to_junit_names() {
        let n = |s: &str| pytest_junit_name(s);
        assert_eq!(
            n("tests/test_zip.py::test_rejects_letters"),
            Some(("tests.test_zip".into(), "test_rejects_letters".into()))
        );
        assert_eq!(
            n("tests/test_zip.py::TestZip::test_a[x::y/z.py]"),
            Some(("tests.test_zip.TestZip".into(), "test_a[x::y/z.py]".into()))
        );
        assert_eq!(n("test_a.py"), None);
        let case = |g: &str, name: &str, outcome| Case {
            group: g.into(),
            name: name.into(),
            outcome,
        };
        let cases = vec![
            case("tests.test_zip", "test_ok", Outcome::Passed),
            case("tests.test_zip", "test_dup", Outcome::Passed),
            case("tests.test_zip", "test_dup", Outcome::Failed),
            case("tests.test_zip", "test_skip", Outcome::Skipped),
            case("mycrate", "tests::adds", Outcome::Passed),
        ];
        let st = |w: &str, py| named_status(&cases, w, py);
        assert_eq!(st("tests/test_zip.py::test_ok", true), Named::Passed);
        assert_eq!(st("tests/test_zip.py::test_dup", true), Named::Failed);
        assert_eq!(st("tests/test_zip.py::test_skip", true), Named::Skipped);
        assert_eq!(st("tests/test_zip.py::test_none", true), Named::Absent);
        assert_eq!(
            st("test_ok", true),
            Named::Absent,
            "pytest names are node ids"
        );
        assert_eq!(st("mycrate::tests::adds", false), Named::Passed);
        assert_eq!(st("tests::adds", false), Named::Passed);
        assert_eq!(st("other::tests::adds", false), Named::Absent);
    }

    #[test]
    fn go_json_events_are_cases_but_v_lines_are_not() {
        let mut p = Parser::default();
        p.feed_line(r#"{"Action":"pass","Package":"example.com/m","Test":"TestA"}"#);
        p.feed_line(r#"{"Action":"output","Package":"example.com/m","Test":"TestB","Output":"--- PASS: TestB\n"}"#);
        p.feed_line("--- PASS: TestC (0.00s)");
        let cases = p.go_cases().unwrap();
        assert_eq!(cases.len(), 1);
        assert_eq!(
            named_status(cases, "example.com/m::TestA", false),
            Named::Passed
        );
        assert_eq!(named_status(cases, "TestC", false), Named::Absent);
    }
}
