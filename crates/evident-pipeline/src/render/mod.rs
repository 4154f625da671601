//! Every way a [`Decision`](crate::Decision) is shown: the readable report, JSON,
//! JUnit XML (for CI systems) and Markdown (for CI job summaries). Strings the agent
//! wrote are escaped for terminals ([`shown`]) and for XML/Markdown.

mod junit;
mod markdown;
mod text;

pub use junit::render as junit;
pub use markdown::render as markdown;
pub(crate) use text::decision_warnings;
pub use text::{render as text, render_plan as plan, render_to as text_to, shown};

use crate::{Decision, Kind};
use serde::Serialize;
use serde_json::Value;

/// Keys of a failed test run's observation that are for people, shown as lines of
/// their own rather than inside the observation's JSON; so are the paths a git
/// observation names when the tree is not clean ([`evident_rules::unclean`]).
const FAILURE_KEYS: [&str; 3] = ["failed_tests", "stdout_tail", "stderr_tail"];

/// An observation without [`FAILURE_KEYS`] (and the unclean paths' keys), and those
/// keys as readable lines: which tests failed, how each output stream ended, which
/// paths made a git tree unclean.
pub(crate) fn split_failure(observed: &Value) -> (Value, Vec<String>) {
    use evident_rules::unclean;
    let Some(obj) = observed.as_object() else {
        return (observed.clone(), Vec::new());
    };
    if !FAILURE_KEYS
        .iter()
        .chain(&unclean::UNCLEAN_KEYS)
        .any(|k| obj.contains_key(*k))
    {
        return (observed.clone(), Vec::new());
    }
    let mut rest = obj.clone();
    let mut lines = Vec::new();
    if let Some(paths) = unclean::summary(obj, usize::MAX) {
        lines.push(format!("not clean, differs from HEAD at: {paths}"));
    }
    for k in unclean::UNCLEAN_KEYS {
        rest.shift_remove(k);
    }
    if let Some(Value::Array(names)) = rest.shift_remove("failed_tests") {
        let names: Vec<&str> = names.iter().filter_map(Value::as_str).collect();
        lines.push(format!("failed tests: {}", names.join(", ")));
    }
    for (key, label) in [("stdout_tail", "stdout"), ("stderr_tail", "stderr")] {
        if let Some(Value::String(tail)) = rest.shift_remove(key) {
            lines.push(format!("{label}, last lines:"));
            lines.extend(tail.lines().map(|l| format!("  | {l}")));
        }
    }
    (Value::Object(rest), lines)
}

/// The decided document with `verdict` replaced by the recomputed one (plus its
/// warnings, so a JSON reader sees what a person would) and, for a gate, a `gate`
/// object: the verifier, the contract, each observation, the plan, and whether the run
/// was partial. Written as the document is held (text, piece by piece), never copied
/// into one value: `serde_json::to_string_pretty(&render::json(&d))`.
pub fn json(d: &Decision) -> Json<'_> {
    Json(d)
}

/// What [`json`] writes.
pub struct Json<'a>(&'a Decision);

impl Serialize for Json<'_> {
    fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        use serde::ser::SerializeMap;
        let d = self.0;
        let mut verdict = serde_json::to_value(&d.verdict).unwrap_or(Value::Null);
        if let Some(obj) = verdict.as_object_mut() {
            obj.insert(
                "warnings".into(),
                serde_json::to_value(&d.warnings).unwrap_or(Value::Null),
            );
        }
        let gate = (d.kind == Kind::Gate).then(|| {
            serde_json::json!({
                "verifier": d.verifier,
                "contract": d.contract.as_ref().map(|(name, _)| name),
                "checks": d.runs,
                "plan": d.plan,
                "partial": d.partial_run,
            })
        });
        // As inserting into the document's object would: a member already there keeps
        // its place, a new one goes at the end (verdict, then gate).
        let mut map = s.serialize_map(None)?;
        let (mut wrote_verdict, mut wrote_gate) = (false, false);
        for (k, v) in evident_format::json::members(d.document.as_str()) {
            match (&*k, &gate) {
                ("verdict", _) => {
                    map.serialize_entry("verdict", &verdict)?;
                    wrote_verdict = true;
                }
                ("gate", Some(g)) => {
                    map.serialize_entry("gate", g)?;
                    wrote_gate = true;
                }
                _ => map.serialize_entry(&k, &evident_format::json::Piece(v))?,
            }
        }
        if !wrote_verdict {
            map.serialize_entry("verdict", &verdict)?;
        }
        if let (Some(g), false) = (&gate, wrote_gate) {
            map.serialize_entry("gate", g)?;
        }
        map.end()
    }
}
