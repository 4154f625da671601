//! Parity with the peer's own outputs, adapters on real-shaped traces, and the engine
//! against the simple evaluator on a generated corpus.

use std::path::PathBuf;

use evident_eval::adapt::{self, Format};
use evident_eval::engine::{self, Mode, NoHooks, Options};
use serde_json::Value;

fn data(name: &str) -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
        .join("tests/data")
        .join(name)
}

fn read(name: &str) -> Vec<u8> {
    std::fs::read(data(name)).unwrap_or_else(|e| panic!("{name}: {e}"))
}

fn run(input: &[u8], mode: Mode, threads: usize, chunk: usize) -> String {
    let mut opts = Options::new(mode, "input");
    opts.threads = threads;
    opts.chunk_bytes = chunk;
    let mut out = Vec::new();
    engine::run(&mut &input[..], &mut out, &opts, &mut NoHooks, None).expect("run");
    String::from_utf8(out).expect("utf-8")
}

fn json(s: &[u8]) -> Value {
    serde_json::from_slice(s).expect("json")
}

mod peer_cases {
    use super::*;

    #[test]
    fn plain_output_is_byte_identical() {
        let out = run(&read("peer/cases.jsonl"), Mode::Plain, 2, 1 << 20);
        assert_eq!(out, String::from_utf8(read("peer/cases.txt")).unwrap());
    }

    #[test]
    fn json_output_equals_expected_as_values_and_bytes() {
        let out = run(&read("peer/cases.jsonl"), Mode::Json, 2, 1 << 20);
        assert_eq!(json(out.as_bytes()), json(&read("peer/cases.json")));
        // The peer's strings are ASCII, so even the bytes agree.
        assert_eq!(out.as_bytes(), &read("peer/cases.json")[..]);
        let out = run(&read("peer/minimal_cases.jsonl"), Mode::Json, 1, 1 << 20);
        assert_eq!(json(out.as_bytes()), json(&read("peer/minimal_cases.json")));
    }

    #[test]
    fn metrics_equal_expected_as_values_and_bytes() {
        let out = run(&read("peer/cases.jsonl"), Mode::Metrics, 2, 1 << 20);
        assert_eq!(json(out.as_bytes()), json(&read("peer/cases.metrics.json")));
        assert_eq!(out.as_bytes(), &read("peer/cases.metrics.json")[..]);
    }

    #[test]
    fn jsonl_lines_are_the_json_array_items() {
        let lines = run(&read("peer/cases.jsonl"), Mode::Jsonl, 2, 1 << 20);
        let items: Vec<Value> = lines.lines().map(|l| json(l.as_bytes())).collect();
        assert_eq!(Value::Array(items), json(&read("peer/cases.json")));
    }

    #[test]
    fn tiny_chunks_and_many_threads_change_nothing() {
        let input = read("peer/cases.jsonl");
        let one = run(&input, Mode::Json, 1, 1 << 20);
        // 1024-byte chunks split the 16 cases over many chunks and workers.
        let many = run(&input, Mode::Json, 4, 1024);
        assert_eq!(one, many);
    }
}

mod peer_adapters {
    use super::*;

    fn adapt_file(format: Format, trace: &str, reqs: &str, source_ref: &str) -> adapt::Envelope {
        let reqs = adapt::parse_requirements(&read(reqs)).expect("requirements");
        adapt::adapt_bytes(format, &read(trace), reqs, source_ref).expect("adapt")
    }

    #[test]
    fn generic_and_openai_match_the_peer_byte_for_byte() {
        for (format, trace, source_ref, stem) in [
            (
                Format::Generic,
                "peer/generic_trace.json",
                "run-123",
                "generic",
            ),
            (
                Format::OpenAi,
                "peer/openai_tool_trace.json",
                "response-123",
                "openai",
            ),
        ] {
            let env = adapt_file(format, trace, "peer/requirements.json", source_ref);
            let case = adapt::to_pretty(&env.case_value()).unwrap();
            let full = adapt::to_pretty(&env.envelope_value()).unwrap();
            assert_eq!(
                case.as_bytes(),
                &read(&format!("peer/adapt-{stem}.json"))[..],
                "{stem}"
            );
            assert_eq!(
                full.as_bytes(),
                &read(&format!("peer/adapt-{stem}.envelope.json"))[..],
                "{stem}"
            );
        }
    }

