//! `evident hook AGENT`, `evident claim --from` and `evident init`, driven as the
//! agents drive them: a real git repository in a temporary directory, real pytest, a
//! transcript in the agent's format, the event JSON on stdin and the agent's
//! environment (`CLAUDE_PROJECT_DIR`).
//!
//! Fixture formats: the Claude Code event fields (`session_id`, `transcript_path`,
//! `cwd`, `hook_event_name`, `stop_hook_active`, `last_assistant_message`) and
//! transcript lines (`type: user|assistant`, `message.content` blocks `tool_use` /
//! `tool_result`) follow Anthropic's Claude Code hooks reference
//! (code.claude.com/docs/en/hooks); the Codex event and Stop output follow the JSON
//! schemas in openai/codex `codex-rs/hooks/schema/generated/stop.command.{input,output}.schema.json`;
//! the Codex rollout lines (`{timestamp, type, payload}` with `response_item` /
//! `event_msg`) follow the rollout files Codex writes under `~/.codex/sessions`.

use std::path::Path;

use serde_json::{Value, json};

mod bench;
mod red13;
mod world;

use world::{World, refused, world};

use crate::support::{evident, evident_without_ledger, git};

const CONTRACT: &str = r#"
[policy]
id = "calc"
requires = ["test_run"]

[hook]
max_refusals = 3

[[check]]
id = "pytest"
check_type = "test_run"
covers = { kind = "code_change" }
source = { command = { argv = ["python3", "-m", "pytest", "-q", "-p", "no:cacheprovider"], inherit_env = ["PATH", "HOME"], env = { PYTHONDONTWRITEBYTECODE = "1" }, timeout_s = 120 } }
expected = { exit_code = 0, failed = 0 }
"#;

/// A Claude Code transcript: the user's request, an Edit of `file` and its result,
/// and the agent's last words.
fn claude_transcript(w: &World, file: &str, last: &str) {
    let lines = [
        json!({"type": "user", "sessionId": "s1", "message": {"role": "user", "content": "Fix add() in calc.py"}}),
        json!({"type": "assistant", "message": {"role": "assistant", "content": [
            {"type": "tool_use", "id": "toolu_1", "name": "Edit", "input": {"file_path": w.repo.join(file), "old_string": "a - b", "new_string": "a + b"}}
        ]}}),
        json!({"type": "user", "message": {"role": "user", "content": [
            {"type": "tool_result", "tool_use_id": "toolu_1", "content": "ok", "is_error": false}
        ]}, "toolUseResult": {"filePath": w.repo.join(file)}}),
        json!({"type": "assistant", "message": {"role": "assistant", "content": [{"type": "text", "text": last}]}}),
    ];
    let text: Vec<String> = lines.iter().map(Value::to_string).collect();
    std::fs::write(&w.transcript, text.join("\n") + "\n").unwrap();
}

fn event(w: &World, name: &str, active: bool) -> Value {
    json!({
        "session_id": "s1",
        "transcript_path": w.transcript,
        "cwd": w.repo,
        "permission_mode": "default",
        "hook_event_name": name,
        "stop_hook_active": active,
        "last_assistant_message": "Fixed add(); all tests pass.",
    })
}

fn hook(w: &World, agent: &str, ev: &Value) -> (Value, String) {
    let out = evident_without_ledger()
        .args(["hook", agent, "--state-dir"])
        .arg(&w.state)
        .env("CLAUDE_PROJECT_DIR", &w.repo)
        .write_stdin(ev.to_string())
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(0), "{out:?}");
    let stdout = String::from_utf8_lossy(&out.stdout).to_string();
    let stderr = String::from_utf8_lossy(&out.stderr).to_string();
    let v = if stdout.trim().is_empty() {
        Value::Null
    } else {
        serde_json::from_str(&stdout).unwrap_or_else(|e| panic!("{e}: {stdout}"))
    };
    (v, stderr)
}

fn allowed(v: &Value) {
    assert!(v.get("decision").is_none(), "{v}");
}

fn start(w: &World, agent: &str) {
    let (v, err) = hook(w, agent, &event(w, "SessionStart", false));
    assert_eq!(v, Value::Null, "{err}");
    assert!(err.contains("session baseline"), "{err}");
}

#[test]
#[cfg_attr(
    not(evident_services),
    ignore = "needs pytest: .ci/run installs it and runs this (see README, Development)"
)]
fn claude_code_failing_test_refused_then_the_fix_allowed_and_reused() {
    let w = world(CONTRACT);
    start(&w, "claude-code");
    // A wrong fix: the test fails.
    std::fs::write(w.repo.join("calc.py"), "def add(a, b):\n    return a * b\n").unwrap();
    claude_transcript(&w, "calc.py", "Fixed add(); all tests pass.");
    let (v, _) = hook(&w, "claude-code", &event(&w, "Stop", false));
    let reason = refused(&v);
    assert!(reason.contains("check \"pytest\""), "{reason}");
    assert!(
        reason.contains("exit_code expected 0 but observed 1"),
        "{reason}"
    );
    // The agent's fix is allowed on the next stop.
    std::fs::write(w.repo.join("calc.py"), "def add(a, b):\n    return a + b\n").unwrap();
    let (v, err) = hook(&w, "claude-code", &event(&w, "Stop", true));
    allowed(&v);
    assert!(
        v["systemMessage"].as_str().unwrap().contains("verified"),
        "{v} {err}"
    );
    assert!(err.contains("recorded #"), "{err}");
    // Nothing changed since: the decision is reused, nothing rerun.
    let (v, err) = hook(&w, "claude-code", &event(&w, "Stop", false));
    allowed(&v);
    assert!(err.contains("reused"), "{err}");
}

#[test]
#[cfg_attr(
    not(evident_services),
    ignore = "needs pytest: .ci/run installs it and runs this (see README, Development)"
)]
fn loop_guard_lets_the_third_refusal_through_and_stop_hook_active_alone_never_does() {
    let w = world(CONTRACT);
    start(&w, "claude-code");
    std::fs::write(w.repo.join("calc.py"), "def add(a, b):\n    return 0\n").unwrap();
    claude_transcript(&w, "calc.py", "done");
    // stop_hook_active = true from the first stop on: still refused.
    for _ in 0..2 {
        let (v, _) = hook(&w, "claude-code", &event(&w, "Stop", true));
        refused(&v);
    }
    let (v, _) = hook(&w, "claude-code", &event(&w, "Stop", true));
    allowed(&v);
    let m = v["systemMessage"].as_str().unwrap();
    assert!(m.contains("NOT verified") && m.contains("3 times"), "{m}");
}

#[test]
#[cfg_attr(
    not(evident_services),
    ignore = "needs pytest: .ci/run installs it and runs this (see README, Development)"
)]
fn a_contract_edited_in_the_tree_refuses_the_stop() {
    let w = world(CONTRACT);
    start(&w, "claude-code");
    std::fs::write(w.repo.join("calc.py"), "def add(a, b):\n    return a * b\n").unwrap();
    // The attack: weaken the contract in the working tree (tests no longer required).
    std::fs::write(
        w.repo.join(".evident/contract.toml"),
        CONTRACT.replace("python3\", \"-m\", \"pytest\", \"-q\"", "true\", \"-q\""),
    )
    .unwrap();
    claude_transcript(&w, "calc.py", "done");
    let (v, _) = hook(&w, "claude-code", &event(&w, "Stop", false));
    assert!(refused(&v).contains("differs from the baseline"), "{v}");
    // Honest twin: restored contract, real fix → verified.
    std::fs::write(w.repo.join(".evident/contract.toml"), CONTRACT).unwrap();
    std::fs::write(w.repo.join("calc.py"), "def add(a, b):\n    return a + b\n").unwrap();
    let (v, _) = hook(&w, "claude-code", &event(&w, "Stop", false));
    allowed(&v);
}

#[test]
fn a_contract_committed_during_the_session_is_still_read_at_the_baseline() {
    let w = world(CONTRACT);
    start(&w, "claude-code");
    std::fs::write(w.repo.join("calc.py"), "def add(a, b):\n    return a * b\n").unwrap();
    std::fs::write(
        w.repo.join(".evident/contract.toml"),
        CONTRACT.replace(
            "[\"python3\", \"-m\", \"pytest\", \"-q\", \"-p\", \"no:cacheprovider\"]",
            "[\"true\"]",
        ),
    )
    .unwrap();
    git(&w.repo, &["commit", "-qam", "weaken"]);
    claude_transcript(&w, "calc.py", "done");
    let (v, _) = hook(&w, "claude-code", &event(&w, "Stop", false));
    assert!(refused(&v).contains("differs from the baseline"), "{v}");
}

