//! Test runners that report what ran, against a tree the agent controls: pytest's every
//! count, named tests read from pytest's own JUnit report, runner shadowing, no trace of
//! the gate. Real pytest and real git; each attack has its honest twin.

use std::path::Path;
use std::process::Command;

use evident_probes::{ProbeError, Source};
use serde_json::{Value, json};

use crate::command::{pytest_missing, write};
use crate::{ctx, err, ok, run, src};

pub(crate) fn git(dir: &Path, args: &[&str]) -> String {
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
        .env("GIT_CONFIG_GLOBAL", "/dev/null")
        .env("GIT_CONFIG_NOSYSTEM", "1")
        .output()
        .expect("git");
    assert!(
        out.status.success(),
        "git {args:?}: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    String::from_utf8(out.stdout).unwrap().trim().to_string()
}

/// Every path under `root` (`.git` included) with its size and modification time, to
/// prove a run wrote nothing there.
pub(crate) fn snapshot(root: &Path) -> Vec<(String, u64, std::time::SystemTime)> {
    fn walk(dir: &Path, root: &Path, out: &mut Vec<(String, u64, std::time::SystemTime)>) {
        for e in std::fs::read_dir(dir).unwrap().flatten() {
            let p = e.path();
            let m = std::fs::symlink_metadata(&p).unwrap();
            let rel = p.strip_prefix(root).unwrap().display().to_string();
            out.push((rel, m.len(), m.modified().unwrap()));
            if m.is_dir() {
                walk(&p, root, out);
            }
        }
    }
    let mut out = Vec::new();
    walk(root, root, &mut out);
    out.sort();
    out
}

/// `python3 -m pytest` as an owner writes it: no cache flags, no bytecode variable (the
/// gate adds both), only PATH inherited.
fn pytest_src(extra: &str) -> Source {
    pytest_args("", extra)
}

/// The same with more pytest arguments (`, "-k", "x"`).
fn pytest_args(args: &str, extra: &str) -> Source {
    src(&format!(
        r#"{{ command = {{ argv = ["python3", "-m", "pytest", "-q" {args}], inherit_env = ["PATH"], timeout_s = 120 {extra} }} }}"#
    ))
}

const APP: &str = "def valid_zip(s):\n    return len(s) == 5\n";
const APP_FIXED: &str = "def valid_zip(s):\n    return len(s) == 5 and s.isdigit()\n";
const TEST_APP: &str = "from app import valid_zip\n\ndef test_accepts_digits():\n    assert valid_zip('94107')\n\ndef test_rejects_letters():\n    assert not valid_zip('9410A')\n";

/// A hookwrapper that turns every failed call into a pass (pluggy `hookwrapper`).
const FORGING_CONFTEST: &str = "import pytest\n\n@pytest.hookimpl(hookwrapper=True)\ndef pytest_runtest_makereport(item, call):\n    outcome = yield\n    rep = outcome.get_result()\n    if rep.failed:\n        rep.outcome = 'passed'\n        rep.longrepr = None\n";

/// A repository whose base commit holds the app (with its bug) and its tests.
fn app_repo(root: &Path) -> String {
    git(root, &["init", "-q", "-b", "main"]);
    write(root, "app.py", APP);
    write(root, "test_app.py", TEST_APP);
    git(root, &["add", "."]);
    git(root, &["commit", "-q", "-m", "base"]);
    git(root, &["rev-parse", "HEAD"])
}

#[tokio::test]
#[cfg_attr(
    not(evident_services),
    ignore = "needs pytest: .ci/run installs it and runs this (see README, Development)"
)]
async fn pytest_observes_every_count() {
    if pytest_missing() {
        return;
    }
    let d = tempfile::tempdir().unwrap();
    write(
        d.path(),
        "test_all.py",
        "import pytest\n\ndef test_ok():\n    pass\n\ndef test_bad():\n    assert False\n\n@pytest.mark.skip(reason='x')\ndef test_skip():\n    pass\n\n@pytest.mark.xfail\ndef test_xfail():\n    assert False\n\n@pytest.mark.xfail\ndef test_xpass():\n    pass\n\n@pytest.fixture\ndef broken():\n    raise RuntimeError('setup')\n\ndef test_error(broken):\n    pass\n\ndef test_other():\n    pass\n",
    );
    let s = pytest_args(r#", "--deselect", "test_all.py::test_other""#, "");
    let o = ok(run(&s, &ctx(d.path()), 120.0).await);
    let got: Vec<Value> = [
        "passed",
        "failed",
        "errors",
        "skipped",
        "deselected",
        "xfailed",
        "xpassed",
    ]
    .iter()
    .map(|k| o[*k].clone())
    .collect();
    // passed = 1 + 1 xpassed; failed = 1 + 1 error; skipped = 1 + 1 deselected + 1 xfailed.
    assert_eq!(got, [2, 2, 1, 3, 1, 1, 1].map(|n| json!(n)), "{o:?}");
    assert_eq!(o["ran"], json!(true));
    assert_eq!(o["exit_code"], json!(1));
}

/// Attack: `addopts = --deselect` in pytest.ini hides the failing test; deselected
/// tests did not run, so `skipped = 0` is no longer met. Twin: the honest fix.
#[tokio::test]
#[cfg_attr(
    not(evident_services),
    ignore = "needs pytest: .ci/run installs it and runs this (see README, Development)"
)]
async fn addopts_deselect_is_counted_as_not_run() {
    if pytest_missing() {
        return;
    }
    let d = tempfile::tempdir().unwrap();
    write(d.path(), "app.py", APP);
    write(d.path(), "test_app.py", TEST_APP);
    write(
        d.path(),
        "pytest.ini",
        "[pytest]\naddopts = --deselect test_app.py::test_rejects_letters\n",
    );
    let c = ctx(d.path());
    let o = ok(run(&pytest_src(""), &c, 120.0).await);
    assert_eq!(o["exit_code"], json!(0));
    assert_eq!(o["failed"], json!(0));
    assert_eq!(
        o["skipped"],
        json!(1),
        "a deselected test did not run: {o:?}"
    );
    assert_eq!(o["deselected"], json!(1));

    // Honest twin: no pytest.ini, the bug fixed: nothing skipped.
    std::fs::remove_file(d.path().join("pytest.ini")).unwrap();
    write(d.path(), "app.py", APP_FIXED);
    let o = ok(run(&pytest_src(""), &c, 120.0).await);
    assert_eq!(
        (
            o["passed"].clone(),
            o["failed"].clone(),
            o["skipped"].clone()
        ),
        (json!(2), json!(0), json!(0))
    );
    assert_eq!(o["deselected"], json!(0));
}

