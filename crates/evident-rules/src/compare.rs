//! Comparing an observation with what was expected (DESIGN.md, "The verdict").
//!
//! Objects compare by subset (extra observed keys are ignored), arrays element by
//! element at equal length, numbers by exact decimal value (`0 = 0.0`, `1e2 = 100`,
//! `9007199254740993 ≠ 9007199254740992`), everything else by JSON equality with types
//! kept (`94107 ≠ "94107"`). A key the observation lacks is *missing*: neither a match
//! nor a contradiction. Any contradiction outweighs any missing key.

use serde_json::{Map, Value};

/// How one expected value relates to what was observed.
#[derive(Debug, Clone, PartialEq)]
pub enum Cmp {
    /// Every expected key was observed with an equal value.
    Match,
    /// The observation did not include this path.
    Missing(String),
    /// The observation disagrees at this path.
    Contradiction {
        /// The JSON path of the first disagreement (`.status`, `.items[2]`).
        path: String,
        /// What the expectation asked for at `path`.
        expected: Value,
        /// What was observed there instead.
        observed: Value,
    },
}

impl Cmp {
    /// Combines two results: a contradiction wins, then a missing key, then a match.
    fn and(self, other: Cmp) -> Cmp {
        match (self, other) {
            (c @ Cmp::Contradiction { .. }, _) | (_, c @ Cmp::Contradiction { .. }) => c,
            (m @ Cmp::Missing(_), _) | (_, m @ Cmp::Missing(_)) => m,
            _ => Cmp::Match,
        }
    }
}

/// Compares every expected key with the observed object. `body_contains` gets the
/// spec's text meaning when `health` is true (an `endpoint_health` check).
pub fn compare_object(
    expected: &Map<String, Value>,
    observed: &Map<String, Value>,
    health: bool,
) -> Cmp {
    let mut result = Cmp::Match;
    for (key, want) in expected {
        let path = evident_format::json::push_key("", key);
        let got = observed.get(key);
        let cmp = match (got, want) {
            (None, _) => Cmp::Missing(path),
            (Some(got), Value::String(text)) if health && key == "body_contains" => {
                let ok = match got {
                    Value::Bool(b) => *b,
                    Value::String(body) => body.contains(text.as_str()),
                    _ => false,
                };
                if ok {
                    Cmp::Match
                } else {
                    Cmp::Contradiction {
                        path,
                        expected: want.clone(),
                        observed: got.clone(),
                    }
                }
            }
            (Some(got), _) => compare_value(want, got, path),
        };
        result = result.and(cmp);
    }
    result
}

/// Compares one expected value with one observed value at `path`.
pub fn compare_value(want: &Value, got: &Value, path: String) -> Cmp {
    let contradiction = |path: String| Cmp::Contradiction {
        path,
        expected: want.clone(),
        observed: got.clone(),
    };
    match (want, got) {
        (Value::Object(w), Value::Object(g)) => {
            let mut result = Cmp::Match;
            for (key, wv) in w {
                let child = evident_format::json::push_key(&path, key);
                let cmp = match g.get(key) {
                    None => Cmp::Missing(child),
                    Some(gv) => compare_value(wv, gv, child),
                };
                result = result.and(cmp);
            }
            result
        }
        (Value::Array(w), Value::Array(g)) => {
            if w.len() != g.len() {
                return contradiction(path);
            }
            w.iter()
                .zip(g)
                .enumerate()
                .map(|(i, (wv, gv))| compare_value(wv, gv, format!("{path}[{i}]")))
                .fold(Cmp::Match, Cmp::and)
        }
        (Value::Number(w), Value::Number(g)) => {
            let (wt, gt) = (w.to_string(), g.to_string());
            // A number whose exponent is beyond any exact arithmetic here equals only
            // its own text: two such numbers must never match merely because neither
            // could be read.
            let same = match (Decimal::parse(&wt), Decimal::parse(&gt)) {
                (Some(a), Some(b)) => a == b,
                _ => wt == gt,
            };
            if same {
                Cmp::Match
            } else {
                contradiction(path)
            }
        }
        (Value::Object(_) | Value::Array(_), _) => contradiction(path),
        _ if want == got => Cmp::Match,
        _ => contradiction(path),
    }
}

/// A JSON number as an exact decimal: sign, significant digits, power of ten.
#[derive(Debug, PartialEq, Eq)]
struct Decimal {
    negative: bool,
    digits: String,
    exponent: i128,
}

