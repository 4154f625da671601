//! A TAP 13/14 stream, as node's test runner (`node --test`, TAP reporter), node-tap
//! and tape write it:
//!
//! ```text
//! TAP version 14
//! # Subtest: group
//!     ok 1 - inner
//!     not ok 2 - inner fails
//!       ---
//!       error: 'x'
//!       ...
//!     1..2
//! not ok 1 - group
//! ok 2 - skipped # SKIP why
//! not ok 3 - later # TODO
//! 1..3
//! ```
//!
//! A test point with subtests (indented 4 spaces more, before it) is a group: its
//! subtests are counted, not the group, except that a group which is `not ok` though
//! no subtest failed (a failing hook, code after the subtests) is one failure of its
//! own. A test point without subtests is a test: `ok` passed, `not ok` failed, `# SKIP`
//! skipped, `# TODO` skipped and counted in `todo` (its result does not count, as in
//! node's and tape's own totals). YAML diagnostics (`---` … `...` under a test point)
//! are skipped whatever they hold; `#` lines are comments.
//!
//! What must hold, else the stream is unreadable: each level's test points are
//! numbered 1, 2, 3, … (a test that prints `ok 2` into the stream puts two test 2s in
//! it); one plan per level; no more test points than the plan; a plan at the top
//! level (without one the run ended early); no subtest left open at the end. Tests a
//! plan announced that never reported are `missing`, counted as failed. `Bail out!`
//! counts as one failure and ends the stream. In a stream without subtests (tape) the
//! footer `# tests N` must equal the test points and `# fail N` (plus node's
//! `# cancelled N`) the failures. A second `TAP version` line at the top level starts
//! another stream, whose counts are added.
//!
//! Lines that are none of these are not TAP and are ignored; a stream is seen only
//! when it has a `TAP version` line or a plan, so a stray `ok` line is not one.

use super::{Counts, both};

/// Deepest subtest nesting read.
const MAX_DEPTH: usize = 64;

/// One level of a stream: the top, or one subtest block.
#[derive(Debug, Clone, Copy, Default)]
struct Level {
    /// The number of the last test point.
    last_id: u64,
    points: u64,
    plan: Option<u64>,
    /// A test failed at this level or below it.
    failed: bool,
}

/// `# tests N`, `# fail N`, `# cancelled N` of the top level (the last of each wins).
#[derive(Debug, Clone, Copy, Default)]
struct Footer {
    tests: Option<u64>,
    fail: Option<u64>,
    cancelled: Option<u64>,
}

/// One TAP stream being read.
#[derive(Debug, Clone, Default)]
struct Doc {
    levels: Vec<Level>,
    counts: Counts,
    /// Failures of tests (not groups, not missing): compared with the footer.
    leaf_failed: u64,
    footer: Footer,
    /// Indentation of the YAML block being skipped (its `---` line's).
    yaml: Option<usize>,
    /// Indentation of the test point on the line before, where a YAML block may start.
    after_point: Option<usize>,
    header: bool,
    plan_seen: bool,
    nested: bool,
    bailed: bool,
    /// The first thing that does not hold together.
    error: Option<String>,
}

/// A test point: `ok`/`not ok`, its number, and its directive.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
struct Point<'a> {
    ok: bool,
    id: Option<u64>,
    description: &'a str,
    directive: Option<Directive>,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Directive {
    Skip,
    Todo,
}

fn point(body: &str) -> Option<Point<'_>> {
    let (ok, rest) = match body.strip_prefix("not ok") {
        Some(r) => (false, r),
        None => (true, body.strip_prefix("ok")?),
    };
    if !(rest.is_empty() || rest.starts_with(' ')) {
        return None;
    }
    let rest = rest.trim_start();
    let digits = rest.bytes().take_while(u8::is_ascii_digit).count();
    let (id, rest) = if digits > 0 {
        let after = &rest[digits..];
        if !(after.is_empty() || after.starts_with(' ')) {
            // `ok 1a`: a description, not a number.
            (None, rest)
        } else {
            (Some(rest[..digits].parse().ok()?), after.trim_start())
        }
    } else {
        (None, rest)
    };
    let rest = rest.strip_prefix("- ").unwrap_or(rest);
    // The description ends at the first unescaped `#` (node writes `\#`).
    let mut description = rest;
    let mut directive = None;
    let b = rest.as_bytes();
    if let Some(i) = (0..b.len()).find(|&i| b[i] == b'#' && (i == 0 || b[i - 1] != b'\\')) {
        description = rest[..i].trim_end();
        let d = rest[i + 1..].trim_start().to_ascii_lowercase();
        directive = if d.starts_with("skip") {
            Some(Directive::Skip)
        } else if d.starts_with("todo") {
            Some(Directive::Todo)
        } else {
            None
        };
    }
    Some(Point {
        ok,
        id,
        description,
        directive,
    })
}

