//! `evident gate` with git checks, through the real binary, against a repository whose
//! config names a canary program in every key that makes git run one: the gate reads
//! the repository right and no canary ever runs. Attack: an edit hidden with
//! skip-worktree is not verified.

use std::os::unix::fs::PermissionsExt;
use std::path::{Path, PathBuf};

use crate::support::{evident_in, git};

fn gate(dir: &Path) -> (i32, String, String) {
    let at = time::OffsetDateTime::now_utc() - time::Duration::seconds(30);
    let at = at
        .format(&time::format_description::well_known::Rfc3339)
        .unwrap();
    std::fs::write(
        dir.join("claim.json"),
        format!(
            r#"{{"spec_version": "0.1", "task": {{"id": "t"}}, "mutations": [{{"id": "m1", "kind": "code_change", "target": "app.py", "at": "{at}"}}]}}"#
        ),
    )
    .unwrap();
    let out = evident_in(dir)
        .arg("gate")
        .arg(dir.join("c.toml"))
        .arg(dir.join("claim.json"))
        .output()
        .unwrap();
    (
        out.status.code().unwrap_or(-1),
        String::from_utf8_lossy(&out.stdout).into_owned(),
        String::from_utf8_lossy(&out.stderr).into_owned(),
    )
}

fn plant(dir: &Path, repo: &Path) -> PathBuf {
    let marker = dir.join("CANARY-RAN");
    let canary = dir.join("canary.sh");
    std::fs::write(
        &canary,
        format!("#!/bin/sh\necho \"$0 $*\" >> '{}'\ncat\n", marker.display()),
    )
    .unwrap();
    std::fs::set_permissions(&canary, std::fs::Permissions::from_mode(0o755)).unwrap();
    let c = canary.display().to_string();
    let hooks = dir.join("hooks");
    std::fs::create_dir_all(&hooks).unwrap();
    for h in [
        "post-checkout",
        "post-index-change",
        "reference-transaction",
    ] {
        std::fs::copy(&canary, hooks.join(h)).unwrap();
        std::fs::copy(&canary, repo.join(".git/hooks").join(h)).unwrap();
    }
    let inc = dir.join("inc.config");
    std::fs::write(
        &inc,
        format!("[filter \"inc\"]\n\tclean = {c}\n\tsmudge = {c}\n[core]\n\tfsmonitor = {c}\n"),
    )
    .unwrap();
    for (k, v) in [
        ("filter.x.clean", c.as_str()),
        ("filter.x.smudge", &c),
        ("filter.x.process", &c),
        ("filter.x.required", "true"),
        ("diff.x.textconv", &c),
        ("diff.x.command", &c),
        ("core.fsmonitor", &c),
        ("core.pager", &c),
        ("core.editor", &c),
        ("core.askPass", &c),
        ("core.sshCommand", &c),
        ("diff.external", &c),
        ("credential.helper", &c),
        ("gpg.program", &c),
        ("core.hooksPath", &hooks.display().to_string()),
        ("include.path", &inc.display().to_string()),
    ] {
        git(repo, &["config", k, v]);
    }
    marker
}

#[test]
fn the_gate_reads_git_without_running_the_repositorys_programs() {
    let tmp = tempfile::tempdir().unwrap();
    let d = tmp.path();
    let r = d.join("repo");
    std::fs::create_dir(&r).unwrap();
    git(&r, &["init", "-q", "-b", "main"]);
    std::fs::write(
        r.join(".gitattributes"),
        "*.py filter=x diff=x\n*.txt filter=inc\n",
    )
    .unwrap();
    std::fs::write(r.join("app.py"), "print('ok')\n").unwrap();
    std::fs::write(r.join("zip.txt"), "94107\n").unwrap();
    git(&r, &["add", "."]);
    git(&r, &["commit", "-q", "-m", "first"]);
    let marker = plant(d, &r);
    std::process::Command::new("git")
        .args(["status"])
        .current_dir(&r)
        .output()
        .unwrap();
    assert!(marker.exists(), "the canary must work under plain git");
    std::fs::remove_file(&marker).unwrap();

    let zip = hex_sha256(b"94107\n");
    std::fs::write(
        d.join("c.toml"),
        format!(
            "[policy]\nrequires = [\"state_readback\"]\n\
             [[check]]\nid = \"clean\"\ncheck_type = \"state_readback\"\ncovers = {{ kind = \"code_change\" }}\nsource = {{ git = {{ repo = \"repo\" }} }}\nexpected = {{ clean = true }}\n\
             [[check]]\nid = \"zip\"\ncheck_type = \"state_readback\"\ncovers = {{ kind = \"code_change\" }}\nsource = {{ git = {{ repo = \"repo\", file = \"zip.txt\" }} }}\nexpected = {{ file_sha256 = \"{zip}\" }}\n"
        ),
    )
    .unwrap();
    let (code, out, err) = gate(d);
    assert_eq!(code, 0, "{out}\n{err}");
    assert!(out.contains("VERIFIED"), "{out}");

    // An untracked file: refuted.
    std::fs::write(r.join("extra.py"), "x\n").unwrap();
    let (code, out, err) = gate(d);
    assert_eq!(code, 1, "{out}\n{err}");
    assert!(!marker.exists(), "a canary ran");
    std::fs::remove_file(r.join("extra.py")).unwrap();

    // An edit hidden from git status with skip-worktree: not verified.
    std::fs::write(r.join("zip.txt"), "10001\n").unwrap();
    git(
        &r,
        &[
            "-c",
            "filter.x.process=",
            "-c",
            "filter.x.clean=",
            "-c",
            "filter.inc.clean=",
            "-c",
            "filter.x.required=false",
            "-c",
            "core.fsmonitor=false",
            "-c",
            "core.hooksPath=/dev/null",
            "update-index",
            "--skip-worktree",
            "zip.txt",
        ],
    );
    assert!(!marker.exists(), "the test's own git ran a canary");
    let (code, out, err) = gate(d);
    assert_eq!(code, 3, "{out}\n{err}");
    assert!(out.contains("skip-worktree"), "{out}");

    assert!(
        !marker.exists(),
        "a program from the repository's config ran during a gate: {}",
        std::fs::read_to_string(&marker).unwrap_or_default()
    );
}

