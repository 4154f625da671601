//! Corpus generator and throughput benchmark for `evident eval`.
//!
//! ```text
//! evident-eval-bench gen N OUT [SEED]      write N generated cases to OUT
//! evident-eval-bench run FILE MODE [THREADS]  time one pass; MODE: read | parse | metrics | jsonl | json | plain
//! evident-eval-bench schema                print the requirements JSON Schema (schemas/requirements.schema.json)
//! ```
//! `read` only reads and splits the file into chunks (the I/O floor); `parse` parses
//! and validates every case without evaluating (the parse-only figure); the other modes
//! are the real evaluator writing to a sink. Measure peak memory with `/usr/bin/time -v`.

use std::fs::File;
use std::io::{self, BufWriter, Read};
use std::time::Instant;

use evident_eval::engine::{self, Mode, NoHooks, Options};

fn main() {
    if let Err(e) = real_main() {
        eprintln!("error: {}", evident_format::chain(&*e));
        std::process::exit(2);
    }
}

/// A file the benchmark could not create, read or inspect, named.
#[derive(Debug, thiserror::Error)]
#[error("{path}")]
struct FileError {
    path: String,
    source: io::Error,
}

/// Names `path` on an I/O error.
fn at(path: &str) -> impl FnOnce(io::Error) -> FileError + '_ {
    move |source| FileError {
        path: path.to_string(),
        source,
    }
}

fn real_main() -> Result<(), Box<dyn std::error::Error>> {
    let args: Vec<String> = std::env::args().skip(1).collect();
    match args.first().map(String::as_str) {
        Some("schema") => {
            let s = serde_json::to_string_pretty(&evident_eval::spec::schema())?;
            println!("{s}");
            Ok(())
        }
        Some("gen") if args.len() >= 3 => {
            let n: u64 = args[1].parse().map_err(|_| "N must be a number")?;
            let seed: u64 = args.get(3).map_or(Ok(1), |s| s.parse()).map_err(|_| "bad seed")?;
            let f = File::create(&args[2]).map_err(at(&args[2]))?;
            let mut w = BufWriter::with_capacity(1 << 20, f);
            let t = Instant::now();
            let bytes = evident_eval::corpus::generate(&mut w, n, seed)?;
            println!("wrote {n} cases, {bytes} bytes, in {:.2}s", t.elapsed().as_secs_f64());
            Ok(())
        }
        Some("run") if args.len() >= 3 => {
            let path = &args[1];
            let threads: usize = args.get(3).map_or(Ok(0), |s| s.parse()).map_err(|_| "bad THREADS")?;
            let mode = match args[2].as_str() {
                "read" => None,
                "parse" => Some(Mode::ParseOnly),
                "metrics" => Some(Mode::Metrics),
                "jsonl" => Some(Mode::Jsonl),
                "json" => Some(Mode::Json),
                "plain" => Some(Mode::Plain),
                m => return Err(format!("unknown mode {m}").into()),
            };
            let size = std::fs::metadata(path).map_err(at(path))?.len();
            let mut f = File::open(path).map_err(at(path))?;
            let t = Instant::now();
            let cases = match mode {
                None => read_only(&mut f).map_err(at(path))?,
                Some(mode) => {
                    let mut opts = Options::new(mode, path.clone());
                    opts.threads = threads;
                    let mut sink = io::sink();
                    let p = path.clone();
                    let reopen = move || -> io::Result<Box<dyn Read>> { Ok(Box::new(File::open(&p)?)) };
                    engine::run(&mut f, &mut sink, &opts, &mut NoHooks, Some(&reopen))?.cases
                }
            };
            let secs = t.elapsed().as_secs_f64();
            println!(
                "{} {}: {cases} cases, {:.1} MB in {secs:.3}s = {:.0} cases/s, {:.0} MB/s",
                args[2],
                path,
                size as f64 / 1e6,
                cases as f64 / secs,
                size as f64 / 1e6 / secs
            );
            Ok(())
        }
        _ => Err("usage: evident-eval-bench gen N OUT [SEED] | run FILE read|parse|metrics|jsonl|json|plain [THREADS]".into()),
    }
}

/// Reads the file in 2 MiB blocks and counts lines: the floor any pass pays.
fn read_only(f: &mut File) -> io::Result<u64> {
    let mut buf = vec![0u8; 2 << 20];
    let mut lines = 0u64;
    loop {
        let n = f.read(&mut buf)?;
        if n == 0 {
            return Ok(lines);
        }
        lines += memchr::memchr_iter(b'\n', &buf[..n]).count() as u64;
    }
}
