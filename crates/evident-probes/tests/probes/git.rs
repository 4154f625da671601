use std::path::Path;
use std::process::Command;

use evident_probes::{Escape, ProbeError};
use serde_json::json;
use sha2::{Digest, Sha256};

use evident_probes::Object;

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

    let before = snapshot(&r.join(".git"));
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
    // An untracked file: unclean.
    std::fs::write(r.join("new.py"), "x\n").unwrap();
    let o = ok(run(&src(r#"{ git = { repo = "repo" } }"#), &c, 20.0).await);
    assert_eq!(o["clean"], json!(false));
    std::fs::remove_file(r.join("new.py")).unwrap();
    // A changed file under `filter=x`: whether git's filter would call it clean is not
    // known without running the filter, so nothing is observed (never `clean = true`).
    std::fs::write(r.join("app.py"), "print('changed')\n").unwrap();
    let e = err(run(&src(r#"{ git = { repo = "repo" } }"#), &c, 20.0).await);
    assert!(
        e.to_string().contains("app.py") && e.to_string().contains("filter=x"),
        "{e}"
    );
    assert!(
        snapshot(&r.join(".git")) == before,
        "observing wrote to .git"
    );
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

fn clean_of(o: Object) -> serde_json::Value {
    o.get("clean").cloned().unwrap_or(json!("absent"))
}

async fn observe_clean(root: &Path) -> Result<serde_json::Value, ProbeError> {
    run(&src(r#"{ git = { repo = "repo" } }"#), &ctx(root), 20.0)
        .await
        .value
        .map(clean_of)
}

/// Index flags the writer sets cannot hide an edit: assume-unchanged is ignored (the
/// content is compared), skip-worktree is refused with the flag and path named.
#[tokio::test]
async fn index_flags_do_not_hide_edits() {
    let d = tempfile::tempdir().unwrap();
    repo(d.path());
    let r = d.path().join("repo");
    std::fs::write(r.join("app.py"), "ok\n").unwrap();
    git(&r, &["add", "app.py"]);
    git(&r, &["commit", "-q", "-m", "app"]);
    assert_eq!(observe_clean(d.path()).await.unwrap(), json!(true));

    std::fs::write(r.join("app.py"), "edited\n").unwrap();
    git(&r, &["update-index", "--assume-unchanged", "app.py"]);
    assert_eq!(
        git(&r, &["status", "--porcelain"]),
        "",
        "plain git is fooled"
    );
    assert_eq!(observe_clean(d.path()).await.unwrap(), json!(false));
    git(&r, &["update-index", "--no-assume-unchanged", "app.py"]);

    git(&r, &["update-index", "--skip-worktree", "app.py"]);
    assert_eq!(
        git(&r, &["status", "--porcelain"]),
        "",
        "plain git is fooled"
    );
    let e = observe_clean(d.path()).await.unwrap_err();
    assert!(
        e.to_string().contains("skip-worktree") && e.to_string().contains("app.py"),
        "{e}"
    );
    git(&r, &["update-index", "--no-skip-worktree", "app.py"]);
    git(&r, &["checkout", "-q", "app.py"]);

    // A stat cache made to match: same size, the old mtime, ctime not trusted.
    let before = std::time::SystemTime::now() - std::time::Duration::from_secs(3600);
    let set_mtime = || {
        std::fs::File::options()
            .write(true)
            .open(r.join("app.py"))
            .unwrap()
            .set_modified(before)
            .unwrap()
    };
    set_mtime();
    git(&r, &["config", "core.trustctime", "false"]);
    git(&r, &["config", "core.checkStat", "minimal"]);
    git(&r, &["update-index", "--refresh"]);
    std::fs::write(r.join("app.py"), "no\n").unwrap();
    set_mtime();
    assert_eq!(
        git(&r, &["status", "--porcelain"]),
        "",
        "plain git is fooled"
    );
    assert_eq!(observe_clean(d.path()).await.unwrap(), json!(false));
    git(&r, &["checkout", "-q", "app.py"]);
    std::fs::write(r.join("app.py"), "ok\n").unwrap();

    // core.ignoreStat marks everything assume-unchanged on the next refresh.
    git(&r, &["config", "core.ignoreStat", "true"]);
    git(&r, &["update-index", "--really-refresh"]);
    std::fs::write(r.join("app.py"), "edit\n").unwrap();
    assert_eq!(observe_clean(d.path()).await.unwrap(), json!(false));
}

/// Kinds of change: staged but reverted, the executable bit, a directory replaced by a
/// symlink to a copy, a deleted file. Each is unclean; the twin (the restored tree) is
/// clean, and a contract rooted in a subdirectory sees the whole repository.
#[tokio::test]
async fn every_kind_of_change_is_seen() {
    use std::os::unix::fs::PermissionsExt;
    let d = tempfile::tempdir().unwrap();
    repo(d.path());
    let r = d.path().join("repo");
    std::fs::create_dir_all(r.join("src")).unwrap();
    std::fs::write(r.join("src/lib.py"), "x = 1\n").unwrap();
    std::os::unix::fs::symlink("src/lib.py", r.join("link")).unwrap();
    git(&r, &["add", "."]);
    git(&r, &["commit", "-q", "-m", "src"]);
    assert_eq!(observe_clean(d.path()).await.unwrap(), json!(true));

    // Staged, then the work tree put back.
    std::fs::write(r.join("src/lib.py"), "x = 2\n").unwrap();
    git(&r, &["add", "src/lib.py"]);
    std::fs::write(r.join("src/lib.py"), "x = 1\n").unwrap();
    assert_eq!(observe_clean(d.path()).await.unwrap(), json!(false));
    git(&r, &["reset", "-q"]);
    assert_eq!(observe_clean(d.path()).await.unwrap(), json!(true));

    let p = r.join("src/lib.py");
    std::fs::set_permissions(&p, std::fs::Permissions::from_mode(0o755)).unwrap();
    assert_eq!(observe_clean(d.path()).await.unwrap(), json!(false));
    std::fs::set_permissions(&p, std::fs::Permissions::from_mode(0o644)).unwrap();

    // src/ replaced by a symlink to an identical copy elsewhere.
    std::fs::rename(r.join("src"), d.path().join("src-copy")).unwrap();
    std::os::unix::fs::symlink(d.path().join("src-copy"), r.join("src")).unwrap();
    assert_eq!(observe_clean(d.path()).await.unwrap(), json!(false));
    std::fs::remove_file(r.join("src")).unwrap();
    std::fs::rename(d.path().join("src-copy"), r.join("src")).unwrap();

    std::fs::remove_file(r.join("link")).unwrap();
    assert_eq!(observe_clean(d.path()).await.unwrap(), json!(false));
    std::os::unix::fs::symlink("src/other.py", r.join("link")).unwrap();
    assert_eq!(observe_clean(d.path()).await.unwrap(), json!(false));
    std::fs::remove_file(r.join("link")).unwrap();
    std::os::unix::fs::symlink("src/lib.py", r.join("link")).unwrap();
    assert_eq!(observe_clean(d.path()).await.unwrap(), json!(true));

    let o = ok(run(
        &src(r#"{ git = { repo = "repo/src" } }"#),
        &ctx(d.path()),
        20.0,
    )
    .await);
    assert_eq!(o["clean"], json!(true));
    std::fs::write(r.join("top.txt"), "new").unwrap();
    let o = ok(run(
        &src(r#"{ git = { repo = "repo/src" } }"#),
        &ctx(d.path()),
        20.0,
    )
    .await);
    assert_eq!(o["clean"], json!(false));
}

/// Only committed `.gitignore` rules hide untracked files: a build directory the
/// committed `.gitignore` names is fine; `.git/info/exclude`, `core.excludesFile` and
/// an untracked `.gitignore` that hides itself are not.
#[tokio::test]
async fn only_committed_ignore_rules_hide_untracked_files() {
    let d = tempfile::tempdir().unwrap();
    repo(d.path());
    let r = d.path().join("repo");
    std::fs::write(r.join(".gitignore"), "target/\n*.pyc\nnode_modules/\n").unwrap();
    std::fs::create_dir_all(r.join("src")).unwrap();
    std::fs::write(r.join("src/a.py"), "a\n").unwrap();
    git(&r, &["add", "."]);
    git(&r, &["commit", "-q", "-m", "ignore"]);
    std::fs::create_dir_all(r.join("target/debug")).unwrap();
    std::fs::write(r.join("target/debug/bin"), "b").unwrap();
    std::fs::write(r.join("src/a.pyc"), "c").unwrap();
    std::fs::create_dir_all(r.join("node_modules/pkg")).unwrap();
    std::fs::write(r.join("node_modules/pkg/.gitignore"), "*\n").unwrap();
    assert_eq!(observe_clean(d.path()).await.unwrap(), json!(true));

    std::fs::write(r.join("src/secret.py"), "s").unwrap();
    std::fs::write(r.join("src/.gitignore"), "*\n").unwrap();
    assert_eq!(
        git(&r, &["status", "--porcelain"]),
        "",
        "plain git is fooled"
    );
    assert_eq!(observe_clean(d.path()).await.unwrap(), json!(false));
    std::fs::remove_file(r.join("src/.gitignore")).unwrap();

    std::fs::create_dir_all(r.join("newdir")).unwrap();
    std::fs::write(r.join("newdir/.gitignore"), "*\n").unwrap();
    std::fs::write(r.join("newdir/n.py"), "n").unwrap();
    std::fs::remove_file(r.join("src/secret.py")).unwrap();
    assert_eq!(observe_clean(d.path()).await.unwrap(), json!(false));
    std::fs::remove_dir_all(r.join("newdir")).unwrap();
    assert_eq!(observe_clean(d.path()).await.unwrap(), json!(true));

    // core.ignoreCase makes git take `A.PY` for the tracked `a.py`.
    git(&r, &["config", "core.ignoreCase", "true"]);
    std::fs::write(r.join("src/A.PY"), "new").unwrap();
    assert_eq!(
        git(&r, &["status", "--porcelain"]),
        "",
        "plain git is fooled"
    );
    assert_eq!(observe_clean(d.path()).await.unwrap(), json!(false));
    std::fs::remove_file(r.join("src/A.PY")).unwrap();
    git(&r, &["config", "--unset", "core.ignoreCase"]);

    std::fs::write(r.join("hidden.py"), "h").unwrap();
    std::fs::write(r.join(".git/info/exclude"), "hidden.py\n").unwrap();
    assert_eq!(
        git(&r, &["status", "--porcelain"]),
        "",
        "plain git is fooled"
    );
    assert_eq!(observe_clean(d.path()).await.unwrap(), json!(false));
    std::fs::write(r.join(".git/info/exclude"), "").unwrap();
    std::fs::write(d.path().join("excludes"), "hidden.py\n").unwrap();
    git(
        &r,
        &[
            "config",
            "core.excludesFile",
            &d.path().join("excludes").display().to_string(),
        ],
    );
    assert_eq!(
        git(&r, &["status", "--porcelain"]),
        "",
        "plain git is fooled"
    );
    assert_eq!(observe_clean(d.path()).await.unwrap(), json!(false));
}

/// When the tree is not clean the observation names the paths that differ (staged,
/// changed, deleted, untracked), each once, at most 20, the rest counted, scrubbed of
/// the contract's secrets; a clean tree names none. Naming more never changes
/// `clean` or turns it into an error.
#[tokio::test]
async fn unclean_paths_name_what_differs() {
    let d = tempfile::tempdir().unwrap();
    repo(d.path());
    let r = d.path().join("repo");
    let observe = |c: evident_probes::Context| async move {
        ok(run(&src(r#"{ git = { repo = "repo" } }"#), &c, 20.0).await)
    };
    let o = observe(ctx(d.path())).await;
    assert_eq!(o["clean"], json!(true));
    assert!(
        !o.contains_key("unclean_paths") && !o.contains_key("unclean_more"),
        "{o:?}"
    );

    // One untracked file: named.
    std::fs::write(r.join("stray.txt"), "x").unwrap();
    let o = observe(ctx(d.path())).await;
    assert_eq!(o["clean"], json!(false));
    assert_eq!(o["unclean_paths"], json!(["stray.txt"]));
    assert_eq!(o["unclean_more"], json!(0));
    assert!(!o.contains_key("unclean_stopped"), "{o:?}");

    // Staged (and untracked relative to HEAD: named once), changed, deleted, and 25
    // untracked files in a directory: 20 named in the order found, the rest counted.
    std::fs::write(r.join("gone.txt"), "g").unwrap();
    git(&r, &["add", "gone.txt"]);
    git(&r, &["commit", "-q", "-m", "gone"]);
    std::fs::remove_file(r.join("gone.txt")).unwrap();
    std::fs::write(r.join("new.txt"), "n").unwrap();
    git(&r, &["add", "new.txt"]);
    std::fs::write(r.join("zip.txt"), "changed\n").unwrap();
    std::fs::create_dir_all(r.join("many")).unwrap();
    for i in 0..25 {
        std::fs::write(r.join(format!("many/u{i:02}.txt")), "u").unwrap();
    }
    let o = observe(ctx(d.path())).await;
    assert_eq!(o["clean"], json!(false));
    // Found in this order: staged, missing, changed, then untracked as git lists them
    // (sorted: `many/…`, then `new.txt`, already named, then `stray.txt`).
    let named: Vec<String> = o["unclean_paths"]
        .as_array()
        .unwrap()
        .iter()
        .map(|v| v.as_str().unwrap().to_string())
        .collect();
    let mut want: Vec<String> = vec!["new.txt".into(), "gone.txt".into(), "zip.txt".into()];
    want.extend((0..17).map(|i| format!("many/u{i:02}.txt")));
    assert_eq!(named, want);
    // 1 staged + 1 missing + 1 changed + 25 + stray.txt = 29 paths: 20 named, 9 more.
    assert_eq!(o["unclean_more"], json!(9), "{o:?}");

    // A path that holds a secret of the contract is named scrubbed (`run` finds the
    // secret in no observation).
    std::fs::write(r.join(format!("leak-{}.txt", crate::SECRET)), "s").unwrap();
    let mut c = ctx(d.path());
    c.secrets.add(crate::SECRET);
    let o = observe(c).await;
    let leak = o["unclean_paths"][3].as_str().unwrap();
    assert!(leak.starts_with("leak-") && leak.ends_with(".txt"), "{o:?}");
    assert_eq!(o["unclean_more"], json!(10), "{o:?}");
}

/// Paths in a submodule are named under its path, a submodule at another commit by
/// its path; with an unborn HEAD, every staged file (named once).
#[tokio::test]
async fn unclean_paths_in_submodules_and_unborn_repositories() {
    let d = tempfile::tempdir().unwrap();
    repo(d.path());
    let r = d.path().join("repo");
    let sub = r.join("sub");
    std::fs::create_dir(&sub).unwrap();
    git(&sub, &["init", "-q", "-b", "main"]);
    std::fs::write(sub.join("s.txt"), "s\n").unwrap();
    git(&sub, &["add", "."]);
    git(&sub, &["commit", "-q", "-m", "sub"]);
    git(&r, &["add", "sub"]);
    git(&r, &["commit", "-q", "-m", "with sub"]);
    let observe =
        || async { ok(run(&src(r#"{ git = { repo = "repo" } }"#), &ctx(d.path()), 20.0).await) };
    assert_eq!(observe().await["clean"], json!(true));
    std::fs::write(sub.join("s.txt"), "edited\n").unwrap();
    let o = observe().await;
    assert_eq!(
        (&o["clean"], &o["unclean_paths"]),
        (&json!(false), &json!(["sub/s.txt"]))
    );
    git(&sub, &["commit", "-q", "-am", "moved"]);
    let o = observe().await;
    assert_eq!(
        (&o["clean"], &o["unclean_paths"]),
        (&json!(false), &json!(["sub"]))
    );

    let fresh = d.path().join("fresh");
    std::fs::create_dir(&fresh).unwrap();
    git(&fresh, &["init", "-q", "-b", "main"]);
    std::fs::write(fresh.join("a.txt"), "a").unwrap();
    git(&fresh, &["add", "a.txt"]);
    let o = ok(run(
        &src(r#"{ git = { repo = "fresh" } }"#),
        &ctx(d.path()),
        20.0,
    )
    .await);
    assert_eq!(o["commit_exists"], json!(false));
    assert_eq!(
        (&o["clean"], &o["unclean_paths"], &o["unclean_more"]),
        (&json!(false), &json!(["a.txt"]), &json!(0))
    );
}

/// Naming the paths never changes what `clean` decides: a differing file under a
/// conversion the probe does not run is still an error when it alone differs, and
/// still `clean = false`, without being named, when a staged change made the tree
/// unclean first (as before paths were named).
#[tokio::test]
async fn naming_unclean_paths_keeps_the_decision() {
    let d = tempfile::tempdir().unwrap();
    repo(d.path());
    let r = d.path().join("repo");
    std::fs::write(r.join(".gitattributes"), "*.conv filter=x\n").unwrap();
    std::fs::write(r.join("a.conv"), "a\n").unwrap();
    std::fs::write(r.join("b.txt"), "b\n").unwrap();
    git(&r, &["add", "."]);
    git(&r, &["commit", "-q", "-m", "conv"]);
    std::fs::write(r.join("a.conv"), "edited\n").unwrap();
    let e = observe_clean(d.path()).await.unwrap_err();
    assert!(e.to_string().contains("a.conv"), "{e}");
    // Untracked files come after the tracked ones: still the same error.
    std::fs::write(r.join("stray.txt"), "x").unwrap();
    let e = observe_clean(d.path()).await.unwrap_err();
    assert!(e.to_string().contains("a.conv"), "{e}");
    std::fs::write(r.join("b.txt"), "staged\n").unwrap();
    git(&r, &["add", "b.txt"]);
    let o = ok(run(&src(r#"{ git = { repo = "repo" } }"#), &ctx(d.path()), 20.0).await);
    assert_eq!(o["clean"], json!(false));
    assert_eq!(o["unclean_paths"], json!(["b.txt", "stray.txt"]), "{o:?}");
}

/// A Git LFS file (pointer committed, the object in the work tree) reads clean without
/// git-lfs running; an edit to it does not.
#[tokio::test]
async fn lfs_pointer_files_read_clean_without_git_lfs() {
    let d = tempfile::tempdir().unwrap();
    repo(d.path());
    let r = d.path().join("repo");
    let content = b"large binary content\n";
    let pointer = format!(
        "version https://git-lfs.github.com/spec/v1\noid sha256:{}\nsize {}\n",
        hex::encode(Sha256::digest(content)),
        content.len()
    );
    std::fs::write(
        r.join(".gitattributes"),
        "*.bin filter=lfs diff=lfs merge=lfs -text\n",
    )
    .unwrap();
    std::fs::write(r.join("model.bin"), &pointer).unwrap();
    git(&r, &["add", "."]);
    git(&r, &["commit", "-q", "-m", "lfs"]);
    std::fs::write(r.join("model.bin"), content).unwrap();
    git(&r, &["config", "filter.lfs.clean", "git-lfs clean -- %f"]);
    git(&r, &["config", "filter.lfs.smudge", "git-lfs smudge -- %f"]);
    git(&r, &["config", "filter.lfs.required", "true"]);
    assert_eq!(observe_clean(d.path()).await.unwrap(), json!(true));
    std::fs::write(r.join("model.bin"), b"other content\n").unwrap();
    assert_eq!(observe_clean(d.path()).await.unwrap(), json!(false));
    std::fs::write(r.join("model.bin"), &pointer).unwrap();
    assert_eq!(observe_clean(d.path()).await.unwrap(), json!(true));
}

/// The loose object file holding `oid`.
fn loose(repo: &Path, oid: &str) -> std::path::PathBuf {
    repo.join(".git/objects").join(&oid[..2]).join(&oid[2..])
}

/// Put the object file of `from` where `to`'s is: git then reads `from`'s content
/// under `to`'s id (it does not check the hash when reading).
fn forge(repo: &Path, to: &str, from: &str) {
    let dst = loose(repo, to);
    std::fs::remove_file(&dst).unwrap();
    std::fs::copy(loose(repo, from), &dst).unwrap();
}

/// The object store is the writer's: a loose object replaced by another's file makes
/// plain git show other content under a committed id. The probe hashes every object it
/// reads (commit, trees, blob), so the forgery is an error, never a match; untouched
/// objects read as before (the twin).
#[tokio::test]
async fn a_forged_object_store_is_detected() {
    let d = tempfile::tempdir().unwrap();
    repo(d.path());
    let r = d.path().join("repo");
    let c = ctx(d.path());
    // A file at HEAD made to read as its first version.
    let real = git(&r, &["rev-parse", "HEAD:zip.txt"]);
    let old = git(&r, &["rev-parse", "HEAD~1:zip.txt"]);
    forge(&r, &real, &old);
    assert_eq!(
        git(&r, &["cat-file", "blob", "HEAD:zip.txt"]),
        "94107",
        "plain git is fooled"
    );
    let e = err(run(
        &src(r#"{ git = { repo = "repo", file = "zip.txt" } }"#),
        &c,
        20.0,
    )
    .await);
    assert!(e.to_string().contains("does not hash to its id"), "{e}");
    // The first commit's objects are untouched and read fine.
    let o = ok(run(
        &src(r#"{ git = { repo = "repo", rev = "HEAD~1", file = "zip.txt" } }"#),
        &c,
        20.0,
    )
    .await);
    assert_eq!(
        o["file_sha256"],
        json!(hex::encode(Sha256::digest(b"94107\n")))
    );

    // `clean` after committing nothing: the edit staged, and HEAD's tree object
    // replaced by a tree that holds the edit.
    let d = tempfile::tempdir().unwrap();
    repo(d.path());
    let r = d.path().join("repo");
    let head_tree = git(&r, &["rev-parse", "HEAD^{tree}"]);
    std::fs::write(r.join("zip.txt"), "00000\n").unwrap();
    git(&r, &["add", "zip.txt"]);
    let edited_tree = git(&r, &["write-tree"]);
    forge(&r, &head_tree, &edited_tree);
    // (git checks tree hashes itself; either way nothing is observed.)
    let e = observe_clean(d.path()).await.unwrap_err();
    assert!(e.to_string().contains("hash"), "{e}");
}

/// A SHA-256 repository reads the same: objects hashed with SHA-256.
#[tokio::test]
async fn sha256_repositories() {
    let d = tempfile::tempdir().unwrap();
    let r = d.path().join("repo");
    std::fs::create_dir_all(r.join("src")).unwrap();
    git(&r, &["init", "-q", "--object-format=sha256", "-b", "main"]);
    std::fs::write(r.join("src/zip.txt"), "94107\n").unwrap();
    git(&r, &["add", "."]);
    git(&r, &["commit", "-q", "-m", "first"]);
    let c = ctx(d.path());
    let o = ok(run(
        &src(r#"{ git = { repo = "repo", file = "src/zip.txt" } }"#),
        &c,
        20.0,
    )
    .await);
    assert_eq!(o["clean"], json!(true), "{o:?}");
    assert_eq!(o["commit"].as_str().unwrap().len(), 64);
    assert_eq!(
        o["file_sha256"],
        json!(hex::encode(Sha256::digest(b"94107\n")))
    );
    std::fs::write(r.join("src/zip.txt"), "10001\n").unwrap();
    assert_eq!(observe_clean(d.path()).await.unwrap(), json!(false));
}

/// Every file under `dir` with its content and modification time.
fn snapshot(dir: &Path) -> Vec<(std::path::PathBuf, Vec<u8>, std::time::SystemTime)> {
    let mut out = Vec::new();
    let mut stack = vec![dir.to_path_buf()];
    while let Some(d) = stack.pop() {
        for e in std::fs::read_dir(&d).unwrap() {
            let e = e.unwrap();
            let m = e.metadata().unwrap();
            if m.is_dir() {
                stack.push(e.path());
            } else {
                out.push((
                    e.path(),
                    std::fs::read(e.path()).unwrap_or_default(),
                    m.modified().unwrap(),
                ));
            }
        }
    }
    out.sort();
    out
}
