//! The bodies of the fuzz targets (docs/fuzz.md), one function per parser an agent
//! can feed. Each must return on any input; a panic is the bug. `fuzz_targets/*.rs`
//! wrap them for libFuzzer (`fuzz/run.sh`, built with `--cfg fuzzing`) or, in a normal
//! build, as a program that replays files (how a crash is reproduced, and how
//! `cargo test` runs every target on its seeds and past crashes).

use std::path::Path;
use std::process::ExitCode;

/// A fuzz target's `main`: libFuzzer's entry point under `--cfg fuzzing`, otherwise a
/// replayer of the files (or folders of files) named on the command line.
#[macro_export]
macro_rules! target {
    ($body:path) => {
        #[cfg(fuzzing)]
        libfuzzer_sys::fuzz_target!(|data: &[u8]| $body(data));
        #[cfg(not(fuzzing))]
        fn main() -> std::process::ExitCode {
            $crate::replay($body)
        }
    };
}

/// Runs `body` on every file named in the arguments (a folder: every file in it).
pub fn replay(body: fn(&[u8])) -> ExitCode {
    let args: Vec<String> = std::env::args().skip(1).collect();
    if args.is_empty() {
        eprintln!("usage: TARGET FILE_OR_FOLDER... (runs the fuzz target on each file)");
        return ExitCode::from(2);
    }
    let mut n = 0;
    for arg in &args {
        let path = Path::new(arg);
        let mut files = Vec::new();
        if path.is_dir() {
            match std::fs::read_dir(path) {
                Ok(entries) => files.extend(entries.filter_map(|e| e.ok()).map(|e| e.path())),
                Err(e) => {
                    eprintln!("{arg}: {e}");
                    return ExitCode::from(2);
                }
            }
            files.sort();
        } else {
            files.push(path.to_path_buf());
        }
        for f in files.iter().filter(|f| f.is_file()) {
            match std::fs::read(f) {
                Ok(data) => {
                    eprintln!("{}", f.display());
                    body(&data);
                    n += 1;
                }
                Err(e) => {
                    eprintln!("{}: {e}", f.display());
                    return ExitCode::from(2);
                }
            }
        }
    }
    eprintln!("ran {n} inputs");
    ExitCode::SUCCESS
}

/// A claim document through evident-format's strict reader, then the verdict rules:
/// any bytes must give a document or an error, never a panic.
pub fn claim(data: &[u8]) {
    use evident_format::{Claim, Timestamp};
    let Ok(doc) = Claim::parse(data, "fuzz.json") else {
        return;
    };
    let _ = doc.claim.binding();
    let now = Timestamp::parse("2026-08-27T18:04:10Z").expect("a valid time");
    let _ = evident_rules::decide(&doc.claim, &now, &Default::default());
}

/// An owner's contract (TOML or JSON, chosen by the first byte, as the file name would)
/// and `verify --policy`'s policy reader.
pub fn contract(data: &[u8]) {
    use evident_gate::{Contract, contract::parse_policy};
    let Some((&pick, rest)) = data.split_first() else {
        return;
    };
    let file = if pick & 1 == 0 {
        "contract.toml"
    } else {
        "contract.json"
    };
    if let Ok(doc) = Contract::parse(rest, file) {
        let _ = doc.contract.extensions();
        let _ = doc.public_raw();
    }
    let _ = parse_policy(rest, file);
}

/// The ATIF trajectory reader on any bytes: a trace or an error naming the JSON path.
pub fn atif(data: &[u8]) {
    if let Ok(trace) = evident_traces::atif::read(data, "fuzz.json") {
        let _ = trace.first_user_message();
        let _ = trace.last_agent_message();
    }
}

/// The Claude Code transcript reader on any bytes: a trace or an error naming the line.
pub fn claude_code(data: &[u8]) {
    if let Ok(trace) = evident_traces::claude_code::read(data, "fuzz.jsonl") {
        let _ = trace.first_user_message();
        let _ = trace.last_agent_message();
    }
}

/// The Codex rollout / `codex exec --json` reader on any bytes: a trace or an error naming the line.
pub fn codex(data: &[u8]) {
    if let Ok(trace) = evident_traces::codex::read(data, "fuzz.jsonl") {
        let _ = trace.first_user_message();
        let _ = trace.last_agent_message();
    }
}