fn hex_sha256(b: &[u8]) -> String {
    use std::io::Write;
    let mut child = std::process::Command::new("sha256sum")
        .stdin(std::process::Stdio::piped())
        .stdout(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    child.stdin.take().unwrap().write_all(b).unwrap();
    let out = child.wait_with_output().unwrap();
    String::from_utf8_lossy(&out.stdout)[..64].to_string()
}

/// A repository whose committed contract asks for a clean tree, with the claim
/// committed beside it: an honest claim, gated from the repository's root.
fn committed_world(r: &Path) {
    std::fs::create_dir_all(r).unwrap();
    git(r, &["init", "-q", "-b", "main"]);
    std::fs::write(r.join("app.py"), "print('ok')\n").unwrap();
    std::fs::write(
        r.join("contract.toml"),
        "[policy]\nrequires = [\"state_readback\"]\n\
         [[check]]\nid = \"clean\"\ncheck_type = \"state_readback\"\ncovers = { kind = \"code_change\" }\nsource = { git = {} }\nexpected = { clean = true }\n",
    )
    .unwrap();
    let at = time::OffsetDateTime::now_utc() - time::Duration::seconds(30);
    let at = at
        .format(&time::format_description::well_known::Rfc3339)
        .unwrap();
    std::fs::write(
        r.join("claim.json"),
        format!(
            r#"{{"spec_version": "0.1", "task": {{"id": "t"}}, "mutations": [{{"id": "m1", "kind": "code_change", "target": "app.py", "at": "{at}"}}]}}"#
        ),
    )
    .unwrap();
    git(r, &["add", "."]);
    git(r, &["commit", "-q", "-m", "first"]);
}

/// Issue 22, item 8: `evident gate` from a repository's root with the default ledger
/// leaves nothing in the tree (the ledger was `.evident/ledger.db` there, untracked,
/// and the next `clean = true` check refuted the same honest claim). The default is in
/// the state directory, one ledger per repository, and `--json` names it.
#[test]
fn the_default_ledger_leaves_nothing_in_the_tree() {
    let tmp = tempfile::tempdir().unwrap();
    let r = tmp.path().join("repo");
    let state = tmp.path().join("state");
    committed_world(&r);
    let gate = || {
        crate::support::evident_without_ledger()
            .current_dir(&r)
            .env("XDG_STATE_HOME", &state)
            .args(["gate", "contract.toml", "claim.json", "--json"])
            .output()
            .unwrap()
    };
    for round in 0..2 {
        let out = gate();
        let (stdout, stderr) = (
            String::from_utf8_lossy(&out.stdout),
            String::from_utf8_lossy(&out.stderr),
        );
        assert_eq!(
            out.status.code(),
            Some(0),
            "round {round}: {stdout}\n{stderr}"
        );
        assert_eq!(
            git(
                &r,
                &[
                    "status",
                    "--porcelain",
                    "--untracked-files=all",
                    "--ignored"
                ]
            ),
            "",
            "round {round}: the gate left files in the tree"
        );
        assert!(!stderr.contains("warning:"), "{stderr}");
        let v: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
        assert_eq!(v["verdict"]["state"], "verified", "{stdout}");
        // Where it was recorded is said on stderr (the JSON on stdout is the decision).
        let line = format!("recorded as #{} in ", round + 1);
        let at = stderr
            .lines()
            .find_map(|l| l.strip_prefix(line.as_str()))
            .and_then(|l| l.split(" (").next())
            .unwrap_or_else(|| panic!("one chain, recorded as #{}: {stderr}", round + 1));
        let ledgers = state.join("evident/ledgers");
        assert!(at.starts_with(ledgers.to_str().unwrap()), "{at}");
        assert!(
            at.ends_with("/ledger.db") && Path::new(at).is_file(),
            "{at}"
        );
    }

    // A file the agent left: refuted, and the refusal names it (the reason and the
    // report's line for the check; the JSON observation under `unclean_paths`).
    std::fs::write(r.join("notes.txt"), "x").unwrap();
    let out = crate::support::evident_without_ledger()
        .current_dir(&r)
        .env("XDG_STATE_HOME", &state)
        .args(["gate", "contract.toml", "claim.json"])
        .output()
        .unwrap();
    let text = String::from_utf8_lossy(&out.stdout);
    assert_eq!(out.status.code(), Some(1), "{text}");
    let reason = text
        .lines()
        .find(|l| l.starts_with("reason"))
        .unwrap_or_default();
    assert!(
        reason.contains("clean expected true but observed false (differs from HEAD at notes.txt)"),
        "{text}"
    );
    assert!(
        text.contains("not clean, differs from HEAD at: notes.txt"),
        "{text}"
    );
    let out = crate::support::evident_without_ledger()
        .current_dir(&r)
        .env("XDG_STATE_HOME", &state)
        .args(["gate", "contract.toml", "claim.json", "--json"])
        .output()
        .unwrap();
    let v: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    let observed = v["evidence"]
        .as_array()
        .unwrap()
        .iter()
        .find_map(|e| e["observed_value"].get("unclean_paths"))
        .cloned();
    assert_eq!(observed, Some(serde_json::json!(["notes.txt"])), "{v}");
}
