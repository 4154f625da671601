//! The two stores: a SQLite file and a PostgreSQL schema. Both hold one table,
//! `records(id, time, kind, task_id, state, prev_hash, hash, body)`, where `body` is
//! the record's canonical JSON and `hash` its SHA-256. `id` is the primary key and
//! `prev_hash` and `hash` are unique, so even a writer that bypassed the lock could not
//! fork the chain.

use std::time::Duration;

use sqlx::postgres::{PgConnectOptions, PgConnection};
use sqlx::sqlite::{SqliteConnectOptions, SqliteConnection, SqliteJournalMode, SqliteSynchronous};
use sqlx::{AssertSqlSafe, Connection as _, Row as _};
use time::OffsetDateTime;

use crate::record::{PackedRow, Prepared, Record, Row, Summary};
use evident_sign::Key;

/// Which records to list.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Filter {
    /// Only records with this verdict state (`refuted`, …).
    pub state: Option<String>,
    /// Only records of this task (the claim's `task.id`).
    pub task_id: Option<String>,
    /// Only records made by this command (`verify`, `gate`, …).
    pub kind: Option<String>,
    /// Inclusive lower bound on `time`, in the stored form (see [`crate::format_time`]).
    pub since: Option<String>,
    /// Exclusive upper bound on `time`, in the stored form.
    pub until: Option<String>,
    /// Only records with a smaller id (paging newest first: the last id of a page).
    pub before_id: Option<u64>,
    /// Only records with a larger id (paging oldest first).
    pub after_id: Option<u64>,
    /// At most this many records (the newest when `newest_first`).
    pub limit: Option<u64>,
    /// Descending id order, as a log is read; ascending (chain order) otherwise.
    pub newest_first: bool,
}

const SQLITE_SCHEMA: &[&str] = &[
    "CREATE TABLE IF NOT EXISTS records (
        id INTEGER PRIMARY KEY,
        time TEXT NOT NULL,
        kind TEXT NOT NULL,
        task_id TEXT,
        state TEXT NOT NULL,
        prev_hash TEXT NOT NULL UNIQUE,
        hash TEXT NOT NULL UNIQUE,
        body TEXT NOT NULL,
        signature TEXT
    )",
    "CREATE INDEX IF NOT EXISTS records_time ON records(time)",
    "CREATE INDEX IF NOT EXISTS records_task ON records(task_id)",
    "CREATE INDEX IF NOT EXISTS records_state ON records(state)",
];

/// `sig`: the table has the `signature` column (a ledger created by an older evident
/// may not, until a writer allowed to alter it adds it).
pub(crate) enum Conn {
    Sqlite {
        conn: Box<SqliteConnection>,
        sig: bool,
    },
    Postgres {
        conn: Box<PgConnection>,
        schema: String,
        lock_key: i64,
        sig: bool,
    },
}

pub(crate) async fn open_sqlite(path: &std::path::Path, create: bool) -> Result<Conn, sqlx::Error> {
    let opts = SqliteConnectOptions::new()
        .filename(path)
        .create_if_missing(create)
        .journal_mode(SqliteJournalMode::Wal)
        // In WAL mode, NORMAL makes a commit durable against a crash of the process
        // (the WAL is written before COMMIT returns); only an OS crash or power loss can
        // drop the last commits, and never leaves a broken chain.
        .synchronous(SqliteSynchronous::Normal)
        .busy_timeout(Duration::from_secs(60));
    // Several processes opening a brand-new file at once race to switch it to WAL;
    // retry while another one holds it.
    let mut attempt = 0;
    loop {
        let result = async {
            let mut conn = SqliteConnection::connect_with(&opts).await?;
            if create {
                let mut tx = conn.begin_with("BEGIN IMMEDIATE").await?;
                for stmt in SQLITE_SCHEMA {
                    sqlx::query(*stmt).execute(&mut *tx).await?;
                }
                // A ledger from before record signatures gains the column.
                if !sqlite_has_signature(&mut tx).await? {
                    sqlx::query("ALTER TABLE records ADD COLUMN signature TEXT")
                        .execute(&mut *tx)
                        .await?;
                }
                tx.commit().await?;
            }
            let sig = sqlite_has_signature(&mut conn).await?;
            Ok::<_, sqlx::Error>((conn, sig))
        }
        .await;
        match result {
            Ok((conn, sig)) => {
                return Ok(Conn::Sqlite {
                    conn: Box::new(conn),
                    sig,
                });
            }
            Err(e) if attempt < 50 && is_busy(&e) => {
                attempt += 1;
                tokio::time::sleep(Duration::from_millis(20 * attempt)).await;
            }
            Err(e) => return Err(e),
        }
    }
}