#[test]
#[cfg_attr(
    not(evident_services),
    ignore = "needs pytest: .ci/run installs it and runs this (see README, Development)"
)]
fn git_config_programs_never_run_and_core_worktree_is_refused() {
    let w = world(CONTRACT);
    start(&w, "claude-code");
    let canary = w.repo.parent().unwrap().join("canary");
    // The attack: a clean filter (git status would run it) and an fsmonitor.
    git(
        &w.repo,
        &[
            "config",
            "filter.x.clean",
            &format!("touch {}", canary.display()),
        ],
    );
    git(
        &w.repo,
        &[
            "config",
            "core.fsmonitor",
            &format!("touch {}", canary.display()),
        ],
    );
    std::fs::write(w.repo.join(".gitattributes"), "* filter=x\n").unwrap();
    std::fs::write(w.repo.join("calc.py"), "def add(a, b):\n    return a + b\n").unwrap();
    claude_transcript(&w, "calc.py", "done");
    let (v, _) = hook(&w, "claude-code", &event(&w, "Stop", false));
    assert!(!canary.exists(), "a program from .git/config ran");
    allowed(&v); // honest twin: the fix itself verifies with that config present
    // core.worktree cannot be neutralised: refused, never a crash.
    git(&w.repo, &["config", "core.worktree", "/tmp"]);
    let (v, _) = hook(&w, "claude-code", &event(&w, "Stop", false));
    assert!(refused(&v).contains("core.worktree"), "{v}");
}

#[test]
#[cfg_attr(
    not(evident_services),
    ignore = "needs pytest: .ci/run installs it and runs this (see README, Development)"
)]
fn a_forged_state_entry_is_refused() {
    let w = world(CONTRACT);
    start(&w, "claude-code");
    std::fs::write(w.repo.join("calc.py"), "def add(a, b):\n    return a * b\n").unwrap();
    claude_transcript(&w, "calc.py", "done");
    let (v, _) = hook(&w, "claude-code", &event(&w, "Stop", false));
    refused(&v);
    // The attack: commit the broken change and move the session's baseline to it
    // (so "nothing changed"), zero the refusals and forge a verified decision.
    git(&w.repo, &["commit", "-qam", "wip"]);
    let head = git(&w.repo, &["rev-parse", "HEAD"]);
    let sessions = w.state.join("sessions");
    let file = std::fs::read_dir(&sessions)
        .unwrap()
        .next()
        .unwrap()
        .unwrap()
        .path();
    let mut doc: Value = serde_json::from_slice(&std::fs::read(&file).unwrap()).unwrap();
    doc["session"]["baseline"] = json!(head);
    doc["session"]["refusals"] = json!(0);
    doc["session"]["last"]["state"] = json!("verified");
    std::fs::write(&file, doc.to_string()).unwrap();
    let (v, _) = hook(&w, "claude-code", &event(&w, "Stop", false));
    assert!(refused(&v).contains("MAC"), "{v}");
    // Deleting the entry is no escape either: the baseline falls back to the
    // merge-base with the default branch, and the change is still there… committed
    // on main itself, so the merge-base is HEAD; the checks still run and fail.
    std::fs::remove_file(&file).unwrap();
    let (v, _) = hook(&w, "claude-code", &event(&w, "Stop", false));
    refused(&v);
}

#[test]
#[cfg_attr(
    not(evident_services),
    ignore = "needs pytest: .ci/run installs it and runs this (see README, Development)"
)]
fn a_lying_transcript_is_a_finding_and_does_not_decide() {
    let w = world(CONTRACT);
    start(&w, "claude-code");
    // The transcript claims an edit of calc.py; git shows only other.py changed.
    std::fs::write(w.repo.join("other.py"), "x = 1\n").unwrap();
    claude_transcript(&w, "calc.py", "Fixed add(); all tests pass.");
    let out = evident()
        .args(["claim", "--from", "claude-code"])
        .arg(&w.transcript)
        .arg("--repo")
        .arg(&w.repo)
        .args(["--base", "HEAD"])
        .output()
        .unwrap();
    assert!(out.status.success(), "{out:?}");
    let claim: Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(claim["task"]["description"], "Fix add() in calc.py");
    assert_eq!(claim["claimed_outcome"], "Fixed add(); all tests pass.");
    let targets: Vec<&str> = claim["mutations"]
        .as_array()
        .unwrap()
        .iter()
        .map(|m| m["target"].as_str().unwrap())
        .collect();
    assert_eq!(targets, ["other.py"]);
    let findings = claim["x_observed"]["findings"].to_string();
    assert!(
        findings.contains("write to calc.py") && findings.contains("lost or reverted"),
        "{findings}"
    );
    assert!(findings.contains("other.py changed"), "{findings}");
    // The hook refuses: the test still fails whatever the transcript says.
    let (v, _) = hook(&w, "claude-code", &event(&w, "Stop", false));
    let reason = refused(&v);
    assert!(reason.contains("lost or reverted"), "{reason}");
    // Honest twin: the edit really made, the transcript agrees → no finding, verified.
    std::fs::remove_file(w.repo.join("other.py")).unwrap();
    std::fs::write(w.repo.join("calc.py"), "def add(a, b):\n    return a + b\n").unwrap();
    let (v, err) = hook(&w, "claude-code", &event(&w, "Stop", false));
    allowed(&v);
    assert!(!err.contains("finding"), "{err}");
}

#[test]
fn internal_errors_refuse_and_never_crash() {
    let w = world(CONTRACT);
    // Not JSON on stdin.
    let out = evident()
        .args(["hook", "claude-code", "--state-dir"])
        .arg(&w.state)
        .write_stdin("not json")
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(0));
    let v: Value = serde_json::from_slice(&out.stdout).unwrap();
    assert!(refused(&v).contains("not JSON"), "{v}");
    // Not a repository.
    let mut ev = event(&w, "Stop", false);
    ev["cwd"] = json!(w.state.parent().unwrap());
    let out = evident()
        .args(["hook", "codex", "--state-dir"])
        .arg(&w.state)
        .write_stdin(ev.to_string())
        .output()
        .unwrap();
    let v: Value = serde_json::from_slice(&out.stdout).unwrap();
    assert!(refused(&v).contains("could not check this stop"), "{v}");
    // No contract at the baseline.
    let w2 = world(CONTRACT);
    git(&w2.repo, &["rm", "-q", ".evident/contract.toml"]);
    git(&w2.repo, &["commit", "-qm", "no contract"]);
    let (v, _) = hook(&w2, "claude-code", &event(&w2, "Stop", false));
    assert!(refused(&v).contains("evident init"), "{v}");
    // A state directory inside the working tree is refused.
    let out = evident()
        .args(["hook", "claude-code", "--state-dir"])
        .arg(w.repo.join(".state"))
        .write_stdin(event(&w, "Stop", false).to_string())
        .output()
        .unwrap();
    let v: Value = serde_json::from_slice(&out.stdout).unwrap();
    assert!(refused(&v).contains("inside the repository"), "{v}");
}

/// An internal error once the session is known (here: no contract at the baseline)
/// counts toward the loop guard like any refusal: refused twice, naming the error and
/// the count, then the stop goes through with the user told the work is NOT verified.
/// Before, a set-up evident could not check refused every stop for ever. Its twin: the
/// owner's fix (a contract at the baseline) gates again, and a failing test is refused.
#[test]
fn internal_errors_count_toward_the_loop_guard() {
    let w = world(CONTRACT);
    git(&w.repo, &["rm", "-q", ".evident/contract.toml"]);
    git(&w.repo, &["commit", "-qm", "no contract"]);
    for n in 1..=2 {
        let (v, _) = hook(&w, "claude-code", &event(&w, "Stop", n > 1));
        let reason = refused(&v);
        assert!(reason.contains("could not check this stop"), "{reason}");
        assert!(
            reason.contains(&format!("refusal {n} of at most 3")),
            "{reason}"
        );
    }
    let (v, _) = hook(&w, "claude-code", &event(&w, "Stop", true));
    allowed(&v);
    let told = v["systemMessage"].as_str().unwrap_or_default();
    assert!(
        told.contains("NOT verified") && told.contains("3 times"),
        "{v}"
    );
    // The twin: with the owner's contract back at the baseline, the checks run again.
    let w = world(CONTRACT);
    std::fs::write(w.repo.join("calc.py"), WRONG).unwrap();
    let (v, _) = hook(&w, "claude-code", &event(&w, "Stop", false));
    assert!(refused(&v).contains("pytest"), "{v}");
}

