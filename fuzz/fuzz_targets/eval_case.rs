//! `evident eval`'s case JSONL, line by line: the fast reader, the serde reference it
//! is tested against (they must agree on accepting or refusing it), the evaluation, and the
//! object-form reader.
#![cfg_attr(fuzzing, no_main)]

evident_fuzz::target!(evident_fuzz::eval_case);
