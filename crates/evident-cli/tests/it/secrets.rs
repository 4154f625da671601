//! Credentials in a DSN or URL never show, whatever their length: the userinfo password
//! and query parameters such as `password`, `sslpassword`, `token`. Each form is put in
//! the environment variable a check names, then looked for (through the real binary) in
//! stdout, stderr, `--json`, `--junit`, the DSSE payloads of `gate --key`, `log`,
//! `show`, `ledger export` and the raw bytes of the SQLite ledger. The secret reaches
//! the outputs three ways: a command that prints the DSN re-spaced (so the whole URL no
//! longer matches), a SQLite row that holds it, and the agent's own claim text.

use serde_json::Value;
use std::path::Path;

use crate::support::{evident_in, run};

fn python_missing() -> bool {
    let ok = std::process::Command::new("python3")
        .args(["-c", "import sqlite3"])
        .output()
        .is_ok_and(|o| o.status.success());
    if !ok {
        eprintln!("SKIP: python3 with sqlite3 is needed to write the test database");
    }
    !ok
}

/// A SQLite database whose row holds the secret (a config table with a password).
fn database(dir: &Path, secret: &str) {
    let status = std::process::Command::new("python3")
        .arg("-c")
        .arg(
            "import sqlite3,sys\n\
             c=sqlite3.connect(sys.argv[1])\n\
             c.execute('CREATE TABLE settings (id INTEGER PRIMARY KEY, note TEXT)')\n\
             c.execute('INSERT INTO settings VALUES (1, ?)', ('db password is ' + sys.argv[2],))\n\
             c.commit()\n",
        )
        .arg(dir.join("app.db"))
        .arg(secret)
        .status()
        .unwrap();
    assert!(status.success());
}

const CONTRACT: &str = r#"
[policy]
requires = ["state_readback", "test_run"]

[[check]]
id = "db"
check_type = "state_readback"
covers = { kind = "code_change" }
source = { postgres = { url_env = "DB_URL", query = "SELECT 1 AS one" } }
expected = { one = 1 }

[[check]]
id = "settings"
check_type = "state_readback"
covers = { kind = "code_change" }
source = { sqlite = { path = "app.db", query = "SELECT note FROM settings WHERE id = 1" } }
expected = { note = "rotated" }

[[check]]
id = "prints-dsn"
check_type = "test_run"
covers = { kind = "code_change" }
expected = { exit_code = 0, stdout = "nothing" }
[check.source.command]
argv = ["printf '%s\n' \"$DSN\" | tr '/:@?&=' '      '; printf 'err %s\n' \"$DSN\" | tr '/:@?&=' '      ' >&2; exit 0"]
shell = true
env = { DSN = { env = "DB_URL" } }
inherit_env = ["PATH"]
capture_output = true
"#;

