//! Reading input files (or stdin) with a size limit, and parsing times given on the
//! command line.

use anyhow::{Context, bail};
use evident_format::Timestamp;
use std::io::Read;

/// Largest document accepted; anything bigger is refused, not truncated.
pub const MAX_DOCUMENT_BYTES: u64 = 64 * 1024 * 1024;

/// Reads `path` (`-` = stdin) up to [`MAX_DOCUMENT_BYTES`].
pub fn read_limited(path: &str) -> anyhow::Result<Vec<u8>> {
    let mut buf = Vec::new();
    let reader: Box<dyn Read> = if path == "-" {
        Box::new(std::io::stdin())
    } else {
        Box::new(std::fs::File::open(path).with_context(|| format!("{path}: cannot open"))?)
    };
    reader
        .take(MAX_DOCUMENT_BYTES + 1)
        .read_to_end(&mut buf)
        .with_context(|| format!("{path}: cannot read"))?;
    if buf.len() as u64 > MAX_DOCUMENT_BYTES {
        bail!("{path}: larger than {MAX_DOCUMENT_BYTES} bytes; refusing to read it");
    }
    Ok(buf)
}

/// The decision time: `--now` if given (strict RFC 3339), else the system clock.
pub fn decision_time(now: Option<&str>) -> anyhow::Result<Timestamp> {
    match now {
        Some(text) => Timestamp::parse(text).context("--now"),
        None => Ok(Timestamp::now()),
    }
}