async fn sqlite_has_signature(conn: &mut SqliteConnection) -> Result<bool, sqlx::Error> {
    let n: i64 = sqlx::query_scalar(
        "SELECT count(*) FROM pragma_table_info('records') WHERE name = 'signature'",
    )
    .fetch_one(conn)
    .await?;
    Ok(n > 0)
}

async fn pg_has_signature(conn: &mut PgConnection, schema: &str) -> Result<bool, sqlx::Error> {
    let n: i64 = sqlx::query_scalar(
        "SELECT count(*) FROM information_schema.columns \
         WHERE table_schema = $1 AND table_name = 'records' AND column_name = 'signature'",
    )
    .bind(schema)
    .fetch_one(conn)
    .await?;
    Ok(n > 0)
}

/// The error of a signed append to a table without the `signature` column.
fn no_signature_column(table: &str) -> sqlx::Error {
    sqlx::Error::Protocol(format!(
        "the ledger table has no `signature` column (an older evident created it) and this connection cannot add it; as the table's owner run: ALTER TABLE {table} ADD COLUMN signature TEXT"
    ))
}

fn is_busy(e: &sqlx::Error) -> bool {
    match e {
        sqlx::Error::Database(d) => {
            let msg = d.message().to_ascii_lowercase();
            msg.contains("locked") || msg.contains("busy")
        }
        _ => false,
    }
}

/// Rows in one SQLite INSERT of a batch (9 parameters each, far under SQLite's limit).
const ROWS_PER_INSERT: usize = 64;

/// How long to wait for a PostgreSQL server to accept a connection.
const CONNECT_TIMEOUT: Duration = Duration::from_secs(20);

pub(crate) async fn open_postgres(
    opts: &PgConnectOptions,
    schema: &str,
    create: bool,
) -> Result<Conn, sqlx::Error> {
    let mut conn =
        match tokio::time::timeout(CONNECT_TIMEOUT, PgConnection::connect_with(opts)).await {
            Ok(c) => c?,
            Err(_) => {
                return Err(sqlx::Error::PoolTimedOut);
            }
        };
    // Every name here is qualified; the path is pinned anyway, never the server's
    // default `"$user", public` (a schema named after this role would come first).
    sqlx::query(AssertSqlSafe(format!(
        "SET search_path = pg_catalog, \"{schema}\""
    )))
    .execute(&mut conn)
    .await?;
    let lock_key = advisory_key(schema);
    let exists: Option<String> = sqlx::query_scalar(AssertSqlSafe(format!(
        "SELECT to_regclass('\"{schema}\".records')::text"
    )))
    .fetch_one(&mut conn)
    .await?;
    // An existing ledger needs no DDL, so a role that may only read and insert can
    // use a ledger someone else created.
    if exists.is_some() || !create {
        if exists.is_none() {
            let _ = conn.close().await;
            return Err(sqlx::Error::RowNotFound);
        }
        let mut sig = pg_has_signature(&mut conn, schema).await?;
        if !sig && create {
            // A ledger from before record signatures: add the column if this role may
            // (its owner); an append-only role may not, and signed appends then say so.
            let added = async {
                let mut tx = conn.begin().await?;
                sqlx::query("SELECT pg_advisory_xact_lock($1)")
                    .bind(lock_key)
                    .execute(&mut *tx)
                    .await?;
                sqlx::query(AssertSqlSafe(format!(
                    "ALTER TABLE \"{schema}\".records ADD COLUMN IF NOT EXISTS signature TEXT"
                )))
                .execute(&mut *tx)
                .await?;
                tx.commit().await
            }
            .await;
            sig = added.is_ok();
        }
        return Ok(Conn::Postgres {
            conn: Box::new(conn),
            schema: schema.to_string(),
            lock_key,
            sig,
        });
    }
    let mut tx = conn.begin().await?;
    sqlx::query("SELECT pg_advisory_xact_lock($1)")
        .bind(lock_key)
        .execute(&mut *tx)
        .await?;
    // Quiet the NOTICEs that IF NOT EXISTS raises.
    sqlx::query("SET LOCAL client_min_messages = warning")
        .execute(&mut *tx)
        .await?;
    let stmts = [
        format!("CREATE SCHEMA IF NOT EXISTS \"{schema}\""),
        format!(
            "CREATE TABLE IF NOT EXISTS \"{schema}\".records (
                id BIGINT PRIMARY KEY,
                time TEXT NOT NULL,
                kind TEXT NOT NULL,
                task_id TEXT,
                state TEXT NOT NULL,
                prev_hash TEXT NOT NULL UNIQUE,
                hash TEXT NOT NULL UNIQUE,
                body TEXT NOT NULL,
                signature TEXT
            )"
        ),
        format!("CREATE INDEX IF NOT EXISTS records_time ON \"{schema}\".records(time)"),
        format!("CREATE INDEX IF NOT EXISTS records_task ON \"{schema}\".records(task_id)"),
        format!("CREATE INDEX IF NOT EXISTS records_state ON \"{schema}\".records(state)"),
    ];
    for stmt in &stmts {
        sqlx::query(AssertSqlSafe(stmt.as_str()))
            .execute(&mut *tx)
            .await?;
    }
    tx.commit().await?;
    // The table may predate this evident (CREATE TABLE IF NOT EXISTS left it as it was).
    let sig = pg_has_signature(&mut conn, schema).await?;
    Ok(Conn::Postgres {
        conn: Box::new(conn),
        schema: schema.to_string(),
        lock_key,
        sig,
    })
}

