//! Which paths made a git work tree unclean, as a `git` observation names them beside
//! `clean = false` (evident-probes' git probe): for people, in the verdict's reason and
//! the reports. No rule compares them; an expectation on `clean` is decided by `clean`.

use serde_json::{Map, Value};

/// The observed key naming the first paths that make the work tree unclean (at most
/// 20), present only when `clean` is false.
pub const UNCLEAN_PATHS: &str = "unclean_paths";
/// The observed key counting the unclean paths found past [`UNCLEAN_PATHS`]'s.
pub const UNCLEAN_MORE: &str = "unclean_more";
/// The observed key saying why not every path was looked at once the first was found
/// (an error, the time limit), when that happened.
pub const UNCLEAN_STOPPED: &str = "unclean_stopped";
/// The three, for a report that shows them as words rather than inside the JSON.
pub const UNCLEAN_KEYS: [&str; 3] = [UNCLEAN_PATHS, UNCLEAN_MORE, UNCLEAN_STOPPED];

/// `extra.py, src/x.rs and 13 more` from an observation's [`UNCLEAN_PATHS`] and
/// [`UNCLEAN_MORE`], the names cut off once the text would pass `max_chars` (the
/// names left out are counted with the rest); with `(not every path was looked at:
/// WHY)` after [`UNCLEAN_STOPPED`]. `None` when the observation names no path.
pub fn summary(observed: &Map<String, Value>, max_chars: usize) -> Option<String> {
    let named: Vec<&str> = observed
        .get(UNCLEAN_PATHS)?
        .as_array()?
        .iter()
        .filter_map(Value::as_str)
        .collect();
    let more = observed
        .get(UNCLEAN_MORE)
        .and_then(Value::as_u64)
        .unwrap_or(0);
    if named.is_empty() && more == 0 {
        return None;
    }
    let mut shown: Vec<&str> = Vec::new();
    let mut len = 0;
    for n in &named {
        let add = n.chars().count() + if shown.is_empty() { 0 } else { 2 };
        if !shown.is_empty() && len + add > max_chars {
            break;
        }
        len += add;
        shown.push(n);
    }
    let rest = more + (named.len() - shown.len()) as u64;
    let mut text = shown.join(", ");
    if rest > 0 {
        if text.is_empty() {
            text = format!("{rest} path(s)");
        } else {
            text.push_str(&format!(" and {rest} more"));
        }
    }
    if let Some(why) = observed.get(UNCLEAN_STOPPED).and_then(Value::as_str) {
        text.push_str(&format!(" (not every path was looked at: {why})"));
    }
    Some(text)
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn obs(v: Value) -> Map<String, Value> {
        v.as_object().unwrap().clone()
    }

    #[test]
    fn names_then_counts() {
        let o =
            obs(json!({"clean": false, "unclean_paths": ["a.py", "b/c.txt"], "unclean_more": 0}));
        assert_eq!(summary(&o, 300).unwrap(), "a.py, b/c.txt");
        let o =
            obs(json!({"clean": false, "unclean_paths": ["a.py", "b/c.txt"], "unclean_more": 13}));
        assert_eq!(summary(&o, 300).unwrap(), "a.py, b/c.txt and 13 more");
        // Cut at the length: what is left out is counted.
        assert_eq!(summary(&o, 5).unwrap(), "a.py and 14 more");
        let o = obs(json!({"unclean_paths": ["a"], "unclean_more": 0, "unclean_stopped": "slow"}));
        assert_eq!(
            summary(&o, 300).unwrap(),
            "a (not every path was looked at: slow)"
        );
        assert_eq!(summary(&obs(json!({"clean": true})), 300), None);
        assert_eq!(summary(&obs(json!({"unclean_paths": []})), 300), None);
    }
}
