//! The one table of exit codes, shared by every subcommand.

/// Verified, or unverified under `on_unverified = warn | record`.
pub const OK: u8 = 0;
/// Some independent, fresh evidence contradicts the claim.
pub const REFUTED: u8 = 1;
/// Invalid input or usage; the message names the file and JSON path.
pub const INVALID: u8 = 2;
/// Unverified under `on_unverified = block` (the default).
pub const BLOCKED: u8 = 3;
