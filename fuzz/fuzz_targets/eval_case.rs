//! `evident eval`'s case JSONL, line by line: the fast reader and the serde reference it
//! is tested against (both refuse, or both accept with the same evaluation), and the
//! object-form reader.
#![cfg_attr(fuzzing, no_main)]

evident_fuzz::target!(evident_fuzz::eval_case);
