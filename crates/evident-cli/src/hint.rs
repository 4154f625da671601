//! `hint:` lines: where an error or a verdict has a likely fix (arguments swapped, a
//! misspelt field, an example decided long after it was written), the CLI says it.
//! Hints never change a verdict or an exit code; they are printed, not decided.

use evident_pipeline::Decision;
use evident_rules::verdict::{Code, State};

/// Evidence older than this at decision time was not observed for this decision: a
/// document decided long after it was written (an example, a replayed claim).
const LONG_AGO_S: i64 = 24 * 60 * 60;

/// What in `bytes` says it is a Completion Claim (`spec_version`, `evidence`,
/// `mutations` at the top of a JSON object, and no contract `check`), if anything.
pub fn looks_like_claim(bytes: &[u8]) -> Option<&'static str> {
    let keys = top_level_keys(bytes)?;
    if keys.iter().any(|k| k == "check") {
        return None;
    }
    ["spec_version", "evidence", "mutations"]
        .into_iter()
        .find(|k| keys.iter().any(|have| have == k))
}

/// The member names of a JSON object, its values skipped unread: a hint is looked for
/// after a document was refused, and that document may be tens of MB or an array of
/// millions of zeros, which as a `Value` would cost gigabytes.
fn top_level_keys(bytes: &[u8]) -> Option<Vec<String>> {
    struct Keys(Vec<String>);
    impl<'de> serde::Deserialize<'de> for Keys {
        fn deserialize<D: serde::Deserializer<'de>>(d: D) -> Result<Keys, D::Error> {
            struct Visit;
            impl<'de> serde::de::Visitor<'de> for Visit {
                type Value = Keys;
                fn expecting(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
                    f.write_str("a JSON object")
                }
                fn visit_map<A: serde::de::MapAccess<'de>>(
                    self,
                    mut m: A,
                ) -> Result<Keys, A::Error> {
                    let mut keys = Vec::new();
                    while let Some(k) = m.next_key::<String>()? {
                        m.next_value::<serde::de::IgnoredAny>()?;
                        keys.push(k);
                    }
                    Ok(Keys(keys))
                }
            }
            d.deserialize_map(Visit)
        }
    }
    serde_json::from_slice::<Keys>(bytes).ok().map(|k| k.0)
}

/// What in `bytes` says it is a contract (a TOML `[policy]`, `[[check]]` or
/// `[[snapshot]]` table, or a JSON object with `check`), if anything.
pub fn looks_like_contract(bytes: &[u8]) -> Option<&'static str> {
    let text = std::str::from_utf8(bytes).ok()?;
    if let Some(table) = text.lines().map(str::trim).find_map(|l| {
        ["[policy]", "[[check]]", "[[snapshot]]"]
            .into_iter()
            .find(|t| l == *t)
    }) {
        return Some(table);
    }
    let keys = top_level_keys(text.as_bytes())?;
    keys.iter().any(|k| k == "check").then_some("check")
}

/// The hint for a contract that did not parse: when the file is a claim, `{name}
/// looks like a claim (it has …)` followed by `instead` (what to run); otherwise a
/// misspelt field's likely name, from the parser's `message`.
pub fn contract_hint(bytes: &[u8], name: &str, message: &str, instead: &str) -> Option<String> {
    match looks_like_claim(bytes) {
        Some(key) => Some(format!("{name} looks like a claim (it has {key}){instead}")),
        None => did_you_mean(message),
    }
}

/// An error with its likely fix. `main` prints the hint as a `hint:` line of its own,
/// each part escaped on its own: a newline the input put in the error stays escaped,
/// so a document cannot forge a hint.
#[derive(Debug)]
pub struct Hinted {
    /// What is wrong.
    pub error: String,
    /// The likely fix.
    pub hint: String,
}

impl std::fmt::Display for Hinted {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{}\nhint: {}", self.error, self.hint)
    }
}

impl std::error::Error for Hinted {}

/// `error`, with `hint` (when there is one) for `main` to print below it.
pub fn with_hint(error: impl std::fmt::Display, hint: Option<String>) -> anyhow::Error {
    match hint {
        Some(hint) => Hinted {
            error: error.to_string(),
            hint,
        }
        .into(),
        None => anyhow::anyhow!("{error}"),
    }
}

/// For serde's "unknown field `x`, expected one of `a`, `b`": the valid name `x` is
/// probably a misspelling of (edit distance at most 2, or one a prefix of the other).
pub fn did_you_mean(message: &str) -> Option<String> {
    let rest = message.strip_prefix("unknown field `")?;
    let (field, rest) = rest.split_once('`')?;
    let expected = rest
        .strip_prefix(", expected one of ")
        .or_else(|| rest.strip_prefix(", expected "))?;
    let names = expected
        .split(", ")
        .filter_map(|n| n.strip_prefix('`')?.strip_suffix('`'));
    closest(field, names).map(|name| format!("did you mean `{name}`?"))
}

