//! The hermetic test witness (issue 22): each command check runs in a snapshot of exactly
//! the claimed tree, sandboxed, its verdict read from the runner's own report. Each
//! attack here got `verified` for undone work before the snapshot (stale bytecode, a
//! stale build, runner config from an unprotected place, a protected test rewritten by
//! the run, a symlink out of the tree, code read from outside); each has its honest
//! twin, which must still pass. Real git, pytest, cargo and the kernel's sandbox.

use std::path::Path;
use std::process::Command;

use evident_probes::{ProbeError, Source};
use serde_json::json;

use crate::command::{pytest_missing, write};
use crate::runners::git;
use crate::{ctx, err, ok, run, src};

const CALC_RIGHT: &str = "def add(a, b):\n    return a + b\n";
const CALC_WRONG: &str = "def add(a, b):\n    return a - b\n";
const TEST_CALC: &str = "from calc import add\n\ndef test_add():\n    assert add(2, 3) == 5\n";

/// pytest with the tests protected from the base, as the documented recipe writes it.
fn protected_pytest(base: &str, extra: &str) -> Source {
    src(&format!(
        r#"{{ command = {{ argv = ["python3", "-m", "pytest", "-q"], inherit_env = ["PATH", "HOME"], timeout_s = 120, protect = {{ base = "{base}", paths = ["test_*.py", "tests/**"] }} {extra} }} }}"#
    ))
}

/// A repository whose base holds the right code and its test.
fn calc_repo(root: &Path) -> String {
    git(root, &["init", "-q", "-b", "main"]);
    write(root, ".gitignore", "__pycache__/\n*.pyc\ntarget/\n");
    write(root, "calc.py", CALC_RIGHT);
    write(root, "test_calc.py", TEST_CALC);
    git(root, &["add", "."]);
    git(root, &["commit", "-q", "-m", "base"]);
    git(root, &["rev-parse", "HEAD"])
}

/// Compile `source` to an unchecked-hash `.pyc` (PEP 552): Python loads it without
/// looking at the source beside it.
fn unchecked_pyc(dir: &Path, source: &str, pyc: &str) {
    let src = dir.join("_right_calc.py");
    std::fs::write(&src, source).unwrap();
    let out = Command::new("python3")
        .args([
            "-c",
            "import py_compile,sys; py_compile.compile(sys.argv[1], cfile=sys.argv[2], invalidation_mode=py_compile.PycInvalidationMode.UNCHECKED_HASH)",
        ])
        .arg(&src)
        .arg(dir.join(pyc))
        .output()
        .unwrap();
    assert!(out.status.success(), "{out:?}");
    std::fs::remove_file(src).unwrap();
}

fn cpython_tag() -> String {
    let out = Command::new("python3")
        .args(["-c", "import sys; print(sys.implementation.cache_tag)"])
        .output()
        .unwrap();
    String::from_utf8(out.stdout).unwrap().trim().to_string()
}

/// Attack: the right code as an ignored unchecked-hash `.pyc` beside a wrong `calc.py`
/// (Python loaded the bytecode; `PYTHONDONTWRITEBYTECODE` stops writing, not reading).
/// The same `.pyc` forced into a commit with `git add -f`. Twin: the right source.
#[tokio::test]
#[cfg_attr(
    not(evident_services),
    ignore = "needs pytest: .ci/run installs it and runs this (see README, Development)"
)]
async fn stale_bytecode_beside_the_source_never_runs() {
    if pytest_missing() {
        return;
    }
    let d = tempfile::tempdir().unwrap();
    let base = calc_repo(d.path());
    let c = ctx(d.path());
    let s = protected_pytest(&base, "");
    write(d.path(), "calc.py", CALC_WRONG);
    let pyc = format!("__pycache__/calc.{}.pyc", cpython_tag());
    std::fs::create_dir_all(d.path().join("__pycache__")).unwrap();
    unchecked_pyc(d.path(), CALC_RIGHT, &pyc);
    let o = ok(run(&s, &c, 120.0).await);
    assert_eq!(
        (o["failed"].clone(), o["passed"].clone()),
        (json!(1), json!(0)),
        "{o:?}"
    );
    // Committed past .gitignore: claimed now, still never run.
    git(d.path(), &["add", "-f", &pyc, "calc.py"]);
    git(d.path(), &["commit", "-q", "-m", "agent"]);
    let o = ok(run(&s, &c, 120.0).await);
    assert_eq!(o["failed"], json!(1), "{o:?}");
    assert_eq!(o["snapshot"]["build_output_left_out"], json!(1), "{o:?}");
    // Honest twin: the right source verifies, the stale bytecode still left out.
    write(d.path(), "calc.py", CALC_RIGHT);
    let o = ok(run(&s, &c, 120.0).await);
    assert_eq!(
        (o["failed"].clone(), o["passed"].clone()),
        (json!(0), json!(1)),
        "{o:?}"
    );
    assert_eq!(o["snapshot"]["sandboxed"], json!(true), "{o:?}");
}

