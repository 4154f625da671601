//! The CLI's integration tests: one test binary (`--test it`), one module per command
//! or topic, each driving the real `evident` binary. Run one module with
//! `cargo test -p evident --test it -- gate::` (a name filter); the benchmarks are
//! `#[ignore]`d (`cargo test --release -p evident --test it -- memory:: --ignored
//! --nocapture`). Tests that need PostgreSQL, MariaDB, Redis, pytest or a real client
//! are `#[ignore]`d unless built with `--cfg evident_services`.

mod audit;
mod belief;
mod bench;
mod docs;
mod eval;
mod gate;
mod git_witness;
mod github_pr;
mod hook;
mod ledger;
mod mcp;
mod memory;
mod output;
mod postcondition;
mod secrets;
mod serve;
mod snapshot;
mod support;
mod swebench;
mod verify;
mod web;
