//! `evident init AGENT`: a starter contract detected from the repository, and the
//! agent's settings file with evident's hooks merged in (other hooks kept, idempotent,
//! the evident binary named by absolute path, a timeout above the contract's deadline).

use crate::error::{HookError, io_at, json};
use std::path::{Path, PathBuf};

use serde_json::{Value, json};

use crate::agent::Agent;

/// The gate's deadline the starter contract's commands fit in (seconds); the hook is
/// registered with [`HOOK_TIMEOUT_S`], above it, so evident answers before the agent
/// gives up on it (agents let a stop through when a hook times out).
pub const CHECK_TIMEOUT_S: u64 = 480;
/// The registered command's `--timeout`: the gate's deadline, above each check's.
pub const GATE_DEADLINE_S: u64 = 540;
/// The timeout in the agent's settings, above the gate's deadline so evident answers first.
pub const HOOK_TIMEOUT_S: u64 = 600;

/// What the repository looks like.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Detected {
    /// (check id, argv, protected paths)
    pub checks: Vec<(String, Vec<String>, Vec<String>)>,
}

/// Does any file within a few levels of `root` look like a Python test module
/// (`test_*.py`, `*_test.py`), outside dependency and build directories?
fn has_python_tests(root: &Path) -> bool {
    let mut todo = vec![(root.to_path_buf(), 0usize)];
    let mut seen = 0usize;
    while let Some((dir, depth)) = todo.pop() {
        let Ok(rd) = std::fs::read_dir(&dir) else {
            continue;
        };
        for e in rd.flatten() {
            seen += 1;
            if seen > 20_000 {
                return false;
            }
            let name = e.file_name().to_string_lossy().into_owned();
            if e.file_type().is_ok_and(|t| t.is_dir()) {
                let skip = name.starts_with('.')
                    || matches!(
                        name.as_str(),
                        "node_modules" | "venv" | "target" | "build" | "dist" | "__pycache__"
                    );
                if depth < 4 && !skip {
                    todo.push((e.path(), depth + 1));
                }
            } else if name.ends_with(".py")
                && (name.starts_with("test_") || name.ends_with("_test.py"))
            {
                return true;
            }
        }
    }
    false
}

/// Does the project say it runs its tests with `python -m unittest` (and never names
/// pytest)?
fn uses_unittest(root: &Path) -> bool {
    let text: String = [
        "tox.ini",
        "setup.cfg",
        "Makefile",
        "pyproject.toml",
        "noxfile.py",
    ]
    .iter()
    .filter_map(|f| std::fs::read_to_string(root.join(f)).ok())
    .collect::<Vec<_>>()
    .join("\n");
    text.contains("unittest") && !text.contains("pytest")
}

/// Finds the test commands a starter contract should run (Cargo, npm, pytest, …).
pub fn detect(root: &Path) -> Detected {
    let has = |p: &str| root.join(p).exists();
    let mut checks = Vec::new();
    if has("Cargo.toml") {
        checks.push((
            "cargo-test".into(),
            vec!["cargo".into(), "test".into(), "--workspace".into()],
            vec![
                "tests/**".into(),
                "**/tests/**".into(),
                "Cargo.toml".into(),
                "**/Cargo.toml".into(),
                "build.rs".into(),
                ".cargo/**".into(),
                "rust-toolchain.toml".into(),
            ],
        ));
    }
    let pyproject = std::fs::read_to_string(root.join("pyproject.toml")).unwrap_or_default();
    let python = has("pytest.ini")
        || has("conftest.py")
        || pyproject.contains("pytest")
        || has("setup.cfg")
            && std::fs::read_to_string(root.join("setup.cfg"))
                .unwrap_or_default()
                .contains("pytest")
        || has("tox.ini")
        || ((has("pyproject.toml") || has("setup.py") || has("setup.cfg"))
            && has_python_tests(root));
    // The project's virtualenv, when it has one (linked into each run read-only).
    let py: String = [".venv", "venv"]
        .iter()
        .map(|v| format!("{v}/bin/python"))
        .find(|p| root.join(p).exists())
        .unwrap_or_else(|| "python3".into());
    if python && uses_unittest(root) {
        // The project's own runner: pytest would collect what unittest never does.
        checks.push((
            "unittest".into(),
            vec![
                py.clone(),
                "-m".into(),
                "unittest".into(),
                "discover".into(),
                "-v".into(),
            ],
            vec![
                "**/test_*.py".into(),
                "**/*_test.py".into(),
                "**/tests/**".into(),
                "**/testing/**".into(),
            ],
        ));
    } else if python {
        // The base's own tests decide (base_tests): the files pytest collects at the
        // base run at their base content wherever they live, and every test that
        // passed there must pass. pytest's configuration files are always protected.
        checks.push((
            "pytest".into(),
            vec![py, "-m".into(), "pytest".into(), "-q".into()],
            vec!["**/conftest.py".into()],
        ));
    }
    if let Ok(pkg) = std::fs::read_to_string(root.join("package.json"))
        && let Ok(v) = serde_json::from_str::<Value>(&pkg)
        && v.pointer("/scripts/test").and_then(Value::as_str).is_some()
    {
        checks.push((
            "npm-test".into(),
            vec!["npm".into(), "test".into()],
            vec![
                "test/**".into(),
                "tests/**".into(),
                "**/*.test.*".into(),
                "**/*.spec.*".into(),
                "package.json".into(),
            ],
        ));
    }
    if has("go.mod") {
        checks.push((
            "go-test".into(),
            vec!["go".into(), "test".into(), "./...".into()],
            vec!["**/*_test.go".into(), "go.mod".into()],
        ));
    }
    Detected { checks }
}

