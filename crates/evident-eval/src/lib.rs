//! Bulk evaluation of recorded agent traces (seed 001) and adapters from agent trace formats.
