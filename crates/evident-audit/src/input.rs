//! The peer's input formats: `closeout_faithfulness_claims_v1` and
//! `closeout_fixture_ledger_v1`, read strictly. Every error names the file and the
//! JSON path; unknown fields are kept out of the audit and reported as warnings.

use crate::AuditError;
use crate::json::{parse_strict, push_key, show_path};
use serde_json::{Map, Value};
use std::collections::BTreeSet;
use std::path::{Component, Path};

/// The claims file's `schema_version` (the peer's); any other is refused.
pub const CLAIMS_SCHEMA: &str = "closeout_faithfulness_claims_v1";
/// The task ledger's `schema_version` (the peer's); any other is refused.
pub const LEDGER_SCHEMA: &str = "closeout_fixture_ledger_v1";

/// Largest input file read (bytes).
pub const MAX_INPUT_BYTES: u64 = 16 * 1024 * 1024;

/// The test runner of a span claim.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Runner {
    /// `pytest_span`: a pytest node id, run with `python -m pytest`.
    Pytest,
    /// `cargo_test_span`: a cargo test name, run with `cargo test`.
    Cargo,
    /// `go_test_span`: a `go test -run` pattern.
    Go,
}

impl Runner {
    /// The `claim_type` a claim of this runner has in the input and the records.
    pub fn claim_type(self) -> &'static str {
        match self {
            Runner::Pytest => "pytest_span",
            Runner::Cargo => "cargo_test_span",
            Runner::Go => "go_test_span",
        }
    }
    /// The claim field that names the test.
    pub fn name_field(self) -> &'static str {
        match self {
            Runner::Pytest => "nodeid",
            Runner::Cargo => "test",
            Runner::Go => "run",
        }
    }
    /// The runner's short name, for messages and the records' `runner`.
    pub fn label(self) -> &'static str {
        match self {
            Runner::Pytest => "pytest",
            Runner::Cargo => "cargo",
            Runner::Go => "go",
        }
    }
}

/// A test-span claim: "the test ran" and, with `expected_pass`, "the test passed".
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SpanClaim {
    /// Which runner runs the span.
    pub runner: Runner,
    /// pytest node id, cargo test name, or go test `-run` pattern.
    pub name: String,
    /// cargo `--package`, or the go package pattern (default `./...`).
    pub package: Option<String>,
    /// Working directory relative to the repository root (validated: no `..`).
    pub cwd: Option<String>,
    /// cargo only: match the test name exactly (default true).
    pub exact: bool,
    /// The claim says the test passed, not only that it ran.
    pub expected_pass: bool,
    /// The agent says it checked the pass status; a pass claimed without it is not admitted.
    pub pass_status_checked: bool,
}

/// What a claim says happened, by `claim_type`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum ClaimKind {
    /// "I committed the change": checked against the commit git reads back.
    Commit {
        /// The commit id or ref the agent names.
        commit_ref: String,
    },
    /// "I closed the ledger item": checked against the task ledger.
    Cap {
        /// The ledger item's id.
        cap_id: String,
    },
    /// "The test ran (and passed)": checked by running it.
    Span(SpanClaim),
}

/// One claim of the claims file.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Claim {
    /// The agent's id for the claim: how records and the emitted claim name it.
    pub claim_id: String,
    /// What it claims.
    pub kind: ClaimKind,
}

impl Claim {
    /// The claim's `claim_type` as the input and the records write it.
    pub fn claim_type(&self) -> &'static str {
        match &self.kind {
            ClaimKind::Commit { .. } => "commit",
            ClaimKind::Cap { .. } => "task_ledger_cap",
            ClaimKind::Span(s) => s.runner.claim_type(),
        }
    }
}

/// The claims file as read.
#[derive(Debug, Clone)]
pub struct Claims {
    /// The claims, in file order.
    pub claims: Vec<Claim>,
    /// Unknown fields, kept out of the audit and reported.
    pub warnings: Vec<String>,
}

/// One item of the task ledger.
#[derive(Debug, Clone)]
pub struct LedgerCap {
    /// The item's id, which cap claims name.
    pub cap_id: String,
    /// The item's status as the ledger writes it: recorded as observed, never judged.
    pub status: Option<String>,
}

/// The task ledger as read.
#[derive(Debug, Clone)]
pub struct Ledger {
    /// Its items, in file order.
    pub caps: Vec<LedgerCap>,
    /// Unknown fields, kept out of the audit and reported.
    pub warnings: Vec<String>,
}