/// One batch of SQLite rows as a single value: for each row
/// `id,len(hash),len(cols),len(body),` then the three texts (lengths in bytes).
/// `None` when the batch cannot be read this way (then the caller reads plain rows).
async fn sqlite_batch(
    conn: &mut SqliteConnection,
    sig: &str,
    after: i64,
    limit: i64,
) -> Result<Option<Vec<PackedRow>>, sqlx::Error> {
    let result: Result<(i64, Option<String>), sqlx::Error> = sqlx::query_as(AssertSqlSafe(format!(
        "SELECT count(*), group_concat(id || ',' || length(CAST(hash AS BLOB)) || ',' \
         || length(CAST(cols AS BLOB)) || ',' || length(CAST(body AS BLOB)) || ',' \
         || hash || cols || body, '') \
         FROM (SELECT id, hash, json_array(time, kind, task_id, state, prev_hash, {sig}) AS cols, body \
               FROM records WHERE id > ?1 ORDER BY id LIMIT ?2)"
    )))
    .bind(after)
    .bind(limit)
    .fetch_one(conn)
    .await;
    let (count, text) = match result {
        Ok(v) => v,
        // "string or blob too big" (a batch of very large records), or a value that is
        // not text: read plain rows, which say which record is at fault.
        Err(
            sqlx::Error::Database(_) | sqlx::Error::ColumnDecode { .. } | sqlx::Error::Decode(_),
        ) => return Ok(None),
        Err(e) => return Err(e),
    };
    Ok(finish_batch(count, text))
}

fn finish_batch(count: i64, text: Option<String>) -> Option<Vec<PackedRow>> {
    let text = text.unwrap_or_default();
    let mut rows = parse_batch(&text)?;
    if rows.len() as i64 != count {
        return None;
    }
    // The subquery yields id order; an aggregate does not promise to keep it.
    if !rows.windows(2).all(|w| w[0].id < w[1].id) {
        rows.sort_by_key(|r| r.id);
    }
    Some(rows)
}

fn parse_batch(text: &str) -> Option<Vec<PackedRow>> {
    let mut rows = Vec::new();
    let mut rest = text;
    while !rest.is_empty() {
        let mut header = [0i64; 4];
        for h in &mut header {
            let comma = rest.find(',')?;
            *h = rest[..comma].parse().ok()?;
            rest = &rest[comma + 1..];
        }
        let [id, hl, cl, bl] = header;
        let (hl, cl, bl) = (
            usize::try_from(hl).ok()?,
            usize::try_from(cl).ok()?,
            usize::try_from(bl).ok()?,
        );
        let hash = rest.get(..hl)?;
        let cols = rest.get(hl..hl + cl)?;
        let body = rest.get(hl + cl..hl + cl + bl)?;
        rows.push(PackedRow {
            id,
            hash: hash.to_string(),
            cols: cols.to_string(),
            body: body.to_string(),
        });
        rest = &rest[hl + cl + bl..];
    }
    Some(rows)
}