/// Attack: a `pytest.ini` in a subdirectory (pytest searches upward from its arguments
/// and finds it before the protected root one) loads the agent's forging plugin. Twin:
/// the honest fix with the same layout.
#[tokio::test]
#[cfg_attr(
    not(evident_services),
    ignore = "needs pytest: .ci/run installs it and runs this (see README, Development)"
)]
async fn runner_config_in_a_subdirectory_comes_from_the_base() {
    if pytest_missing() {
        return;
    }
    let d = tempfile::tempdir().unwrap();
    git(d.path(), &["init", "-q", "-b", "main"]);
    write(d.path(), "calc.py", CALC_RIGHT);
    write(d.path(), "pytest.ini", "[pytest]\n");
    write(d.path(), "tests/test_calc.py", TEST_CALC);
    write(
        d.path(),
        "tests/conftest.py",
        "import sys, os\nsys.path.insert(0, os.path.dirname(os.path.dirname(__file__)))\n",
    );
    git(d.path(), &["add", "."]);
    git(d.path(), &["commit", "-q", "-m", "base"]);
    let base = git(d.path(), &["rev-parse", "HEAD"]);
    let s = src(&format!(
        r#"{{ command = {{ argv = ["python3", "-m", "pytest", "-q", "tests"], inherit_env = ["PATH"], timeout_s = 120, protect = {{ base = "{base}", paths = ["tests/test_*.py"] }} }} }}"#
    ));
    let c = ctx(d.path());
    write(d.path(), "calc.py", CALC_WRONG);
    write(
        d.path(),
        "tests/pytest.ini",
        "[pytest]\naddopts = -p forge\n",
    );
    write(
        d.path(),
        "tests/forge.py",
        "import pytest\n\n@pytest.hookimpl(hookwrapper=True)\ndef pytest_runtest_makereport(item, call):\n    outcome = yield\n    rep = outcome.get_result()\n    if rep.failed:\n        rep.outcome = 'passed'\n        rep.longrepr = None\n",
    );
    let o = ok(run(&s, &c, 120.0).await);
    assert_eq!(o["failed"], json!(1), "{o:?}");
    write(d.path(), "calc.py", CALC_RIGHT);
    let o = ok(run(&s, &c, 120.0).await);
    assert_eq!(
        (o["failed"].clone(), o["passed"].clone()),
        (json!(0), json!(1)),
        "{o:?}"
    );
}