impl Ledger {
    /// The item a cap claim names, if the ledger has it (the first, if listed twice).
    pub fn find(&self, cap_id: &str) -> Option<&LedgerCap> {
        self.caps.iter().find(|c| c.cap_id == cap_id)
    }
}

/// Reads a file (bounded) and parses it strictly.
fn read_json(file: &Path) -> Result<Value, AuditError> {
    let name = file.display().to_string();
    let meta = std::fs::metadata(file).map_err(|source| AuditError::Io {
        file: name.clone(),
        source,
    })?;
    if !meta.is_file() {
        return Err(AuditError::Input {
            file: name,
            path: "$".into(),
            message: "not a regular file".into(),
        });
    }
    if meta.len() > MAX_INPUT_BYTES {
        return Err(AuditError::Input {
            file: name,
            path: "$".into(),
            message: format!("larger than {MAX_INPUT_BYTES} bytes"),
        });
    }
    let bytes = std::fs::read(file).map_err(|source| AuditError::Io {
        file: name.clone(),
        source,
    })?;
    parse_strict(&bytes).map_err(|m| {
        let (path, message) = split_path(&m.to_string());
        AuditError::Input {
            file: name,
            path,
            message,
        }
    })
}

fn split_path(m: &str) -> (String, String) {
    match m.split_once(": ") {
        Some((p, rest)) if p.starts_with('$') => (p.to_string(), rest.to_string()),
        _ => ("$".into(), m.to_string()),
    }
}

/// A view of one JSON object that remembers its file and path.
struct Obj<'a> {
    file: &'a str,
    path: String,
    map: &'a Map<String, Value>,
}

impl<'a> Obj<'a> {
    fn new(file: &'a str, path: String, v: &'a Value) -> Result<Self, AuditError> {
        match v {
            Value::Object(map) => Ok(Obj { file, path, map }),
            other => Err(err(
                file,
                &path,
                format!(
                    "expected an object, found {}",
                    evident_format::claim::json_type_name(other)
                ),
            )),
        }
    }
    fn at(&self, key: &str) -> String {
        push_key(&self.path, key)
    }
    fn fail(&self, key: &str, message: impl Into<String>) -> AuditError {
        err(self.file, &self.at(key), message.into())
    }
    fn opt_str(&self, key: &str) -> Result<Option<String>, AuditError> {
        match self.map.get(key) {
            None => Ok(None),
            Some(Value::String(s)) => Ok(Some(s.clone())),
            Some(other) => Err(self.fail(
                key,
                format!(
                    "expected a string, found {}",
                    evident_format::claim::json_type_name(other)
                ),
            )),
        }
    }
    fn req_str(&self, key: &str) -> Result<String, AuditError> {
        match self.opt_str(key)? {
            None => Err(self.fail(key, "missing")),
            Some(s) if s.trim().is_empty() => Err(self.fail(key, "empty")),
            Some(s) => Ok(s),
        }
    }
    fn opt_bool(&self, key: &str) -> Result<Option<bool>, AuditError> {
        match self.map.get(key) {
            None => Ok(None),
            Some(Value::Bool(b)) => Ok(Some(*b)),
            Some(other) => Err(self.fail(
                key,
                format!(
                    "expected true or false, found {}",
                    evident_format::claim::json_type_name(other)
                ),
            )),
        }
    }
    fn req_bool(&self, key: &str) -> Result<bool, AuditError> {
        self.opt_bool(key)?.ok_or_else(|| self.fail(key, "missing"))
    }
    fn warn_unknown(&self, allowed: &[&str], warnings: &mut Vec<String>) {
        for k in self.map.keys() {
            if !allowed.contains(&k.as_str()) {
                warnings.push(format!(
                    "{}: {}: unknown field ignored",
                    self.file,
                    show_path(&self.at(k))
                ));
            }
        }
    }
}

fn err(file: &str, path: &str, message: String) -> AuditError {
    AuditError::Input {
        file: file.to_string(),
        path: show_path(path),
        message,
    }
}

/// Refuses a value that a runner or git would read as an option.
fn not_an_option(o: &Obj, key: &str, v: &str) -> Result<(), AuditError> {
    if v.starts_with('-') {
        return Err(o.fail(
            key,
            "must not start with '-' (it would be read as an option)",
        ));
    }
    if v.contains('\0') || v.contains('\n') || v.contains('\r') {
        return Err(o.fail(key, "must not contain NUL or line breaks"));
    }
    Ok(())
}