/// The crash tests' hook: stop between INSERT and COMMIT, saying so on stderr.
async fn pause_before_commit(id: u64, pause: Option<Duration>) {
    if let Some(p) = pause {
        eprintln!("evident-ledger test hook: record {id} inserted, pausing before commit");
        tokio::time::sleep(p).await;
    }
}

/// The advisory lock that serializes appends to one PostgreSQL ledger.
fn advisory_key(schema: &str) -> i64 {
    use sha2::Digest as _;
    let d = sha2::Sha256::digest(format!("evident-ledger:{schema}").as_bytes());
    let mut b = [0u8; 8];
    b.copy_from_slice(&d[..8]);
    i64::from_be_bytes(b)
}

fn row_from(r: &impl RowLike) -> Result<Row, sqlx::Error> {
    r.to_row()
}

trait RowLike {
    fn to_row(&self) -> Result<Row, sqlx::Error>;
}

macro_rules! impl_rowlike {
    ($t:ty) => {
        impl RowLike for $t {
            fn to_row(&self) -> Result<Row, sqlx::Error> {
                Ok(Row {
                    id: self.try_get("id")?,
                    time: self.try_get("time")?,
                    kind: self.try_get("kind")?,
                    task_id: self.try_get("task_id")?,
                    state: self.try_get("state")?,
                    prev_hash: self.try_get("prev_hash")?,
                    hash: self.try_get("hash")?,
                    body: self.try_get("body")?,
                    signature: self.try_get("signature")?,
                })
            }
        }
    };
}
impl_rowlike!(sqlx::sqlite::SqliteRow);
impl_rowlike!(sqlx::postgres::PgRow);

enum Selected {
    Sqlite(Vec<sqlx::sqlite::SqliteRow>),
    Postgres(Vec<sqlx::postgres::PgRow>),
}

