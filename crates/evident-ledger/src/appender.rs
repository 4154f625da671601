//! Group commit for a long-running writer (`evident serve`): one thread owns the
//! ledger, and the appends that concurrent callers hand it while it is committing go
//! into the next transaction together. Each caller still gets its own record back, in
//! chain order; a batch is all or nothing (one transaction), so a failed commit fails
//! every caller in it and records none of them.

use std::sync::mpsc;

use crate::{Error, ErrorKind, Ledger, NewEntry, Record, Result};
use evident_sign::Key;

/// Where a job's record goes: a blocked thread, or an awaiting task.
enum Reply {
    Blocking(mpsc::SyncSender<Result<Record>>),
    Async(tokio::sync::oneshot::Sender<Result<Record>>),
}

impl Reply {
    fn send(self, r: Result<Record>) {
        match self {
            Reply::Blocking(tx) => {
                let _ = tx.send(r);
            }
            Reply::Async(tx) => {
                let _ = tx.send(r);
            }
        }
    }
}

struct Job {
    entry: NewEntry,
    key: Option<Key>,
    reply: Reply,
}

/// A handle to the writer thread (cheap to clone). The thread ends when the last
/// handle is dropped, after every append already handed to it.
#[derive(Clone)]
pub struct Appender {
    tx: mpsc::Sender<Job>,
    location: String,
}

impl std::fmt::Debug for Appender {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Appender")
            .field("location", &self.location)
            .finish()
    }
}

impl Appender {
    /// Starts the writer thread over `ledger`; at most `max_batch` records go into one
    /// transaction.
    pub fn spawn(ledger: Ledger, max_batch: usize) -> std::io::Result<Appender> {
        let (tx, rx) = mpsc::channel::<Job>();
        let location = ledger.location().to_string();
        let max_batch = max_batch.max(1);
        std::thread::Builder::new()
            .name("evident-ledger-writer".into())
            .spawn(move || {
                while let Ok(first) = rx.recv() {
                    let mut jobs = vec![first];
                    while jobs.len() < max_batch {
                        match rx.try_recv() {
                            Ok(j) => jobs.push(j),
                            Err(_) => break,
                        }
                    }
                    commit(&ledger, jobs);
                }
            })?;
        Ok(Appender { tx, location })
    }

    /// Appends one decision (signed with `key` when given) and waits for its record.
    pub fn append(&self, entry: NewEntry, key: Option<&Key>) -> Result<Record> {
        // Checked here, not in the batch: one refused entry must not fail the others.
        crate::refuse_too_deep(&entry, &self.location)?;
        let (reply, answer) = mpsc::sync_channel(1);
        self.tx
            .send(Job {
                entry,
                key: key.cloned(),
                reply: Reply::Blocking(reply),
            })
            .map_err(|_| self.gone())?;
        answer.recv().map_err(|_| self.gone())?
    }

    /// [`Appender::append`] for async code: the task waits, no thread blocks.
    pub async fn append_async(&self, entry: NewEntry, key: Option<&Key>) -> Result<Record> {
        crate::refuse_too_deep(&entry, &self.location)?;
        let (reply, answer) = tokio::sync::oneshot::channel();
        self.tx
            .send(Job {
                entry,
                key: key.cloned(),
                reply: Reply::Async(reply),
            })
            .map_err(|_| self.gone())?;
        answer.await.map_err(|_| self.gone())?
    }

    fn gone(&self) -> Error {
        Error {
            kind: ErrorKind::Store,
            location: self.location.clone(),
            message: "the ledger writer has stopped".into(),
        }
    }

    /// The ledger's location, with any password hidden.
    pub fn location(&self) -> &str {
        &self.location
    }
}

fn commit(ledger: &Ledger, jobs: Vec<Job>) {
    let (entries, replies): (Vec<_>, Vec<_>) = jobs
        .into_iter()
        .map(|j| ((j.entry, j.key), j.reply))
        .unzip();
    let n = replies.len();
    match ledger.append_batch(entries) {
        Ok(records) if records.len() == n => {
            for (reply, record) in replies.into_iter().zip(records) {
                reply.send(Ok(record));
            }
        }
        Ok(_) => {
            for reply in replies {
                reply.send(Err(Error {
                    kind: ErrorKind::Store,
                    location: ledger.location().to_string(),
                    message: "the batch append returned the wrong number of records".into(),
                }));
            }
        }
        // The transaction rolled back: none of the batch was recorded.
        Err(e) => {
            for reply in replies {
                reply.send(Err(e.clone()));
            }
        }
    }
}
