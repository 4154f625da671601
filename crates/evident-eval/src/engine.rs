//! The streaming, parallel evaluator behind `evident eval`.
//!
//! One reader thread cuts the input into chunks of whole lines (a few MiB each); worker
//! threads parse, evaluate and render each chunk into its own output buffer; the
//! calling thread writes the buffers back in input order. A fixed number of chunk
//! tokens bounds how many chunks exist at once, so memory does not grow with the input
//! (the one exception: `--metrics` keeps an 8-byte hash per case to detect duplicate
//! case ids).

use std::collections::{BTreeMap, HashMap, HashSet};
use std::hash::{BuildHasher, RandomState};
use std::io::{self, BufRead, Read, Write};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::mpsc::{Receiver, SyncSender, sync_channel};
use std::sync::{Arc, Mutex};

use crate::case::parse_case;
use crate::evaluate::{evaluate, write_evaluation_json, write_plain_line, write_result_json};
use crate::metrics::{Metrics, plain_summary};
use crate::text::py_blank;

/// What `evident eval` prints.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Mode {
    /// One `case_id status` line per case, then the summary.
    Plain,
    /// One indented JSON array of result objects.
    Json,
    /// One compact result object per line.
    Jsonl,
    /// Only the metrics object.
    Metrics,
    /// Parse and validate only, print nothing (the benchmark's parse-only figure).
    ParseOnly,
}

/// The most worker threads [`run`] starts, whatever [`Options::threads`] asks.
pub const MAX_THREADS: usize = 1024;

/// How to run.
#[derive(Debug, Clone)]
pub struct Options {
    /// What to print.
    pub mode: Mode,
    /// Report every bad line and evaluate the rest, instead of stopping at the first.
    pub keep_going: bool,
    /// Worker threads; 0 means one per available core; at most [`MAX_THREADS`].
    pub threads: usize,
    /// Target chunk size in bytes (a chunk always ends at a line end).
    pub chunk_bytes: usize,
    /// The name used in messages: the path, or `<stdin>`.
    pub label: String,
}

impl Options {
    /// Stop at the first bad line, one worker per core, 2 MiB chunks.
    pub fn new(mode: Mode, label: impl Into<String>) -> Self {
        Options {
            mode,
            keep_going: false,
            threads: 0,
            chunk_bytes: 2 << 20,
            label: label.into(),
        }
    }
}

/// A line that could not be evaluated.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct LineError {
    /// The 1-based line number in the input.
    pub line: u64,
    /// Why the line was rejected (without the `PATH:LINE: ` prefix).
    pub message: String,
}

/// Why a run stopped.
#[derive(Debug, thiserror::Error)]
pub enum EngineError {
    /// A line is not a valid case (without `keep_going`, the first one stops the run).
    #[error("{}:{}: {}{}", .label, .line, .message, line_hint(.message))]
    BadLine {
        /// The input's name ([`Options::label`]).
        label: String,
        /// The 1-based line number.
        line: u64,
        /// Why the line was rejected.
        message: String,
    },
    /// Reading the input or writing the output failed.
    #[error("{label}")]
    Io {
        /// The input's name ([`Options::label`]).
        label: String,
        /// The I/O error.
        source: io::Error,
    },
    /// No case was evaluated (an empty input, or every line bad under `keep_going`).
    #[error("No cases found in {label}.")]
    NoCases {
        /// The input's name ([`Options::label`]).
        label: String,
    },
    /// Two cases share a `case_id` under [`Mode::Metrics`], which would count one case
    /// twice.
    #[error(
        "{label}:{line}: duplicate case_id '{case_id}' (first on line {first_line}); case ids must be unique with --metrics"
    )]
    Duplicate {
        /// The input's name ([`Options::label`]).
        label: String,
        /// The line of the second occurrence.
        line: u64,
        /// The line of the first occurrence.
        first_line: u64,
        /// The repeated id.
        case_id: String,
    },
    /// A duplicate `case_id` in an input that cannot be re-read to name it (standard
    /// input).
    #[error(
        "{label}: duplicate case_id values; case ids must be unique with --metrics (standard input cannot be read twice to name them: run on a file to see which)"
    )]
    DuplicateUnnamed {
        /// The input's name ([`Options::label`]).
        label: String,
    },
    /// Lines were skipped under `keep_going` ([`run`] itself reports this in
    /// [`Summary::bad_lines`] and never returns it).
    #[error("{label}: {bad} bad line(s) skipped")]
    BadLines {
        /// The input's name ([`Options::label`]).
        label: String,
        /// How many lines were skipped.
        bad: u64,
    },
}

