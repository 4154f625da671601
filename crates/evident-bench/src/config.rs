//! The benchmark's and the sandbox's configuration files, read with the peer's rules
//! (strings trimmed with Python's `strip()`, ids unique, `schema_version` "1") and two
//! of evident's own: unknown keys are refused (a misspelt key would otherwise be
//! ignored), and `repetitions` is at most [`MAX_REPETITIONS`]. Every error names the
//! file and the JSON path.

use serde_json::{Map, Value, json};

use evident_eval::adapt::{Requirement, Requirements, parse_requirements};
use evident_eval::pyjson;
use evident_eval::text::py_strip;

use crate::Error;

/// The benchmark's policies, in the peer's order.
pub const GROUPS: [&str; 3] = ["baseline", "evidence_contract", "verifier_feedback"];

/// The benchmark's injected failures, in the peer's order.
pub const BENCH_SCENARIOS: [&str; 8] = [
    "success",
    "timeout",
    "permission_denied",
    "partial_write",
    "stale_read",
    "malformed_success",
    "tool_exception",
    "rollback",
];

/// The sandbox's file-write scenarios, in the peer's order.
pub const SANDBOX_SCENARIOS: [&str; 8] = [
    "success",
    "false_success",
    "partial_write",
    "timeout_before_write",
    "timeout_after_write",
    "rollback",
    "path_traversal",
    "symlink_escape",
];

/// Two files per run: 1,000 repetitions is 24,000 runs and 48,000 files.
pub const MAX_REPETITIONS: u64 = 1000;

/// The failure-injection benchmark's configuration.
#[derive(Debug, Clone, PartialEq)]
pub struct BenchConfig {
    /// Names the experiment; part of every run id, so it keeps experiments apart.
    pub experiment_id: String,
    /// The seed as Python prints the integer (any size, sign kept, `-0` is `0`).
    pub seed: String,
    /// Runs per (group, scenario) pair, 1 to [`MAX_REPETITIONS`].
    pub repetitions: u64,
    /// The policies to run, from [`GROUPS`].
    pub groups: Vec<&'static str>,
    /// The injected failures to run, from [`BENCH_SCENARIOS`].
    pub scenarios: Vec<&'static str>,
    /// The task every trace records.
    pub task: String,
    /// Exactly one (the scripted tool has one action).
    pub requirement: Requirement,
    /// The time written into the report and manifest, given rather than read from a
    /// clock so that a rerun is byte-identical.
    pub generated_at: String,
    /// `"1"`, the only version (the default when the file leaves it out).
    pub schema_version: String,
}

impl BenchConfig {
    /// Parses and validates; `file` names the file in errors.
    pub fn parse(file: &str, bytes: &[u8]) -> Result<Self, Error> {
        let v = crate::json::parse(file, bytes)?;
        let o = Obj::new(
            file,
            "$",
            &v,
            &[
                "experiment_id",
                "seed",
                "repetitions",
                "groups",
                "scenarios",
                "task",
                "requirements",
                "generated_at",
                "schema_version",
            ],
        )?;
        let experiment_id = o.text("experiment_id")?;
        let seed = match o.get("seed") {
            Some(Value::Number(n)) => python_int(&n.to_string())
                .ok_or_else(|| o.err("seed", format!("must be an integer, not {n}")))?,
            other => return Err(o.err("seed", format!("must be an integer, {}", got(other)))),
        };
        let repetitions = match o.get("repetitions") {
            Some(Value::Number(n)) => match python_int(&n.to_string()).map(|s| s.parse::<u64>()) {
                Some(Ok(r)) if (1..=MAX_REPETITIONS).contains(&r) => r,
                Some(_) if !n.to_string().starts_with('-') && n.to_string() != "0" => {
                    return Err(o.err(
                        "repetitions",
                        format!("{n} is more than evident runs ({MAX_REPETITIONS} at most: two files per run)"),
                    ));
                }
                _ => {
                    return Err(o.err(
                        "repetitions",
                        format!("must be a positive integer, not {n}"),
                    ));
                }
            },
            other => {
                return Err(o.err(
                    "repetitions",
                    format!("must be a positive integer, {}", got(other)),
                ));
            }
        };
        let groups = o.ids("groups", &GROUPS, "group")?;
        let scenarios = o.ids("scenarios", &BENCH_SCENARIOS, "scenario")?;
        let task = o.text("task")?;
        let requirement = match o.get("requirements") {
            Some(Value::Array(a)) if a.len() == 1 => {
                let bytes =
                    serde_json::to_vec(&v["requirements"]).map_err(|e| o.err("requirements", e))?;
                match parse_requirements(&bytes) {
                    Ok(Requirements::List(mut l)) if l.len() == 1 => l.remove(0),
                    Ok(_) => return Err(o.err("requirements", "must hold exactly one requirement")),
                    Err(e) => {
                        return Err(Error(format!("{file}: $.requirements{e}")));
                    }
                }
            }
            Some(Value::Array(a)) => {
                return Err(o.err(
                    "requirements",
                    format!(
                        "the benchmark needs exactly one requirement (its scripted tool has one action), not {}",
                        a.len()
                    ),
                ));
            }
            other => {
                return Err(o.err(
                    "requirements",
                    format!("must be a list of exactly one requirement, {}", got(other)),
                ));
            }
        };
        let generated_at = o.text("generated_at")?;
        let schema_version = o.schema_version()?;
        Ok(BenchConfig {
            experiment_id,
            seed,
            repetitions,
            groups,
            scenarios,
            task,
            requirement,
            generated_at,
            schema_version,
        })
    }

