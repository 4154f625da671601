//! The object form of requirements: what must have been *done*, not only which tool
//! was called (docs/eval.md, "Requirements that constrain what was done").
//!
//! ```json
//! { "requirements": [ { "action": "book_reservation",
//!                       "arguments": { "user_id": "mia_li_3668" },
//!                       "evidence": { "status": "confirmed" },
//!                       "evidence_fields": ["reservation_id"],
//!                       "count": 1 } ],
//!   "writes": ["book_reservation", "cancel_reservation"] }
//! ```
//!
//! The types here are both the parser's output and the source of the checked-in JSON
//! Schema (`schemas/requirements.schema.json`), so the two cannot drift. Parsing is
//! hand-written over a strict [`Value`] so that every error names its JSON path; an
//! unknown key is an error at every level (a misspelt `writes` must not fail open).

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};
use serde_json::{Map, Value};

use crate::case::CaseError;
use crate::text::{py_blank, py_strip};

/// The most successful calls one requirement may ask for: the matching is
/// O(calls × requirement slots) in the worst case, so the slots are bounded.
pub const MAX_COUNT: u64 = 1000;

/// Requirements in the object form.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct Spec {
    /// What must have been done. May be empty only when `writes` is given: the task
    /// where the right thing is to change nothing.
    pub requirements: Vec<Need>,
    /// The actions that change the world. A successful call to one of them that no
    /// requirement accounts for makes the case FAILED.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub writes: Option<Vec<String>>,
}

/// One requirement of the object form.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct Need {
    /// The tool or action name (case-sensitive, compared after Python's `strip()`).
    pub action: String,
    /// The call's arguments must match: objects by subset, arrays element by element,
    /// numbers by exact value, types kept (as the verdict compares an expectation).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub arguments: Option<Map<String, Value>>,
    /// Expected values in the result's evidence (compared like `arguments`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub evidence: Option<Map<String, Value>>,
    /// Evidence fields that must be present with a value that counts (seed 001).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub evidence_fields: Vec<String>,
    /// How many successful matching calls are needed (default 1, at most 1000).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(range(min = 1, max = 1000))]
    pub count: Option<u64>,
}

impl Need {
    /// How many successful matching calls it needs (`count`, else 1).
    pub fn count(&self) -> u64 {
        self.count.unwrap_or(1)
    }
}

impl Spec {
    /// Whether a successful call to `action` changes the world.
    pub fn is_write(&self, action: &str) -> bool {
        self.writes
            .as_ref()
            .is_some_and(|w| w.iter().any(|a| a == action))
    }

    /// The spec as JSON, as an envelope or a case line writes its `requirements`.
    pub fn to_value(&self) -> Value {
        serde_json::to_value(self).unwrap_or(Value::Null)
    }
}

/// The array form, as seed 001 reads it (for the schema only; unknown members are
/// ignored there, as the peer ignores them).
#[derive(Debug, Clone, Serialize, Deserialize, JsonSchema)]
pub struct ListRequirement {
    /// The action whose latest event decides.
    pub action: String,
    /// Evidence fields that must be present with a value that counts.
    #[serde(default)]
    pub evidence_fields: Vec<String>,
}

