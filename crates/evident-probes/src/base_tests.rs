//! A run judged against the base's own results, the way SWE-bench grades (its
//! PASS_TO_PASS rule): the same command runs once at the base revision (cached per base
//! commit, command and environment), and every test that passed there must pass now —
//! not fail, skip, xfail or vanish. The test files the runner collected at the base
//! run at their base content wherever they live (`testing/`, inside the package, beside
//! the code), not the files a name pattern guesses. Tests the agent added run too and
//! are reported apart; a test that already failed at the base is reported and does not
//! count against the agent.

use std::collections::{BTreeMap, BTreeSet};
use std::time::Instant;

use serde::{Deserialize, Serialize};
use serde_json::Value;
use sha2::{Digest, Sha256};

use crate::command::{BASELINE, observe_run};
use crate::error::ProbeError;
use crate::git::Witness;
use crate::secret::Scrubber;
use crate::spec::{CommandSpec, Protect};
use crate::summary::{Case, Outcome};
use crate::{Context, Object};

/// Most test names shown in a list of the observation.
const MAX_NAMES: usize = 20;

/// What the base's run showed, kept in the slot's cache.
#[derive(Debug, Clone, Serialize, Deserialize)]
struct BaseResults {
    commit: String,
    /// Tests that passed at the base (`group::name`).
    passed: BTreeSet<String>,
    /// Tests that ran at the base and did not pass.
    not_passed: BTreeSet<String>,
    /// The test files those tests live in, relative to the root.
    files: BTreeSet<String>,
}

fn berr(reason: impl Into<String>) -> ProbeError {
    ProbeError::Protect {
        reason: format!("base_tests: {}", reason.into()),
    }
}

fn id(c: &Case) -> String {
    format!("{}::{}", c.group, c.name)
        .trim_start_matches("::")
        .to_string()
}

/// Run `spec` against the base `rev`'s results.
pub(crate) async fn observe(
    spec: &CommandSpec,
    rev: &str,
    ctx: &Context,
    limit: std::time::Duration,
    scrub: &mut Scrubber,
) -> Result<Object, ProbeError> {
    let started = Instant::now();
    let rev = if rev == BASELINE {
        ctx.baseline.clone().ok_or_else(|| {
            berr(format!(
                "{BASELINE:?} names the session's baseline, and this gate has none; hint: pass `evident gate --baseline REV`, or run it from an agent hook"
            ))
        })?
    } else {
        rev.to_string()
    };
    let gate_path = ctx.env.get("PATH").map(String::as_str);
    let w = Witness::open(&ctx.root, gate_path).await?;
    let commit = w.resolve(&rev).await?.ok_or_else(|| {
        berr(format!(
            "{rev:?} is not a commit of the repository; hint: in CI, fetch it first (`fetch-depth: 0`)"
        ))
    })?;
    let base = base_results(spec, &commit, &w, ctx, limit, scrub).await?;

    // Now: the base's test files at their base content, as well as what the contract
    // protects.
    let mut now = spec.clone();
    now.base_tests = None;
    let protect_base = spec
        .protect
        .as_ref()
        .map_or(commit.clone(), |p| p.base.clone());
    let p = now.protect.get_or_insert_with(|| Protect {
        base: protect_base,
        paths: Vec::new(),
        ignored: Default::default(),
        overlay: None,
    });
    for f in &base.files {
        let g = escape_glob(f);
        if !p.paths.contains(&g) {
            p.paths.push(g);
        }
    }
    if p.paths.is_empty() {
        now.protect = spec.protect.clone();
    }
    let left = limit.saturating_sub(started.elapsed());
    let (mut obj, cases) = observe_run(&now, ctx, left, scrub).await?;
    compare(&mut obj, &base, &cases, scrub);
    Ok(obj)
}

