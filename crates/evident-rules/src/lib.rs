//! Pure decisions. No clock, no I/O: the decision time is always an argument.
//!
//! - [`verdict`]: the Completion Claim verdict (seed 000).
//! - [`compare`]: how an observation is compared with an expectation.
//! - [`belief`]: completion as a calibrated belief (seed 004).

#![warn(missing_docs)]

pub mod belief;
pub mod compare;
pub mod verdict;

pub use verdict::{Code, Coverage, Finding, Options, State, Verdict, decide};