#[test]
fn nothing_changed_still_runs_the_checks_unless_the_contract_allows() {
    let w = world(CONTRACT);
    start(&w, "claude-code");
    let (v, _) = hook(&w, "claude-code", &event(&w, "Stop", false));
    refused(&v); // no mutation: a "fixed it" with no change is a false done
    let w = world(&CONTRACT.replace("[hook]\n", "[hook]\nno_change = \"allow\"\n"));
    start(&w, "claude-code");
    let (v, _) = hook(&w, "claude-code", &event(&w, "Stop", false));
    allowed(&v);
}

/// The keys Codex's Stop output schema allows (additionalProperties: false).
fn codex_valid(v: &Value) {
    let allowed = [
        "continue",
        "decision",
        "reason",
        "stopReason",
        "suppressOutput",
        "systemMessage",
    ];
    for k in v.as_object().unwrap().keys() {
        assert!(
            allowed.contains(&k.as_str()),
            "key {k} not in Codex's Stop output schema"
        );
    }
    if v.get("decision").is_some() {
        assert_eq!(v["decision"], "block");
        assert!(v["reason"].as_str().is_some_and(|r| !r.trim().is_empty()));
    }
    for k in ["systemMessage", "stopReason", "reason"] {
        assert!(v.get(k).is_none_or(|x| x.is_string() || x.is_null()));
    }
}

/// A Codex rollout: session meta, the user's message, an apply_patch call and its
/// output, the agent's last message.
fn codex_rollout(w: &World) {
    let patch = "*** Begin Patch\n*** Update File: calc.py\n@@\n-    return a - b\n+    return a + b\n*** End Patch\n";
    let lines = [
        json!({"timestamp": "2026-12-01T10:00:00Z", "type": "session_meta", "payload": {"id": "s1", "cwd": w.repo}}),
        json!({"timestamp": "2026-12-01T10:00:01Z", "type": "response_item", "payload": {"type": "message", "role": "user", "content": [{"type": "input_text", "text": "<environment_context>...</environment_context>"}]}}),
        json!({"timestamp": "2026-12-01T10:00:01Z", "type": "event_msg", "payload": {"type": "user_message", "message": "Fix add() in calc.py"}}),
        json!({"timestamp": "2026-12-01T10:00:02Z", "type": "response_item", "payload": {"type": "custom_tool_call", "name": "apply_patch", "call_id": "call_1", "input": patch, "status": "completed"}}),
        json!({"timestamp": "2026-12-01T10:00:03Z", "type": "response_item", "payload": {"type": "custom_tool_call_output", "call_id": "call_1", "output": "Success. Updated the following files:\nM calc.py\n"}}),
        json!({"timestamp": "2026-12-01T10:00:04Z", "type": "response_item", "payload": {"type": "message", "role": "assistant", "content": [{"type": "output_text", "text": "Fixed add()."}]}}),
    ];
    let text: Vec<String> = lines.iter().map(Value::to_string).collect();
    std::fs::write(&w.transcript, text.join("\n") + "\n").unwrap();
}

#[test]
#[cfg_attr(
    not(evident_services),
    ignore = "needs pytest: .ci/run installs it and runs this (see README, Development)"
)]
fn codex_answers_only_in_its_closed_schema() {
    let w = world(CONTRACT);
    let mut ev = event(&w, "SessionStart", false);
    ev["model"] = json!("gpt-5-codex");
    ev["source"] = json!("startup");
    hook(&w, "codex", &ev);
    codex_rollout(&w);
    std::fs::write(w.repo.join("calc.py"), "def add(a, b):\n    return a * b\n").unwrap();
    let mut stop = event(&w, "Stop", false);
    stop["turn_id"] = json!("t1");
    stop["model"] = json!("gpt-5-codex");
    let (v, _) = hook(&w, "codex", &stop);
    codex_valid(&v);
    assert!(refused(&v).contains("pytest"));
    std::fs::write(w.repo.join("calc.py"), "def add(a, b):\n    return a + b\n").unwrap();
    let (v, err) = hook(&w, "codex", &stop);
    codex_valid(&v);
    allowed(&v);
    assert!(
        !err.contains("finding"),
        "the rollout's patch names calc.py: {err}"
    );
}

/// `evident init AGENT` into the world's repository, committed (as a developer would),
/// and the settings file it wrote.
fn init_committed(w: &World, agent: &str) -> Value {
    evident()
        .args(["init", agent, "--repo"])
        .arg(&w.repo)
        .assert()
        .success();
    git(&w.repo, &["add", "-A"]);
    git(&w.repo, &["commit", "-qm", "evident hooks"]);
    let path = match agent {
        "cursor" => ".cursor/hooks.json",
        "gemini" => ".gemini/settings.json",
        "copilot" => ".github/hooks/evident.json",
        _ => unreachable!(),
    };
    serde_json::from_str(&std::fs::read_to_string(w.repo.join(path)).unwrap()).unwrap()
}

/// Run a registered hook command as the agent runs it: the command string from the
/// settings file through a shell (Cursor, Gemini CLI and Copilot CLI all run a shell
/// command), in `cwd`, with the agent's environment and the event JSON on stdin. The
/// state directory is the default one, under XDG_STATE_HOME.
fn run_registered(w: &World, cmd: &str, env: &[(&str, String)], ev: &Value) -> (Value, String) {
    let mut c = std::process::Command::new("sh");
    c.arg("-c")
        .arg(cmd)
        .current_dir(&w.repo)
        .env("XDG_STATE_HOME", &w.state)
        .env_remove("EVIDENT_LEDGER")
        .env_remove("CLAUDE_PROJECT_DIR")
        .stdin(std::process::Stdio::piped())
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped());
    for (k, v) in env {
        c.env(k, v);
    }
    let mut child = c.spawn().unwrap();
    {
        use std::io::Write;
        let mut stdin = child.stdin.take().unwrap();
        stdin.write_all(ev.to_string().as_bytes()).unwrap();
    }
    let out = child.wait_with_output().unwrap();
    let stdout = String::from_utf8_lossy(&out.stdout).to_string();
    let stderr = String::from_utf8_lossy(&out.stderr).to_string();
    assert_eq!(out.status.code(), Some(0), "{cmd}: {stdout} {stderr}");
    let v: Value = serde_json::from_str(&stdout).unwrap_or_else(|e| {
        panic!("{cmd}: stdout is not one JSON document ({e}): {stdout:?} {stderr}")
    });
    assert!(v.is_object(), "{v}");
    (v, stderr)
}

/// Every key of `v` is one the agent's protocol documents for that answer.
fn only_keys(v: &Value, allowed: &[&str], agent: &str) {
    for k in v.as_object().unwrap().keys() {
        assert!(
            allowed.contains(&k.as_str()),
            "{agent}: key {k} is not in its protocol: {v}"
        );
    }
}

/// With `no_change = "allow"` a wrong session baseline would let a committed wrong
/// fix through as "nothing changed": these tests commit the wrong fix, so they also
/// check that the session start's baseline is the one the stop uses.
fn allow_no_change() -> String {
    CONTRACT.replace("[hook]\n", "[hook]\nno_change = \"allow\"\n")
}

const WRONG: &str = "def add(a, b):\n    return a * b\n";
const FIXED: &str = "def add(a, b):\n    return a + b\n";

