//! `evident adapt`: every trace format (the first byte picks it) through its public
//! entry point, with a requirements file read from the same input (after the first
//! `\n\0\n`, when present), and the adapted envelope printed.
#![cfg_attr(fuzzing, no_main)]

evident_fuzz::target!(evident_fuzz::adapt);
