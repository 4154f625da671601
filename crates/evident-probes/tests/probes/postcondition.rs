//! File postconditions: every reason code of the reference, the attacks an agent that
//! writes the tree can make (symlinks, a FIFO, a non-directory parent, duplicate JSON
//! keys, booleans for numbers) with their honest twins, and that no observation or
//! error names a path, child, key or value.

use std::os::unix::fs::symlink;
use std::path::Path;

use evident_probes::{Object, ProbeError, Source};
use serde_json::{Value, json};

use crate::{ctx, err, ok, run, src};

const CANARY: &str = "canary7q";

async fn observe(root: &Path, source: &str) -> Result<Object, ProbeError> {
    let s = src(source);
    s.validate().unwrap();
    run(&s, &ctx(root), 5.0).await.value
}

fn text(path: &str, want: &str) -> String {
    format!(
        r#"{{ file = {{ path = "{path}", postcondition = {{ text_file = {{ expected_text = "{want}" }} }} }} }}"#
    )
}

fn reason(o: &Object) -> &Value {
    &o["reason"]
}

/// No observation value is a string other than the fixed labels.
fn values_free(o: &Object) {
    let s = serde_json::to_string(o).unwrap();
    assert!(!s.contains(CANARY), "{s}");
    for (k, v) in o {
        match (k.as_str(), v) {
            ("postcondition" | "reason", Value::String(_) | Value::Null) => {}
            (_, Value::Bool(_) | Value::Number(_)) => {}
            _ => panic!("{k} = {v} is not a flag or a count"),
        }
    }
}

#[tokio::test]
async fn text_file_exact_bytes() {
    let d = tempfile::tempdir().unwrap();
    std::fs::create_dir(d.path().join("out")).unwrap();
    std::fs::write(d.path().join("out/r.txt"), "ready\n").unwrap();
    let o = ok(run(&src(&text("out/r.txt", "ready\\n")), &ctx(d.path()), 5.0).await);
    assert_eq!(o["matches"], json!(true), "{o:?}");
    assert_eq!(o["reason"], Value::Null);
    assert_eq!(o["content_matches"], json!(true));
    values_free(&o);
    // One byte short, one byte more, same length other bytes: content_mismatch.
    for (body, size) in [("ready", false), ("ready\n\n", false), ("reaDy\n", true)] {
        std::fs::write(d.path().join("out/r.txt"), body).unwrap();
        let o = observe(d.path(), &text("out/r.txt", "ready\\n"))
            .await
            .unwrap();
        assert_eq!(reason(&o), "content_mismatch", "{body:?}");
        assert_eq!(o["size_matches"], json!(size), "{body:?}");
        assert_eq!(o["matches"], json!(false));
    }
    // Missing (also under a missing parent), wrong type.
    let o = observe(d.path(), &text("out/gone.txt", "x")).await.unwrap();
    assert_eq!(reason(&o), "missing");
    assert_eq!(o["exists"], json!(false));
    let o = observe(d.path(), &text("nodir/gone.txt", "x"))
        .await
        .unwrap();
    assert_eq!(reason(&o), "missing");
    let o = observe(d.path(), &text("out", "x")).await.unwrap();
    assert_eq!(reason(&o), "wrong_type");
    // An empty expected text: the file must be empty.
    std::fs::write(d.path().join("out/e.txt"), "").unwrap();
    let o = observe(d.path(), &text("out/e.txt", "")).await.unwrap();
    assert_eq!(o["matches"], json!(true));
}

#[tokio::test]
async fn symlinks_are_never_followed_anywhere_on_the_path() {
    let d = tempfile::tempdir().unwrap();
    let root = d.path();
    std::fs::create_dir_all(root.join("real")).unwrap();
    std::fs::write(root.join("real/r.txt"), "ready\n").unwrap();
    // Attack: the right content reached through a link inside the root.
    symlink("real/r.txt", root.join("link.txt")).unwrap();
    symlink("real", root.join("linkdir")).unwrap();
    for path in ["link.txt", "linkdir/r.txt"] {
        let e = err(run(&src(&text(path, "ready\\n")), &ctx(root), 5.0).await);
        let ProbeError::Postcondition { reason, .. } = &e else {
            panic!("{path}: {e:?}")
        };
        assert_eq!(reason, "unsafe_path", "{path}");
        assert!(!e.public_message().contains(path), "{}", e.public_message());
    }
    // Dangling and escaping links: unsafe too, never missing.
    symlink("/etc/hostname", root.join("abs.txt")).unwrap();
    symlink("nothing-here", root.join("dangling.txt")).unwrap();
    for path in ["abs.txt", "dangling.txt"] {
        let e = observe(root, &text(path, "x")).await.unwrap_err();
        assert!(
            matches!(&e, ProbeError::Postcondition { reason, .. } if reason == "unsafe_path"),
            "{e:?}"
        );
    }
    // A regular file as a parent is a refusal, not an absence.
    let e = observe(root, &text("real/r.txt/x", "x")).await.unwrap_err();
    assert!(
        matches!(&e, ProbeError::Postcondition { reason, .. } if reason == "unsafe_path"),
        "{e:?}"
    );
    // Honest twin: the same file at its real path.
    let o = observe(root, &text("real/r.txt", "ready\\n"))
        .await
        .unwrap();
    assert_eq!(o["matches"], json!(true));
}

