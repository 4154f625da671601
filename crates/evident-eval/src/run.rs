//! What `evident eval` and `evident adapt` do, so the CLI modules only parse
//! arguments: open the inputs, wire stderr (bad lines, progress) and run the engine.

use std::fs::File;
use std::io::{self, IsTerminal, Read, Write};
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use crate::adapt::{self, AdaptOptions, Format, Requirements};
use crate::engine::{self, EngineError, Hooks, LineError, Mode, Options};

/// One `evident eval` invocation.
#[derive(Debug, Clone)]
pub struct EvalRequest {
    /// A case JSONL file or `-`; with `adapter`, trace files and directories.
    pub inputs: Vec<PathBuf>,
    /// What to print (`--json`, `--jsonl`, `--metrics`, or one line per case).
    pub mode: Mode,
    /// `--keep-going`: report bad lines (and traces) and evaluate the rest.
    pub keep_going: bool,
    /// 0: one worker per core.
    pub threads: usize,
    /// Read traces through this adapter, with this requirements file.
    pub adapter: Option<(Format, PathBuf)>,
    /// What the trace format does not record (`openai-chat`).
    pub adapt_options: AdaptOptions,
    /// Allow a progress line on stderr (only drawn when stderr is a terminal).
    pub progress: bool,
}

/// Runs `evident eval`. Results go to `out`; bad lines under `keep_going` and the
/// progress line go to stderr. `Ok(0)`: every line evaluated; `Ok(2)`: finished, but
/// some lines or traces were bad; `Err`: the run stopped (exit 2).
pub fn eval(req: &EvalRequest, out: &mut dyn Write) -> Result<u8, String> {
    match &req.adapter {
        None => eval_jsonl(req, out),
        Some((format, reqs)) => eval_traces(req, *format, reqs, out),
    }
}

fn eval_jsonl(req: &EvalRequest, out: &mut dyn Write) -> Result<u8, String> {
    let [input] = req.inputs.as_slice() else {
        return Err(
            "give one case JSONL file (or - for standard input); several inputs need --adapter"
                .into(),
        );
    };
    let mut opts = Options::new(req.mode, "");
    opts.keep_going = req.keep_going;
    opts.threads = req.threads;
    let mut hooks = StderrHooks::new(req.progress, None);
    let summary = if input.as_os_str() == "-" {
        opts.label = "<stdin>".into();
        let mut stdin = io::stdin();
        engine::run(&mut stdin, out, &opts, &mut hooks, None)
    } else {
        opts.label = input.display().to_string();
        let mut f = File::open(input).map_err(|e| format!("{}: {e}", input.display()))?;
        hooks.total = f.metadata().ok().map(|m| m.len());
        let path = input.clone();
        let reopen = move || -> io::Result<Box<dyn Read>> { Ok(Box::new(File::open(&path)?)) };
        engine::run(&mut f, out, &opts, &mut hooks, Some(&reopen))
    };
    hooks.clear();
    let summary = summary.map_err(|e| e.to_string())?;
    if summary.bad_lines > 0 {
        eprintln!("{}: {} bad line(s) skipped", opts.label, summary.bad_lines);
        return Ok(2);
    }
    Ok(0)
}

fn eval_traces(
    req: &EvalRequest,
    format: Format,
    reqs_path: &Path,
    out: &mut dyn Write,
) -> Result<u8, String> {
    if req.inputs.is_empty() || req.inputs.iter().any(|p| p.as_os_str() == "-") {
        return Err("give trace files or directories to read with --adapter (standard input holds case JSONL only)".into());
    }
    let reqs = read_requirements(reqs_path)?;
    note_success_rule(format, &req.adapt_options);
    let files = list_traces(&req.inputs)?;
    if files.is_empty() {
        return Err("no trace files found (a directory contributes its *.json files)".into());
    }
    let mut reader = TraceCases {
        files,
        next: 0,
        format,
        reqs,
        options: req.adapt_options.clone(),
        buf: Vec::new(),
        pos: 0,
        keep_going: req.keep_going,
        bad: 0,
    };
    let mut opts = Options::new(req.mode, format!("--adapter {}", format.name()));
    opts.keep_going = req.keep_going;
    opts.threads = req.threads;
    let mut hooks = StderrHooks::new(req.progress, None);
    let res = engine::run(&mut reader, out, &opts, &mut hooks, None);
    hooks.clear();
    match res {
        Ok(_) if reader.bad > 0 => {
            eprintln!("{} trace file(s) skipped", reader.bad);
            Ok(2)
        }
        Ok(s) if s.bad_lines > 0 => Ok(2),
        Ok(_) => Ok(0),
        Err(EngineError::Io { source, .. }) if source.kind() == io::ErrorKind::InvalidData => {
            Err(source.to_string())
        }
        Err(e) => Err(e.to_string()),
    }
}

