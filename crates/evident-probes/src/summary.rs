//! Reading test counts from a runner's own closing lines. Parsing is line by line and
//! streaming, so output of any size is read without being kept.
//!
//! cargo test: every `test result: ok. N passed; N failed; N ignored; ...` line, summed
//! (one per test binary and doc-test run); ignored counts as skipped.
//! cargo nextest: the `Summary [..] N tests run: N passed, N failed, N skipped` line
//! (`timed out` counts as failed). pytest: the last `N passed, N failed, ... in 0.1s`
//! line (`error(s)` count as failed, `xfailed` as skipped, `xpassed` as passed;
//! `no tests ran` is zero). go test: `--- PASS/FAIL/SKIP:` lines of `-v` (subtests
//! included) or `pass/fail/skip` test events of `-json`; plain `go test` prints no
//! per-test lines, so its output has no counts. JUnit XML: the `<testsuite>` element
//! attributes, summed (or `<testsuites>` when it has no `<testsuite>` children).

use serde::Serialize;

use crate::spec::Runner;

/// Test counts from one run.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize)]
pub struct Counts {
    pub passed: u64,
    pub failed: u64,
    pub skipped: u64,
}

impl Counts {
    fn add(&mut self, o: Counts) {
        self.passed = self.passed.saturating_add(o.passed);
        self.failed = self.failed.saturating_add(o.failed);
        self.skipped = self.skipped.saturating_add(o.skipped);
    }
}

/// Streaming state for every runner at once; the one to use is chosen at the end.
#[derive(Debug, Clone, Default)]
pub struct Parser {
    cargo: Option<Counts>,
    nextest: Option<Counts>,
    pytest: Option<Counts>,
    go: Option<Counts>,
}