    #[test]
    fn raw_sha256_ignores_key_order_and_whitespace() {
        let a = br#"{"trace_id":"t","task":"x","completion_claimed":true,"events":[{"action":"a","success":true,"evidence":{"n":1.50}}]}"#;
        let b = br#"{ "events" : [ { "evidence":{"n":1.5}, "success":true, "action":"a" } ], "completion_claimed":true, "task":"x", "trace_id":"t" }"#;
        let reqs = vec![adapt::Requirement {
            action: "a".into(),
            evidence_fields: vec![],
        }];
        let ea = adapt::adapt_bytes(Format::Generic, a, reqs.clone(), "r").unwrap();
        let eb = adapt::adapt_bytes(Format::Generic, b, reqs, "r").unwrap();
        assert_eq!(ea.source.raw_sha256, eb.source.raw_sha256);
        assert_eq!(ea.source.raw_sha256.len(), 64);
    }

    fn reject(format: Format, trace: &str) -> String {
        let reqs = vec![adapt::Requirement {
            action: "a".into(),
            evidence_fields: vec![],
        }];
        adapt::adapt_bytes(format, trace.as_bytes(), reqs, "r")
            .unwrap_err()
            .to_string()
    }

    const HEAD: &str = r#""trace_id":"t","task":"x","completion_claimed":true"#;

