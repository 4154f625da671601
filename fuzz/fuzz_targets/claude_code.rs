//! The Claude Code transcript reader on any bytes.
#![cfg_attr(fuzzing, no_main)]

evident_fuzz::target!(evident_fuzz::claude_code);
