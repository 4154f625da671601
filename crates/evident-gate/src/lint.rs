//! Owner mistakes found before an agent is judged by them (`evident contract check`).
//!
//! Two kinds. *Errors* make the gate refuse the contract (they are checked when it is
//! read, see [`Contract::parse`]): an expectation no source of that kind can produce, an
//! inline secret, a check that can never apply. *Warnings* are contracts that run but
//! prove less than their owner probably thinks: a glob that covers every target, a
//! health check that only expects a status, a version substring that later versions
//! also contain, a test run that does not require `failed = 0`, a glob over many
//! targets read back from one fixed record.

use crate::contract::{Check, Contract, ContractDocument};
use evident_format::CheckType;
use evident_probes::{EnvValue, Source};
use serde::Serialize;
use serde_json::{Map, Value};

/// One thing `contract check` found.
#[derive(Debug, Clone, Serialize)]
pub struct Lint {
    /// The JSON path in the contract (`check[2].expected.row_count`).
    pub path: String,
    /// 1-based line and column, when known.
    pub line: Option<usize>,
    /// 1-based column, when known.
    pub col: Option<usize>,
    /// What is wrong, in words.
    pub message: String,
    /// The likely fix.
    pub hint: String,
}

/// The JSON type an observation key of a source always has, when it is one of the keys
/// that source produces; `None` for keys evident does not know for that source.
fn observed_type(source: &Source, key: &str) -> Option<&'static str> {
    let int = Some("an integer");
    let boolean = Some("a boolean");
    let string = Some("a string");
    let object = Some("an object");
    // A postcondition's `reason` is a code or null (a match): either can be expected.
    if let Some(keys) = source.closed_keys() {
        return keys
            .iter()
            .find(|(n, _)| *n == key && *n != "reason")
            .map(|(_, t)| *t);
    }
    match (source, key) {
        (Source::Command(_), "exit_code") => int,
        (
            Source::Command(_),
            "passed"
            | "failed"
            | "skipped"
            | "errors"
            | "deselected"
            | "xfailed"
            | "xpassed"
            | "regressed"
            | "base_passed"
            | "base_failing"
            | "added_tests"
            | "added_failed"
            | "subtests_passed"
            | "subtests"
            | "expected_failures"
            | "unexpected_successes"
            | "todo"
            | "missing"
            | "ignored"
            | "filtered_out"
            | "not_run",
        ) => int,
        (Source::Command(_), "ran" | "stdout_truncated" | "stderr_truncated") => boolean,
        (Source::Command(_), "stdout" | "stderr" | "runner" | "expected_runner") => string,
        (Source::Command(_), "tests_passed") => Some("an array"),
        (Source::Http(_), "status") => int,
        (Source::Http(_), "headers" | "json") => object,
        (Source::Sqlite(_) | Source::Postgres(_) | Source::Mysql(_), "row_count") => int,
        (Source::File(_), "exists") => boolean,
        (Source::File(_), "sha256" | "text") => string,
        (Source::File(_), "json" | "contains") => object,
        (Source::Redis(_), "exists") => boolean,
        (Source::Git(_), "commit_exists" | "clean" | "file_exists") => boolean,
        (Source::Git(_), "commit" | "file_sha256") => string,
        (Source::Browser(_), "status" | "count") => int,
        (Source::Browser(_), "visible" | "sandboxed") => boolean,
        (Source::Browser(_), "text" | "html_sha256") => string,
        (Source::Browser(_), "attributes") => object,
        (Source::Browser(_), "blocked_origins") => Some("an array"),
        _ => None,
    }
}

fn type_of(v: &Value) -> &'static str {
    match v {
        Value::Null => "null",
        Value::Bool(_) => "a boolean",
        Value::Number(n) if n.is_i64() || n.is_u64() => "an integer",
        Value::Number(_) => "a number",
        Value::String(_) => "a string",
        Value::Array(_) => "an array",
        Value::Object(_) => "an object",
    }
}

/// An expectation the source can never meet because the observed key always has
/// another type (`row_count = "1"`, `status = "200"`): the first such key, with the fix.
pub fn impossible_expectation(check: &Check) -> Option<(String, String)> {
    let expected = check.expected.as_ref()?;
    expected.iter().find_map(|(key, want)| {
        let have = observed_type(&check.source, key)?;
        // body_contains in endpoint_health is a text to find; elsewhere a boolean.
        let got = type_of(want);
        (got != have).then(|| {
            (
                key.clone(),
                format!(
                    "a {} source observes {key} as {have}, so {got} ({want}) can never match; write {}",
                    check.source.kind(),
                    suggestion(have, want)
                ),
            )
        })
    })
}

