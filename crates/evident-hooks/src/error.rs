//! Why a hook could not check a stop: what it was doing, with the cause kept as the
//! error's source. The agent and the user see it as one line ([`evident_format::chain`]).

use std::path::Path;

use evident_probes::ProbeError;

/// A hook's own failure (never the agent's claim being wrong: that is a verdict).
#[derive(Debug, thiserror::Error)]
pub enum HookError {
    /// A fixed explanation, with its hint.
    #[error("{0}")]
    Message(String),
    /// A file or directory could not be read, written or resolved.
    #[error("{what}")]
    Io {
        /// The path, or what was being done with it.
        what: String,
        /// What the operating system said.
        source: std::io::Error,
    },
    /// The git witness could not run git, or git failed.
    #[error("git")]
    Git(#[source] ProbeError),
    /// A probe failed (resolving a revision, reading the tree).
    #[error(transparent)]
    Probe(#[from] ProbeError),
    /// JSON that does not parse, or cannot be written.
    #[error("{what}")]
    Json {
        /// The document, or what was being done with it.
        what: String,
        /// serde_json's error.
        source: serde_json::Error,
    },
    /// The signing key does not load.
    #[error(transparent)]
    Key(#[from] evident_sign::KeyError),
    /// A snapshot could not be signed.
    #[error(transparent)]
    Sign(#[from] evident_sign::SignError),
    /// The pipeline could not decide or record.
    #[error(transparent)]
    Pipeline(#[from] evident_pipeline::Error),
    /// The ledger could not be opened or appended to.
    #[error(transparent)]
    Ledger(#[from] evident_ledger::Error),
    /// The snapshot could not be taken or is refused.
    #[error(transparent)]
    Snapshot(#[from] evident_gate::snapshot::SnapshotError),
    /// A document (the contract, the built claim) is invalid.
    #[error(transparent)]
    Document(#[from] evident_format::Error),
    /// The contract, named as the user knows it, is invalid.
    #[error("{name}")]
    Contract {
        /// The contract's path or name.
        name: String,
        /// What is wrong in it (its own message names the format and position).
        source: evident_format::Error,
    },
    /// A transcript is not in the format it was said to be.
    #[error(transparent)]
    Trace(#[from] evident_traces::Error),
}

impl From<String> for HookError {
    fn from(message: String) -> HookError {
        HookError::Message(message)
    }
}

impl From<&str> for HookError {
    fn from(message: &str) -> HookError {
        HookError::Message(message.to_string())
    }
}

/// An I/O error about `path`, named as shown.
pub(crate) fn io_at(path: &Path) -> impl FnOnce(std::io::Error) -> HookError + '_ {
    move |source| HookError::Io {
        what: path.display().to_string(),
        source,
    }
}

/// An I/O error described by `what`.
pub(crate) fn io(what: impl Into<String>) -> impl FnOnce(std::io::Error) -> HookError {
    let what = what.into();
    move |source| HookError::Io { what, source }
}

/// A JSON error described by `what`.
pub(crate) fn json(what: impl Into<String>) -> impl FnOnce(serde_json::Error) -> HookError {
    let what = what.into();
    move |source| HookError::Json { what, source }
}
