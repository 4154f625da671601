//! Clients that hold the server rather than ask it anything: slow or missing headers,
//! idle connections, too many connections, many large claims at once, and shutdown
//! with all of those open. Raw TCP sockets, so each byte's timing is the test's.

use crate::common::*;
use serde_json::json;
use std::io::{Read as _, Write as _};
use std::net::TcpStream;
use std::time::{Duration, Instant};

fn connect(s: &Server) -> TcpStream {
    let c = TcpStream::connect(s.addr).unwrap();
    c.set_read_timeout(Some(Duration::from_secs(15))).unwrap();
    c
}

/// Reads until the server closes (or the read timeout); how long it took and what
/// came.
fn until_closed(c: &mut TcpStream) -> (Duration, Vec<u8>, bool) {
    let start = Instant::now();
    let mut out = Vec::new();
    let closed = c.read_to_end(&mut out).is_ok();
    (start.elapsed(), out, closed)
}

/// One whole response on a kept-alive connection (by its Content-Length).
fn one_response(c: &mut TcpStream) -> Reply {
    let mut out = Vec::new();
    let mut buf = [0u8; 4096];
    loop {
        let n = c.read(&mut buf).unwrap();
        assert!(n > 0, "closed early: {}", String::from_utf8_lossy(&out));
        out.extend_from_slice(&buf[..n]);
        if let Some(end) = out.windows(4).position(|w| w == b"\r\n\r\n") {
            let head = String::from_utf8_lossy(&out[..end]).to_ascii_lowercase();
            let len: usize = head
                .lines()
                .find_map(|l| l.strip_prefix("content-length:"))
                .map_or(0, |v| v.trim().parse().unwrap());
            if out.len() >= end + 4 + len {
                return parse(&out);
            }
        }
    }
}

fn get(s: &Server, path: &str) -> String {
    format!("GET {path} HTTP/1.1\r\nHost: {}\r\n\r\n", s.host())
}

/// Slowloris: headers that never end, a connection that never speaks, a kept-alive
/// connection left idle. Each is closed at the header timeout; the honest twin (the
/// headers in pieces, all within the timeout) is answered.
#[test]
fn slow_missing_or_idle_headers_are_cut_at_the_header_timeout() {
    let s = Server::start(|c, _| c.header_timeout = Duration::from_millis(600));
    let mut partial = connect(&s);
    partial
        .write_all(format!("GET /v1/decisions HTTP/1.1\r\nHost: {}\r\n", s.host()).as_bytes())
        .unwrap();
    let mut silent = connect(&s);
    let mut idle = connect(&s);
    idle.write_all(get(&s, "/healthz").as_bytes()).unwrap();
    assert_eq!(one_response(&mut idle).status, 200);
    for (what, c) in [
        ("partial headers", &mut partial),
        ("no request", &mut silent),
        ("idle keep-alive", &mut idle),
    ] {
        let (took, _, closed) = until_closed(c);
        assert!(
            closed && took < Duration::from_secs(5),
            "{what}: held open for {took:?} (closed: {closed})"
        );
    }
    // The honest twin: headers in three pieces, 150 ms apart.
    let mut slow = connect(&s);
    let text = format!("GET /v1/decisions HTTP/1.1\r\nHost: {}\r\n\r\n", s.host());
    let (a, rest) = text.split_at(10);
    let (b, c) = rest.split_at(10);
    for piece in [a, b, c] {
        slow.write_all(piece.as_bytes()).unwrap();
        std::thread::sleep(Duration::from_millis(150));
    }
    assert_eq!(one_response(&mut slow).status, 200);
}

/// Past `max_connections`, a new connection is told 503 (problem+json, Retry-After)
/// and closed at once rather than left waiting; once one closes, a new one is served.
#[test]
fn connections_past_the_cap_are_refused_at_once() {
    let s = Server::start(|c, _| {
        c.max_connections = 3;
        c.header_timeout = Duration::from_secs(30);
    });
    let mut held: Vec<TcpStream> = (0..3).map(|_| connect(&s)).collect();
    // The server has taken them (accepted, waiting for headers).
    std::thread::sleep(Duration::from_millis(300));
    let mut extra = connect(&s);
    let (took, out, closed) = until_closed(&mut extra);
    assert!(closed && took < Duration::from_secs(5), "held {took:?}");
    let r = parse(&out);
    assert_eq!(r.status, 503, "{}", String::from_utf8_lossy(&out));
    assert_eq!(r.header("retry-after"), Some("1"));
    assert_eq!(r.header("content-type"), Some("application/problem+json"));
    assert_eq!(r.json()["type"], "urn:evident:problem:busy");
    // The honest twin: a slot frees when a client leaves.
    held.pop();
    let start = Instant::now();
    loop {
        let mut c = connect(&s);
        c.write_all(get(&s, "/healthz").as_bytes()).unwrap();
        let mut buf = Vec::new();
        let _ = c.read_to_end(&mut buf);
        if buf.starts_with(b"HTTP/1.1 200") {
            break;
        }
        assert!(start.elapsed() < Duration::from_secs(5), "no slot freed");
        std::thread::sleep(Duration::from_millis(50));
    }
    drop(held);
}

