//! Pure decisions. No clock, no I/O: the decision time is always an argument.
//!
//! - [`verdict`]: the Completion Claim verdict (seed 000).
//! - [`compare`]: how an observation is compared with an expectation.
//! - [`belief`]: completion as a calibrated belief (seed 004).
//! - [`unclean`]: the paths a `git` observation names when the tree is not clean.

#![warn(missing_docs)]

pub mod belief;
pub mod compare;
pub mod unclean;
pub mod verdict;

pub use verdict::{Code, Coverage, Finding, Options, State, Verdict, decide};
