//! Append-only, hash-chained record of every decision.
//!
//! - A record's body is canonical JSON ([`evident_sign::canonical_json`]); with a key its
//!   hash is signed ([`attest`], keys and trust lists from evident-sign).
//! - [`Ledger`]: the hash-chained store, a SQLite file by default or a PostgreSQL
//!   schema when several machines share it. [`open`] picks the store from a location.
//! - [`place`]: the state directory outside every working tree, where the default
//!   ledger of each repository lives (and the agent hooks' state).
//!
//! The API is blocking: the ledger runs its own small tokio runtime and may be called
//! from synchronous code or from inside another runtime (it then works on a scoped
//! helper thread).
//!
//! ```no_run
//! use evident_ledger::{open, NewEntry};
//! // $EVIDENT_LEDGER, else this repository's ledger in the state directory
//! // (~/.local/state/evident/ledgers/<repo>-<hash>/ledger.db): never in the working tree.
//! let ledger = open(None)?;
//! let record = ledger.append(NewEntry {
//!     kind: "verify".into(),
//!     task_id: Some("deploy-4471".into()),
//!     state: "verified".into(),
//!     claim: serde_json::json!({"spec_version": "0.1"}).into(),
//!     contract: None,
//!     verdict: serde_json::json!({"state": "verified"}).into(),
//!     origin: None,
//! })?;
//! println!("recorded #{} {}", record.id, record.hash);
//! # Ok::<(), evident_ledger::Error>(())
//! ```

#![warn(missing_docs)]

mod appender;
pub mod attest;
pub mod canon;
pub mod depth;
pub mod place;
pub mod record;
pub mod redact;
mod store;

use evident_sign::canonical_json;
use std::future::Future;
use std::path::{Path, PathBuf};
use std::str::FromStr as _;

use sqlx::postgres::PgConnectOptions;
use tokio::sync::Mutex;

pub use appender::Appender;
pub use attest::{Checkpoint, CheckpointError, Expectations, RecordSignature};
pub use canon::canonical_redacted;
pub use record::{Break, GENESIS, NewEntry, Record, Summary, VerifyOptions, format_time};
pub use redact::{redact_dsn, redact_in_place, redact_value};
pub use store::Filter;

use record::{ChainChecker, Prepared, Row};
use store::Conn;

/// [`Ledger::check_depth`], for a writer that holds only the location.
pub(crate) fn refuse_too_deep(e: &NewEntry, location: &str) -> Result<()> {
    // The record's body holds each document one level down (`{"claim": …}`).
    let documents = [e.contract.as_ref(), e.origin.as_ref()];
    let deepest = documents
        .into_iter()
        .flatten()
        .map(depth::of_value)
        .chain([e.claim.as_str(), e.verdict.as_str()].map(depth::of_text))
        .max()
        .unwrap_or(0);
    if deepest + 1 > depth::MAX_DEPTH {
        return Err(Error {
            kind: ErrorKind::Refused,
            location: location.to_string(),
            message: format!(
                "cannot append a record nested {} levels deep: a record may nest at most {} levels (the documents inside it {})",
                deepest + 1,
                depth::MAX_DEPTH,
                depth::MAX_DEPTH - 1
            ),
        });
    }
    Ok(())
}

/// The environment variable naming the ledger when no location is given.
pub const ENV_VAR: &str = "EVIDENT_LEDGER";
/// The default ledger of earlier versions, relative to the current directory: inside
/// the working tree, where an agent could write it and where it made a `git` check's
/// `clean = true` fail. No longer used unless named (`--ledger .evident/ledger.db`);
/// [`open`] says so when it finds one (see [`place`] for the default now).
pub const LEGACY_PATH: &str = ".evident/ledger.db";
/// For crash tests only: when set to a number of milliseconds, every append pauses that
/// long after inserting its record and before committing, and says so on stderr, so a
/// test can kill the process at exactly that point.
#[doc(hidden)]
pub const TEST_PAUSE_ENV: &str = "EVIDENT_LEDGER_TEST_PAUSE_BEFORE_COMMIT_MS";
/// The PostgreSQL schema used when the location names none (`?schema=NAME`).
pub const DEFAULT_SCHEMA: &str = "evident";

