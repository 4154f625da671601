//! Bulk evaluation of recorded agent traces (seed 001) and adapters from agent trace
//! formats.
//!
//! - [`case`]: one case line, parsed strictly and borrowing from the input;
//! - [`evaluate`]: the peer's semantics (latest event per required action decides);
//! - [`spec`], [`constrain`]: the object form of requirements (arguments, evidence
//!   values, counts, unrequested writes) and its evaluation;
//! - [`metrics`]: claim-quality counters;
//! - [`engine`]: the streaming, parallel, order-keeping evaluator;
//! - [`adapt`]: trace formats → canonical cases and provenance envelopes;
//! - [`pyjson`]: strict JSON input and Python-`json.dumps`-compatible output;
//! - [`corpus`]: a deterministic corpus generator for benchmarks;
//! - [`run`]: what the `eval` and `adapt` subcommands do.

#![warn(missing_docs)]

pub mod adapt;
pub mod case;
pub mod constrain;
pub mod corpus;
pub mod engine;
pub mod evaluate;
mod fast;
pub mod metrics;
pub mod pyjson;
pub mod run;
pub mod spec;
pub mod text;
