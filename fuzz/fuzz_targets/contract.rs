//! An owner's contract (TOML or JSON, chosen by the first byte, as the file name would)
//! and `verify --policy`'s policy reader.
#![cfg_attr(fuzzing, no_main)]

evident_fuzz::target!(evident_fuzz::contract);