/// `evident adapt`: every trace format (the first byte picks it) through its public
/// entry point, with a requirements file read from the same input (after the first
/// `\n\0\n`, when present), and the adapted envelope printed.
pub fn adapt(data: &[u8]) {
    use evident_eval::adapt::{self, AdaptOptions, Format, Requirement, Requirements};
    let Some((&pick, rest)) = data.split_first() else {
        return;
    };
    // The low four bits pick the format, the high ones the command line's options.
    let format = Format::ALL[usize::from(pick & 0x0f) % Format::ALL.len()];
    let (trace, requirements) = match rest.windows(3).position(|w| w == b"\n\0\n") {
        Some(i) => match adapt::parse_requirements(&rest[i + 3..]) {
            Ok(r) => (&rest[..i], r),
            Err(_) => return,
        },
        None => (
            rest,
            Requirements::List(vec![Requirement {
                action: "write_file".into(),
                evidence_fields: vec!["path".into()],
            }]),
        ),
    };
    let claimed = Some(pick & 0x40 != 0);
    let opts = match format {
        Format::OpenAiChat => AdaptOptions {
            error_prefixes: if pick & 0x80 != 0 {
                vec!["Error".into()]
            } else {
                vec![]
            },
            claimed: if pick & 0x20 != 0 { claimed } else { None },
        },
        f if f.is_native() => AdaptOptions {
            error_prefixes: vec![],
            claimed,
        },
        _ => AdaptOptions::default(),
    };
    if let Ok(env) = adapt::adapt_bytes_with(format, trace, requirements, "fuzz", &opts) {
        let _ = adapt::to_pretty(&env.case_value());
        let _ = adapt::to_pretty(&env.envelope_value());
    }
}

/// A JUnit XML report, as a test command's `junit` file is read, and a test named in it.
pub fn junit(data: &[u8]) {
    use evident_probes::summary::{self, parse_junit};
    let Ok(xml) = std::str::from_utf8(data) else {
        return;
    };
    if let Ok(report) = parse_junit(xml) {
        let _ = summary::named_status(&report.cases, "tests/test_x.py::test_a", true);
        let _ = summary::named_status(&report.cases, "test_a", false);
    }
}

/// A test runner's output (cargo, nextest, pytest, go, or unnamed: the first byte
/// picks), read line by line for its summary counts.
pub fn summary(data: &[u8]) {
    use evident_probes::Runner;
    use evident_probes::summary::parse_text;
    let Some((&pick, rest)) = data.split_first() else {
        return;
    };
    let runner = match pick % 6 {
        0 => Some(Runner::Cargo),
        1 => Some(Runner::Nextest),
        2 => Some(Runner::Pytest),
        3 => Some(Runner::Go),
        4 => Some(Runner::Junit),
        _ => None,
    };
    let text = String::from_utf8_lossy(rest);
    if let Some((runner, counts)) = parse_text(&text, runner) {
        let _ = counts.keys(runner);
    }
}

/// `evident eval`'s case JSONL, line by line: the fast reader and the serde reference it
/// is tested against (both refuse, or both accept with the same evaluation), and the
/// object-form reader.
pub fn eval_case(data: &[u8]) {
    data.split(|&b| b == b'\n').for_each(eval_case_line);
}

fn eval_case_line(line: &[u8]) {
    use evident_eval::{case, constrain, evaluate::evaluation};
    let fast = case::parse_case(line).map(|c| evaluation(&c));
    let _ = constrain::parse_object_case(line);
    // serde_json does not check UTF-8 inside strings it skips; evident does (as the
    // peer, which decodes the file first): the reference is no oracle there.
    if std::str::from_utf8(line).is_err() {
        assert!(fast.is_err(), "accepted invalid UTF-8");
        return;
    }
    let reference = case::parse_case_serde_json(line).map(|c| evaluation(&c));
    // Both accept with the same evaluation, or both refuse. (Their messages can differ
    // where the serde reference is wrong: an event that is a long integer is "must be
    // an object" in the fast reader but "requires a non-empty 'action'" there, as
    // serde_json's arbitrary_precision hands a number to a visitor as a map;
    // docs/fuzz.md.)
    match (&fast, &reference) {
        (Ok(a), Ok(b)) => assert_eq!(a, b, "the two readers evaluate differently"),
        (Err(_), Err(_)) => {}
        // Past 512 levels the fast reader refuses (docs/eval.md: the peer's recursion
        // limit); serde_json skips an ignored value at any depth.
        (Err(e), Ok(_)) if e.0.contains("nesting too deep") => {}
        _ => panic!("the fast reader and the serde reference disagree: {fast:?} vs {reference:?}"),
    }
}