/// Cursor, as its hooks page describes it: every event carries the common fields
/// (`conversation_id`, `generation_id`, `model`, `hook_event_name`, `cursor_version`,
/// `workspace_roots`, `user_email`, `transcript_path`); `stop` adds `status` and
/// `loop_count`, and is answered with `followup_message` only. Cursor sets
/// `CURSOR_PROJECT_DIR` (and `CLAUDE_PROJECT_DIR` as an alias).
#[test]
#[cfg_attr(
    not(evident_services),
    ignore = "needs pytest: .ci/run installs it and runs this (see README, Development)"
)]
fn cursor_driven_as_cursor_drives_it() {
    let w = world(&allow_no_change());
    let settings = init_committed(&w, "cursor");
    assert_eq!(settings["version"], 1);
    let cmd = |ev: &str| {
        settings["hooks"][ev][0]["command"]
            .as_str()
            .unwrap()
            .to_string()
    };
    let env = vec![
        ("CURSOR_PROJECT_DIR", w.repo.display().to_string()),
        ("CLAUDE_PROJECT_DIR", w.repo.display().to_string()),
        ("CURSOR_VERSION", "2.3.35".to_string()),
    ];
    let common = |name: &str| {
        json!({
            "conversation_id": "5b3c1f0e-conv",
            "generation_id": "gen-1",
            "model": "claude-4.6-sonnet",
            "hook_event_name": name,
            "cursor_version": "2.3.35",
            "workspace_roots": [w.repo],
            "user_email": null,
            "transcript_path": null,
        })
    };
    let mut start = common("sessionStart");
    start["session_id"] = json!("5b3c1f0e-conv");
    start["is_background_agent"] = json!(false);
    start["composer_mode"] = json!("agent");
    let (v, err) = run_registered(&w, &cmd("sessionStart"), &env, &start);
    assert_eq!(v, json!({}), "{err}");
    assert!(err.contains("session baseline"), "{err}");
    // The wrong fix, committed: only the session start's baseline shows it.
    std::fs::write(w.repo.join("calc.py"), WRONG).unwrap();
    git(&w.repo, &["commit", "-qam", "fix add"]);
    let stop = |status: &str, loops: u64| {
        let mut e = common("stop");
        e["status"] = json!(status);
        e["loop_count"] = json!(loops);
        e
    };
    let (v, _) = run_registered(&w, &cmd("stop"), &env, &stop("completed", 0));
    only_keys(&v, &["followup_message"], "cursor");
    let m = v["followup_message"].as_str().unwrap();
    assert!(
        m.contains("check \"pytest\"") && m.contains("exit_code expected 0 but observed 1"),
        "{m}"
    );
    // A loop the user aborted (or that failed) claims nothing: no follow-up restarts it.
    let (v, err) = run_registered(&w, &cmd("stop"), &env, &stop("aborted", 1));
    assert_eq!(v, json!({}), "{err}");
    assert!(err.contains("not checked"), "{err}");
    // The agent's fix: allowed, nothing submitted.
    std::fs::write(w.repo.join("calc.py"), FIXED).unwrap();
    let (v, err) = run_registered(&w, &cmd("stop"), &env, &stop("completed", 1));
    assert_eq!(v, json!({}), "{err}");
    assert!(err.contains("evident: verified"), "{err}");
    // A subagent's stop is gated the same way.
    std::fs::write(w.repo.join("calc.py"), WRONG).unwrap();
    let mut sub = common("subagentStop");
    sub["status"] = json!("completed");
    let (v, _) = run_registered(&w, &cmd("subagentStop"), &env, &sub);
    assert!(
        v["followup_message"].as_str().unwrap().contains("pytest"),
        "{v}"
    );
    // An internal error (the workspace is no repository) refuses, never a crash.
    let mut e = stop("completed", 0);
    e["workspace_roots"] = json!([w.state.parent().unwrap()]);
    let (v, _) = run_registered(&w, &cmd("stop"), &env, &e);
    only_keys(&v, &["followup_message"], "cursor");
    assert!(
        v["followup_message"]
            .as_str()
            .unwrap()
            .contains("could not check this stop"),
        "{v}"
    );
}

/// The keys of Gemini CLI's HookOutput (packages/core/src/hooks/types.ts; the hooks
/// reference's "Common output fields").
const GEMINI_OUTPUT: &[&str] = &[
    "continue",
    "stopReason",
    "suppressOutput",
    "systemMessage",
    "decision",
    "reason",
    "hookSpecificOutput",
];

/// Gemini CLI, as its hooks reference and hookRunner describe it: the base input
/// (`session_id`, `transcript_path`, `cwd`, `hook_event_name`, `timestamp`),
/// AfterAgent's `prompt`, `prompt_response` and `stop_hook_active`; the command runs
/// through the shell in `cwd` with GEMINI_PROJECT_DIR, GEMINI_CWD, GEMINI_SESSION_ID
/// and CLAUDE_PROJECT_DIR set to it.
#[test]
#[cfg_attr(
    not(evident_services),
    ignore = "needs pytest: .ci/run installs it and runs this (see README, Development)"
)]
fn gemini_driven_as_gemini_cli_drives_it() {
    let w = world(&allow_no_change());
    let settings = init_committed(&w, "gemini");
    let cmd = |ev: &str| {
        settings["hooks"][ev][0]["hooks"][0]["command"]
            .as_str()
            .unwrap()
            .to_string()
    };
    let repo = w.repo.display().to_string();
    let env = vec![
        ("GEMINI_PROJECT_DIR", repo.clone()),
        ("GEMINI_CWD", repo.clone()),
        ("GEMINI_SESSION_ID", "g-session".to_string()),
        ("CLAUDE_PROJECT_DIR", repo.clone()),
    ];
    let base = |name: &str| {
        json!({
            "session_id": "g-session",
            "transcript_path": w.transcript.with_extension("json"),
            "cwd": w.repo,
            "hook_event_name": name,
            "timestamp": "2026-12-01T12:00:00.000Z",
        })
    };
    let mut start = base("SessionStart");
    start["source"] = json!("startup");
    let (v, err) = run_registered(&w, &cmd("SessionStart"), &env, &start);
    assert_eq!(v, json!({}), "{err}");
    assert!(err.contains("session baseline"), "{err}");
    std::fs::write(w.repo.join("calc.py"), WRONG).unwrap();
    git(&w.repo, &["commit", "-qam", "fix add"]);
    let after = |active: bool| {
        let mut e = base("AfterAgent");
        e["prompt"] = json!("Fix add() in calc.py");
        e["prompt_response"] = json!("Fixed add(); all tests pass.");
        e["stop_hook_active"] = json!(active);
        e
    };
    let (v, _) = run_registered(&w, &cmd("AfterAgent"), &env, &after(false));
    only_keys(&v, GEMINI_OUTPUT, "gemini");
    assert_eq!(v["decision"], "deny", "{v}");
    let r = v["reason"].as_str().unwrap();
    assert!(
        r.contains("check \"pytest\"") && r.contains("exit_code expected 0 but observed 1"),
        "{r}"
    );
    // The retry turn (stop_hook_active) with the fix: allowed, the user told.
    std::fs::write(w.repo.join("calc.py"), FIXED).unwrap();
    let (v, _) = run_registered(&w, &cmd("AfterAgent"), &env, &after(true));
    only_keys(&v, GEMINI_OUTPUT, "gemini");
    assert_eq!(v["decision"], "allow", "{v}");
    assert!(
        v["systemMessage"].as_str().unwrap().contains("verified"),
        "{v}"
    );
    // An internal error refuses, never a crash.
    let mut e = after(false);
    e["cwd"] = json!(w.state.parent().unwrap());
    let (v, _) = run_registered(&w, &cmd("AfterAgent"), &env, &e);
    assert_eq!(v["decision"], "deny", "{v}");
    assert!(
        v["reason"]
            .as_str()
            .unwrap()
            .contains("could not check this stop"),
        "{v}"
    );
}