fn check_schema(o: &Obj, expected: &str) -> Result<(), AuditError> {
    let got = o.req_str("schema_version")?;
    if got != expected {
        return Err(o.fail(
            "schema_version",
            format!("expected \"{expected}\", found \"{got}\""),
        ));
    }
    Ok(())
}

fn check_body_flag(o: &Obj) -> Result<(), AuditError> {
    if o.opt_bool("body_in_receipt")? == Some(true) {
        return Err(o.fail("body_in_receipt", "must be false: inputs carry no bodies"));
    }
    Ok(())
}

/// Reads `closeout_claims.json`.
pub fn read_claims(file: &Path) -> Result<Claims, AuditError> {
    let value = read_json(file)?;
    parse_claims(&file.display().to_string(), &value)
}

/// Parses the claims document (already read) — `file` only names it in errors.
pub fn parse_claims(file: &str, value: &Value) -> Result<Claims, AuditError> {
    let top = Obj::new(file, String::new(), value)?;
    let mut warnings = Vec::new();
    check_schema(&top, CLAIMS_SCHEMA)?;
    check_body_flag(&top)?;
    top.warn_unknown(
        &["schema_version", "claims", "body_in_receipt"],
        &mut warnings,
    );
    let list = match top.map.get("claims") {
        None => return Err(top.fail("claims", "missing")),
        Some(Value::Array(a)) => a,
        Some(other) => {
            return Err(top.fail(
                "claims",
                format!(
                    "expected an array, found {}",
                    evident_format::claim::json_type_name(other)
                ),
            ));
        }
    };
    if list.is_empty() {
        return Err(top.fail("claims", "empty: there is nothing to audit"));
    }
    let mut ids = BTreeSet::new();
    let mut claims = Vec::new();
    for (i, v) in list.iter().enumerate() {
        let o = Obj::new(file, format!("claims[{i}]"), v)?;
        let claim_id = o.req_str("claim_id")?;
        if !ids.insert(claim_id.clone()) {
            return Err(o.fail("claim_id", format!("duplicate claim_id \"{claim_id}\"")));
        }
        let claim_type = o.req_str("claim_type")?;
        let kind = match claim_type.as_str() {
            "commit" => {
                o.warn_unknown(&["claim_id", "claim_type", "commit_ref"], &mut warnings);
                let commit_ref = o.req_str("commit_ref")?;
                not_an_option(&o, "commit_ref", &commit_ref)?;
                ClaimKind::Commit { commit_ref }
            }
            "task_ledger_cap" => {
                o.warn_unknown(&["claim_id", "claim_type", "cap_id"], &mut warnings);
                ClaimKind::Cap {
                    cap_id: o.req_str("cap_id")?,
                }
            }
            "pytest_span" | "cargo_test_span" | "go_test_span" => {
                let runner = match claim_type.as_str() {
                    "pytest_span" => Runner::Pytest,
                    "cargo_test_span" => Runner::Cargo,
                    _ => Runner::Go,
                };
                let name_field = runner.name_field();
                let mut allowed = vec![
                    "claim_id",
                    "claim_type",
                    name_field,
                    "expected_pass",
                    "pass_status_checked",
                    "cwd",
                ];
                if runner != Runner::Pytest {
                    allowed.push("package");
                }
                if runner == Runner::Cargo {
                    allowed.push("exact");
                }
                o.warn_unknown(&allowed, &mut warnings);
                let name = o.req_str(name_field)?;
                not_an_option(&o, name_field, &name)?;
                let package = if runner == Runner::Pytest {
                    None
                } else {
                    o.opt_str("package")?
                };
                if let Some(p) = &package {
                    if p.is_empty() {
                        return Err(o.fail("package", "empty"));
                    }
                    not_an_option(&o, "package", p)?;
                }
                let cwd = o.opt_str("cwd")?;
                if let Some(c) = &cwd {
                    let p = Path::new(c);
                    let ok = !c.is_empty()
                        && p.components()
                            .all(|c| matches!(c, Component::Normal(_) | Component::CurDir));
                    if !ok {
                        return Err(o.fail(
                            "cwd",
                            "must be a relative path inside the repository (no '..', not absolute)",
                        ));
                    }
                }
                ClaimKind::Span(SpanClaim {
                    runner,
                    name,
                    package,
                    cwd,
                    exact: o.opt_bool("exact")?.unwrap_or(true),
                    expected_pass: o.req_bool("expected_pass")?,
                    pass_status_checked: o.req_bool("pass_status_checked")?,
                })
            }
            other => {
                return Err(o.fail(
                    "claim_type",
                    format!(
                        "unknown claim type \"{other}\" (expected commit, task_ledger_cap, \
                         pytest_span, cargo_test_span or go_test_span)"
                    ),
                ));
            }
        };
        claims.push(Claim { claim_id, kind });
    }
    Ok(Claims { claims, warnings })
}