/// The base's results: from the cache, or by running the command in a snapshot of the
/// base commit (its overlay laid over it too).
async fn base_results(
    spec: &CommandSpec,
    commit: &str,
    w: &Witness,
    ctx: &Context,
    limit: std::time::Duration,
    scrub: &mut Scrubber,
) -> Result<BaseResults, ProbeError> {
    let deadline = Instant::now() + limit;
    let mut h = Sha256::new();
    h.update(commit.as_bytes());
    h.update(serde_json::to_vec(spec).unwrap_or_default());
    for rel in &spec.environment {
        let real = ctx.root.join(crate::paths::relative(rel)?);
        let digest = std::fs::canonicalize(&real)
            .ok()
            .and_then(|c| crate::snapshot::digest_tree(&c, deadline).ok())
            .unwrap_or_default();
        h.update(rel.as_bytes());
        h.update(digest.as_bytes());
    }
    let key = hex::encode(&h.finalize()[..12]);
    let cache = crate::snapshot::cache_file(&ctx.root, spec, &format!("base-tests-{key}.json"))?;
    if let Some(r) = read_cached(&cache)
        && r.commit == commit
    {
        return Ok(r);
    }
    let mut at_base = spec.clone();
    at_base.base_tests = None;
    at_base.tests_passed.clear();
    at_base.protect = Some(Protect {
        base: commit.to_string(),
        paths: vec!["**".into()],
        ignored: Default::default(),
        overlay: spec.protect.as_ref().and_then(|p| p.overlay.clone()),
    });
    let (obj, cases) = Box::pin(observe_run(&at_base, ctx, limit, scrub)).await?;
    if !cases.iter().any(|c| c.outcome == Outcome::Passed) {
        // A base where nothing passes judges nothing (a generated module missing from
        // the snapshot made every base test error, and then any change "regressed"
        // nothing).
        return Err(berr(format!(
            "no test passed at the base {} ({} test results, exit code {}): nothing to judge the change against; hint: run the command on the base yourself — a generated file the tests import is not in the snapshot (build it in the command, or declare it in `environment`)",
            &commit[..commit.len().min(12)],
            cases.len(),
            obj.get("exit_code").unwrap_or(&Value::Null)
        )));
    }
    if cases.is_empty() {
        return Err(berr(format!(
            "the run at the base {} gave no named test results (exit code {}); it needs the runner's machine report: pytest run without a shell, `go test -json`, or a `junit` file",
            &commit[..commit.len().min(12)],
            obj.get("exit_code").unwrap_or(&Value::Null)
        )));
    }
    let outcomes = worst_outcomes(&cases);
    let mut r = BaseResults {
        commit: commit.to_string(),
        passed: BTreeSet::new(),
        not_passed: BTreeSet::new(),
        files: BTreeSet::new(),
    };
    for (name, o) in &outcomes {
        if *o == Outcome::Passed {
            r.passed.insert(name.clone());
        } else {
            r.not_passed.insert(name.clone());
        }
    }
    // Each case's file: the longest dotted prefix of its JUnit classname that is a
    // Python file of the base (pytest writes `tests.test_calc.TestX`).
    let top = w.top().to_path_buf();
    let root = std::fs::canonicalize(&ctx.root).unwrap_or_else(|_| ctx.root.clone());
    let prefix = root
        .strip_prefix(&top)
        .map(|p| p.to_string_lossy().into_owned())
        .unwrap_or_default();
    let base_files: BTreeSet<String> = w
        .files_at(commit)
        .await?
        .into_iter()
        .filter_map(|f| {
            let p = String::from_utf8(f.path).ok()?;
            if prefix.is_empty() {
                Some(p)
            } else {
                p.strip_prefix(&format!("{prefix}/")).map(str::to_string)
            }
        })
        .collect();
    // pytest names tests relative to its rootdir, which is where it runs (`cwd`) or
    // above; a name that maps to no test module of the base cannot be protected, and
    // then nothing is judged (fail closed).
    let cwd_prefix = spec
        .cwd
        .as_deref()
        .map(|c| c.trim_matches('/').to_string())
        .filter(|c| !c.is_empty() && c != ".");
    for c in &cases {
        match test_module(&c.group, &base_files, cwd_prefix.as_deref()) {
            Some(f) => {
                r.files.insert(f);
            }
            None if is_doctest(c, &base_files) => {}
            None => {
                return Err(berr(format!(
                    "cannot tell which file of the base holds the test {}: it cannot be run at its base content; hint: protect the test files explicitly (protect.paths) and leave base_tests out",
                    id(c)
                )));
            }
        }
    }
    write_cached(&cache, &r);
    Ok(r)
}