/// GitHub Copilot CLI, as its CLI hooks reference describes it: camelCase events
/// carry `sessionId`, `timestamp` (ms), `cwd` and, on agentStop / subagentStop,
/// `transcriptPath` and `stopReason` — and no event name, which the registered
/// command passes with `--event`. agentStop is answered with `decision` and `reason`.
#[test]
#[cfg_attr(
    not(evident_services),
    ignore = "needs pytest: .ci/run installs it and runs this (see README, Development)"
)]
fn copilot_driven_as_copilot_cli_drives_it() {
    let w = world(&allow_no_change());
    let settings = init_committed(&w, "copilot");
    assert_eq!(settings["version"], 1);
    let cmd = |ev: &str| {
        settings["hooks"][ev][0]["bash"]
            .as_str()
            .unwrap()
            .to_string()
    };
    for ev in ["sessionStart", "agentStop", "subagentStop"] {
        assert!(cmd(ev).contains(&format!("--event {ev} ")), "{}", cmd(ev));
    }
    let env: Vec<(&str, String)> = Vec::new();
    let start = json!({
        "sessionId": "cp-session",
        "timestamp": 1_764_590_400_000_u64,
        "cwd": w.repo,
        "source": "new",
        "initialPrompt": "Fix add() in calc.py",
    });
    let (v, err) = run_registered(&w, &cmd("sessionStart"), &env, &start);
    assert_eq!(v, json!({}), "{err}");
    assert!(err.contains("session baseline"), "{err}");
    std::fs::write(w.repo.join("calc.py"), WRONG).unwrap();
    git(&w.repo, &["commit", "-qam", "fix add"]);
    let stop = json!({
        "sessionId": "cp-session",
        "timestamp": 1_764_590_500_000_u64,
        "cwd": w.repo,
        "transcriptPath": w.transcript,
        "stopReason": "end_turn",
    });
    let (v, _) = run_registered(&w, &cmd("agentStop"), &env, &stop);
    only_keys(&v, &["decision", "reason"], "copilot");
    assert_eq!(v["decision"], "block", "{v}");
    let r = v["reason"].as_str().unwrap();
    assert!(
        r.contains("check \"pytest\"") && r.contains("exit_code expected 0 but observed 1"),
        "{r}"
    );
    let mut sub = stop.clone();
    sub["agentName"] = json!("explore");
    let (v, _) = run_registered(&w, &cmd("subagentStop"), &env, &sub);
    assert_eq!(v["decision"], "block", "{v}");
    // A command registered without --event cannot tell a stop from anything else:
    // refused, with the hint to register again.
    let bare = cmd("agentStop").replace(" --event agentStop", "");
    let (v, _) = run_registered(&w, &bare, &env, &stop);
    assert_eq!(v["decision"], "block", "{v}");
    assert!(
        v["reason"]
            .as_str()
            .unwrap()
            .contains("evident init copilot"),
        "{v}"
    );
    // The fix: allowed.
    std::fs::write(w.repo.join("calc.py"), FIXED).unwrap();
    let (v, err) = run_registered(&w, &cmd("agentStop"), &env, &stop);
    only_keys(&v, &["decision", "reason"], "copilot");
    assert_eq!(v["decision"], "allow", "{v}");
    assert!(err.contains("evident: verified"), "{err}");
    // An internal error refuses, never a crash.
    let mut e = stop.clone();
    e["cwd"] = json!(w.state.parent().unwrap());
    let (v, _) = run_registered(&w, &cmd("agentStop"), &env, &e);
    assert_eq!(v["decision"], "block", "{v}");
    assert!(
        v["reason"]
            .as_str()
            .unwrap()
            .contains("could not check this stop"),
        "{v}"
    );
}

/// The JSON Schema keywords the vendored Gemini settings schema uses: type,
/// properties, additionalProperties, items, $ref (to #/$defs/…); the rest
/// (title, description, default, $comment) are annotations.
fn schema_errors(schema: &Value, root: &Value, v: &Value, at: &str, errs: &mut Vec<String>) {
    let schema = match schema.get("$ref").and_then(Value::as_str) {
        Some(r) => {
            let name = r.strip_prefix("#/$defs/").expect("only local $defs refs");
            &root["$defs"][name]
        }
        None => schema,
    };
    for k in schema.as_object().unwrap().keys() {
        assert!(
            [
                "type",
                "properties",
                "additionalProperties",
                "items",
                "$ref",
                "title",
                "description",
                "default",
                "$comment",
                "$schema",
                "$defs"
            ]
            .contains(&k.as_str()),
            "schema keyword {k} not handled by this validator"
        );
    }
    if let Some(t) = schema.get("type").and_then(Value::as_str) {
        let ok = match t {
            "object" => v.is_object(),
            "array" => v.is_array(),
            "string" => v.is_string(),
            "number" => v.is_number(),
            "boolean" => v.is_boolean(),
            _ => panic!("type {t}"),
        };
        if !ok {
            errs.push(format!("{at}: expected {t}, found {v}"));
            return;
        }
    }
    if let Some(o) = v.as_object() {
        let props = schema.get("properties").and_then(Value::as_object);
        for (k, x) in o {
            match props.and_then(|p| p.get(k)) {
                Some(s) => schema_errors(s, root, x, &format!("{at}/{k}"), errs),
                None => match schema.get("additionalProperties") {
                    Some(Value::Bool(false)) => {
                        errs.push(format!("{at}: property {k} not allowed"))
                    }
                    Some(s @ Value::Object(_)) => {
                        schema_errors(s, root, x, &format!("{at}/{k}"), errs)
                    }
                    _ => {}
                },
            }
        }
    }
    if let (Some(a), Some(items)) = (v.as_array(), schema.get("items")) {
        for (i, x) in a.iter().enumerate() {
            schema_errors(items, root, x, &format!("{at}/{i}"), errs);
        }
    }
}

fn init_twice(agent: &str, repo: &Path, settings: &str) -> (String, Value) {
    let run = || {
        evident()
            .args(["init", agent, "--repo"])
            .arg(repo)
            .assert()
            .success();
        std::fs::read_to_string(repo.join(settings)).unwrap()
    };
    let first = run();
    let second = run();
    assert_eq!(first, second, "{agent}: init twice changes nothing");
    (first.clone(), serde_json::from_str(&first).unwrap())
}

#[test]
fn init_cursor_gemini_and_copilot_merge_into_existing_hooks_idempotently() {
    let tmp = tempfile::tempdir().unwrap();
    let repo = tmp.path();
    std::fs::write(repo.join("pytest.ini"), "[pytest]\n").unwrap();
    // Cursor: an existing stop hook and another event's hook are kept; a stale evident
    // entry (an old binary path) is replaced in place, and a duplicate removed.
    std::fs::create_dir_all(repo.join(".cursor")).unwrap();
    let cursor = json!({"version": 1, "hooks": {
        "stop": [{"command": "./hooks/audit.sh"}, {"command": "/old/evident hook cursor --timeout 9"}, {"command": "/old/evident hook cursor"}],
        "afterFileEdit": [{"command": "./hooks/format.sh"}]
    }});
    std::fs::write(repo.join(".cursor/hooks.json"), cursor.to_string()).unwrap();
    let (_, c) = init_twice("cursor", repo, ".cursor/hooks.json");
    assert_eq!(c["version"], 1);
    assert_eq!(
        c["hooks"]["afterFileEdit"],
        cursor["hooks"]["afterFileEdit"]
    );
    let stop = c["hooks"]["stop"].as_array().unwrap();
    assert_eq!(stop.len(), 2, "{c}");
    assert_eq!(stop[0]["command"], "./hooks/audit.sh");
    let ours = stop[1]["command"].as_str().unwrap();
    assert!(
        ours.starts_with('/')
            && !ours.starts_with("/old")
            && ours.ends_with(" hook cursor --timeout 540"),
        "{ours}"
    );
    assert!(
        stop[1]["timeout"].as_u64().unwrap() > 540,
        "seconds, above the gate's deadline"
    );
    for ev in ["sessionStart", "subagentStop"] {
        assert!(
            c["hooks"][ev][0]["command"]
                .as_str()
                .unwrap()
                .contains("hook cursor"),
            "{c}"
        );
    }
    // Gemini CLI: other settings and hooks kept, matcher groups left whole; the file
    // is valid against Gemini CLI's published settings schema.
    std::fs::create_dir_all(repo.join(".gemini")).unwrap();
    let gemini = json!({"hooksConfig": {"enabled": true}, "hooks": {
        "AfterAgent": [{"hooks": [{"type": "command", "command": "./log.sh", "timeout": 5000},
                                   {"type": "command", "command": "/old/evident hook gemini"}]}],
        "BeforeTool": [{"matcher": "run_shell_command", "hooks": [{"type": "command", "command": "./guard.sh"}]}]
    }});
    std::fs::write(repo.join(".gemini/settings.json"), gemini.to_string()).unwrap();
    let (_, g) = init_twice("gemini", repo, ".gemini/settings.json");
    let schema: Value = serde_json::from_str(
        &std::fs::read_to_string(
            Path::new(env!("CARGO_MANIFEST_DIR"))
                .join("tests/data/agents/gemini-settings.schema.json"),
        )
        .unwrap(),
    )
    .unwrap();
    let mut errs = Vec::new();
    schema_errors(&schema, &schema, &g, "", &mut errs);
    assert!(errs.is_empty(), "{errs:?}\n{g}");
    // The validator can fail: a timeout written as a string is refused.
    let mut bad = g.clone();
    bad["hooks"]["AfterAgent"][0]["hooks"][0]["timeout"] = json!("600s");
    bad["unknownSetting"] = json!(1);
    let mut errs = Vec::new();
    schema_errors(&schema, &schema, &bad, "", &mut errs);
    assert_eq!(errs.len(), 2, "{errs:?}");
    assert_eq!(g["hooksConfig"], gemini["hooksConfig"]);
    assert_eq!(g["hooks"]["BeforeTool"], gemini["hooks"]["BeforeTool"]);
    let after = g["hooks"]["AfterAgent"].as_array().unwrap();
    assert_eq!(after.len(), 2, "{g}");
    let ours = &after[0]["hooks"][0];
    assert!(
        ours["command"]
            .as_str()
            .unwrap()
            .ends_with(" hook gemini --timeout 540"),
        "{g}"
    );
    assert!(
        ours["timeout"].as_u64().unwrap() > 540 * 1000,
        "milliseconds: {g}"
    );
    assert_eq!(
        after[1]["hooks"],
        json!([{"type": "command", "command": "./log.sh", "timeout": 5000}])
    );
    assert!(
        g["hooks"]["SessionStart"][0]["hooks"][0]["command"]
            .as_str()
            .unwrap()
            .contains("hook gemini")
    );
    // Copilot CLI: its own file in .github/hooks/, with bash commands and timeoutSec;
    // another hooks file there is left alone.
    std::fs::create_dir_all(repo.join(".github/hooks")).unwrap();
    let other =
        json!({"version": 1, "hooks": {"agentStop": [{"type": "command", "bash": "./notify.sh"}]}});
    std::fs::write(repo.join(".github/hooks/team.json"), other.to_string()).unwrap();
    let (_, p) = init_twice("copilot", repo, ".github/hooks/evident.json");
    assert_eq!(
        serde_json::from_str::<Value>(
            &std::fs::read_to_string(repo.join(".github/hooks/team.json")).unwrap()
        )
        .unwrap(),
        other
    );
    assert_eq!(p["version"], 1);
    for ev in ["sessionStart", "agentStop", "subagentStop"] {
        let e = &p["hooks"][ev][0];
        assert_eq!(e["type"], "command", "{p}");
        assert!(
            e["bash"]
                .as_str()
                .unwrap()
                .ends_with(&format!(" hook copilot --event {ev} --timeout 540")),
            "{p}"
        );
        assert!(e["timeoutSec"].as_u64().unwrap() > 540, "{p}");
    }
}

