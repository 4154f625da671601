//! The ATIF reader on fixtures made here (tests/fixtures/atif/README.md says after which
//! documents) and on rejections built from them.

use evident_traces::{StatusFrom, atif};
use serde_json::{Value, json};

fn fixture(name: &str) -> Vec<u8> {
    std::fs::read(format!(
        "{}/tests/fixtures/atif/{name}",
        env!("CARGO_MANIFEST_DIR")
    ))
    .unwrap()
}

fn status(t: &evident_traces::Trace, id: &str) -> Option<(bool, StatusFrom)> {
    t.calls
        .iter()
        .find(|c| c.id == id && !c.subagent)
        .unwrap()
        .outcome
        .as_ref()
        .map(|o| (o.is_error, o.status_from))
}

#[test]
fn a_v1_7_session_pairs_by_id_within_steps_and_says_where_each_status_came_from() {
    let t = atif::read(&fixture("session-v1.7.json"), "session-v1.7.json").unwrap();
    assert_eq!(
        t.first_user_message(),
        Some("Make the zip validator reject letters.")
    );
    assert_eq!(
        t.last_agent_message(),
        Some("Done: letters are rejected and the tests pass.")
    );
    // 7 calls in step 3, the reused id c1 in step 4, one in the subagent.
    assert_eq!(t.calls.len(), 9);
    assert_eq!(status(&t, "c2"), Some((true, StatusFrom::ExitCode)));
    assert_eq!(
        t.calls[0]
            .outcome
            .as_ref()
            .map(|o| (o.is_error, o.status_from)),
        Some((false, StatusFrom::Flag))
    );
    assert_eq!(status(&t, "c3"), Some((false, StatusFrom::Flag)));
    assert_eq!(status(&t, "c4"), Some((false, StatusFrom::TextExitCode)));
    assert_eq!(status(&t, "c5"), Some((true, StatusFrom::TextErrorPrefix)));
    assert_eq!(status(&t, "c6"), Some((false, StatusFrom::Absent)));
    assert_eq!(
        status(&t, "c7"),
        None,
        "no result: unfinished, never a success"
    );
    assert_eq!(t.calls[0].writes, ["app/zip.py"]);
    assert!(t.calls[1].shell && !t.calls[5].shell);
    // The id c1 again in step 4: a new call, its result the subagent reference.
    assert_eq!(t.calls[7].name, "delegate");
    assert!(t.calls[7].outcome.is_some());
    // The embedded subagent's call is read and marked; its messages are not the
    // session's.
    let sub = t.calls.iter().find(|c| c.id == "s1").unwrap();
    assert!(sub.subagent && sub.writes == ["README.md"]);
    assert!(sub.outcome.as_ref().unwrap().is_error);
    assert!(t.messages.iter().all(|m| m.text != "Document the change."));
}