/// What went wrong with a ledger.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum ErrorKind {
    /// The location could not be understood.
    Location,
    /// A read command found no ledger at the location.
    Missing,
    /// The store failed (I/O, SQL, connection).
    Store,
    /// A record asked for does not exist.
    NotFound,
    /// The data in the store is not a valid record.
    Corrupt,
    /// The entry cannot be recorded as given (it nests deeper than
    /// [`depth::MAX_DEPTH`]); nothing was stored.
    Refused,
}

/// A ledger error. `location` never holds a password.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("ledger {location}: {message}")]
pub struct Error {
    /// What kind of failure, for a caller that reacts differently (a missing ledger
    /// is not a broken one).
    pub kind: ErrorKind,
    /// The ledger as shown to users: a path, or a URL with its password removed.
    pub location: String,
    /// What went wrong, with known secrets scrubbed out.
    pub message: String,
}

/// Every ledger operation fails with [`Error`].
pub type Result<T, E = Error> = std::result::Result<T, E>;

/// Where a ledger lives.
#[derive(Clone)]
enum Location {
    Sqlite(PathBuf),
    Postgres {
        options: Box<PgConnectOptions>,
        schema: String,
    },
}

/// The result of checking a whole chain.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct VerifyReport {
    /// Records that verified before the first break (all of them when unbroken).
    pub records: u64,
    /// The id and hash of the last verified record.
    pub head: Option<(u64, String)>,
    /// The first broken record, if any.
    pub broken: Option<Break>,
}

/// An open ledger.
pub struct Ledger {
    // Dropped before the runtime (field order), so connections close inside it.
    conn: Mutex<Option<Conn>>,
    location: Location,
    shown: String,
    secrets: Vec<String>,
    /// Create the store if missing (false for read-only commands).
    create: bool,
    /// The crash tests' hook ([`TEST_PAUSE_ENV`]).
    pause_before_commit: Option<std::time::Duration>,
    /// `None` only while being dropped.
    rt: Option<tokio::runtime::Runtime>,
}

impl std::fmt::Debug for Ledger {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Ledger")
            .field("location", &self.shown)
            .finish()
    }
}

/// Open (creating on first use) the ledger at `location`; `None` means the
/// `EVIDENT_LEDGER` environment variable, else the current repository's ledger in the
/// state directory ([`default_location`]). A location is a file path (`sqlite:` prefix
/// optional) or a `postgres://…` / `postgresql://…` URL; `?schema=NAME` picks the
/// PostgreSQL schema (default `evident`).
pub fn open(location: Option<&str>) -> Result<Ledger> {
    Ledger::open(location, true)
}

/// Open an existing ledger for reading: a SQLite file that does not exist is an error
/// (kind [`ErrorKind::Missing`]) rather than created.
pub fn open_existing(location: Option<&str>) -> Result<Ledger> {
    Ledger::open(location, false)
}

/// The location `open(None)` uses, with any password hidden (for messages).
pub fn default_location_shown() -> Result<String> {
    resolve(None).map(|r| redact_dsn(&r.raw))
}

/// The default ledger (without `--ledger` and `$EVIDENT_LEDGER`):
/// `<state>/ledgers/<key>/ledger.db` for the repository the current directory lies in
/// ([`place::default_ledger_in`]), outside every working tree, one per repository.
pub fn default_location() -> Result<PathBuf> {
    let refused = |message: String| Error {
        kind: ErrorKind::Location,
        location: "(the default ledger)".into(),
        message,
    };
    let cwd = std::env::current_dir()
        .and_then(|d| d.canonicalize())
        .map_err(|e| refused(format!("cannot read the current directory: {e}")))?;
    place::default_ledger_in(&cwd, &place::process_env).ok_or_else(|| {
        refused(format!(
            "no state directory to keep it in: neither $XDG_STATE_HOME nor $HOME is an absolute path; name a ledger with --ledger or ${ENV_VAR}"
        ))
    })
}

