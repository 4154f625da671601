//! The one table of exit codes, shared by every subcommand.

/// Verified, or unverified under `on_unverified = warn | record`.
pub const OK: u8 = 0;
/// Some independent, fresh evidence contradicts the claim.
pub const REFUTED: u8 = 1;
/// Invalid input or usage; the message names the file and JSON path.
pub const INVALID: u8 = 2;
/// Unverified under `on_unverified = block` (the default).
pub const BLOCKED: u8 = 3;

/// `evident belief`: the posterior is below the bar (the goal is not accepted). The
/// same number as [`BLOCKED`]: the agent is not done. (Accepted exits [`OK`].)
pub const NOT_ACCEPTED: u8 = BLOCKED;
/// `evident suite`: some task's verdict is wrong, a goal was falsely accepted, or a
/// result differs from the one reported (the suite refutes evident).
pub const SUITE_FAILED: u8 = REFUTED;
/// `evident bench verify` / `sandbox verify`: a file of the run changed, is missing,
/// or was added. The same number as [`REFUTED`]: the run's record is contradicted.
pub const MANIFEST_MISMATCH: u8 = REFUTED;
