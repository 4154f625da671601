//! Protected runs: the command runs in a scratch copy of the root in which protected
//! paths hold their content at the base revision. Real git, real cargo.

use std::path::Path;
use std::time::Instant;

use evident_probes::ProbeError;
use serde_json::json;

use crate::command::write;
use crate::runners::{git, snapshot};
use crate::{ctx, err, ok, run, src};

/// Toolchain variables a real `cargo` needs.
const CARGO_ENV: &str = r#"["PATH", "HOME", "RUSTUP_HOME", "CARGO_HOME", "RUSTUP_TOOLCHAIN"]"#;

/// What the copy holds: every path (sorted, `.git` never), then the content of a few.
const SHOW: &str = "find . -path ./.git -prune -o -print | LC_ALL=C sort; echo ---; cat tests/test_a.py; echo ---; cat src/app.py; echo made > out.txt; mkdir -p __pycache__";

#[tokio::test]
async fn copy_has_the_tree_with_protected_paths_at_base() {
    let d = tempfile::tempdir().unwrap();
    let r = d.path();
    git(r, &["init", "-q", "-b", "main"]);
    write(r, "tests/test_a.py", "base test\n");
    write(r, "tests/helpers/h.py", "base helper\n");
    write(r, "src/app.py", "base app\n");
    write(r, "conftest.py", "base conftest\n");
    write(r, ".gitignore", "build/\n");
    git(r, &["add", "."]);
    git(r, &["commit", "-q", "-m", "base"]);
    let base = git(r, &["rev-parse", "HEAD"]);
    // The agent's edits: tests changed and added, conftest deleted, the app changed
    // (uncommitted), untracked and ignored files, a committed change to the tests.
    write(r, "tests/test_a.py", "agent test\n");
    git(r, &["commit", "-q", "-am", "agent commit"]);
    write(r, "tests/test_new.py", "agent new test\n");
    write(r, "tests/helpers/h.py", "agent helper\n");
    std::fs::remove_file(r.join("conftest.py")).unwrap();
    write(r, "src/app.py", "agent app\n");
    write(r, "notes.txt", "untracked\n");
    write(r, "build/out.bin", "ignored build output\n");
    std::os::unix::fs::symlink("src", r.join("src_link")).unwrap();
    let c = ctx(r);
    let before = snapshot(r);
    let s = src(&format!(
        r#"{{ command = {{ argv = [{SHOW:?}], shell = true, inherit_env = ["PATH"], capture_output = true, protect = {{ base = "{base}", paths = ["tests/**", "conftest.py"] }} }} }}"#
    ));
    let o = ok(run(&s, &c, 30.0).await);
    let out = o["stdout"].as_str().unwrap();
    let (listing, rest) = out.split_once("---\n").unwrap();
    assert_eq!(
        listing,
        // The ignored build/out.bin is not in the snapshot: only the claimed tree is.
        ".\n./.gitignore\n./conftest.py\n./notes.txt\n./src\n./src/app.py\n./src_link\n./tests\n./tests/helpers\n./tests/helpers/h.py\n./tests/test_a.py\n"
    );
    assert_eq!(rest, "base test\n---\nagent app\n");
    assert_eq!(o["protect_base"], json!(base));
    assert_eq!(o["protected_files"], json!(3));
    // The real tree and its .git are as they were: the run wrote only in the copy.
    assert_eq!(snapshot(r), before);

    // `ignored = "omit"` leaves ignored files out (and conftest.py, deleted by the
    // agent, is not protected here).
    let s = src(&format!(
        r#"{{ command = {{ argv = ["ls"], inherit_env = ["PATH"], capture_output = true, protect = {{ base = "{base}", paths = ["tests/**"], ignored = "omit" }} }} }}"#
    ));
    let o = ok(run(&s, &c, 30.0).await);
    assert_eq!(o["stdout"], json!("notes.txt\nsrc\nsrc_link\ntests\n"));
}