/// The chat format has no error flag: say so when no `--error-prefix` decides.
fn note_success_rule(format: Format, opts: &AdaptOptions) {
    if format == Format::OpenAiChat && opts.error_prefixes.is_empty() {
        eprintln!(
            "note: openai-chat records no error flag and no --error-prefix was given: every tool result counts as a success"
        );
    }
}

/// Reads and checks a requirements file; errors name the file.
pub fn read_requirements(path: &Path) -> Result<Requirements, String> {
    let bytes = std::fs::read(path).map_err(|e| format!("{}: {e}", path.display()))?;
    adapt::parse_requirements(&bytes).map_err(|e| format!("{}: {e}", path.display()))
}

/// Expands directories to their `*.json` files (sorted by name, not recursive).
fn list_traces(inputs: &[PathBuf]) -> Result<Vec<PathBuf>, String> {
    let mut files = Vec::new();
    for p in inputs {
        let meta = std::fs::metadata(p).map_err(|e| format!("{}: {e}", p.display()))?;
        if meta.is_dir() {
            let mut in_dir = Vec::new();
            for entry in std::fs::read_dir(p).map_err(|e| format!("{}: {e}", p.display()))? {
                let path = entry.map_err(|e| format!("{}: {e}", p.display()))?.path();
                let hidden = path
                    .file_name()
                    .and_then(|n| n.to_str())
                    .is_some_and(|n| n.starts_with('.'));
                if !hidden && path.extension().is_some_and(|e| e == "json") && path.is_file() {
                    in_dir.push(path);
                }
            }
            in_dir.sort();
            files.extend(in_dir);
        } else {
            files.push(p.clone());
        }
    }
    Ok(files)
}

/// Adapts trace files one at a time into case JSONL, so a directory of traces streams
/// through the same engine as a JSONL file.
struct TraceCases {
    files: Vec<PathBuf>,
    next: usize,
    format: Format,
    reqs: Requirements,
    options: AdaptOptions,
    buf: Vec<u8>,
    pos: usize,
    keep_going: bool,
    bad: u64,
}

impl TraceCases {
    fn adapt_one(&self, path: &Path) -> Result<Vec<u8>, String> {
        let bytes = std::fs::read(path).map_err(|e| format!("{}: {e}", path.display()))?;
        // The file path is the provenance reference when traces are evaluated in bulk.
        let env = adapt::adapt_bytes_with(
            self.format,
            &bytes,
            self.reqs.clone(),
            &path.display().to_string(),
            &self.options,
        )
        .map_err(|e| format!("{}: {e}", path.display()))?;
        let mut line = serde_json::to_vec(&env.case_value())
            .map_err(|e| format!("{}: {e}", path.display()))?;
        line.push(b'\n');
        Ok(line)
    }
}

impl Read for TraceCases {
    fn read(&mut self, out: &mut [u8]) -> io::Result<usize> {
        while self.pos >= self.buf.len() {
            let Some(path) = self.files.get(self.next).cloned() else {
                return Ok(0);
            };
            self.next += 1;
            match self.adapt_one(&path) {
                Ok(line) => {
                    self.buf = line;
                    self.pos = 0;
                }
                Err(msg) if self.keep_going => {
                    eprintln!("{msg}");
                    self.bad += 1;
                }
                Err(msg) => return Err(io::Error::new(io::ErrorKind::InvalidData, msg)),
            }
        }
        let n = (self.buf.len() - self.pos).min(out.len());
        out[..n].copy_from_slice(&self.buf[self.pos..self.pos + n]);
        self.pos += n;
        Ok(n)
    }
}

