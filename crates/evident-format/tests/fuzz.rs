//! `Claim::parse` on hostile input: arbitrary bytes, byte-level mutations of a valid
//! claim, and structural mutations (any value anywhere replaced by something odd).
//! It must never panic, and every refusal must say where: the file, a position, and a
//! well-formed JSON path that points into the document (or at a field it lacks).

use evident_format::{Claim, json};
use proptest::prelude::*;
use serde_json::Value;

const FILE: &str = "fuzz.json";

/// A valid claim: the spec's example (independent evidence, a policy).
fn valid() -> Vec<u8> {
    let path = concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/../../testdata/conformance/claim-v0.1/spec-example-verified.json"
    );
    let vector: Value = serde_json::from_slice(&std::fs::read(path).unwrap()).unwrap();
    serde_json::to_vec_pretty(&vector["document"]).unwrap()
}

/// A JSON path as this crate writes it: `key`, `.key`, `["odd key"]`, `[3]`.
fn well_formed_path(p: &str) -> bool {
    let mut rest = p;
    let mut first = true;
    while !rest.is_empty() {
        if let Some(r) = rest.strip_prefix('[') {
            if let Some(end) = r.find(']')
                && !r[..end].is_empty()
                && r[..end].bytes().all(|b| b.is_ascii_digit())
            {
                rest = &r[end + 1..];
            } else if r.starts_with('"') {
                // A quoted key: a JSON string, then `]`.
                let mut de = serde_json::Deserializer::from_str(r).into_iter::<String>();
                match de.next() {
                    Some(Ok(_)) => {
                        let used = de.byte_offset();
                        match r[used..].strip_prefix(']') {
                            Some(after) => rest = after,
                            None => return false,
                        }
                    }
                    _ => return false,
                }
            } else {
                return false;
            }
        } else {
            let r = if first {
                rest
            } else {
                match rest.strip_prefix('.') {
                    Some(r) => r,
                    None => return false,
                }
            };
            let end = r.find(['.', '[']).unwrap_or(r.len());
            let key = &r[..end];
            if key.is_empty()
                || !key
                    .chars()
                    .all(|c| c.is_ascii_alphanumeric() || c == '_' || c == '-' || c == '$')
            {
                return false;
            }
            rest = &r[end..];
        }
        first = false;
    }
    true
}

/// Parse, and check the contract of the result. Returns the error (if any) for more checks.
fn check(bytes: &[u8]) -> Result<(), TestCaseError> {
    match Claim::parse(bytes, FILE) {
        Ok(doc) => {
            // Accepted means strictly valid: the raw value is an object and every
            // covers id names a mutation.
            prop_assert!(doc.raw.is_object());
            let ids: Vec<&str> = doc.claim.mutations.iter().map(|m| m.id.as_str()).collect();
            for e in &doc.claim.evidence {
                prop_assert!(e.expected.is_object());
                for c in &e.covers {
                    prop_assert!(ids.contains(&c.as_str()));
                }
            }
        }
        Err(e) => {
            prop_assert_eq!(&e.file, FILE);
            prop_assert!(e.pos.is_some(), "no position: {}", e);
            prop_assert!(!e.message.is_empty());
            prop_assert!(well_formed_path(&e.path), "bad path {:?}: {}", e.path, e);
            let shown = e.to_string();
            prop_assert!(shown.starts_with(FILE), "{}", shown);
            prop_assert!(shown.contains(": at "), "{}", shown);
            // When the text is strict JSON, the path leads into the document: the value
            // it names exists, or (a missing field) its parent does.
            if let Ok(parsed) = json::parse(bytes) {
                let parent = json::parent_path(&e.path);
                prop_assert!(
                    parsed.spans.get(&e.path).is_some() || parsed.spans.get(parent).is_some(),
                    "path {:?} is not in the document: {}",
                    e.path,
                    e
                );
            }
        }
    }
    Ok(())
}