/// The SQLite file a location names (after `$EVIDENT_LEDGER` and the default), or
/// `None` for PostgreSQL or a location that does not parse. For checking where a
/// ledger lies.
pub fn sqlite_path(location: Option<&str>) -> Option<PathBuf> {
    match parse_location(&resolve(location).ok()?.raw) {
        Ok((Location::Sqlite(path), _)) => Some(path),
        _ => None,
    }
}

/// A location as given, or as chosen when none was.
struct Resolved {
    raw: String,
    /// Chosen by default (no location, no `$EVIDENT_LEDGER`).
    default: bool,
}

fn resolve(location: Option<&str>) -> Result<Resolved> {
    let given = |raw: String| Resolved {
        raw,
        default: false,
    };
    Ok(match location {
        Some(l) => given(l.to_string()),
        None => match std::env::var(ENV_VAR) {
            Ok(v) if !v.trim().is_empty() => given(v),
            _ => Resolved {
                raw: default_location()?.display().to_string(),
                default: true,
            },
        },
    })
}

/// Once per process, when the default ledger is used: if this directory holds the
/// default ledger of earlier versions ([`LEGACY_PATH`]) and the default one does not
/// exist yet, a note on stderr. The new default starts a chain of its own (the tree
/// stays clean); the note says how to keep the old chain instead.
fn note_legacy(default: &Path) {
    static ONCE: std::sync::Once = std::sync::Once::new();
    if default.exists() || !Path::new(LEGACY_PATH).is_file() {
        return;
    }
    ONCE.call_once(|| {
        eprintln!(
            "note: the default ledger is now {new}, outside the working tree; this directory holds the ledger of earlier versions, {LEGACY_PATH}, whose chain the new one does not continue. hint: to keep using it, pass --ledger {LEGACY_PATH} (or set {ENV_VAR}); to continue its chain at the new default (and leave the tree clean), move it there (with its -wal file, if any): mkdir -p '{dir}' && mv {LEGACY_PATH}* '{dir}/'",
            new = default.display(),
            dir = default.parent().unwrap_or(default).display(),
        );
    });
}

evident_format::message_error! {
    /// Why a ledger location is refused. A leaf holding text only: the parsers' errors
    /// can quote the URL's password, so only their scrubbed text is kept.
    struct BadLocation;
}

fn parse_location(raw: &str) -> Result<(Location, Vec<String>), BadLocation> {
    let lower = raw.to_ascii_lowercase();
    if lower.starts_with("postgres://") || lower.starts_with("postgresql://") {
        let mut url =
            url::Url::parse(raw).map_err(|e| BadLocation(format!("not a valid URL: {e}")))?;
        let mut secrets = Vec::new();
        if let Some(p) = url.password() {
            secrets.push(p.to_string());
            if let Ok(decoded) = percent_decode(p) {
                secrets.push(decoded);
            }
        }
        let mut schema = DEFAULT_SCHEMA.to_string();
        let mut kept: Vec<(String, String)> = Vec::new();
        for (k, v) in url.query_pairs() {
            if k == "schema" {
                schema = v.to_string();
            } else {
                if redact::CREDENTIAL_KEYS.contains(&k.to_ascii_lowercase().as_str()) {
                    secrets.push(v.to_string());
                }
                kept.push((k.to_string(), v.to_string()));
            }
        }
        let valid = !schema.is_empty()
            && schema.len() <= 63
            && schema
                .chars()
                .next()
                .is_some_and(|c| c.is_ascii_alphabetic() || c == '_')
            && schema
                .chars()
                .all(|c| c.is_ascii_alphanumeric() || c == '_');
        if !valid {
            return Err(BadLocation(format!(
                "schema {schema:?} is not a plain identifier (letters, digits, _; at most 63)"
            )));
        }
        if kept.is_empty() {
            url.set_query(None);
        } else {
            url.query_pairs_mut().clear().extend_pairs(kept);
        }
        let options = PgConnectOptions::from_str(url.as_str()).map_err(|e| {
            BadLocation(format!(
                "not a PostgreSQL URL: {}",
                scrub(&e.to_string(), &secrets)
            ))
        })?;
        Ok((
            Location::Postgres {
                options: Box::new(options),
                schema,
            },
            secrets,
        ))
    } else {
        let path = raw
            .strip_prefix("sqlite://")
            .or_else(|| raw.strip_prefix("sqlite:"))
            .unwrap_or(raw);
        if path.is_empty() {
            return Err("empty path".into());
        }
        if lower.contains("://") && !lower.starts_with("sqlite:") {
            return Err("unknown scheme: use a file path or postgres://".into());
        }
        Ok((Location::Sqlite(PathBuf::from(path)), Vec::new()))
    }
}