/// A hint for a line that is not JSON: the likeliest cause is a case spread over
/// several lines (indented JSON, such as `evident adapt` prints without `--jsonl`).
fn line_hint(message: &str) -> &'static str {
    if message.starts_with("invalid JSON") && !message.contains("UTF-8") {
        "\nhint: each case is one JSON object on one line; indented JSON is read line by line (`evident adapt --jsonl` prints a case on one line)"
    } else {
        ""
    }
}

/// Totals of a finished run.
#[derive(Debug, Clone, Default)]
pub struct Summary {
    /// Cases evaluated.
    pub cases: u64,
    /// Lines skipped under `keep_going` (the caller decides whether that fails the run).
    pub bad_lines: u64,
    /// Input bytes read.
    pub bytes: u64,
    /// The claim-quality counters over every case evaluated.
    pub metrics: Metrics,
}

/// Callbacks for what happens during a run.
pub trait Hooks {
    /// A bad line under `keep_going` (the run goes on).
    fn bad_line(&mut self, _label: &str, _err: &LineError) {}
    /// After each chunk: bytes and cases done so far.
    fn progress(&mut self, _bytes: u64, _cases: u64) {}
    /// A message for the person running it: a trace skipped under `keep_going`, a rule
    /// the trace format implies, how many lines were skipped.
    fn note(&mut self, _msg: &str) {}
}

/// Hooks that do nothing.
pub struct NoHooks;
impl Hooks for NoHooks {}

struct Chunk {
    idx: u64,
    data: Vec<u8>,
}

struct Done {
    idx: u64,
    out: Vec<u8>,
    lines: u64,
    bytes: u64,
    cases: u64,
    errors: Vec<LineError>,
    metrics: Metrics,
    hashes: Vec<u64>,
}

/// Evaluates the case JSONL read from `input`, writing the chosen output to `out`.
///
/// `rescan`, when given, re-opens the same input; it is used only to name the lines of
/// a duplicate case id in metrics mode (standard input cannot be re-read).
/// More than [`MAX_THREADS`] workers are never started.
pub fn run(
    input: &mut (dyn Read + Send),
    out: &mut dyn Write,
    opts: &Options,
    hooks: &mut dyn Hooks,
    rescan: Option<&dyn Fn() -> io::Result<Box<dyn Read>>>,
) -> Result<Summary, EngineError> {
    let threads = match opts.threads {
        0 => std::thread::available_parallelism()
            .map(|n| n.get())
            .unwrap_or(1),
        n => n,
    }
    .min(MAX_THREADS);
    let chunk_bytes = opts.chunk_bytes.max(1024);
    let io_err = |source: io::Error| EngineError::Io {
        label: opts.label.clone(),
        source,
    };
    let hasher = RandomState::new();
    let stop = AtomicBool::new(false);
    let tokens = threads * 2 + 2;

    let (work_tx, work_rx) = sync_channel::<Chunk>(threads);
    let work_rx = Arc::new(Mutex::new(work_rx));
    let (done_tx, done_rx) = sync_channel::<Done>(tokens);
    let (token_tx, token_rx) = sync_channel::<()>(tokens);
    let (recycle_tx, recycle_rx) = sync_channel::<Vec<u8>>(tokens);
    for _ in 0..tokens {
        let _ = token_tx.send(());
    }

    std::thread::scope(|s| {
        let reader = {
            let stop = &stop;
            s.spawn(move || read_chunks(input, chunk_bytes, work_tx, token_rx, recycle_rx, stop))
        };
        for _ in 0..threads {
            let work_rx = Arc::clone(&work_rx);
            let done_tx = done_tx.clone();
            let recycle_tx = recycle_tx.clone();
            let (stop, hasher) = (&stop, &hasher);
            s.spawn(move || {
                loop {
                    let next = match work_rx.lock() {
                        Ok(rx) => rx.recv(),
                        Err(_) => break,
                    };
                    let Ok(chunk) = next else { break };
                    if stop.load(Ordering::Relaxed) {
                        continue;
                    }
                    let done = process_chunk(&chunk, opts, hasher);
                    let _ = recycle_tx.try_send(chunk.data);
                    if done_tx.send(done).is_err() {
                        break;
                    }
                }
            });
        }
        drop(done_tx);
        drop(recycle_tx);

        let result = collect(done_rx, out, opts, hooks, token_tx, &stop);
        let read_result = reader
            .join()
            .unwrap_or_else(|_| Err(io::Error::other("reader thread panicked")));
        let (summary, hashes, collected) = result?;
        let sent = read_result.map_err(io_err)?;
        if sent != collected {
            // Only if a worker thread died: never report a truncated run as complete.
            return Err(io_err(io::Error::other(format!(
                "internal error: {collected} of {sent} chunks were evaluated"
            ))));
        }
        finish(summary, hashes, out, opts, &hasher, rescan)
    })
}

