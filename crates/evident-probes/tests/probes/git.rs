use std::path::Path;
use std::process::Command;

use evident_probes::{Escape, ProbeError};
use serde_json::json;
use sha2::{Digest, Sha256};

use crate::{ctx, err, ok, run, src};

fn git(dir: &Path, args: &[&str]) -> String {
    let out = Command::new("git")
        .args([
            "-c",
            "user.name=t",
            "-c",
            "user.email=t@example.com",
            "-c",
            "commit.gpgsign=false",
        ])
        .args(args)
        .current_dir(dir)
        .output()
        .expect("git");
    assert!(
        out.status.success(),
        "git {args:?}: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    String::from_utf8(out.stdout).unwrap().trim().to_string()
}

fn repo(root: &Path) -> (String, String) {
    let r = root.join("repo");
    std::fs::create_dir(&r).unwrap();
    git(&r, &["init", "-q", "-b", "main"]);
    std::fs::write(r.join("zip.txt"), "94107\n").unwrap();
    git(&r, &["add", "zip.txt"]);
    git(&r, &["commit", "-q", "-m", "first"]);
    let first = git(&r, &["rev-parse", "HEAD"]);
    std::fs::write(r.join("zip.txt"), "10001\n").unwrap();
    git(&r, &["commit", "-q", "-am", "second"]);
    git(&r, &["tag", "v1"]);
    let second = git(&r, &["rev-parse", "HEAD"]);
    (first, second)
}

#[tokio::test]
async fn git_commit_ref_file_clean() {
    let d = tempfile::tempdir().unwrap();
    let (first, second) = repo(d.path());
    let c = ctx(d.path());
    let o = ok(run(&src(r#"{ git = { repo = "repo" } }"#), &c, 10.0).await);
    assert_eq!(
        serde_json::Value::Object(o),
        json!({"commit_exists": true, "commit": second, "clean": true})
    );
    let o = ok(run(&src(r#"{ git = { repo = "repo", rev = "v1" } }"#), &c, 10.0).await);
    assert_eq!(o["commit"], json!(second));
    let s = src(&format!(
        r#"{{ git = {{ repo = "repo", rev = "{first}", file = "zip.txt" }} }}"#
    ));
    let o = ok(run(&s, &c, 10.0).await);
    assert_eq!(o["commit_exists"], json!(true));
    assert_eq!(o["file_exists"], json!(true));
    assert_eq!(
        o["file_sha256"],
        json!(hex::encode(Sha256::digest(b"94107\n")))
    );
    // The same file at HEAD differs: the value that contradicts the first commit's.
    let o = ok(run(
        &src(r#"{ git = { repo = "repo", file = "zip.txt" } }"#),
        &c,
        10.0,
    )
    .await);
    assert_eq!(
        o["file_sha256"],
        json!(hex::encode(Sha256::digest(b"10001\n")))
    );
    let o = ok(run(
        &src(r#"{ git = { repo = "repo", file = "gone.txt" } }"#),
        &c,
        10.0,
    )
    .await);
    assert_eq!(o["file_exists"], json!(false));
    // A commit that does not exist.
    let o = ok(run(
        &src(r#"{ git = { repo = "repo", rev = "0123456789abcdef0123456789abcdef01234567" } }"#),
        &c,
        10.0,
    )
    .await);
    assert_eq!(
        (o["commit_exists"].clone(), o["commit"].clone()),
        (json!(false), json!(null))
    );
    let o = ok(run(
        &src(r#"{ git = { repo = "repo", rev = "no-such-branch" } }"#),
        &c,
        10.0,
    )
    .await);
    assert_eq!(o["commit_exists"], json!(false));
    // A dirty work tree; observing does not change it.
    std::fs::write(d.path().join("repo/zip.txt"), "dirty\n").unwrap();
    let o = ok(run(&src(r#"{ git = { repo = "repo" } }"#), &c, 10.0).await);
    assert_eq!(o["clean"], json!(false));
    std::fs::write(d.path().join("repo/untracked.txt"), "x").unwrap();
    git(&d.path().join("repo"), &["checkout", "-q", "zip.txt"]);
    let o = ok(run(&src(r#"{ git = { repo = "repo" } }"#), &c, 10.0).await);
    assert_eq!(
        o["clean"],
        json!(false),
        "untracked files make the tree unclean"
    );
}

#[tokio::test]
async fn git_failures() {
    let d = tempfile::tempdir().unwrap();
    repo(d.path());
    std::fs::create_dir(d.path().join("plain")).unwrap();
    let c = ctx(d.path());
    let e = err(run(&src(r#"{ git = { repo = "plain" } }"#), &c, 10.0).await);
    assert!(matches!(e, ProbeError::Git { .. }), "{e}");
    assert!(e.to_string().contains("not a git repository"), "{e}");
    let e = err(run(
        &src(r#"{ git = { repo = "repo", rev = "--output=/tmp/x" } }"#),
        &c,
        10.0,
    )
    .await);
    assert!(matches!(e, ProbeError::InvalidSpec { .. }), "{e}");
    let e = err(run(&src(r#"{ git = { repo = "../" } }"#), &c, 10.0).await);
    assert!(
        matches!(
            e,
            ProbeError::PathEscape {
                via: Escape::DotDot,
                ..
            }
        ),
        "{e}"
    );
    let e = err(run(
        &src(r#"{ git = { repo = "repo", file = "../x" } }"#),
        &c,
        10.0,
    )
    .await);
    assert!(
        matches!(
            e,
            ProbeError::PathEscape {
                via: Escape::DotDot,
                ..
            }
        ),
        "{e}"
    );
    let e = err(run(&src(r#"{ git = { repo = "missing" } }"#), &c, 10.0).await);
    assert!(matches!(e, ProbeError::Io { .. }), "{e}");
    let e = err(run(
        &src(r#"{ git = { repo = "repo", file = "zip.txt", max_bytes = 2 } }"#),
        &c,
        10.0,
    )
    .await);
    assert!(matches!(e, ProbeError::Oversize { .. }), "{e}");
}

/// Replace refs (`git replace`) let whoever controls the repository substitute any
/// object: the committed file would read as another blob and its digest would match an
/// expectation the commit does not meet. The probe reads the objects as committed.
#[tokio::test]
async fn replace_refs_cannot_forge_a_committed_file() {
    let d = tempfile::tempdir().unwrap();
    let (_, _) = repo(d.path());
    let r = d.path().join("repo");
    let real = git(&r, &["rev-parse", "HEAD:zip.txt"]);
    std::fs::write(d.path().join("fake"), "94107\n").unwrap();
    let fake = git(&r, &["hash-object", "-w", "../fake"]);
    git(&r, &["replace", &real, &fake]);
    // Plain git now shows the forged content.
    assert_eq!(git(&r, &["cat-file", "blob", "HEAD:zip.txt"]), "94107");
    let o = ok(run(
        &src(r#"{ git = { repo = "repo", file = "zip.txt" } }"#),
        &ctx(d.path()),
        10.0,
    )
    .await);
    assert_eq!(
        o["file_sha256"],
        json!(hex::encode(Sha256::digest(b"10001\n")))
    );
}