/// The ignored dependency directories a check needs (`environment`), as the project
/// has them: a virtualenv for Python, `node_modules` for npm.
fn environment(root: &Path, id: &str) -> String {
    let names: &[&str] = match id {
        "pytest" | "unittest" => &[".venv", "venv"],
        "npm-test" => &["node_modules"],
        _ => &[],
    };
    let found: Vec<String> = names
        .iter()
        .filter(|n| root.join(n).is_dir())
        .map(|n| n.to_string())
        .collect();
    if found.is_empty() {
        String::new()
    } else {
        format!(", environment = {}", toml_list(&found))
    }
}

/// The report format of the runner behind `npm test`, where its script names one that
/// prints TAP (tape, node-tap, node's own test runner): `npm test` alone says nothing.
fn npm_runner(root: &Path, id: &str) -> Option<&'static str> {
    if id != "npm-test" {
        return None;
    }
    let pkg = std::fs::read_to_string(root.join("package.json")).ok()?;
    let v: Value = serde_json::from_str(&pkg).ok()?;
    // `test` often only runs another script (`npm run tests-only`): followed a few deep.
    let mut todo = vec![("test".to_string(), 0)];
    while let Some((name, depth)) = todo.pop() {
        let Some(script) = v
            .pointer(&format!("/scripts/{name}"))
            .and_then(Value::as_str)
        else {
            continue;
        };
        let words: Vec<&str> = script.split_whitespace().collect();
        if words
            .iter()
            .any(|w| matches!(*w, "tape" | "tap" | "node-tap" | "borp"))
            || script.contains("node --test")
        {
            return Some("tap");
        }
        if depth < 3 {
            for pair in words.windows(3) {
                if pair[0] == "npm" && pair[1] == "run" {
                    todo.push((pair[2].trim_matches(['\'', '"']).to_string(), depth + 1));
                }
            }
        }
    }
    None
}

fn toml_list(v: &[String]) -> String {
    let items: Vec<String> = v.iter().map(|s| format!("{s:?}")).collect();
    format!("[{}]", items.join(", "))
}

