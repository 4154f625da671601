//! A claim document through evident-format's strict reader, then the verdict rules:
//! any bytes must give a document or an error, never a panic.
#![cfg_attr(fuzzing, no_main)]

evident_fuzz::target!(evident_fuzz::claim);