/// The name in `names` closest to `field`, when it is close enough to be a slip.
fn closest<'a>(field: &str, names: impl Iterator<Item = &'a str>) -> Option<&'a str> {
    let field_len = field.chars().count();
    names
        .filter(|n| *n != field)
        .filter_map(|n| {
            let d = edit_distance(field, n);
            let shorter = field_len.min(n.chars().count());
            let prefix = shorter >= 3 && (n.starts_with(field) || field.starts_with(n));
            (d <= 2 && d < field_len || prefix).then_some((d, n))
        })
        .min_by_key(|(d, _)| *d)
        .map(|(_, n)| n)
}

/// Levenshtein distance, by characters.
fn edit_distance(a: &str, b: &str) -> usize {
    let b: Vec<char> = b.chars().collect();
    let mut row: Vec<usize> = (0..=b.len()).collect();
    for (i, ca) in a.chars().enumerate() {
        let mut diagonal = row[0];
        row[0] = i + 1;
        for (j, cb) in b.iter().enumerate() {
            let above = row[j + 1];
            row[j + 1] = (above + 1)
                .min(row[j] + 1)
                .min(diagonal + usize::from(ca != *cb));
            diagonal = above;
        }
    }
    row[b.len()]
}

/// For a verdict that is not verified because evidence is stale, and every stale
/// item was observed more than a day before the decision: the `--now` that decides
/// the document as of the newest of them (a second after it).
pub fn stale_long_ago(decision: &Decision) -> Option<String> {
    if decision.verdict.state == State::Verified {
        return None;
    }
    let decided = decision.verdict.decided_at.instant();
    let mut newest = None;
    for f in &decision.verdict.findings {
        if f.code != Code::Stale {
            continue;
        }
        let at = &decision.claim.claim.evidence.get(f.evidence)?.at;
        if (decided - at.instant()).whole_seconds() <= LONG_AGO_S {
            return None;
        }
        if newest.is_none_or(|n: &evident_format::Timestamp| at > n) {
            newest = Some(at);
        }
    }
    let at = newest?;
    let then = at.instant().replace_nanosecond(0).ok()? + time::Duration::seconds(1);
    Some(format!(
        "the evidence was observed at {at}; to decide the document as of then, pass --now {}",
        evident_format::Timestamp::from_instant(then)
    ))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_near_miss_is_suggested_and_a_stranger_is_not() {
        let m = "unknown field `requirs`, expected one of `id`, `requires`, `max_age_s`";
        assert_eq!(did_you_mean(m).as_deref(), Some("did you mean `requires`?"));
        let m = "unknown field `checks`, expected one of `policy`, `check`, `trust`";
        assert_eq!(did_you_mean(m).as_deref(), Some("did you mean `check`?"));
        let m = "unknown field `max_age`, expected one of `id`, `requires`, `max_age_s`";
        assert_eq!(
            did_you_mean(m).as_deref(),
            Some("did you mean `max_age_s`?")
        );
        let m = "unknown field `spec_version`, expected one of `policy`, `check`, `snapshot`";
        assert_eq!(did_you_mean(m), None);
        // Two letters are not a slip of one letter each.
        let m = "unknown field `xy`, expected one of `id`";
        assert_eq!(did_you_mean(m), None);
        assert_eq!(did_you_mean("missing required field \"id\""), None);
    }

    #[test]
    fn edit_distance_counts_insertions_deletions_and_substitutions() {
        assert_eq!(edit_distance("requirs", "requires"), 1);
        assert_eq!(edit_distance("kitten", "sitting"), 3);
        assert_eq!(edit_distance("", "abc"), 3);
        assert_eq!(edit_distance("same", "same"), 0);
    }

    #[test]
    fn claims_and_contracts_are_told_apart() {
        let claim = br#"{"spec_version": "0.1", "task": {"id": "t"}}"#;
        assert_eq!(looks_like_claim(claim), Some("spec_version"));
        // A refused document is sniffed without building it: eight million zeros (16 MB)
        // are skipped, not held as values (a `Value` of them is about a gigabyte).
        let zeros = format!("{{\"evidence\":[{}0]}}", "0,".repeat(8_000_000));
        assert_eq!(looks_like_claim(zeros.as_bytes()), Some("evidence"));
        assert_eq!(looks_like_contract(zeros.as_bytes()), None);
        assert_eq!(looks_like_contract(claim), None);
        let toml = b"# owner\n[policy]\nrequires = []\n";
        assert_eq!(looks_like_contract(toml), Some("[policy]"));
        assert_eq!(looks_like_claim(toml), None);
        let json_contract = br#"{"policy": {}, "check": []}"#;
        assert_eq!(looks_like_contract(json_contract), Some("check"));
        assert_eq!(looks_like_claim(json_contract), None);
    }
}