    /// The resolved configuration (`config.json`; its canonical form is digested).
    pub fn to_value(&self) -> Value {
        let seed: Value = serde_json::from_str(&self.seed).unwrap_or(Value::Null);
        json!({
            "experiment_id": self.experiment_id,
            "seed": seed,
            "repetitions": self.repetitions,
            "groups": self.groups,
            "scenarios": self.scenarios,
            "task": self.task,
            "requirements": [{
                "action": self.requirement.action,
                "evidence_fields": self.requirement.evidence_fields,
            }],
            "generated_at": self.generated_at,
            "schema_version": self.schema_version,
        })
    }

    /// SHA-256 of the canonical JSON of [`Self::to_value`] (the peer's `config_digest`).
    pub fn digest(&self) -> Result<String, Error> {
        pyjson::canonical_sha256(&self.to_value()).map_err(|e| Error(e.to_string()))
    }
}

/// The file the sandbox's tool is asked to write.
#[derive(Debug, Clone, PartialEq)]
pub struct FileContract {
    /// Names the contract in the suite's case ids and report.
    pub contract_id: String,
    /// Relative, portable, beneath the sandbox root.
    pub path: String,
    /// The exact content (UTF-8, non-empty).
    pub content: String,
    /// `"1"`, the only version (the default when the file leaves it out).
    pub schema_version: String,
}

impl FileContract {
    /// `contract.json` (the peer leaves `schema_version` out).
    pub fn to_value(&self) -> Value {
        json!({"contract_id": self.contract_id, "path": self.path, "content": self.content})
    }
}

/// The sandbox suite's configuration.
#[derive(Debug, Clone, PartialEq)]
pub struct SandboxConfig {
    /// Names the suite in its outputs and the default reproduce directory.
    pub suite_id: String,
    /// The time written into the report and manifest, given rather than read from a
    /// clock so that a rerun is byte-identical.
    pub generated_at: String,
    /// The scenarios to run, from [`SANDBOX_SCENARIOS`].
    pub scenarios: Vec<&'static str>,
    /// The file every scenario's tool is asked to write.
    pub contract: FileContract,
    /// `"1"`, the only version (the default when the file leaves it out).
    pub schema_version: String,
}

