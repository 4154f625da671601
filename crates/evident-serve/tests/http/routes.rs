//! What each route answers to an honest client.

use crate::common::*;
use serde_json::json;

#[test]
fn verify_decides_under_the_servers_policy_and_records_who_asked() {
    let s = Server::start(|_, _| {});
    let mut claim = example_claim();
    // The agent's own policy asks for nothing: it never decides here.
    claim["policy"] = json!({ "id": "agent", "requires": [], "on_unverified": "record" });
    let v = s.call("POST", "/v1/verify", Some(&claim)).ok();
    assert_eq!(v["schema"], "evident.decision/v1");
    assert_eq!(v["kind"], "verify");
    assert_eq!(v["state"], "verified", "{v}");
    assert_eq!(v["status"], "verified");
    assert_eq!(v["asked_by"], "ci");
    assert_eq!(
        v["document"]["policy"]["id"], "owner",
        "the server's policy decides"
    );
    let id = v["id"].as_u64().unwrap();
    // The same decision from the ledger, with who asked in the hashed record.
    let got = s.call("GET", &format!("/v1/decisions/{id}"), None).ok();
    assert_eq!(got["hash"], v["hash"]);
    assert_eq!(got["asked_by"], "ci");
    assert_eq!(got["state"], "verified");
    let rec = s.open_ledger().get(id).unwrap();
    assert_eq!(rec.origin.as_ref().unwrap()["asked_by"], "ci");
    assert_eq!(rec.origin.as_ref().unwrap()["via"], "http");
    assert_eq!(s.open_ledger().verify().unwrap().broken, None);

    // Stale evidence under the owner's max_age_s: unverified and blocked, not verified.
    let mut stale = example_claim();
    stale["evidence"][0]["at"] = json!("2021-01-01T00:00:10Z");
    stale["mutations"][0]["at"] = json!("2021-01-01T00:00:00Z");
    sign(&mut stale);
    let v = s.call("POST", "/v1/verify", Some(&stale)).ok();
    assert_eq!(
        (v["state"].as_str(), v["status"].as_str()),
        (Some("unverified"), Some("blocked"))
    );
}

#[test]
fn verify_without_a_server_policy_refuses_rather_than_use_the_documents() {
    let s = Server::start(|c, _| c.policy = None);
    let p = s
        .call("POST", "/v1/verify", Some(&example_claim()))
        .problem(503);
    assert!(p["detail"].as_str().unwrap().contains("--policy"), "{p}");
}

#[test]
fn decisions_filter_and_page_with_a_cursor() {
    let s = Server::start(|c, _| c.max_batch = 4);
    for i in 0..7 {
        let mut c = example_claim();
        c["task"]["id"] = json!(format!("t{}", i % 2));
        if i == 3 {
            c["evidence"][0]["observed_value"]["billing_zip"] = json!("10001");
            sign(&mut c);
        }
        s.call("POST", "/v1/verify", Some(&c)).ok();
    }
    let page = s.call("GET", "/v1/decisions?limit=3", None).ok();
    let ids: Vec<u64> = page["items"]
        .as_array()
        .unwrap()
        .iter()
        .map(|i| i["id"].as_u64().unwrap())
        .collect();
    assert_eq!(ids, vec![7, 6, 5]);
    let cursor = page["next_cursor"].as_str().unwrap().to_string();
    let page2 = s
        .call(
            "GET",
            &format!("/v1/decisions?limit=3&cursor={cursor}"),
            None,
        )
        .ok();
    let ids2: Vec<u64> = page2["items"]
        .as_array()
        .unwrap()
        .iter()
        .map(|i| i["id"].as_u64().unwrap())
        .collect();
    assert_eq!(ids2, vec![4, 3, 2]);
    let last = s
        .call(
            "GET",
            &format!(
                "/v1/decisions?limit=3&cursor={}",
                page2["next_cursor"].as_str().unwrap()
            ),
            None,
        )
        .ok();
    assert_eq!(last["items"].as_array().unwrap().len(), 1);
    assert!(last["next_cursor"].is_null());
    let refuted = s.call("GET", "/v1/decisions?state=refuted", None).ok();
    assert_eq!(refuted["items"].as_array().unwrap().len(), 1);
    assert_eq!(refuted["items"][0]["id"], 4);
    assert_eq!(refuted["items"][0]["asked_by"], "ci");
    assert_eq!(refuted["items"][0]["href"], "/v1/decisions/4");
    let t0 = s
        .call("GET", "/v1/decisions?task=t0&kind=verify&since=1h", None)
        .ok();
    assert_eq!(t0["items"].as_array().unwrap().len(), 4);
    // Bad parameters are named.
    for (q, param) in [
        ("state=done", "state"),
        ("limit=0", "limit"),
        ("limit=x", "limit"),
        ("limit=501", "limit"),
        ("cursor=42", "cursor"),
        ("since=yesterday", "since"),
        ("kind=hook", "kind"),
        ("colour=red", "colour"),
        ("state=verified&state=refuted", "state"),
    ] {
        let p = s
            .call("GET", &format!("/v1/decisions?{q}"), None)
            .problem(400);
        assert_eq!(p["parameter"], param, "{q}: {p}");
    }
    s.call("GET", "/v1/decisions/999", None).problem(404);
    for bad in ["0", "-1", "abc", "1e3", "99999999999999999999"] {
        s.call("GET", &format!("/v1/decisions/{bad}"), None)
            .problem(400);
    }
}

