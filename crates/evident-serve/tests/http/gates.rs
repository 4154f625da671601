//! Gates through the service: held-out checks, jobs, idempotency, concurrency, the
//! process-global reaper, graceful shutdown.

use crate::common::*;
use serde_json::json;
use std::time::{Duration, Instant};

#[test]
fn a_gate_decides_under_the_servers_contract_and_hides_held_out_checks() {
    let s = Server::start(|_, dir| {
        write_contract(&dir.join("contracts"), "files.toml", FILES);
        std::fs::write(dir.join("contracts/note.txt"), "hello").unwrap();
    });
    let v = s
        .call("POST", "/v1/gate/files", Some(&note_claim("t1")))
        .ok();
    assert_eq!(v["kind"], "gate");
    // The held-out check expects a size the note does not have: refuted.
    assert_eq!(v["state"], "refuted", "{v}");
    assert_eq!(v["contract"]["name"], "files");
    let digest = v["contract"]["digest"].as_str().unwrap().to_string();
    assert!(digest.starts_with("sha256:"));
    let listed = s.call("GET", "/v1/contracts/files", None).ok();
    assert_eq!(
        listed["digest"],
        digest.as_str(),
        "one hash for the contract everywhere"
    );
    assert_eq!(v["held_out"], 1);
    let id = v["id"].as_u64().unwrap();
    for shown in [
        v.clone(),
        s.call("GET", &format!("/v1/decisions/{id}"), None).ok(),
    ] {
        let text = shown.to_string();
        assert!(!text.contains("secret-size"), "held-out id shown: {text}");
        assert!(
            !text.contains("12345"),
            "held-out expectation shown: {text}"
        );
        assert!(text.contains("held-out-1"));
        assert_eq!(shown["state"], "refuted");
    }
    // The ledger keeps it whole for the owner.
    let rec = s.open_ledger().get(id).unwrap();
    assert!(rec.claim.to_string().contains("secret-size"));
    assert_eq!(rec.contract_digest.as_deref(), Some(digest.as_str()));
}

#[test]
fn wait_false_answers_202_and_the_job_gives_the_decision() {
    let s = Server::start(|_, dir| {
        write_contract(
            &dir.join("contracts"),
            "slow.toml",
            &command_contract("sleep 1"),
        );
    });
    let r = s.call("POST", "/v1/gate/slow?wait=false", Some(&code_claim("t")));
    assert_eq!(r.status, 202, "{}", String::from_utf8_lossy(&r.body));
    let job = r.json();
    assert_eq!(job["status"], "running");
    let href = job["href"].as_str().unwrap().to_string();
    assert_eq!(r.header("location"), Some(href.as_str()));
    let start = Instant::now();
    let done = loop {
        let j = s.call("GET", &href, None).ok();
        if j["status"] != "running" {
            break j;
        }
        assert!(start.elapsed() < Duration::from_secs(60));
        std::thread::sleep(Duration::from_millis(100));
    };
    assert_eq!(done["status"], "done", "{done}");
    assert_eq!(done["decision"]["state"], "verified", "{done}");
    s.call("GET", "/v1/jobs/0123456789abcdef0123456789abcdef", None)
        .problem(404);
    s.call("GET", "/v1/jobs/..%2F..", None).problem(404);
}

#[test]
fn an_idempotency_key_returns_the_first_decision() {
    let s = Server::start(|_, dir| {
        write_contract(
            &dir.join("contracts"),
            "quick.toml",
            &command_contract("true"),
        );
    });
    let send = |key: &str, token: &str, body: &serde_json::Value, path: &str| {
        let auth = format!("Bearer {token}");
        let b = serde_json::to_vec(body).unwrap();
        s.raw(
            "POST",
            path,
            &[
                ("Authorization", &auth),
                ("Content-Type", "application/json"),
                ("Idempotency-Key", key),
            ],
            Some(&b),
        )
    };
    for path in ["/v1/gate/quick", "/v1/verify"] {
        let body = if path == "/v1/verify" {
            example_claim()
        } else {
            code_claim("t")
        };
        let a = send("k-1", &s.token, &body, path).ok();
        let b = send("k-1", &s.token, &body, path).ok();
        assert_eq!(
            a["id"], b["id"],
            "{path}: a retry returns the first decision"
        );
        assert_eq!(a["hash"], b["hash"]);
        // Another caller's key is its own.
        let c = send("k-1", &s.other_token, &body, path).ok();
        assert_ne!(c["id"], a["id"]);
        assert_eq!(c["asked_by"], "other");
        // The same key with another body is refused.
        let mut other = body.clone();
        other["task"]["id"] = json!("different");
        send("k-1", &s.token, &other, path).problem(422);
        for bad in ["", "has space", &"x".repeat(201)] {
            send(bad, &s.token, &body, path).problem(400);
        }
    }
    let n = s.open_ledger().verify().unwrap().records;
    assert_eq!(n, 4, "two decisions per route, retries not recorded again");
}

#[test]
fn concurrent_requests_all_get_their_own_record_in_one_chain() {
    let s = Server::start(|_, _| {});
    std::thread::scope(|scope| {
        for t in 0..8 {
            let s = &s;
            scope.spawn(move || {
                for i in 0..20 {
                    let mut c = example_claim();
                    c["task"]["id"] = json!(format!("t{t}-{i}"));
                    let v = s.call("POST", "/v1/verify", Some(&c)).ok();
                    assert_eq!(v["task_id"], format!("t{t}-{i}"));
                    assert_eq!(v["state"], "verified");
                }
            });
        }
    });
    let l = s.open_ledger();
    let r = l.verify_with(true).unwrap();
    assert_eq!((r.records, r.broken), (160, None));
}

