use std::os::unix::fs::symlink;

use evident_probes::{Escape, ProbeError};
use serde_json::json;
use sha2::{Digest, Sha256};

use crate::{ctx, err, ok, run, src};

fn sha(b: &[u8]) -> String {
    hex::encode(Sha256::digest(b))
}

#[tokio::test]
async fn file_match_text_contains_pointers() {
    let d = tempfile::tempdir().unwrap();
    let body = br#"{"zip":"94107","n":3,"tags":["a","b"]}"#;
    std::fs::create_dir(d.path().join("conf")).unwrap();
    std::fs::write(d.path().join("conf/app.json"), body).unwrap();
    let s = src(
        r#"{ file = { path = "conf/app.json", text = true, contains = ["94107", "nope"], pointers = { zip = "/zip", second = "/tags/1", gone = "/x" } } }"#,
    );
    let o = ok(run(&s, &ctx(d.path()), 5.0).await);
    assert_eq!(o["exists"], json!(true));
    assert_eq!(o["kind"], json!("file"));
    assert_eq!(o["size"], json!(body.len()));
    assert_eq!(o["sha256"], json!(sha(body)));
    assert_eq!(o["text"], json!(std::str::from_utf8(body).unwrap()));
    assert_eq!(o["contains"], json!({"94107": true, "nope": false}));
    assert_eq!(o["json"], json!({"zip": "94107", "second": "b"}));
}

#[tokio::test]
async fn changed_file_contradicts_recorded_digest() {
    let d = tempfile::tempdir().unwrap();
    std::fs::write(d.path().join("out.txt"), "version 2\n").unwrap();
    let s = src(r#"{ file = { path = "./out.txt" } }"#);
    let o = ok(run(&s, &ctx(d.path()), 5.0).await);
    assert_ne!(o["sha256"], json!(sha(b"version 1\n")));
    assert_eq!(o["sha256"], json!(sha(b"version 2\n")));
    assert!(o.get("text").is_none(), "text is opt-in");
}

#[tokio::test]
async fn absence_goal() {
    let d = tempfile::tempdir().unwrap();
    std::fs::write(d.path().join("plain"), "x").unwrap();
    for path in ["app.lock", "deep/er/app.lock", "plain/child"] {
        let s = src(&format!(r#"{{ file = {{ path = "{path}" }} }}"#));
        let o = ok(run(&s, &ctx(d.path()), 5.0).await);
        assert_eq!(
            o,
            json!({"exists": false}).as_object().unwrap().clone(),
            "{path}"
        );
    }
}

#[tokio::test]
async fn dotdot_and_absolute_refused() {
    let d = tempfile::tempdir().unwrap();
    let inner = d.path().join("root");
    std::fs::create_dir(&inner).unwrap();
    std::fs::write(d.path().join("outside.txt"), "secret").unwrap();
    let c = ctx(&inner);
    let e = err(run(&src(r#"{ file = { path = "../outside.txt" } }"#), &c, 5.0).await);
    assert_eq!(
        e,
        ProbeError::PathEscape {
            path: "../outside.txt".into(),
            via: Escape::DotDot
        }
    );
    // Even a `..` that would come back inside is refused: the rule is simple.
    let e = err(run(&src(r#"{ file = { path = "a/../b" } }"#), &c, 5.0).await);
    assert!(matches!(
        e,
        ProbeError::PathEscape {
            via: Escape::DotDot,
            ..
        }
    ));
    let e = err(run(&src(r#"{ file = { path = "/etc/hostname" } }"#), &c, 5.0).await);
    assert!(matches!(
        e,
        ProbeError::PathEscape {
            via: Escape::Absolute,
            ..
        }
    ));
}

#[tokio::test]
async fn symlink_escapes_refused_inner_links_followed() {
    let d = tempfile::tempdir().unwrap();
    let inner = d.path().join("root");
    std::fs::create_dir(&inner).unwrap();
    std::fs::write(d.path().join("outside.txt"), "secret").unwrap();
    std::fs::write(inner.join("real.txt"), "inside").unwrap();
    symlink("../outside.txt", inner.join("rel_escape")).unwrap();
    symlink(d.path().join("outside.txt"), inner.join("abs_escape")).unwrap();
    symlink("..", inner.join("up")).unwrap();
    symlink("real.txt", inner.join("good")).unwrap();
    symlink("missing.txt", inner.join("dangling")).unwrap();
    let c = ctx(&inner);
    for path in ["rel_escape", "abs_escape", "up/outside.txt"] {
        let e = err(run(
            &src(&format!(r#"{{ file = {{ path = "{path}" }} }}"#)),
            &c,
            5.0,
        )
        .await);
        assert_eq!(
            e,
            ProbeError::PathEscape {
                path: path.into(),
                via: Escape::Symlink
            },
            "{path}"
        );
    }
    let o = ok(run(
        &src(r#"{ file = { path = "good", text = true } }"#),
        &c,
        5.0,
    )
    .await);
    assert_eq!(o["text"], json!("inside"));
    let e = err(run(&src(r#"{ file = { path = "dangling" } }"#), &c, 5.0).await);
    assert_eq!(
        e,
        ProbeError::DanglingSymlink {
            path: "dangling".into()
        }
    );
}

#[tokio::test]
async fn size_and_format_limits() {
    let d = tempfile::tempdir().unwrap();
    std::fs::write(d.path().join("big.bin"), vec![0u8; 4096]).unwrap();
    std::fs::write(d.path().join("bad.json"), "{not json").unwrap();
    std::fs::write(d.path().join("latin1.txt"), [0xe9u8, 0x74, 0xe9]).unwrap();
    std::fs::create_dir(d.path().join("dir")).unwrap();
    let c = ctx(d.path());
    let e = err(run(
        &src(r#"{ file = { path = "big.bin", max_bytes = 1000 } }"#),
        &c,
        5.0,
    )
    .await);
    assert!(matches!(e, ProbeError::Oversize { limit: 1000, .. }), "{e}");
    let e = err(run(
        &src(r#"{ file = { path = "bad.json", pointers = { a = "/a" } } }"#),
        &c,
        5.0,
    )
    .await);
    assert!(matches!(e, ProbeError::Format { .. }), "{e}");
    let e = err(run(
        &src(r#"{ file = { path = "latin1.txt", text = true } }"#),
        &c,
        5.0,
    )
    .await);
    assert!(matches!(e, ProbeError::Format { .. }), "{e}");
    let o = ok(run(&src(r#"{ file = { path = "dir" } }"#), &c, 5.0).await);
    assert_eq!(o["kind"], json!("dir"));
    let e = err(run(&src(r#"{ file = { path = "dir", text = true } }"#), &c, 5.0).await);
    assert!(matches!(e, ProbeError::Io { .. }), "{e}");
}

/// JSON with a duplicate key is ambiguous: `serde_json` keeps the last value, other
/// readers keep the first. An observation must not pick one silently (the file could
/// then satisfy an expectation that the application reading it does not meet).
#[tokio::test]
async fn duplicate_json_keys_are_not_an_observation() {
    let d = tempfile::tempdir().unwrap();
    std::fs::write(
        d.path().join("status.json"),
        br#"{"deploy": {"version": "1.4.1", "version": "1.4.2"}}"#,
    )
    .unwrap();
    let s = src(r#"{ file = { path = "status.json", pointers = { v = "/deploy/version" } } }"#);
    let e = err(run(&s, &ctx(d.path()), 5.0).await);
    assert!(
        matches!(e, ProbeError::Format { .. }) && e.to_string().contains("duplicate key"),
        "{e}"
    );
}
