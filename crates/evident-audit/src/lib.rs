//! Close-out audit (seed 002): commit, ledger item and test-span claims checked with real git and real test runners.
