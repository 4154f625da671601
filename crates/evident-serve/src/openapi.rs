//! The OpenAPI 3.1 document (`GET /openapi.json`), its schemas generated from the
//! same schemars types the API serializes and the JSON Schemas are made from
//! (`evident schema claim`), so the description cannot drift from the wire.

use crate::problem::Problem;
use crate::routes::{ContractList, Health, JobView};
use evident_pipeline::catalog::ContractView;
use evident_pipeline::view::{DecisionPage, DecisionView};
use schemars::generate::{SchemaGenerator, SchemaSettings};
use serde_json::{Value, json};

/// The document.
pub fn document() -> Value {
    let mut g = SchemaGenerator::new(SchemaSettings::draft2020_12().with(|s| {
        s.definitions_path = "/components/schemas".into();
        s.meta_schema = None;
    }));
    let claim = g.subschema_for::<evident_format::Claim>().to_value();
    let decision = g.subschema_for::<DecisionView>().to_value();
    let page = g.subschema_for::<DecisionPage>().to_value();
    let contracts = g.subschema_for::<ContractList>().to_value();
    let contract = g.subschema_for::<ContractView>().to_value();
    let job = g.subschema_for::<JobView>().to_value();
    let health = g.subschema_for::<Health>().to_value();
    let problem = g.subschema_for::<Problem>().to_value();
    let schemas = Value::Object(g.take_definitions(true));

    let problem_content = json!({ "application/problem+json": { "schema": problem } });
    let err = |d: &str| json!({ "description": d, "content": problem_content });
    let ok = |d: &str, schema: &Value| json!({ "description": d, "content": { "application/json": { "schema": schema } } });
    let common = |extra: Vec<(&str, Value)>| {
        let mut m = serde_json::Map::new();
        for (code, v) in extra {
            m.insert(code.into(), v);
        }
        m.entry("400").or_insert_with(|| {
            err("Two Host headers, or a request target whose authority is not the Host.")
        });
        m.insert(
            "421".into(),
            err("The Host header names another server (DNS-rebinding guard)."),
        );
        m.insert("404".into(), err("Not found."));
        m.insert("405".into(), err("Method not allowed."));
        m.insert("500".into(), err("The server failed; its log says why."));
        m.insert(
            "503".into(),
            err(
                "Unavailable: the ledger, a deadline, too many gates waiting or claims being decided (`Retry-After`), or too many connections.",
            ),
        );
        Value::Object(m)
    };
    let auth401 = || {
        err(
            "No valid bearer token (write routes always; read routes when the server does not listen on loopback).",
        )
    };
    let read_security = json!([{}, { "bearer": [] }]);
    let write_security = json!([{ "bearer": [] }]);
    let string_param = |name: &str, desc: &str| json!({ "name": name, "in": "query", "required": false, "description": desc, "schema": { "type": "string" } });
    let body = json!({
        "required": true,
        "description": "A Completion Claim v0.1 document (the schema `evident schema claim` prints).",
        "content": { "application/json": { "schema": claim } }
    });
    let idem = json!({
        "name": "Idempotency-Key", "in": "header", "required": false,
        "description": "A retried request with the same key (and the same body) returns the first request's decision.",
        "schema": { "type": "string", "minLength": 1, "maxLength": 200, "pattern": "^[!-~]+$" }
    });
    let write_errors = |extra: Vec<(&str, Value)>| {
        let mut v = vec![
            (
                "400",
                err(
                    "The claim is not valid (each error names its JSON path; nested deeper than 128 levels included), a parameter is wrong, or the Host is ambiguous (two Host headers, or a target naming another host).",
                ),
            ),
            ("401", auth401()),
            (
                "408",
                err("The body did not arrive within the request deadline."),
            ),
            ("413", err("The body is larger than the server's limit.")),
            ("415", err("The body is not sent as application/json.")),
            (
                "422",
                err("The Idempotency-Key was used for a different request."),
            ),
        ];
        v.extend(extra);
        common(v)
    };

    json!({
        "openapi": "3.1.0",
        "jsonSchemaDialect": "https://json-schema.org/draft/2020-12/schema",
        "info": {
            "title": "evident",
            "version": env!("CARGO_PKG_VERSION"),
            "description": "Decides whether an AI agent's \"done\" is true, from evidence that the world changed. Decisions are recorded in a hash-chained ledger. See docs/serve.md.",
            "license": { "name": "MIT OR Apache-2.0", "identifier": "MIT OR Apache-2.0" }
        },
        "components": {
            "schemas": schemas,
            "securitySchemes": {
                "bearer": { "type": "http", "scheme": "bearer", "description": "A token from `evident token new NAME`, listed by hash in the server's --tokens file." }
            }
        },
        "paths": {
            "/healthz": { "get": {
                "operationId": "health", "summary": "Liveness", "security": [{}],
                "responses": common(vec![("200", ok("Up.", &health))])
            }},
            "/metrics": { "get": {
                "operationId": "metrics", "summary": "Prometheus metrics (text format 0.0.4)", "security": read_security,
                "responses": common(vec![
                    ("200", json!({ "description": "Metrics.", "content": { "text/plain": { "schema": { "type": "string" } } } })),
                    ("401", auth401()),
                ])
            }},
            "/openapi.json": { "get": {
                "operationId": "openapi", "summary": "This document", "security": [{}],
                "responses": common(vec![("200", json!({ "description": "The OpenAPI document.", "content": { "application/json": { "schema": { "type": "object" } } } }))])
            }},
            "/v1/verify": { "post": {
                "operationId": "verify",
                "summary": "Decide a claim document from its own evidence, under the server's policy",
                "security": write_security,
                "parameters": [idem],
                "requestBody": body,
                "responses": write_errors(vec![("200", ok("The decision (recorded).", &decision))])
            }},
            "/v1/gate/{contract}": { "post": {
                "operationId": "gate",
                "summary": "Run the server's contract against the world and decide the claim",
                "security": write_security,
                "parameters": [
                    { "name": "contract", "in": "path", "required": true, "description": "A contract name from GET /v1/contracts.",
                      "schema": { "type": "string", "pattern": "^[A-Za-z0-9][A-Za-z0-9_-]{0,63}$" } },
                    { "name": "wait", "in": "query", "required": false, "description": "false: answer 202 at once with a job to poll.",
                      "schema": { "type": "boolean", "default": true } },
                    idem
                ],
                "requestBody": body,
                "responses": write_errors(vec![
                    ("200", ok("The decision (recorded).", &decision)),
                    ("202", ok("Started (wait=false): poll the job's href.", &job)),
                    ("504", err("Still running past the wait; the problem's `poll` says where to poll.")),
                ])
            }},
            "/v1/contracts": { "get": {
                "operationId": "listContracts", "summary": "The contracts this server gates with", "security": read_security,
                "responses": common(vec![("200", ok("The contracts.", &contracts)), ("401", auth401())])
            }},
            "/v1/contracts/{name}": { "get": {
                "operationId": "getContract", "summary": "What the gate will check under a contract (held-out checks only counted; no secret)",
                "security": read_security,
                "parameters": [{ "name": "name", "in": "path", "required": true, "schema": { "type": "string" } }],
                "responses": common(vec![
                    ("200", ok("The contract.", &contract)),
                    ("400", err("Not a contract name.")),
                    ("401", auth401()),
                ])
            }},
            "/v1/decisions": { "get": {
                "operationId": "listDecisions", "summary": "Recorded decisions, newest first", "security": read_security,
                "parameters": [
                    { "name": "state", "in": "query", "required": false, "schema": { "type": "string", "enum": ["verified", "unverified", "refuted", "partial"] } },
                    string_param("task", "The claim's task.id, exactly."),
                    { "name": "kind", "in": "query", "required": false, "schema": { "type": "string", "enum": ["verify", "gate"] } },
                    string_param("since", "RFC 3339, a date (2026-08-27) or an age (30m, 2h, 7d)."),
                    { "name": "limit", "in": "query", "required": false, "schema": { "type": "integer", "minimum": 1, "maximum": 500, "default": 50 } },
                    string_param("cursor", "A page's next_cursor.")
                ],
                "responses": common(vec![
                    ("200", ok("A page of decisions.", &page)),
                    ("400", err("A query parameter is wrong (the problem's `parameter` names it).")),
                    ("401", auth401()),
                ])
            }},
            "/v1/decisions/{id}": { "get": {
                "operationId": "getDecision", "summary": "One recorded decision", "security": read_security,
                "parameters": [{ "name": "id", "in": "path", "required": true, "description": "The record's number.",
                                 "schema": { "type": "string", "pattern": "^[1-9][0-9]{0,17}$" } }],
                "responses": common(vec![
                    ("200", ok("The decision.", &decision)),
                    ("400", err("Not a record id.")),
                    ("401", auth401()),
                ])
            }},
            "/v1/jobs/{id}": { "get": {
                "operationId": "getJob", "summary": "A gate started with wait=false", "security": read_security,
                "parameters": [{ "name": "id", "in": "path", "required": true, "schema": { "type": "string", "pattern": "^[0-9a-f]{32}$" } }],
                "responses": common(vec![("200", ok("The job.", &job)), ("401", auth401())])
            }}
        }
    })
}