/// Two gates on different contracts at once. The first one's command starts a daemon
/// (it leaves its session and is adopted by the server, the subreaper) and checks it
/// is still alive 2 s later; the second gate finishes meanwhile. Its end-of-gate kill
/// of escaped orphans must not take the first gate's daemon while that command runs.
#[test]
fn two_concurrent_gates_do_not_kill_each_others_children() {
    let s = Server::start(|c, dir| {
        c.gate_concurrency = 2;
        let daemon = "sh -c 'setsid sh -c \"echo \\$\\$ > d.pid; exec sleep 30\" &'; sleep 0.3; pid=$(cat d.pid); sleep 2; kill -0 $pid; r=$?; kill $pid; test $r = 0";
        linked_contract(dir, "daemon", &command_contract(daemon));
        let root = linked_contract(
            dir,
            "files",
            FILES
                .split("[[check]]\nid = \"secret-size\"")
                .next()
                .unwrap(),
        );
        std::fs::write(root.join("note.txt"), "hello").unwrap();
    });
    std::thread::scope(|scope| {
        let a = scope.spawn(|| {
            s.call("POST", "/v1/gate/daemon", Some(&code_claim("a")))
                .ok()
        });
        std::thread::sleep(Duration::from_millis(800));
        let b = s
            .call("POST", "/v1/gate/files", Some(&note_claim("b")))
            .ok();
        assert_eq!(b["state"], "verified", "{b}");
        let a = a.join().unwrap();
        assert_eq!(
            a["state"], "verified",
            "the first gate's daemon was killed: {a}"
        );
    });
}

#[test]
fn gates_on_one_root_run_one_at_a_time() {
    let s = Server::start(|c, dir| {
        c.gate_concurrency = 4;
        // Both contracts share the contracts directory as root; each command holds a
        // lock file for 0.5 s and fails if the other holds it.
        let script = "if [ -e busy ]; then exit 7; fi; touch busy; sleep 0.5; rm busy";
        write_contract(
            &dir.join("contracts"),
            "one.toml",
            &command_contract(script),
        );
        write_contract(
            &dir.join("contracts"),
            "two.toml",
            &command_contract(script),
        );
    });
    std::thread::scope(|scope| {
        let hs: Vec<_> = ["one", "two", "one", "two"]
            .into_iter()
            .map(|n| {
                let s = &s;
                scope.spawn(move || {
                    s.call("POST", &format!("/v1/gate/{n}"), Some(&code_claim(n)))
                        .ok()
                })
            })
            .collect();
        for h in hs {
            let v = h.join().unwrap();
            assert_eq!(v["state"], "verified", "{v}");
        }
    });
}

#[test]
fn shutdown_finishes_a_gate_in_flight() {
    let mut s = Server::start(|_, dir| {
        write_contract(
            &dir.join("contracts"),
            "slow.toml",
            &command_contract("sleep 2"),
        );
    });
    let addr = s.addr;
    let auth = s.auth();
    let host = s.host();
    let body = serde_json::to_vec(&code_claim("slow")).unwrap();
    let req = format!(
        "POST /v1/gate/slow HTTP/1.1\r\nHost: {host}\r\nAuthorization: {auth}\r\nContent-Type: application/json\r\nContent-Length: {}\r\nConnection: close\r\n\r\n",
        body.len()
    );
    let mut bytes = req.into_bytes();
    bytes.extend_from_slice(&body);
    let inflight = std::thread::spawn(move || send(addr, &bytes));
    std::thread::sleep(Duration::from_millis(700));
    let start = Instant::now();
    s.stop();
    assert!(
        start.elapsed() > Duration::from_millis(500),
        "the server waited for the gate"
    );
    let r = inflight.join().unwrap();
    let v = r.ok();
    assert_eq!(v["state"], "verified", "{v}");
    assert!(
        std::net::TcpStream::connect(addr).is_err(),
        "no longer listening"
    );
    let rec = s.open_ledger().get(v["id"].as_u64().unwrap()).unwrap();
    assert_eq!(rec.kind, "gate");
}

/// A finished job keeps only its record's id: polling and retries read the decision
/// back from the ledger, held-out checks still hidden.
#[test]
fn a_finished_job_is_read_back_from_the_ledger() {
    let s = Server::start(|_, dir| {
        write_contract(&dir.join("contracts"), "files.toml", FILES);
        std::fs::write(dir.join("contracts/note.txt"), "hello").unwrap();
    });
    let r = s.call("POST", "/v1/gate/files?wait=false", Some(&note_claim("j")));
    assert_eq!(r.status, 202);
    let href = r.json()["href"].as_str().unwrap().to_string();
    let start = Instant::now();
    let done = loop {
        let j = s.call("GET", &href, None).ok();
        if j["status"] != "running" {
            break j;
        }
        assert!(start.elapsed() < Duration::from_secs(30));
        std::thread::sleep(Duration::from_millis(50));
    };
    assert_eq!(done["decision"]["state"], "refuted", "{done}");
    assert_eq!(done["decision"]["held_out"], 1);
    assert!(!done.to_string().contains("secret-size"), "{done}");
    let id = done["decision"]["id"].as_u64().unwrap();
    assert_eq!(
        s.open_ledger().get(id).unwrap().hash,
        done["decision"]["hash"].as_str().unwrap()
    );
}
