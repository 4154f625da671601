use std::path::Path;
use std::process::Command;

use evident_probes::{Escape, ProbeError};
use serde_json::json;
use sha2::{Digest, Sha256};

use crate::{ctx, err, ok, run, src};

fn git(dir: &Path, args: &[&str]) -> String {
    let out = Command::new("git")
        .args([
            "-c",
            "user.name=t",
            "-c",
            "user.email=t@example.com",
            "-c",
            "commit.gpgsign=false",
        ])
        .args(args)
        .current_dir(dir)
        .output()
        .expect("git");
    assert!(
        out.status.success(),
        "git {args:?}: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    String::from_utf8(out.stdout).unwrap().trim().to_string()
}

fn repo(root: &Path) -> (String, String) {
    let r = root.join("repo");
    std::fs::create_dir(&r).unwrap();
    git(&r, &["init", "-q", "-b", "main"]);
    std::fs::write(r.join("zip.txt"), "94107\n").unwrap();
    git(&r, &["add", "zip.txt"]);
    git(&r, &["commit", "-q", "-m", "first"]);
    let first = git(&r, &["rev-parse", "HEAD"]);
    std::fs::write(r.join("zip.txt"), "10001\n").unwrap();
    git(&r, &["commit", "-q", "-am", "second"]);
    git(&r, &["tag", "v1"]);
    let second = git(&r, &["rev-parse", "HEAD"]);
    (first, second)
}

#[tokio::test]
async fn git_commit_ref_file_clean() {
    let d = tempfile::tempdir().unwrap();
    let (first, second) = repo(d.path());
    let c = ctx(d.path());
    let o = ok(run(&src(r#"{ git = { repo = "repo" } }"#), &c, 10.0).await);
    assert_eq!(
        serde_json::Value::Object(o),
        json!({"commit_exists": true, "commit": second, "clean": true})
    );
    let o = ok(run(&src(r#"{ git = { repo = "repo", rev = "v1" } }"#), &c, 10.0).await);
    assert_eq!(o["commit"], json!(second));
    let s = src(&format!(
        r#"{{ git = {{ repo = "repo", rev = "{first}", file = "zip.txt" }} }}"#
    ));
    let o = ok(run(&s, &c, 10.0).await);
    assert_eq!(o["commit_exists"], json!(true));
    assert_eq!(o["file_exists"], json!(true));
    assert_eq!(
        o["file_sha256"],
        json!(hex::encode(Sha256::digest(b"94107\n")))
    );
    // The same file at HEAD differs: the value that contradicts the first commit's.
    let o = ok(run(
        &src(r#"{ git = { repo = "repo", file = "zip.txt" } }"#),
        &c,
        10.0,
    )
    .await);
    assert_eq!(
        o["file_sha256"],
        json!(hex::encode(Sha256::digest(b"10001\n")))
    );
    let o = ok(run(
        &src(r#"{ git = { repo = "repo", file = "gone.txt" } }"#),
        &c,
        10.0,
    )
    .await);
    assert_eq!(o["file_exists"], json!(false));
    // A commit that does not exist.
    let o = ok(run(
        &src(r#"{ git = { repo = "repo", rev = "0123456789abcdef0123456789abcdef01234567" } }"#),
        &c,
        10.0,
    )
    .await);
    assert_eq!(
        (o["commit_exists"].clone(), o["commit"].clone()),
        (json!(false), json!(null))
    );
    let o = ok(run(
        &src(r#"{ git = { repo = "repo", rev = "no-such-branch" } }"#),
        &c,
        10.0,
    )
    .await);
    assert_eq!(o["commit_exists"], json!(false));
    // A dirty work tree; observing does not change it.
    std::fs::write(d.path().join("repo/zip.txt"), "dirty\n").unwrap();
    let o = ok(run(&src(r#"{ git = { repo = "repo" } }"#), &c, 10.0).await);
    assert_eq!(o["clean"], json!(false));
    std::fs::write(d.path().join("repo/untracked.txt"), "x").unwrap();
    git(&d.path().join("repo"), &["checkout", "-q", "zip.txt"]);
    let o = ok(run(&src(r#"{ git = { repo = "repo" } }"#), &c, 10.0).await);
    assert_eq!(
        o["clean"],
        json!(false),
        "untracked files make the tree unclean"
    );
}

#[tokio::test]
async fn git_failures() {
    let d = tempfile::tempdir().unwrap();
    repo(d.path());
    std::fs::create_dir(d.path().join("plain")).unwrap();
    let c = ctx(d.path());
    let e = err(run(&src(r#"{ git = { repo = "plain" } }"#), &c, 10.0).await);
    assert!(matches!(e, ProbeError::Git { .. }), "{e}");
    assert!(e.to_string().contains("not a git repository"), "{e}");
    let e = err(run(
        &src(r#"{ git = { repo = "repo", rev = "--output=/tmp/x" } }"#),
        &c,
        10.0,
    )
    .await);
    assert!(matches!(e, ProbeError::InvalidSpec { .. }), "{e}");
    let e = err(run(&src(r#"{ git = { repo = "../" } }"#), &c, 10.0).await);
    assert!(
        matches!(
            e,
            ProbeError::PathEscape {
                via: Escape::DotDot,
                ..
            }
        ),
        "{e}"
    );
    let e = err(run(
        &src(r#"{ git = { repo = "repo", file = "../x" } }"#),
        &c,
        10.0,
    )
    .await);
    assert!(
        matches!(
            e,
            ProbeError::PathEscape {
                via: Escape::DotDot,
                ..
            }
        ),
        "{e}"
    );
    let e = err(run(&src(r#"{ git = { repo = "missing" } }"#), &c, 10.0).await);
    assert!(matches!(e, ProbeError::Io { .. }), "{e}");
    let e = err(run(
        &src(r#"{ git = { repo = "repo", file = "zip.txt", max_bytes = 2 } }"#),
        &c,
        10.0,
    )
    .await);
    assert!(matches!(e, ProbeError::Oversize { .. }), "{e}");
}

/// Replace refs (`git replace`) let whoever controls the repository substitute any
/// object: the committed file would read as another blob and its digest would match an
/// expectation the commit does not meet. The probe reads the objects as committed.
#[tokio::test]
async fn replace_refs_cannot_forge_a_committed_file() {
    let d = tempfile::tempdir().unwrap();
    let (_, _) = repo(d.path());
    let r = d.path().join("repo");
    let real = git(&r, &["rev-parse", "HEAD:zip.txt"]);
    std::fs::write(d.path().join("fake"), "94107\n").unwrap();
    let fake = git(&r, &["hash-object", "-w", "../fake"]);
    git(&r, &["replace", &real, &fake]);
    // Plain git now shows the forged content.
    assert_eq!(git(&r, &["cat-file", "blob", "HEAD:zip.txt"]), "94107");
    let o = ok(run(
        &src(r#"{ git = { repo = "repo", file = "zip.txt" } }"#),
        &ctx(d.path()),
        10.0,
    )
    .await);
    assert_eq!(
        o["file_sha256"],
        json!(hex::encode(Sha256::digest(b"10001\n")))
    );
}

/// Every config key that makes git run a program, set to a canary that leaves a marker
/// when it runs, plus an include that sets more of them and `.gitattributes` naming the
/// drivers. Returns the marker's path. The repository's commits are made first (by the
/// test's own git), so only the probe's git could run a canary afterwards.
pub fn plant_canaries(dir: &Path, repo: &Path) -> std::path::PathBuf {
    use std::os::unix::fs::PermissionsExt;
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
        "pre-commit",
        "post-checkout",
        "post-index-change",
        "reference-transaction",
        "fsmonitor-watchman",
        "pre-auto-gc",
        "post-merge",
    ] {
        for d in [&hooks, &repo.join(".git/hooks")] {
            std::fs::copy(&canary, d.join(h)).unwrap();
        }
    }
    let included = dir.join("included.config");
    std::fs::write(
        &included,
        format!(
            "[filter \"inc\"]\n\tclean = {c}\n\tsmudge = {c}\n\tprocess = {c}\n\trequired = true\n\
             [diff \"inc\"]\n\ttextconv = {c}\n\tcommand = {c}\n[core]\n\tfsmonitor = {c}\n"
        ),
    )
    .unwrap();
    let set = |k: &str, v: &str| git(repo, &["config", k, v]);
    for drv in ["x", "lfs"] {
        set(&format!("filter.{drv}.clean"), &c);
        set(&format!("filter.{drv}.smudge"), &c);
        set(&format!("filter.{drv}.process"), &c);
        set(&format!("filter.{drv}.required"), "true");
        set(&format!("diff.{drv}.textconv"), &c);
        set(&format!("diff.{drv}.command"), &c);
        set(&format!("merge.{drv}.driver"), &c);
    }
    for k in [
        "core.fsmonitor",
        "core.pager",
        "core.editor",
        "sequence.editor",
        "core.askPass",
        "core.sshCommand",
        "core.gitProxy",
        "core.alternateRefsCommand",
        "diff.external",
        "credential.helper",
        "gpg.program",
        "gpg.ssh.program",
        "remote.origin.uploadpack",
        "remote.origin.receivepack",
        "pager.status",
        "pager.diff",
    ] {
        set(k, &c);
    }
    set("core.hooksPath", &hooks.display().to_string());
    set("remote.origin.url", "file:///nonexistent");
    set("include.path", &included.display().to_string());
    set(
        &format!("includeIf.gitdir:{}/.path", repo.display()),
        &included.display().to_string(),
    );
    marker
}

/// A repository whose committed `.gitattributes` names filter and diff drivers.
pub fn attributed_repo(root: &Path) -> std::path::PathBuf {
    let r = root.join("repo");
    std::fs::create_dir(&r).unwrap();
    git(&r, &["init", "-q", "-b", "main"]);
    std::fs::write(
        r.join(".gitattributes"),
        "* filter=x diff=x merge=x\n*.txt filter=inc diff=inc\n*.bin filter=lfs diff=lfs\n",
    )
    .unwrap();
    std::fs::write(r.join("zip.txt"), "94107\n").unwrap();
    std::fs::write(r.join("app.py"), "print('hi')\n").unwrap();
    git(&r, &["add", "."]);
    git(&r, &["commit", "-q", "-m", "first"]);
    r
}

/// No canary runs while the probe reads `clean`, a file at HEAD and at an older commit,
/// on a clean and on a dirty tree; and the readings are right.
#[tokio::test]
async fn no_repository_config_program_ever_runs() {
    let d = tempfile::tempdir().unwrap();
    let r = attributed_repo(d.path());
    let first = git(&r, &["rev-parse", "HEAD"]);
    std::fs::write(r.join("zip.txt"), "10001\n").unwrap();
    git(&r, &["commit", "-q", "-am", "second"]);
    let marker = plant_canaries(d.path(), &r);
    // Plain git (with the repository's config) runs them: the canaries work.
    let plain = Command::new("git")
        .args(["status", "--porcelain"])
        .current_dir(&r)
        .output()
        .unwrap();
    assert!(marker.exists(), "the canary must work: {plain:?}");
    std::fs::remove_file(&marker).unwrap();

    let c = ctx(d.path());
    let o = ok(run(&src(r#"{ git = { repo = "repo" } }"#), &c, 20.0).await);
    assert_eq!(o["clean"], json!(true), "{o:?}");
    let s = src(&format!(
        r#"{{ git = {{ repo = "repo", rev = "{first}", file = "zip.txt" }} }}"#
    ));
    let o = ok(run(&s, &c, 20.0).await);
    assert_eq!(
        o["file_sha256"],
        json!(hex::encode(Sha256::digest(b"94107\n")))
    );
    std::fs::write(r.join("app.py"), "print('changed')\n").unwrap();
    let o = ok(run(&src(r#"{ git = { repo = "repo" } }"#), &c, 20.0).await);
    assert_eq!(o["clean"], json!(false));
    assert!(
        !marker.exists(),
        "a repository-configured program ran: {}",
        std::fs::read_to_string(&marker).unwrap_or_default()
    );
}

/// `core.worktree` points git at another work tree (a clean shadow checkout): refused,
/// the key named. An ordinary repository (remotes, branches, user, husky's hooksPath,
/// Git LFS's filter config) is read as usual.
#[tokio::test]
async fn core_worktree_is_refused_ordinary_config_is_not() {
    let d = tempfile::tempdir().unwrap();
    let r = attributed_repo(d.path());
    std::fs::write(r.join("app.py"), "dirty\n").unwrap();
    let shadow = d.path().join("shadow");
    std::fs::create_dir(&shadow).unwrap();
    git(
        &r,
        &["config", "core.worktree", &shadow.display().to_string()],
    );
    let c = ctx(d.path());
    let e = err(run(&src(r#"{ git = { repo = "repo" } }"#), &c, 20.0).await);
    assert!(e.to_string().contains("core.worktree"), "{e}");
    git(&r, &["config", "--unset", "core.worktree"]);
    git(&r, &["checkout", "-q", "app.py"]);

    // Ordinary config.
    for (k, v) in [
        ("remote.origin.url", "https://example.com/acme/billing.git"),
        ("remote.origin.fetch", "+refs/heads/*:refs/remotes/origin/*"),
        ("branch.main.remote", "origin"),
        ("branch.main.merge", "refs/heads/main"),
        ("user.name", "Dev"),
        ("user.email", "dev@example.com"),
        ("core.hooksPath", ".husky/_"),
        ("filter.lfs.clean", "git-lfs clean -- %f"),
        ("filter.lfs.smudge", "git-lfs smudge -- %f"),
        ("filter.lfs.process", "git-lfs filter-process"),
        ("filter.lfs.required", "true"),
    ] {
        git(&r, &["config", k, v]);
    }
    git(&r, &["branch", "feature"]);
    let o = ok(run(
        &src(r#"{ git = { repo = "repo", rev = "feature", file = "zip.txt" } }"#),
        &c,
        20.0,
    )
    .await);
    assert_eq!(o["clean"], json!(true), "{o:?}");
    assert_eq!(
        o["file_sha256"],
        json!(hex::encode(Sha256::digest(b"94107\n")))
    );
}