/// A requirements document: seed 001's array, or the object form.
#[derive(Debug, Clone, Serialize, Deserialize, JsonSchema)]
#[serde(untagged)]
#[schemars(title = "evident eval requirements")]
pub enum RequirementsDocument {
    /// Seed 001: a non-empty array; the latest event per action decides.
    List(#[schemars(length(min = 1))] Vec<ListRequirement>),
    /// Requirements that constrain arguments, evidence values, counts and writes.
    Object(Spec),
}

/// The JSON Schema of a requirements document (checked in as
/// `schemas/requirements.schema.json`).
pub fn schema() -> Value {
    serde_json::to_value(schemars::schema_for!(RequirementsDocument)).unwrap_or(Value::Null)
}

const TOP_KEYS: &str = "requirements, writes";
const NEED_KEYS: &str = "action, arguments, evidence, evidence_fields, count";

fn unknown_key(path: &str, key: &str, allowed: &str) -> String {
    let at = if path.is_empty() {
        String::new()
    } else {
        format!("{path}: ")
    };
    let hint = match key {
        "write" | "Writes" | "writes_actions" => {
            "; hint: the list of world-changing actions is 'writes'"
        }
        "argument" | "args" | "kwargs" | "input" | "params" => {
            "; hint: the call's arguments are 'arguments'"
        }
        "evidence_field" | "fields" => "; hint: required evidence fields are 'evidence_fields'",
        "times" | "n" | "min_count" => "; hint: the number of successful calls is 'count'",
        _ => "",
    };
    format!("{at}unknown key '{key}' (allowed: {allowed}){hint}")
}

fn strings(v: &Value, path: &str) -> Result<Vec<String>, CaseError> {
    let Value::Array(items) = v else {
        return Err(format!("{path} must be a list of non-empty strings").into());
    };
    items
        .iter()
        .map(|s| match s {
            Value::String(s) if !py_blank(s) => Ok(py_strip(s).to_owned()),
            _ => Err(format!("{path} must be a list of non-empty strings").into()),
        })
        .collect()
}

/// Reads the object form. `base` prefixes every path (`requirements` inside a case
/// line, empty for a requirements file).
pub fn parse_spec(v: &Value, base: &str) -> Result<Spec, CaseError> {
    let at = |p: &str| {
        if base.is_empty() {
            p.to_owned()
        } else {
            format!("{base}.{p}")
        }
    };
    let Value::Object(o) = v else {
        return Err(format!(
            "{} must be an object or a non-empty list",
            if base.is_empty() {
                "requirements"
            } else {
                base
            }
        )
        .into());
    };
    for k in o.keys() {
        if k != "requirements" && k != "writes" {
            return Err(unknown_key(base, k, TOP_KEYS).into());
        }
    }
    let writes = match o.get("writes") {
        None => None,
        Some(w) => {
            let mut list = strings(w, &at("writes"))?;
            let mut seen = std::collections::HashSet::new();
            list.retain(|a| seen.insert(a.clone()));
            Some(list)
        }
    };
    let items = match o.get("requirements") {
        Some(Value::Array(a)) => a,
        Some(_) => return Err(format!("{} must be a list", at("requirements")).into()),
        None => {
            return Err(format!(
                "{} is missing (a list; it may be empty when 'writes' is given)",
                at("requirements")
            )
            .into());
        }
    };
    if items.is_empty() && writes.is_none() {
        return Err(format!(
            "{} is empty and there is no 'writes' list: nothing would be checked; hint: give the world-changing actions in 'writes' for a task that must change nothing",
            at("requirements")
        ).into());
    }
    let mut needs = Vec::with_capacity(items.len());
    for (i, item) in items.iter().enumerate() {
        let path = at(&format!("requirements[{i}]"));
        needs.push(parse_need(item, &path)?);
    }
    Ok(Spec {
        requirements: needs,
        writes,
    })
}

fn parse_need(v: &Value, path: &str) -> Result<Need, CaseError> {
    let Value::Object(o) = v else {
        return Err(format!("{path}: Each requirement must be an object.").into());
    };
    for k in o.keys() {
        if !matches!(
            k.as_str(),
            "action" | "arguments" | "evidence" | "evidence_fields" | "count"
        ) {
            return Err(unknown_key(path, k, NEED_KEYS).into());
        }
    }
    let action = match o.get("action") {
        Some(Value::String(s)) if !py_blank(s) => py_strip(s).to_owned(),
        Some(Value::String(_)) | None => {
            return Err(format!("{path}: Each requirement requires a non-empty 'action'.").into());
        }
        Some(_) => return Err(format!("{path}.action must be a string").into()),
    };
    let object = |key: &str| -> Result<Option<Map<String, Value>>, CaseError> {
        match o.get(key) {
            None => Ok(None),
            Some(Value::Object(m)) => Ok(Some(m.clone())),
            Some(_) => Err(format!("{path}.{key} must be an object").into()),
        }
    };
    let arguments = object("arguments")?;
    let evidence = object("evidence")?;
    let evidence_fields = match o.get("evidence_fields") {
        None => Vec::new(),
        Some(f) => strings(f, &format!("{path}.evidence_fields"))?,
    };
    let count = match o.get("count") {
        None => None,
        Some(Value::Number(n)) => match n.as_u64() {
            Some(c) if (1..=MAX_COUNT).contains(&c) => Some(c),
            _ => {
                return Err(format!(
                    "{path}.count must be an integer from 1 to {MAX_COUNT}; hint: to forbid an action, list it in 'writes' and require nothing of it"
                ).into());
            }
        },
        Some(_) => {
            return Err(format!("{path}.count must be an integer from 1 to {MAX_COUNT}").into());
        }
    };
    Ok(Need {
        action,
        arguments,
        evidence,
        evidence_fields,
        count,
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn err(v: Value) -> String {
        parse_spec(&v, "").unwrap_err().0
    }

    #[test]
    fn parses_every_key_and_strips_names() {
        let s = parse_spec(
            &json!({"requirements": [{"action": " a ", "arguments": {"x": 1}, "evidence": {"s": "ok"},
                "evidence_fields": [" id "], "count": 2}], "writes": ["a", " b", "a"]}),
            "",
        )
        .unwrap();
        assert_eq!(s.requirements[0].action, "a");
        assert_eq!(s.requirements[0].evidence_fields, vec!["id"]);
        assert_eq!(s.requirements[0].count(), 2);
        assert_eq!(s.writes, Some(vec!["a".into(), "b".into()]));
        assert!(s.is_write("b") && !s.is_write("c"));
        // The serialized form reads back to the same spec.
        assert_eq!(parse_spec(&s.to_value(), "").unwrap(), s);
    }

    #[test]
    fn unknown_keys_are_errors_at_every_level() {
        assert_eq!(
            err(json!({"requirements": [{"action": "a"}], "write": ["a"]})),
            "unknown key 'write' (allowed: requirements, writes); hint: the list of world-changing actions is 'writes'"
        );
        assert!(
            err(json!({"requirements": [{"action": "a", "args": {}}]}))
                .starts_with("requirements[0]: unknown key 'args'")
        );
        assert_eq!(
            parse_spec(
                &json!({"requirements": [{"action": "a", "cnt": 1}]}),
                "requirements"
            )
            .unwrap_err()
            .0,
            "requirements.requirements[0]: unknown key 'cnt' (allowed: action, arguments, evidence, evidence_fields, count)"
        );
    }

    #[test]
    fn empty_requirements_need_writes() {
        assert!(err(json!({"requirements": []})).contains("nothing would be checked"));
        let s = parse_spec(&json!({"requirements": [], "writes": ["a"]}), "").unwrap();
        assert!(s.requirements.is_empty());
        assert!(err(json!({"writes": ["a"]})).contains("requirements is missing"));
    }

    #[test]
    fn bad_values_name_their_path() {
        assert!(
            err(json!({"requirements": [{"action": "a", "count": 0}]}))
                .starts_with("requirements[0].count must be an integer from 1 to 1000")
        );
        assert!(err(json!({"requirements": [{"action": "a", "count": 1.5}]})).contains("count"));
        assert!(err(json!({"requirements": [{"action": "a", "count": 1001}]})).contains("count"));
        assert_eq!(
            err(json!({"requirements": [{"action": "a", "arguments": []}]})),
            "requirements[0].arguments must be an object"
        );
        assert_eq!(
            err(json!({"requirements": [{"action": " "}]})),
            "requirements[0]: Each requirement requires a non-empty 'action'."
        );
        assert_eq!(
            err(json!({"requirements": [{"action": "a"}], "writes": ["a", ""]})),
            "writes must be a list of non-empty strings"
        );
        assert!(
            err(json!({"requirements": [{"action": "a", "evidence_fields": "id"}]}))
                .contains("evidence_fields")
        );
    }

    #[test]
    fn schema_names_both_forms() {
        let s = schema().to_string();
        assert!(s.contains("evident eval requirements"));
        assert!(s.contains("writes") && s.contains("evidence_fields") && s.contains("count"));
    }
}
