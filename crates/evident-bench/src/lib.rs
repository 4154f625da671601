//! Seed 001's evaluation worlds, as the public implementation behaves
//! (`docs/bench.md`): the worlds the trace evaluator in `evident-eval` was built to
//! measure.
//!
//! - [`bench`](mod@bench): the failure-injection benchmark — three scripted policies × eight
//!   injected tool failures × repetitions, deterministic, with the peer's run ids and
//!   per-run seeds; raw traces, envelopes, cases, evaluations, runs and metrics kept
//!   apart;
//! - [`sandbox`]: the confined file sandbox — eight file-write scenarios whose outcome is
//!   decided from the file's actual bytes, read (and written) through the gate's
//!   safe-path layer in `evident-probes`, never from the tool's own receipt;
//! - [`manifest`]: the SHA-256 manifest both write, and its check, which (beyond the
//!   peer) also refuses files the manifest does not list;
//! - [`report`]: a report for people — Markdown and an SVG chart of the
//!   false-completion rate per policy;
//! - [`config`]: the two configuration files, with errors that name the file and the
//!   JSON path.
//!
//! Evaluations go through `evident-eval`'s evaluator and adapter (one mechanism): a case
//! is written as a JSONL line and evaluated from that line, as `evident eval` would.

#![warn(missing_docs)]

pub mod bench;
pub mod config;
mod error;
mod json;
pub mod manifest;
pub mod report;
pub mod sandbox;

pub use error::Error;