/// The test module of the base a JUnit classname comes from (pytest writes
/// `tests.test_calc.TestX` for `tests/test_calc.py::TestX`): the longest dotted prefix
/// naming a `test_*.py` or `*_test.py` file (pytest's default `python_files`), relative
/// to the root or to the working directory. A directory whose name holds a dot
/// (`tests/v1.0/`) is found by trying every way of joining the parts.
fn test_module(group: &str, base: &BTreeSet<String>, cwd: Option<&str>) -> Option<String> {
    let parts: Vec<&str> = group.split('.').collect();
    for k in (1..=parts.len()).rev() {
        let name = parts[k - 1];
        if !(name.starts_with("test_") || name.ends_with("_test")) {
            continue;
        }
        for joined in joinings(&parts[..k]) {
            let rel = format!("{joined}.py");
            for cand in [Some(rel.clone()), cwd.map(|c| format!("{c}/{rel}"))]
                .into_iter()
                .flatten()
            {
                if base.contains(&cand) {
                    return Some(cand);
                }
            }
        }
    }
    None
}

/// Every path the dotted parts could spell: each dot a `/` or a literal dot (at most
/// 2^10 ways; deeper names are tried only as all slashes).
fn joinings(parts: &[&str]) -> Vec<String> {
    if parts.len() > 11 {
        return vec![parts.join("/")];
    }
    let mut out = vec![parts[0].to_string()];
    for p in &parts[1..] {
        out = out
            .into_iter()
            .flat_map(|s| [format!("{s}/{p}"), format!("{s}.{p}")])
            .collect();
    }
    out
}

/// A doctest item (`--doctest-modules`): its classname is a module of the project, not
/// a test module; the module is the work under test and is never laid from the base.
fn is_doctest(c: &Case, base: &BTreeSet<String>) -> bool {
    // pytest names a doctest item after the object it documents (`calc.add`); a test
    // function's name has no dot outside its parameters.
    let dotted = c.name.split('[').next().is_some_and(|n| n.contains('.'));
    let parts: Vec<&str> = c.group.split('.').collect();
    dotted
        && (1..=parts.len()).any(|k| {
            joinings(&parts[..k])
                .iter()
                .any(|j| base.contains(&format!("{j}.py")))
        })
}

/// The cached results, read without following a symlink.
fn read_cached(path: &std::path::Path) -> Option<BaseResults> {
    use std::io::Read;
    use std::os::unix::fs::OpenOptionsExt;
    let mut f = std::fs::OpenOptions::new()
        .read(true)
        .custom_flags(libc::O_NOFOLLOW | libc::O_NONBLOCK)
        .open(path)
        .ok()?;
    if !f.metadata().ok()?.is_file() {
        return None;
    }
    let mut text = String::new();
    f.by_ref()
        .take(64 * 1024 * 1024)
        .read_to_string(&mut text)
        .ok()?;
    serde_json::from_str(&text).ok()
}

/// Write the results through a new file renamed into place (a symlink planted at the
/// path is replaced, never written through).
fn write_cached(path: &std::path::Path, r: &BaseResults) {
    let Ok(text) = serde_json::to_string(r) else {
        return;
    };
    let tmp = path.with_extension(format!("tmp{}", std::process::id()));
    let _ = std::fs::remove_file(&tmp);
    let written = std::fs::OpenOptions::new()
        .write(true)
        .create_new(true)
        .open(&tmp)
        .and_then(|mut f| std::io::Write::write_all(&mut f, text.as_bytes()));
    if written.is_ok() {
        let _ = std::fs::rename(&tmp, path);
    } else {
        let _ = std::fs::remove_file(&tmp);
    }
}