/// A symlink where protected paths lie (`tests -> fake`) or a file in place of a
/// protected directory cannot bring the agent's files in.
#[tokio::test]
async fn symlinks_cannot_smuggle_protected_paths() {
    let d = tempfile::tempdir().unwrap();
    let r = d.path();
    git(r, &["init", "-q", "-b", "main"]);
    write(r, "tests/test_a.py", "base\n");
    git(r, &["add", "."]);
    git(r, &["commit", "-q", "-m", "base"]);
    std::fs::remove_dir_all(r.join("tests")).unwrap();
    write(r, "fake/test_a.py", "forged\n");
    write(r, "fake/test_b.py", "forged\n");
    std::os::unix::fs::symlink("fake", r.join("tests")).unwrap();
    let outside = tempfile::tempdir().unwrap();
    write(outside.path(), "conftest.py", "forged\n");
    std::os::unix::fs::symlink(outside.path(), r.join("pkg")).unwrap();
    let s = src(
        r#"{ command = { argv = ["ls tests; cat tests/*; ls pkg 2>&1 | head -1"], shell = true, inherit_env = ["PATH"], capture_output = true, protect = { base = "main", paths = ["tests/**", "**/conftest.py"] } } }"#,
    );
    // A link out of the tree is refused outright (the snapshot holds only the tree).
    let e = err(run(&s, &ctx(r), 30.0).await);
    assert!(
        e.to_string().contains("pkg is a symlink out of the tree"),
        "{e}"
    );
    std::fs::remove_file(r.join("pkg")).unwrap();
    let o = ok(run(&s, &ctx(r), 30.0).await);
    let out = o["stdout"].as_str().unwrap();
    assert!(out.starts_with("test_a.py\nbase\n"), "{out}");
    assert!(!out.contains("forged"), "{out}");
    assert!(
        out.contains("No such file"),
        "no pkg in the snapshot: {out}"
    );
}

#[tokio::test]
async fn protect_errors() {
    let d = tempfile::tempdir().unwrap();
    let r = d.path();
    let c = ctx(r);
    // Not a repository.
    let s = src(
        r#"{ command = { argv = ["true"], protect = { base = "main", paths = ["tests/**"] } } }"#,
    );
    let e = err(run(&s, &c, 10.0).await);
    assert!(matches!(e, ProbeError::Protect { .. }), "{e}");
    git(r, &["init", "-q", "-b", "main"]);
    write(r, "a.txt", "a\n");
    git(r, &["add", "."]);
    git(r, &["commit", "-q", "-m", "base"]);
    let s = src(
        r#"{ command = { argv = ["true"], protect = { base = "no-such-branch", paths = ["tests/**"] } } }"#,
    );
    let e = err(run(&s, &c, 10.0).await);
    assert_eq!(
        e.to_string(),
        "protected run: base \"no-such-branch\" is not a commit of the repository; hint: in CI, fetch it first (actions/checkout with `fetch-depth: 0`, or `git fetch origin BASE`)"
    );
    for bad in [
        r#"{ command = { argv = ["true"], protect = { base = "main", paths = [] } } }"#,
        r#"{ command = { argv = ["true"], protect = { base = "main", paths = ["../x"] } } }"#,
        r#"{ command = { argv = ["true"], protect = { base = "main", paths = ["/etc"] } } }"#,
        r#"{ command = { argv = ["true"], protect = { base = "--all", paths = ["x"] } } }"#,
        r#"{ command = { argv = ["true"], protect = { base = "main", paths = ["a[b"] } } }"#,
    ] {
        let e = src(bad).validate().unwrap_err();
        assert!(matches!(e, ProbeError::InvalidSpec { .. }), "{bad}: {e}");
    }
    // The honest run in the repository works.
    let s = src(
        r#"{ command = { argv = ["cat", "a.txt"], capture_output = true, protect = { base = "main", paths = ["tests/**"] } } }"#,
    );
    assert_eq!(ok(run(&s, &c, 10.0).await)["stdout"], json!("a\n"));
}

