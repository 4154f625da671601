//! `evident belief FILE|-`: completion as a calibrated belief (seed 004).
//!
//! Thin: parsing and the report live in `evident_belief_suite::input`, the model in
//! `evident_rules::belief`.

use anyhow::Context as _;
use anyhow::bail;
use evident_belief_suite::input;

use crate::exit;

/// Weigh DID/SAW evidence items for one goal and decide whether it is done.
///
/// Prints the posterior, the bar, each item's contribution and whether it was counted,
/// collapsed into a stronger item of its lineage, or dropped as derived, and, when not
/// accepted, what to do next. Exit codes: 0 accepted, 3 not accepted, 2 invalid input
/// (the message names the file and the JSON path).
#[derive(clap::Args)]
pub struct Args {
    /// The evidence file (JSON: {"goal": .., "items": [..]}), or `-` for stdin.
    pub file: String,
    /// Print the belief as JSON.
    #[arg(long)]
    pub json: bool,
    /// Doubt in [0, 1]: the bar is 0.95 + 0.04 x caution.
    #[arg(
        long,
        value_name = "X",
        default_value_t = 0.0,
        allow_negative_numbers = true
    )]
    pub caution: f64,
}

pub fn run(args: Args) -> anyhow::Result<u8> {
    if !args.caution.is_finite() || !(0.0..=1.0).contains(&args.caution) {
        bail!("--caution: {} is not a number in [0, 1]", args.caution);
    }
    let bytes = crate::input::read_limited(&args.file)?;
    let name = if args.file == "-" {
        "<stdin>"
    } else {
        &args.file
    };
    let (parsed, belief) = input::assess(&bytes, args.caution).with_context(|| name.to_string())?;
    if args.json {
        println!(
            "{}",
            serde_json::to_string_pretty(&input::report(&parsed, &belief))?
        );
    } else {
        print!("{}", input::render(&parsed, &belief));
    }
    Ok(if belief.accepted {
        exit::OK
    } else {
        exit::NOT_ACCEPTED
    })
}
