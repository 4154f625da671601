//! `github_pr` through the real `evident gate` binary against a fake GitHub API served
//! by the test on 127.0.0.1: every status of the reference's fail-closed mapping, each
//! mismatch, the full match, and that the token appears in no output (stdout, stderr,
//! `--json`, JUnit, Markdown) nor in the ledger. Each soundness case has its attack and
//! its honest twin. Every run must make exactly one GET (no retry, no redirect followed).

use serde_json::Value;
use std::collections::HashMap;
use std::io::{Read, Write};
use std::net::{TcpListener, TcpStream};
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use crate::support::{evident, evident_in};

const TOKEN: &str = "ghp_fakeTok3n_5e1f0c9a7b3d";
const HEAD: &str = "a1b2c3d4e5f60718293a4b5c6d7e8f9012345678";
const OTHER: &str = "ffffffffffffffffffffffffffffffffffffffff";
const MERGE: &str = "0123456789abcdef0123456789abcdef01234567";
const REPO_ID: u64 = 918_273_645;
const HEAD_REPO_ID: u64 = 564_738_291;

/// One request the fake API received.
#[derive(Debug, Clone)]
struct Hit {
    method: String,
    path: String,
    headers: HashMap<String, String>,
}

struct Fake {
    port: u16,
    hits: Arc<Mutex<Vec<Hit>>>,
}

impl Fake {
    fn start() -> Fake {
        let listener = TcpListener::bind("127.0.0.1:0").unwrap();
        let port = listener.local_addr().unwrap().port();
        let hits = Arc::new(Mutex::new(Vec::new()));
        let h = hits.clone();
        std::thread::spawn(move || {
            for sock in listener.incoming() {
                let Ok(sock) = sock else { return };
                let h = h.clone();
                std::thread::spawn(move || serve(sock, port, &h));
            }
        });
        Fake { port, hits }
    }

    fn url(&self) -> String {
        format!("http://127.0.0.1:{}", self.port)
    }

    fn hits_for(&self, n: u64) -> Vec<Hit> {
        let path = format!("/repos/octo/widgets/pulls/{n}");
        self.hits
            .lock()
            .unwrap()
            .iter()
            .filter(|h| h.path.starts_with(&path) && h.path[path.len()..].is_empty())
            .cloned()
            .collect()
    }
}

fn http_date(t: time::OffsetDateTime) -> String {
    let f = time::macros::format_description!(
        "[weekday repr:short], [day] [month repr:short] [year] [hour]:[minute]:[second] GMT"
    );
    t.to_offset(time::UtcOffset::UTC).format(f).unwrap()
}