/// Attack: a test of the agent's, imported first, rewrites the protected test before
/// pytest collects it (a workspace member's `build.rs` did the same before cargo
/// compiled). The run's result is refused. Twin: an agent test that only adds a test.
#[tokio::test]
#[cfg_attr(
    not(evident_services),
    ignore = "needs pytest: .ci/run installs it and runs this (see README, Development)"
)]
async fn a_protected_test_rewritten_during_the_run_is_refused() {
    if pytest_missing() {
        return;
    }
    let d = tempfile::tempdir().unwrap();
    let base = calc_repo(d.path());
    let s = src(&format!(
        r#"{{ command = {{ argv = ["python3", "-m", "pytest", "-q"], inherit_env = ["PATH"], timeout_s = 120, protect = {{ base = "{base}", paths = ["test_calc.py"] }} }} }}"#
    ));
    let c = ctx(d.path());
    write(d.path(), "calc.py", CALC_WRONG);
    write(
        d.path(),
        "test_aaa.py",
        "import pathlib\npathlib.Path(__file__).with_name('test_calc.py').write_text('def test_add():\\n    pass\\n')\n\ndef test_mine():\n    pass\n",
    );
    let e = err(run(&s, &c, 120.0).await);
    assert!(
        matches!(&e, ProbeError::Protect { reason } if reason.contains("test_calc.py")),
        "{e}"
    );
    write(d.path(), "calc.py", CALC_RIGHT);
    write(d.path(), "test_aaa.py", "def test_mine():\n    pass\n");
    let o = ok(run(&s, &c, 120.0).await);
    assert_eq!(
        (o["failed"].clone(), o["passed"].clone()),
        (json!(0), json!(2)),
        "{o:?}"
    );
}

/// Attack: a source file that is a symlink out of the tree (hashed by its target's
/// text, its content free to change later). Refused, named. Twin: a symlink inside.
#[tokio::test]
#[cfg_attr(
    not(evident_services),
    ignore = "needs pytest: .ci/run installs it and runs this (see README, Development)"
)]
async fn a_symlink_out_of_the_tree_is_refused() {
    if pytest_missing() {
        return;
    }
    let d = tempfile::tempdir().unwrap();
    let out = tempfile::tempdir().unwrap();
    let base = calc_repo(d.path());
    let s = protected_pytest(&base, "");
    let c = ctx(d.path());
    write(out.path(), "calc.py", CALC_RIGHT);
    std::fs::remove_file(d.path().join("calc.py")).unwrap();
    std::os::unix::fs::symlink(out.path().join("calc.py"), d.path().join("calc.py")).unwrap();
    let e = err(run(&s, &c, 120.0).await);
    assert!(
        e.to_string()
            .contains("calc.py is a symlink out of the tree"),
        "{e}"
    );
    // Twin: the code moved into the tree, the module a relative link to it.
    std::fs::remove_file(d.path().join("calc.py")).unwrap();
    write(d.path(), "src/calc_impl.py", CALC_RIGHT);
    std::os::unix::fs::symlink("src/calc_impl.py", d.path().join("calc.py")).unwrap();
    let o = ok(run(&s, &c, 120.0).await);
    assert_eq!(o["passed"], json!(1), "{o:?}");
}

/// Attack: code read by absolute path from outside the tree (the test inserts a
/// directory of the agent's on `sys.path`): the sandbox lets the run read only the
/// snapshot, the toolchain and the system. Twin: the same code inside the tree.
#[tokio::test]
#[cfg_attr(
    not(evident_services),
    ignore = "needs pytest: .ci/run installs it and runs this (see README, Development)"
)]
async fn code_outside_the_tree_cannot_be_read() {
    if pytest_missing() || evident_probes::sandbox::landlock_abi() == 0 {
        return;
    }
    let d = tempfile::tempdir().unwrap();
    let outside = tempfile::tempdir().unwrap();
    git(d.path(), &["init", "-q", "-b", "main"]);
    write(outside.path(), "helper.py", "ANSWER = 5\n");
    write(
        d.path(),
        "test_h.py",
        &format!(
            "import sys\nsys.path.insert(0, {:?})\n\ndef test_h():\n    import helper\n    assert helper.ANSWER == 5\n",
            outside.path().display().to_string()
        ),
    );
    let s = src(
        r#"{ command = { argv = ["python3", "-m", "pytest", "-q"], inherit_env = ["PATH"], timeout_s = 120 } }"#,
    );
    let c = ctx(d.path());
    let o = ok(run(&s, &c, 120.0).await);
    assert_eq!(o["failed"], json!(1), "{o:?}");
    assert_eq!(o["snapshot"]["sandboxed"], json!(true), "{o:?}");
    write(d.path(), "helper.py", "ANSWER = 5\n");
    let o = ok(run(&s, &c, 120.0).await);
    assert_eq!(o["passed"], json!(1), "{o:?}");
    // And the real tree was never written.
    assert!(!d.path().join(".pytest_cache").exists());
    assert!(!d.path().join("__pycache__").exists());
}

