//! One module per subcommand. Each exposes its clap arguments and a `run` that returns
//! the exit code (see `crate::exit`).

pub mod adapt;
pub mod audit;
pub mod belief;
pub mod bench;
pub mod claim;
pub mod contract;
pub mod eval;
pub mod gate;
pub mod hook;
pub mod init;
pub mod key;
pub mod ledger;
pub mod log;
pub mod mcp;
pub mod sandbox;
pub mod schema;
pub mod serve;
pub mod show;
pub mod snapshot;
pub mod suite;
pub mod token;
pub mod verify;