/// The totals, the case-id hashes, and how many chunks were written.
type Collected = (Summary, Vec<u64>, u64);

fn collect(
    done_rx: Receiver<Done>,
    out: &mut dyn Write,
    opts: &Options,
    hooks: &mut dyn Hooks,
    token_tx: SyncSender<()>,
    stop: &AtomicBool,
) -> Result<Collected, EngineError> {
    let io_err = |source: io::Error| EngineError::Io {
        label: opts.label.clone(),
        source,
    };
    let mut pending: BTreeMap<u64, Done> = BTreeMap::new();
    let mut next = 0u64;
    let mut summary = Summary::default();
    let mut hashes = Vec::new();
    let mut lines_before = 0u64;
    let mut wrote_any = false;
    let mut failure: Option<EngineError> = None;
    let mut token_tx = Some(token_tx);
    for done in done_rx.iter() {
        if failure.is_some() {
            continue; // drain so the workers can finish
        }
        pending.insert(done.idx, done);
        while let Some(d) = pending.remove(&next) {
            next += 1;
            let mut body: &[u8] = &d.out;
            if !body.is_empty() {
                if opts.mode == Mode::Json {
                    // Every item starts with ",\n"; the first of the run opens the array.
                    if !wrote_any {
                        body = &body[2..];
                        if let Err(e) = out.write_all(b"[\n") {
                            failure = Some(io_err(e));
                            break;
                        }
                    }
                }
                wrote_any = true;
                if let Err(e) = out.write_all(body) {
                    failure = Some(io_err(e));
                    break;
                }
            }
            summary.cases += d.cases;
            summary.bytes += d.bytes;
            summary.metrics.merge(&d.metrics);
            hashes.extend_from_slice(&d.hashes);
            for e in &d.errors {
                let line = lines_before + e.line;
                if opts.keep_going {
                    summary.bad_lines += 1;
                    hooks.bad_line(
                        &opts.label,
                        &LineError {
                            line,
                            message: e.message.clone(),
                        },
                    );
                } else {
                    failure = Some(EngineError::BadLine {
                        label: opts.label.clone(),
                        line,
                        message: e.message.clone(),
                    });
                    break;
                }
            }
            if failure.is_some() {
                break;
            }
            lines_before += d.lines;
            hooks.progress(summary.bytes, summary.cases);
            if let Some(t) = &token_tx {
                let _ = t.send(());
            }
        }
        if failure.is_some() {
            stop.store(true, Ordering::Relaxed);
            token_tx = None; // unblocks the reader
        }
    }
    drop(token_tx);
    match failure {
        Some(e) => {
            let _ = out.flush();
            Err(e)
        }
        None => Ok((summary, hashes, next)),
    }
}

fn finish(
    summary: Summary,
    mut hashes: Vec<u64>,
    out: &mut dyn Write,
    opts: &Options,
    hasher: &RandomState,
    rescan: Option<&dyn Fn() -> io::Result<Box<dyn Read>>>,
) -> Result<Summary, EngineError> {
    let io_err = |source: io::Error| EngineError::Io {
        label: opts.label.clone(),
        source,
    };
    if summary.cases == 0 {
        return Err(EngineError::NoCases {
            label: opts.label.clone(),
        });
    }
    match opts.mode {
        Mode::Plain => {
            out.write_all(plain_summary(&summary.metrics.status).as_bytes())
                .map_err(io_err)?;
        }
        Mode::Json => out.write_all(b"\n]\n").map_err(io_err)?,
        Mode::Metrics => {
            hashes.sort_unstable();
            let candidates: HashSet<u64> = hashes
                .windows(2)
                .filter(|w| w[0] == w[1])
                .map(|w| w[0])
                .collect();
            drop(hashes);
            if !candidates.is_empty() {
                match rescan {
                    None => {
                        return Err(EngineError::DuplicateUnnamed {
                            label: opts.label.clone(),
                        });
                    }
                    Some(open) => {
                        let input = open().map_err(io_err)?;
                        find_duplicate(input, &candidates, hasher, &opts.label)?;
                        // Only a 64-bit hash collision: no real duplicate.
                    }
                }
            }
            out.write_all(summary.metrics.to_json().as_bytes())
                .map_err(io_err)?;
        }
        Mode::Jsonl | Mode::ParseOnly => {}
    }
    out.flush().map_err(io_err)?;
    Ok(summary)
}