/// Attack: a `pytest.py` at the top of the tree replaces pytest under `python -m pytest`
/// and prints "12 passed". The gate refuses such a tree, naming the file; so it does a
/// package `_pytest/`, and a shadow in the working directory. Twin: an ordinary tree
/// (with a namespace directory named like a module, which cannot shadow) runs.
#[tokio::test]
#[cfg_attr(
    not(evident_services),
    ignore = "needs pytest: .ci/run installs it and runs this (see README, Development)"
)]
async fn runner_shadowing_is_refused() {
    if pytest_missing() {
        return;
    }
    let d = tempfile::tempdir().unwrap();
    write(d.path(), "app.py", APP_FIXED);
    write(d.path(), "test_app.py", TEST_APP);
    write(
        d.path(),
        "pytest.py",
        "print('=========== 12 passed in 0.01s ===========')\n",
    );
    let c = ctx(d.path());
    let e = err(run(&pytest_src(""), &c, 120.0).await);
    assert_eq!(
        e,
        ProbeError::RunnerShadowed {
            path: "pytest.py".into(),
            module: "pytest".into()
        }
    );
    assert!(e.to_string().contains("\"pytest.py\""), "{e}");
    std::fs::remove_file(d.path().join("pytest.py")).unwrap();

    write(d.path(), "_pytest/__init__.py", "");
    let e = err(run(&pytest_src(""), &c, 120.0).await);
    assert!(
        matches!(&e, ProbeError::RunnerShadowed { path, module } if path == "_pytest" && module == "_pytest"),
        "{e}"
    );
    std::fs::remove_dir_all(d.path().join("_pytest")).unwrap();

    // A standard-library module pytest imports at start-up, in the working directory.
    write(d.path(), "sub/test_app.py", TEST_APP);
    write(d.path(), "sub/app.py", APP_FIXED);
    write(d.path(), "sub/argparse.py", "raise SystemExit(0)\n");
    let e = err(run(&pytest_src(r#", cwd = "sub""#), &c, 120.0).await);
    assert!(
        matches!(&e, ProbeError::RunnerShadowed { path, .. } if path == "sub/argparse.py"),
        "{e}"
    );
    std::fs::remove_dir_all(d.path().join("sub")).unwrap();

    // Honest twin. `pluggy/` without `__init__` is a namespace portion: the installed
    // package wins, so it is not refused.
    std::fs::create_dir(d.path().join("pluggy")).unwrap();
    write(d.path(), "pluggy/notes.txt", "not a module\n");
    let o = ok(run(&pytest_src(""), &c, 120.0).await);
    assert_eq!(o["exit_code"], json!(0), "{o:?}");
    assert_eq!(o["passed"], json!(2));
}

/// Attack (red11): a standard-library C accelerator shadowed. `json` imports `_json`
/// and swallows its ImportError, so a `_json.py` at the top of the tree runs unnoticed
/// under `python -m pytest`; it names the tree's forging plugin in `PYTEST_PLUGINS`,
/// which no protected path or disabled autoload stops. The named failing test read
/// passed. The gate refuses the tree; so it does `_datetime.py`, `__future__.py`.
/// Twin: ordinary top-level modules (`_version.py`, `json_utils.py`) run.
#[tokio::test]
#[cfg_attr(
    not(evident_services),
    ignore = "needs pytest: .ci/run installs it and runs this (see README, Development)"
)]
async fn a_shadowed_accelerator_module_is_refused() {
    if pytest_missing() {
        return;
    }
    let d = tempfile::tempdir().unwrap();
    write(d.path(), "app.py", APP);
    write(d.path(), "test_app.py", TEST_APP);
    write(d.path(), "helper_plugin.py", FORGING_CONFTEST);
    let named = r#", env = { PYTEST_DISABLE_PLUGIN_AUTOLOAD = "1" }, tests_passed = ["test_app.py::test_rejects_letters"]"#;
    let c = ctx(d.path());
    for module in ["_json", "_datetime", "__future__"] {
        let file = format!("{module}.py");
        write(
            d.path(),
            &file,
            "import os\nos.environ['PYTEST_PLUGINS'] = 'helper_plugin'\nraise ImportError('no accelerator')\n",
        );
        let e = err(run(&pytest_src(named), &c, 120.0).await);
        assert!(
            matches!(&e, ProbeError::RunnerShadowed { path, module: m } if *path == file && m == module),
            "{module}: {e}"
        );
        std::fs::remove_file(d.path().join(&file)).unwrap();
    }
    // Honest twin: the bug is seen, ordinary module names are not refused.
    write(d.path(), "_version.py", "v = '1'\n");
    write(d.path(), "json_utils.py", "import json\n");
    let o = ok(run(&pytest_src(named), &c, 120.0).await);
    assert_eq!(o["tests_passed"], json!([]), "{o:?}");
    assert_eq!(o["failed"], json!(1), "{o:?}");
}

/// Named tests are read from the JUnit report pytest writes where the gate chose,
/// outside the tree: a failing, skipped or absent test is not in `tests_passed`.
#[tokio::test]
#[cfg_attr(
    not(evident_services),
    ignore = "needs pytest: .ci/run installs it and runs this (see README, Development)"
)]
async fn named_tests_from_pytests_own_report() {
    if pytest_missing() {
        return;
    }
    let d = tempfile::tempdir().unwrap();
    write(d.path(), "app.py", APP);
    write(
        d.path(),
        "tests/test_zip.py",
        "import pytest\nfrom app import valid_zip\n\nclass TestZip:\n    def test_accepts_digits(self):\n        assert valid_zip('94107')\n\n    @pytest.mark.parametrize('z', ['9410A', 'ABCDE'])\n    def test_rejects(self, z):\n        assert not valid_zip(z)\n\n@pytest.mark.skip(reason='later')\ndef test_later():\n    pass\n",
    );
    write(d.path(), "conftest.py", "");
    let c = ctx(d.path());
    let names = [
        "tests/test_zip.py::TestZip::test_accepts_digits",
        "tests/test_zip.py::TestZip::test_rejects[9410A]",
        "tests/test_zip.py::test_later",
        "tests/test_zip.py::test_missing",
    ];
    let list = serde_json::to_string(&names).unwrap();
    let s = pytest_src(&format!(", tests_passed = {list}"));
    let o = ok(run(&s, &c, 120.0).await);
    assert_eq!(
        o["tests_passed"],
        json!(["tests/test_zip.py::TestZip::test_accepts_digits"])
    );
    assert_eq!(
        o["tests"],
        json!({
            "tests/test_zip.py::TestZip::test_accepts_digits": "passed",
            "tests/test_zip.py::TestZip::test_rejects[9410A]": "failed",
            "tests/test_zip.py::test_later": "skipped",
            "tests/test_zip.py::test_missing": "absent",
        })
    );
    // The report was written outside the tree, and no trace is left in it.
    let leftovers: Vec<String> = crate::runners::snapshot(d.path())
        .into_iter()
        .map(|(p, _, _)| p)
        .filter(|p| p.ends_with(".xml") || p.contains("__pycache__") || p.contains(".pytest_cache"))
        .collect();
    assert!(leftovers.is_empty(), "{leftovers:?}");

    // Honest twin: the fix makes both parametrized cases pass.
    write(d.path(), "app.py", APP_FIXED);
    let o = ok(run(&s, &c, 120.0).await);
    assert_eq!(
        o["tests_passed"],
        json!([
            "tests/test_zip.py::TestZip::test_accepts_digits",
            "tests/test_zip.py::TestZip::test_rejects[9410A]"
        ])
    );

    // The expectation names the tests; the source adopts them.
    let mut s = pytest_src("");
    let expected = json!({"tests_passed": ["tests/test_zip.py::test_later"]});
    s.adopt_expected(expected.as_object().unwrap());
    let Source::Command(cmd) = &s else {
        unreachable!()
    };
    assert_eq!(cmd.tests_passed, ["tests/test_zip.py::test_later"]);

    // No machine report, no named tests: cargo test, or pytest through a shell.
    for bad in [
        r#"{ command = { argv = ["cargo", "test"], tests_passed = ["adds"] } }"#,
        r#"{ command = { argv = ["python3 -m pytest"], shell = true, tests_passed = ["t.py::a"] } }"#,
        r#"{ command = { argv = ["pytest"], junit = "r.xml", tests_passed = ["t.py::a"] } }"#,
    ] {
        let e = src(bad).validate().unwrap_err();
        assert!(matches!(e, ProbeError::InvalidSpec { .. }), "{bad}: {e}");
    }
}