impl Parser {
    pub fn feed_line(&mut self, line: &str) {
        let t = line.trim();
        if t.is_empty() {
            return;
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
        if let Some(c) = go_line(t) {
            self.go.get_or_insert_default().add(c);
        }
    }

    /// Combine with the parser of the other output stream.
    pub fn merge(&mut self, other: &Parser) {
        fn sum(a: &mut Option<Counts>, b: Option<Counts>) {
            if let Some(b) = b {
                a.get_or_insert_default().add(b);
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
    }

    /// The counts for `runner`, or for the first runner whose summary was seen (nextest,
    /// cargo, pytest, go) when none is named.
    pub fn result(&self, runner: Option<Runner>) -> Option<(Runner, Counts)> {
        let get = |r: Runner| -> Option<(Runner, Counts)> {
            let c = match r {
                Runner::Cargo => self.cargo,
                Runner::Nextest => self.nextest,
                Runner::Pytest => self.pytest,
                Runner::Go => self.go,
                Runner::Junit => None,
            }?;
            Some((r, c))
        };
        match runner {
            Some(r) => get(r),
            None => [Runner::Nextest, Runner::Cargo, Runner::Pytest, Runner::Go]
                .into_iter()
                .find_map(get),
        }
    }
}

/// Parse a whole recorded output at once (for tests and offline use).
pub fn parse_text(text: &str, runner: Option<Runner>) -> Option<(Runner, Counts)> {
    let mut p = Parser::default();
    for line in text.lines() {
        p.feed_line(line);
    }
    p.result(runner)
}

/// The runner implied by the argv, so a test that prints another runner's summary line
/// cannot change which format is read.
pub fn runner_from_argv(argv: &[String]) -> Option<Runner> {
    let base = |s: &String| s.rsplit('/').next().unwrap_or(s).to_string();
    let words: Vec<String> = argv.iter().map(base).collect();
    let has = |w: &str| words.iter().any(|x| x == w);
    if has("nextest") || has("cargo-nextest") {
        Some(Runner::Nextest)
    } else if words
        .iter()
        .any(|w| w == "pytest" || w == "py.test" || w.starts_with("pytest-"))
    {
        Some(Runner::Pytest)
    } else if words.first().is_some_and(|w| w == "cargo") && has("test") {
        Some(Runner::Cargo)
    } else if words.first().is_some_and(|w| w == "go") && has("test") {
        Some(Runner::Go)
    } else {
        None
    }
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
            "ignored" => c.skipped = n,
            _ => {}
        }
    }
    seen.then_some(c)
}

fn nextest_line(t: &str) -> Option<Counts> {
    let rest = t.strip_prefix("Summary [")?;
    let (_, after) = rest.split_once(']')?;
    let (_, list) = after.split_once("run:")?;
    let mut c = Counts::default();
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
    seen.then_some(c)
}

fn pytest_line(t: &str) -> Option<Counts> {
    let t = t.trim_matches(|ch| ch == '=' || ch == ' ');
    let (body, after) = t.rsplit_once(" in ")?;
    // "0.12s", "1.00s (0:00:01)"
    let secs = after.split_whitespace().next()?;
    let secs = secs.strip_suffix('s')?;
    secs.parse::<f64>().ok()?;
    if body == "no tests ran" {
        return Some(Counts::default());
    }
    let mut c = Counts::default();
    for part in body.split(", ") {
        let (n, word) = count_word(part)?;
        match word {
            "passed" | "xpassed" => c.passed = c.passed.saturating_add(n),
            "failed" | "error" | "errors" => c.failed = c.failed.saturating_add(n),
            "skipped" | "xfailed" => c.skipped = c.skipped.saturating_add(n),
            "deselected" | "warning" | "warnings" | "rerun" | "reruns" => {}
            _ => return None,
        }
    }
    Some(c)
}

fn go_line(t: &str) -> Option<Counts> {
    let mut c = Counts::default();
    if t.starts_with('{') && t.contains("\"Action\"") {
        let v: serde_json::Value = serde_json::from_str(t).ok()?;
        v.get("Test")?;
        match v.get("Action")?.as_str()? {
            "pass" => c.passed = 1,
            "fail" => c.failed = 1,
            "skip" => c.skipped = 1,
            _ => return None,
        }
        return Some(c);
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
    Some(c)
}

/// Counts from a JUnit XML report. A minimal scanner of start tags: attribute values of
/// `<testsuite>` elements are summed; `<testsuites>` totals are used only when there is
/// no `<testsuite>`.
pub fn parse_junit(xml: &str) -> Result<Counts, String> {
    let mut suites = Vec::new();
    let mut totals = None;
    let mut rest = xml;
    while let Some(i) = rest.find('<') {
        rest = &rest[i + 1..];
        let name_end = rest
            .find(|c: char| c.is_whitespace() || c == '>' || c == '/')
            .unwrap_or(rest.len());
        let name = &rest[..name_end];
        if name == "testsuite" || name == "testsuites" {
            let attrs = attributes(&rest[name_end..])?;
            let get = |k: &str| -> Result<u64, String> {
                match attrs.iter().find(|(n, _)| n == k) {
                    None => Ok(0),
                    Some((_, v)) => v
                        .trim()
                        .parse::<u64>()
                        .map_err(|_| format!("attribute {k}={v:?} of <{name}> is not a count")),
                }
            };
            let tests = get("tests")?;
            let failed = get("failures")?.saturating_add(get("errors")?);
            let skipped = get("skipped")?.saturating_add(get("disabled")?);
            let c = Counts {
                passed: tests.saturating_sub(failed).saturating_sub(skipped),
                failed,
                skipped,
            };
            let has_tests = attrs.iter().any(|(n, _)| n == "tests");
            if name == "testsuite" {
                if !has_tests {
                    return Err("<testsuite> has no tests attribute".into());
                }
                suites.push(c);
            } else if totals.is_none() && has_tests {
                totals = Some(c);
            }
        }
    }
    if !suites.is_empty() {
        let mut sum = Counts::default();
        for s in suites {
            sum.add(s);
        }
        Ok(sum)
    } else {
        totals.ok_or_else(|| "no <testsuite> or <testsuites> element".to_string())
    }
}

/// Attributes of a start tag, up to its `>`.
fn attributes(s: &str) -> Result<Vec<(String, String)>, String> {
    let mut out = Vec::new();
    let mut rest = s;
    loop {
        rest = rest.trim_start();
        if rest.is_empty() {
            return Err("unterminated start tag".into());
        }
        if rest.starts_with('>') || rest.starts_with("/>") {
            return Ok(out);
        }
        let eq = rest.find('=').ok_or("malformed attribute")?;
        let name = rest[..eq].trim().to_string();
        rest = rest[eq + 1..].trim_start();
        let quote = rest.chars().next().ok_or("malformed attribute")?;
        if quote != '"' && quote != '\'' {
            return Err("unquoted attribute value".into());
        }
        let end = rest[1..]
            .find(quote)
            .ok_or("unterminated attribute value")?;
        out.push((name, rest[1..1 + end].to_string()));
        rest = &rest[end + 2..];
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    proptest::proptest! {
        #[test]
        fn parsers_never_panic(text in "\\PC{0,200}") {
            let _ = parse_text(&text, None);
            let _ = parse_junit(&text);
        }

        #[test]
        fn junit_like_input_never_panics(
            attrs in proptest::collection::vec(("[a-z]{1,8}", "[0-9a-z\"' ]{0,6}"), 0..5),
            tail in "[<>/=\"' a-z]{0,20}",
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
        let out = "running 2 tests\ntest a ... ok\ntest result: ok. 2 passed; 0 failed; 1 ignored; 0 measured; 0 filtered out; finished in 0.00s\n\n   Doc-tests x\ntest result: FAILED. 1 passed; 2 failed; 0 ignored; 0 measured; 0 filtered out; finished in 0.01s\n";
        assert_eq!(
            parse_text(out, None),
            Some((
                Runner::Cargo,
                Counts {
                    passed: 3,
                    failed: 2,
                    skipped: 1
                }
            ))
        );
    }

    #[test]
    fn pytest_last_line() {
        let out =
            "collected 4 items\n\n==== 2 passed, 1 failed, 1 skipped, 2 warnings in 0.12s ====\n";
        assert_eq!(
            parse_text(out, None),
            Some((
                Runner::Pytest,
                Counts {
                    passed: 2,
                    failed: 1,
                    skipped: 1
                }
            ))
        );
        assert_eq!(
            parse_text("===== no tests ran in 0.01s =====", None),
            Some((Runner::Pytest, Counts::default()))
        );
        assert_eq!(
            parse_text("1 error in 0.05s", None).map(|r| r.1.failed),
            Some(1)
        );
        assert_eq!(parse_text("we met 2 friends in 3s", None), None);
    }

    #[test]
    fn junit_suites() {
        let xml = r#"<?xml version="1.0"?><testsuites tests="9"><testsuite name="a" tests="3" failures="1" errors="0" skipped="1"><testcase name="x"/></testsuite><testsuite name='b' tests='2'/></testsuites>"#;
        assert_eq!(
            parse_junit(xml).unwrap(),
            Counts {
                passed: 3,
                failed: 1,
                skipped: 1
            }
        );
        assert!(parse_junit("<testsuite tests=\"x\"/>").is_err());
        assert!(parse_junit("<html/>").is_err());
    }
}
