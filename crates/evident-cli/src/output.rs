//! What `verify` and `gate` share after the pipeline decided: where to record, how to
//! print, and the exit code — the CLI's only decisions.

use anyhow::Context as _;
use evident_pipeline::{Decision, Recording, Status};
use std::path::PathBuf;

/// Where (and whether) a decision is recorded.
#[derive(clap::Args, Debug, Clone)]
pub struct RecordArgs {
    /// Do not append this decision to the ledger.
    #[arg(long)]
    pub no_record: bool,
    /// The ledger: a SQLite file path or `postgres://…` (default: $EVIDENT_LEDGER, else the
    /// current repository's ledger, outside its working tree, at
    /// $XDG_STATE_HOME/evident/ledgers/NAME-HASH/ledger.db; without XDG_STATE_HOME
    /// ~/.local/state/evident/…, on macOS ~/Library/Application Support/evident/…; created
    /// on first use). Keep it where the agent cannot write.
    #[arg(long, value_name = "PATH|URL")]
    pub ledger: Option<String>,
    /// After recording, append a checkpoint of the ledger's head (its record count and
    /// hash, signed with --key) to this file, kept where the ledger's writers cannot
    /// rewrite it; `evident ledger verify --checkpoint` then detects a truncated tail
    /// or an older copy restored.
    #[arg(long, value_name = "FILE", requires = "key")]
    pub checkpoint: Option<PathBuf>,
}

impl RecordArgs {
    /// The pipeline's recording settings.
    pub fn recording(&self) -> Recording {
        Recording {
            off: self.no_record,
            ledger: self.ledger.clone(),
            checkpoint: self.checkpoint.clone(),
            ..Recording::default()
        }
    }
}

/// How a decision is shown: the extra files it is written to, and whether the clock decided.
pub struct Outputs {
    pub json: bool,
    pub junit: Option<PathBuf>,
    pub markdown: Option<PathBuf>,
    /// The decision time is the clock's, not the caller's `--now`: evidence observed
    /// long before it gets a hint naming the `--now` it was written for.
    pub clock_now: bool,
}

/// Prints the decision (report or JSON), writes the extra files, says where it was
/// recorded, and maps it to the exit code. A decision that could not be recorded is
/// printed, then refused (exit 2).
pub fn show(
    decision: Result<Decision, evident_pipeline::Error>,
    out: &Outputs,
) -> anyhow::Result<u8> {
    let (decision, record_error) = match decision {
        Ok(d) => (d, None),
        Err(evident_pipeline::Error::Record { decision, source }) => (*decision, Some(source)),
        Err(e) => return Err(e.into()),
    };
    for w in &decision.warnings {
        if matches!(w.path.as_str(), "ledger" | "checkpoint" | "key") {
            eprintln!("warning: {}", evident_pipeline::render::shown(&w.message));
        }
    }
    if let Some(path) = &out.junit {
        std::fs::write(path, evident_pipeline::render::junit(&decision))
            .with_context(|| format!("{}: cannot write the JUnit report", path.display()))?;
    }
    if let Some(path) = &out.markdown {
        std::fs::write(path, evident_pipeline::render::markdown(&decision))
            .with_context(|| format!("{}: cannot write the Markdown summary", path.display()))?;
    }
    if out.json {
        // Streamed, as the text report is: the JSON of a large claim is not built as
        // one string beside the claim.
        use std::io::Write;
        let mut stdout = std::io::BufWriter::new(std::io::stdout().lock());
        serde_json::to_writer_pretty(&mut stdout, &evident_pipeline::render::json(&decision))?;
        writeln!(stdout)?;
        stdout.flush()?;
    } else {
        write_text(&decision)?;
    }
    if let Some(e) = record_error {
        return Err(e.into());
    }
    if let Some(r) = &decision.record {
        let signed = r
            .signed_by
            .as_ref()
            .map_or(String::new(), |k| format!(", signed by {k}"));
        eprintln!(
            "recorded as #{} in {} ({}{signed})",
            r.id, r.location, r.hash
        );
    }
    if out.clock_now
        && let Some(h) = crate::hint::stale_long_ago(&decision)
    {
        eprintln!("hint: {}", evident_pipeline::render::shown(&h));
    }
    Ok(match decision.status() {
        Status::Verified | Status::Allowed => crate::exit::OK,
        Status::Refuted => crate::exit::REFUTED,
        Status::Blocked => crate::exit::BLOCKED,
    })
}

/// The text report, streamed to stdout: a large claim's report (tens of MB) is not
/// built as one string beside the claim.
fn write_text(decision: &Decision) -> anyhow::Result<()> {
    use std::io::Write;
    /// `fmt::Write` over stdout, keeping the first I/O error (fmt's error has none).
    struct Out<W: Write> {
        w: W,
        error: Option<std::io::Error>,
    }
    impl<W: Write> std::fmt::Write for Out<W> {
        fn write_str(&mut self, s: &str) -> std::fmt::Result {
            self.w.write_all(s.as_bytes()).map_err(|e| {
                self.error.get_or_insert(e);
                std::fmt::Error
            })
        }
    }
    let mut out = Out {
        w: std::io::BufWriter::new(std::io::stdout().lock()),
        error: None,
    };
    evident_pipeline::render::text_to(decision, &mut out);
    let flushed = out.w.flush();
    out.error
        .map_or(flushed, Err)
        .context("cannot write the report to stdout")
}