/// Re-reads the input to find two valid lines with the same case id among the lines
/// whose id hashes collided.
fn find_duplicate(
    input: Box<dyn Read>,
    candidates: &HashSet<u64>,
    hasher: &RandomState,
    label: &str,
) -> Result<(), EngineError> {
    let mut reader = io::BufReader::with_capacity(1 << 20, input);
    let mut seen: HashMap<String, u64> = HashMap::new();
    let mut line = Vec::new();
    let mut n = 0u64;
    loop {
        line.clear();
        let got = reader
            .read_until(b'\n', &mut line)
            .map_err(|source| EngineError::Io {
                label: label.to_owned(),
                source,
            })?;
        if got == 0 {
            return Ok(());
        }
        n += 1;
        let Ok(case) = parse_case(&line) else {
            continue;
        };
        if !candidates.contains(&hasher.hash_one(&*case.case_id)) {
            continue;
        }
        let id = case.case_id.into_owned();
        if let Some(&first_line) = seen.get(&id) {
            return Err(EngineError::Duplicate {
                label: label.to_owned(),
                line: n,
                first_line,
                case_id: id,
            });
        }
        seen.insert(id, n);
    }
}

fn read_chunks(
    input: &mut (dyn Read + Send),
    chunk_bytes: usize,
    work_tx: SyncSender<Chunk>,
    token_rx: Receiver<()>,
    recycle_rx: Receiver<Vec<u8>>,
    stop: &AtomicBool,
) -> io::Result<u64> {
    let mut carry: Vec<u8> = Vec::new();
    let mut idx = 0u64;
    let mut eof = false;
    while !eof {
        if token_rx.recv().is_err() || stop.load(Ordering::Relaxed) {
            return Ok(idx);
        }
        let mut buf = recycle_rx
            .try_recv()
            .unwrap_or_else(|_| Vec::with_capacity(chunk_bytes + 4096));
        buf.clear();
        buf.extend_from_slice(&carry);
        carry.clear();
        // Bytes already searched for a newline (a line longer than a chunk grows the
        // buffer geometrically and is searched once).
        let mut searched = 0usize;
        loop {
            let want = chunk_bytes
                .saturating_sub(buf.len())
                .max(buf.len() / 2)
                .max(4096) as u64;
            let got = read_up_to(input, &mut buf, want)?;
            if got == 0 {
                eof = true;
                break;
            }
            if buf.len() < chunk_bytes {
                continue;
            }
            // Cut after the last full line.
            if let Some(pos) = memchr::memrchr(b'\n', &buf[searched..]) {
                let pos = searched + pos;
                carry.extend_from_slice(&buf[pos + 1..]);
                buf.truncate(pos + 1);
                break;
            }
            searched = buf.len();
        }
        if buf.is_empty() {
            return Ok(idx);
        }
        if work_tx.send(Chunk { idx, data: buf }).is_err() {
            return Ok(idx);
        }
        idx += 1;
    }
    Ok(idx)
}

fn read_up_to(input: &mut (dyn Read + Send), buf: &mut Vec<u8>, want: u64) -> io::Result<usize> {
    loop {
        match input.take(want).read_to_end(buf) {
            Ok(n) => return Ok(n),
            Err(e) if e.kind() == io::ErrorKind::Interrupted => continue,
            Err(e) => return Err(e),
        }
    }
}