fn percent_decode(s: &str) -> Result<String, ()> {
    let b = s.as_bytes();
    let mut out = Vec::with_capacity(b.len());
    let mut i = 0;
    while i < b.len() {
        if b[i] == b'%' && i + 2 < b.len() {
            let h = std::str::from_utf8(&b[i + 1..i + 3]).map_err(|_| ())?;
            out.push(u8::from_str_radix(h, 16).map_err(|_| ())?);
            i += 3;
        } else {
            out.push(b[i]);
            i += 1;
        }
    }
    String::from_utf8(out).map_err(|_| ())
}

/// Remove every known secret (and any URL password) from a message.
fn scrub(message: &str, secrets: &[String]) -> String {
    let mut m = redact_dsn(message);
    for s in secrets {
        if s.len() >= 3 {
            m = m.replace(s.as_str(), redact::REDACTED);
        }
    }
    m
}

impl Ledger {
    fn open(location: Option<&str>, create: bool) -> Result<Ledger> {
        let Resolved { raw, default } = resolve(location)?;
        if default {
            note_legacy(Path::new(&raw));
        }
        let shown = redact_dsn(&raw);
        let (location, secrets) = parse_location(&raw).map_err(|BadLocation(message)| Error {
            kind: ErrorKind::Location,
            location: shown.clone(),
            message,
        })?;
        let rt = tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .build()
            .map_err(|e| Error {
                kind: ErrorKind::Store,
                location: shown.clone(),
                message: format!("cannot start the I/O runtime: {e}"),
            })?;
        if let Location::Sqlite(path) = &location {
            if !create && !path.exists() {
                return Err(Error {
                    kind: ErrorKind::Missing,
                    location: shown,
                    message: "no ledger here yet (nothing has been recorded)".into(),
                });
            }
            if create && let Some(parent) = path.parent().filter(|p| !p.as_os_str().is_empty()) {
                // The default's directories are the user's alone (claims and verdicts).
                use std::os::unix::fs::DirBuilderExt as _;
                let mode = if default { 0o700 } else { 0o777 };
                std::fs::DirBuilder::new()
                    .recursive(true)
                    .mode(mode)
                    .create(parent)
                    .map_err(|e| Error {
                        kind: ErrorKind::Store,
                        location: shown.clone(),
                        message: format!("cannot create directory {}: {e}", parent.display()),
                    })?;
            }
        }
        let ledger = Ledger {
            conn: Mutex::new(None),
            location,
            shown,
            secrets,
            create,
            pause_before_commit: std::env::var(TEST_PAUSE_ENV)
                .ok()
                .and_then(|ms| ms.parse::<u64>().ok())
                .map(std::time::Duration::from_millis),
            rt: Some(rt),
        };
        ledger.block(|| async {
            let mut guard = ledger.conn.lock().await;
            ledger.connect(&mut guard).await.map(|_| ())
        })?;
        Ok(ledger)
    }

    /// The location, with any password hidden.
    pub fn location(&self) -> &str {
        &self.shown
    }

    /// Is this a PostgreSQL ledger?
    pub fn is_postgres(&self) -> bool {
        matches!(self.location, Location::Postgres { .. })
    }

    fn err(&self, kind: ErrorKind, what: &str, e: &sqlx::Error) -> Error {
        Error {
            kind,
            location: self.shown.clone(),
            message: scrub(&format!("{what}: {e}"), &self.secrets),
        }
    }