/// A pull request body as GitHub shapes it (the fields the probe reads, and some more).
#[allow(clippy::too_many_arguments)]
fn pr(
    number: u64,
    state: &str,
    merged: bool,
    head: &str,
    head_repo: Option<u64>,
    base_ref: &str,
    repo_id: u64,
    merge: &str,
) -> String {
    let head_repo = head_repo.map_or("null".to_string(), |id| {
        format!(r#"{{"id":{id},"name":"widgets"}}"#)
    });
    format!(
        r#"{{"url":"https://api.github.com/repos/octo/widgets/pulls/{number}","id":77,"number":{number},"state":"{state}","title":"t","user":{{"login":"someone"}},"merged":{merged},"merge_commit_sha":"{merge}","head":{{"ref":"feature","sha":"{head}","repo":{head_repo}}},"base":{{"ref":"{base_ref}","sha":"{OTHER}","repo":{{"id":{repo_id},"full_name":"octo/widgets"}}}}}}"#
    )
}

fn good(number: u64) -> String {
    pr(
        number,
        "open",
        false,
        HEAD,
        Some(HEAD_REPO_ID),
        "main",
        REPO_ID,
        MERGE,
    )
}

/// The fake API's answer for pull request `n` (the scenario is the number).
fn answer(n: u64, port: u16) -> (String, Vec<String>, Vec<u8>) {
    let ok = |body: String| ("200 OK".to_string(), vec![], body.into_bytes());
    let status = |s: &str, extra: Vec<String>| {
        // Error bodies echo the token, as a careless proxy might: it must not show.
        (
            s.to_string(),
            extra,
            format!(r#"{{"message":"no","token":"{TOKEN}"}}"#).into_bytes(),
        )
    };
    match n {
        1 | 31 | 35 | 36 => ok(good(n)),
        2 => status("401 Unauthorized", vec![]),
        3 => status("403 Forbidden", vec![]),
        4 => status("403 Forbidden", vec!["X-RateLimit-Remaining: 0".into()]),
        5 => status("403 Forbidden", vec!["Retry-After: 30".into()]),
        6 => status("404 Not Found", vec![]),
        7 => status("429 Too Many Requests", vec![]),
        // Attack: a redirect to the matching pull request.
        8 => status(
            "302 Found",
            vec![format!(
                "Location: http://127.0.0.1:{port}/repos/octo/widgets/pulls/1"
            )],
        ),
        9 => status("500 Internal Server Error", vec![]),
        10 => status("503 Service Unavailable", vec![]),
        11 => {
            let pad = "x".repeat(2 * 1024 * 1024);
            let body = good(n).replacen("\"title\":\"t\"", &format!("\"title\":\"{pad}\""), 1);
            ok(body)
        }
        12 => ok(format!("{{\"number\":{n}, \"state\": ")),
        // Attack: a duplicate key whose last value is the declared state.
        13 => ok(good(n).replacen(
            "\"state\":\"open\"",
            "\"state\":\"closed\",\"state\":\"open\"",
            1,
        )),
        14 => ok(good(n)),
        15 => ok(pr(
            n,
            "open",
            true,
            HEAD,
            Some(HEAD_REPO_ID),
            "main",
            REPO_ID,
            MERGE,
        )),
        16 => ok(pr(
            n,
            "open",
            false,
            HEAD,
            Some(HEAD_REPO_ID),
            "main",
            1234,
            MERGE,
        )),
        17 => ok(good(n).replacen(&format!("\"number\":{n}"), "\"number\":99", 1)),
        18 => ok(pr(
            n,
            "closed",
            false,
            HEAD,
            Some(HEAD_REPO_ID),
            "main",
            REPO_ID,
            MERGE,
        )),
        19 => ok(pr(
            n,
            "open",
            false,
            OTHER,
            Some(HEAD_REPO_ID),
            "main",
            REPO_ID,
            MERGE,
        )),
        20 => ok(pr(
            n,
            "open",
            false,
            HEAD,
            Some(3003),
            "main",
            REPO_ID,
            MERGE,
        )),
        21 => ok(pr(
            n,
            "open",
            false,
            HEAD,
            Some(HEAD_REPO_ID),
            "develop",
            REPO_ID,
            MERGE,
        )),
        22 => ok(pr(
            n,
            "closed",
            true,
            HEAD,
            Some(HEAD_REPO_ID),
            "main",
            REPO_ID,
            OTHER,
        )),
        23 | 32 => ok(pr(
            n,
            "closed",
            true,
            HEAD,
            Some(HEAD_REPO_ID),
            "main",
            REPO_ID,
            MERGE,
        )),
        24 => ("201 Created".into(), vec![], good(n).into_bytes()),
        26 => ok(format!(r#"{{"number":{n},"state":"open","merged":false}}"#)),
        30 => ok(pr(
            n,
            "closed",
            false,
            HEAD,
            Some(HEAD_REPO_ID),
            "main",
            REPO_ID,
            MERGE,
        )),
        33 => ok(pr(n, "open", false, HEAD, None, "main", REPO_ID, MERGE)),
        _ => status("418 I'm a teapot", vec![]),
    }
}

fn serve(mut sock: TcpStream, port: u16, hits: &Mutex<Vec<Hit>>) {
    sock.set_read_timeout(Some(Duration::from_secs(5))).ok();
    let mut buf = Vec::new();
    let mut chunk = [0u8; 4096];
    while !buf.windows(4).any(|w| w == b"\r\n\r\n") {
        match sock.read(&mut chunk) {
            Ok(0) | Err(_) => return,
            Ok(n) => buf.extend_from_slice(&chunk[..n]),
        }
        if buf.len() > 64 * 1024 {
            return;
        }
    }
    let head = String::from_utf8_lossy(&buf).to_string();
    let mut lines = head.split("\r\n");
    let mut first = lines.next().unwrap_or("").split(' ');
    let method = first.next().unwrap_or("").to_string();
    let path = first.next().unwrap_or("").to_string();
    let headers: HashMap<String, String> = lines
        .filter_map(|l| {
            let (k, v) = l.split_once(':')?;
            Some((k.trim().to_ascii_lowercase(), v.trim().to_string()))
        })
        .collect();
    hits.lock().unwrap().push(Hit {
        method,
        path: path.clone(),
        headers: headers.clone(),
    });
    let n: u64 = path
        .rsplit('/')
        .next()
        .and_then(|s| s.parse().ok())
        .unwrap_or(0);
    if n == 25 {
        return; // The connection drops without an answer.
    }
    if n == 29 {
        std::thread::sleep(Duration::from_secs(5));
    }
    let authorized =
        headers.get("authorization").map(String::as_str) == Some(&*format!("Bearer {TOKEN}"));
    let (status, extra, body) = if authorized {
        answer(n, port)
    } else {
        ("401 Unauthorized".into(), vec![], b"{}".to_vec())
    };
    let date = if n == 14 {
        // A replayed answer: its Date is ten minutes old.
        http_date(time::OffsetDateTime::now_utc() - time::Duration::minutes(10))
    } else {
        http_date(time::OffsetDateTime::now_utc())
    };
    let date = match n {
        // Two dates, or one that is not a date: a malformed answer.
        35 => format!("{date}\r\nDate: {date}"),
        36 => "yesterday".to_string(),
        _ => date,
    };
    let mut out = format!(
        "HTTP/1.1 {status}\r\nContent-Type: application/json\r\nDate: {date}\r\nX-Echo: {TOKEN}\r\nContent-Length: {}\r\nConnection: close\r\n",
        body.len()
    );
    for h in extra {
        out.push_str(&h);
        out.push_str("\r\n");
    }
    out.push_str("\r\n");
    let _ = sock.write_all(out.as_bytes());
    let _ = sock.write_all(&body);
}

struct Case<'a> {
    n: u64,
    /// Extra lines of the `[check.source.github_pr]` table, replacing defaults by key.
    fields: &'a [(&'a str, &'a str)],
}

fn contract(dir: &Path, api: &str, case: &Case<'_>, private: bool) -> PathBuf {
    let mut fields: Vec<(String, String)> = vec![
        ("repository".into(), "\"octo/widgets\"".into()),
        ("repository_id".into(), REPO_ID.to_string()),
        ("pull_number".into(), case.n.to_string()),
        ("expected_head_oid".into(), format!("\"{HEAD}\"")),
        ("expected_base_ref".into(), "\"main\"".into()),
        ("expected_state".into(), "\"open\"".into()),
        ("token_env".into(), "\"GH_TOKEN\"".into()),
        ("api_url".into(), format!("\"{api}\"")),
    ];
    for (k, v) in case.fields {
        match fields.iter_mut().find(|(f, _)| f == k) {
            Some(f) => f.1 = v.to_string(),
            None => fields.push((k.to_string(), v.to_string())),
        }
    }
    let mut text = String::from(
        "[policy]\nrequires = [\"state_readback\"]\n\n[[check]]\nid = \"pr\"\ncheck_type = \"state_readback\"\ncovers = { kind = \"pull_request\" }\n",
    );
    if private {
        text.push_str("private = true\n");
    }
    text.push_str("[check.source.github_pr]\n");
    for (k, v) in fields {
        text.push_str(&format!("{k} = {v}\n"));
    }
    let p = dir.join(format!("contract-{}.toml", case.n));
    std::fs::write(&p, text).unwrap();
    p
}

fn claim(dir: &Path) -> PathBuf {
    let at = time::OffsetDateTime::now_utc() - time::Duration::seconds(30);
    let at = at
        .format(&time::format_description::well_known::Rfc3339)
        .unwrap();
    let p = dir.join("claim.json");
    std::fs::write(
        &p,
        format!(
            r#"{{"spec_version": "0.1", "task": {{"id": "open-pr"}}, "claimed_outcome": "the pull request is open at the pushed head", "mutations": [{{"id": "m1", "kind": "pull_request", "target": "pr", "at": "{at}"}}]}}"#
        ),
    )
    .unwrap();
    p
}

/// What one gate run produced, every output read back.
struct Run {
    code: i32,
    doc: Value,
    /// stdout, stderr, JUnit, Markdown and the ledger's files, concatenated.
    everything: String,
}

impl Run {
    fn error(&self) -> String {
        self.doc["gate"]["checks"][0]["error"]
            .as_str()
            .unwrap_or_default()
            .to_string()
    }
    fn observed_reason(&self) -> String {
        self.doc["gate"]["checks"][0]["observed"]["reason"]
            .as_str()
            .unwrap_or_default()
            .to_string()
    }
}

fn gate(tmp: &Path, contract: &Path, token: Option<&str>) -> Run {
    let ledger = tmp.join("ledger");
    std::fs::create_dir_all(&ledger).unwrap();
    let junit = tmp.join("junit.xml");
    let md = tmp.join("summary.md");
    let mut cmd = evident_in(&ledger);
    // A proxy would break every request: none is used.
    cmd.env("HTTP_PROXY", "http://127.0.0.1:9")
        .env("HTTPS_PROXY", "http://127.0.0.1:9")
        .env("ALL_PROXY", "http://127.0.0.1:9")
        .env_remove("GH_TOKEN")
        .arg("gate")
        .arg(contract)
        .arg(claim(tmp))
        .arg("--json")
        .arg("--junit")
        .arg(&junit)
        .arg("--markdown")
        .arg(&md);
    if let Some(t) = token {
        cmd.env("GH_TOKEN", t);
    }
    let out = cmd.output().unwrap();
    let stdout = String::from_utf8_lossy(&out.stdout).into_owned();
    let stderr = String::from_utf8_lossy(&out.stderr).into_owned();
    let doc: Value =
        serde_json::from_str(&stdout).unwrap_or_else(|e| panic!("{e}: {stdout}\n{stderr}"));
    let mut everything = format!("{stdout}\n{stderr}\n");
    for f in [&junit, &md] {
        everything.push_str(&std::fs::read_to_string(f).unwrap_or_default());
    }
    for e in std::fs::read_dir(&ledger).unwrap() {
        let bytes = std::fs::read(e.unwrap().path()).unwrap();
        everything.push_str(&String::from_utf8_lossy(&bytes));
    }
    assert!(
        !everything.contains(TOKEN) && !everything.contains("fakeTok3n"),
        "the token appears in an output or the ledger:\n{stdout}\n{stderr}"
    );
    Run {
        code: out.status.code().unwrap_or(-1),
        doc,
        everything,
    }
}

/// What a case must come to.
enum Want {
    Verified,
    /// Refuted, with the first mismatch's reason.
    Refuted(&'static str),
    /// Unverified, with the indeterminate reason.
    Unverified(&'static str),
}

fn check_case(fake: &Fake, tmp: &Path, case: Case<'_>, want: Want) -> Run {
    let c = contract(tmp, &fake.url(), &case, false);
    let run = gate(tmp, &c, Some(TOKEN));
    let n = case.n;
    let state = run.doc["verdict"]["state"]
        .as_str()
        .unwrap_or_default()
        .to_string();
    match want {
        Want::Verified => assert_eq!(
            (run.code, state.as_str()),
            (0, "verified"),
            "case {n}: {}",
            run.doc
        ),
        Want::Refuted(r) => {
            assert_eq!(
                (run.code, state.as_str()),
                (1, "refuted"),
                "case {n}: {}",
                run.doc
            );
            assert_eq!(run.observed_reason(), r, "case {n}");
            let flag = r.replace("_mismatch", "_matches");
            assert_eq!(
                run.doc["gate"]["checks"][0]["observed"][&flag], false,
                "case {n}"
            );
        }
        Want::Unverified(r) => {
            assert_eq!(
                (run.code, state.as_str()),
                (3, "unverified"),
                "case {n}: {}",
                run.doc
            );
            assert!(
                run.error().contains(&format!("({r})")),
                "case {n}: {}",
                run.error()
            );
            assert_eq!(
                run.doc["gate"]["checks"][0]["observed"],
                Value::Null,
                "case {n}"
            );
        }
    }
    // Exactly one GET per run, with the token and the API version; nothing else asked.
    let hits = fake.hits_for(n);
    assert_eq!(hits.len(), 1, "case {n}: {hits:?}");
    let h = &hits[0];
    assert_eq!(h.method, "GET", "case {n}");
    assert_eq!(
        h.headers.get("x-github-api-version").map(String::as_str),
        Some("2022-11-28")
    );
    assert_eq!(
        h.headers.get("accept").map(String::as_str),
        Some("application/vnd.github+json")
    );
    run
}

#[test]
fn every_status_of_the_mapping_through_the_binary() {
    let fake = Fake::start();
    let tmp = tempfile::tempdir().unwrap();
    let t = tmp.path();
    let merge_lit = format!("\"{MERGE}\"");
    let merged = [
        ("expected_state", "\"merged\""),
        ("expected_merge_oid", merge_lit.as_str()),
    ];
    let cases: Vec<(Case<'_>, Want)> = vec![
        (Case { n: 1, fields: &[] }, Want::Verified),
        (
            Case { n: 2, fields: &[] },
            Want::Unverified("authentication_failed"),
        ),
        (
            Case { n: 3, fields: &[] },
            Want::Unverified("permission_unverified"),
        ),
        (Case { n: 4, fields: &[] }, Want::Unverified("rate_limited")),
        (Case { n: 5, fields: &[] }, Want::Unverified("rate_limited")),
        (
            Case { n: 6, fields: &[] },
            Want::Unverified("resource_unobservable"),
        ),
        (Case { n: 7, fields: &[] }, Want::Unverified("rate_limited")),
        (
            Case { n: 8, fields: &[] },
            Want::Unverified("redirect_rejected"),
        ),
        (
            Case { n: 9, fields: &[] },
            Want::Unverified("provider_unavailable"),
        ),
        (
            Case { n: 10, fields: &[] },
            Want::Unverified("provider_unavailable"),
        ),
        (
            Case { n: 11, fields: &[] },
            Want::Unverified("invalid_provider_response"),
        ),
        (
            Case { n: 12, fields: &[] },
            Want::Unverified("invalid_provider_response"),
        ),
        (
            Case { n: 13, fields: &[] },
            Want::Unverified("invalid_provider_response"),
        ),
        (
            Case { n: 14, fields: &[] },
            Want::Unverified("observation_not_fresh"),
        ),
        (
            Case { n: 15, fields: &[] },
            Want::Unverified("invalid_provider_response"),
        ),
        (
            Case { n: 16, fields: &[] },
            Want::Refuted("repository_identity_mismatch"),
        ),
        (
            Case { n: 17, fields: &[] },
            Want::Refuted("pull_request_mismatch"),
        ),
        (Case { n: 18, fields: &[] }, Want::Refuted("state_mismatch")),
        (Case { n: 19, fields: &[] }, Want::Refuted("head_mismatch")),
        (
            Case {
                n: 20,
                fields: &[("expected_head_repository_id", "564738291")],
            },
            Want::Refuted("head_repository_mismatch"),
        ),
        (Case { n: 21, fields: &[] }, Want::Refuted("base_mismatch")),
        (
            Case {
                n: 22,
                fields: &merged,
            },
            Want::Refuted("merge_mismatch"),
        ),
        (
            Case {
                n: 23,
                fields: &merged,
            },
            Want::Verified,
        ),
        (
            Case { n: 24, fields: &[] },
            Want::Unverified("invalid_provider_response"),
        ),
        (
            Case { n: 25, fields: &[] },
            Want::Unverified("provider_unavailable"),
        ),
        (
            Case { n: 26, fields: &[] },
            Want::Unverified("invalid_provider_response"),
        ),
        (
            Case {
                n: 30,
                fields: &[("expected_state", "\"closed\"")],
            },
            Want::Verified,
        ),
        // The contract's id in capitals is the same object id.
        (
            Case {
                n: 31,
                fields: &[(
                    "expected_head_oid",
                    "\"A1B2C3D4E5F60718293A4B5C6D7E8F9012345678\"",
                )],
            },
            Want::Verified,
        ),
        // A merged pull request is not "closed" (closed means closed unmerged).
        (
            Case {
                n: 32,
                fields: &[("expected_state", "\"closed\"")],
            },
            Want::Refuted("state_mismatch"),
        ),
        // The head repository was deleted (head.repo null): a declared one is a mismatch.
        (
            Case {
                n: 33,
                fields: &[("expected_head_repository_id", "564738291")],
            },
            Want::Refuted("head_repository_mismatch"),
        ),
        (
            Case { n: 34, fields: &[] },
            Want::Unverified("invalid_provider_response"),
        ),
        (
            Case { n: 35, fields: &[] },
            Want::Unverified("invalid_provider_response"),
        ),
        (
            Case { n: 36, fields: &[] },
            Want::Unverified("invalid_provider_response"),
        ),
    ];
    for (case, want) in cases {
        check_case(&fake, t, case, want);
    }
    // The redirect was refused, not followed: the matching pull request it pointed to
    // was asked for only by case 1.
    assert_eq!(fake.hits_for(1).len(), 1);
}

/// The agent controls its claim and the files, not the contract or its environment.
/// Each attack next to its honest twin.
#[test]
fn attacks_and_their_honest_twins() {
    let fake = Fake::start();
    let tmp = tempfile::tempdir().unwrap();
    let t = tmp.path();

    // A claim carrying its own "independent" GitHub observation, all flags true, while
    // the API answers 404: the gate decides from its own read alone.
    let c = contract(t, &fake.url(), &Case { n: 6, fields: &[] }, false);
    let at = (time::OffsetDateTime::now_utc() - time::Duration::seconds(5))
        .format(&time::format_description::well_known::Rfc3339)
        .unwrap();
    let mut flags = serde_json::Map::new();
    for k in [
        "repository_identity_matches",
        "pull_request_matches",
        "state_matches",
        "head_matches",
        "head_repository_matches",
        "base_matches",
        "merge_matches",
        "fresh",
    ] {
        flags.insert(k.into(), Value::Bool(true));
    }
    let forged = serde_json::json!({
        "spec_version": "0.1",
        "task": {"id": "open-pr"},
        "mutations": [{"id": "m1", "kind": "pull_request", "target": "pr", "at": (time::OffsetDateTime::now_utc() - time::Duration::seconds(30)).format(&time::format_description::well_known::Rfc3339).unwrap()}],
        "evidence": [{"check_type": "state_readback", "target": "github_pr octo/widgets#6", "expected": flags, "observed_value": flags, "at": at, "covers": ["m1"], "verifier": {"id": "github", "kind": "independent"}}]
    });
    let claim_path = t.join("forged.json");
    std::fs::write(&claim_path, forged.to_string()).unwrap();
    let out = evident()
        .env("EVIDENT_LEDGER", t.join("l2.db"))
        .env("GH_TOKEN", TOKEN)
        .args([
            "gate",
            c.to_str().unwrap(),
            claim_path.to_str().unwrap(),
            "--json",
        ])
        .output()
        .unwrap();
    let doc: Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(doc["verdict"]["state"], "unverified", "{doc}");
    assert_eq!(out.status.code(), Some(3));

    // No token in the environment: nothing is sent (the request is never made).
    let c = contract(t, &fake.url(), &Case { n: 1, fields: &[] }, false);
    let before = fake.hits_for(1).len();
    let run = gate(t, &c, None);
    assert_eq!(run.code, 3);
    assert!(
        run.error().contains("(authentication_failed)"),
        "{}",
        run.error()
    );
    assert!(
        run.error().contains("GH_TOKEN"),
        "names the variable: {}",
        run.error()
    );
    assert_eq!(fake.hits_for(1).len(), before);
    // A wrong token: GitHub says 401. Honest twin: the right one verifies.
    let run = gate(t, &c, Some("ghp_wrong_token_value"));
    assert_eq!(run.code, 3);
    assert!(run.error().contains("(authentication_failed)"));
    assert!(
        !run.everything.contains("ghp_wrong_token_value"),
        "a wrong token is a secret too"
    );
    assert_eq!(gate(t, &c, Some(TOKEN)).code, 0);

    // Nothing listening: indeterminate, never refuted.
    let closed = {
        let l = TcpListener::bind("127.0.0.1:0").unwrap();
        l.local_addr().unwrap().port()
    };
    let c = contract(
        t,
        &format!("http://127.0.0.1:{closed}"),
        &Case { n: 1, fields: &[] },
        false,
    );
    let run = gate(t, &c, Some(TOKEN));
    assert_eq!(run.code, 3);
    assert!(
        run.error().contains("(provider_unavailable)"),
        "{}",
        run.error()
    );

    // A server that never answers: the check's time limit, promptly.
    let c = contract(
        t,
        &fake.url(),
        &Case {
            n: 29,
            fields: &[("timeout_s", "0.5")],
        },
        false,
    );
    let started = Instant::now();
    let run = gate(t, &c, Some(TOKEN));
    assert_eq!(run.code, 3);
    assert!(
        started.elapsed() < Duration::from_secs(4),
        "{:?}",
        started.elapsed()
    );
    assert_eq!(fake.hits_for(29).len(), 1, "no retry after the time limit");
}

/// `private = true`: no output and no ledger record names the repository, its id, the
/// pull number's target, the refs or the object ids.
#[test]
fn a_private_check_names_no_identifier() {
    let fake = Fake::start();
    let tmp = tempfile::tempdir().unwrap();
    let t = tmp.path();
    for (n, code) in [(1, 0), (19, 1), (6, 3)] {
        let c = contract(t, &fake.url(), &Case { n, fields: &[] }, true);
        let run = gate(t, &c, Some(TOKEN));
        assert_eq!(run.code, code, "{}", run.doc);
        for secret in [
            "octo/widgets",
            "octo",
            HEAD,
            &REPO_ID.to_string(),
            &HEAD_REPO_ID.to_string(),
            "\"main\"",
            "127.0.0.1",
        ] {
            assert!(
                !run.everything.contains(secret),
                "{secret:?} appears in an output or the ledger of case {n}"
            );
        }
        assert!(run.everything.contains("github_pr pull request (private)"));
    }
}

/// Malformed sources are refused when the contract is read (`gate` exits 2) and by
/// `contract check`, naming the file, the JSON path and the fix.
#[test]
fn malformed_sources_are_refused_with_file_path_and_hint() {
    let tmp = tempfile::tempdir().unwrap();
    let t = tmp.path();
    let api = "http://127.0.0.1:1";
    type Fields<'a> = &'a [(&'a str, &'a str)];
    let cases: [(Fields<'_>, &str, &str); 9] = [
        (
            &[("expected_head_oid", "\"a1b2c3d\"")],
            "check[0].source.github_pr.expected_head_oid",
            "git rev-parse",
        ),
        (
            &[(
                "expected_merge_oid",
                "\"0123456789abcdef0123456789abcdef01234567\"",
            )],
            "check[0].source.github_pr.expected_merge_oid",
            "merged",
        ),
        (
            &[("repository", "\"octo/..\"")],
            "check[0].source.github_pr.repository",
            "owner/name",
        ),
        (
            &[("repository", "\"widgets\"")],
            "check[0].source.github_pr.repository",
            "owner/name",
        ),
        (
            &[("api_url", "\"http://api.example.com\"")],
            "check[0].source.github_pr.api_url",
            "https",
        ),
        (
            &[("api_url", "\"https://user:pw@ghe.example.com/api/v3\"")],
            "check[0].source.github_pr.api_url",
            "token_env",
        ),
        (
            &[("token_env", "\"\"")],
            "check[0].source.github_pr.token_env",
            "GITHUB_TOKEN",
        ),
        (
            &[("repository_id", "0")],
            "check[0].source.github_pr.repository_id",
            "positive",
        ),
        (
            &[("expected_state", "\"draft\"")],
            "check[0].source.github_pr.expected_state",
            "",
        ),
    ];
    for (i, (fields, path, hint)) in cases.iter().enumerate() {
        let c = contract(
            t,
            api,
            &Case {
                n: 100 + i as u64,
                fields,
            },
            false,
        );
        let out = evident()
            .args(["contract", "check", c.to_str().unwrap(), "--json"])
            .output()
            .unwrap();
        assert_eq!(out.status.code(), Some(1), "{fields:?}");
        let doc: Value = serde_json::from_slice(&out.stdout).unwrap();
        let e = &doc["errors"][0];
        assert_eq!(e["path"], *path, "{fields:?}: {doc}");
        assert!(
            e["message"].as_str().unwrap().contains(hint),
            "{fields:?}: {doc}"
        );
        assert!(e["line"].as_u64().is_some(), "{fields:?}: {doc}");
        let out = evident()
            .env("EVIDENT_LEDGER", t.join("none.db"))
            .args(["gate", c.to_str().unwrap(), claim(t).to_str().unwrap()])
            .output()
            .unwrap();
        assert_eq!(out.status.code(), Some(2), "{fields:?}");
        let err = String::from_utf8_lossy(&out.stderr);
        assert!(
            err.contains(c.file_name().unwrap().to_str().unwrap()) && err.contains(path),
            "{err}"
        );
    }
    // An expectation on a key github_pr never observes.
    let c = contract(
        t,
        api,
        &Case {
            n: 120,
            fields: &[],
        },
        false,
    );
    let text = std::fs::read_to_string(&c).unwrap().replace(
        "[check.source.github_pr]",
        "expected = { state = \"open\" }\n[check.source.github_pr]",
    );
    std::fs::write(&c, text).unwrap();
    let out = evident()
        .args(["contract", "check", c.to_str().unwrap(), "--json"])
        .output()
        .unwrap();
    let doc: Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(doc["errors"][0]["path"], "check[0].expected.state", "{doc}");
}