#[test]
fn init_writes_a_detected_contract_and_merges_settings_idempotently() {
    let tmp = tempfile::tempdir().unwrap();
    let repo = tmp.path();
    std::fs::write(repo.join("Cargo.toml"), "[package]\nname = \"x\"\n").unwrap();
    std::fs::write(repo.join("go.mod"), "module x\n").unwrap();
    std::fs::write(
        repo.join("package.json"),
        r#"{"scripts": {"test": "jest"}}"#,
    )
    .unwrap();
    std::fs::write(repo.join("pyproject.toml"), "[tool.pytest.ini_options]\n").unwrap();
    std::fs::create_dir_all(repo.join(".claude")).unwrap();
    let other = json!({"permissions": {"allow": ["Bash(ls)"]}, "hooks": {"Stop": [{"hooks": [{"type": "command", "command": "say done"}]}], "PreToolUse": [{"matcher": "Bash", "hooks": [{"type": "command", "command": "audit"}]}]}});
    std::fs::write(repo.join(".claude/settings.json"), other.to_string()).unwrap();
    let init = || {
        evident()
            .args(["init", "claude-code", "--repo"])
            .arg(repo)
            .assert()
            .success();
        std::fs::read_to_string(repo.join(".claude/settings.json")).unwrap()
    };
    let first = init();
    let second = init();
    assert_eq!(first, second, "init twice changes nothing");
    let s: Value = serde_json::from_str(&first).unwrap();
    assert_eq!(s["permissions"], other["permissions"]);
    assert_eq!(s["hooks"]["PreToolUse"], other["hooks"]["PreToolUse"]);
    let stop = s["hooks"]["Stop"].as_array().unwrap();
    assert_eq!(stop.len(), 2, "{first}");
    assert_eq!(stop[0]["hooks"][0]["command"], "say done");
    let cmd = stop[1]["hooks"][0]["command"].as_str().unwrap();
    assert!(
        cmd.starts_with('/') && cmd.ends_with("hook claude-code --timeout 540"),
        "{cmd}"
    );
    assert!(stop[1]["hooks"][0]["timeout"].as_u64().unwrap() > 540);
    assert!(s["hooks"]["SessionStart"].is_array() && s["hooks"]["SubagentStop"].is_array());
    let contract = std::fs::read_to_string(repo.join(".evident/contract.toml")).unwrap();
    for id in ["cargo-test", "pytest", "npm-test", "go-test"] {
        assert!(contract.contains(&format!("id = \"{id}\"")), "{contract}");
    }
    evident()
        .args(["contract", "check"])
        .arg(repo.join(".evident/contract.toml"))
        .assert()
        .success();
    // The hook itself reads it (its [hook] table split off) — a Codex init too.
    evident()
        .args(["init", "codex", "--repo"])
        .arg(repo)
        .assert()
        .success();
    let codex: Value =
        serde_json::from_str(&std::fs::read_to_string(repo.join(".codex/hooks.json")).unwrap())
            .unwrap();
    assert!(
        codex["hooks"]["Stop"][0]["hooks"][0]["command"]
            .as_str()
            .unwrap()
            .contains("hook codex")
    );
    // --print writes nothing.
    let out = evident()
        .args(["init", "cursor", "--print", "--repo"])
        .arg(repo)
        .output()
        .unwrap();
    assert!(
        String::from_utf8_lossy(&out.stdout).contains("followup")
            || String::from_utf8_lossy(&out.stdout).contains("hook cursor")
    );
    assert!(!repo.join(".cursor").exists());
}

#[test]
fn adapt_and_eval_read_claude_code_and_codex_logs() {
    let tmp = tempfile::tempdir().unwrap();
    let reqs = tmp.path().join("reqs.json");
    std::fs::write(
        &reqs,
        r#"[{"action": "update_zip", "evidence_fields": ["zip"]}]"#,
    )
    .unwrap();
    let claude = tmp.path().join("claude.jsonl");
    let lines = [
        json!({"type": "user", "message": {"role": "user", "content": "Update the zip"}}),
        json!({"type": "assistant", "message": {"role": "assistant", "content": [{"type": "tool_use", "id": "t1", "name": "update_zip", "input": {"zip": "94107"}}]}}),
        json!({"type": "user", "message": {"role": "user", "content": [{"type": "tool_result", "tool_use_id": "t1", "content": "{\"zip\": \"94107\"}", "is_error": true}]}}),
    ];
    std::fs::write(&claude, lines.map(|l| l.to_string()).join("\n")).unwrap();
    let adapt = |fmt: &str, file: &Path, claimed: Option<&str>| {
        let mut c = evident();
        c.args(["adapt", fmt])
            .arg(file)
            .arg(&reqs)
            .args(["--source-ref", "run-1"]);
        if let Some(x) = claimed {
            c.args(["--claimed", x]);
        }
        c.output().unwrap()
    };
    // A failed call is not a success, and the arguments never become evidence.
    let out = adapt("claude-code", &claude, Some("true"));
    assert!(out.status.success(), "{out:?}");
    let case: Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(case["task"], "Update the zip");
    assert_eq!(case["events"][0]["success"], false);
    let out = evident()
        .args(["eval", "--adapter", "claude-code", "--requirements"])
        .arg(&reqs)
        .args(["--claimed", "true"])
        .arg(&claude)
        .output()
        .unwrap();
    assert!(
        !String::from_utf8_lossy(&out.stdout).contains("VERIFIED_COMPLETE"),
        "{out:?}"
    );
    // Whether the agent claimed completion is never read from its words.
    assert_eq!(adapt("claude-code", &claude, None).status.code(), Some(2));
    // Codex exec --json: an item started and never completed is unfinished.
    let codex = tmp.path().join("codex.jsonl");
    let lines = [
        json!({"type": "item.started", "item": {"id": "i1", "type": "command_execution", "command": "update_zip"}}),
        json!({"type": "item.completed", "item": {"id": "i2", "type": "agent_message", "text": "Done"}}),
    ];
    std::fs::write(&codex, lines.map(|l| l.to_string()).join("\n")).unwrap();
    let out = adapt("codex", &codex, Some("true"));
    assert!(out.status.success(), "{out:?}");
    let case: Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(case["events"][0]["unfinished"], true);
    assert_eq!(case["events"][0]["success"], false);
}

