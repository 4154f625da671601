//! File postconditions through the real `evident gate` binary, and their privacy mode:
//! with `private = true` a canary string written in the contract's paths, child names,
//! JSON keys, JSON values and expected text appears in no output — the report,
//! `--json`, JUnit, Markdown, `--dry-run`, `contract check`, `evident show` — nor in the
//! ledger's files, whether the claim is verified, refuted or unverified. The same
//! contract without `private` shows the canary, so the test can fail.

use serde_json::Value;
use std::path::{Path, PathBuf};

use crate::support::{evident, evident_in};

const CANARY: &str = "cnry4x2";

fn contract(dir: &Path, private: bool) -> PathBuf {
    let p = if private { "private = true\n" } else { "" };
    let text = format!(
        r#"[policy]
requires = ["state_readback"]

[[check]]
id = "text"
check_type = "state_readback"
covers = {{ kind = "file_write" }}
{p}[check.source.file]
path = "{CANARY}-dir/{CANARY}-file.txt"
postcondition = {{ text_file = {{ expected_text = "hello {CANARY}\n" }} }}

[[check]]
id = "dir"
check_type = "state_readback"
covers = {{ kind = "file_write", target = "{CANARY}-target" }}
{p}[check.source.file]
path = "{CANARY}-dir"
postcondition = {{ directory = {{ required_children = ["{CANARY}-file.txt", "{CANARY}-data.json"], exact_children = true }} }}

[[check]]
id = "json"
check_type = "state_readback"
covers = {{ kind = "file_write" }}
{p}[check.source.file]
path = "{CANARY}-dir/{CANARY}-data.json"
postcondition = {{ json_object = {{ expected = {{ {CANARY}_key = "{CANARY}-value", n = 3 }}, exact_keys = true }} }}
"#
    );
    let path = dir.join(if private {
        "private.toml"
    } else {
        "plain.toml"
    });
    std::fs::write(&path, text).unwrap();
    path
}

fn claim(dir: &Path) -> PathBuf {
    let at = time::OffsetDateTime::now_utc() - time::Duration::seconds(30);
    let at = at
        .format(&time::format_description::well_known::Rfc3339)
        .unwrap();
    let p = dir.join("claim.json");
    std::fs::write(
        &p,
        format!(
            r#"{{"spec_version": "0.1", "task": {{"id": "write-output"}}, "mutations": [{{"id": "m1", "kind": "file_write", "target": "the output", "at": "{at}"}}]}}"#
        ),
    )
    .unwrap();
    p
}