fn suggestion(have: &str, want: &Value) -> String {
    let text = want.as_str().unwrap_or_default();
    match have {
        "an integer" => match text.trim().parse::<i64>() {
            Ok(n) => n.to_string(),
            Err(_) => "an integer".into(),
        },
        "a boolean" => match text.trim() {
            "true" | "false" => text.trim().into(),
            _ => "true or false".into(),
        },
        other => other.into(),
    }
}

/// A literal value where a secret belongs: an HTTP header or command variable whose
/// name says it carries a credential.
pub fn inline_secret(check: &Check) -> Option<(String, String)> {
    let secret_name = |n: &str| {
        let n = n.to_ascii_lowercase();
        [
            "authorization",
            "cookie",
            "token",
            "password",
            "passwd",
            "secret",
            "api_key",
            "api-key",
            "apikey",
            "credential",
        ]
        .iter()
        .any(|s| n.contains(s))
    };
    let literal = |v: &EnvValue| matches!(v, EnvValue::Literal(s) if !s.is_empty());
    let (field, map, every) = match &check.source {
        Source::Http(h) => ("http.headers", &h.headers, false),
        Source::Command(c) => ("command.env", &c.env, false),
        // A cookie a page needs is a session: every literal one is a secret inline.
        Source::Browser(b) => match b.headers.iter().find(|(n, v)| secret_name(n) && literal(v)) {
            Some(_) => ("browser.headers", &b.headers, false),
            None => ("browser.cookies", &b.cookies, true),
        },
        _ => return None,
    };
    map.iter()
        .find(|(name, v)| (every || secret_name(name)) && literal(v))
        .map(|(name, _)| {
            (
                format!("source.{field}.{name}"),
                format!(
                    "{name} is written inline, so the secret is in the contract for anyone to read; write {name} = {{ env = \"VARIABLE\" }} and set VARIABLE where the gate runs"
                ),
            )
        })
}