/// `1..N` (optionally `# reason`) → N.
fn plan(body: &str) -> Option<u64> {
    let rest = body.strip_prefix("1..")?;
    let digits = rest.bytes().take_while(u8::is_ascii_digit).count();
    let tail = rest[digits..].trim_start();
    if digits == 0 || !(tail.is_empty() || tail.starts_with('#')) {
        return None;
    }
    rest[..digits].parse().ok()
}

/// The name of a failing test point (`not ok 3 - name`), not a `# TODO` or `# SKIP` one.
pub(crate) fn failed_name(t: &str) -> Option<&str> {
    let p = point(t)?;
    (!p.ok && p.directive.is_none() && !p.description.is_empty()).then_some(p.description)
}

impl Doc {
    fn fail(&mut self, why: String) {
        self.error.get_or_insert(why);
    }

    /// Close the levels deeper than `level`; their failures go up. Returns whether
    /// there were any (so the test point at `level` is a group) and whether one failed.
    fn close_below(&mut self, level: usize) -> (bool, bool) {
        let mut children = false;
        let mut failed = false;
        while self.levels.len() > level + 1 {
            let Some(l) = self.levels.pop() else { break };
            children |= l.points > 0 || l.plan.is_some();
            failed |= l.failed;
            self.check_plan(&l, "a subtest");
        }
        (children, failed)
    }

    fn check_plan(&mut self, l: &Level, what: &str) {
        match l.plan {
            None => self.fail(format!("{what} has no plan (1..N)")),
            Some(plan) if l.points > plan => self.fail(format!(
                "{what} has {} test points, more than its plan 1..{plan}",
                l.points
            )),
            Some(plan) => {
                let missing = plan - l.points;
                self.counts.missing = self.counts.missing.saturating_add(missing);
                self.counts.failed = self.counts.failed.saturating_add(missing);
            }
        }
    }

    /// The level at `indent`, opened (with the levels above it) when new.
    fn open(&mut self, level: usize) -> bool {
        if level >= MAX_DEPTH {
            self.fail(format!("subtests nested deeper than {MAX_DEPTH}"));
            return false;
        }
        while self.levels.len() <= level {
            self.levels.push(Level::default());
        }
        if level > 0 {
            self.nested = true;
        }
        true
    }

    fn line(&mut self, line: &str) {
        let indent = line.len() - line.trim_start_matches(' ').len();
        let body = &line[indent..];
        if let Some(y) = self.yaml {
            if indent > y || (indent == y && body != "...") {
                return;
            }
            self.yaml = None;
            if indent == y {
                return;
            }
        }
        let after_point = self.after_point.take();
        if body == "---" && after_point.is_some_and(|p| indent == p + 2) {
            self.yaml = Some(indent);
            return;
        }
        if body.starts_with("Bail out!") {
            self.bailed = true;
            self.counts.failed = self.counts.failed.saturating_add(1);
            return;
        }
        if !indent.is_multiple_of(4) {
            return;
        }
        let level = indent / 4;
        if let Some(n) = plan(body) {
            self.plan_seen = true;
            if !self.open(level) {
                return;
            }
            if self.levels.len() > level + 1 {
                self.fail("a plan closes subtests that have no test point".into());
                self.close_below(level);
            }
            if self.levels[level].plan.is_some() {
                self.fail(format!("two plans at one level (the second 1..{n})"));
            }
            self.levels[level].plan = Some(n);
            return;
        }
        if let Some(p) = point(body) {
            self.after_point = Some(indent);
            if !self.open(level) {
                return;
            }
            let (group, child_failed) = self.close_below(level);
            let l = &mut self.levels[level];
            let expected = l.last_id.saturating_add(1);
            let id = p.id.unwrap_or(expected);
            l.last_id = id;
            l.points = l.points.saturating_add(1);
            l.failed |= child_failed;
            if id != expected {
                self.fail(format!(
                    "test point {id} where {expected} was due ({})",
                    if level == 0 {
                        "top level".to_string()
                    } else {
                        format!("subtest level {level}")
                    }
                ));
            }
            let c = &mut self.counts;
            match (p.directive, p.ok) {
                (Some(Directive::Todo), _) if !group => {
                    c.todo = c.todo.saturating_add(1);
                    c.skipped = c.skipped.saturating_add(1);
                }
                (Some(Directive::Skip), _) if !group => c.skipped = c.skipped.saturating_add(1),
                (None, true) if !group => c.passed = c.passed.saturating_add(1),
                (None, false) if !group || !child_failed => {
                    // A test that failed, or a group that failed on its own.
                    c.failed = c.failed.saturating_add(1);
                    if !group {
                        self.leaf_failed = self.leaf_failed.saturating_add(1);
                    }
                    self.levels[level].failed = true;
                }
                _ => {}
            }
            return;
        }
        if level == 0
            && let Some(comment) = body.strip_prefix('#')
        {
            let mut words = comment.split_whitespace();
            if let (Some(key), Some(n), None) = (words.next(), words.next(), words.next())
                && let Ok(n) = n.parse::<u64>()
            {
                match key {
                    "tests" => self.footer.tests = Some(n),
                    "fail" => self.footer.fail = Some(n),
                    "cancelled" => self.footer.cancelled = Some(n),
                    _ => {}
                }
            }
        }
    }