#[test]
#[cfg_attr(
    not(evident_services),
    ignore = "needs pytest: .ci/run installs it and runs this (see README, Development)"
)]
fn a_second_session_start_cannot_move_the_baseline_and_subagent_stops_are_gated() {
    // With no_change = "allow", a baseline moved onto the broken commit would let the
    // stop through as "nothing changed".
    let w = world(&CONTRACT.replace("[hook]\n", "[hook]\nno_change = \"allow\"\n"));
    start(&w, "claude-code");
    // The attack: commit the broken change, then send another session start (a
    // resume) hoping to make that commit the baseline.
    std::fs::write(w.repo.join("calc.py"), "def add(a, b):\n    return a * b\n").unwrap();
    git(&w.repo, &["commit", "-qam", "broken"]);
    let mut again = event(&w, "SessionStart", false);
    again["source"] = json!("resume");
    hook(&w, "claude-code", &again);
    claude_transcript(&w, "calc.py", "done");
    // A subagent's stop (its own transcript) is gated like the main agent's.
    let mut sub = event(&w, "SubagentStop", false);
    sub["agent_id"] = json!("a1");
    sub["agent_transcript_path"] = json!(w.transcript);
    let (v, _) = hook(&w, "claude-code", &sub);
    let reason = refused(&v);
    assert!(reason.contains("check \"pytest\""), "{reason}");
    // Honest twin: the real fix, committed or not, verifies against the first baseline.
    std::fs::write(w.repo.join("calc.py"), "def add(a, b):\n    return a + b\n").unwrap();
    git(&w.repo, &["commit", "-qam", "fixed"]);
    let (v, _) = hook(&w, "claude-code", &event(&w, "Stop", false));
    allowed(&v);
}

/// `claim --from atif`: the task and outcome from the trajectory, the mutations from git,
/// and the trajectory's writes cross-checked (a write git does not show is a finding).
#[test]
fn claim_from_an_atif_trajectory() {
    let w = world(CONTRACT);
    std::fs::write(w.repo.join("calc.py"), "def add(a, b):\n    return a + b\n").unwrap();
    let traj = json!({
        "schema_version": "ATIF-v1.7",
        "session_id": "s1",
        "agent": {"name": "harbor-agent", "version": "1"},
        "steps": [
            {"step_id": 1, "source": "user", "message": "Fix add() in calc.py"},
            {"step_id": 2, "source": "agent", "message": "", "tool_calls": [
                {"tool_call_id": "c1", "function_name": "write_file", "arguments": {"path": "calc.py"}},
                {"tool_call_id": "c2", "function_name": "write_file", "arguments": {"path": "notes.md"}}
            ], "observation": {"results": [
                {"source_call_id": "c1", "content": "ok"},
                {"source_call_id": "c2", "content": "ok"}
            ]}},
            {"step_id": 3, "source": "agent", "message": "Fixed add()."}
        ]
    });
    let file = w.transcript.with_extension("json");
    std::fs::write(&file, traj.to_string()).unwrap();
    let out = evident()
        .args(["claim", "--from", "atif"])
        .arg(&file)
        .arg("--repo")
        .arg(&w.repo)
        .args(["--base", "HEAD"])
        .output()
        .unwrap();
    assert!(out.status.success(), "{out:?}");
    let claim: Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(claim["task"]["description"], "Fix add() in calc.py");
    assert_eq!(claim["claimed_outcome"], "Fixed add().");
    assert_eq!(claim["mutations"][0]["target"], "calc.py");
    assert_eq!(claim["mutations"].as_array().unwrap().len(), 1);
    let findings = claim["x_observed"]["findings"].to_string();
    assert!(
        findings.contains("notes.md") && !findings.contains("write to calc.py"),
        "{findings}"
    );
}

/// The contract `evident init` writes protects the tests at `@baseline`, which the hook
/// fills with the session's baseline. The attack: leave the bug, weaken the test and
/// commit it (HEAD moves with the agent). Refused: the test runs as it was at the
/// session start. The honest fix is allowed.
#[test]
#[cfg_attr(
    not(evident_services),
    ignore = "needs pytest: .ci/run installs it and runs this (see README, Development)"
)]
fn a_weakened_test_runs_as_it_was_at_the_session_baseline() {
    let protected = CONTRACT.replace(
        "timeout_s = 120 }",
        r#"timeout_s = 120, protect = { base = "@baseline", paths = ["tests/**"] } }"#,
    );
    assert!(protected.contains("@baseline"));
    let w = world(&protected);
    start(&w, "claude-code");
    std::fs::write(
        w.repo.join("tests/test_calc.py"),
        "def test_add():\n    assert True\n",
    )
    .unwrap();
    git(&w.repo, &["commit", "-qam", "tests pass now"]);
    claude_transcript(&w, "tests/test_calc.py", "Fixed; all tests pass.");
    let (v, _) = hook(&w, "claude-code", &event(&w, "Stop", false));
    let reason = refused(&v);
    assert!(reason.contains("check \"pytest\""), "{reason}");
    // Honest twin: the test restored, the bug fixed.
    git(&w.repo, &["revert", "--no-edit", "HEAD"]);
    std::fs::write(w.repo.join("calc.py"), "def add(a, b):\n    return a + b\n").unwrap();
    claude_transcript(&w, "calc.py", "Fixed add(); all tests pass.");
    let (v, _) = hook(&w, "claude-code", &event(&w, "Stop", false));
    allowed(&v);
}

/// The hooks and `[[snapshot]]`: where the contract declares one, the session start
/// takes it (kept in the state directory, its hash recorded in the hook's ledger) and
/// the stop gates with it. A row the agent rewrote and did not claim (the hook claims
/// code changes, never a row) refuses the stop; twin: the fix alone is allowed. Without
/// a session start there is no snapshot, and the stop is refused for that.
#[test]
#[cfg_attr(
    not(evident_services),
    ignore = "needs pytest: .ci/run installs it and runs this (see README, Development)"
)]
fn a_session_start_snapshot_catches_an_unclaimed_row_at_the_stop() {
    let contract = format!(
        "{CONTRACT}\n[[snapshot]]\nid = \"accounts\"\nsource = {{ sqlite = {{ path = \"billing.db\", query = \"SELECT id, zip FROM accounts ORDER BY id\" }} }}\ntarget = \"accounts/{{id}}\"\n"
    );
    let w = world(&contract);
    let sql = |q: &str| {
        let out = std::process::Command::new("python3")
            .args([
                "-c",
                "import sqlite3,sys; c=sqlite3.connect(sys.argv[1]); c.executescript(sys.argv[2]); c.commit()",
            ])
            .arg(w.repo.join("billing.db"))
            .arg(q)
            .output()
            .unwrap();
        assert!(out.status.success(), "{out:?}");
    };
    sql(
        "CREATE TABLE accounts(id TEXT PRIMARY KEY, zip TEXT); INSERT INTO accounts VALUES ('4471', '10001');",
    );
    git(&w.repo, &["add", "billing.db"]);
    git(&w.repo, &["commit", "-qm", "db"]);
    // No session start: no snapshot, so the stop cannot be verified.
    std::fs::write(w.repo.join("calc.py"), "def add(a, b):\n    return a + b\n").unwrap();
    claude_transcript(&w, "calc.py", "Fixed add(); all tests pass.");
    let mut other = event(&w, "Stop", false);
    other["session_id"] = json!("s0");
    let (v, _) = hook(&w, "claude-code", &other);
    assert!(refused(&v).contains("no snapshot was given"), "{v}");
    git(&w.repo, &["checkout", "-q", "--", "calc.py"]);
    let (v, err) = hook(&w, "claude-code", &event(&w, "SessionStart", false));
    assert_eq!(v, Value::Null, "{err}");
    assert!(
        err.contains("snapshot of the contract's [[snapshot]] sets taken (recorded in"),
        "{err}"
    );
    let kept = std::fs::read_dir(w.state.join("sessions"))
        .unwrap()
        .flatten()
        .any(|e| e.file_name().to_string_lossy().ends_with(".snapshot.json"));
    assert!(kept, "the snapshot is kept in the state directory");
    // Twin: the fix alone.
    std::fs::write(w.repo.join("calc.py"), "def add(a, b):\n    return a + b\n").unwrap();
    let (v, err) = hook(&w, "claude-code", &event(&w, "Stop", false));
    allowed(&v);
    assert!(
        v["systemMessage"].as_str().unwrap().contains("verified"),
        "{v} {err}"
    );
    // The attack: a row rewritten too.
    sql("UPDATE accounts SET zip = '00000' WHERE id = '4471';");
    let (v, _) = hook(&w, "claude-code", &event(&w, "Stop", true));
    let reason = refused(&v);
    assert!(
        reason.contains("changed but not claimed: accounts/4471 (changed)"),
        "{reason}"
    );
}