/// The tree as the agent left it: `world` picks what it did.
fn world(root: &Path, how: &str) {
    let d = root.join(format!("{CANARY}-dir"));
    let _ = std::fs::remove_dir_all(&d);
    let _ = std::fs::remove_dir_all(root.join("elsewhere"));
    std::fs::create_dir_all(&d).unwrap();
    let text = d.join(format!("{CANARY}-file.txt"));
    let json = d.join(format!("{CANARY}-data.json"));
    let good_json = format!(r#"{{"{CANARY}_key": "{CANARY}-value", "n": 3.0}}"#);
    match how {
        "done" => {
            std::fs::write(&text, format!("hello {CANARY}\n")).unwrap();
            std::fs::write(&json, good_json).unwrap();
        }
        "wrong" => {
            std::fs::write(&text, format!("hello {CANARY}")).unwrap();
            std::fs::write(
                &json,
                format!(r#"{{"{CANARY}_key": "{CANARY}-other", "n": 3}}"#),
            )
            .unwrap();
            std::fs::write(d.join(format!("{CANARY}-extra")), "").unwrap();
        }
        "linked" => {
            // The right bytes, reached through symlinks: refused (unsafe_path).
            std::fs::create_dir_all(root.join("elsewhere")).unwrap();
            std::fs::write(root.join("elsewhere/t"), format!("hello {CANARY}\n")).unwrap();
            std::fs::write(root.join("elsewhere/j"), good_json).unwrap();
            std::os::unix::fs::symlink("../elsewhere/t", &text).unwrap();
            std::os::unix::fs::symlink("../elsewhere/j", &json).unwrap();
        }
        _ => unreachable!(),
    }
}

/// Every output of one gate run and of the commands around it, concatenated.
fn outputs(tmp: &Path, contract: &Path) -> (i32, Value, String, String) {
    let ledger = tmp.join("ledger");
    std::fs::create_dir_all(&ledger).unwrap();
    let bin = || evident_in(&ledger);
    let (junit, md) = (tmp.join("j.xml"), tmp.join("s.md"));
    let claim = claim(tmp);
    let mut all = String::new();
    let mut grab = |out: std::process::Output| {
        all.push_str(&String::from_utf8_lossy(&out.stdout));
        all.push_str(&String::from_utf8_lossy(&out.stderr));
        out
    };
    let text = grab(
        bin()
            .arg("gate")
            .arg(contract)
            .arg(&claim)
            .output()
            .unwrap(),
    );
    let code = text.status.code().unwrap_or(-1);
    let json = grab(
        bin()
            .arg("gate")
            .arg(contract)
            .arg(&claim)
            .args(["--json", "--junit"])
            .arg(&junit)
            .arg("--markdown")
            .arg(&md)
            .output()
            .unwrap(),
    );
    let doc: Value = serde_json::from_slice(&json.stdout).unwrap();
    grab(
        bin()
            .arg("gate")
            .arg(contract)
            .arg(&claim)
            .arg("--dry-run")
            .output()
            .unwrap(),
    );
    grab(
        bin()
            .args(["contract", "check"])
            .arg(contract)
            .output()
            .unwrap(),
    );
    grab(
        bin()
            .args(["contract", "check", "--json"])
            .arg(contract)
            .output()
            .unwrap(),
    );
    grab(bin().arg("show").arg("1").output().unwrap());
    grab(bin().arg("show").arg("1").arg("--json").output().unwrap());
    grab(bin().arg("log").output().unwrap());
    for f in [&junit, &md] {
        all.push_str(&std::fs::read_to_string(f).unwrap());
    }
    let mut stored = String::new();
    for e in std::fs::read_dir(&ledger).unwrap() {
        stored.push_str(&String::from_utf8_lossy(
            &std::fs::read(e.unwrap().path()).unwrap(),
        ));
    }
    all.push_str(&stored);
    std::fs::remove_dir_all(&ledger).unwrap();
    (code, doc, all, stored)
}

fn reasons(doc: &Value) -> Vec<String> {
    doc["gate"]["checks"]
        .as_array()
        .unwrap()
        .iter()
        .map(|c| match &c["error"] {
            Value::String(e) => e.clone(),
            _ => c["observed"]["reason"]
                .as_str()
                .unwrap_or("matched")
                .to_string(),
        })
        .collect()
}

#[test]
fn private_postconditions_name_no_path_key_or_value() {
    let tmp = tempfile::tempdir().unwrap();
    let t = tmp.path();
    let private = contract(t, true);
    let plain = contract(t, false);
    for (how, code, want) in [
        ("done", 0, vec!["matched", "matched", "matched"]),
        (
            "wrong",
            1,
            vec!["content_mismatch", "unexpected_children", "key_mismatch"],
        ),
        (
            "linked",
            3,
            vec![
                "text_file postcondition not observed (unsafe_path)",
                "matched",
                "json_object postcondition not observed (unsafe_path)",
            ],
        ),
    ] {
        world(t, how);
        let (got, doc, all, _) = outputs(t, &private);
        assert_eq!(got, code, "{how}: {doc}");
        assert_eq!(reasons(&doc), want, "{how}");
        assert!(
            !all.contains(CANARY),
            "{how}: the canary appears in an output or the ledger:\n{}",
            all.lines()
                .filter(|l| l.contains(CANARY))
                .take(5)
                .collect::<Vec<_>>()
                .join("\n")
        );
        assert!(
            all.contains("file text_file postcondition (private)"),
            "{how}"
        );
        // Twin: the same contract without privacy shows what it checked.
        let (got, _, all, stored) = outputs(t, &plain);
        assert_eq!(got, code, "{how} (plain)");
        assert!(all.contains(CANARY), "{how}: a plain check names its path");
        assert!(
            stored.contains(CANARY),
            "{how}: the ledger keeps a plain contract whole"
        );
    }
}

#[test]
fn contract_check_refuses_malformed_postconditions() {
    let tmp = tempfile::tempdir().unwrap();
    let head = "[policy]\n[[check]]\nid = \"c\"\ncheck_type = \"state_readback\"\ncovers = { kind = \"file_write\" }\n";
    let cases = [
        (
            "source = { file = { path = \"a/../b\", postcondition = { text_file = { expected_text = \"x\" } } } }",
            "check[0].source.file.path",
            "hint",
        ),
        (
            "source = { file = { path = \"d\", postcondition = { directory = { required_children = [\"x/y\"] } } } }",
            "check[0].source.file.postcondition.directory.required_children[0]",
            "direct name",
        ),
        (
            "source = { file = { path = \"d\", postcondition = { directory = { required_children = [\"x\"], exact_empty = true } } } }",
            "check[0].source.file.postcondition.directory.exact_empty",
            "never be met",
        ),
        (
            "source = { file = { path = \"d\", pointers = { a = \"/a\" }, postcondition = { json_object = { expected = { a = 1 } } } } }",
            "check[0].source.file.pointers",
            "drop pointers",
        ),
        (
            "source = { file = { path = \"d\", postcondition = { json_object = { expected = { a = 1 } } } } }\nexpected = { json = { a = 1 } }",
            "check[0].expected.json",
            "never observes",
        ),
        (
            "source = { file = { path = \"d\", postcondition = { text_file = { expected_text = \"x\" } } } }\nexpected = { matches = \"yes\" }",
            "check[0].expected.matches",
            "a boolean",
        ),
        (
            "private = true\nsource = { sqlite = { path = \"d.db\", query = \"SELECT 1 AS one\" } }\nexpected = { one = 1 }",
            "check[0].private",
            "private = true is for",
        ),
        (
            "private = true\nsource = { file = { path = \"d\", text = true } }\nexpected = { text = \"x\" }",
            "check[0].private",
            "private = true is for",
        ),
        (
            "source = { file = { path = \"d\", postcondition = { text_file = { expected = \"x\" } } } }",
            "check[0].source.file.postcondition.text_file",
            "",
        ),
    ];
    for (i, (body, path, hint)) in cases.iter().enumerate() {
        let c = tmp.path().join(format!("c{i}.toml"));
        std::fs::write(&c, format!("{head}{body}\n")).unwrap();
        let out = evident()
            .args(["contract", "check", "--json"])
            .arg(&c)
            .output()
            .unwrap();
        assert_eq!(out.status.code(), Some(1), "{body}");
        let doc: Value = serde_json::from_slice(&out.stdout).unwrap();
        let e = &doc["errors"][0];
        assert!(
            e["path"].as_str().unwrap().starts_with(path),
            "{body}: {doc}"
        );
        assert!(
            e["message"].as_str().unwrap().contains(hint),
            "{body}: {doc}"
        );
        assert!(
            doc["file"]
                .as_str()
                .unwrap()
                .ends_with(&format!("c{i}.toml"))
        );
    }
}

/// A private path read again by a plain check would show through it: a warning.
#[test]
fn a_private_path_read_by_a_plain_check_is_warned_about() {
    let tmp = tempfile::tempdir().unwrap();
    let c = tmp.path().join("c.toml");
    let check = |id: &str, rest: &str| {
        format!(
            "[[check]]\nid = \"{id}\"\ncheck_type = \"state_readback\"\ncovers = {{ kind = \"file_write\" }}\n{rest}\n"
        )
    };
    let private = check(
        "p",
        "private = true\nsource = { file = { path = \"out/r.txt\", postcondition = { text_file = { expected_text = \"x\" } } } }",
    );
    let plain = check(
        "q",
        "source = { file = { path = \"./out/r.txt\" } }\nexpected = { exists = true }",
    );
    for (body, warned) in [
        (format!("[policy]\n{private}{plain}"), true),
        (format!("[policy]\n{private}"), false),
    ] {
        std::fs::write(&c, body).unwrap();
        let out = evident()
            .args(["contract", "check", "--json"])
            .arg(&c)
            .output()
            .unwrap();
        assert_eq!(out.status.code(), Some(0));
        let doc: Value = serde_json::from_slice(&out.stdout).unwrap();
        let hit = doc["warnings"].as_array().unwrap().iter().any(|w| {
            w["path"] == "check[1].source"
                && w["message"]
                    .as_str()
                    .unwrap()
                    .contains("private check \"p\"")
        });
        assert_eq!(hit, warned, "{doc}");
    }
}