/// Each test's outcome; a test reported more than once takes its worst.
fn worst_outcomes(cases: &[Case]) -> BTreeMap<String, Outcome> {
    let mut m: BTreeMap<String, Outcome> = BTreeMap::new();
    for c in cases {
        let e = m.entry(id(c)).or_insert(c.outcome);
        *e = match (*e, c.outcome) {
            (Outcome::Failed, _) | (_, Outcome::Failed) => Outcome::Failed,
            (Outcome::Skipped, _) | (_, Outcome::Skipped) => Outcome::Skipped,
            _ => Outcome::Passed,
        };
    }
    m
}

/// The comparison's keys: `regressed` (tests that passed at the base and do not pass
/// now) and `regressed_tests`, `base_passed`, `base_failing` (failed at the base, not
/// counted), `added_tests` and `added_failed` (tests the agent added) and their names.
fn compare(obj: &mut Object, base: &BaseResults, cases: &[Case], scrub: &Scrubber) {
    let now = worst_outcomes(cases);
    let regressed: Vec<&String> = base
        .passed
        .iter()
        .filter(|t| now.get(*t) != Some(&Outcome::Passed))
        .collect();
    let added: Vec<(&String, &Outcome)> = now
        .iter()
        .filter(|(t, _)| !base.passed.contains(*t) && !base.not_passed.contains(*t))
        .collect();
    let added_failed: Vec<&String> = added
        .iter()
        .filter(|(_, o)| **o != Outcome::Passed)
        .map(|(t, _)| *t)
        .collect();
    let names = |v: &[&String]| -> Value {
        Value::Array(
            v.iter()
                .take(MAX_NAMES)
                .map(|t| Value::from(scrub.scrub(t)))
                .collect(),
        )
    };
    obj.insert("base_commit".into(), Value::from(base.commit.clone()));
    obj.insert("base_passed".into(), Value::from(base.passed.len() as u64));
    obj.insert("regressed".into(), Value::from(regressed.len() as u64));
    if !regressed.is_empty() {
        obj.insert("regressed_tests".into(), names(&regressed));
    }
    let failing: Vec<&String> = base.not_passed.iter().collect();
    obj.insert("base_failing".into(), Value::from(failing.len() as u64));
    if !failing.is_empty() {
        obj.insert("base_failing_tests".into(), names(&failing));
    }
    obj.insert("added_tests".into(), Value::from(added.len() as u64));
    obj.insert(
        "added_failed".into(),
        Value::from(added_failed.len() as u64),
    );
    if !added_failed.is_empty() {
        obj.insert("added_failed_tests".into(), names(&added_failed));
    }
}

/// A literal path as a protect glob.
fn escape_glob(path: &str) -> String {
    let mut out = String::with_capacity(path.len());
    for c in path.chars() {
        if "\\*?[]{}".contains(c) {
            out.push('\\');
        }
        out.push(c);
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    fn files(v: &[&str]) -> BTreeSet<String> {
        v.iter().map(|s| s.to_string()).collect()
    }

    /// Red team (04, 06): a doctest's classname names the module under test, which must
    /// never be laid from the base; a test directory with a dot in its name, and names
    /// relative to the working directory, are found.
    #[test]
    fn test_modules_are_mapped_and_doctests_are_not() {
        let base = files(&["calc.py", "tests/v1.0/test_calc.py", "py/tests/test_x.py"]);
        assert_eq!(test_module("calc", &base, None), None);
        let doctest = Case {
            group: "calc".into(),
            name: "calc.add".into(),
            outcome: Outcome::Passed,
        };
        assert!(is_doctest(&doctest, &base));
        let plain = Case {
            group: "calc".into(),
            name: "test_add".into(),
            outcome: Outcome::Passed,
        };
        assert!(!is_doctest(&plain, &base));
        assert_eq!(
            test_module("tests.v1.0.test_calc.TestX", &base, None).as_deref(),
            Some("tests/v1.0/test_calc.py")
        );
        assert_eq!(
            test_module("tests.test_x", &base, Some("py")).as_deref(),
            Some("py/tests/test_x.py")
        );
        assert_eq!(test_module("tests.test_x", &base, None), None);
    }
}
