#![warn(missing_docs)]
//! The I/O side of the completion belief (seed 004).
//!
//! The model itself is pure and lives in `evident_rules::belief`. This crate holds what
//! touches bytes and disks: the `evident belief` input file ([`input`]), a real
//! filesystem world with real and lying tools ([`world`]), goals made checkable and the
//! fresh observer that checks them ([`goal`]), and the parity suite that runs seed
//! 004's tasks and evident's own against that world ([`suite`]).

pub mod goal;
pub mod input;
pub mod suite;
pub mod world;
