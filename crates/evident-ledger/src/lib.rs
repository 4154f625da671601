//! Append-only, hash-chained record of every decision; Ed25519 signing and trust lists.