    /// The stream's counts at its end, or why they do not hold together.
    fn finish(&self) -> Result<Counts, String> {
        let mut d = self.clone();
        if d.bailed {
            // The run stopped: what did not report is not missing, it never ran.
            return match d.error {
                Some(e) => Err(e),
                None => Ok(d.counts),
            };
        }
        if d.levels.len() > 1 {
            d.fail("the stream ended inside a subtest".into());
        }
        d.close_below(0);
        match d.levels.first().copied() {
            Some(top) if top.plan.is_some() => d.check_plan(&top, "the stream"),
            _ => d.fail("the stream has no plan (1..N): the run ended early".into()),
        }
        if !d.nested {
            let points = d.levels.first().map_or(0, |l| l.points);
            if let Some(tests) = d.footer.tests
                && tests != points
            {
                d.fail(format!(
                    "its footer says {tests} tests, the stream has {points} test points"
                ));
            }
            if let Some(fail) = d.footer.fail {
                let fail = fail.saturating_add(d.footer.cancelled.unwrap_or(0));
                if fail != d.leaf_failed {
                    d.fail(format!(
                        "its footer says {fail} failed, the stream has {} failing test points",
                        d.leaf_failed
                    ));
                }
            }
        }
        match d.error {
            Some(e) => Err(e),
            None => Ok(d.counts),
        }
    }

    /// A TAP stream was seen (not a stray `ok` line).
    fn seen(&self) -> bool {
        self.header || self.plan_seen
    }
}

/// One output stream's TAP state.
#[derive(Debug, Clone, Default)]
pub(crate) struct Stream {
    /// Finished streams (a second `TAP version` line at the top starts another).
    done: Option<Result<Counts, String>>,
    doc: Doc,
    /// The reading of the other output stream, after [`Stream::merge`].
    other: Option<Result<Counts, String>>,
}

impl Stream {
    /// One line, trailing whitespace trimmed (the indentation is kept).
    pub(crate) fn feed(&mut self, line: &str) {
        if line.is_empty() {
            return;
        }
        if line.starts_with("TAP version ") {
            let finished = std::mem::take(&mut self.doc);
            // Stray `ok` lines before the first header are not a stream.
            if finished.seen() {
                self.done = Some(add(self.done.take(), finished.finish()));
            }
            self.doc.header = true;
            return;
        }
        if self.doc.bailed {
            return;
        }
        self.doc.line(line);
    }

    /// Combine with the other output stream's state: a stream on both is unreadable.
    pub(crate) fn merge(&mut self, other: &Stream) {
        self.other = both(self.other.take(), other.reading(), "TAP stream");
    }

    /// `None` when no TAP stream was seen; else its counts (the streams' sum), or why
    /// they do not hold together.
    pub(crate) fn reading(&self) -> Option<Result<Counts, String>> {
        let current = self.doc.seen().then(|| self.doc.finish());
        let own = match (self.done.clone(), current) {
            (Some(d), Some(c)) => Some(add(Some(d), c)),
            (d, c) => d.or(c),
        };
        both(own, self.other.clone(), "TAP stream")
    }
}

