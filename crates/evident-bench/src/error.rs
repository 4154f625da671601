//! One error type: a message that names the file, the JSON path inside it when there is
//! one, and a hint where one helps.

use std::fmt::Display;
use std::path::Path;

evident_format::message_error! {
    /// Why a command could not do its work.
    pub struct Error;
}

impl Error {
    /// `FILE: $.json.path: message`.
    pub fn at(file: &str, json_path: &str, msg: impl Display) -> Self {
        Error(format!("{file}: {json_path}: {msg}"))
    }

    /// `PATH: cannot WHAT: reason`.
    pub fn io(path: &Path, what: &str, e: &std::io::Error) -> Self {
        Error(format!("{}: cannot {what}: {e}", path.display()))
    }

    /// `PATH: message`.
    pub fn file(path: &Path, msg: impl Display) -> Self {
        Error(format!("{}: {msg}", path.display()))
    }
}