impl SandboxConfig {
    /// Parses and validates; `file` names the file in errors.
    pub fn parse(file: &str, bytes: &[u8]) -> Result<Self, Error> {
        let v = crate::json::parse(file, bytes)?;
        let o = Obj::new(
            file,
            "$",
            &v,
            &[
                "suite_id",
                "generated_at",
                "scenarios",
                "contract",
                "schema_version",
            ],
        )?;
        let suite_id = o.text("suite_id")?;
        let generated_at = o.text("generated_at")?;
        let scenarios = o.ids("scenarios", &SANDBOX_SCENARIOS, "scenario")?;
        let c = Obj::new(
            file,
            "$.contract",
            o.get("contract").unwrap_or(&Value::Null),
            &["contract_id", "path", "content", "schema_version"],
        )?;
        let contract_id = c.text("contract_id")?;
        let path = c.text("path")?;
        check_contract_path(&path).map_err(|m| c.err("path", m))?;
        let content = match c.get("content") {
            Some(Value::String(s)) if !s.is_empty() => s.clone(),
            other => {
                return Err(c.err(
                    "content",
                    format!("must be a non-empty UTF-8 string, {}", got(other)),
                ));
            }
        };
        let contract = FileContract {
            contract_id,
            path,
            content,
            schema_version: c.schema_version()?,
        };
        Ok(SandboxConfig {
            suite_id,
            generated_at,
            scenarios,
            contract,
            schema_version: o.schema_version()?,
        })
    }

    /// Only the named scenario (`--scenario NAME`), as the peer's `with_scenarios`.
    pub fn only(&self, scenario: &str) -> Result<Self, Error> {
        let Some(s) = SANDBOX_SCENARIOS.iter().find(|s| **s == scenario) else {
            return Err(Error(format!(
                "--scenario: unknown scenario {scenario:?}; hint: one of all, {}",
                SANDBOX_SCENARIOS.join(", ")
            )));
        };
        let mut c = self.clone();
        c.scenarios = vec![s];
        Ok(c)
    }

    /// `suite_config.json`.
    pub fn to_value(&self) -> Value {
        json!({
            "suite_id": self.suite_id,
            "generated_at": self.generated_at,
            "scenarios": self.scenarios,
            "contract": self.contract.to_value(),
            "schema_version": self.schema_version,
        })
    }

    /// SHA-256 of the canonical JSON of [`Self::to_value`] (the suite's `config_digest`).
    pub fn digest(&self) -> Result<String, Error> {
        pyjson::canonical_sha256(&self.to_value()).map_err(|e| Error(e.to_string()))
    }
}

/// The contract path: the probes' own lexical check (relative, no `..`, no NUL), then
/// the peer's portability rules on top (no backslash, no drive prefix, no empty or `.`
/// component), so the path means one file on every system.
fn check_contract_path(path: &str) -> Result<(), Invalid> {
    if path.contains('\\') {
        return Err(format!(
            "{path:?} contains a backslash; hint: write a relative POSIX path such as output/file.txt"
        ).into());
    }
    let b = path.as_bytes();
    if b.len() >= 2 && b[0].is_ascii_alphabetic() && b[1] == b':' {
        return Err(format!(
            "{path:?} starts with a drive prefix; hint: write a path relative to the sandbox root"
        )
        .into());
    }
    evident_probes::confined::relative(path).map_err(|e| Invalid(e.to_string()))?;
    if path.split('/').any(|p| p.is_empty() || p == ".") {
        return Err(format!(
            "{path:?} has an empty or '.' component; hint: write each directory once, as a/b/file.txt"
        ).into());
    }
    Ok(())
}

/// A Python `int` from a JSON number literal: digits with an optional sign (a fraction
/// or exponent makes Python read a float, which the peer refuses).
fn python_int(lit: &str) -> Option<String> {
    let digits = lit.strip_prefix('-').unwrap_or(lit);
    if digits.is_empty() || !digits.bytes().all(|b| b.is_ascii_digit()) {
        return None;
    }
    Some(if digits.bytes().all(|b| b == b'0') {
        "0".into()
    } else {
        lit.to_owned()
    })
}

/// What was there instead, for messages.
fn got(v: Option<&Value>) -> String {
    match v {
        None => "but it is missing".into(),
        Some(Value::Null) => "not null".into(),
        Some(Value::Bool(b)) => format!("not the boolean {b}"),
        Some(Value::Number(n)) => format!("not the number {n}"),
        Some(Value::String(s)) => format!("not the string {s:?}"),
        Some(Value::Array(_)) => "not a list".into(),
        Some(Value::Object(_)) => "not an object".into(),
    }
}