/// SIGTERM with an idle kept-alive connection, one that never sent a request and one
/// halfway through its headers, all with a long header timeout: they no longer hold
/// the shutdown open. The request in flight (a gate) still finishes and is answered.
#[test]
fn shutdown_closes_idle_and_half_open_connections_and_finishes_the_request_in_flight() {
    let mut s = Server::start(|c, dir| {
        c.header_timeout = Duration::from_secs(60);
        write_contract(
            &dir.join("contracts"),
            "slow.toml",
            &command_contract("sleep 1"),
        );
    });
    let mut idle = connect(&s);
    idle.write_all(get(&s, "/healthz").as_bytes()).unwrap();
    assert_eq!(one_response(&mut idle).status, 200);
    let silent = connect(&s);
    let mut half = connect(&s);
    half.write_all(format!("GET /healthz HTTP/1.1\r\nHost: {}\r\n", s.host()).as_bytes())
        .unwrap();
    let (addr, host, auth) = (s.addr, s.host(), s.auth());
    let body = serde_json::to_vec(&code_claim("slow")).unwrap();
    let inflight = std::thread::spawn(move || {
        let mut req = format!(
            "POST /v1/gate/slow HTTP/1.1\r\nHost: {host}\r\nAuthorization: {auth}\r\nContent-Type: application/json\r\nContent-Length: {}\r\n\r\n",
            body.len()
        )
        .into_bytes();
        req.extend_from_slice(&body);
        send(addr, &req)
    });
    std::thread::sleep(Duration::from_millis(400));
    let (done_tx, done) = std::sync::mpsc::channel();
    let stopper = std::thread::spawn(move || {
        let start = Instant::now();
        s.stop();
        let _ = done_tx.send(start.elapsed());
        s
    });
    let took = done.recv_timeout(Duration::from_secs(10));
    // Whatever happened, let the server go before asserting.
    drop((idle, silent, half));
    let s = stopper.join().unwrap();
    let took = took.expect("the shutdown was held open by idle connections");
    assert!(took < Duration::from_secs(5), "{took:?}");
    let v = inflight.join().unwrap().ok();
    assert_eq!(v["state"], "verified", "{v}");
    assert_eq!(s.open_ledger().verify().unwrap().records, 1);
}

/// A request that outlasts the shutdown grace loses its connection when the grace
/// ends (the shutdown is bounded); its gate still finishes and is recorded.
#[test]
fn the_shutdown_grace_bounds_a_request_that_outlasts_it() {
    let mut s = Server::start(|c, dir| {
        c.shutdown_grace = Duration::from_millis(500);
        write_contract(
            &dir.join("contracts"),
            "slower.toml",
            &command_contract("sleep 3"),
        );
    });
    let mut c = connect(&s);
    let body = serde_json::to_vec(&code_claim("slower")).unwrap();
    let mut req = format!(
        "POST /v1/gate/slower HTTP/1.1\r\nHost: {}\r\nAuthorization: {}\r\nContent-Type: application/json\r\nContent-Length: {}\r\n\r\n",
        s.host(),
        s.auth(),
        body.len()
    )
    .into_bytes();
    req.extend_from_slice(&body);
    c.write_all(&req).unwrap();
    std::thread::sleep(Duration::from_millis(400));
    let start = Instant::now();
    let stopper = std::thread::spawn(move || {
        s.stop();
        s
    });
    let (took, out, closed) = until_closed(&mut c);
    assert!(
        closed && took < Duration::from_secs(2) && out.is_empty(),
        "the connection outlived the grace: {took:?} {}",
        String::from_utf8_lossy(&out)
    );
    let s = stopper.join().unwrap();
    assert!(start.elapsed() >= Duration::from_secs(2), "the gate ran on");
    let l = s.open_ledger();
    assert_eq!(
        l.verify().unwrap().records,
        1,
        "the gate's decision is recorded"
    );
    assert_eq!(l.get(1).unwrap().kind, "gate");
}

