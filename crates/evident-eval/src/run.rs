//! What `evident eval` and `evident adapt` do, so the CLI modules only parse
//! arguments and print: open the inputs and run the engine. Bad lines, skipped traces,
//! notes and progress go to the caller's [`Hooks`]; nothing here prints or picks an
//! exit code.

use std::fs::File;
use std::io::{self, Read, Write};
use std::path::{Path, PathBuf};

use crate::adapt::{self, AdaptError, AdaptOptions, Format, Requirements};
use crate::engine::{self, EngineError, Hooks, Mode, Options};

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
}

/// Why a run stopped: an input that cannot be read, the first bad line without
/// `keep_going`, a bad requirements file (each message names its file).
#[derive(Debug, thiserror::Error)]
pub enum RunError {
    /// The inputs given cannot make a run (no file, or `-` where traces are needed).
    #[error("{0}")]
    Usage(&'static str),
    /// A file (or standard input, or standard output) could not be read or written.
    #[error("{name}")]
    Io {
        /// The file's path, `<stdin>` or `stdout`.
        name: String,
        /// What the operating system said.
        source: io::Error,
    },
    /// The engine stopped: a bad line, a failed read or write, no cases.
    #[error(transparent)]
    Engine(#[from] EngineError),
    /// A trace or requirements file was rejected.
    #[error("{name}")]
    Adapt {
        /// The file's path or `<stdin>`.
        name: String,
        /// What is wrong in it, naming the JSON path.
        source: AdaptError,
    },
    /// An adapted trace could not be written as a case line.
    #[error("{name}")]
    Json {
        /// The trace file's path.
        name: String,
        /// serde_json's error.
        source: serde_json::Error,
    },
}

/// A file that could not be read, named as the user gave it.
fn io_error(name: &Path, source: io::Error) -> RunError {
    RunError::Io {
        name: name.display().to_string(),
        source,
    }
}

/// A run that went to the end: what was skipped under `keep_going`.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Finished {
    /// Case lines that could not be evaluated.
    pub bad_lines: u64,
    /// Trace files that could not be adapted.
    pub bad_traces: u64,
}

impl Finished {
    /// Was every input evaluated?
    pub fn complete(&self) -> bool {
        self.bad_lines == 0 && self.bad_traces == 0
    }
}

/// Runs `evident eval`. Results go to `out`; bad lines and traces skipped under
/// `keep_going`, notes and progress go to `hooks` (`progress` gets the input's size as
/// `total` when it is a file).
pub fn eval(
    req: &EvalRequest,
    out: &mut dyn Write,
    hooks: &mut dyn Hooks,
) -> Result<Finished, RunError> {
    match &req.adapter {
        None => eval_jsonl(req, out, hooks),
        Some((format, reqs)) => eval_traces(req, *format, reqs, out, hooks),
    }
}

/// The size of an `eval` input, for a progress line's percentage.
pub fn input_size(req: &EvalRequest) -> Option<u64> {
    match (req.adapter.as_ref(), req.inputs.as_slice()) {
        (None, [input]) if input.as_os_str() != "-" => {
            std::fs::metadata(input).ok().map(|m| m.len())
        }
        _ => None,
    }
}

fn eval_jsonl(
    req: &EvalRequest,
    out: &mut dyn Write,
    hooks: &mut dyn Hooks,
) -> Result<Finished, RunError> {
    let [input] = req.inputs.as_slice() else {
        return Err(RunError::Usage(
            "give one case JSONL file (or - for standard input); several inputs need --adapter",
        ));
    };
    let mut opts = Options::new(req.mode, "");
    opts.keep_going = req.keep_going;
    opts.threads = req.threads;
    let summary = if input.as_os_str() == "-" {
        opts.label = "<stdin>".into();
        let mut stdin = io::stdin();
        engine::run(&mut stdin, out, &opts, hooks, None)
    } else {
        opts.label = input.display().to_string();
        let mut f = File::open(input).map_err(|e| io_error(input, e))?;
        let path = input.clone();
        let reopen = move || -> io::Result<Box<dyn Read>> { Ok(Box::new(File::open(&path)?)) };
        engine::run(&mut f, out, &opts, hooks, Some(&reopen))
    };
    let summary = summary?;
    if summary.bad_lines > 0 {
        hooks.note(&format!(
            "{}: {} bad line(s) skipped",
            opts.label, summary.bad_lines
        ));
    }
    Ok(Finished {
        bad_lines: summary.bad_lines,
        bad_traces: 0,
    })
}

fn eval_traces(
    req: &EvalRequest,
    format: Format,
    reqs_path: &Path,
    out: &mut dyn Write,
    hooks: &mut dyn Hooks,
) -> Result<Finished, RunError> {
    if req.inputs.is_empty() || req.inputs.iter().any(|p| p.as_os_str() == "-") {
        return Err(RunError::Usage(
            "give trace files or directories to read with --adapter (standard input holds case JSONL only)",
        ));
    }
    let reqs = read_requirements(reqs_path)?;
    note_success_rule(format, &req.adapt_options, hooks);
    let files = list_traces(&req.inputs)?;
    if files.is_empty() {
        return Err(RunError::Usage(
            "no trace files found (a directory contributes its *.json files)",
        ));
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
        skipped: Vec::new(),
    };
    let mut opts = Options::new(req.mode, format!("--adapter {}", format.name()));
    opts.keep_going = req.keep_going;
    opts.threads = req.threads;
    let res = engine::run(&mut reader, out, &opts, hooks, None);
    for e in &reader.skipped {
        hooks.note(&evident_format::chain(e));
    }
    let bad_traces = reader.skipped.len() as u64;
    if bad_traces > 0 {
        hooks.note(&format!("{bad_traces} trace file(s) skipped"));
    }
    match res {
        Ok(s) => Ok(Finished {
            bad_lines: s.bad_lines,
            bad_traces,
        }),
        Err(EngineError::Io { label, source }) => Err(untunnel(label, source)),
        Err(e) => Err(e.into()),
    }
}

/// The error a trace failed to adapt with, taken back out of the [`io::Error`] that
/// carried it through the engine's reader; any other read error stays the engine's.
fn untunnel(label: String, source: io::Error) -> RunError {
    if !source.get_ref().is_some_and(|e| e.is::<RunError>()) {
        return EngineError::Io { label, source }.into();
    }
    let kind = source.kind();
    match source.into_inner().map(|e| e.downcast::<RunError>()) {
        Some(Ok(e)) => *e,
        Some(Err(other)) => EngineError::Io {
            label,
            source: io::Error::new(kind, other),
        }
        .into(),
        None => EngineError::Io {
            label,
            source: kind.into(),
        }
        .into(),
    }
}

/// The chat format has no error flag: say so when no `--error-prefix` decides.
fn note_success_rule(format: Format, opts: &AdaptOptions, hooks: &mut dyn Hooks) {
    if format == Format::OpenAiChat && opts.error_prefixes.is_empty() {
        hooks.note(
            "note: openai-chat records no error flag and no --error-prefix was given: every tool result counts as a success",
        );
    }
}

/// Reads and checks a requirements file; errors name the file.
pub fn read_requirements(path: &Path) -> Result<Requirements, RunError> {
    let bytes = std::fs::read(path).map_err(|e| io_error(path, e))?;
    adapt::parse_requirements(&bytes).map_err(|source| RunError::Adapt {
        name: path.display().to_string(),
        source,
    })
}

/// Expands directories to their `*.json` files (sorted by name, not recursive).
fn list_traces(inputs: &[PathBuf]) -> Result<Vec<PathBuf>, RunError> {
    let mut files = Vec::new();
    for p in inputs {
        let meta = std::fs::metadata(p).map_err(|e| io_error(p, e))?;
        if meta.is_dir() {
            let mut in_dir = Vec::new();
            for entry in std::fs::read_dir(p).map_err(|e| io_error(p, e))? {
                let path = entry.map_err(|e| io_error(p, e))?.path();
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
    /// Why each trace skipped under `keep_going` was (told to the hooks after the run).
    skipped: Vec<RunError>,
}

impl TraceCases {
    fn adapt_one(&self, path: &Path) -> Result<Vec<u8>, RunError> {
        let bytes = std::fs::read(path).map_err(|e| io_error(path, e))?;
        // The file path is the provenance reference when traces are evaluated in bulk.
        let env = adapt::adapt_bytes_with(
            self.format,
            &bytes,
            self.reqs.clone(),
            &path.display().to_string(),
            &self.options,
        )
        .map_err(|source| RunError::Adapt {
            name: path.display().to_string(),
            source,
        })?;
        let mut line = serde_json::to_vec(&env.case_value()).map_err(|source| RunError::Json {
            name: path.display().to_string(),
            source,
        })?;
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
                Err(e) if self.keep_going => self.skipped.push(e),
                Err(e) => return Err(io::Error::new(io::ErrorKind::InvalidData, e)),
            }
        }
        let n = (self.buf.len() - self.pos).min(out.len());
        out[..n].copy_from_slice(&self.buf[self.pos..self.pos + n]);
        self.pos += n;
        Ok(n)
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
/// one line; a note the format implies goes to `hooks`.
pub fn adapt(
    req: &AdaptRequest,
    out: &mut dyn Write,
    hooks: &mut dyn Hooks,
) -> Result<(), RunError> {
    let reqs = read_requirements(&req.requirements)?;
    note_success_rule(req.format, &req.adapt_options, hooks);
    let (label, bytes) = if req.trace.as_os_str() == "-" {
        let mut b = Vec::new();
        io::stdin()
            .read_to_end(&mut b)
            .map_err(|source| RunError::Io {
                name: "<stdin>".into(),
                source,
            })?;
        ("<stdin>".to_string(), b)
    } else {
        let b = std::fs::read(&req.trace).map_err(|e| io_error(&req.trace, e))?;
        (req.trace.display().to_string(), b)
    };
    let env = adapt::adapt_bytes_with(
        req.format,
        &bytes,
        reqs,
        &req.source_ref,
        &req.adapt_options,
    )
    .map_err(|source| RunError::Adapt {
        name: label.clone(),
        source,
    })?;
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
    .map_err(|source| RunError::Adapt {
        name: label,
        source,
    })?;
    out.write_all(text.as_bytes())
        .and_then(|_| out.flush())
        .map_err(|source| RunError::Io {
            name: "stdout".into(),
            source,
        })?;
    Ok(())
}