/// Attack: a conftest.py hookwrapper rewrites failed reports to passed. pytest's own
/// JUnit report is written from the same (rewritten) reports, so named tests alone do
/// not defeat it — the residual risk, shown here — but protecting conftest.py does.
/// Twin: the honest fix passes under the same protection.
#[tokio::test]
#[cfg_attr(
    not(evident_services),
    ignore = "needs pytest: .ci/run installs it and runs this (see README, Development)"
)]
async fn conftest_hookwrapper_is_defeated_by_protect() {
    if pytest_missing() {
        return;
    }
    let d = tempfile::tempdir().unwrap();
    let base = app_repo(d.path());
    write(d.path(), "conftest.py", FORGING_CONFTEST);
    let c = ctx(d.path());
    let name = r#"tests_passed = ["test_app.py::test_rejects_letters"]"#;

    // Unprotected: the forgery reaches the counts, the exit code and the JUnit report.
    let o = ok(run(&pytest_src(&format!(", {name}")), &c, 120.0).await);
    assert_eq!(
        (o["exit_code"].clone(), o["failed"].clone()),
        (json!(0), json!(0))
    );
    assert_eq!(
        o["tests_passed"],
        json!(["test_app.py::test_rejects_letters"])
    );

    let protect = format!(
        r#", {name}, protect = {{ base = "{base}", paths = ["conftest.py", "test_*.py", "pytest.ini", "pyproject.toml", "tox.ini", "setup.cfg"] }}"#
    );
    let before = snapshot(d.path());
    let o = ok(run(&pytest_src(&protect), &c, 120.0).await);
    assert_eq!(o["exit_code"], json!(1), "{o:?}");
    assert_eq!(o["failed"], json!(1));
    assert_eq!(o["tests_passed"], json!([]));
    assert_eq!(
        o["tests"]["test_app.py::test_rejects_letters"],
        json!("failed")
    );
    assert_eq!(o["protect_base"], json!(base));
    assert_eq!(
        snapshot(d.path()),
        before,
        "a protected run wrote into the tree"
    );

    // Honest twin: the agent fixes the app (and its conftest is harmless or absent).
    std::fs::remove_file(d.path().join("conftest.py")).unwrap();
    write(d.path(), "app.py", APP_FIXED);
    let o = ok(run(&pytest_src(&protect), &c, 120.0).await);
    assert_eq!(o["exit_code"], json!(0), "{o:?}");
    assert_eq!(
        (o["passed"].clone(), o["failed"].clone()),
        (json!(2), json!(0))
    );
    assert_eq!(
        o["tests_passed"],
        json!(["test_app.py::test_rejects_letters"])
    );
}

