//! `decide` on the spec's example document and on a document with 100 mutations and
//! 1,000 evidence items (criterion; `cargo bench -p evident-rules`).

use criterion::{Criterion, criterion_group, criterion_main};
use evident_format::{Claim, Timestamp};
use evident_rules::{Options, decide};
use serde_json::{Value, json};
use std::hint::black_box;

fn spec_example() -> Vec<u8> {
    let path = concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/../../testdata/conformance/claim-v0.1/spec-example-verified.json"
    );
    let v: Value = serde_json::from_slice(&std::fs::read(path).unwrap()).unwrap();
    serde_json::to_vec(&v["document"]).unwrap()
}

/// 100 mutations, 1,000 evidence items: each mutation covered by ten items of mixed
/// kinds and outcomes, so every branch of `decide` runs.
fn large() -> Vec<u8> {
    let mutations: Vec<Value> = (0..100)
        .map(|i| json!({"id": format!("m{i}"), "kind": "state_write", "target": format!("accounts/{i}"), "at": "2026-08-27T18:04:02Z"}))
        .collect();
    let evidence: Vec<Value> = (0..1000)
        .map(|j| {
            let kind = if j % 10 == 9 { "self_attested" } else { "independent" };
            let check_type = ["state_readback", "test_run", "endpoint_health"][j % 3];
            json!({
                "check_type": check_type,
                "target": format!("accounts/{}", j % 100),
                "expected": {"billing_zip": "94107", "nested": {"a": [1, 2, 3], "b": 1.50}},
                "observed_value": {"billing_zip": "94107", "nested": {"a": [1, 2, 3], "b": 15e-1, "c": true}, "extra": "x"},
                "at": "2026-08-27T18:04:09.5Z",
                "covers": [format!("m{}", j % 100)],
                "verifier": {"id": "bench", "kind": kind}
            })
        })
        .collect();
    serde_json::to_vec(&json!({
        "spec_version": "0.1",
        "task": {"id": "bench"},
        "claimed_outcome": "many writes",
        "mutations": mutations,
        "evidence": evidence,
        "policy": {"id": "p", "requires": ["state_readback", "test_run", "endpoint_health"], "max_age_s": 300}
    }))
    .unwrap()
}

fn bench(c: &mut Criterion) {
    let now = Timestamp::parse("2026-08-27T18:04:10Z").unwrap();
    for (name, bytes) in [
        ("spec_example", spec_example()),
        ("100_mutations_1000_evidence", large()),
    ] {
        let doc = Claim::parse(&bytes, name).unwrap();
        c.bench_function(&format!("decide/{name}"), |b| {
            b.iter(|| decide(black_box(&doc.claim), black_box(&now), &Options::default()))
        });
        c.bench_function(&format!("parse_and_decide/{name}"), |b| {
            b.iter(|| {
                let doc = Claim::parse(black_box(&bytes), name).unwrap();
                decide(&doc.claim, &now, &Options::default())
            })
        });
    }
}

criterion_group!(benches, bench);
criterion_main!(benches);