/// The network: off by default (a namespace with only loopback, which works inside),
/// on with `network = true`.
#[tokio::test]
async fn network_is_off_unless_the_check_allows_it() {
    if !evident_probes::sandbox::netns_available() {
        eprintln!("SKIP: no user namespaces here");
        return;
    }
    let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let port = listener.local_addr().unwrap().port();
    let d = tempfile::tempdir().unwrap();
    let script = format!(
        "import socket\ns = socket.socket(); s.bind(('127.0.0.1', 0)); s.listen(); c = socket.create_connection(s.getsockname()); print('loopback ok')\ntry:\n    socket.create_connection(('127.0.0.1', {port}), timeout=2); print('host reached')\nexcept OSError as e:\n    print('host unreachable')\n"
    );
    write(d.path(), "net.py", &script);
    let c = ctx(d.path());
    for (extra, want) in [
        ("", "host unreachable"),
        (", network = true", "host reached"),
    ] {
        let s = src(&format!(
            r#"{{ command = {{ argv = ["python3", "net.py"], inherit_env = ["PATH"], capture_output = true {extra} }} }}"#
        ));
        let o = ok(run(&s, &c, 60.0).await);
        let out = o["stdout"].as_str().unwrap();
        assert!(
            out.contains("loopback ok") && out.contains(want),
            "{extra}: {o:?}"
        );
    }
    drop(listener);
}

/// Dependencies in an ignored directory are brought in only when declared
/// (`environment`), read-only, with their digest; undeclared, the run does not see
/// them.
#[tokio::test]
async fn ignored_dependencies_come_in_only_when_declared_and_read_only() {
    let d = tempfile::tempdir().unwrap();
    git(d.path(), &["init", "-q", "-b", "main"]);
    write(d.path(), ".gitignore", "deps/\n");
    write(d.path(), "deps/dep.py", "VALUE = 7\n");
    write(
        d.path(),
        "use.py",
        "import sys\nsys.path.insert(0, 'deps')\nimport dep\nprint('value', dep.VALUE)\ntry:\n    open('deps/dep.py', 'a').write('VALUE = 8\\n')\n    print('wrote deps')\nexcept OSError:\n    print('deps read-only')\n",
    );
    let c = ctx(d.path());
    let bare = src(
        r#"{ command = { argv = ["python3", "use.py"], inherit_env = ["PATH"], capture_output = true } }"#,
    );
    let o = ok(run(&bare, &c, 60.0).await);
    assert_ne!(
        o["exit_code"],
        json!(0),
        "undeclared deps were visible: {o:?}"
    );
    let declared = src(
        r#"{ command = { argv = ["python3", "use.py"], inherit_env = ["PATH"], capture_output = true, environment = ["deps"] } }"#,
    );
    let o = ok(run(&declared, &c, 60.0).await);
    let out = o["stdout"].as_str().unwrap();
    assert!(out.contains("value 7"), "{o:?}");
    assert!(
        o["snapshot"]["environment"]["deps"]
            .as_str()
            .is_some_and(|s| s.starts_with("sha256:")),
        "{o:?}"
    );
    if evident_probes::sandbox::landlock_abi() > 0 {
        assert!(out.contains("deps read-only"), "{o:?}");
        assert_eq!(
            std::fs::read_to_string(d.path().join("deps/dep.py")).unwrap(),
            "VALUE = 7\n"
        );
    }
}