impl Conn {
    /// The columns of a [`Row`], `signature` as NULL where the table lacks it.
    fn cols(&self) -> &'static str {
        if self.has_signature() {
            "id, time, kind, task_id, state, prev_hash, hash, body, signature"
        } else {
            "id, time, kind, task_id, state, prev_hash, hash, body, NULL AS signature"
        }
    }

    fn has_signature(&self) -> bool {
        match self {
            Conn::Sqlite { sig, .. } | Conn::Postgres { sig, .. } => *sig,
        }
    }

    /// The signature column as an SQL expression (NULL where the table lacks it).
    fn sig_expr(&self) -> &'static str {
        if self.has_signature() {
            "signature"
        } else {
            "NULL"
        }
    }

    /// Append `entries` in order, each signed with its key when given, in one
    /// transaction: one commit (one WAL write, one round trip) for the whole batch,
    /// which is how a busy server groups the appends of concurrent requests. `pause`:
    /// the crash tests' hook (see [`crate::TEST_PAUSE_ENV`]).
    pub(crate) async fn append(
        &mut self,
        entries: Vec<(Prepared, Option<Key>)>,
        pause: Option<Duration>,
    ) -> Result<Vec<Record>, sqlx::Error> {
        let sig = self.has_signature();
        let signed = entries.iter().any(|(_, k)| k.is_some());
        let mut out = Vec::with_capacity(entries.len());
        match self {
            Conn::Sqlite { conn, .. } => {
                if signed && !sig {
                    return Err(no_signature_column("records"));
                }
                // IMMEDIATE takes the write lock before reading the head, so two
                // processes can never both extend the same record.
                let mut tx = conn.begin_with("BEGIN IMMEDIATE").await?;
                let mut head: Option<(i64, String)> =
                    sqlx::query_as("SELECT id, hash FROM records ORDER BY id DESC LIMIT 1")
                        .fetch_optional(&mut *tx)
                        .await?;
                // Chained first, then inserted many rows to a statement: each statement
                // is a round trip to sqlx's SQLite thread, so a batch costs a few of
                // them, not one per record.
                let mut rows = Vec::with_capacity(entries.len());
                for (entry, key) in entries {
                    let (record, body, signature) = entry.chain(
                        head.as_ref().map(|(id, h)| (*id as u64, h.as_str())),
                        OffsetDateTime::now_utc(),
                        key.as_ref(),
                    );
                    head = Some((record.id as i64, record.hash.clone()));
                    rows.push((record, body, signature));
                }
                let (cols, marks) = if sig {
                    (
                        "id, time, kind, task_id, state, prev_hash, hash, body, signature",
                        "(?, ?, ?, ?, ?, ?, ?, ?, ?)",
                    )
                } else {
                    (
                        "id, time, kind, task_id, state, prev_hash, hash, body",
                        "(?, ?, ?, ?, ?, ?, ?, ?)",
                    )
                };
                for chunk in rows.chunks_mut(ROWS_PER_INSERT) {
                    let values = vec![marks; chunk.len()].join(", ");
                    let sql = format!("INSERT INTO records ({cols}) VALUES {values}");
                    let mut q = sqlx::query(AssertSqlSafe(sql));
                    for (record, body, signature) in chunk {
                        q = q
                            .bind(record.id as i64)
                            .bind(&record.time)
                            .bind(&record.kind)
                            .bind(&record.task_id)
                            .bind(&record.state)
                            .bind(&record.prev_hash)
                            .bind(&record.hash)
                            // Moved, not copied: a large claim's body is tens of MB.
                            .bind(std::mem::take(body));
                        if sig {
                            q = q.bind(signature.take());
                        }
                    }
                    q.execute(&mut *tx).await?;
                }
                out.extend(rows.into_iter().map(|(record, _, _)| record));
                if let Some(last) = out.last() {
                    pause_before_commit(last.id, pause).await;
                }
                tx.commit().await?;
                Ok(out)
            }
            Conn::Postgres {
                conn,
                schema,
                lock_key,
                ..
            } => {
                if signed && !sig {
                    return Err(no_signature_column(&format!("\"{schema}\".records")));
                }
                let mut tx = conn.begin().await?;
                // Held until COMMIT/ROLLBACK: appends from every machine queue here.
                sqlx::query("SELECT pg_advisory_xact_lock($1)")
                    .bind(*lock_key)
                    .execute(&mut *tx)
                    .await?;
                let mut head: Option<(i64, String)> = sqlx::query_as(AssertSqlSafe(format!(
                    "SELECT id, hash FROM \"{schema}\".records ORDER BY id DESC LIMIT 1"
                )))
                .fetch_optional(&mut *tx)
                .await?;
                let sql = if sig {
                    format!(
                        "INSERT INTO \"{schema}\".records (id, time, kind, task_id, state, prev_hash, hash, body, signature)
                         VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9)"
                    )
                } else {
                    format!(
                        "INSERT INTO \"{schema}\".records (id, time, kind, task_id, state, prev_hash, hash, body)
                         VALUES ($1, $2, $3, $4, $5, $6, $7, $8)"
                    )
                };
                for (entry, key) in entries {
                    let (record, body, signature) = entry.chain(
                        head.as_ref().map(|(id, h)| (*id as u64, h.as_str())),
                        OffsetDateTime::now_utc(),
                        key.as_ref(),
                    );
                    let mut q = sqlx::query(AssertSqlSafe(sql.as_str()))
                        .bind(record.id as i64)
                        .bind(&record.time)
                        .bind(&record.kind)
                        .bind(&record.task_id)
                        .bind(&record.state)
                        .bind(&record.prev_hash)
                        .bind(&record.hash)
                        .bind(body);
                    if sig {
                        q = q.bind(signature);
                    }
                    q.execute(&mut *tx).await?;
                    head = Some((record.id as i64, record.hash.clone()));
                    out.push(record);
                }
                if let Some(last) = out.last() {
                    pause_before_commit(last.id, pause).await;
                }
                tx.commit().await?;
                Ok(out)
            }
        }
    }

    /// Like [`Conn::rows_after`], for `verify`: the five indexed columns come packed in
    /// one JSON array (one value to decode per row instead of five).
    pub(crate) async fn packed_rows_after(
        &mut self,
        after: i64,
        limit: i64,
    ) -> Result<Vec<PackedRow>, sqlx::Error> {
        // sqlx hands SQLite rows from its worker thread one at a time (a thread
        // wake-up per row); one aggregated row per batch avoids that. Fall back to plain rows if the batch cannot be read that way.
        // (Measured on PostgreSQL too: there the server-side aggregate was slower than
        // plain rows, 55-72k against 94-100k records/s, so it reads plain rows.)
        let sig = self.sig_expr();
        let batch = match self {
            Conn::Sqlite { conn, .. } => sqlite_batch(conn, sig, after, limit).await?,
            Conn::Postgres { .. } => None,
        };
        if let Some(rows) = batch {
            return Ok(rows);
        }
        let rows = match self {
            Conn::Sqlite { conn, .. } => {
                // The careful path: every value read as bytes, so a value that is not
                // text (an edit) becomes a broken record, not an error.
                sqlx::query(AssertSqlSafe(format!(
                    "SELECT id, CAST(hash AS BLOB), CAST(time AS BLOB), CAST(kind AS BLOB), \
                     CAST(task_id AS BLOB), CAST(state AS BLOB), CAST(prev_hash AS BLOB), \
                     CAST(body AS BLOB), CAST({sig} AS BLOB) FROM records WHERE id > ?1 ORDER BY id LIMIT ?2"
                )))
                .bind(after)
                .bind(limit)
                .fetch_all(&mut **conn)
                .await?
                .iter()
                .map(|r| {
                    let text = |i: usize| -> Result<Option<String>, sqlx::Error> {
                        Ok(r.try_get::<Option<Vec<u8>>, _>(i)?
                            .map(|b| String::from_utf8_lossy(&b).into_owned()))
                    };
                    let cols = serde_json::json!([
                        text(2)?,
                        text(3)?,
                        text(4)?,
                        text(5)?,
                        text(6)?,
                        text(8)?
                    ]);
                    Ok(PackedRow {
                        id: r.try_get(0)?,
                        hash: text(1)?.unwrap_or_default(),
                        cols: cols.to_string(),
                        body: text(7)?.unwrap_or_default(),
                    })
                })
                .collect::<Result<Vec<_>, sqlx::Error>>()?
            }
            Conn::Postgres { conn, schema, .. } => sqlx::query(AssertSqlSafe(format!(
                "SELECT id, hash, json_build_array(time, kind, task_id, state, prev_hash, {sig})::text, body \
                 FROM \"{schema}\".records WHERE id > $1 ORDER BY id LIMIT $2"
            )))
            .bind(after)
            .bind(limit)
            .fetch_all(&mut **conn)
            .await?
            .iter()
            .map(|r| {
                Ok(PackedRow {
                    id: r.try_get(0)?,
                    hash: r.try_get(1)?,
                    cols: r.try_get(2)?,
                    body: r.try_get(3)?,
                })
            })
            .collect::<Result<Vec<_>, sqlx::Error>>()?,
        };
        Ok(rows)
    }

    /// Rows with `id > after`, in id order, at most `limit`.
    pub(crate) async fn rows_after(
        &mut self,
        after: i64,
        limit: i64,
    ) -> Result<Vec<Row>, sqlx::Error> {
        let cols = self.cols();
        match self {
            Conn::Sqlite { conn, .. } => {
                let rows = sqlx::query(AssertSqlSafe(format!(
                    "SELECT {cols} FROM records WHERE id > ?1 ORDER BY id LIMIT ?2"
                )))
                .bind(after)
                .bind(limit)
                .fetch_all(&mut **conn)
                .await?;
                rows.iter().map(row_from).collect()
            }
            Conn::Postgres { conn, schema, .. } => {
                let rows = sqlx::query(AssertSqlSafe(format!(
                    "SELECT {cols} FROM \"{schema}\".records WHERE id > $1 ORDER BY id LIMIT $2"
                )))
                .bind(after)
                .bind(limit)
                .fetch_all(&mut **conn)
                .await?;
                rows.iter().map(row_from).collect()
            }
        }
    }

    pub(crate) async fn get(&mut self, id: i64) -> Result<Option<Row>, sqlx::Error> {
        let cols = self.cols();
        match self {
            Conn::Sqlite { conn, .. } => {
                let r = sqlx::query(AssertSqlSafe(format!(
                    "SELECT {cols} FROM records WHERE id = ?1"
                )))
                .bind(id)
                .fetch_optional(&mut **conn)
                .await?;
                r.as_ref().map(row_from).transpose()
            }
            Conn::Postgres { conn, schema, .. } => {
                let r = sqlx::query(AssertSqlSafe(format!(
                    "SELECT {cols} FROM \"{schema}\".records WHERE id = $1"
                )))
                .bind(id)
                .fetch_optional(&mut **conn)
                .await?;
                r.as_ref().map(row_from).transpose()
            }
        }
    }

    /// Rows whose hash starts with `prefix` (at most 2, to detect ambiguity).
    pub(crate) async fn by_hash_prefix(&mut self, prefix: &str) -> Result<Vec<Row>, sqlx::Error> {
        let pattern = format!("{prefix}%");
        let cols = self.cols();
        match self {
            Conn::Sqlite { conn, .. } => {
                let rows = sqlx::query(AssertSqlSafe(format!(
                    "SELECT {cols} FROM records WHERE hash LIKE ?1 ORDER BY id LIMIT 2"
                )))
                .bind(pattern)
                .fetch_all(&mut **conn)
                .await?;
                rows.iter().map(row_from).collect()
            }
            Conn::Postgres { conn, schema, .. } => {
                let rows = sqlx::query(AssertSqlSafe(format!(
                    "SELECT {cols} FROM \"{schema}\".records WHERE hash LIKE $1 ORDER BY id LIMIT 2"
                )))
                .bind(pattern)
                .fetch_all(&mut **conn)
                .await?;
                rows.iter().map(row_from).collect()
            }
        }
    }

    pub(crate) async fn list(&mut self, f: &Filter) -> Result<Vec<Row>, sqlx::Error> {
        let cols = self.cols();
        let rows = self.select_filtered(f, cols, cols).await?;
        match rows {
            Selected::Sqlite(rows) => rows.iter().map(row_from).collect(),
            Selected::Postgres(rows) => rows.iter().map(row_from).collect(),
        }
    }

    /// Like [`Conn::list`] without the documents: the digests and the verdict are read
    /// out of the body by the database, so a long listing never holds every claim.
    pub(crate) async fn list_summaries(&mut self, f: &Filter) -> Result<Vec<Summary>, sqlx::Error> {
        const BASE: &str = "id, time, kind, task_id, state, prev_hash, hash";
        let sqlite = format!(
            "{BASE}, body ->> '$.claim_digest', body ->> '$.contract_digest', body -> '$.verdict', \
             body -> '$.origin'"
        );
        let pg = format!(
            "{BASE}, body::json ->> 'claim_digest', body::json ->> 'contract_digest', \
             (body::json -> 'verdict')::text, (body::json -> 'origin')::text"
        );
        fn summary<R>(r: &R) -> Result<Summary, sqlx::Error>
        where
            R: sqlx::Row,
            usize: sqlx::ColumnIndex<R>,
            for<'r> i64: sqlx::Decode<'r, R::Database> + sqlx::Type<R::Database>,
            for<'r> String: sqlx::Decode<'r, R::Database> + sqlx::Type<R::Database>,
            for<'r> Option<String>: sqlx::Decode<'r, R::Database> + sqlx::Type<R::Database>,
        {
            let id: i64 = r.try_get(0)?;
            let verdict: Option<String> = r.try_get(9)?;
            let verdict = match verdict {
                Some(text) => {
                    crate::depth::from_str(&text).map_err(|e| sqlx::Error::ColumnDecode {
                        index: "verdict".into(),
                        source: Box::new(e),
                    })?
                }
                None => serde_json::Value::Null,
            };
            let origin: Option<String> = r.try_get(10)?;
            let origin =
                match origin.as_deref() {
                    None | Some("null") => None,
                    Some(text) => Some(crate::depth::from_str(text).map_err(|e| {
                        sqlx::Error::ColumnDecode {
                            index: "origin".into(),
                            source: Box::new(e),
                        }
                    })?),
                };
            Ok(Summary {
                id: u64::try_from(id).unwrap_or(0),
                time: r.try_get(1)?,
                kind: r.try_get(2)?,
                task_id: r.try_get(3)?,
                state: r.try_get(4)?,
                prev_hash: r.try_get(5)?,
                hash: r.try_get(6)?,
                claim_digest: r.try_get::<Option<String>, _>(7)?.unwrap_or_default(),
                contract_digest: r.try_get(8)?,
                verdict,
                origin,
            })
        }
        match self.select_filtered(f, &sqlite, &pg).await? {
            Selected::Sqlite(rows) => rows.iter().map(summary).collect(),
            Selected::Postgres(rows) => rows.iter().map(summary).collect(),
        }
    }

    async fn select_filtered(
        &mut self,
        f: &Filter,
        sqlite_cols: &str,
        pg_cols: &str,
    ) -> Result<Selected, sqlx::Error> {
        let pg = matches!(self, Conn::Postgres { .. });
        // Ids are numbers the caller gave: written into the SQL as integers, never text.
        let id_bound =
            |op: &str, id: Option<u64>| id.map(|i| format!("id {op} {}", i.min(i64::MAX as u64)));
        let id_conds: Vec<String> = [id_bound("<", f.before_id), id_bound(">", f.after_id)]
            .into_iter()
            .flatten()
            .collect();
        let mut clauses: Vec<(&str, &str)> = Vec::new();
        if let Some(s) = &f.state {
            clauses.push(("state =", s));
        }
        if let Some(t) = &f.task_id {
            clauses.push(("task_id =", t));
        }
        if let Some(k) = &f.kind {
            clauses.push(("kind =", k));
        }
        if let Some(s) = &f.since {
            clauses.push(("time >=", s));
        }
        if let Some(u) = &f.until {
            clauses.push(("time <", u));
        }
        let conds: Vec<String> = clauses
            .iter()
            .enumerate()
            .map(|(i, (c, _))| {
                if pg {
                    format!("{c} ${}", i + 1)
                } else {
                    format!("{c} ?{}", i + 1)
                }
            })
            .chain(id_conds)
            .collect();
        let binds: Vec<&str> = clauses.iter().map(|(_, v)| *v).collect();
        let where_ = if conds.is_empty() {
            String::new()
        } else {
            format!(" WHERE {}", conds.join(" AND "))
        };
        let order = if f.newest_first { "DESC" } else { "ASC" };
        let limit = f
            .limit
            .map(|l| format!(" LIMIT {}", l.min(i64::MAX as u64)))
            .unwrap_or_default();
        match self {
            Conn::Sqlite { conn, .. } => {
                let sql =
                    format!("SELECT {sqlite_cols} FROM records{where_} ORDER BY id {order}{limit}");
                let mut q = sqlx::query(AssertSqlSafe(sql.as_str()));
                for b in &binds {
                    q = q.bind(*b);
                }
                Ok(Selected::Sqlite(q.fetch_all(&mut **conn).await?))
            }
            Conn::Postgres { conn, schema, .. } => {
                let sql = format!(
                    "SELECT {pg_cols} FROM \"{schema}\".records{where_} ORDER BY id {order}{limit}"
                );
                let mut q = sqlx::query(AssertSqlSafe(sql.as_str()));
                for b in &binds {
                    q = q.bind(*b);
                }
                Ok(Selected::Postgres(q.fetch_all(&mut **conn).await?))
            }
        }
    }

    /// Drop the schema (PostgreSQL; tests clean up with this).
    pub(crate) async fn drop_schema(&mut self) -> Result<(), sqlx::Error> {
        if let Conn::Postgres { conn, schema, .. } = self {
            sqlx::query(AssertSqlSafe(format!(
                "DROP SCHEMA IF EXISTS \"{schema}\" CASCADE"
            )))
            .execute(&mut **conn)
            .await?;
        }
        Ok(())
    }

    pub(crate) async fn close(self) {
        match self {
            Conn::Sqlite { conn: c, .. } => {
                let _ = c.close().await;
            }
            Conn::Postgres { conn, .. } => {
                let _ = conn.close().await;
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn batches_split_on_byte_lengths_not_on_content() {
        let body = "{\"a\":\"x,1,2,3,é€😀\"}";
        let text = format!("7,3,2,{},abc[]{body}8,0,4,0,\"x\"]", body.len());
        let rows = parse_batch(&text).unwrap();
        assert_eq!(rows.len(), 2);
        assert_eq!(
            (rows[0].id, rows[0].hash.as_str(), rows[0].cols.as_str()),
            (7, "abc", "[]")
        );
        assert_eq!(rows[0].body, body);
        assert_eq!(
            (rows[1].id, rows[1].cols.as_str(), rows[1].body.as_str()),
            (8, "\"x\"]", "")
        );
        // Truncated, non-numeric or mid-character lengths are refused, never a panic.
        for bad in [
            "7,3,2,10,abc",
            "x,1,1,1,abc",
            "1,1,0,0,é",
            "1,-1,0,0,",
            "1,2,3",
        ] {
            assert!(parse_batch(bad).is_none(), "{bad}");
        }
        assert_eq!(parse_batch("").unwrap().len(), 0);
    }
}