fn claim(dir: &Path, secret: &str) {
    let at = time::OffsetDateTime::now_utc() - time::Duration::seconds(30);
    let at = at
        .format(&time::format_description::well_known::Rfc3339)
        .unwrap();
    // A password of digits the agent also writes as a JSON number (found by the red
    // team: numbers were never scrubbed).
    let number = if secret.bytes().all(|b| b.is_ascii_digit()) {
        format!(r#", "pin": {secret}"#)
    } else {
        String::new()
    };
    std::fs::write(
        dir.join("claim.json"),
        format!(
            r#"{{"spec_version": "0.1", "task": {{"id": "t"}}, "claimed_outcome": "connected with {secret} and rotated it"{number}, "mutations": [{{"id": "m1", "kind": "code_change", "target": "settings {secret}", "at": "{at}"}}]}}"#
        ),
    )
    .unwrap();
}

/// base64 (standard alphabet) through coreutils, to read DSSE payloads.
fn b64decode(s: &str) -> String {
    use std::io::Write;
    let mut child = std::process::Command::new("base64")
        .arg("-d")
        .stdin(std::process::Stdio::piped())
        .stdout(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    child.stdin.take().unwrap().write_all(s.as_bytes()).unwrap();
    let out = child.wait_with_output().unwrap();
    assert!(out.status.success(), "not base64: {s:?} {out:?}");
    String::from_utf8_lossy(&out.stdout).into_owned()
}

fn payloads(v: &Value, out: &mut Vec<String>) {
    match v {
        Value::Object(m) => {
            if let Some(Value::String(p)) = m.get("payload") {
                out.push(b64decode(p));
            }
            m.values().for_each(|x| payloads(x, out));
        }
        Value::Array(a) => a.iter().for_each(|x| payloads(x, out)),
        _ => {}
    }
}

/// Every output of a gate run and of the ledger, labelled.
fn outputs(dir: &Path, dsn: &str) -> Vec<(String, String)> {
    let key = dir.join("gate.key");
    if !key.exists() {
        let (code, _, err) = run(evident_in(dir)
            .args(["key", "generate", "--id", "gate", "--out"])
            .arg(&key));
        assert_eq!(code, 0, "{err}");
    }
    let mut all = Vec::new();
    let gate = |extra: &[&str]| {
        let mut cmd = evident_in(dir);
        cmd.arg("gate")
            .arg(dir.join("c.toml"))
            .arg(dir.join("claim.json"))
            .arg("--key")
            .arg(&key)
            .args(extra)
            .env("DB_URL", dsn)
            .env("PGCONNECT_TIMEOUT", "2");
        run(&mut cmd)
    };
    let junit = dir.join("junit.xml");
    let (code, out, err) = gate(&["--junit", junit.to_str().unwrap()]);
    assert!([0, 1, 3].contains(&code), "{code}: {out}\n{err}");
    all.push(("gate stdout".into(), out));
    all.push(("gate stderr".into(), err));
    all.push(("junit".into(), std::fs::read_to_string(&junit).unwrap()));
    let (_, out, err) = gate(&["--json"]);
    let doc: Value = serde_json::from_str(&out).unwrap_or_else(|e| panic!("{e}: {out}"));
    let mut p = Vec::new();
    payloads(&doc, &mut p);
    assert!(!p.is_empty(), "no signed evidence in {out}");
    for (i, x) in p.into_iter().enumerate() {
        all.push((format!("DSSE payload {i}"), x));
    }
    all.push(("gate --json".into(), out));
    all.push(("gate --json stderr".into(), err));
    for args in [
        &["log"][..],
        &["log", "--json"],
        &["show", "1"],
        &["show", "2", "--json"],
        &["ledger", "export"],
    ] {
        let (code, out, err) = run(evident_in(dir).args(args));
        assert_eq!(code, 0, "{args:?}: {err}");
        all.push((format!("{args:?}"), out + &err));
    }
    for f in std::fs::read_dir(dir).unwrap() {
        let f = f.unwrap();
        let name = f.file_name().to_string_lossy().into_owned();
        if name.starts_with("ledger.db") {
            let bytes = std::fs::read(f.path()).unwrap();
            all.push((
                format!("raw {name}"),
                String::from_utf8_lossy(&bytes).into_owned(),
            ));
        }
    }
    all
}

/// Does `secret` show? A credential under 4 characters is scrubbed where it stands
/// alone (not inside a word, a hash or base64), so only such an occurrence counts.
fn shows(text: &str, secret: &str) -> bool {
    if secret.len() >= 4 {
        return text.contains(secret);
    }
    let alnum = |c: Option<char>| c.is_some_and(char::is_alphanumeric);
    text.match_indices(secret).any(|(i, _)| {
        !alnum(text[..i].chars().last()) && !alnum(text[i + secret.len()..].chars().next())
    })
}

fn assert_hidden(dir: &Path, dsn: &str, secret: &str) {
    let all = outputs(dir, dsn);
    for (what, text) in &all {
        assert!(
            !shows(text, secret),
            "{secret:?} of {dsn} shows in {what}:\n{text}"
        );
    }
    // The honest twin: what is not a credential stays readable (the command's output
    // is shown, with its host and database).
    let json = &all.iter().find(|(w, _)| w == "gate --json").unwrap().1;
    assert!(
        json.contains("127.0.0.1") && json.contains("billing"),
        "{json}"
    );
}

#[test]
fn dsn_credentials_never_show_whatever_their_length() {
    if python_missing() {
        return;
    }
    for (dsn, secret) in [
        ("postgres://app:hunter2@127.0.0.1:1/billing", "hunter2"),
        (
            "postgres://app@127.0.0.1:1/billing?password=hunter2",
            "hunter2",
        ),
        (
            "postgres://app@127.0.0.1:1/billing?sslmode=disable&sslpassword=hunter2",
            "hunter2",
        ),
        (
            "postgres://app@127.0.0.1:1/billing?token=hunter2",
            "hunter2",
        ),
        (
            "postgres://app@127.0.0.1:1/billing?sslmode=disable&Access_Token=hunter2",
            "hunter2",
        ),
        ("postgres://app:pw9@127.0.0.1:1/billing", "pw9"),
        ("postgres://app:90817263@127.0.0.1:1/billing", "90817263"),
    ] {
        let tmp = tempfile::tempdir().unwrap();
        let dir = tmp.path();
        std::fs::write(dir.join("c.toml"), CONTRACT).unwrap();
        database(dir, secret);
        claim(dir, secret);
        assert_hidden(dir, dsn, secret);
    }
}

/// The same against a real PostgreSQL: the check connects (so the driver handled the
/// DSN) and the credentials of every form are still nowhere.
#[test]
#[cfg_attr(
    not(evident_services),
    ignore = "needs PostgreSQL: .ci/run sets it up and runs this (see README, Development)"
)]
fn dsn_credentials_never_show_with_a_real_postgres() {
    let Ok(base) = std::env::var("EVIDENT_TEST_POSTGRES_URL") else {
        panic!("EVIDENT_TEST_POSTGRES_URL is not set");
    };
    if python_missing() {
        return;
    }
    let sep = if base.contains('?') { '&' } else { '?' };
    for (extra, secret) in [
        ("sslpassword=hunter2", "hunter2"),
        ("token=hunter2", "hunter2"),
        ("application_name=evident&api_key=k9", "k9"),
    ] {
        let dsn = format!("{base}{sep}{extra}");
        let tmp = tempfile::tempdir().unwrap();
        let dir = tmp.path();
        std::fs::write(dir.join("c.toml"), CONTRACT).unwrap();
        database(dir, secret);
        claim(dir, secret);
        let all = outputs(dir, &dsn);
        let json = &all.iter().find(|(w, _)| w == "gate --json").unwrap().1;
        let doc: Value = serde_json::from_str(json).unwrap();
        let db = doc["gate"]["checks"]
            .as_array()
            .unwrap()
            .iter()
            .find(|c| c["check_id"] == "db")
            .unwrap();
        assert_eq!(db["observed"]["one"], 1, "{db}");
        // The real password of the test server's URL, if it has one.
        let password = base
            .split_once("://")
            .and_then(|(_, rest)| rest.split(['?', '#']).next()?.rsplit_once('@'))
            .and_then(|(userinfo, _)| userinfo.split_once(':'))
            .map(|(_, p)| p.to_string())
            .filter(|p| !p.is_empty());
        for (what, text) in &all {
            assert!(!shows(text, secret), "{secret:?} shows in {what}:\n{text}");
            if let Some(p) = &password {
                assert!(!text.contains(p.as_str()), "the password shows in {what}");
            }
        }
    }
}
