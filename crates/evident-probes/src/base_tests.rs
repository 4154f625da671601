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
    if let Ok(text) = std::fs::read_to_string(&cache)
        && let Ok(r) = serde_json::from_str::<BaseResults>(&text)
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
    for c in &cases {
        let parts: Vec<&str> = c.group.split('.').collect();
        for k in (1..=parts.len()).rev() {
            let cand = format!("{}.py", parts[..k].join("/"));
            if base_files.contains(&cand) {
                r.files.insert(cand);
                break;
            }
        }
    }
    if let Ok(text) = serde_json::to_string(&r) {
        let _ = std::fs::write(&cache, text);
    }
    Ok(r)
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