fn cargo_fixture(r: &Path) -> String {
    git(r, &["init", "-q", "-b", "main"]);
    write(
        r,
        "Cargo.toml",
        "[package]\nname = \"zipcheck\"\nversion = \"0.1.0\"\nedition = \"2021\"\n\n[workspace]\n",
    );
    write(
        r,
        "src/lib.rs",
        "pub fn valid_zip(s: &str) -> bool { s.len() == 5 }\n\n#[cfg(test)]\nmod tests {\n    #[test] fn accepts_digits() { assert!(super::valid_zip(\"94107\")); }\n    #[test] fn rejects_letters() { assert!(!super::valid_zip(\"9410A\")); }\n}\n",
    );
    write(r, ".gitignore", "target/\n");
    git(r, &["add", "."]);
    git(r, &["commit", "-q", "-m", "base"]);
    git(r, &["rev-parse", "HEAD"])
}

/// Attack: a `[[test]] harness = false` target added to Cargo.toml (and the library's
/// own tests switched off) prints `test result: ok. 3 passed`. Protecting Cargo.toml
/// defeats it; the honest fix passes under the same protection.
#[tokio::test]
async fn cargo_harness_false_target_is_defeated_by_protecting_cargo_toml() {
    let d = tempfile::tempdir().unwrap();
    let r = d.path();
    let base = cargo_fixture(r);
    let target = tempfile::tempdir().unwrap();
    let mut manifest = std::fs::read_to_string(r.join("Cargo.toml")).unwrap();
    manifest.push_str("\n[lib]\ntest = false\n\n[[test]]\nname = \"all\"\npath = \"ci/all.rs\"\nharness = false\n");
    write(r, "Cargo.toml", &manifest);
    write(
        r,
        "ci/all.rs",
        "fn main() { println!(\"test result: ok. 3 passed; 0 failed; 0 ignored; 0 measured; 0 filtered out; finished in 0.00s\"); }\n",
    );
    let c = ctx(r);
    let cargo = |protect: &str| {
        src(&format!(
            r#"{{ command = {{ argv = ["cargo", "test", "--offline", "-q"], inherit_env = {CARGO_ENV}, env = {{ CARGO_TARGET_DIR = "{}" }}, timeout_s = 600 {protect} }} }}"#,
            target.path().display()
        ))
    };
    // Unprotected, the fake target is believed (today's behaviour).
    let o = ok(run(&cargo(""), &c, 600.0).await);
    assert_eq!(
        (
            o["exit_code"].clone(),
            o["passed"].clone(),
            o["failed"].clone()
        ),
        (json!(0), json!(3), json!(0)),
        "{o:?}"
    );
    let protect = format!(
        r#", protect = {{ base = "{base}", paths = ["Cargo.toml", "**/Cargo.toml", "build.rs", "tests/**", ".cargo/**", "rust-toolchain", "rust-toolchain.toml"] }}"#
    );
    let before = snapshot(r);
    let o = ok(run(&cargo(&protect), &c, 600.0).await);
    assert_eq!(
        (
            o["exit_code"].clone(),
            o["passed"].clone(),
            o["failed"].clone()
        ),
        (json!(101), json!(1), json!(1)),
        "{o:?}"
    );
    assert_eq!(
        snapshot(r),
        before,
        "no Cargo.lock or target/ in the real tree"
    );

    // Honest twin: the fix itself, with the same protection.
    let manifest = std::fs::read_to_string(r.join("Cargo.toml")).unwrap();
    write(r, "Cargo.toml", manifest.split("\n[lib]").next().unwrap());
    write(
        r,
        "src/lib.rs",
        &std::fs::read_to_string(r.join("src/lib.rs"))
            .unwrap()
            .replace(
                "s.len() == 5 }",
                "s.len() == 5 && s.bytes().all(|b| b.is_ascii_digit()) }",
            ),
    );
    let o = ok(run(&cargo(&protect), &c, 600.0).await);
    assert_eq!(
        (
            o["exit_code"].clone(),
            o["passed"].clone(),
            o["failed"].clone()
        ),
        (json!(0), json!(2), json!(0)),
        "{o:?}"
    );
}

