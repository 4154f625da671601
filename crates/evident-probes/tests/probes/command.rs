use std::path::Path;
use std::time::{Duration, Instant};

use evident_probes::{Escape, ProbeError, Source};
use serde_json::json;

use crate::{SECRET, ctx, err, ok, run, src};

/// Toolchain variables a real `cargo` needs; everything else stays out.
const CARGO_ENV: &str = r#"["PATH", "HOME", "RUSTUP_HOME", "CARGO_HOME", "RUSTUP_TOOLCHAIN"]"#;

pub(crate) fn write(dir: &Path, rel: &str, text: &str) {
    let p = dir.join(rel);
    std::fs::create_dir_all(p.parent().unwrap()).unwrap();
    std::fs::write(p, text).unwrap();
}

/// Is this pid gone (or a zombie awaiting its reaper)?
fn dead(pid: &str) -> bool {
    match std::fs::read_to_string(format!("/proc/{pid}/stat")) {
        Err(_) => true,
        Ok(stat) => stat
            .rsplit_once(')')
            .is_some_and(|(_, rest)| rest.trim_start().starts_with('Z')),
    }
}

async fn wait_dead(pid: &str) -> bool {
    for _ in 0..50 {
        if dead(pid) {
            return true;
        }
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    false
}

/// Real `cargo test` runs of a dependency-free fixture crate: pass, fail, zero tests.
#[tokio::test]
async fn cargo_test_real_runs() {
    let d = tempfile::tempdir().unwrap();
    let p = d.path();
    write(
        p,
        "fixture/Cargo.toml",
        "[package]\nname = \"fixture_ok\"\nversion = \"0.1.0\"\nedition = \"2021\"\n\n[workspace]\n",
    );
    write(
        p,
        "fixture/src/lib.rs",
        r#"
pub fn add(a: i32, b: i32) -> i32 { a + b }
#[cfg(test)]
mod tests {
    #[test] fn adds() { assert_eq!(super::add(2, 2), 4); }
    #[test] fn flips() { assert!(std::env::var("FIXTURE_FAIL").is_err(), "asked to fail"); }
    #[test] #[ignore] fn slow() {}
}
"#,
    );
    let target = p.join("target");
    let base = format!(
        r#"argv = ["cargo", "test", "--offline", "--lib"], cwd = "fixture", inherit_env = {CARGO_ENV}, timeout_s = 300"#
    );
    let c = ctx(p);
    let pass = src(&format!(
        r#"{{ command = {{ {base}, env = {{ CARGO_TARGET_DIR = "{}", CARGO_TERM_COLOR = "never" }} }} }}"#,
        target.display()
    ));
    let o = ok(run(&pass, &c, 600.0).await);
    assert_eq!(o["exit_code"], json!(0), "{o:?}");
    assert_eq!(o["ran"], json!(true));
    assert_eq!(o["runner"], json!("cargo"));
    assert_eq!(
        (
            o["passed"].clone(),
            o["failed"].clone(),
            o["skipped"].clone()
        ),
        (json!(2), json!(0), json!(1))
    );
    assert_eq!(o["stdout_sha256"].as_str().map(str::len), Some(64));
    assert!(o.get("stdout").is_none(), "raw output only when asked");

    let fail = src(&format!(
        r#"{{ command = {{ {base}, env = {{ CARGO_TARGET_DIR = "{}", FIXTURE_FAIL = "1" }} }} }}"#,
        target.display()
    ));
    let o = ok(run(&fail, &c, 600.0).await);
    assert_eq!(o["exit_code"], json!(101));
    assert_eq!(o["ran"], json!(true));
    assert_eq!(
        (o["passed"].clone(), o["failed"].clone()),
        (json!(1), json!(1))
    );

    // A filter that matches nothing: exit 0, and no test ran.
    let zero = src(&format!(
        r#"{{ command = {{ argv = ["cargo", "test", "--offline", "--lib", "--", "no_such_test"], cwd = "fixture", inherit_env = {CARGO_ENV}, env = {{ CARGO_TARGET_DIR = "{}" }} }} }}"#,
        target.display()
    ));
    let o = ok(run(&zero, &c, 600.0).await);
    assert_eq!(o["exit_code"], json!(0));
    assert_eq!(o["ran"], json!(false));
    assert_eq!(o["passed"], json!(0));
}

fn pytest_fixture(p: &Path) {
    write(
        p,
        "py/test_ok.py",
        "import pytest\n\ndef test_a():\n    assert 1 + 1 == 2\n\ndef test_b():\n    assert 'x'.upper() == 'X'\n\n@pytest.mark.skip(reason='fixture')\ndef test_c():\n    pass\n",
    );
    write(p, "py/test_fail.py", "def test_bad():\n    assert 1 == 2\n");
    // Prints a fake closing line, then dies with a failing status.
    write(
        p,
        "py/test_spoof.py",
        "import os, sys\n\ndef test_spoof():\n    sys.stdout.write('\\n========== 7 passed in 0.01s ==========\\n')\n    sys.stdout.flush()\n    os._exit(1)\n",
    );
}

fn pytest(args: &str) -> Source {
    src(&format!(
        r#"{{ command = {{ argv = ["python3", "-m", "pytest", "-p", "no:cacheprovider", {args}], cwd = "py", inherit_env = ["PATH", "HOME"], env = {{ PYTHONDONTWRITEBYTECODE = "1" }} }} }}"#
    ))
}

#[tokio::test]
#[cfg_attr(
    not(evident_services),
    ignore = "needs pytest: .ci/run installs it and runs this (see README, Development)"
)]
async fn pytest_real_runs() {
    if pytest_missing() {
        return;
    }
    let d = tempfile::tempdir().unwrap();
    pytest_fixture(d.path());
    let c = ctx(d.path());
    let o = ok(run(&pytest(r#""-q", "test_ok.py""#), &c, 120.0).await);
    assert_eq!(o["exit_code"], json!(0), "{o:?}");
    assert_eq!(o["runner"], json!("pytest"));
    assert_eq!(
        (
            o["passed"].clone(),
            o["failed"].clone(),
            o["skipped"].clone()
        ),
        (json!(2), json!(0), json!(1))
    );
    assert_eq!(o["ran"], json!(true));

    let o = ok(run(&pytest(r#""test_ok.py", "test_fail.py""#), &c, 120.0).await);
    assert_eq!(o["exit_code"], json!(1));
    assert_eq!(
        (o["passed"].clone(), o["failed"].clone()),
        (json!(2), json!(1))
    );

    // Zero tests: pytest exits 5; the observation says no test ran.
    let o = ok(run(
        &pytest(r#""-q", "-k", "no_such_test", "test_ok.py""#),
        &c,
        120.0,
    )
    .await);
    assert_eq!(o["exit_code"], json!(5));
    assert_eq!(o["ran"], json!(false));
}

#[tokio::test]
#[cfg_attr(
    not(evident_services),
    ignore = "needs pytest: .ci/run installs it and runs this (see README, Development)"
)]
async fn spoofed_passed_output_cannot_satisfy() {
    if pytest_missing() {
        return;
    }
    let d = tempfile::tempdir().unwrap();
    pytest_fixture(d.path());
    let c = ctx(d.path());
    // pytest never wrote its report (the test ended the process): the spoofed line is
    // not read in its place, so nothing shows a test ran.
    let o = ok(run(&pytest(r#""-s", "test_spoof.py""#), &c, 120.0).await);
    assert_eq!(
        (o["exit_code"].clone(), o["ran"].clone()),
        (json!(1), json!(false)),
        "{o:?}"
    );
    assert!(o.get("passed").is_none(), "{o:?}");
    // The other direction: failures printed, exit 0.
    let s = src(
        r#"{ command = { argv = ["echo '== 2 passed, 1 failed in 0.10s =='"], shell = true, runner = "pytest" } }"#,
    );
    let e = err(run(&s, &c, 10.0).await);
    assert!(
        matches!(
            e,
            ProbeError::SummaryDisagrees {
                failed: 1,
                exit_code: 0,
                ..
            }
        ),
        "{e}"
    );
    // A cargo-style fake with a failing exit.
    let s = src(
        r#"{ command = { argv = ["echo 'test result: ok. 12 passed; 0 failed; 0 ignored'; exit 3"], shell = true } }"#,
    );
    let e = err(run(&s, &c, 10.0).await);
    assert!(
        matches!(
            e,
            ProbeError::SummaryDisagrees {
                passed: 12,
                exit_code: 3,
                ..
            }
        ),
        "{e}"
    );
    assert!(e.to_string().contains("cannot be trusted"));
}

#[tokio::test]
async fn no_summary_means_not_ran() {
    let d = tempfile::tempdir().unwrap();
    let s = src(r#"{ command = { argv = ["true"], inherit_env = ["PATH"] } }"#);
    let o = ok(run(&s, &ctx(d.path()), 10.0).await);
    assert_eq!(o["exit_code"], json!(0));
    assert_eq!(o["ran"], json!(false));
    assert_eq!(o["runner"], json!(null));
    assert!(o.get("passed").is_none());
    // A failing build (no summary, non-zero exit) is an observation that refutes.
    let s = src(r#"{ command = { argv = ["false"] } }"#);
    let o = ok(run(&s, &ctx(d.path()), 10.0).await);
    assert_eq!(o["exit_code"], json!(1));
    assert_eq!(o["ran"], json!(false));
}

#[tokio::test]
async fn command_not_found_and_bad_specs() {
    let d = tempfile::tempdir().unwrap();
    let c = ctx(d.path());
    let e = err(run(
        &src(r#"{ command = { argv = ["no-such-program-evident-x"] } }"#),
        &c,
        5.0,
    )
    .await);
    assert_eq!(
        e,
        ProbeError::CommandNotFound {
            program: "no-such-program-evident-x".into()
        }
    );
    let e = err(run(
        &src(r#"{ command = { argv = ["./missing.sh"] } }"#),
        &c,
        5.0,
    )
    .await);
    assert_eq!(
        e,
        ProbeError::CommandNotFound {
            program: "./missing.sh".into()
        }
    );
    // Not executable: also not found as a program.
    std::fs::write(d.path().join("plain.sh"), "echo hi").unwrap();
    let e = err(run(&src(r#"{ command = { argv = ["./plain.sh"] } }"#), &c, 5.0).await);
    assert!(matches!(e, ProbeError::CommandNotFound { .. }), "{e}");
    let e = err(run(&src(r#"{ command = { argv = [] } }"#), &c, 5.0).await);
    assert!(matches!(e, ProbeError::InvalidSpec { .. }));
    let e = err(run(
        &src(r#"{ command = { argv = ["echo", "a"], shell = true } }"#),
        &c,
        5.0,
    )
    .await);
    assert!(matches!(e, ProbeError::InvalidSpec { .. }));
    let e = err(run(
        &src(r#"{ command = { argv = ["true"], cwd = "../" } }"#),
        &c,
        5.0,
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
    let e = err(run(
        &src(r#"{ command = { argv = ["true"], timeout_s = -1 } }"#),
        &c,
        5.0,
    )
    .await);
    assert!(matches!(e, ProbeError::InvalidSpec { .. }), "{e}");
}

#[tokio::test]
async fn no_shell_unless_asked() {
    let d = tempfile::tempdir().unwrap();
    let c = ctx(d.path());
    // Without a shell, `;` and `$(...)` are plain argument bytes.
    let s = src(
        r#"{ command = { argv = ["echo", "a; touch pwned $(touch pwned2)"], capture_output = true } }"#,
    );
    let o = ok(run(&s, &c, 5.0).await);
    assert_eq!(o["stdout"], json!("a; touch pwned $(touch pwned2)\n"));
    assert!(!d.path().join("pwned").exists() && !d.path().join("pwned2").exists());
}

/// A file in /dev/shm (which a sandboxed run may write) unique to this test process.
fn shm_file(name: &str) -> std::path::PathBuf {
    std::path::PathBuf::from(format!(
        "/dev/shm/evident-test-{}-{name}.pid",
        std::process::id()
    ))
}

#[tokio::test]
async fn timeout_kills_the_whole_process_group() {
    let d = tempfile::tempdir().unwrap();
    // The run writes only its snapshot and /dev (the sandbox): the pid comes out there.
    let pid_file = shm_file("timeout");
    let c = ctx(d.path());
    let s = src(&format!(
        r#"{{ command = {{ argv = ["sleep 30 & echo $! > {}; sleep 30"], shell = true, timeout_s = 1 }} }}"#,
        pid_file.display()
    ));
    let t = Instant::now();
    let e = err(run(&s, &c, 60.0).await);
    assert_eq!(e, ProbeError::Timeout { limit_ms: 1000 });
    assert!(t.elapsed() < Duration::from_secs(5), "{:?}", t.elapsed());
    let pid = std::fs::read_to_string(&pid_file).unwrap();
    assert!(
        wait_dead(pid.trim()).await,
        "background child {pid} survived the timeout"
    );
}

#[tokio::test]
async fn leftover_background_processes_do_not_hold_the_probe() {
    let d = tempfile::tempdir().unwrap();
    let pid_file = shm_file("leftover");
    let c = ctx(d.path());
    // The background sleep keeps stdout open; the probe must not wait 30 s for it.
    let s = src(&format!(
        r#"{{ command = {{ argv = ["sleep 30 & echo $! > {}; echo '1 passed in 0.01s'"], shell = true }} }}"#,
        pid_file.display()
    ));
    let t = Instant::now();
    let o = ok(run(&s, &c, 20.0).await);
    assert!(t.elapsed() < Duration::from_secs(5), "{:?}", t.elapsed());
    assert_eq!(o["ran"], json!(true));
    let pid = std::fs::read_to_string(&pid_file).unwrap();
    assert!(wait_dead(pid.trim()).await);
}

#[tokio::test]
async fn environment_is_not_inherited_and_secrets_are_scrubbed() {
    let d = tempfile::tempdir().unwrap();
    let c = ctx(d.path());
    // `env` prints exactly what the command received: nothing but the variables that
    // keep Python from loading user site-packages and from writing bytecode into the
    // tree, and with `keep_caches` only the first.
    let s = src(r#"{ command = { argv = ["/usr/bin/env"], capture_output = true } }"#);
    let o = ok(run(&s, &c, 5.0).await);
    // Every path the gate sets lies in the run's slot, outside the tree.
    let got = o["stdout"].as_str().unwrap().to_string();
    let names: Vec<&str> = got.lines().map(|l| l.split('=').next().unwrap()).collect();
    let mut want = vec!["CARGO_TARGET_DIR", "CARGO_TERM_COLOR"];
    if evident_probes::sandbox::netns_available() {
        want.insert(0, "CARGO_NET_OFFLINE");
    }
    want.extend([
        "NO_COLOR",
        "PYTHONDONTWRITEBYTECODE",
        "PYTHONNOUSERSITE",
        "TMPDIR",
    ]);
    assert_eq!(names, want, "{got}");
    let uid = String::from_utf8(
        std::process::Command::new("id")
            .arg("-u")
            .output()
            .unwrap()
            .stdout,
    )
    .unwrap();
    let slot = std::env::temp_dir().join(format!("evident-{}", uid.trim()));
    for l in got.lines().filter(|l| l.contains('/')) {
        let v = l.split_once('=').unwrap().1;
        assert!(std::path::Path::new(v).starts_with(&slot), "{l}");
    }
    let s = src(
        r#"{ command = { argv = ["/usr/bin/env"], capture_output = true, keep_caches = true } }"#,
    );
    let o = ok(run(&s, &c, 5.0).await);
    assert!(
        o["stdout"]
            .as_str()
            .unwrap()
            .contains("PYTHONNOUSERSITE=1\n")
    );
    let s = src(
        r#"{ command = { argv = ["/usr/bin/env"], capture_output = true, keep_caches = true, inherit_env = ["EVIDENT_TEST_SECRET", "NOT_SET_IN_ENV_Q"], env = { MODE = "ci" } } }"#,
    );
    let o = ok(run(&s, &c, 5.0).await);
    let out = o["stdout"].as_str().unwrap();
    assert!(
        out.contains("CARGO_TARGET_DIR=")
            && out.contains("\nEVIDENT_TEST_SECRET=***\nMODE=ci\n")
            && !out.contains("NOT_SET_IN_ENV_Q"),
        "{out}"
    );
    let s = src(
        r#"{ command = { argv = ["echo \"token=$TOKEN\" >&2"], shell = true, capture_output = true, env = { TOKEN = { env = "EVIDENT_TEST_SECRET" } } } }"#,
    );
    let o = ok(run(&s, &c, 5.0).await);
    assert_eq!(o["stderr"], json!("token=***\n"));
    assert!(!serde_json::to_string(&o).unwrap().contains(SECRET));
    let s = src(
        r#"{ command = { argv = ["true"], env = { TOKEN = { env = "EVIDENT_NOT_SET_Q" } } } }"#,
    );
    assert_eq!(
        err(run(&s, &c, 5.0).await),
        ProbeError::EnvMissing {
            name: "EVIDENT_NOT_SET_Q".into()
        }
    );
}

#[tokio::test]
async fn output_is_capped_but_fully_hashed() {
    let d = tempfile::tempdir().unwrap();
    let c = ctx(d.path());
    let s = src(
        r#"{ command = { argv = ["head -c 300000 /dev/zero | tr '\\0' 'a'; echo; echo '3 passed in 0.01s'"], shell = true, capture_output = true, max_output_bytes = 100 } }"#,
    );
    let o = ok(run(&s, &c, 10.0).await);
    assert_eq!(o["stdout"].as_str().unwrap().len(), 100);
    assert_eq!(o["stdout_truncated"], json!(true));
    assert_eq!(
        o["passed"],
        json!(3),
        "the summary after the cap is still read"
    );
    let mut all = "a".repeat(300000);
    all.push_str("\n3 passed in 0.01s\n");
    use sha2::Digest;
    assert_eq!(
        o["stdout_sha256"],
        json!(hex::encode(sha2::Sha256::digest(all.as_bytes())))
    );
}

#[tokio::test]
async fn junit_report_counts_and_staleness() {
    let d = tempfile::tempdir().unwrap();
    let c = ctx(d.path());
    let s = src(
        r#"{ command = { argv = ["printf '<testsuites><testsuite name=\"a\" tests=\"4\" failures=\"0\" errors=\"0\" skipped=\"1\"/></testsuites>' > junit.xml"], shell = true, junit = "junit.xml" } }"#,
    );
    let o = ok(run(&s, &c, 10.0).await);
    assert_eq!(o["runner"], json!("junit"));
    assert_eq!(
        (o["passed"].clone(), o["skipped"].clone(), o["ran"].clone()),
        (json!(3), json!(1), json!(true))
    );
    // A report in the tree (the agent's), not rewritten by the run: stale.
    write(
        d.path(),
        "junit.xml",
        "<testsuites><testsuite name=\"a\" tests=\"4\" failures=\"0\" errors=\"0\" skipped=\"0\"/></testsuites>",
    );
    let s =
        src(r#"{ command = { argv = ["true"], inherit_env = ["PATH"], junit = "junit.xml" } }"#);
    let e = err(run(&s, &c, 10.0).await);
    assert!(matches!(e, ProbeError::Junit { .. }), "{e}");
    assert!(e.to_string().contains("not rewritten"), "{e}");
    let s = src(r#"{ command = { argv = ["true"], inherit_env = ["PATH"], junit = "none.xml" } }"#);
    let e = err(run(&s, &c, 10.0).await);
    assert!(e.to_string().contains("did not write it"), "{e}");
    // Failures in the report with exit 0 disagree.
    let s = src(
        r#"{ command = { argv = ["printf '<testsuite tests=\"2\" failures=\"1\"/>' > j2.xml"], shell = true, junit = "j2.xml" } }"#,
    );
    assert!(matches!(
        err(run(&s, &c, 10.0).await),
        ProbeError::SummaryDisagrees { .. }
    ));
}

#[test]
fn default_expectation() {
    let s = src(r#"{ command = { argv = ["cargo", "test"] } }"#);
    assert_eq!(
        serde_json::Value::Object(s.default_expected().unwrap()),
        json!({"exit_code": 0, "ran": true})
    );
    assert!(
        src(r#"{ file = { path = "x" } }"#)
            .default_expected()
            .is_none()
    );
}

#[tokio::test]
async fn argv0_uses_the_commands_own_path_when_set() {
    let d = tempfile::tempdir().unwrap();
    let bin = d.path().join("bin");
    std::fs::create_dir(&bin).unwrap();
    let tool = bin.join("evident-fixture-tool");
    std::fs::write(&tool, "#!/bin/sh\necho '4 passed in 0.02s'\n").unwrap();
    use std::os::unix::fs::PermissionsExt;
    std::fs::set_permissions(&tool, std::fs::Permissions::from_mode(0o755)).unwrap();
    let c = ctx(d.path());
    let s = src(&format!(
        r#"{{ command = {{ argv = ["evident-fixture-tool"], env = {{ PATH = "{}" }} }} }}"#,
        bin.display()
    ));
    let o = ok(run(&s, &c, 10.0).await);
    assert_eq!(
        (o["passed"].clone(), o["runner"].clone()),
        (json!(4), json!("pytest"))
    );
    // Not on the gate's PATH: without the command's PATH it is not found.
    let s = src(r#"{ command = { argv = ["evident-fixture-tool"] } }"#);
    assert!(matches!(
        err(run(&s, &c, 10.0).await),
        ProbeError::CommandNotFound { .. }
    ));
}

#[tokio::test]
async fn cwd_symlink_escape_refused() {
    let d = tempfile::tempdir().unwrap();
    let inner = d.path().join("root");
    std::fs::create_dir(&inner).unwrap();
    std::os::unix::fs::symlink("..", inner.join("up")).unwrap();
    let c = ctx(&inner);
    let e = err(run(
        &src(r#"{ command = { argv = ["true"], cwd = "up" } }"#),
        &c,
        5.0,
    )
    .await);
    // The link leaves the tree: the snapshot refuses it before anything runs.
    assert!(
        e.to_string().contains("up is a symlink out of the tree"),
        "{e}"
    );
    let e = err(run(
        &src(r#"{ command = { argv = ["true"], junit = "up/j.xml" } }"#),
        &c,
        5.0,
    )
    .await);
    assert!(
        e.to_string().contains("up is a symlink out of the tree"),
        "{e}"
    );
    // A link inside the tree to a directory that escapes by `..` at run time: the
    // working directory is resolved beneath the snapshot's root.
    std::fs::remove_file(inner.join("up")).unwrap();
    std::fs::create_dir(inner.join("sub")).unwrap();
    std::os::unix::fs::symlink("sub", inner.join("ok")).unwrap();
    let e = err(run(
        &src(r#"{ command = { argv = ["true"], cwd = "nope" } }"#),
        &c,
        5.0,
    )
    .await);
    assert!(
        !matches!(
            e,
            ProbeError::PathEscape {
                via: Escape::Symlink,
                ..
            }
        ),
        "{e}"
    );
}

/// pytest runs are real; where pytest is not installed (a laptop with only Rust), say
/// so and skip. `.ci/run` installs it, so CI always runs them.
pub(crate) fn pytest_missing() -> bool {
    let ok = std::process::Command::new("python3")
        .args(["-c", "import pytest"])
        .output()
        .is_ok_and(|o| o.status.success());
    if !ok {
        if cfg!(evident_services) {
            panic!("pytest is not installed (.ci/run installs it)");
        }
        eprintln!(
            "SKIP: pytest is not installed (python3 -m pip install pytest; .ci/run installs it)"
        );
    }
    !ok
}
