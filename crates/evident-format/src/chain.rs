//! An error with its causes on one line, for messages that leave the process as text.
//!
//! Typed errors keep their cause as [`std::error::Error::source`] and do not repeat
//! it in their own `Display`, so the CLI (anyhow's `{:#}`) prints each cause once.
//! Where an error becomes a `String` instead (a JSON response, a hook's message),
//! [`Chain`] writes the same `outer: cause: cause` line.

use std::error::Error;
use std::fmt;

/// Displays an error followed by each of its sources, separated by `": "`.
pub struct Chain<'a>(pub &'a (dyn Error + 'static));

impl fmt::Display for Chain<'_> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}", self.0)?;
        let mut cause = self.0.source();
        while let Some(e) = cause {
            write!(f, ": {e}")?;
            cause = e.source();
        }
        Ok(())
    }
}

/// `error` and its causes as one line of text (see [`Chain`]).
pub fn chain(error: &(dyn Error + 'static)) -> String {
    Chain(error).to_string()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[derive(Debug, thiserror::Error)]
    #[error("cannot read x.json")]
    struct Outer(#[source] std::io::Error);

    #[test]
    fn writes_each_cause_once() {
        let e = Outer(std::io::Error::other("denied"));
        assert_eq!(chain(&e), "cannot read x.json: denied");
    }
}