/// The starter contract's text.
pub fn contract_text(root: &Path, d: &Detected) -> String {
    let name: String = root
        .file_name()
        .map(|n| n.to_string_lossy().into_owned())
        .unwrap_or_else(|| "repository".into())
        .chars()
        .map(|c| {
            if c.is_ascii_alphanumeric() || c == '-' {
                c
            } else {
                '-'
            }
        })
        .collect();
    let mut s = format!(
        r#"# evident's contract for coding agents working in this repository (docs/agents.md).
# The hook reads this file at the session's baseline commit, never from the working
# tree: an agent's edit to it refuses the stop. Commit it.

[policy]
id = "{name}-agent-stop"
requires = ["test_run"]
on_unverified = "block"   # warn / record: an unverified stop goes through with a message

[hook]
no_change = "run"         # "allow": a stop with nothing changed since the baseline goes through
max_refusals = 3          # after this many refusals in a row the stop goes through, recorded unverified
"#
    );
    if d.checks.is_empty() {
        s.push_str(
            "\n# No test runner was detected (cargo, pytest, npm test, go test). Add a check:\n# [[check]]\n# id = \"tests\"\n# check_type = \"test_run\"\n# covers = { kind = \"code_change\" }\n# source = { command = { argv = [\"make\", \"test\"], inherit_env = [\"PATH\", \"HOME\"], timeout_s = 480 } }\n# expected = { exit_code = 0, failed = 0 }\n",
        );
    }
    for (id, argv, protect) in &d.checks {
        s.push_str(&format!(
            r#"
[[check]]
id = "{id}"
check_type = "test_run"
covers = {{ kind = "code_change" }}
# The tests run in a scratch copy where these paths hold their content at the session's
# baseline (the commit the agent started from): an agent's edit to a test or to the
# runner's configuration does not count. Outside a hook, pass `evident gate --baseline REV`.
source = {{ command = {{ argv = {argv}, inherit_env = ["PATH", "HOME"], timeout_s = {CHECK_TIMEOUT_S},{runner}{base_tests} protect = {{ base = "@baseline", paths = {protect} }}{env} }} }}
expected = {expected}
"#,
            argv = toml_list(argv),
            protect = toml_list(protect),
            base_tests = if id == "pytest" {
                " base_tests = \"@baseline\","
            } else {
                ""
            },
            env = environment(root, id),
            runner = npm_runner(root, id)
                .map(|r| format!(" runner = \"{r}\","))
                .unwrap_or_default(),
            expected = if id == "pytest" {
                "{ regressed = 0, added_failed = 0, ran = true }"
            } else {
                "{ exit_code = 0, failed = 0, ran = true }"
            },
        ));
    }
    s
}

/// The agent's settings file (relative to the repository) and the hook entries.
pub fn settings_path(agent: Agent) -> &'static str {
    match agent {
        Agent::ClaudeCode => ".claude/settings.json",
        Agent::Codex => ".codex/hooks.json",
        Agent::Cursor => ".cursor/hooks.json",
        Agent::Gemini => ".gemini/settings.json",
        Agent::Copilot => ".github/hooks/evident.json",
    }
}

fn quote(s: &str) -> String {
    if s.chars()
        .all(|c| c.is_ascii_alphanumeric() || "/._-+".contains(c))
    {
        s.to_string()
    } else {
        format!("'{}'", s.replace('\'', "'\\''"))
    }
}

/// The hook command line: the evident binary by absolute path. Every agent here runs
/// the command through a shell, so the path is quoted. `event` is passed as `--event`
/// for agents whose payload does not name the event (Copilot CLI).
pub fn command(binary: &Path, agent: Agent, event: &str) -> String {
    let flag = if agent.needs_event_flag() {
        format!(" --event {event}")
    } else {
        String::new()
    };
    format!(
        "{} hook {}{flag} --timeout {GATE_DEADLINE_S}",
        quote(&binary.display().to_string()),
        agent.name()
    )
}

/// One hook entry in the agent's settings format (docs/agents.md cites each).
fn entry(agent: Agent, cmd: String) -> Value {
    match agent {
        // A matcher group with a list of command hooks; timeout in seconds.
        Agent::ClaudeCode | Agent::Codex => json!({
            "hooks": [{ "type": "command", "command": cmd, "timeout": HOOK_TIMEOUT_S }]
        }),
        // Gemini CLI: the same shape, timeout in milliseconds.
        Agent::Gemini => json!({
            "hooks": [{ "name": "evident", "type": "command", "command": cmd, "timeout": HOOK_TIMEOUT_S * 1000 }]
        }),
        // Cursor: a flat list of {command, timeout}.
        Agent::Cursor => json!({ "command": cmd, "timeout": HOOK_TIMEOUT_S }),
        // Copilot CLI: a flat list of {type, bash, timeoutSec}.
        Agent::Copilot => {
            json!({ "type": "command", "bash": cmd, "timeoutSec": HOOK_TIMEOUT_S })
        }
    }
}