    async fn connect<'a>(&self, slot: &'a mut Option<Conn>) -> Result<&'a mut Conn> {
        let create = self.create;
        if slot.is_none() {
            let conn = match &self.location {
                Location::Sqlite(path) => store::open_sqlite(path, create).await,
                Location::Postgres { options, schema } => {
                    store::open_postgres(options, schema, create).await
                }
            }
            .map_err(|e| match e {
                sqlx::Error::RowNotFound => Error {
                    kind: ErrorKind::Missing,
                    location: self.shown.clone(),
                    message: "no ledger here yet (the schema has no records table)".into(),
                },
                sqlx::Error::PoolTimedOut => Error {
                    kind: ErrorKind::Store,
                    location: self.shown.clone(),
                    message: "cannot open: the server did not answer within 20 s".into(),
                },
                e => self.err(ErrorKind::Store, "cannot open", &e),
            })?;
            *slot = Some(conn);
        }
        slot.as_mut().ok_or_else(|| Error {
            kind: ErrorKind::Store,
            location: self.shown.clone(),
            message: "no connection".into(),
        })
    }

    /// Run an operation on the connection; a broken connection is dropped so the next
    /// operation reconnects.
    fn with_conn<T: Send>(
        &self,
        what: &str,
        op: impl for<'c> FnOnce(
            &'c mut Conn,
        )
            -> std::pin::Pin<Box<dyn Future<Output = Result<T, sqlx::Error>> + 'c>>
        + Send,
    ) -> Result<T> {
        self.block(|| async {
            let mut guard = self.conn.lock().await;
            let conn = self.connect(&mut guard).await?;
            match op(conn).await {
                Ok(v) => Ok(v),
                Err(e) => {
                    let kind = match &e {
                        sqlx::Error::Decode(_) | sqlx::Error::ColumnDecode { .. } => {
                            ErrorKind::Corrupt
                        }
                        _ => ErrorKind::Store,
                    };
                    if matches!(
                        e,
                        sqlx::Error::Io(_) | sqlx::Error::Tls(_) | sqlx::Error::Protocol(_)
                    ) {
                        *guard = None;
                    }
                    Err(self.err(kind, what, &e))
                }
            }
        })
    }

    fn block<T: Send, F: Future<Output = T>>(&self, make: impl FnOnce() -> F + Send) -> T {
        let Some(rt) = &self.rt else {
            unreachable!("the runtime is taken only in drop")
        };
        if tokio::runtime::Handle::try_current().is_ok() {
            // Called from inside another runtime: block a helper thread, not it.
            std::thread::scope(|s| match s.spawn(|| rt.block_on(make())).join() {
                Ok(v) => v,
                Err(panic) => std::panic::resume_unwind(panic),
            })
        } else {
            rt.block_on(make())
        }
    }

    /// Append one decision. Secrets are removed from the documents first; the record
    /// is chained to the current head under the store's write lock.
    pub fn append(&self, entry: NewEntry) -> Result<Record> {
        self.append_signed(entry, None)
    }

    /// [`Ledger::append`], and with a key, the record's hash signed by it (see
    /// [`attest`]). A ledger whose table predates signatures and that this connection
    /// may not alter refuses a signed append (the error says how to add the column).
    pub fn append_signed(
        &self,
        entry: NewEntry,
        key: Option<&evident_sign::Key>,
    ) -> Result<Record> {
        let mut records = self.append_batch(vec![(entry, key.cloned())])?;
        records.pop().ok_or_else(|| Error {
            kind: ErrorKind::Store,
            location: self.shown.clone(),
            message: "the append returned no record".into(),
        })
    }

    /// Append several decisions in order in one transaction (group commit: one
    /// commit for all of them), each signed with its key when given. All or none are
    /// recorded. [`Appender`] batches concurrent callers' appends this way.
    pub fn append_batch(
        &self,
        entries: Vec<(NewEntry, Option<evident_sign::Key>)>,
    ) -> Result<Vec<Record>> {
        let Some(first) = entries.first() else {
            return Ok(Vec::new());
        };
        let what = if entries.len() == 1 {
            format!(
                "cannot append a {} record",
                redact::redact_text(&first.0.kind)
            )
        } else {
            format!("cannot append {} records", entries.len())
        };
        for (e, _) in &entries {
            self.check_depth(e)?;
        }
        let prepared: Vec<(Prepared, Option<evident_sign::Key>)> = entries
            .into_iter()
            .map(|(e, k)| (Prepared::new(e), k))
            .collect();
        let pause = self.pause_before_commit;
        self.with_conn(&what, move |c| {
            Box::pin(async move { c.append(prepared, pause).await })
        })
    }

    /// Refuses an entry whose record would nest deeper than every reader reads
    /// ([`depth::MAX_DEPTH`]).
    pub(crate) fn check_depth(&self, e: &NewEntry) -> Result<()> {
        refuse_too_deep(e, &self.shown)
    }

    /// One record by id.
    pub fn get(&self, id: u64) -> Result<Record> {
        let id_i = i64::try_from(id).unwrap_or(i64::MAX);
        let row = self.with_conn("cannot read", move |c| Box::pin(c.get(id_i)))?;
        match row {
            Some(row) => self.to_record(&row),
            None => Err(Error {
                kind: ErrorKind::NotFound,
                location: self.shown.clone(),
                message: format!("no record {id}"),
            }),
        }
    }

    /// One record by id (`42`, `#42`) or by a hash prefix of at least 6 hex digits.
    pub fn find(&self, key: &str) -> Result<Record> {
        let key = key.trim();
        let digits = key.strip_prefix('#').unwrap_or(key);
        if let Ok(id) = digits.parse::<u64>()
            && (digits.len() < 6 || key.starts_with('#'))
        {
            return self.get(id);
        }
        let lower = key.to_ascii_lowercase();
        if lower.len() >= 6 && lower.len() <= 64 && lower.chars().all(|c| c.is_ascii_hexdigit()) {
            let rows = {
                let lower = lower.clone();
                self.with_conn("cannot read", move |c| {
                    Box::pin(async move { c.by_hash_prefix(&lower).await })
                })?
            };
            return match rows.as_slice() {
                [one] => self.to_record(one),
                [] => {
                    if let Ok(id) = digits.parse::<u64>() {
                        return self.get(id);
                    }
                    Err(Error {
                        kind: ErrorKind::NotFound,
                        location: self.shown.clone(),
                        message: format!("no record with hash {lower}…"),
                    })
                }
                _ => Err(Error {
                    kind: ErrorKind::NotFound,
                    location: self.shown.clone(),
                    message: format!(
                        "hash prefix {lower} matches several records; give more digits"
                    ),
                }),
            };
        }
        Err(Error {
            kind: ErrorKind::NotFound,
            location: self.shown.clone(),
            message: format!("{key:?} is neither a record id nor a hash prefix (6+ hex digits)"),
        })
    }

    /// Records matching a filter, in id order (or newest first).
    pub fn list(&self, filter: &Filter) -> Result<Vec<Record>> {
        let filter = filter.clone();
        let rows = self.with_conn("cannot list", move |c| {
            Box::pin(async move { c.list(&filter).await })
        })?;
        rows.iter().map(|r| self.to_record(r)).collect()
    }

    /// Records matching a filter without their documents (`claim`, `contract`), which
    /// the store leaves where they are: for long listings.
    pub fn list_summaries(&self, filter: &Filter) -> Result<Vec<Summary>> {
        let filter = filter.clone();
        self.with_conn("cannot list", move |c| {
            Box::pin(async move { c.list_summaries(&filter).await })
        })
    }

    /// The last record's id and hash.
    pub fn head(&self) -> Result<Option<(u64, String)>> {
        let filter = Filter {
            limit: Some(1),
            newest_first: true,
            ..Filter::default()
        };
        let rows = self.with_conn("cannot read", move |c| {
            Box::pin(async move { c.list(&filter).await })
        })?;
        Ok(rows.first().map(|r| (r.id as u64, r.hash.clone())))
    }

    fn to_record(&self, row: &Row) -> Result<Record> {
        Record::from_body(&row.body, &row.hash, row.signature.as_deref()).map_err(|e| Error {
            kind: ErrorKind::Corrupt,
            location: self.shown.clone(),
            message: format!("record {}: {}", row.id, evident_format::chain(&e)),
        })
    }

    /// Recompute every link of the chain. Stops at the first broken record.
    pub fn verify(&self) -> Result<VerifyReport> {
        self.verify_with(false)
    }

    /// [`Ledger::verify`]; `deep` also checks that every body is in canonical form.
    pub fn verify_with(&self, deep: bool) -> Result<VerifyReport> {
        self.verify_opts(VerifyOptions {
            deep,
            ..VerifyOptions::default()
        })
    }

    /// [`Ledger::verify`] with every check of [`VerifyOptions`]: canonical form, record
    /// signatures by a trust list, heads that signed checkpoints name.
    pub fn verify_opts(&self, options: VerifyOptions) -> Result<VerifyReport> {
        // Fetching and checking overlap: this thread reads batches from the store while
        // a helper thread hashes and links the previous batch.
        let (tx, rx) = std::sync::mpsc::sync_channel::<Vec<record::PackedRow>>(2);
        std::thread::scope(|s| {
            let checker = s.spawn(move || {
                let mut checker = ChainChecker::new(options);
                let mut broken = None;
                'batches: for batch in rx {
                    for packed in batch {
                        if let Err(b) = packed.unpack().and_then(|row| checker.check(&row)) {
                            broken = Some(b);
                            break 'batches;
                        }
                    }
                }
                (checker, broken)
            });
            let mut after: i64 = 0;
            let mut failed = None;
            loop {
                match self.with_conn("cannot read", move |c| {
                    Box::pin(c.packed_rows_after(after, 2000))
                }) {
                    Ok(rows) => {
                        let Some(last) = rows.last() else { break };
                        after = last.id;
                        if tx.send(rows).is_err() {
                            break; // the checker stopped at a broken record
                        }
                    }
                    Err(e) => {
                        failed = Some(e);
                        break;
                    }
                }
            }
            drop(tx);
            let (checker, broken) = match checker.join() {
                Ok(r) => r,
                Err(panic) => std::panic::resume_unwind(panic),
            };
            if let (Some(e), None) = (failed, &broken) {
                return Err(e);
            }
            Ok(VerifyReport {
                records: checker.checked,
                head: checker.head().map(|(i, h)| (i, h.to_string())),
                // Only a chain read to its end can be missing its tail.
                broken: broken.or_else(|| checker.finish()),
            })
        })
    }

    /// Write every record as one JSON line (canonical JSON of the record with its
    /// `hash`), in id order. Returns how many were written.
    pub fn export(&self, out: &mut dyn std::io::Write) -> Result<u64> {
        let mut after: i64 = 0;
        let mut n = 0u64;
        loop {
            let rows =
                self.with_conn("cannot read", move |c| Box::pin(c.rows_after(after, 5000)))?;
            let Some(last) = rows.last() else { break };
            after = last.id;
            for row in &rows {
                let rec = self.to_record(row)?;
                let line = canonical_json(&rec.to_json());
                writeln!(out, "{line}").map_err(|e| Error {
                    kind: ErrorKind::Store,
                    location: self.shown.clone(),
                    message: format!("cannot write the export: {e}"),
                })?;
                n += 1;
            }
        }
        Ok(n)
    }

    /// Delete the PostgreSQL schema and everything in it (tests and benches clean up
    /// with this). Does nothing for SQLite.
    #[doc(hidden)]
    pub fn destroy(&self) -> Result<()> {
        self.with_conn("cannot drop", |c| Box::pin(c.drop_schema()))
    }
}