/// No trace of the gate: the same checks twice on an unchanged tree give the same
/// observations. Before, pytest's `__pycache__/` made the second `clean` false.
#[tokio::test]
#[cfg_attr(
    not(evident_services),
    ignore = "needs pytest: .ci/run installs it and runs this (see README, Development)"
)]
async fn same_checks_twice_same_result() {
    if pytest_missing() {
        return;
    }
    let d = tempfile::tempdir().unwrap();
    let _ = app_repo(d.path());
    write(d.path(), "app.py", APP_FIXED);
    git(d.path(), &["commit", "-q", "-am", "fix"]);
    let c = ctx(d.path());
    let clean = src(r#"{ git = { repo = "." } }"#);
    let tests = pytest_src("");
    let mut rounds = Vec::new();
    for _ in 0..2 {
        let g = ok(run(&clean, &c, 30.0).await);
        let t = ok(run(&tests, &c, 120.0).await);
        rounds.push((
            g["clean"].clone(),
            t["exit_code"].clone(),
            t["passed"].clone(),
        ));
    }
    assert_eq!(rounds[0], (json!(true), json!(0), json!(2)));
    assert_eq!(rounds[1], rounds[0]);
    assert_eq!(git(d.path(), &["status", "--porcelain", "--ignored"]), "");

    // With `keep_caches` pytest's cache stays on — in the snapshot: the tree is
    // never written.
    let keep = pytest_src(", keep_caches = true");
    ok(run(&keep, &c, 120.0).await);
    assert!(!d.path().join("__pycache__").exists());
    assert!(!d.path().join(".pytest_cache").exists());
}

/// The forged suite of captured output: a test prints a JUnit document inside its
/// `<system-out>` CDATA; only the real suite counts.
#[tokio::test]
async fn junit_cdata_suite_is_not_counted() {
    let d = tempfile::tempdir().unwrap();
    let forged: String = (0..40)
        .map(|i| format!("<testcase classname=\\\"f\\\" name=\\\"t{i}\\\"/>"))
        .collect();
    let script = format!(
        "printf '%s' \"<testsuites><testsuite name=\\\"s\\\" tests=\\\"1\\\" failures=\\\"1\\\"><testcase classname=\\\"a\\\" name=\\\"b\\\"><failure/><system-out><![CDATA[<testsuite tests=\\\"40\\\">{forged}</testsuite>]]></system-out></testcase></testsuite></testsuites>\" > r.xml; exit 1"
    );
    let s = Source::Command(evident_probes::CommandSpec {
        argv: vec![script],
        shell: true,
        junit: Some("r.xml".into()),
        tests_passed: vec!["f::t1".into(), "a::b".into()],
        ..serde_json::from_value(json!({"argv": []})).unwrap()
    });
    let o = ok(run(&s, &ctx(d.path()), 10.0).await);
    assert_eq!(
        (o["passed"].clone(), o["failed"].clone(), o["ran"].clone()),
        (json!(0), json!(1), json!(true)),
        "{o:?}"
    );
    assert_eq!(o["tests_passed"], json!([]));
    assert_eq!(o["tests"], json!({"f::t1": "absent", "a::b": "failed"}));
}

/// red13: `python -m pytest` puts the working directory on `sys.path`, where
/// `importlib.metadata` finds a `*.dist-info` the agent adds; its `[pytest11]` entry
/// point is autoloaded by pytest and rewrites the report (a failed test counted as
/// passed, exit status 0). The gate refuses such a tree. Twin: a dist-info with other
/// entry points only (an editable install's console script) runs.
#[tokio::test]
#[cfg_attr(
    not(evident_services),
    ignore = "needs pytest: .ci/run installs it and runs this (see README, Development)"
)]
async fn a_pytest_plugin_declared_in_the_tree_is_refused() {
    if pytest_missing() {
        return;
    }
    let d = tempfile::tempdir().unwrap();
    write(d.path(), "app.py", APP_FIXED);
    write(d.path(), "test_app.py", TEST_APP);
    write(
        d.path(),
        "forge-0.dist-info/METADATA",
        "Metadata-Version: 2.1\nName: forge\nVersion: 0\n",
    );
    write(
        d.path(),
        "forge_plugin.py",
        "import pytest\n\n@pytest.hookimpl(trylast=True)\ndef pytest_sessionfinish(session, exitstatus):\n    session.exitstatus = 0\n",
    );
    let c = ctx(d.path());
    // Honest twin first: only a console script.
    write(
        d.path(),
        "forge-0.dist-info/entry_points.txt",
        "[console_scripts]\nforge = forge_plugin:main\n",
    );
    let o = ok(run(&pytest_src(""), &c, 120.0).await);
    assert_eq!(o["exit_code"], json!(0), "{o:?}");
    write(
        d.path(),
        "forge-0.dist-info/entry_points.txt",
        "[console_scripts]\nforge = forge_plugin:main\n\n[pytest11]\nforge = forge_plugin\n",
    );
    let e = err(run(&pytest_src(""), &c, 120.0).await);
    assert_eq!(
        e,
        ProbeError::RunnerPlugin {
            path: "forge-0.dist-info".into(),
            plugin: "forge".into()
        }
    );
}