/// Values worth putting anywhere: the edges of numbers, strings and nesting.
fn odd_value() -> impl Strategy<Value = Value> {
    let text = |s: &str| serde_json::from_str::<Value>(s).unwrap();
    let leaf = prop_oneof![
        Just(Value::Null),
        any::<bool>().prop_map(Value::Bool),
        any::<i64>().prop_map(Value::from),
        any::<u64>().prop_map(Value::from),
        any::<f64>()
            .prop_filter("finite", |f| f.is_finite())
            .prop_map(Value::from),
        prop_oneof![
            Just("1e999999999999999999999999"),
            Just("-1e-999999999999999999999999"),
            Just("10e9223372036854775807"),
            Just("1.5e-9223372036854775808"),
            Just("123456789012345678901234567890123456789012345678901234567890"),
            Just("-0"),
            Just("0.000000000000000000000000000001"),
        ]
        .prop_map(text),
        prop_oneof![
            Just(String::new()),
            Just("NaN".to_string()),
            Just("Infinity".to_string()),
            Just("-0".to_string()),
            Just("0.1".to_string()),
            Just("independent".to_string()),
            Just("Independent".to_string()),
            Just("self_attested".to_string()),
            Just("absent".to_string()),
            Just("test_run".to_string()),
            Just("block".to_string()),
            Just("m1".to_string()),
            Just("2026-08-27T18:04:09Z".to_string()),
            Just("2026-08-27 18:04:09Z".to_string()),
            Just("2026-08-27T23:59:60Z".to_string()),
            Just("9999-12-31T23:59:59.999999999-23:59".to_string()),
            Just("0000-01-01T00:00:00+23:59".to_string()),
            Just("2026-08-27T18:04:09.1234567891Z".to_string()),
            Just("\u{feff}\u{200b}\u{202e}e\u{301}\u{1F600}".to_string()),
            Just("a\r\nb\0c".to_string()),
            Just("x".repeat(100_000)),
            "\\PC{0,40}",
            ".{0,20}",
        ]
        .prop_map(Value::String),
    ];
    leaf.prop_recursive(4, 32, 6, |inner| {
        prop_oneof![
            prop::collection::vec(inner.clone(), 0..6).prop_map(Value::Array),
            prop::collection::vec(("[a-z_]{0,12}|\\PC{0,6}", inner), 0..6)
                .prop_map(|kv| Value::Object(kv.into_iter().collect())),
        ]
    })
}

/// Every path in `v` (as a list of steps), root first.
fn paths(v: &Value, here: Vec<Step>, out: &mut Vec<Vec<Step>>) {
    out.push(here.clone());
    match v {
        Value::Object(m) => {
            for (k, c) in m {
                let mut p = here.clone();
                p.push(Step::Key(k.clone()));
                paths(c, p, out);
            }
        }
        Value::Array(a) => {
            for (i, c) in a.iter().enumerate() {
                let mut p = here.clone();
                p.push(Step::Index(i));
                paths(c, p, out);
            }
        }
        _ => {}
    }
}

#[derive(Clone, Debug)]
enum Step {
    Key(String),
    Index(usize),
}

fn at_mut<'a>(v: &'a mut Value, path: &[Step]) -> &'a mut Value {
    path.iter().fold(v, |v, s| match s {
        Step::Key(k) => &mut v[k.as_str()],
        Step::Index(i) => &mut v[*i],
    })
}

/// A structural edit at a chosen place of the valid claim.
#[derive(Clone, Debug)]
enum Edit {
    Replace(usize, Value),
    Remove(usize),
    AddKey(usize, String, Value),
    Wrap(usize, usize),
}

fn edit() -> impl Strategy<Value = Edit> {
    prop_oneof![
        (any::<usize>(), odd_value()).prop_map(|(i, v)| Edit::Replace(i, v)),
        any::<usize>().prop_map(Edit::Remove),
        (
            any::<usize>(),
            prop_oneof![
                Just("verdict".to_string()),
                Just("covers".to_string()),
                Just("observation_error".to_string()),
                Just("signature".to_string()),
                Just("policy".to_string()),
                "[a-z_]{1,10}",
            ],
            odd_value()
        )
            .prop_map(|(i, k, v)| Edit::AddKey(i, k, v)),
        (any::<usize>(), 1usize..300).prop_map(|(i, d)| Edit::Wrap(i, d)),
    ]
}

fn apply(doc: &mut Value, e: &Edit) {
    let mut all = Vec::new();
    paths(doc, Vec::new(), &mut all);
    let pick = |i: usize| all[i % all.len()].clone();
    match e {
        Edit::Replace(i, v) => *at_mut(doc, &pick(*i)) = v.clone(),
        Edit::Remove(i) => {
            let p = pick(*i);
            if let Some((last, parent)) = p.split_last() {
                match (at_mut(doc, parent), last) {
                    (Value::Object(m), Step::Key(k)) => {
                        m.shift_remove(k);
                    }
                    (Value::Array(a), Step::Index(j)) => {
                        a.remove(*j);
                    }
                    _ => {}
                }
            }
        }
        Edit::AddKey(i, k, v) => {
            if let Value::Object(m) = at_mut(doc, &pick(*i)) {
                m.insert(k.clone(), v.clone());
            }
        }
        Edit::Wrap(i, depth) => {
            let target = at_mut(doc, &pick(*i));
            let mut v = target.take();
            for _ in 0..*depth {
                v = Value::Array(vec![v]);
            }
            *target = v;
        }
    }
}