/// Many large claims at once: at most `verify_concurrency` are decided at a time;
/// the rest wait `verify_wait` for a slot and then get 503 (problem+json,
/// Retry-After) instead of starving the machine. Alone, the same claim is decided.
#[test]
fn concurrent_large_verifies_are_bounded_and_shed_with_503() {
    let s = Server::start(|c, _| {
        c.verify_concurrency = 1;
        c.verify_wait = Duration::from_millis(20);
    });
    // Unsigned, so the work is the parse and the decision, not checking signatures.
    let mut big = unsigned_example_claim();
    let item = big["evidence"][0].clone();
    big["evidence"] = json!(vec![item; 10_000]);
    let body = serde_json::to_vec(&big).unwrap();
    assert!(
        body.len() > 1_500_000 && body.len() < 4 * 1024 * 1024,
        "{}",
        body.len()
    );
    let auth = s.auth();
    let statuses: Vec<Reply> = std::thread::scope(|scope| {
        let handles: Vec<_> = (0..8)
            .map(|_| {
                let (s, body, auth) = (&s, &body, &auth);
                scope.spawn(move || {
                    s.raw(
                        "POST",
                        "/v1/verify",
                        &[
                            ("Authorization", auth.as_str()),
                            ("Content-Type", "application/json"),
                        ],
                        Some(body),
                    )
                })
            })
            .collect();
        handles.into_iter().map(|h| h.join().unwrap()).collect()
    });
    let ok = statuses.iter().filter(|r| r.status == 200).count();
    let busy: Vec<&Reply> = statuses.iter().filter(|r| r.status == 503).collect();
    let shown: Vec<String> = statuses
        .iter()
        .map(|r| {
            format!(
                "{} {}",
                r.status,
                String::from_utf8_lossy(&r.body[..r.body.len().min(200)])
            )
        })
        .collect();
    assert_eq!(ok + busy.len(), 8, "only 200 or 503: {shown:#?}");
    assert!(ok >= 1, "some were decided: {shown:#?}");
    assert!(
        !busy.is_empty(),
        "none was shed: every claim was decided at once"
    );
    for r in busy {
        let p = r.problem(503);
        assert_eq!(p["type"], "urn:evident:problem:busy", "{p}");
        assert_eq!(r.header("retry-after"), Some("1"));
    }
    assert_eq!(s.open_ledger().verify().unwrap().records, ok as u64);
    // The honest twin: alone, the large claim is decided.
    let r = s.raw(
        "POST",
        "/v1/verify",
        &[
            ("Authorization", auth.as_str()),
            ("Content-Type", "application/json"),
        ],
        Some(&body),
    );
    assert_eq!(
        r.ok()["state"],
        "unverified",
        "decided (its evidence unsigned)"
    );
}

/// red14b: a slow *reader*. The client sends its requests (pipelined, at once) and
/// then reads nothing, so the server's writes stall. Before the fix such a connection
/// lived past every deadline, and `max_connections` of them locked every other client
/// out. A connection whose response makes no progress for the request timeout is now
/// closed. The honest twin: a client that reads a large response slowly but steadily
/// (pauses shorter than the timeout, longer than it in total) gets all of it.
#[test]
fn a_client_that_stops_reading_is_cut_at_the_request_timeout() {
    let s = Server::start(|c, _| {
        c.max_connections = 2;
        c.header_timeout = Duration::from_secs(1);
        c.request_timeout = Duration::from_secs(1);
    });
    let mut probe = connect(&s);
    probe
        .write_all(get(&s, "/openapi.json").as_bytes())
        .unwrap();
    let one = one_response(&mut probe).body.len().max(1);
    drop(probe);
    // Far more than the socket buffers on both sides hold.
    let n = (48 << 20) / one + 1;
    let stalled: Vec<TcpStream> = (0..2)
        .map(|_| {
            let mut c = connect(&s);
            c.write_all(get(&s, "/openapi.json").repeat(n).as_bytes())
                .unwrap();
            c
        })
        .collect();
    std::thread::sleep(Duration::from_secs(4));
    let mut fresh = connect(&s);
    fresh.write_all(get(&s, "/healthz").as_bytes()).unwrap();
    let r = one_response(&mut fresh);
    assert_eq!(
        r.status,
        200,
        "two stalled readers still hold the server: {}",
        String::from_utf8_lossy(&r.body)
    );
    drop(stalled);
    drop(fresh);
    // The honest twin: up to 40 responses (MiBs), read 256 KiB at a time with 200 ms
    // pauses, more than the 1 s timeout in all.
    std::thread::sleep(Duration::from_millis(300));
    let mut slow = connect(&s);
    let k = ((4 << 20) / one + 1).min(40);
    slow.write_all(get(&s, "/openapi.json").repeat(k).as_bytes())
        .unwrap();
    let mut got = 0usize;
    let mut chunk = vec![0u8; 256 << 10];
    let start = Instant::now();
    let want = k * one;
    while got < want {
        let m = slow.read(&mut chunk).unwrap();
        assert!(m > 0, "the slow reader was cut after {got} of {want} bytes");
        got += m;
        std::thread::sleep(Duration::from_millis(200));
    }
    assert!(
        start.elapsed() > Duration::from_secs(1),
        "the twin must outlast the timeout"
    );
}