/// Attack: the right code built once into the ignored `target/`, then the wrong source
/// written with its modification time set to 2000-01-01: cargo found the artefact
/// fresh and linked it. The snapshot never brings `target/` and gives every file its
/// own time, so the wrong code is built and fails. Twin: the right code passes.
#[tokio::test]
async fn a_stale_cargo_build_is_never_linked() {
    let d = tempfile::tempdir().unwrap();
    git(d.path(), &["init", "-q", "-b", "main"]);
    write(d.path(), ".gitignore", "target/\n");
    write(
        d.path(),
        "Cargo.toml",
        "[package]\nname = \"calc\"\nversion = \"0.1.0\"\nedition = \"2021\"\n\n[workspace]\n",
    );
    let lib = |op: &str| {
        format!(
            "pub fn add(a: i32, b: i32) -> i32 {{ a {op} b }}\n\n#[cfg(test)]\nmod tests {{\n    #[test]\n    fn adds() {{ assert_eq!(super::add(2, 3), 5); }}\n}}\n"
        )
    };
    write(d.path(), "src/lib.rs", &lib("+"));
    git(d.path(), &["add", "."]);
    git(d.path(), &["commit", "-q", "-m", "base"]);
    let built = Command::new("cargo")
        .args(["test", "--offline", "-q"])
        .current_dir(d.path())
        .output()
        .unwrap();
    assert!(built.status.success(), "{built:?}");
    write(d.path(), "src/lib.rs", &lib("-"));
    let old = std::time::SystemTime::UNIX_EPOCH + std::time::Duration::from_secs(946_684_800);
    std::fs::File::options()
        .write(true)
        .open(d.path().join("src/lib.rs"))
        .unwrap()
        .set_modified(old)
        .unwrap();
    let s = src(
        r#"{ command = { argv = ["cargo", "test", "--offline"], inherit_env = ["PATH", "HOME", "CARGO_HOME", "RUSTUP_HOME"], timeout_s = 300 } }"#,
    );
    let c = ctx(d.path());
    let o = ok(run(&s, &c, 300.0).await);
    assert_eq!(
        (o["failed"].clone(), o["passed"].clone()),
        (json!(1), json!(0)),
        "{o:?}"
    );
    write(d.path(), "src/lib.rs", &lib("+"));
    let o = ok(run(&s, &c, 300.0).await);
    assert_eq!(
        (o["failed"].clone(), o["passed"].clone()),
        (json!(0), json!(1)),
        "{o:?}"
    );
}

/// Honest work the text summary missed: the project's `addopts = --color=yes`, and a
/// test that skips at run time counted as skipped (the starter's `skipped = 0` then
/// refuses it), both read from pytest's own JUnit report.
#[tokio::test]
#[cfg_attr(
    not(evident_services),
    ignore = "needs pytest: .ci/run installs it and runs this (see README, Development)"
)]
async fn counts_come_from_pytests_report_whatever_it_prints() {
    if pytest_missing() {
        return;
    }
    let d = tempfile::tempdir().unwrap();
    git(d.path(), &["init", "-q", "-b", "main"]);
    write(
        d.path(),
        "pytest.ini",
        "[pytest]\naddopts = --color=yes -p no:terminal\n",
    );
    write(d.path(), "calc.py", CALC_RIGHT);
    write(d.path(), "test_calc.py", TEST_CALC);
    write(
        d.path(),
        "test_skip.py",
        "import pytest\n\ndef test_later():\n    pytest.skip('not now')\n\ndef test_xf():\n    pytest.xfail('not yet')\n",
    );
    let s = src(
        r#"{ command = { argv = ["python3", "-m", "pytest", "-q"], inherit_env = ["PATH"], timeout_s = 120 } }"#,
    );
    let o = ok(run(&s, &ctx(d.path()), 120.0).await);
    assert_eq!(o["runner"], json!("pytest"), "{o:?}");
    assert_eq!(
        (
            o["passed"].clone(),
            o["skipped"].clone(),
            o["xfailed"].clone()
        ),
        (json!(1), json!(2), json!(1)),
        "{o:?}"
    );
}