/// The loop guard in each other agent's protocol (Claude Code's is above): after
/// `max_refusals` (3) refusals in a row the stop goes through, and the user is told
/// the work is NOT verified — in the answer where the protocol has a field for it,
/// else on stderr (Cursor, Copilot CLI).
#[test]
#[cfg_attr(
    not(evident_services),
    ignore = "needs pytest: .ci/run installs it and runs this (see README, Development)"
)]
fn the_loop_guard_answers_in_every_agents_protocol() {
    for agent in ["codex", "cursor", "gemini", "copilot"] {
        let w = world(CONTRACT);
        std::fs::write(w.repo.join("calc.py"), WRONG).unwrap();
        let (extra, ev): (&[&str], Value) = match agent {
            "codex" => {
                let mut e = event(&w, "Stop", true);
                e["turn_id"] = json!("t1");
                e["model"] = json!("gpt-5-codex");
                (&[], e)
            }
            "cursor" => (
                &[],
                json!({"conversation_id": "c-loop", "generation_id": "g1", "model": "m",
                       "hook_event_name": "stop", "cursor_version": "2.3.35",
                       "workspace_roots": [w.repo], "user_email": null,
                       "status": "completed", "loop_count": 1}),
            ),
            "gemini" => (
                &[],
                json!({"session_id": "g-loop", "transcript_path": w.transcript.with_extension("json"),
                       "cwd": w.repo, "hook_event_name": "AfterAgent",
                       "timestamp": "2026-12-01T12:00:00.000Z", "prompt": "Fix add()",
                       "prompt_response": "Fixed.", "stop_hook_active": true}),
            ),
            _ => (
                &["--event", "agentStop"],
                json!({"sessionId": "cp-loop", "timestamp": 1_764_590_500_000_u64,
                       "cwd": w.repo, "transcriptPath": w.transcript, "stopReason": "end_turn"}),
            ),
        };
        let run = || {
            let out = evident_without_ledger()
                .args(["hook", agent])
                .args(extra)
                .arg("--state-dir")
                .arg(&w.state)
                .env_remove("CLAUDE_PROJECT_DIR")
                .write_stdin(ev.to_string())
                .output()
                .unwrap();
            assert_eq!(out.status.code(), Some(0), "{agent}: {out:?}");
            let v: Value = serde_json::from_slice(&out.stdout)
                .unwrap_or_else(|e| panic!("{agent}: {e}: {out:?}"));
            (v, String::from_utf8_lossy(&out.stderr).to_string())
        };
        for i in 0..2 {
            let (v, _) = run();
            let refused = match agent {
                "cursor" => v["followup_message"].as_str().is_some(),
                "gemini" => v["decision"] == "deny",
                _ => v["decision"] == "block",
            };
            assert!(refused, "{agent}: stop {} must be refused: {v}", i + 1);
            if agent == "codex" {
                codex_valid(&v);
            }
        }
        let (v, err) = run();
        let told = match agent {
            "codex" => {
                codex_valid(&v);
                assert!(v.get("decision").is_none(), "codex: {v}");
                v["systemMessage"].as_str().unwrap_or_default().to_string()
            }
            "cursor" => {
                assert_eq!(v, json!({}), "cursor");
                err
            }
            "gemini" => {
                assert_eq!(v["decision"], "allow", "gemini: {v}");
                v["systemMessage"].as_str().unwrap_or_default().to_string()
            }
            _ => {
                assert_eq!(v["decision"], "allow", "copilot: {v}");
                err
            }
        };
        assert!(
            told.contains("NOT verified") && told.contains("3 times"),
            "{agent}: {told}"
        );
    }
}

/// Text taken from the transcript (the task, the claimed outcome, findings) is
/// scrubbed like any observation before it is shown: a URL's credentials never reach
/// the claim. The twin: the rest of the text is kept as written.
#[test]
fn transcript_text_is_scrubbed_in_the_claim() {
    let w = world(CONTRACT);
    std::fs::write(w.repo.join("calc.py"), FIXED).unwrap();
    let lines = [
        json!({"type": "user", "message": {"role": "user", "content": "Fix add(); push to https://bob:hunter2pw@git.example.test/calc.git when done"}}),
        json!({"type": "assistant", "message": {"role": "assistant", "content": [{"type": "text", "text": "Pushed to https://bob:hunter2pw@git.example.test/calc.git"}]}}),
    ];
    let text: Vec<String> = lines.iter().map(Value::to_string).collect();
    std::fs::write(&w.transcript, text.join("\n") + "\n").unwrap();
    let out = evident()
        .args(["claim", "--from", "claude-code"])
        .arg(&w.transcript)
        .arg("--repo")
        .arg(&w.repo)
        .args(["--base", "HEAD"])
        .output()
        .unwrap();
    assert!(out.status.success(), "{out:?}");
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(!stdout.contains("hunter2pw"), "{stdout}");
    let claim: Value = serde_json::from_slice(&out.stdout).unwrap();
    let task = claim["task"]["description"].as_str().unwrap();
    assert!(
        task.starts_with("Fix add(); push to https://")
            && task.contains("git.example.test/calc.git when done"),
        "{task}"
    );
    let outcome = claim["claimed_outcome"].as_str().unwrap();
    assert!(
        outcome.starts_with("Pushed to https://") && outcome.contains(":***@git.example.test"),
        "{outcome}"
    );
}

/// Two sessions in one repository are kept apart: each has its own baseline (recorded
/// by its own session start) and its own refusal count.
#[test]
#[cfg_attr(
    not(evident_services),
    ignore = "needs pytest: .ci/run installs it and runs this (see README, Development)"
)]
fn two_sessions_in_one_repository_are_kept_apart() {
    let w = world(&allow_no_change());
    claude_transcript(&w, "calc.py", "done");
    let as_session = |name: &str, id: &str| {
        let mut e = event(&w, name, false);
        e["session_id"] = json!(id);
        e
    };
    start(&w, "claude-code");
    std::fs::write(w.repo.join("calc.py"), WRONG).unwrap();
    git(&w.repo, &["commit", "-qam", "wrong fix"]);
    // The second session starts after the wrong fix was committed.
    let (v, err) = hook(&w, "claude-code", &as_session("SessionStart", "s2"));
    assert_eq!(v, Value::Null, "{err}");
    // s1's baseline is before the wrong fix: refused. s2's is after it: nothing
    // changed, which this contract allows.
    let (v, _) = hook(&w, "claude-code", &as_session("Stop", "s1"));
    assert!(refused(&v).contains("pytest"), "{v}");
    let (v, _) = hook(&w, "claude-code", &as_session("Stop", "s2"));
    allowed(&v);
    // s1's refusals do not count toward s2's loop guard, nor s2's stops toward s1's.
    let (v, _) = hook(&w, "claude-code", &as_session("Stop", "s1"));
    refused(&v);
    let (v, _) = hook(&w, "claude-code", &as_session("Stop", "s2"));
    allowed(&v);
    let (v, _) = hook(&w, "claude-code", &as_session("Stop", "s1"));
    allowed(&v);
    assert!(
        v["systemMessage"]
            .as_str()
            .unwrap()
            .contains("NOT verified"),
        "s1's third refusal in a row goes through: {v}"
    );
}