fn process_chunk(chunk: &Chunk, opts: &Options, hasher: &RandomState) -> Done {
    let data = &chunk.data[..];
    let mut done = Done {
        idx: chunk.idx,
        out: Vec::new(),
        lines: 0,
        bytes: data.len() as u64,
        cases: 0,
        errors: Vec::new(),
        metrics: Metrics::default(),
        hashes: Vec::new(),
    };
    match opts.mode {
        Mode::Plain => done.out.reserve(data.len() / 16),
        Mode::Json | Mode::Jsonl => done.out.reserve(data.len() / 2),
        Mode::Metrics => done.hashes.reserve(data.len() / 512),
        Mode::ParseOnly => {}
    }
    let mut start = 0usize;
    while start < data.len() {
        let end = memchr::memchr(b'\n', &data[start..]).map_or(data.len(), |p| start + p);
        let line = &data[start..end];
        start = end + 1;
        done.lines += 1;
        if is_blank_line(line) {
            continue;
        }
        let case = match parse_case(line) {
            Ok(c) => c,
            Err(crate::case::CaseError(message)) => {
                done.errors.push(LineError {
                    line: done.lines,
                    message,
                });
                if opts.keep_going {
                    continue;
                }
                break;
            }
        };
        if case.object_form {
            match crate::constrain::parse_object_case(line) {
                Ok(oc) => {
                    done.cases += 1;
                    if opts.mode != Mode::ParseOnly {
                        render_object_case(&mut done, &oc, opts.mode, hasher);
                    }
                }
                Err(crate::case::CaseError(message)) => {
                    done.errors.push(LineError {
                        line: done.lines,
                        message,
                    });
                    if !opts.keep_going {
                        break;
                    }
                }
            }
            continue;
        }
        done.cases += 1;
        if opts.mode == Mode::ParseOnly {
            continue;
        }
        let outcome = evaluate(&case);
        done.metrics.add(&outcome);
        match opts.mode {
            Mode::Plain => write_plain_line(&mut done.out, &case.case_id, outcome.status),
            Mode::Json => {
                done.out.extend_from_slice(b",\n");
                write_result_json(&mut done.out, &case, &outcome, true);
            }
            Mode::Jsonl => {
                write_result_json(&mut done.out, &case, &outcome, false);
                done.out.push(b'\n');
            }
            Mode::Metrics => done.hashes.push(hasher.hash_one(&*case.case_id)),
            Mode::ParseOnly => {}
        }
    }
    done
}

/// Evaluates and renders a case whose requirements are in the object form.
fn render_object_case(
    done: &mut Done,
    oc: &crate::constrain::ObjectCase,
    mode: Mode,
    hasher: &RandomState,
) {
    use crate::constrain::{evaluate_spec, evaluation};
    if matches!(mode, Mode::Json | Mode::Jsonl) {
        let (e, v) = evaluation(&oc.case_id, &oc.spec, &oc.calls, oc.completion_claimed);
        done.metrics
            .add_parts(v.status, oc.completion_claimed, v.recovered, v.regressed);
        if mode == Mode::Json {
            done.out.extend_from_slice(b",\n");
        }
        write_evaluation_json(&mut done.out, &e, mode == Mode::Json);
        if mode == Mode::Jsonl {
            done.out.push(b'\n');
        }
        return;
    }
    // Plain and metrics print no reasons, so none are built.
    let v = evaluate_spec(&oc.spec, &oc.calls);
    done.metrics
        .add_parts(v.status, oc.completion_claimed, v.recovered, v.regressed);
    match mode {
        Mode::Plain => write_plain_line(&mut done.out, &oc.case_id, v.status),
        Mode::Metrics => done.hashes.push(hasher.hash_one(&*oc.case_id)),
        _ => {}
    }
}

/// A line the peer skips: empty after Python's `strip()`.
fn is_blank_line(line: &[u8]) -> bool {
    for (i, &b) in line.iter().enumerate() {
        match b {
            b' ' | b'\t' | b'\r' | b'\n' | 0x0b | 0x0c | 0x1c..=0x1f => continue,
            0x80.. => {
                return std::str::from_utf8(&line[i..]).is_ok_and(py_blank);
            }
            _ => return false,
        }
    }
    true
}

#[cfg(test)]
mod tests {
    use super::*;

    const GOOD: &str = r#"{"case_id":"c","task":"t","completion_claimed":true,"requirements":[{"action":"a","evidence_fields":["id"]}],"events":[{"action":"a","success":true,"evidence":{"id":"1"}}]}"#;