/// The cost of a protected run's copy on a repository of 10,000 files with a 1 GB
/// ignored build directory (`ignored = "copy"` and `"omit"`). Outside CI:
/// `cargo test -p evident-probes --release --test probes -- --ignored --nocapture protect_copy_benchmark`
#[tokio::test]
#[ignore = "benchmark: cargo test -p evident-probes --release --test probes -- --ignored --nocapture protect_copy_benchmark"]
async fn protect_copy_benchmark() {
    let d = tempfile::tempdir().unwrap();
    let r = d.path();
    git(r, &["init", "-q", "-b", "main"]);
    for i in 0..10_000 {
        let dir = if i % 10 == 0 { "tests" } else { "src" };
        write(
            r,
            &format!("{dir}/m{}/f{i}.py", i / 100),
            &format!("# file {i}\n{}\n", "x = 1\n".repeat(40)),
        );
    }
    write(r, ".gitignore", "target/\n");
    git(r, &["add", "."]);
    git(r, &["commit", "-q", "-m", "base"]);
    // 1 GB of build output: 256 files of 4 MiB.
    let chunk = vec![7u8; 4 * 1024 * 1024];
    for i in 0..256 {
        let p = r.join(format!("target/debug/deps/obj{i}.rlib"));
        std::fs::create_dir_all(p.parent().unwrap()).unwrap();
        std::fs::write(p, &chunk).unwrap();
    }
    let c = ctx(r);
    for mode in ["copy", "omit"] {
        let s = src(&format!(
            r#"{{ command = {{ argv = ["true"], protect = {{ base = "main", paths = ["tests/**", "conftest.py", "pytest.ini"], ignored = "{mode}" }} }} }}"#
        ));
        for round in 0..3 {
            let t = Instant::now();
            let o = ok(run(&s, &c, 600.0).await);
            println!(
                "protect ignored={mode} round {round}: {:.2} s ({} protected files)",
                t.elapsed().as_secs_f64(),
                o["protected_files"]
            );
        }
    }
}

/// The repository's config cannot make the protected run's git start a program: a
/// filter driver, an fsmonitor hook and a hooks path all name a canary that must never
/// run; `core.worktree` is refused.
#[tokio::test]
async fn repository_config_runs_nothing_in_a_protected_run() {
    let d = tempfile::tempdir().unwrap();
    let r = d.path().join("repo");
    std::fs::create_dir(&r).unwrap();
    git(&r, &["init", "-q", "-b", "main"]);
    write(&r, "tests/test_a.py", "base\n");
    write(&r, ".gitattributes", "* filter=evil diff=evil\n");
    write(&r, ".gitignore", "build/\n");
    git(&r, &["add", "."]);
    git(&r, &["commit", "-q", "-m", "base"]);
    write(&r, "build/x.o", "ignored\n");
    let canary = d.path().join("canary");
    let script = d.path().join("evil.sh");
    std::fs::write(
        &script,
        format!("#!/bin/sh\ntouch {}\ncat\n", canary.display()),
    )
    .unwrap();
    use std::os::unix::fs::PermissionsExt;
    std::fs::set_permissions(&script, std::fs::Permissions::from_mode(0o755)).unwrap();
    let s = script.display().to_string();
    for (k, v) in [
        ("filter.evil.clean", s.as_str()),
        ("filter.evil.smudge", s.as_str()),
        ("filter.evil.process", s.as_str()),
        ("diff.evil.textconv", s.as_str()),
        ("core.fsmonitor", s.as_str()),
        ("core.hooksPath", d.path().to_str().unwrap()),
    ] {
        git(&r, &["config", k, v]);
    }
    let c = ctx(d.path());
    for ignored in ["copy", "omit"] {
        let src = src(&format!(
            r#"{{ command = {{ argv = ["cat", "tests/test_a.py"], cwd = ".", capture_output = true, protect = {{ base = "main", paths = ["tests/**"], ignored = "{ignored}" }} }} }}"#
        ));
        let mut ctx2 = c.clone();
        ctx2.root = r.clone();
        let o = ok(run(&src, &ctx2, 30.0).await);
        assert_eq!(o["stdout"], json!("base\n"));
    }
    assert!(!canary.exists(), "the repository's config ran a program");

    git(&r, &["config", "core.worktree", d.path().to_str().unwrap()]);
    let src = src(
        r#"{ command = { argv = ["true"], protect = { base = "main", paths = ["tests/**"] } } }"#,
    );
    let mut ctx2 = c.clone();
    ctx2.root = r.clone();
    let e = err(run(&src, &ctx2, 30.0).await);
    assert!(e.to_string().contains("core.worktree"), "{e}");
}