/// Red team (05): a package `conftest/` whose `__init__.py` forges the reports, beside
/// the protected `conftest.py` (Python imports the package first). Refused, named.
/// Twin: the protected conftest alone.
#[tokio::test]
#[cfg_attr(
    not(evident_services),
    ignore = "needs pytest: .ci/run installs it and runs this (see README, Development)"
)]
async fn a_package_shadowing_a_protected_module_is_refused() {
    if pytest_missing() {
        return;
    }
    let d = tempfile::tempdir().unwrap();
    git(d.path(), &["init", "-q", "-b", "main"]);
    write(d.path(), "calc.py", CALC_RIGHT);
    write(d.path(), "conftest.py", "# the owner's\n");
    write(d.path(), "test_calc.py", TEST_CALC);
    git(d.path(), &["add", "."]);
    git(d.path(), &["commit", "-q", "-m", "base"]);
    let base = git(d.path(), &["rev-parse", "HEAD"]);
    let s = protected_pytest(&base, "");
    let c = ctx(d.path());
    write(d.path(), "calc.py", CALC_WRONG);
    write(
        d.path(),
        "conftest/__init__.py",
        "import os, pytest\n__file__ = os.path.join(os.path.dirname(os.path.dirname(__file__)), 'conftest.py')\n\n@pytest.hookimpl(hookwrapper=True)\ndef pytest_runtest_makereport(item, call):\n    outcome = yield\n    rep = outcome.get_result()\n    if rep.failed:\n        rep.outcome = 'passed'\n        rep.longrepr = None\n",
    );
    let e = err(run(&s, &c, 120.0).await);
    assert!(
        e.to_string()
            .contains("in place of the protected conftest.py"),
        "{e}"
    );
    std::fs::remove_dir_all(d.path().join("conftest")).unwrap();
    write(d.path(), "calc.py", CALC_RIGHT);
    let o = ok(run(&s, &c, 120.0).await);
    assert_eq!(o["passed"], json!(1), "{o:?}");
}

/// Red team (10): code under test deletes pytest's report on its way out and prints a
/// passing summary: the printed text is never read in the report's place. Twin: the
/// honest run is counted from its report.
#[tokio::test]
#[cfg_attr(
    not(evident_services),
    ignore = "needs pytest: .ci/run installs it and runs this (see README, Development)"
)]
async fn a_deleted_report_is_not_replaced_by_printed_text() {
    if pytest_missing() {
        return;
    }
    let d = tempfile::tempdir().unwrap();
    let base = calc_repo(d.path());
    let s = protected_pytest(&base, "");
    let c = ctx(d.path());
    write(
        d.path(),
        "calc.py",
        "import atexit, os, sys\n\ndef _forge():\n    for a in sys.argv:\n        if a.startswith('--junitxml='):\n            os.remove(a.split('=', 1)[1])\n    print('1 passed in 0.01s', flush=True)\n    os._exit(0)\n\natexit.register(_forge)\n\ndef add(a, b):\n    return a - b\n",
    );
    let o = ok(run(&s, &c, 120.0).await);
    assert_eq!(o["ran"], json!(false), "{o:?}");
    assert!(o.get("passed").is_none(), "{o:?}");
    write(d.path(), "calc.py", CALC_RIGHT);
    let o = ok(run(&s, &c, 120.0).await);
    assert_eq!(
        (o["ran"].clone(), o["passed"].clone()),
        (json!(true), json!(1)),
        "{o:?}"
    );
}

