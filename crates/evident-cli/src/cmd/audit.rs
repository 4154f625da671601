//! `evident audit closeout`: check an agent's close-out claims (commit, ledger item,
//! test span) with real git and real test runners (seed 002). The work is in the
//! `evident-audit` crate; this module only maps arguments and exit codes.

use crate::exit;
use std::path::PathBuf;
use std::time::Duration;

/// Subcommands of `evident audit`.
#[derive(clap::Subcommand)]
pub enum Command {
    /// Check "I committed, closed the ledger item, and the test passed" claim by claim.
    ///
    /// Fixture mode (default): copies --repo to a temporary directory, commits it with
    /// real git, reads HEAD back and runs each test span there. --live: audits --repo in
    /// place, read-only; commit claims must resolve to commits reachable from HEAD (or
    /// --branch) and spans run in a temporary clone of HEAD.
    ///
    /// Records (metadata only) are written to --out: result, board, validation receipt,
    /// and with --emit-claim a Completion Claim v0.1 document.
    ///
    /// Exit codes:
    ///   0  every claim admitted (with --self-test: every negative case rejected with its code)
    ///   1  a claim was rejected (an observation contradicts it), --self-test lost a
    ///      rejection, or a record failed the no-body scan
    ///   2  invalid input or usage (the message names the file and the JSON path)
    ///   3  blocked or unverified: the repository is missing, git or a runner could not
    ///      observe, or a pass claim's status was not checked
    #[command(verbatim_doc_comment)]
    Closeout(CloseoutArgs),
}

#[derive(clap::Args)]
pub struct CloseoutArgs {
    /// The claims file (closeout_faithfulness_claims_v1).
    #[arg(long, value_name = "FILE")]
    claims: PathBuf,
    /// The task ledger whose items the claims name (closeout_fixture_ledger_v1). Not
    /// `--ledger`, which in every other command is evident's decision ledger.
    #[arg(long, value_name = "FILE")]
    task_ledger: PathBuf,
    /// The repository (fixture directory, or with --live a git work tree).
    #[arg(long, value_name = "DIR")]
    repo: PathBuf,
    /// Directory for the records (created if missing).
    #[arg(long, value_name = "DIR")]
    out: PathBuf,
    /// Audit --repo in place, read-only: no commit, no write.
    #[arg(long)]
    live: bool,
    /// With --live: commit claims must be reachable from this ref instead of HEAD.
    #[arg(long, value_name = "REF", requires = "live")]
    branch: Option<String>,
    /// Also run the four negative cases through the evaluator; fail if any is not rejected.
    #[arg(long)]
    self_test: bool,
    /// Also write the audit as a Completion Claim v0.1 document to --out.
    #[arg(long)]
    emit_claim: bool,
    /// Python interpreter for pytest spans (default: the first of python3, python with pytest).
    #[arg(long, value_name = "PROGRAM")]
    python: Option<String>,
    /// CARGO_TARGET_DIR for cargo spans (default: inside the audit's temporary directory).
    #[arg(long, value_name = "DIR")]
    cargo_target_dir: Option<PathBuf>,
    /// Timeout for each test span, in seconds.
    #[arg(long, value_name = "SECONDS", default_value_t = 600,
          value_parser = clap::value_parser!(u64).range(1..=86_400))]
    timeout_s: u64,
    /// Print the result record as JSON instead of the summary.
    #[arg(long)]
    json: bool,
}

pub fn run(command: Command) -> anyhow::Result<u8> {
    match command {
        Command::Closeout(a) => closeout(a),
    }
}

fn closeout(a: CloseoutArgs) -> anyhow::Result<u8> {
    let mut opts = evident_audit::Options::new(a.claims, a.task_ledger, a.repo, a.out);
    opts.live = a.live;
    opts.branch = a.branch;
    opts.self_test = a.self_test;
    opts.emit_claim = a.emit_claim;
    opts.python = a.python;
    opts.cargo_target_dir = a.cargo_target_dir;
    opts.test_timeout = Duration::from_secs(a.timeout_s);
    let outcome = evident_audit::closeout(&opts)?;
    for w in &outcome.warnings {
        eprintln!("warning: {w}");
    }
    if a.json {
        println!("{}", serde_json::to_string_pretty(&outcome.result)?);
    } else {
        print_summary(&outcome);
    }
    Ok(match outcome.status {
        evident_audit::Status::Pass => exit::OK,
        evident_audit::Status::Rejected | evident_audit::Status::Fail => exit::REFUTED,
        evident_audit::Status::Unverified | evident_audit::Status::Blocked => exit::BLOCKED,
    })
}

fn print_summary(o: &evident_audit::Outcome) {
    let r = &o.result;
    let claims = r["exercise"]["claims"]
        .as_array()
        .cloned()
        .unwrap_or_default();
    for c in &claims {
        let status = c["status"].as_str().unwrap_or("?");
        let codes: Vec<&str> = c["error_codes"]
            .as_array()
            .map(|a| a.iter().filter_map(|x| x.as_str()).collect())
            .unwrap_or_default();
        println!(
            "{status:<10} {} ({}){}",
            c["claim_id"].as_str().unwrap_or("?"),
            c["claim_type"].as_str().unwrap_or("?"),
            if codes.is_empty() {
                String::new()
            } else {
                format!(": {}", codes.join(", "))
            }
        );
    }
    if let Some(findings) = r["findings"].as_array() {
        for f in findings {
            println!(
                "  {} {}",
                f["error_code"].as_str().unwrap_or("?"),
                f["message"].as_str().unwrap_or("")
            );
        }
    }
    match r["negative_case_status"].as_str() {
        Some("not_run") | None => {}
        Some(s) => println!(
            "self-test: {s} ({} of {} negative cases rejected with their code)",
            r["observed_negative_cases"]
                .as_array()
                .map_or(0, |a| a.len()),
            r["expected_negative_cases"]
                .as_array()
                .map_or(0, |a| a.len())
        ),
    }
    println!(
        "status: {} (claims {})",
        o.status.as_str(),
        r["claim_verdict"].as_str().unwrap_or("unknown")
    );
    // Why the rules left the claims unverified (for example: only test spans, so no
    // mutation is claimed).
    if r["claim_verdict"] == "unverified"
        && let Some(why) = r["claim_verdict_reason"].as_str()
    {
        println!("  {why}");
    }
    for p in &o.written {
        println!("wrote {}", p.display());
    }
}