/// Warnings for a contract that parsed (errors already refused it).
pub fn lint(doc: &ContractDocument) -> Vec<Lint> {
    let mut out = Vec::new();
    let mut push = |path: String, message: String, hint: &str| {
        let pos = doc.spans.nearest(&path);
        out.push(Lint {
            line: pos.map(|p| p.line),
            col: pos.map(|p| p.col),
            path,
            message,
            hint: hint.into(),
        });
    };
    let Contract { checks, .. } = &doc.contract;
    for (i, c) in checks.iter().enumerate() {
        let at = |rest: &str| format!("check[{i}].{rest}");
        let expected: Map<String, Value> = c
            .expected
            .clone()
            .or_else(|| c.source.default_expected())
            .unwrap_or_default();
        // A private check's covers.target is not repeated (it may name the private path).
        let shown_target = |t: &str| {
            if c.private {
                "(private)".to_string()
            } else {
                format!("{t:?}")
            }
        };
        if let Some(t) = &c.covers.target
            && matches!(t.as_str(), "*" | "**" | "**/*" | "*/**")
        {
            push(
                at("covers.target"),
                format!(
                    "covers.target {} matches every target: this check's evidence speaks for any mutation at all",
                    shown_target(t)
                ),
                "name the targets this check observes (accounts/4471, src/**)",
            );
        } else if let Some(t) = &c.covers.target
            && t.contains(['*', '?', '['])
            && c.check_type == CheckType::StateReadback
        {
            push(
                at("covers.target"),
                format!(
                    "covers.target {} selects many targets, but the source reads one fixed record ({}): a claim about any other target matching it would be covered by this one readback",
                    shown_target(t),
                    c.target()
                ),
                "write one check per record with an exact covers.target",
            );
        }
        if c.check_type == CheckType::StateReadback
            && c.covers.target.is_none()
            && c.covers.id.is_none()
            && !matches!(c.source, Source::SignedBy(_))
        {
            push(
                at("covers"),
                format!(
                    "covers selects every {} mutation by kind alone, but the source reads one fixed record ({}): a claimed write to any other record of that kind would be covered by this one readback",
                    c.covers.kind.as_deref().unwrap_or("-"),
                    c.target()
                ),
                "add covers.target naming the record this check reads (accounts/4471)",
            );
        }
        if c.check_type == CheckType::EndpointHealth
            && expected.len() == 1
            && expected.contains_key("status")
        {
            push(
                at("expected"),
                "an endpoint_health check that expects only a status cannot satisfy: a 200 that would be 200 either way is not evidence about this change".into(),
                "expect something that changes with the deploy: body_contains, or a JSON pointer value",
            );
        }
        if let Some(Value::String(text)) = expected.get("body_contains")
            && looks_like_version(text)
        {
            push(
                at("expected.body_contains"),
                format!(
                    "body_contains {text:?} is also contained in later versions ({text}0, {text}1 …): a newer or older build can meet it"
                ),
                "read the version with a JSON pointer: source.http.pointers = { version = \"/version\" } and expected = { json = { version = \"…\" } }",
            );
        }
        if let Source::Command(cmd) = &c.source
            && cmd.protect.is_none()
            && cmd
                .argv
                .iter()
                .any(|a| a.contains("pytest") || a == "cargo" || a.ends_with("/cargo"))
        {
            push(
                at("source.command"),
                "this test run uses the agent's own runner configuration: a conftest.py hookwrapper, pytest.ini addopts or a Cargo.toml test target in the tree decides what the runner reports".into(),
                "add protect = { base = \"<the owner's full commit id>\", paths = [\"tests/**\", \"Cargo.toml\"] } (pytest's config files and conftest.py are then always taken from the base; docs/probes.md)",
            );
        }
        let judged_by_base = expected.get("regressed") == Some(&Value::from(0));
        if c.check_type == CheckType::TestRun
            && matches!(c.source, Source::Command(_))
            && !judged_by_base
            && expected.get("skipped") != Some(&Value::from(0))
        {
            push(
                at("expected"),
                "this test_run would pass with a test skipped: a test that calls pytest.skip() or pytest.xfail() at run time, or is deselected, does not fail".into(),
                "add skipped = 0 to expected, or judge the run against the base's tests (base_tests = \"@baseline\" with regressed = 0; docs/probes.md)",
            );
        }
        if c.check_type == CheckType::TestRun
            && matches!(c.source, Source::Command(_))
            && !judged_by_base
            && expected.get("failed") != Some(&Value::from(0))
        {
            push(
                at("expected"),
                "this test_run does not require failed = 0: a runner that exits 0 while reporting failures (or whose exit code a wrapper hides) would satisfy it".into(),
                "add failed = 0 (and ran = true) to expected",
            );
        }
    }
    // A private path read again by a check that is not private shows in that check's
    // target and errors what the private one keeps out of every output.
    let file_path = |c: &Check| match &c.source {
        Source::File(f) => Some(f.path.trim_start_matches("./").to_string()),
        _ => None,
    };
    for (i, p) in checks.iter().enumerate().filter(|(_, c)| c.private) {
        let Some(path) = file_path(p) else { continue };
        for (j, c) in checks.iter().enumerate() {
            if !c.private && file_path(c).as_deref() == Some(path.as_str()) {
                push(
                    format!("check[{j}].source"),
                    format!(
                        "check {:?} reads the path that private check {:?} keeps out of every output, and shows it",
                        c.id, checks[i].id
                    ),
                    "mark this check private too (a file postcondition), or drop it",
                );
            }
        }
    }
    out
}

/// `2.4.1`, `v1.10`, `"version":"1.4.2"`: text ending in a dotted number, which a
/// longer version (`2.4.10`) also contains.
fn looks_like_version(text: &str) -> bool {
    let tail: String = text
        .chars()
        .rev()
        .take_while(|c| c.is_ascii_digit() || *c == '.')
        .collect();
    let tail: String = tail.chars().rev().collect();
    tail.ends_with(|c: char| c.is_ascii_digit())
        && tail.contains('.')
        && tail.split('.').filter(|p| !p.is_empty()).count() >= 2
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn versions_are_recognised() {
        assert!(looks_like_version("2.4.1"));
        assert!(looks_like_version("\"version\":\"1.4"));
        assert!(!looks_like_version("\"version\":\"1.4.2\""));
        assert!(!looks_like_version("ok"));
        assert!(!looks_like_version("v2"));
    }
}