impl Drop for Ledger {
    fn drop(&mut self) {
        let Some(rt) = self.rt.take() else { return };
        if tokio::runtime::Handle::try_current().is_err() {
            if let Some(conn) = self.conn.get_mut().take() {
                rt.block_on(conn.close());
            }
        } else {
            // Dropped inside another runtime (a server's state): a runtime cannot be
            // shut down there by blocking, so its threads are let go in the background;
            // the connection closes as it is dropped.
            drop(self.conn.get_mut().take());
            rt.shutdown_background();
        }
    }
}

/// Check an exported JSONL ledger offline (what `evident ledger export` wrote).
pub fn verify_export(reader: impl std::io::BufRead) -> std::io::Result<VerifyReport> {
    verify_export_opts(
        reader,
        VerifyOptions {
            deep: true,
            ..VerifyOptions::default()
        },
    )
}

/// [`verify_export`] with the checks of [`VerifyOptions`] (an export is always checked
/// deep: its lines are re-canonicalized anyway).
pub fn verify_export_opts(
    reader: impl std::io::BufRead,
    options: VerifyOptions,
) -> std::io::Result<VerifyReport> {
    let mut checker = ChainChecker::new(VerifyOptions {
        deep: true,
        ..options
    });
    for (n, line) in reader.lines().enumerate() {
        let line = line?;
        if line.trim().is_empty() {
            continue;
        }
        let broken = |reason: String| VerifyReport {
            records: 0,
            head: None,
            broken: Some(Break {
                id: n as u64 + 1,
                reason,
            }),
        };
        let mut v: serde_json::Value = match depth::from_str(&line) {
            Ok(v) => v,
            Err(e) => {
                let mut r = broken(format!("line {}: not JSON: {e}", n + 1));
                r.records = checker.checked;
                return Ok(r);
            }
        };
        let fields = v.as_object_mut().map(|m| {
            let hash = m.shift_remove("hash");
            let signature = m.shift_remove("signature");
            (hash, signature, std::mem::take(m))
        });
        let Some((Some(serde_json::Value::String(hash)), signature, body)) = fields else {
            let mut r = broken(format!("line {}: not a record with a `hash`", n + 1));
            r.records = checker.checked;
            return Ok(r);
        };
        let body_v = serde_json::Value::Object(body);
        let s = |k: &str| {
            body_v
                .get(k)
                .and_then(|x| x.as_str())
                .unwrap_or("")
                .to_string()
        };
        let row = Row {
            id: body_v.get("id").and_then(|x| x.as_i64()).unwrap_or(-1),
            time: s("time"),
            kind: s("kind"),
            task_id: body_v
                .get("task_id")
                .and_then(|x| x.as_str())
                .map(str::to_string),
            state: s("state"),
            prev_hash: s("prev_hash"),
            hash,
            body: canonical_json(&body_v),
            signature: signature.as_ref().map(canonical_json),
        };
        if let Err(b) = checker.check(&row) {
            return Ok(VerifyReport {
                records: checker.checked,
                head: checker.head().map(|(i, h)| (i, h.to_string())),
                broken: Some(b),
            });
        }
    }
    Ok(VerifyReport {
        records: checker.checked,
        head: checker.head().map(|(i, h)| (i, h.to_string())),
        broken: checker.finish(),
    })
}