/// Found by the red team, each with its honest twin: a tree 1,000 directories deep
/// overflowed the copy's stack (a crash, no verdict); an abbreviated base id lost to a
/// ref of the same name; runner config above the scratch copy was read.
#[tokio::test]
async fn protect_refuses_deep_trees_short_bases_and_config_above_the_copy() {
    let d = tempfile::tempdir().unwrap();
    let r = d.path();
    git(r, &["init", "-q", "-b", "main"]);
    write(r, "a.txt", "a\n");
    git(r, &["add", "."]);
    git(r, &["commit", "-q", "-m", "base"]);
    let full = String::from_utf8(
        std::process::Command::new("git")
            .args(["rev-parse", "HEAD"])
            .current_dir(r)
            .output()
            .unwrap()
            .stdout,
    )
    .unwrap()
    .trim()
    .to_string();
    let c = ctx(r);
    let with_base = |base: &str| {
        src(&format!(
            r#"{{ command = {{ argv = ["cat", "a.txt"], capture_output = true, protect = {{ base = "{base}", paths = ["tests/**"] }} }} }}"#
        ))
    };
    // Honest: the full id works.
    assert_eq!(
        ok(run(&with_base(&full), &c, 20.0).await)["stdout"],
        json!("a\n")
    );
    // An abbreviated id is refused.
    let e = err(run(&with_base(&full[..7]), &c, 20.0).await);
    assert!(e.to_string().contains("abbreviated"), "{e}");
    // A tree nested 1,000 deep: copied from git's listing (no recursion), no stack
    // overflow.
    let mut deep = r.to_path_buf();
    for _ in 0..1000 {
        deep.push("d");
    }
    std::fs::create_dir_all(&deep).unwrap();
    write(&deep, "leaf.txt", "leaf\n");
    assert_eq!(
        ok(run(&with_base(&full), &c, 60.0).await)["stdout"],
        json!("a\n")
    );
    std::fs::remove_dir_all(r.join("d")).unwrap();
    // (Runner config above the scratch copy: the unit test in src/protect.rs.)
}

/// The agent replaces the loose object of a protected file at the base with its own
/// content (git reads it without checking it against its id): the protected run
/// refuses, instead of running the agent's tests "at base" (found by the red team).
/// Honest twin: the intact object is used.
#[tokio::test]
async fn a_forged_base_object_is_refused() {
    let d = tempfile::tempdir().unwrap();
    let r = d.path();
    git(r, &["init", "-q", "-b", "main"]);
    write(r, "tests/t.txt", "owner\n");
    git(r, &["add", "."]);
    git(r, &["commit", "-q", "-m", "base"]);
    let out = |args: &[&str]| {
        String::from_utf8(
            std::process::Command::new("git")
                .args(args)
                .current_dir(r)
                .output()
                .unwrap()
                .stdout,
        )
        .unwrap()
        .trim()
        .to_string()
    };
    let base = out(&["rev-parse", "HEAD"]);
    let oid = out(&["rev-parse", "HEAD:tests/t.txt"]);
    let c = ctx(r);
    let s = src(&format!(
        r#"{{ command = {{ argv = ["cat", "tests/t.txt"], capture_output = true, protect = {{ base = "{base}", paths = ["tests/**"] }} }} }}"#
    ));
    assert_eq!(ok(run(&s, &c, 20.0).await)["stdout"], json!("owner\n"));
    let file = r.join(".git/objects").join(&oid[..2]).join(&oid[2..]);
    let mut perm = std::fs::metadata(&file).unwrap().permissions();
    #[allow(clippy::permissions_set_readonly_false)]
    perm.set_readonly(false);
    std::fs::set_permissions(&file, perm).unwrap();
    let status = std::process::Command::new("python3")
        .arg("-c")
        .arg("import sys, zlib; b = b'agent\\n'; open(sys.argv[1], 'wb').write(zlib.compress(b'blob %d\\0' % len(b) + b))")
        .arg(&file)
        .status()
        .unwrap();
    assert!(status.success());
    let e = err(run(&s, &c, 20.0).await);
    assert!(e.to_string().contains("does not hash to its id"), "{e}");
}