/// Merge evident's hooks into an agent's settings document. Existing hooks are kept;
/// an entry already running `evident … hook AGENT` is replaced in place (so running
/// init twice changes nothing, and a moved binary is updated).
pub fn merge(agent: Agent, existing: Option<Value>, binary: &Path) -> Result<Value, HookError> {
    let mut doc = existing.unwrap_or_else(|| json!({}));
    let root = doc
        .as_object_mut()
        .ok_or("the settings file is not a JSON object")?;
    if agent == Agent::Cursor || agent == Agent::Copilot {
        root.entry("version").or_insert(json!(1));
    }
    let hooks = root
        .entry("hooks")
        .or_insert_with(|| json!({}))
        .as_object_mut()
        .ok_or("\"hooks\" in the settings file is not an object")?;
    let ours = |v: &Value| -> bool {
        let c = v
            .get("command")
            .or_else(|| v.get("bash"))
            .and_then(Value::as_str)
            .unwrap_or("");
        c.contains(&format!(" hook {}", agent.name())) && c.contains("evident")
    };
    for (ev, _) in agent.registered() {
        let list = hooks
            .entry(ev.to_string())
            .or_insert_with(|| json!([]))
            .as_array_mut()
            .ok_or_else(|| format!("hooks.{ev} in the settings file is not a list"))?;
        let entry = entry(agent, command(binary, agent, ev));
        // Where the first of ours is; every other of ours goes.
        let mut at = None;
        let mut kept = Vec::with_capacity(list.len());
        for mut item in std::mem::take(list) {
            // Grouped form (matcher group with "hooks"), or a flat entry.
            // A group's other hooks are kept; ours takes the group's place.
            if let Some(inner) = item.get_mut("hooks").and_then(Value::as_array_mut) {
                if inner.iter().any(&ours) {
                    inner.retain(|h| !ours(h));
                    if at.is_none() {
                        at = Some(kept.len());
                        kept.push(entry.clone());
                    }
                    if inner.is_empty() {
                        continue;
                    }
                }
                kept.push(item);
            } else if ours(&item) {
                if at.is_none() {
                    at = Some(kept.len());
                    kept.push(entry.clone());
                }
            } else {
                kept.push(item);
            }
        }
        if at.is_none() {
            kept.push(entry);
        }
        *list = kept;
    }
    Ok(doc)
}

/// What init would write: (path, content) pairs; the contract only when absent.
pub fn plan(agent: Agent, root: &Path, binary: &Path) -> Result<Vec<(PathBuf, String)>, HookError> {
    let mut out = Vec::new();
    let contract = root.join(crate::CONTRACT_PATH);
    if !contract.exists() {
        out.push((contract, contract_text(root, &detect(root))));
    }
    let settings = root.join(settings_path(agent));
    let existing = match std::fs::read(&settings) {
        Ok(b) => Some(serde_json::from_slice(&b).map_err(|e| {
            format!(
                "{}: not JSON ({e}); hint: fix or move it, init merges into it",
                settings.display()
            )
        })?),
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => None,
        Err(e) => return Err(io_at(&settings)(e)),
    };
    let merged = merge(agent, existing, binary)?;
    let text = serde_json::to_string_pretty(&merged).map_err(json("the merged settings"))? + "\n";
    out.push((settings, text));
    Ok(out)
}

#[cfg(test)]
mod starter {
    use super::*;

    fn write(dir: &Path, rel: &str, text: &str) {
        let p = dir.join(rel);
        std::fs::create_dir_all(p.parent().unwrap()).unwrap();
        std::fs::write(p, text).unwrap();
    }

    /// The corpus's refusals of honest work: a pytest project with no configuration
    /// file naming pytest got no check; a `python -m unittest` project with a tox.ini
    /// got pytest; `npm test` running tape printed TAP nobody read.
    #[test]
    fn the_runner_the_project_really_uses() {
        let d = tempfile::tempdir().unwrap();
        write(
            d.path(),
            "setup.py",
            "from setuptools import setup\nsetup()\n",
        );
        write(d.path(), "pkg/tests/test_x.py", "def test_x():\n    pass\n");
        let c = contract_text(d.path(), &detect(d.path()));
        assert!(
            c.contains("\"pytest\"") && c.contains("base_tests = \"@baseline\""),
            "{c}"
        );
        assert!(c.contains("regressed = 0"), "{c}");

        write(
            d.path(),
            "tox.ini",
            "[testenv]\ncommands = python -m unittest discover\n",
        );
        let c = contract_text(d.path(), &detect(d.path()));
        assert!(
            c.contains("\"unittest\"") && !c.contains("\"pytest\""),
            "{c}"
        );

        let n = tempfile::tempdir().unwrap();
        write(
            n.path(),
            "package.json",
            r#"{"scripts": {"test": "npm run tests-only", "tests-only": "nyc tape 'test/**/*.js'"}}"#,
        );
        let c = contract_text(n.path(), &detect(n.path()));
        assert!(c.contains("runner = \"tap\""), "{c}");
        // Twin: a runner evident reads by its own output gets no runner named.
        write(n.path(), "package.json", r#"{"scripts": {"test": "jest"}}"#);
        let c = contract_text(n.path(), &detect(n.path()));
        assert!(!c.contains("runner ="), "{c}");
    }
}