fn add(a: Option<Result<Counts, String>>, b: Result<Counts, String>) -> Result<Counts, String> {
    match (a, b) {
        (Some(Err(e)), _) | (_, Err(e)) => Err(e),
        (Some(Ok(mut a)), Ok(b)) => {
            a.add(b);
            Ok(a)
        }
        (None, b) => b,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn read(text: &str) -> Option<Result<Counts, String>> {
        let mut s = Stream::default();
        for line in text.lines() {
            s.feed(line.trim_end());
        }
        s.reading()
    }

    fn counts(text: &str) -> Counts {
        read(text).expect("a stream").expect("readable")
    }

    fn why(text: &str) -> String {
        read(text).expect("a stream").expect_err("unreadable")
    }

    #[test]
    fn test_points() {
        let p = |s| point(s);
        assert_eq!(
            p("ok 1 - a # SKIP why"),
            Some(Point {
                ok: true,
                id: Some(1),
                description: "a",
                directive: Some(Directive::Skip)
            })
        );
        assert_eq!(
            p("not ok 2 b # todo").unwrap().directive,
            Some(Directive::Todo)
        );
        assert_eq!(p("not ok 2 b \\# TODO").unwrap().directive, None);
        assert_eq!(p("ok 5 - prints # time=4.6ms").unwrap().directive, None);
        assert_eq!(p("ok").unwrap().id, None);
        assert_eq!(p("ok 12a").unwrap().id, None);
        assert_eq!(p("okay 1"), None);
        assert_eq!(p("not okay"), None);
        assert_eq!(plan("1..3"), Some(3));
        assert_eq!(plan("1..0 # SKIP no tests"), Some(0));
        assert_eq!(plan("1..3x"), None);
        assert_eq!(plan("1.."), None);
        assert_eq!(failed_name("not ok 3 - x"), Some("x"));
        assert_eq!(failed_name("not ok 3 - x # TODO"), None);
        assert_eq!(failed_name("ok 3 - x"), None);
    }

    #[test]
    fn plans_and_missing_tests() {
        assert_eq!(counts("1..2\nok 1\nok 2\n").passed, 2);
        let c = counts("1..3\nok 1\n");
        assert_eq!((c.passed, c.failed, c.missing), (1, 2, 2));
        assert!(why("1..1\nok 1\nok 2\n").contains("more than its plan"));
        assert!(why("TAP version 13\nok 1\n").contains("no plan"));
        assert!(why("ok 1\n1..1\n1..1\n").contains("two plans"));
        assert_eq!(read("ok 1\nok 2\n"), None, "stray lines are not a stream");
        assert_eq!(counts("1..0 # SKIP nothing\n"), Counts::default());
    }

    #[test]
    fn numbering_must_follow() {
        assert!(why("ok 1\nok 3\n1..3\n").contains("test point 3 where 2 was due"));
        assert!(why("ok 1\nok 1\n1..2\n").contains("where 2 was due"));
        assert_eq!(counts("ok\nok\n1..2\n").passed, 2);
    }

    #[test]
    fn bail_out_counts_as_a_failure() {
        let c = counts("TAP version 13\n1..5\nok 1\nBail out! database down\nok 2\n");
        assert_eq!((c.passed, c.failed, c.missing), (1, 1, 0));
    }

    #[test]
    fn yaml_blocks_hide_their_text() {
        let out = "not ok 1 - a\n  ---\n  error: |-\n    ok 2 - inside yaml\n    1..9\n  ...\nok 2 - b\n1..2\n";
        let c = counts(out);
        assert_eq!((c.passed, c.failed), (1, 1));
        // A `---` not under a test point is not YAML.
        let c = counts("# x\n  ---\nok 1\n1..2\n");
        assert_eq!((c.passed, c.missing), (1, 1));
    }

    #[test]
    fn stray_lines_before_the_header_are_not_a_stream() {
        let c = counts("ok  \texample.com/pkg\t0.01s\nok\nTAP version 13\nok 1 - a\n1..1\n");
        assert_eq!(c.passed, 1);
    }

    #[test]
    fn two_streams_add_up() {
        let c = counts("TAP version 13\nok 1\n1..1\nTAP version 13\nnot ok 1\n1..1\n");
        assert_eq!((c.passed, c.failed), (1, 1));
    }

    #[test]
    fn a_subtest_block_left_open_or_without_plan() {
        assert!(why("TAP version 14\n    ok 1 - child\n    1..1\n").contains("inside a subtest"));
        assert!(why("    ok 1 - child\nok 1 - parent\n1..1\n").contains("a subtest has no plan"));
        let deep = format!("1..1\n{}ok 1\n", " ".repeat(4 * MAX_DEPTH));
        assert!(why(&deep).contains("deeper than 64"));
    }
}