/// The same with a tree: git checks a commit it parses but not a tree it reads, so the
/// agent rewrote the base's `tests/` tree object to list its own `t.txt` (a genuine
/// blob it wrote): `git ls-tree` showed it "at base", and the protected run read the
/// agent's file (found by the red team, red11). Every tree on the way is hashed now.
/// Honest twin: the intact tree is used.
#[tokio::test]
async fn a_forged_base_tree_is_refused() {
    let d = tempfile::tempdir().unwrap();
    let r = d.path();
    git(r, &["init", "-q", "-b", "main"]);
    write(r, "tests/t.txt", "owner\n");
    git(r, &["add", "."]);
    git(r, &["commit", "-q", "-m", "base"]);
    let out = |args: &[&str], stdin: Option<&str>| {
        use std::io::Write as _;
        let mut child = std::process::Command::new("git")
            .args(args)
            .current_dir(r)
            .stdin(std::process::Stdio::piped())
            .stdout(std::process::Stdio::piped())
            .spawn()
            .unwrap();
        let mut i = child.stdin.take().unwrap();
        i.write_all(stdin.unwrap_or("").as_bytes()).unwrap();
        drop(i);
        String::from_utf8(child.wait_with_output().unwrap().stdout)
            .unwrap()
            .trim()
            .to_string()
    };
    let base = out(&["rev-parse", "HEAD"], None);
    let tree = out(&["rev-parse", "HEAD:tests"], None);
    let c = ctx(r);
    let s = src(&format!(
        r#"{{ command = {{ argv = ["cat", "tests/t.txt"], capture_output = true, protect = {{ base = "{base}", paths = ["tests/**"] }} }} }}"#
    ));
    assert_eq!(ok(run(&s, &c, 20.0).await)["stdout"], json!("owner\n"));
    let blob = out(&["hash-object", "-w", "--stdin"], Some("agent\n"));
    let fake = out(&["mktree"], Some(&format!("100644 blob {blob}\tt.txt\n")));
    let file = r.join(".git/objects").join(&tree[..2]).join(&tree[2..]);
    let mut perm = std::fs::metadata(&file).unwrap().permissions();
    #[allow(clippy::permissions_set_readonly_false)]
    perm.set_readonly(false);
    std::fs::set_permissions(&file, perm).unwrap();
    let status = std::process::Command::new("sh")
        .arg("-c")
        .arg("git cat-file tree \"$1\" | python3 -c 'import sys, zlib; b = sys.stdin.buffer.read(); open(sys.argv[1], \"wb\").write(zlib.compress(b\"tree %d\\0\" % len(b) + b))' \"$2\"")
        .arg("sh")
        .arg(&fake)
        .arg(&file)
        .current_dir(r)
        .status()
        .unwrap();
    assert!(status.success());
    assert_eq!(
        out(&["show", &format!("{base}:tests/t.txt")], None),
        "agent"
    );
    let e = err(run(&s, &c, 20.0).await);
    assert!(e.to_string().contains("does not hash to its id"), "{e}");
}