/// An object being read, with the file and JSON path for errors.
struct Obj<'a> {
    file: &'a str,
    path: &'a str,
    o: &'a Map<String, Value>,
}

impl<'a> Obj<'a> {
    fn new(file: &'a str, path: &'a str, v: &'a Value, known: &[&str]) -> Result<Self, Error> {
        let Value::Object(o) = v else {
            return Err(Error::at(
                file,
                path,
                format!("must be a JSON object, {}", got(Some(v))),
            ));
        };
        if let Some(k) = o.keys().find(|k| !known.contains(&k.as_str())) {
            return Err(Error::at(
                file,
                &format!("{path}.{k}"),
                format!("unknown key; hint: the keys are {}", known.join(", ")),
            ));
        }
        Ok(Obj { file, path, o })
    }

    fn get(&self, key: &str) -> Option<&'a Value> {
        self.o.get(key)
    }

    fn err(&self, key: &str, msg: impl std::fmt::Display) -> Error {
        Error::at(self.file, &format!("{}.{key}", self.path), msg)
    }

    /// A required string, non-empty after `strip()`, without NUL; returned stripped.
    fn text(&self, key: &str) -> Result<String, Error> {
        text_value(self.get(key)).map_err(|m| self.err(key, m))
    }

    /// A non-empty list of unique ids from `allowed`.
    fn ids(
        &self,
        key: &str,
        allowed: &[&'static str],
        noun: &str,
    ) -> Result<Vec<&'static str>, Error> {
        let Some(Value::Array(items)) = self.get(key) else {
            return Err(self.err(
                key,
                format!("must be a non-empty list, {}", got(self.get(key))),
            ));
        };
        if items.is_empty() {
            return Err(self.err(key, "must be a non-empty list"));
        }
        let mut out: Vec<&'static str> = Vec::with_capacity(items.len());
        for (i, item) in items.iter().enumerate() {
            let at = || format!("{}.{key}[{i}]", self.path);
            let s = text_value(Some(item)).map_err(|m| Error::at(self.file, &at(), m))?;
            let Some(id) = allowed.iter().find(|a| **a == s) else {
                return Err(Error::at(
                    self.file,
                    &at(),
                    format!("unknown {noun} {s:?}; hint: one of {}", allowed.join(", ")),
                ));
            };
            if out.contains(id) {
                return Err(Error::at(
                    self.file,
                    &at(),
                    format!("duplicate {noun} {s:?}"),
                ));
            }
            out.push(id);
        }
        Ok(out)
    }

    /// Optional, default "1", and "1" is the only version.
    fn schema_version(&self) -> Result<String, Error> {
        match self.get("schema_version") {
            None => Ok("1".into()),
            v => {
                let s = text_value(v).map_err(|m| self.err("schema_version", m))?;
                if s == "1" {
                    Ok(s)
                } else {
                    Err(self.err(
                        "schema_version",
                        format!("unsupported version {s:?}; hint: \"1\" is the only one"),
                    ))
                }
            }
        }
    }
}

evident_format::message_error! {
    /// Why one value of a config is refused (the caller names the file and the JSON
    /// path). A leaf: the message is all.
    struct Invalid;
}

