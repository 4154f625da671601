//! Runs an owner contract against the world after an agent claim, and decides.