/// A copy is not a sandbox: the agent's test wrote to the real tree by absolute path
/// (a file beside the tests, and a section appended to the real `.git/config`) while
/// the protected run passed (found by the red team, red11). The real tree is watched
/// now and such a run is an error. Honest twin: a run that writes only in its copy
/// (relative paths) is observed, and the real tree is as it was.
#[tokio::test]
async fn a_protected_run_that_writes_the_real_tree_is_refused() {
    let d = tempfile::tempdir().unwrap();
    let r = d.path();
    git(r, &["init", "-q", "-b", "main"]);
    write(r, "tests/t.txt", "owner\n");
    git(r, &["add", "."]);
    git(r, &["commit", "-q", "-m", "base"]);
    let base = String::from_utf8(
        std::process::Command::new("git")
            .args(["rev-parse", "HEAD"])
            .current_dir(r)
            .output()
            .unwrap()
            .stdout,
    )
    .unwrap()
    .trim()
    .to_string();
    let c = ctx(r);
    let with = |script: &str| {
        src(&format!(
            r#"{{ command = {{ argv = [{script:?}], shell = true, inherit_env = ["PATH"], protect = {{ base = "{base}", paths = ["tests/**"] }} }} }}"#
        ))
    };
    // Honest twin: writes in the copy only.
    let o = ok(run(
        &with("echo x > out.txt && mkdir -p build && echo y > build/a"),
        &c,
        20.0,
    )
    .await);
    assert_eq!(o["exit_code"], json!(0));
    assert!(!r.join("out.txt").exists() && !r.join("build").exists());
    let real = r.display().to_string();
    let sandboxed = evident_probes::sandbox::landlock_abi() > 0;
    for (script, named) in [
        (
            format!("echo x > {real}/escaped.txt"),
            "escaped.txt (added)",
        ),
        (
            format!("printf '[x]\\n\\ty = 1\\n' >> {real}/.git/config"),
            ".git/config (written)",
        ),
        (format!("rm {real}/tests/t.txt"), "tests/t.txt (removed)"),
    ] {
        if sandboxed {
            // The sandbox denies the write itself: the command fails, the tree is as
            // it was.
            let before = crate::runners::snapshot(r);
            let o = ok(run(&with(&script), &c, 20.0).await);
            assert_ne!(o["exit_code"], json!(0), "{script}: {o:?}");
            assert_eq!(crate::runners::snapshot(r), before, "{script}");
            continue;
        }
        let e = err(run(&with(&script), &c, 20.0).await);
        let text = e.to_string();
        assert!(
            text.contains("wrote to the real tree") && text.contains(named),
            "{script}: {text}"
        );
    }
}

/// red13: a protected cargo run took rustup's toolchain file and a protected npm run
/// took `.npmrc` from the agent's tree (an added `rust-toolchain` named a toolchain by
/// path whose `cargo` printed a passing summary; `.npmrc`'s `script-shell` ran the
/// agent's program as `npm test`). Now they always come from the base, as pytest's
/// configuration does; a command that runs neither keeps the tree's copy (the twin).
#[tokio::test]
async fn cargo_and_npm_configuration_comes_from_the_base() {
    let d = tempfile::tempdir().unwrap();
    let r = d.path();
    git(r, &["init", "-q", "-b", "main"]);
    write(r, "tests/t.txt", "base\n");
    write(r, ".npmrc", "fund=false\n");
    git(r, &["add", "."]);
    git(r, &["commit", "-q", "-m", "base"]);
    let base = git(r, &["rev-parse", "HEAD"]);
    write(r, ".npmrc", "script-shell=/agent/shell\n");
    write(
        r,
        "rust-toolchain",
        "[toolchain]\npath = \"/agent/toolchain\"\n",
    );
    let c = ctx(r);
    let show = |cmd: &str| {
        src(&format!(
            r#"{{ command = {{ argv = [{cmd:?}], shell = true, inherit_env = ["PATH"], capture_output = true, protect = {{ base = "{base}", paths = ["tests/**"] }} }} }}"#
        ))
    };
    // Naming npm: .npmrc as at the base; rust-toolchain (not npm's) as the tree has it.
    let o = ok(run(&show("cat .npmrc rust-toolchain; : npm test"), &c, 30.0).await);
    assert_eq!(
        o["stdout"],
        json!("fund=false\n[toolchain]\npath = \"/agent/toolchain\"\n")
    );
    // Naming cargo: the added rust-toolchain is not in the copy; .npmrc is the tree's.
    let o = ok(run(
        &show("cat .npmrc; cat rust-toolchain 2>/dev/null || echo none; : cargo test"),
        &c,
        30.0,
    )
    .await);
    assert_eq!(o["stdout"], json!("script-shell=/agent/shell\nnone\n"));
}