/// A byte-level edit of the text.
#[derive(Clone, Debug)]
enum ByteEdit {
    Set(usize, u8),
    Insert(usize, Vec<u8>),
    Delete(usize, usize),
    Duplicate(usize, usize),
    Truncate(usize),
}

fn byte_edit() -> impl Strategy<Value = ByteEdit> {
    prop_oneof![
        (any::<usize>(), any::<u8>()).prop_map(|(i, b)| ByteEdit::Set(i, b)),
        (
            any::<usize>(),
            prop_oneof![
                prop::collection::vec(any::<u8>(), 0..8),
                prop_oneof![
                    Just(&b"\xff"[..]),
                    Just(&b"\xc3"[..]),
                    Just(&b"\xed\xa0\x80"[..]),
                    Just(&b"\r\n"[..]),
                    Just(&b"\\ud800"[..]),
                    Just(&b"\\u0000"[..]),
                    Just(&b"\"a\":1,"[..]),
                    Just(&b"[[[[[[[["[..]),
                    Just(&b"}}}"[..]),
                    Just(&b"1e999999999999999999999999"[..]),
                    Just(&b"NaN"[..]),
                    Just(&b"-"[..]),
                    Just(&b"\xef\xbb\xbf"[..]),
                ]
                .prop_map(<[u8]>::to_vec),
            ]
        )
            .prop_map(|(i, b)| ByteEdit::Insert(i, b)),
        (any::<usize>(), 0usize..64).prop_map(|(i, n)| ByteEdit::Delete(i, n)),
        (any::<usize>(), 0usize..64).prop_map(|(i, n)| ByteEdit::Duplicate(i, n)),
        any::<usize>().prop_map(ByteEdit::Truncate),
    ]
}

fn apply_bytes(b: &mut Vec<u8>, e: &ByteEdit) {
    let at = |i: usize, len: usize| if len == 0 { 0 } else { i % (len + 1) };
    match e {
        ByteEdit::Set(i, v) => {
            if !b.is_empty() {
                let i = i % b.len();
                b[i] = *v;
            }
        }
        ByteEdit::Insert(i, v) => {
            let i = at(*i, b.len());
            b.splice(i..i, v.iter().copied());
        }
        ByteEdit::Delete(i, n) => {
            let i = at(*i, b.len());
            let end = (i + n).min(b.len());
            b.drain(i..end);
        }
        ByteEdit::Duplicate(i, n) => {
            let i = at(*i, b.len());
            let end = (i + n).min(b.len());
            let part = b[i..end].to_vec();
            b.splice(end..end, part);
        }
        ByteEdit::Truncate(i) => {
            let i = at(*i, b.len());
            b.truncate(i);
        }
    }
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 512, ..ProptestConfig::default() })]

    #[test]
    fn arbitrary_bytes(bytes in prop::collection::vec(any::<u8>(), 0..512)) {
        check(&bytes)?;
    }

    #[test]
    fn arbitrary_text(text in "\\PC{0,300}") {
        check(text.as_bytes())?;
    }

    #[test]
    fn byte_mutations_of_a_valid_claim(edits in prop::collection::vec(byte_edit(), 1..6)) {
        let mut b = valid();
        for e in &edits {
            apply_bytes(&mut b, e);
        }
        check(&b)?;
        // CRLF line ends change nothing about validity.
        let crlf: Vec<u8> = b.iter().flat_map(|&c| if c == b'\n' { vec![b'\r', b'\n'] } else { vec![c] }).collect();
        prop_assert_eq!(Claim::parse(&crlf, FILE).is_ok(), Claim::parse(&b, FILE).is_ok());
        check(&crlf)?;
    }

    #[test]
    fn structural_mutations_of_a_valid_claim(edits in prop::collection::vec(edit(), 1..4)) {
        let mut doc: Value = serde_json::from_slice(&valid()).unwrap();
        for e in &edits {
            apply(&mut doc, e);
        }
        check(&serde_json::to_vec(&doc).unwrap())?;
        check(&serde_json::to_vec_pretty(&doc).unwrap())?;
    }
}

#[test]
fn the_valid_claim_parses() {
    Claim::parse(&valid(), FILE).unwrap();
}

#[test]
fn path_grammar() {
    for ok in [
        "",
        "a",
        "a.b",
        "a[0]",
        "evidence[2].at",
        "a[\"odd key\"]",
        "[\"\"]",
        "x[\"a]b\"].c",
    ] {
        assert!(well_formed_path(ok), "{ok}");
    }
    for bad in [".a", "a.", "a..b", "a[", "a[x]", "a b", "a[\"x\"", "a[]"] {
        assert!(!well_formed_path(bad), "{bad}");
    }
}