#[tokio::test]
async fn a_fifo_is_the_wrong_type_and_never_hangs() {
    let d = tempfile::tempdir().unwrap();
    let fifo = d.path().join("pipe");
    rustix::fs::mknodat(
        rustix::fs::CWD,
        &fifo,
        rustix::fs::FileType::Fifo,
        rustix::fs::Mode::from_raw_mode(0o644),
        0,
    )
    .unwrap();
    let t = std::time::Instant::now();
    let o = observe(d.path(), &text("pipe", "x")).await.unwrap();
    assert_eq!(reason(&o), "wrong_type");
    let o = observe(
        d.path(),
        r#"{ file = { path = "pipe", postcondition = { json_object = { expected = {} } } } }"#,
    )
    .await
    .unwrap();
    assert_eq!(reason(&o), "wrong_type");
    assert!(t.elapsed() < std::time::Duration::from_secs(2));
}

fn dir(path: &str, rest: &str) -> String {
    format!(r#"{{ file = {{ path = "{path}", postcondition = {{ directory = {{ {rest} }} }} }} }}"#)
}

#[tokio::test]
async fn directory_children() {
    let d = tempfile::tempdir().unwrap();
    let root = d.path();
    std::fs::create_dir_all(root.join("out/sub")).unwrap();
    std::fs::write(root.join(format!("out/{CANARY}.txt")), "x").unwrap();
    std::fs::write(root.join("out/b.txt"), "x").unwrap();
    let want = format!(r#"required_children = ["{CANARY}.txt", "sub"]"#);
    let o = observe(root, &dir("out", &want)).await.unwrap();
    assert_eq!(o["matches"], json!(true), "{o:?}");
    assert_eq!(o["required_child_count"], json!(2));
    values_free(&o);
    // Exact set: b.txt is not listed.
    let o = observe(root, &dir("out", &format!("{want}, exact_children = true")))
        .await
        .unwrap();
    assert_eq!(reason(&o), "unexpected_children");
    assert_eq!(o["only_required_children"], json!(false));
    values_free(&o);
    std::fs::remove_file(root.join("out/b.txt")).unwrap();
    let o = observe(root, &dir("out", &format!("{want}, exact_children = true")))
        .await
        .unwrap();
    assert_eq!(o["matches"], json!(true), "{o:?}");
    // A missing child; a child present as a symlink still counts as an entry name.
    let o = observe(root, &dir("out", r#"required_children = ["nope"]"#))
        .await
        .unwrap();
    assert_eq!(reason(&o), "required_children_missing");
    // Empty: a hidden file counts.
    std::fs::create_dir(root.join("empty")).unwrap();
    let o = observe(root, &dir("empty", "exact_empty = true"))
        .await
        .unwrap();
    assert_eq!(o["matches"], json!(true));
    assert_eq!(o["empty"], json!(true));
    std::fs::write(root.join("empty/.hidden"), "").unwrap();
    let o = observe(root, &dir("empty", "exact_empty = true"))
        .await
        .unwrap();
    assert_eq!(reason(&o), "not_empty");
    // Missing, wrong type, and a symlinked directory (unsafe).
    let o = observe(root, &dir("gone", "")).await.unwrap();
    assert_eq!(reason(&o), "missing");
    let o = observe(root, &dir(&format!("out/{CANARY}.txt"), ""))
        .await
        .unwrap();
    assert_eq!(reason(&o), "wrong_type");
    symlink("out", root.join("outlink")).unwrap();
    let e = observe(root, &dir("outlink", "")).await.unwrap_err();
    assert!(
        matches!(&e, ProbeError::Postcondition { reason, .. } if reason == "unsafe_path"),
        "{e:?}"
    );
    // A directory with no requirement only has to exist.
    let o = observe(root, &dir("out", "")).await.unwrap();
    assert_eq!(o["matches"], json!(true));
}

fn jobj(path: &str, expected: &str, exact: bool) -> String {
    format!(
        r#"{{ file = {{ path = "{path}", postcondition = {{ json_object = {{ expected = {expected}, exact_keys = {exact} }} }} }} }}"#
    )
}

#[tokio::test]
async fn json_objects() {
    let d = tempfile::tempdir().unwrap();
    let root = d.path();
    let put = |body: &[u8]| std::fs::write(root.join("s.json"), body).unwrap();
    let want = format!(r#"{{ {CANARY} = "sent-{CANARY}", n = 1, nested = {{ a = [1, 2] }} }}"#);
    put(
        format!(r#"{{"{CANARY}":"sent-{CANARY}","n":1.0,"nested":{{"a":[1,2.0]}},"extra":true}}"#)
            .as_bytes(),
    );
    let o = observe(root, &jobj("s.json", &want, false)).await.unwrap();
    assert_eq!(o["matches"], json!(true), "{o:?}");
    values_free(&o);
    // Exact keys: "extra" is one too many.
    let o = observe(root, &jobj("s.json", &want, true)).await.unwrap();
    assert_eq!(reason(&o), "key_mismatch");
    assert_eq!(o["key_count_matches"], json!(false));
    values_free(&o);
    // Nested objects compare whole: an extra nested key is a mismatch.
    put(format!(r#"{{"{CANARY}":"sent-{CANARY}","n":1,"nested":{{"a":[1,2],"b":0}}}}"#).as_bytes());
    let o = observe(root, &jobj("s.json", &want, true)).await.unwrap();
    assert_eq!(reason(&o), "key_mismatch");
    assert_eq!(o["expected_values_match"], json!(false));
    // Booleans are not numbers (either way).
    for (body, expected) in [
        (r#"{"v":true}"#, "{ v = 1 }"),
        (r#"{"v":1}"#, "{ v = true }"),
        (r#"{"v":[true]}"#, "{ v = [1] }"),
    ] {
        put(body.as_bytes());
        let o = observe(root, &jobj("s.json", expected, false))
            .await
            .unwrap();
        assert_eq!(reason(&o), "key_mismatch", "{body}");
    }
    // Attack: a duplicate key whose last value matches (a reader keeping the last one
    // would say yes). Honest twin without the duplicate.
    put(br#"{"status":"failed","status":"sent"}"#);
    let o = observe(root, &jobj("s.json", r#"{ status = "sent" }"#, false))
        .await
        .unwrap();
    assert_eq!(reason(&o), "duplicate_key");
    assert_eq!(o["valid_utf8"], json!(true));
    put(br#"{"status":"sent"}"#);
    let o = observe(root, &jobj("s.json", r#"{ status = "sent" }"#, false))
        .await
        .unwrap();
    assert_eq!(o["matches"], json!(true));
    // A duplicate deeper down is refused too.
    put(br#"{"status":"sent","x":{"a":1,"a":2}}"#);
    let o = observe(root, &jobj("s.json", r#"{ status = "sent" }"#, false))
        .await
        .unwrap();
    assert_eq!(reason(&o), "duplicate_key");
    // Not UTF-8, not JSON, NaN, a BOM, not an object.
    for (body, code) in [
        (&b"{\"a\":\"\xff\"}"[..], "invalid_utf8"),
        (b"{\"a\":", "invalid_json"),
        (b"{\"a\": NaN}", "invalid_json"),
        (b"\xef\xbb\xbf{\"status\":\"sent\"}", "invalid_json"),
        (b"[{\"status\":\"sent\"}]", "wrong_top_level"),
        (b"\"sent\"", "wrong_top_level"),
    ] {
        put(body);
        let o = observe(root, &jobj("s.json", r#"{ status = "sent" }"#, false))
            .await
            .unwrap();
        assert_eq!(reason(&o), code, "{:?}", String::from_utf8_lossy(body));
        assert_eq!(o["matches"], json!(false));
    }
    // Over the size limit: not observed (untrusted), never a match.
    put(br#"{"status":"sent","pad":"0123456789"}"#);
    let s = r#"{ file = { path = "s.json", max_bytes = 16, postcondition = { json_object = { expected = { status = "sent" } } } } }"#;
    let e = observe(root, s).await.unwrap_err();
    assert!(
        matches!(&e, ProbeError::Postcondition { reason, .. } if reason == "oversize"),
        "{e:?}"
    );
}

#[tokio::test]
async fn refused_before_anything_is_read() {
    let bad = [
        text("../x", "a"),
        text("/etc/passwd", "a"),
        text("a//b", "a"),
        text("./a", "a"),
        text("a\\\\b", "a"),
        text(" a", "a"),
        dir("d", r#"required_children = ["a/b"]"#),
        dir("d", r#"required_children = [".."]"#),
        dir("d", r#"required_children = ["a", "a"]"#),
        dir("d", r#"required_children = ["a"], exact_empty = true"#),
        dir("d", "exact_children = true"),
        r#"{ file = { path = "a", text = true, postcondition = { text_file = { expected_text = "a" } } } }"#.to_string(),
        r#"{ file = { path = "a", postcondition = { json_object = { expected = { " " = 1 } } } } }"#.to_string(),
    ];
    for s in &bad {
        let source: Source = src(s);
        assert!(source.validate().is_err(), "{s}");
        assert!(source.check_fields().is_err(), "{s}");
    }
}
