//! A test runner's output (cargo, nextest, pytest, go, or unnamed: the first byte
//! picks), read line by line for its summary counts.
#![cfg_attr(fuzzing, no_main)]

evident_fuzz::target!(evident_fuzz::summary);
