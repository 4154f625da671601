//! Runs an owner's contract against the world after an agent's claim, and decides.
//!
//! - [`contract`]: the contract document (TOML or JSON) and its strict reader.
//! - [`run`]: the checks run concurrently under one deadline; their observations become
//!   `independent` evidence (verifier `evident/<version>`), and the claim is decided
//!   under the contract's policy.

#![warn(missing_docs)]

pub mod contract;
pub mod lint;
pub mod run;
pub mod snapshot;

pub use contract::{Applies, Check, Contract, ContractDocument, Covers};
pub use run::{CheckRun, Outcome, Planned, Settings, verifier_id};

/// The JSON Schema of the contract, generated from the types.
pub fn contract_schema() -> schemars::Schema {
    schemars::schema_for!(Contract)
}
