//! A JUnit XML report, as a test command's `junit` file is read, and a test named in it.
#![cfg_attr(fuzzing, no_main)]

evident_fuzz::target!(evident_fuzz::junit);