#[test]
fn health_openapi_and_metrics() {
    let s = Server::start(|_, _| {});
    let h = s.raw("GET", "/healthz", &[], None).ok();
    assert_eq!(h["status"], "ok");
    let doc = s.raw("GET", "/openapi.json", &[], None).ok();
    assert_eq!(doc["openapi"], "3.1.0");
    for path in [
        "/v1/verify",
        "/v1/gate/{contract}",
        "/v1/decisions",
        "/v1/decisions/{id}",
        "/v1/contracts",
        "/v1/contracts/{name}",
        "/v1/jobs/{id}",
        "/healthz",
        "/metrics",
    ] {
        assert!(
            doc["paths"].get(path).is_some(),
            "{path} is not in the OpenAPI document"
        );
    }
    assert!(doc["components"]["schemas"].get("Claim").is_some());
    assert!(doc["components"]["schemas"].get("DecisionView").is_some());
    s.call("POST", "/v1/verify", Some(&example_claim())).ok();
    let m = s.raw("GET", "/metrics", &[], None);
    assert_eq!(m.status, 200);
    assert!(
        m.header("content-type")
            .unwrap()
            .starts_with("text/plain; version=0.0.4")
    );
    let text = String::from_utf8(m.body).unwrap();
    assert!(
        text.contains("evident_decisions_total{kind=\"verify\",state=\"verified\"} 1"),
        "{text}"
    );
    assert!(
        text.contains(
            "evident_http_request_duration_seconds_bucket{route=\"/v1/verify\",le=\"+Inf\"} 1"
        ),
        "{text}"
    );
}

#[test]
fn contracts_are_listed_without_held_out_checks_or_secrets() {
    let s = Server::start(|_, dir| {
        write_contract(&dir.join("contracts"), "files.toml", FILES);
        write_contract(
            &dir.join("contracts"),
            "db.toml",
            r#"[policy]
requires = ["state_readback"]

[[check]]
id = "row"
check_type = "state_readback"
covers = { target = "accounts/1" }
source = { postgres = { url_env = "BILLING_DB_URL", query = "SELECT password FROM users WHERE id = 1" } }
expected = { password = "hunter2secret" }
"#,
        );
        write_contract(
            &dir.join("contracts"),
            "broken.toml",
            "[policy]\nrequires = [\"nope\"]\n",
        );
        write_contract(&dir.join("contracts"), "not a name.toml", FILES);
    });
    let list = s.call("GET", "/v1/contracts", None).ok();
    let names: Vec<&str> = list["items"]
        .as_array()
        .unwrap()
        .iter()
        .map(|c| c["name"].as_str().unwrap())
        .collect();
    assert_eq!(names, vec!["broken", "db", "files"]);
    let broken = &list["items"][0];
    assert!(
        broken["error"].is_string() && broken["digest"].is_null(),
        "{broken}"
    );
    assert_eq!(list["items"][2]["hidden_checks"], 1);
    let files = s.call("GET", "/v1/contracts/files", None).ok();
    let ids: Vec<&str> = files["checks"]
        .as_array()
        .unwrap()
        .iter()
        .map(|c| c["id"].as_str().unwrap())
        .collect();
    assert_eq!(ids, vec!["note"]);
    assert_eq!(files["hidden_checks"], 1);
    let text = files.to_string();
    assert!(
        !text.contains("secret-size") && !text.contains("12345"),
        "{text}"
    );
    let db = s.call("GET", "/v1/contracts/db", None).ok().to_string();
    assert!(!db.contains("hunter2secret"), "{db}");
    assert!(db.starts_with('{'));
    s.call("GET", "/v1/contracts/broken", None).problem(500);
}