/// Red team (13): a base where no test passes judges nothing: an error, not a pass.
/// Twin: the same project with its base passing.
#[tokio::test]
#[cfg_attr(
    not(evident_services),
    ignore = "needs pytest: .ci/run installs it and runs this (see README, Development)"
)]
async fn base_tests_refuse_a_base_where_nothing_passes() {
    if pytest_missing() {
        return;
    }
    let d = tempfile::tempdir().unwrap();
    git(d.path(), &["init", "-q", "-b", "main"]);
    write(d.path(), ".gitignore", "_version.py\n");
    write(
        d.path(),
        "calc.py",
        &format!("from _version import V\n{CALC_RIGHT}"),
    );
    write(d.path(), "_version.py", "V = 1\n");
    write(d.path(), "test_calc.py", TEST_CALC);
    git(d.path(), &["add", "."]);
    git(d.path(), &["commit", "-q", "-m", "base"]);
    let base = git(d.path(), &["rev-parse", "HEAD"]);
    let s = src(&format!(
        r#"{{ command = {{ argv = ["python3", "-m", "pytest", "-q"], inherit_env = ["PATH"], timeout_s = 120, base_tests = "{base}" }} }}"#
    ));
    let c = ctx(d.path());
    write(
        d.path(),
        "calc.py",
        &format!("from _version import V\n{CALC_WRONG}"),
    );
    let e = err(run(&s, &c, 240.0).await);
    assert!(e.to_string().contains("no test passed at the base"), "{e}");
    // Twin: the generated module committed, the base passes, the break regresses.
    write(d.path(), ".gitignore", "");
    write(
        d.path(),
        "calc.py",
        &format!("from _version import V\n{CALC_RIGHT}"),
    );
    git(d.path(), &["add", "."]);
    git(d.path(), &["commit", "-q", "-m", "base 2"]);
    let base2 = git(d.path(), &["rev-parse", "HEAD"]);
    write(
        d.path(),
        "calc.py",
        &format!("from _version import V\n{CALC_WRONG}"),
    );
    let s = src(&format!(
        r#"{{ command = {{ argv = ["python3", "-m", "pytest", "-q"], inherit_env = ["PATH"], timeout_s = 120, base_tests = "{base2}" }} }}"#
    ));
    let o = ok(run(&s, &c, 240.0).await);
    assert_eq!(
        (o["regressed"].clone(), o["base_passed"].clone()),
        (json!(1), json!(1)),
        "{o:?}"
    );
}

/// Red team (04, 12): a test that sets every artefact of the build directory to the
/// year 2100 made the next run link them. Each run now builds in a directory of its
/// own. Twin: the honest change passes.
#[tokio::test]
async fn artefacts_an_earlier_run_wrote_are_never_linked() {
    let d = tempfile::tempdir().unwrap();
    git(d.path(), &["init", "-q", "-b", "main"]);
    write(
        d.path(),
        "Cargo.toml",
        "[package]\nname = \"calc\"\nversion = \"0.1.0\"\nedition = \"2021\"\n\n[workspace]\n",
    );
    let lib = |op: &str, poison: bool| {
        let p = if poison {
            "\n    #[test]\n    fn poison() {\n        let t = std::env::var(\"CARGO_TARGET_DIR\").unwrap_or_default();\n        let _ = std::process::Command::new(\"find\").args([t.as_str(), \"-exec\", \"touch\", \"-d\", \"2100-01-01\", \"{}\", \"+\"]).status();\n    }\n"
        } else {
            ""
        };
        format!(
            "pub fn add(a: i32, b: i32) -> i32 {{ a {op} b }}\n\n#[cfg(test)]\nmod tests {{\n    #[test]\n    fn adds() {{ assert_eq!(super::add(2, 3), 5); }}\n{p}}}\n"
        )
    };
    write(d.path(), "src/lib.rs", &lib("+", false));
    git(d.path(), &["add", "."]);
    git(d.path(), &["commit", "-q", "-m", "base"]);
    let s = src(
        r#"{ command = { argv = ["cargo", "test", "--offline"], inherit_env = ["PATH", "HOME", "CARGO_HOME", "RUSTUP_HOME"], timeout_s = 300 } }"#,
    );
    let c = ctx(d.path());
    write(d.path(), "src/lib.rs", &lib("+", true));
    let o = ok(run(&s, &c, 300.0).await);
    assert_eq!(o["passed"], json!(2), "{o:?}");
    write(d.path(), "src/lib.rs", &lib("-", false));
    let o = ok(run(&s, &c, 300.0).await);
    assert_eq!(
        (o["failed"].clone(), o["passed"].clone()),
        (json!(1), json!(0)),
        "{o:?}"
    );
}