    fn run_str(input: &str, opts: &Options) -> (Result<Summary, EngineError>, String) {
        let mut out = Vec::new();
        let mut r = input.as_bytes();
        let res = run(&mut r, &mut out, opts, &mut NoHooks, None);
        (res, String::from_utf8(out).unwrap())
    }

    #[test]
    fn order_is_kept_across_many_small_chunks() {
        let mut input = String::new();
        for i in 0..5000 {
            input.push_str(&GOOD.replace("\"c\"", &format!("\"c{i}\"")));
            input.push('\n');
        }
        let mut opts = Options::new(Mode::Jsonl, "mem");
        opts.chunk_bytes = 1024;
        opts.threads = 3;
        let (res, out) = run_str(&input, &opts);
        assert_eq!(res.unwrap().cases, 5000);
        for (i, line) in out.lines().enumerate() {
            let v: serde_json::Value = serde_json::from_str(line).unwrap();
            assert_eq!(v["case_id"], format!("c{i}"));
        }
    }

    #[test]
    fn first_bad_line_stops_with_its_global_line_number() {
        let mut input = String::new();
        for _ in 0..300 {
            input.push_str(GOOD);
            input.push_str("\n\n");
        }
        input.push_str("{\"case_id\":1}\n");
        input.push_str(GOOD);
        let mut opts = Options::new(Mode::Plain, "cases.jsonl");
        opts.chunk_bytes = 1024;
        let (res, _) = run_str(&input, &opts);
        assert_eq!(
            res.unwrap_err().to_string(),
            "cases.jsonl:601: 'case_id' must be a string, not a number."
        );
    }

    #[test]
    fn keep_going_reports_every_bad_line() {
        struct Collect(Vec<u64>);
        impl Hooks for Collect {
            fn bad_line(&mut self, _: &str, e: &LineError) {
                self.0.push(e.line);
            }
        }
        let input = format!("{GOOD}\nnope\n{GOOD}\n[]\n  \u{a0}\n{GOOD}");
        let mut opts = Options::new(Mode::Metrics, "x");
        opts.keep_going = true;
        opts.chunk_bytes = 1024;
        let mut hooks = Collect(Vec::new());
        let mut out = Vec::new();
        // Same case id three times: metrics mode must refuse it.
        let res = run(&mut input.as_bytes(), &mut out, &opts, &mut hooks, None);
        assert!(matches!(res, Err(EngineError::DuplicateUnnamed { .. })));
        assert_eq!(hooks.0, vec![2, 4]);
    }

    #[test]
    fn empty_input_is_an_error() {
        let (res, _) = run_str("\n  \n", &Options::new(Mode::Plain, "e.jsonl"));
        assert_eq!(res.unwrap_err().to_string(), "No cases found in e.jsonl.");
    }

    #[test]
    fn duplicate_ids_are_named_when_the_input_can_be_reread() {
        let input = format!("{GOOD}\n{}\n{GOOD}\n", GOOD.replace("\"c\"", "\"d\""));
        let opts = Options::new(Mode::Metrics, "d.jsonl");
        let bytes = input.clone().into_bytes();
        let reopen =
            move || -> io::Result<Box<dyn Read>> { Ok(Box::new(io::Cursor::new(bytes.clone()))) };
        let mut out = Vec::new();
        let res = run(
            &mut input.as_bytes(),
            &mut out,
            &opts,
            &mut NoHooks,
            Some(&reopen),
        );
        assert_eq!(
            res.unwrap_err().to_string(),
            "d.jsonl:3: duplicate case_id 'c' (first on line 1); case ids must be unique with --metrics"
        );
        assert!(out.is_empty());
    }

    #[test]
    fn a_line_longer_than_a_chunk_is_read_whole() {
        let long = GOOD.replace("\"t\"", &format!("\"{}\"", "x".repeat(200_000)));
        let input = format!("{GOOD}\n{long}\n{GOOD}");
        let mut opts = Options::new(Mode::Jsonl, "long");
        opts.chunk_bytes = 1024;
        let (res, out) = run_str(&input, &opts);
        assert_eq!(res.unwrap().cases, 3);
        assert_eq!(out.lines().count(), 3);
    }

    #[test]
    fn blank_lines_follow_python_strip() {
        assert!(is_blank_line(b"  \t\r"));
        assert!(is_blank_line("\u{3000}\u{1f}".as_bytes()));
        assert!(!is_blank_line("\u{200b}".as_bytes()));
        assert!(!is_blank_line(b" {"));
    }
}