#[test]
fn the_specs_v1_4_shape_reads() {
    let t = atif::read(&fixture("minimal-v1.4.json"), "m.json").unwrap();
    assert_eq!(t.calls.len(), 1);
    let o = t.calls[0].outcome.as_ref().unwrap();
    assert_eq!(o.text, r#"{"price": 185.35}"#);
    assert_eq!((o.is_error, o.status_from), (false, StatusFrom::Absent));
}

/// The v1.7 fixture with one change made by `edit`.
fn edited(edit: impl FnOnce(&mut Value)) -> Vec<u8> {
    let mut v: Value = serde_json::from_slice(&fixture("session-v1.7.json")).unwrap();
    edit(&mut v);
    serde_json::to_vec(&v).unwrap()
}

fn rejected(bytes: &[u8]) -> String {
    atif::read(bytes, "t.json")
        .expect_err("must be rejected")
        .to_string()
}

#[test]
fn rejections_name_the_json_path() {
    // A result for a call of an earlier step.
    let e = rejected(&edited(|v| {
        v["steps"][3]["observation"]["results"][0]["source_call_id"] = json!("c2");
    }));
    assert!(
        e.contains("steps[3].observation.results[0].source_call_id") && e.contains("earlier step"),
        "{e}"
    );
    // An orphan result.
    let e = rejected(&edited(|v| {
        v["steps"][2]["observation"]["results"][0]["source_call_id"] = json!("nobody");
    }));
    assert!(e.contains("names no tool call of this step"), "{e}");
    // Two results for one call.
    let e = rejected(&edited(|v| {
        v["steps"][2]["observation"]["results"][1]["source_call_id"] = json!("c2");
    }));
    assert!(e.contains("results[1]"), "{e}");
    // A duplicate id waiting in one step.
    let e = rejected(&edited(|v| {
        v["steps"][2]["tool_calls"][1]["tool_call_id"] = json!("c1");
    }));
    assert!(
        e.contains("steps[2].tool_calls[1]") && e.contains("duplicate"),
        "{e}"
    );
    // Versions.
    let e = rejected(&edited(|v| v["schema_version"] = json!("ATIF-v2.0")));
    assert!(e.contains("schema_version") && e.contains("hint"), "{e}");
    let e = rejected(&edited(|v| {
        v.as_object_mut().unwrap().remove("schema_version");
    }));
    assert!(e.contains("schema_version: missing"), "{e}");
    let e = rejected(&edited(|v| {
        v["subagent_trajectories"][0]["schema_version"] = json!("ATIF-v1.99")
    }));
    assert!(e.contains("subagent_trajectories[0].schema_version"), "{e}");
    // Tool calls only in agent steps; arguments an object.
    let e = rejected(&edited(|v| {
        v["steps"][1]["tool_calls"] =
            json!([{"tool_call_id": "u", "function_name": "x", "arguments": {}}]);
    }));
    assert!(e.contains("a user step has tool calls"), "{e}");
    let e = rejected(&edited(|v| {
        v["steps"][2]["tool_calls"][0]["arguments"] = json!("path=app/zip.py");
    }));
    assert!(e.contains("steps[2].tool_calls[0].arguments"), "{e}");
    let e = rejected(&edited(|v| v["steps"][2]["source"] = json!("tool")));
    assert!(e.contains("steps[2].source"), "{e}");
    // Not JSON; nesting bounded.
    assert!(rejected(b"{\"schema_version\": ").contains("not a JSON document"));
    let mut deep = json!({"schema_version": "ATIF-v1.7", "steps": []});
    for _ in 0..20 {
        deep = json!({"schema_version": "ATIF-v1.7", "steps": [], "subagent_trajectories": [deep]});
    }
    assert!(rejected(&serde_json::to_vec(&deep).unwrap()).contains("nest deeper"));
}

/// red13: a call marked interrupted, aborted or killed, or whose exit code is a
/// string or a float, fell through every status rule and was read as a success. The
/// twins (exit code 0 in each spelling, status "ok") stay successes.
#[test]
fn interrupted_calls_and_exit_codes_in_any_spelling_are_not_successes() {
    let traj = |extra: Value| {
        json!({"schema_version": "ATIF-v1.7", "session_id": "s", "agent": {"name": "a", "version": "1"},
               "steps": [{"step_id": 1, "source": "agent", "message": "", "tool_calls": [
                   {"tool_call_id": "c1", "function_name": "bash", "arguments": {"command": "pytest"}}],
                "observation": {"results": [{"source_call_id": "c1", "content": "partial", "extra": extra}]}}]})
        .to_string()
    };
    let read = |extra: Value| {
        let t = atif::read(traj(extra).as_bytes(), "t.json").unwrap();
        status(&t, "c1").unwrap()
    };
    for s in ["interrupted", "aborted", "killed", "Terminated", "rejected"] {
        assert_eq!(read(json!({"status": s})), (true, StatusFrom::Flag), "{s}");
    }
    assert_eq!(read(json!({"status": "ok"})), (false, StatusFrom::Flag));
    for (code, error) in [
        (json!("1"), true),
        (json!(137.0), true),
        (json!("0"), false),
        (json!(0.0), false),
    ] {
        assert_eq!(
            read(json!({"exit_code": code})),
            (error, StatusFrom::ExitCode),
            "{code}"
        );
    }
}