impl Decimal {
    /// Normalizes the text of a JSON number; `None` for text that is not a number or
    /// whose exponent does not fit exact arithmetic (more than 38 digits).
    fn parse(text: &str) -> Option<Decimal> {
        let (negative, rest) = match text.strip_prefix('-') {
            Some(r) => (true, r),
            None => (false, text.strip_prefix('+').unwrap_or(text)),
        };
        let (mantissa, exp) = match rest.find(['e', 'E']) {
            Some(i) => (&rest[..i], Some(&rest[i + 1..])),
            None => (rest, None),
        };
        let (int, frac) = mantissa.split_once('.').unwrap_or((mantissa, ""));
        let mut digits: String = int.chars().chain(frac.chars()).collect();
        if !digits.bytes().all(|b| b.is_ascii_digit()) || digits.is_empty() {
            return None;
        }
        let trimmed = digits.trim_start_matches('0');
        if trimmed.is_empty() {
            return Some(Decimal {
                negative: false,
                digits: "0".into(),
                exponent: 0,
            });
        }
        let exp = match exp {
            Some(e) => e.parse::<i128>().ok()?,
            None => 0,
        };
        let mut exponent = exp.checked_sub(i128::try_from(frac.len()).ok()?)?;
        digits = trimmed.to_string();
        while digits.ends_with('0') {
            digits.pop();
            exponent = exponent.checked_add(1)?;
        }
        Some(Decimal {
            negative,
            digits,
            exponent,
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn num(s: &str) -> Value {
        Value::Number(s.parse().unwrap())
    }

    #[test]
    fn numbers_by_exact_value() {
        let m = |a: &str, b: &str| compare_value(&num(a), &num(b), String::new()) == Cmp::Match;
        assert!(m("0", "0.0"));
        assert!(m("0", "-0"));
        assert!(m("1e2", "100"));
        assert!(m("100", "1E+2"));
        assert!(m("1.50", "15e-1"));
        assert!(!m("9007199254740993", "9007199254740992"));
        assert!(!m("0.1", "0.10000000000000001"));
        assert!(!m("-1", "1"));
        // Exponents past i64: exact, and never a panic or a match by default.
        assert!(m("10e9223372036854775807", "1e9223372036854775808"));
        assert!(!m("10e9223372036854775807", "1"));
        assert!(!m("1.5e-9223372036854775808", "2.5e-9223372036854775808"));
        assert!(m("1.5e-9223372036854775808", "15e-9223372036854775809"));
        // Beyond i128: only the same text matches.
        let huge = "1e999999999999999999999999999999999999999";
        assert!(m(huge, huge));
        assert!(!m(huge, "7e999999999999999999999999999999999999999"));
        assert!(!m(huge, "1"));
        assert!(m("0e999999999999999999999999999999999999999", "0"));
    }

    #[test]
    fn types_are_kept() {
        let c = compare_value(&json!(94107), &json!("94107"), "zip".into());
        assert!(matches!(c, Cmp::Contradiction { .. }));
        let c = compare_value(&json!(null), &json!(0), "x".into());
        assert!(matches!(c, Cmp::Contradiction { .. }));
    }

    #[test]
    fn subset_and_missing() {
        let want = json!({"a": {"b": 1}, "c": 2});
        let got = json!({"a": {"b": 1, "extra": 3}});
        let c = compare_object(want.as_object().unwrap(), got.as_object().unwrap(), false);
        assert_eq!(c, Cmp::Missing("c".into()));
        let got = json!({"a": {"b": 2}});
        let c = compare_object(want.as_object().unwrap(), got.as_object().unwrap(), false);
        assert!(matches!(c, Cmp::Contradiction { ref path, .. } if path == "a.b"));
    }

    #[test]
    fn body_contains_only_for_health() {
        let want = json!({"body_contains": "1.4.2"});
        let got = json!({"body_contains": "version 1.4.2 ok"});
        let (w, g) = (want.as_object().unwrap(), got.as_object().unwrap());
        assert_eq!(compare_object(w, g, true), Cmp::Match);
        assert!(matches!(
            compare_object(w, g, false),
            Cmp::Contradiction { .. }
        ));
        let no = json!({"body_contains": false});
        assert!(matches!(
            compare_object(w, no.as_object().unwrap(), true),
            Cmp::Contradiction { .. }
        ));
    }
}