    #[test]
    fn generic_rejections() {
        let r = |events: &str| reject(Format::Generic, &format!("{{{HEAD},\"events\":{events}}}"));
        assert!(
            r(r#"[{"action":"a","success":"yes"}]"#)
                .contains("events[0].success must be a boolean")
        );
        assert!(
            r(r#"[{"action":"a","success":true,"evidence":[]}]"#)
                .contains("events[0].evidence must be an object")
        );
        assert!(r(r#"[{"action":"","success":true}]"#).contains("events[0].action"));
        assert!(r(r#"[{"source_event_id":"e","action":"a","success":true},{"source_event_id":"e","action":"a","success":false}]"#).contains("duplicate source_event_id 'e'"));
        assert!(r(r#"{}"#).contains("events must be an array"));
        assert!(
            reject(
                Format::Generic,
                r#"{"trace_id":1,"task":"x","completion_claimed":true,"events":[]}"#
            )
            .contains("trace_id")
        );
        assert!(reject(Format::Generic, r#"{"trace_id":"t","task":"x","completion_claimed":true,"completion_claimed":false,"events":[]}"#).contains("duplicate key 'completion_claimed'"));
    }

    #[test]
    fn openai_rejections() {
        let r =
            |records: &str| reject(Format::OpenAi, &format!("{{{HEAD},\"records\":{records}}}"));
        let call = r#"{"type":"tool_call","tool_call_id":"c1","name":"a","arguments":{}}"#;
        let res = r#"{"type":"tool_result","tool_call_id":"c1","success":true,"evidence":{}}"#;
        assert!(r(&format!("[{call}]")).contains("tool_call 'c1' has no result"));
        assert!(r(&format!("[{res}]")).contains("tool_result 'c1' has no earlier tool_call"));
        assert!(r(&format!("[{call},{call},{res}]")).contains("duplicate tool_call id 'c1'"));
        assert!(r(&format!("[{call},{res},{res}]")).contains("duplicate tool_result id 'c1'"));
        assert!(
            r(r#"[{"type":"assistant_message","text":"done"}]"#)
                .contains("unsupported record type 'assistant_message'")
        );
        assert!(
            r(&format!(r#"[{},{res}]"#, call.replace("{}", "[]")))
                .contains("arguments must be an object")
        );
        assert!(
            r(&format!("[{call},{}]", res.replace("true", "\"yes\"")))
                .contains("success must be a boolean")
        );
    }
}

mod new_formats {
    use super::*;
    use evident_eval::case::parse_case;
    use evident_eval::evaluate::{evaluate, evaluation};

    fn adapt_file(format: Format, trace: &str, reqs: &str) -> adapt::Envelope {
        let reqs = adapt::parse_requirements(&read(reqs)).expect("requirements");
        adapt::adapt_bytes(format, &read(trace), reqs, "ref-1").expect("adapt")
    }

    fn status_of(env: &adapt::Envelope) -> (String, bool, bool) {
        let line = serde_json::to_vec(&env.case_value()).unwrap();
        let case = parse_case(&line).unwrap();
        let o = evaluate(&case);
        (
            evaluation(&case).status.to_owned(),
            o.recovered,
            o.regressed,
        )
    }

    #[test]
    fn anthropic_retry_recovers_and_arguments_stay_out() {
        let env = adapt_file(
            Format::Anthropic,
            "traces/anthropic_email_retry.json",
            "peer/requirements.json",
        );
        assert_eq!(env.events.len(), 2);
        assert!(!env.events[0].success, "is_error: true is a failure");
        assert!(
            env.events[0].evidence.is_empty(),
            "plain-text output gives no evidence, arguments never do"
        );
        assert_eq!(env.events[1].evidence["message_id"], "msg-7f3a");
        assert_eq!(env.events[1].source_event_id.as_deref(), Some("toolu_01B2"));
        assert_eq!(env.source.adapter, "anthropic-messages@1");
        assert_eq!(status_of(&env), ("VERIFIED_COMPLETE".into(), true, false));
    }

    #[test]
    fn responses_error_member_is_a_failure() {
        let env = adapt_file(
            Format::OpenAiResponses,
            "traces/responses_refund.json",
            "traces/responses_refund.requirements.json",
        );
        let actions: Vec<_> = env
            .events
            .iter()
            .map(|e| (e.action.as_str(), e.success))
            .collect();
        assert_eq!(
            actions,
            vec![("issue_refund", true), ("update_record", false)],
            "call order"
        );
        assert_eq!(env.events[0].evidence["refund_id"], "re_3PqZ");
        assert_eq!(status_of(&env), ("FAILED".into(), false, false));
    }

    #[test]
    fn mcp_error_response_after_success_regresses() {
        let env = adapt_file(
            Format::Mcp,
            "traces/mcp_write_file.json",
            "traces/mcp_write_file.requirements.json",
        );
        assert_eq!(
            env.events.len(),
            3,
            "initialize and tools/list are not tool calls"
        );
        assert_eq!(
            env.events[0].evidence["sha256"], "9f86d081884c7d65",
            "structuredContent wins over arguments"
        );
        assert!(env.events[1].success && !env.events[2].success);
        assert_eq!(env.events[2].source_event_id.as_deref(), Some("4"));
        assert_eq!(status_of(&env), ("FAILED".into(), false, true));
    }

    #[test]
    fn otel_orders_by_start_time_and_error_status_fails() {
        let env = adapt_file(
            Format::Otel,
            "traces/otel_deploy.json",
            "traces/otel_deploy.requirements.json",
        );
        let actions: Vec<_> = env
            .events
            .iter()
            .map(|e| (e.action.as_str(), e.success))
            .collect();
        assert_eq!(
            actions,
            vec![("deploy_service", false), ("open_pull_request", true)]
        );
        assert_eq!(
            env.events[1].evidence["pr_url"],
            "https://git.example.test/pr/42"
        );
        assert_eq!(status_of(&env), ("FAILED".into(), false, false));
    }

    fn reject(format: Format, body: &str) -> String {
        let reqs = vec![adapt::Requirement {
            action: "a".into(),
            evidence_fields: vec![],
        }];
        let trace = format!(r#"{{"trace_id":"t","task":"x","completion_claimed":true,{body}}}"#);
        adapt::adapt_bytes(format, trace.as_bytes(), reqs, "r")
            .unwrap_err()
            .to_string()
    }

    #[test]
    fn anthropic_rejections() {
        let r = |m: &str| reject(Format::Anthropic, &format!("\"messages\":{m}"));
        let use_ = r#"{"role":"assistant","content":[{"type":"tool_use","id":"u1","name":"a","input":{}}]}"#;
        let res = r#"{"role":"user","content":[{"type":"tool_result","tool_use_id":"u1","content":"{}"}]}"#;
        assert!(r(&format!("[{res},{use_}]")).contains("has no earlier tool_use"));
        assert!(r(&format!("[{use_},{use_},{res}]")).contains("duplicate tool_use id 'u1'"));
        assert!(r(&format!("[{use_},{res},{res}]")).contains("duplicate tool_result id 'u1'"));
        assert!(
            r(&format!(
                "[{},{res}]",
                use_.replace("\"input\":{}", "\"input\":[]")
            ))
            .contains("input must be an object")
        );
        assert!(
            r(&format!(
                "[{use_},{}]",
                res.replace("\"content\":\"{}\"", "\"is_error\":\"yes\"")
            ))
            .contains("is_error must be a boolean")
        );
        assert!(
            r(&format!("[{},{res}]", use_.replace("assistant", "user")))
                .contains("tool_use outside an assistant message")
        );
        assert!(r(r#"[{"role":"system","content":"x"}]"#).contains("role"));
        assert!(
            r(&format!(
                "[{use_},{}]",
                res.replace("\"{}\"", "\"{\\\"k\\\":1,\\\"k\\\":2}\"")
            ))
            .contains("duplicate key 'k'")
        );
    }

    #[test]
    fn responses_rejections() {
        let r = |m: &str| reject(Format::OpenAiResponses, &format!("\"items\":{m}"));
        let call = r#"{"type":"function_call","call_id":"c1","name":"a","arguments":"{}"}"#;
        let out = r#"{"type":"function_call_output","call_id":"c1","output":"ok"}"#;
        assert!(r(&format!("[{out},{call}]")).contains("has no earlier function_call"));
        assert!(r(&format!("[{call},{call},{out}]")).contains("duplicate function_call id 'c1'"));
        assert!(
            r(&format!("[{call},{out},{out}]")).contains("duplicate function_call_output id 'c1'")
        );
        assert!(r(&format!("[{call},{}]", out.replace("\"ok\"", "5"))).contains("output must be"));
        assert!(
            r(&format!("[{},{out}]", call.replace("\"{}\"", "{}")))
                .contains("arguments must be a string")
        );
        assert!(r(r#"[{"call_id":"c1"}]"#).contains("type must be a string"));
    }

    #[test]
    fn responses_incomplete_call_fails_and_plain_text_is_no_evidence() {
        let reqs = vec![adapt::Requirement {
            action: "a".into(),
            evidence_fields: vec![],
        }];
        let trace = r#"{"trace_id":"t","task":"x","completion_claimed":true,"items":[
            {"type":"function_call","call_id":"c1","name":"a","arguments":"{}","status":"incomplete"},
            {"type":"function_call_output","call_id":"c1","output":"{\"ok\":true}"},
            {"type":"function_call","call_id":"c2","name":"b","arguments":"{}"},
            {"type":"function_call_output","call_id":"c2","output":"Error: boom"},
            {"type":"function_call","call_id":"c3","name":"c","arguments":"{}"},
            {"type":"function_call_output","call_id":"c3","output":"{\"error\":null,\"id\":3}"}]}"#;
        let env = adapt::adapt_bytes(Format::OpenAiResponses, trace.as_bytes(), reqs, "r").unwrap();
        let got: Vec<_> = env
            .events
            .iter()
            .map(|e| (e.success, e.evidence.len()))
            .collect();
        assert_eq!(got, vec![(false, 1), (true, 0), (true, 2)]);
    }

    #[test]
    fn mcp_rejections() {
        let r = |m: &str| reject(Format::Mcp, &format!("\"messages\":{m}"));
        let call = r#"{"jsonrpc":"2.0","id":7,"method":"tools/call","params":{"name":"a","arguments":{}}}"#;
        let ok = r#"{"jsonrpc":"2.0","id":7,"result":{"content":[]}}"#;
        assert!(r(&format!("[{ok}]")).contains("response 7 has no earlier request"));
        assert!(r(&format!("[{call},{call},{ok}]")).contains("duplicate request id 7"));
        assert!(r(&format!("[{call},{ok},{ok}]")).contains("duplicate response to request 7"));
        assert!(
            r(&format!(
                "[{call},{}]",
                ok.replace("\"content\":[]", "\"isError\":\"no\"")
            ))
            .contains("isError must be a boolean")
        );
        assert!(
            r(&format!("[{}]", call.replace("\"2.0\"", "\"1.0\"")))
                .contains("jsonrpc must be \"2.0\"")
        );
        assert!(
            r(&format!(
                "[{},{ok}]",
                call.replace("\"arguments\":{}", "\"arguments\":[]")
            ))
            .contains("arguments must be an object")
        );
        assert!(
            r(r#"[{"jsonrpc":"2.0","id":1,"result":{},"error":{}}]"#)
                .contains("exactly one of result and error")
        );
        let both = format!("[{call},{},{ok}]", call.replace("7", "\"7\""));
        assert!(r(&both).contains("used both as a string and as a number"));
    }

    #[test]
    fn mcp_is_error_is_a_tool_failure() {
        let reqs = vec![adapt::Requirement {
            action: "a".into(),
            evidence_fields: vec![],
        }];
        let trace = r#"{"trace_id":"t","task":"x","completion_claimed":true,"messages":[
            {"jsonrpc":"2.0","id":"x","method":"tools/call","params":{"name":"a"}},
            {"jsonrpc":"2.0","id":"x","result":{"content":[{"type":"text","text":"quota exceeded"}],"isError":true}}]}"#;
        let env = adapt::adapt_bytes(Format::Mcp, trace.as_bytes(), reqs, "r").unwrap();
        assert!(!env.events[0].success);
        assert_eq!(env.events[0].source_event_id.as_deref(), Some("x"));
    }

    #[test]
    fn otel_rejections() {
        let span = |attrs: &str, extra: &str| {
            format!(
                r#""resourceSpans":[{{"scopeSpans":[{{"spans":[{{"spanId":"s1","startTimeUnixNano":"10"{extra},"attributes":[{attrs}]}}]}}]}}]"#
            )
        };
        let op = r#"{"key":"gen_ai.operation.name","value":{"stringValue":"execute_tool"}}"#;
        let name = r#"{"key":"gen_ai.tool.name","value":{"stringValue":"a"}}"#;
        assert!(reject(Format::Otel, &span(op, "")).contains("needs a non-empty gen_ai.tool.name"));
        assert!(
            reject(Format::Otel, &span(&format!("{op},{name},{name}"), ""))
                .contains("duplicate attribute 'gen_ai.tool.name'")
        );
        let bad_time = span(&format!("{op},{name}"), "").replace("\"10\"", "\"soon\"");
        assert!(reject(Format::Otel, &bad_time).contains("startTimeUnixNano"));
        let two = format!(
            r#""resourceSpans":[{{"scopeSpans":[{{"spans":[{{"spanId":"s1","startTimeUnixNano":"1","attributes":[{op},{name}]}},{{"spanId":"s1","startTimeUnixNano":"2","attributes":[{op},{name}]}}]}}]}}]"#
        );
        assert!(reject(Format::Otel, &two).contains("duplicate tool call id 's1'"));
        assert!(
            reject(Format::Otel, r#""resourceSpans":{}"#)
                .contains("resourceSpans must be an array")
        );
        assert!(
            reject(
                Format::Otel,
                &span(&format!("{op},{name}"), r#","status":{"code":true}"#)
            )
            .contains("status.code")
        );
    }
}

mod engine_vs_reference {
    use super::*;
    use evident_eval::case::{parse_case, parse_case_serde_json};
    use evident_eval::evaluate::evaluation;

    #[test]
    fn generated_corpus_same_answers_every_way() {
        let mut corpus = Vec::new();
        evident_eval::corpus::generate(&mut corpus, 3000, 42).unwrap();
        // Reference: one line at a time, serde_json parser, owned result objects.
        let reference: Vec<Value> = corpus
            .split(|&b| b == b'\n')
            .filter(|l| !l.is_empty())
            .map(|l| {
                let a = evaluation(&parse_case(l).unwrap());
                let b = evaluation(&parse_case_serde_json(l).unwrap());
                assert_eq!(a, b, "the fast reader and serde_json disagree");
                serde_json::to_value(a).unwrap()
            })
            .collect();
        for (threads, chunk) in [(1, 1 << 20), (2, 4096), (5, 1500)] {
            let out = run(&corpus, Mode::Jsonl, threads, chunk);
            let got: Vec<Value> = out.lines().map(|l| json(l.as_bytes())).collect();
            assert_eq!(got, reference, "threads {threads}, chunk {chunk}");
        }
        let m = json(run(&corpus, Mode::Metrics, 2, 8192).as_bytes());
        assert_eq!(m["total_cases"], 3000);
        let verified = reference
            .iter()
            .filter(|v| v["status"] == "VERIFIED_COMPLETE")
            .count();
        assert_eq!(m["status_counts"]["VERIFIED_COMPLETE"], verified);
    }
}

mod json_reader {
    use evident_eval::case::{parse_case, parse_case_serde_json};
    use evident_eval::corpus::Rng;
    use evident_eval::evaluate::evaluation;

    /// The hand-written reader and serde_json must accept and reject the same lines and
    /// give the same results when they accept.
    fn agree(line: &[u8]) {
        let a = parse_case(line).map(|c| evaluation(&c));
        // serde_json does not check UTF-8 inside strings it skips; the peer reads the
        // file as UTF-8 first, and so does evident.
        if std::str::from_utf8(line).is_err() {
            assert!(a.is_err(), "accepted invalid UTF-8");
            return;
        }
        let b = parse_case_serde_json(line).map(|c| evaluation(&c));
        match (&a, &b) {
            (Ok(x), Ok(y)) => assert_eq!(x, y, "{}", String::from_utf8_lossy(line)),
            (Err(x), Err(y)) => {
                // Validation messages (not syntax or duplicate-key ones, whose wording
                // comes from each parser) must be the same, so the order of checks is.
                let syntax = |m: &str| m.starts_with("invalid JSON") || m.contains("duplicate");
                if !syntax(&x.0) && !syntax(&y.0) {
                    assert_eq!(x, y, "{}", String::from_utf8_lossy(line));
                }
            }
            _ => panic!(
                "disagree on {:?}: fast {a:?} serde_json {b:?}",
                String::from_utf8_lossy(line)
            ),
        }
    }

    const BASE: &str = r#"{"case_id":"c","task":"t","completion_claimed":true,"requirements":[{"action":"a","evidence_fields":["k","m"]}],"events":[{"action":"a","success":true,"evidence":{"k":"v","m":[0]}}]}"#;

    #[test]
    fn edge_cases_agree() {
        let cases = [
            BASE.to_string(),
            BASE.replace("\"v\"", r#""\u00e9\ud83d\ude00\n\"\\\/""#),
            BASE.replace("\"v\"", r#""\ud83d""#),
            BASE.replace("\"v\"", r#""\udc00x""#),
            BASE.replace("\"v\"", "\"a\u{1}b\""),
            BASE.replace("\"v\"", r#""\x""#),
            BASE.replace("\"v\"", r#""  \t ""#),
            BASE.replace("\"v\"", r#""\u0020\u00a0""#),
            BASE.replace("[0]", "-0"),
            BASE.replace("[0]", "1.5e+10"),
            BASE.replace("[0]", "3E903"),
            BASE.replace("[0]", "01"),
            BASE.replace("[0]", "1."),
            BASE.replace("[0]", ".5"),
            BASE.replace("[0]", "-"),
            BASE.replace("[0]", "NaN"),
            BASE.replace("[0]", "tru"),
            BASE.replace("[0]", "[1,]"),
            BASE.replace("[0]", "{\"x\":1,}"),
            BASE.replace("[0]", "{}"),
            BASE.replace("[0]", "{\"a\":{\"b\":[null,{}]}}"),
            BASE.replace("[0]", "[[[[[]]]]]"),
            BASE.replace("\"c\"", "\"c\\u0000\""),
            format!("  {BASE}  \r"),
            format!("{BASE},"),
            format!("{BASE}{{}}"),
            BASE.replace("{\"case_id\"", "{ \"case_id\" ")
                .replace(",\"task\"", " , \"task\""),
            BASE.replace("\"task\":\"t\"", "\"ta\\u0073k\":\"t\""),
            BASE[..BASE.len() - 1].to_string(),
            String::new(),
            "null".into(),
            "\"str\"".into(),
            // Validation order and messages.
            r#"{"case_id":1,"task":"t"}"#.into(),
            r#"{"task":"t","case_id":"  "}"#.into(),
            r#"{"case_id":"c","task":"t","completion_claimed":"x","requirements":[]}"#.into(),
            r#"{"case_id":"c","task":"t","completion_claimed":true,"events":{}}"#.into(),
            r#"{"case_id":"c","task":"t","completion_claimed":true,"requirements":{},"events":{}}"#.into(),
            r#"{"case_id":"c","task":"t","completion_claimed":true,"requirements":[{"action":""}],"events":[5]}"#.into(),
            r#"{"case_id":"c","task":"t","completion_claimed":true,"requirements":[{"action":"a"},7],"events":[5]}"#.into(),
            r#"{"case_id":"c","task":"t","completion_claimed":true,"requirements":[{"action":"a","evidence_fields":"x"}],"events":[]}"#.into(),
            r#"{"case_id":"c","task":"t","completion_claimed":true,"requirements":[{"action":"a","evidence_fields":[" ","b"]}]}"#.into(),
            r#"{"case_id":"c","task":"t","completion_claimed":true,"requirements":[{"action":3,"evidence_fields":[1]}]}"#.into(),
            r#"{"case_id":"c","task":"t","completion_claimed":true,"requirements":[{"action":"a"}],"events":[{"action":"a","success":true,"evidence":[]}]}"#.into(),
            r#"{"case_id":"c","task":"t","completion_claimed":true,"requirements":[{"action":"a"}],"events":[{"action":"a"},{"action":""}]}"#.into(),
            r#"{"case_id":"c","task":"t","completion_claimed":true,"requirements":[{"action":"a"}],"events":[{"success":true,"action":null}]}"#.into(),
            r#"{"case_id":"c","task":"t","completion_claimed":true,"requirements":[{"action":"a"}],"events":[{"action":"a","success":null,"evidence":5}]}"#.into(),
            r#"{"case_id":"c","task":"t","completion_claimed":true,"requirements":[{"action":" a "}],"events":[{"action":"a ","success":true,"evidence":{"x":1}}]}"#.into(),
        ];
        for c in &cases {
            agree(c.as_bytes());
        }
        agree(b"{\"case_id\":\"\xc3\",\"task\":\"t\"}");
        agree(b"{\"case_id\":\"c\xff\",\"task\":\"t\"}");
    }

    #[test]
    fn random_mutations_agree() {
        let mut corpus = Vec::new();
        evident_eval::corpus::generate(&mut corpus, 200, 9).unwrap();
        let lines: Vec<&[u8]> = corpus
            .split(|&b| b == b'\n')
            .filter(|l| !l.is_empty())
            .collect();
        let alphabet = b"{}[]\",:\\ u0123456789.eE+-tfnal\x01\xc3\xa9";
        let mut rng = Rng::new(2024);
        for i in 0..20_000 {
            let mut line = lines[i % lines.len()].to_vec();
            for _ in 0..rng.range(1, 3) {
                let at = rng.range(0, line.len() as u64 - 1) as usize;
                match rng.range(0, 2) {
                    0 => line[at] = alphabet[rng.range(0, alphabet.len() as u64 - 1) as usize],
                    1 => {
                        line.remove(at);
                    }
                    _ => line.insert(
                        at,
                        alphabet[rng.range(0, alphabet.len() as u64 - 1) as usize],
                    ),
                }
            }
            agree(&line);
        }
    }
}

mod adapters_never_panic {
    use super::*;
    use evident_eval::corpus::Rng;

    /// Mutated fixtures must be adapted or rejected, never crash the process.
    #[test]
    fn mutated_traces_are_adapted_or_rejected() {
        let fixtures = [
            (Format::Generic, "peer/generic_trace.json"),
            (Format::OpenAi, "peer/openai_tool_trace.json"),
            (Format::Anthropic, "traces/anthropic_email_retry.json"),
            (Format::OpenAiResponses, "traces/responses_refund.json"),
            (Format::Mcp, "traces/mcp_write_file.json"),
            (Format::Otel, "traces/otel_deploy.json"),
        ];
        let alphabet = b"{}[]\",:\\ 0123456789.eE-tfnul\x01\xc3";
        let mut rng = Rng::new(77);
        let reqs = adapt::parse_requirements(&read("peer/requirements.json")).unwrap();
        let (mut ok, mut rejected) = (0, 0);
        for (format, file) in fixtures {
            let base = read(file);
            for _ in 0..1500 {
                let mut t = base.clone();
                for _ in 0..rng.range(1, 4) {
                    let at = rng.range(0, t.len() as u64 - 1) as usize;
                    let c = alphabet[rng.range(0, alphabet.len() as u64 - 1) as usize];
                    match rng.range(0, 2) {
                        0 => t[at] = c,
                        1 => {
                            t.remove(at);
                        }
                        _ => t.insert(at, c),
                    }
                }
                match adapt::adapt_bytes(format, &t, reqs.clone(), "r") {
                    Ok(env) => {
                        ok += 1;
                        adapt::to_pretty(&env.envelope_value()).unwrap();
                    }
                    Err(e) => {
                        rejected += 1;
                        assert!(!e.to_string().is_empty());
                    }
                }
            }
        }
        // Both outcomes occur, so the mutations reach past the JSON syntax.
        assert!(ok > 100 && rejected > 100, "ok {ok}, rejected {rejected}");
    }
}

mod differential {
    use super::*;

    /// 400 valid but awkward cases (Unicode whitespace, blank values, non-ASCII ids),
    /// against the output of the peer's own evaluator on them (see the data NOTE).
    #[test]
    fn tricky_cases_match_the_peer_exactly() {
        let input = read("differential/tricky.jsonl");
        let plain = run(&input, Mode::Plain, 2, 4096);
        assert_eq!(plain.as_bytes(), &read("differential/tricky.peer.txt")[..]);
        let ours = run(&input, Mode::Jsonl, 3, 2048);
        let peer = String::from_utf8(read("differential/tricky.peer.jsonl")).unwrap();
        let (ours, peer): (Vec<Value>, Vec<Value>) = (
            ours.lines().map(|l| json(l.as_bytes())).collect(),
            peer.lines().map(|l| json(l.as_bytes())).collect(),
        );
        assert_eq!(ours.len(), 400);
        assert_eq!(ours, peer);
        let metrics = run(&input, Mode::Metrics, 2, 4096);
        assert_eq!(
            metrics.as_bytes(),
            &read("differential/tricky.peer.metrics.json")[..]
        );
    }
}

/// Issue 11, item 3: every adapter pairs strictly. Out of order (a result before its
/// call), duplicate (an id already waiting) and orphan (a result no call waits for)
/// are errors; an id reused after its result is a new call; a call with no result is
/// an error in seed 001's formats and an unfinished call in agent-native logs.
mod strict_pairing {
    use super::*;
    use evident_eval::case::parse_case;
    use evident_eval::evaluate::evaluation;

    const HEAD: &str = r#""trace_id":"t","task":"x","completion_claimed":true"#;

    fn reqs() -> Vec<adapt::Requirement> {
        vec![adapt::Requirement {
            action: "a".into(),
            evidence_fields: vec![],
        }]
    }

    fn adapt_body(format: Format, key: &str, items: &[&str]) -> Result<adapt::Envelope, String> {
        let trace = format!("{{{HEAD},\"{key}\":[{}]}}", items.join(","));
        adapt::adapt_bytes(format, trace.as_bytes(), reqs(), "r").map_err(|e| e.to_string())
    }

    /// (format, payload key, a call with id ID, its result with id ID)
    fn shapes() -> Vec<(Format, &'static str, String, String)> {
        let chat_call = r#"{"role":"assistant","content":null,"tool_calls":[{"id":"ID","type":"function","function":{"name":"a","arguments":"{}"}}]}"#;
        let chat_res = r#"{"role":"tool","tool_call_id":"ID","content":"{\"ok\":1}"}"#;
        vec![
            (
                Format::OpenAi,
                "records",
                r#"{"type":"tool_call","tool_call_id":"ID","name":"a","arguments":{}}"#.into(),
                r#"{"type":"tool_result","tool_call_id":"ID","success":true,"evidence":{}}"#.into(),
            ),
            (
                Format::Anthropic,
                "messages",
                r#"{"role":"assistant","content":[{"type":"tool_use","id":"ID","name":"a","input":{}}]}"#.into(),
                r#"{"role":"user","content":[{"type":"tool_result","tool_use_id":"ID","content":"{}"}]}"#.into(),
            ),
            (
                Format::OpenAiResponses,
                "items",
                r#"{"type":"function_call","call_id":"ID","name":"a","arguments":"{}"}"#.into(),
                r#"{"type":"function_call_output","call_id":"ID","output":"{}"}"#.into(),
            ),
            (
                Format::Mcp,
                "messages",
                r#"{"jsonrpc":"2.0","id":"ID","method":"tools/call","params":{"name":"a","arguments":{}}}"#.into(),
                r#"{"jsonrpc":"2.0","id":"ID","result":{"content":[]}}"#.into(),
            ),
            (Format::OpenAiChat, "messages", chat_call.into(), chat_res.into()),
        ]
    }

    fn run(format: Format, key: &str, items: &[String]) -> Result<adapt::Envelope, String> {
        let items: Vec<&str> = items.iter().map(String::as_str).collect();
        if format == Format::OpenAiChat {
            let trace = format!("{{{HEAD},\"messages\":[{}]}}", items.join(","));
            return adapt::adapt_bytes_with(
                format,
                trace.as_bytes(),
                reqs(),
                "r",
                &adapt::AdaptOptions::default(),
            )
            .map_err(|e| e.to_string());
        }
        adapt_body(format, key, &items)
    }

    #[test]
    fn out_of_order_duplicate_and_orphan_are_errors_in_every_adapter() {
        for (format, key, call, res) in shapes() {
            let c = |id: &str| call.replace("ID", id);
            let r = |id: &str| res.replace("ID", id);
            let name = format.name();
            // The attack: a result placed before its call (the openai adapter used to
            // pair it and say VERIFIED_COMPLETE).
            let e = run(format, key, &[r("c1"), c("c1")]).unwrap_err();
            assert!(e.contains("has no earlier"), "{name}: {e}");
            // A duplicate: the id is still waiting.
            let e = run(format, key, &[c("c1"), c("c1"), r("c1")]).unwrap_err();
            assert!(
                e.contains("duplicate") && e.contains("still waiting"),
                "{name}: {e}"
            );
            // An orphan, and a second result.
            let e = run(format, key, &[c("c1"), r("c1"), r("c2")]).unwrap_err();
            assert!(e.contains("has no earlier"), "{name}: {e}");
            let e = run(format, key, &[c("c1"), r("c1"), r("c1")]).unwrap_err();
            assert!(e.contains("duplicate"), "{name}: {e}");
            // The honest twin: an id reused after its result is a new call.
            let env = run(format, key, &[c("c1"), r("c1"), c("c1"), r("c1")]).unwrap();
            assert_eq!(env.events.len(), 2, "{name}");
            assert!(
                env.events.iter().all(|e| e.success && !e.unfinished),
                "{name}"
            );
            // A call that never gets a result.
            let last = run(format, key, &[c("c1"), r("c1"), c("c2")]);
            if format.is_seed_format() {
                assert!(last.unwrap_err().contains("has no result"), "{name}");
            } else {
                let env = last.unwrap();
                let e = &env.events[1];
                assert!(
                    !e.success && e.unfinished,
                    "{name}: unfinished, never a success"
                );
                // Evaluated, the unfinished latest call is a failure, not a success.
                let line = serde_json::to_vec(&env.case_value()).unwrap();
                let ev = evaluation(&parse_case(&line).unwrap());
                assert_eq!(ev.status, "FAILED", "{name}");
            }
        }
    }

    #[test]
    fn the_peers_reference_traces_are_in_order() {
        // No lenient order is needed for parity: the peer's own traces still adapt.
        for (format, trace) in [
            (Format::Generic, "peer/generic_trace.json"),
            (Format::OpenAi, "peer/openai_tool_trace.json"),
        ] {
            let reqs = adapt::parse_requirements(&read("peer/requirements.json")).unwrap();
            adapt::adapt_bytes(format, &read(trace), reqs, "r").expect(trace);
        }
    }
}