/// Reads `fixture_ledger.json`.
pub fn read_ledger(file: &Path) -> Result<Ledger, AuditError> {
    let value = read_json(file)?;
    parse_ledger(&file.display().to_string(), &value)
}

/// Parses the task ledger (already read) — `file` only names it in errors.
pub fn parse_ledger(file: &str, value: &Value) -> Result<Ledger, AuditError> {
    let top = Obj::new(file, String::new(), value)?;
    let mut warnings = Vec::new();
    check_schema(&top, LEDGER_SCHEMA)?;
    check_body_flag(&top)?;
    top.warn_unknown(
        &["schema_version", "task_ledger_caps", "body_in_receipt"],
        &mut warnings,
    );
    let list = match top.map.get("task_ledger_caps") {
        None => return Err(top.fail("task_ledger_caps", "missing")),
        Some(Value::Array(a)) => a,
        Some(other) => {
            return Err(top.fail(
                "task_ledger_caps",
                format!(
                    "expected an array, found {}",
                    evident_format::claim::json_type_name(other)
                ),
            ));
        }
    };
    let mut caps = Vec::new();
    for (i, v) in list.iter().enumerate() {
        let o = Obj::new(file, format!("task_ledger_caps[{i}]"), v)?;
        o.warn_unknown(&["cap_id", "evidence_ref", "status"], &mut warnings);
        let cap_id = o.req_str("cap_id")?;
        o.opt_str("evidence_ref")?;
        caps.push(LedgerCap {
            cap_id,
            status: o.opt_str("status")?,
        });
    }
    Ok(Ledger { caps, warnings })
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn claims(v: Value) -> Result<Claims, AuditError> {
        parse_claims("c.json", &v)
    }

    fn msg(e: AuditError) -> String {
        e.to_string()
    }

    #[test]
    fn the_peer_claims_parse() {
        let c = claims(json!({"schema_version": CLAIMS_SCHEMA, "body_in_receipt": false, "claims": [
            {"claim_id": "a", "claim_type": "commit", "commit_ref": "HEAD"},
            {"claim_id": "b", "claim_type": "task_ledger_cap", "cap_id": "cap"},
            {"claim_id": "c", "claim_type": "pytest_span", "nodeid": "t.py::x", "expected_pass": true, "pass_status_checked": true},
            {"claim_id": "d", "claim_type": "cargo_test_span", "test": "tests::x", "expected_pass": true, "pass_status_checked": true, "cwd": "crate"},
            {"claim_id": "e", "claim_type": "go_test_span", "run": "^TestX$", "package": "./pkg", "expected_pass": false, "pass_status_checked": false}
        ]}))
        .unwrap();
        assert_eq!(c.claims.len(), 5);
        assert!(c.warnings.is_empty());
        assert_eq!(c.claims[3].claim_type(), "cargo_test_span");
    }

    #[test]
    fn errors_name_the_file_and_path() {
        let base = |claim: Value| json!({"schema_version": CLAIMS_SCHEMA, "claims": [claim]});
        let cases = [
            (
                json!({"schema_version": "v2", "claims": []}),
                "$.schema_version",
            ),
            (
                json!({"schema_version": CLAIMS_SCHEMA}),
                "$.claims: missing",
            ),
            (
                json!({"schema_version": CLAIMS_SCHEMA, "claims": []}),
                "$.claims: empty",
            ),
            (
                json!({"schema_version": CLAIMS_SCHEMA, "claims": {}}),
                "$.claims: expected an array",
            ),
            (base(json!([])), "$.claims[0]: expected an object"),
            (
                base(json!({"claim_type": "commit", "commit_ref": "HEAD"})),
                "$.claims[0].claim_id: missing",
            ),
            (
                base(json!({"claim_id": "a", "claim_type": "Commit"})),
                "$.claims[0].claim_type: unknown claim type",
            ),
            (
                base(json!({"claim_id": "a", "claim_type": "commit", "commit_ref": 5})),
                "$.claims[0].commit_ref: expected a string",
            ),
            (
                base(json!({"claim_id": "a", "claim_type": "commit", "commit_ref": "--output=x"})),
                "$.claims[0].commit_ref: must not start",
            ),
            (
                base(
                    json!({"claim_id": "a", "claim_type": "pytest_span", "nodeid": "t", "expected_pass": "yes", "pass_status_checked": true}),
                ),
                "$.claims[0].expected_pass: expected true or false",
            ),
            (
                base(
                    json!({"claim_id": "a", "claim_type": "pytest_span", "nodeid": "t", "expected_pass": true}),
                ),
                "$.claims[0].pass_status_checked: missing",
            ),
            (
                base(
                    json!({"claim_id": "a", "claim_type": "cargo_test_span", "test": "t", "expected_pass": true, "pass_status_checked": true, "cwd": "../x"}),
                ),
                "$.claims[0].cwd: must be a relative path",
            ),
            (
                json!({"schema_version": CLAIMS_SCHEMA, "body_in_receipt": true, "claims": []}),
                "$.body_in_receipt",
            ),
        ];
        for (doc, want) in cases {
            let e = msg(claims(doc).unwrap_err());
            assert!(
                e.starts_with("c.json: ") && e.contains(want),
                "{e} !~ {want}"
            );
        }
        let dup = json!({"schema_version": CLAIMS_SCHEMA, "claims": [
            {"claim_id": "a", "claim_type": "task_ledger_cap", "cap_id": "x"},
            {"claim_id": "a", "claim_type": "task_ledger_cap", "cap_id": "y"}]});
        assert!(msg(claims(dup).unwrap_err()).contains("$.claims[1].claim_id: duplicate"));
    }

    #[test]
    fn unknown_fields_warn() {
        let c = claims(
            json!({"schema_version": CLAIMS_SCHEMA, "extra": 1, "claims": [
            {"claim_id": "a", "claim_type": "commit", "commit_ref": "HEAD", "note": "x"}]}),
        )
        .unwrap();
        assert_eq!(c.warnings.len(), 2, "{:?}", c.warnings);
        assert!(c.warnings[1].contains("$.claims[0].note"));
    }

    #[test]
    fn ledger_parses_and_errors_name_paths() {
        let l = parse_ledger(
            "l.json",
            &json!({"schema_version": LEDGER_SCHEMA, "task_ledger_caps": [{"cap_id": "x", "status": "closed"}]}),
        )
        .unwrap();
        assert!(l.find("x").is_some() && l.find("y").is_none());
        let e = parse_ledger(
            "l.json",
            &json!({"schema_version": LEDGER_SCHEMA, "task_ledger_caps": [{"status": "closed"}]}),
        )
        .unwrap_err();
        assert!(msg(e).contains("l.json: $.task_ledger_caps[0].cap_id: missing"));
    }

    use proptest::prelude::Strategy;

    proptest::proptest! {
        #![proptest_config(proptest::prelude::ProptestConfig::with_cases(512))]
        /// Any bytes: an error or a value, never a panic.
        #[test]
        fn arbitrary_bytes_never_panic(bytes in proptest::collection::vec(proptest::num::u8::ANY, 0..256)) {
            if let Ok(v) = crate::json::parse_strict(&bytes) {
                let _ = parse_claims("c.json", &v);
                let _ = parse_ledger("l.json", &v);
            }
        }

        /// Claim-shaped documents with arbitrary field values: an error naming the
        /// file and a JSON path, or claims — never a panic.
        #[test]
        fn claim_shaped_input_never_panics(
            ty in proptest::sample::select(vec!["commit", "task_ledger_cap", "pytest_span", "cargo_test_span", "go_test_span", "x"]),
            key in proptest::sample::select(vec!["commit_ref", "cap_id", "nodeid", "test", "run", "cwd", "package", "exact", "expected_pass", "pass_status_checked"]),
            val in proptest::prop_oneof![
                proptest::prelude::any::<bool>().prop_map(Value::Bool),
                "\\PC{0,12}".prop_map(Value::String),
                proptest::prelude::any::<i64>().prop_map(|n| json!(n)),
                proptest::strategy::Just(Value::Null),
            ],
        ) {
            let doc = json!({"schema_version": CLAIMS_SCHEMA, "claims": [
                {"claim_id": "a", "claim_type": ty, key: val, "expected_pass": true, "pass_status_checked": true}
            ]});
            match parse_claims("c.json", &doc) {
                Ok(c) => proptest::prop_assert_eq!(c.claims.len(), 1),
                Err(e) => proptest::prop_assert!(e.to_string().starts_with("c.json: $"), "{}", e),
            }
        }
    }
}