/// Parse a time bound for `log --since/--until`: RFC 3339 (`2026-08-27T18:04:09Z`), a
/// date (`2026-08-27`, midnight UTC), or an age (`90s`, `30m`, `2h`, `7d`, `1w` ago).
/// Returns it in the stored form so it compares with record times as text.
pub fn parse_time_bound(text: &str, now: time::OffsetDateTime) -> Result<String, BadTimeBound> {
    use time::format_description::well_known::Rfc3339;
    let t = text.trim();
    if let Ok(dt) = time::OffsetDateTime::parse(t, &Rfc3339) {
        return Ok(format_time(dt));
    }
    let date_fmt = time::macros::format_description!("[year]-[month]-[day]");
    if let Ok(d) = time::Date::parse(t, &date_fmt) {
        return Ok(format_time(d.midnight().assume_utc()));
    }
    if let Some(unit) = t.chars().last() {
        let secs = match unit {
            's' => Some(1),
            'm' => Some(60),
            'h' => Some(3600),
            'd' => Some(86_400),
            'w' => Some(604_800),
            _ => None,
        };
        if let (Some(mult), Ok(n)) = (secs, t[..t.len() - unit.len_utf8()].parse::<i64>())
            && n >= 0
            && let Some(at) = n
                .checked_mul(mult)
                .and_then(|secs| now.checked_sub(time::Duration::seconds(secs)))
        {
            return Ok(format_time(at));
        }
    }
    Err(BadTimeBound(text.to_string()))
}

/// A `--since`/`--until` text that is none of the forms [`parse_time_bound`] reads.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error(
    "{0:?} is not a time: use RFC 3339 (2026-08-27T18:04:09Z), a date (2026-08-27) or an age (30m, 2h, 7d)"
)]
pub struct BadTimeBound(pub String);
