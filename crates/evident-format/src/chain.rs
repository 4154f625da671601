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

/// Declares an error that is a message and nothing else (a validation sentence with no
/// underlying cause), with `From<String>` and `From<&str>` so `Err("…".into())` and
/// `format!` both make one. A leaf: it has no source, and its `Display` is the message.
///
/// ```
/// evident_format::message_error! {
///     /// Why a name is refused.
///     pub struct BadName;
/// }
/// let e: BadName = "names are ASCII".into();
/// assert_eq!(e.to_string(), "names are ASCII");
/// ```
#[macro_export]
macro_rules! message_error {
    ($(#[$meta:meta])* $vis:vis struct $name:ident;) => {
        $(#[$meta])*
        #[derive(Debug, Clone, PartialEq, Eq)]
        $vis struct $name(pub String);

        impl ::std::fmt::Display for $name {
            fn fmt(&self, f: &mut ::std::fmt::Formatter<'_>) -> ::std::fmt::Result {
                f.write_str(&self.0)
            }
        }

        impl ::std::error::Error for $name {}

        impl ::std::convert::From<String> for $name {
            fn from(message: String) -> $name {
                $name(message)
            }
        }

        impl ::std::convert::From<&str> for $name {
            fn from(message: &str) -> $name {
                $name(message.to_string())
            }
        }
    };
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