/// Prints bad lines, and a progress line when stderr is a terminal and the run is long.
struct StderrHooks {
    enabled: bool,
    total: Option<u64>,
    start: Instant,
    last: Option<Instant>,
    drawn: bool,
}

impl StderrHooks {
    fn new(progress: bool, total: Option<u64>) -> Self {
        StderrHooks {
            enabled: progress && io::stderr().is_terminal(),
            total,
            start: Instant::now(),
            last: None,
            drawn: false,
        }
    }

    fn clear(&mut self) {
        if self.drawn {
            eprint!("\r\x1b[2K");
            self.drawn = false;
        }
    }
}

impl Hooks for StderrHooks {
    fn bad_line(&mut self, label: &str, e: &LineError) {
        self.clear();
        eprintln!("{label}:{}: {}", e.line, e.message);
    }

    fn progress(&mut self, bytes: u64, cases: u64) {
        // Only for runs that last: nothing is drawn in the first half second.
        let now = Instant::now();
        let since = now.duration_since(self.start);
        if !self.enabled || since < Duration::from_millis(500) {
            return;
        }
        if self
            .last
            .is_some_and(|l| now.duration_since(l) < Duration::from_millis(100))
        {
            return;
        }
        self.last = Some(now);
        let mb = bytes as f64 / 1e6;
        let rate = mb / since.as_secs_f64();
        let pct = match self.total {
            Some(t) if t > 0 => format!("{:>3.0}% ", bytes as f64 * 100.0 / t as f64),
            _ => String::new(),
        };
        eprint!("\r\x1b[2K{pct}{cases} cases, {mb:.0} MB, {rate:.0} MB/s");
        let _ = io::stderr().flush();
        self.drawn = true;
    }
}

/// One `evident adapt` invocation.
#[derive(Debug, Clone)]
pub struct AdaptRequest {
    /// The trace's format.
    pub format: Format,
    /// A trace file or `-`.
    pub trace: PathBuf,
    /// The owner's requirements file (never taken from the trace).
    pub requirements: PathBuf,
    /// The caller's name for the trace (`--source-ref`), recorded in the envelope.
    pub source_ref: String,
    /// Print the envelope (with provenance) instead of the bare case.
    pub envelope: bool,
    /// One line instead of indented JSON, so the output is a line `evident eval -` reads.
    pub jsonl: bool,
    /// What the trace format does not record (`openai-chat`).
    pub adapt_options: AdaptOptions,
}

/// Runs `evident adapt`: the canonical case (or the envelope) as indented JSON, or on
/// one line.
pub fn adapt(req: &AdaptRequest, out: &mut dyn Write) -> Result<u8, String> {
    let reqs = read_requirements(&req.requirements)?;
    note_success_rule(req.format, &req.adapt_options);
    let (label, bytes) = if req.trace.as_os_str() == "-" {
        let mut b = Vec::new();
        io::stdin()
            .read_to_end(&mut b)
            .map_err(|e| format!("<stdin>: {e}"))?;
        ("<stdin>".to_string(), b)
    } else {
        let b = std::fs::read(&req.trace).map_err(|e| format!("{}: {e}", req.trace.display()))?;
        (req.trace.display().to_string(), b)
    };
    let env = adapt::adapt_bytes_with(
        req.format,
        &bytes,
        reqs,
        &req.source_ref,
        &req.adapt_options,
    )
    .map_err(|e| format!("{label}: {e}"))?;
    let value = if req.envelope {
        env.envelope_value()
    } else {
        env.case_value()
    };
    let text = if req.jsonl {
        adapt::to_line(&value)
    } else {
        adapt::to_pretty(&value)
    }
    .map_err(|e| format!("{label}: {e}"))?;
    out.write_all(text.as_bytes())
        .and_then(|_| out.flush())
        .map_err(|e| format!("stdout: {e}"))?;
    Ok(0)
}
