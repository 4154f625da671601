//! Pure decisions: the Completion Claim verdict (seed 000) and the completion belief (seed 004). No clock, no I/O.