fn text_value(v: Option<&Value>) -> Result<String, Invalid> {
    match v {
        Some(Value::String(s)) if s.contains('\0') => Err("contains a NUL byte".into()),
        Some(Value::String(s)) if !py_strip(s).is_empty() => Ok(py_strip(s).to_owned()),
        Some(Value::String(_)) => Err("must be a non-empty string".into()),
        other => Err(format!("must be a non-empty string, {}", got(other)).into()),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const BENCH: &str = r#"{"experiment_id":"e","seed":7,"repetitions":2,"groups":["baseline"],
        "scenarios":["success","rollback"],"task":"t","generated_at":"g",
        "requirements":[{"action":"send","evidence_fields":["id"]}]}"#;

    fn bench_err(edit: impl FnOnce(&mut Value)) -> String {
        let mut v: Value = serde_json::from_str(BENCH).unwrap();
        edit(&mut v);
        BenchConfig::parse("cfg.json", v.to_string().as_bytes())
            .unwrap_err()
            .0
    }

    #[test]
    fn a_good_config_parses_and_strips() {
        let c =
            BenchConfig::parse("cfg.json", BENCH.replace("\"e\"", "\" e \"").as_bytes()).unwrap();
        assert_eq!(c.experiment_id, "e");
        assert_eq!(c.seed, "7");
        assert_eq!(c.groups, vec!["baseline"]);
        assert_eq!(c.to_value()["schema_version"], "1");
    }

    #[test]
    fn errors_name_the_file_and_the_json_path() {
        type Edit = Box<dyn FnOnce(&mut Value)>;
        let cases: Vec<(Edit, &str)> = vec![
            (
                Box::new(|v| v["seed"] = json!(1.5)),
                "cfg.json: $.seed: must be an integer",
            ),
            (
                Box::new(|v| v["seed"] = json!(true)),
                "cfg.json: $.seed: must be an integer, not the boolean true",
            ),
            (
                Box::new(|v| v["repetitions"] = json!(0)),
                "cfg.json: $.repetitions: must be a positive integer",
            ),
            (
                Box::new(|v| v["repetitions"] = json!(5000)),
                "cfg.json: $.repetitions: 5000 is more than",
            ),
            (
                Box::new(|v| v["groups"] = json!(["baseline", "nope"])),
                "cfg.json: $.groups[1]: unknown group \"nope\"",
            ),
            (
                Box::new(|v| v["scenarios"] = json!(["success", " success"])),
                "cfg.json: $.scenarios[1]: duplicate scenario",
            ),
            (
                Box::new(|v| v["task"] = json!("  ")),
                "cfg.json: $.task: must be a non-empty string",
            ),
            (
                Box::new(|v| v["requirements"] = json!([])),
                "cfg.json: $.requirements: the benchmark needs exactly one",
            ),
            (
                Box::new(|v| v["requirements"] = json!([{"action": ""}])),
                "cfg.json: $.requirements[0]: Each requirement requires a non-empty 'action'.",
            ),
            (
                Box::new(|v| v["schema_version"] = json!("2")),
                "cfg.json: $.schema_version: unsupported version",
            ),
            (
                Box::new(|v| v["repetition"] = json!(1)),
                "cfg.json: $.repetition: unknown key",
            ),
            (
                Box::new(|v| {
                    v.as_object_mut().unwrap().remove("generated_at");
                }),
                "cfg.json: $.generated_at: must be a non-empty string, but it is missing",
            ),
        ];
        for (edit, want) in cases {
            let e = bench_err(edit);
            assert!(e.starts_with(want), "{e}\nwanted: {want}");
        }
        let e = BenchConfig::parse("cfg.json", br#"{"seed":1,"seed":2}"#).unwrap_err();
        assert!(
            e.0.contains("cfg.json: $: not valid JSON: duplicate key 'seed'"),
            "{e}"
        );
    }

    #[test]
    fn big_and_negative_seeds_are_python_ints() {
        assert_eq!(python_int("-0").as_deref(), Some("0"));
        assert_eq!(python_int("-12").as_deref(), Some("-12"));
        assert_eq!(
            python_int("123456789012345678901234567890").as_deref(),
            Some("123456789012345678901234567890")
        );
        assert_eq!(python_int("1e3"), None);
        assert_eq!(python_int("1.0"), None);
    }

    #[test]
    fn contract_paths_are_refused_through_the_probes_check() {
        for (p, want) in [
            ("../x", "escapes the contract root through a `..` component"),
            (
                "/etc/x",
                "escapes the contract root through an absolute path",
            ),
            ("a/../b", "`..`"),
            ("a\\b", "backslash"),
            ("C:x", "drive prefix"),
            ("a//b", "empty or '.' component"),
            ("./a", "empty or '.' component"),
            ("a/", "empty or '.' component"),
        ] {
            let e = check_contract_path(p).unwrap_err().0;
            assert!(e.contains(want), "{p}: {e}");
        }
        assert!(check_contract_path("output/customer-update.txt").is_ok());
    }
}
