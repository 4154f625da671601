//! SQL readback: one query with bound parameters; the first row as typed JSON plus the
//! number of rows. SQLite is opened read-only and query_only; PostgreSQL runs the query
//! in a READ ONLY transaction and MySQL in a READ ONLY session and transaction, rolled
//! back, so a readback can never write.

use std::str::FromStr;
use std::time::Duration;

use futures_util::TryStreamExt;
use serde_json::{Map, Number, Value};
use sqlx::mysql::{MySqlConnectOptions, MySqlConnection, MySqlRow};
use sqlx::postgres::{PgConnectOptions, PgConnection, PgRow};
use sqlx::sqlite::{SqliteConnectOptions, SqliteConnection, SqliteRow};
use sqlx::{AssertSqlSafe, Column, Connection, Executor, Row, TypeInfo, ValueRef};

use crate::error::ProbeError;
use crate::secret::{Scrubber, env_var};
use crate::spec::{SqlSpec, SqliteSpec};
use crate::{Context, Object, paths};

pub const DEFAULT_MAX_ROWS: u64 = 10_000;

/// Bind JSON parameters: the JSON type chooses the SQL type (string → text, integer →
/// 64-bit integer, other number → double, bool → boolean, null → NULL text).
macro_rules! bind_params {
    ($q:expr, $params:expr) => {{
        let mut q = $q;
        for (i, p) in $params.iter().enumerate() {
            q = match p {
                Value::String(s) => q.bind(s.clone()),
                Value::Bool(b) => q.bind(*b),
                Value::Null => q.bind(Option::<String>::None),
                Value::Number(n) => {
                    if let Some(v) = n.as_i64() {
                        q.bind(v)
                    } else if let Some(v) = n
                        .as_f64()
                        .filter(|_| n.to_string().contains(['.', 'e', 'E']))
                    {
                        q.bind(v)
                    } else {
                        return Err(ProbeError::invalid(format!(
                            "parameter {} ({n}) does not fit a 64-bit signed integer",
                            i + 1
                        )));
                    }
                }
                Value::Array(_) | Value::Object(_) => {
                    return Err(ProbeError::invalid(format!(
                        "parameter {} is an array or object; only strings, numbers, booleans and null are bound",
                        i + 1
                    )));
                }
            };
        }
        q
    }};
}

/// Read every row (counting, up to max_rows), decode the first; with `$all`, every
/// row decoded under `rows` too (a snapshot hashes each one).
macro_rules! collect_rows {
    ($stream:expr, $max:expr, $decode:expr, $all:expr) => {{
        let mut stream = $stream;
        let mut first: Option<Object> = None;
        let mut all: Vec<Value> = Vec::new();
        let mut count: u64 = 0;
        while let Some(row) = stream.try_next().await.map_err(query_error)? {
            count += 1;
            if count > $max {
                return Err(ProbeError::Oversize {
                    what: format!("query result (more than {} rows)", $max),
                    limit: $max,
                });
            }
            if $all {
                all.push(Value::Object($decode(&row)?));
            } else if first.is_none() {
                first = Some($decode(&row)?);
            }
        }
        let mut obj = if $all {
            let mut o = Object::new();
            o.insert("rows".into(), Value::Array(all));
            o
        } else {
            first.unwrap_or_default()
        };
        obj.insert("row_count".into(), Value::from(count));
        obj
    }};
}

fn connect_error(target: &str, e: sqlx::Error) -> ProbeError {
    match e {
        sqlx::Error::Io(io) if io.kind() == std::io::ErrorKind::ConnectionRefused => {
            ProbeError::ConnectionRefused {
                target: target.to_string(),
            }
        }
        sqlx::Error::Io(io) => ProbeError::Connect {
            target: target.to_string(),
            reason: paths::io_reason(&io),
        },
        sqlx::Error::Database(db) => ProbeError::Database {
            target: target.to_string(),
            reason: db.message().to_string(),
        },
        sqlx::Error::Configuration(c) => {
            ProbeError::invalid(format!("the connection settings are not valid: {c}"))
        }
        other => ProbeError::Connect {
            target: target.to_string(),
            reason: other.to_string(),
        },
    }
}

fn query_error(e: sqlx::Error) -> ProbeError {
    match e {
        sqlx::Error::Database(db) => ProbeError::BadQuery {
            reason: match db.code() {
                Some(code) => format!("{} (code {code})", db.message()),
                None => db.message().to_string(),
            },
        },
        sqlx::Error::ColumnDecode { index, source } => ProbeError::BadQuery {
            reason: format!("column {index} could not be read: {source}"),
        },
        sqlx::Error::Io(io) => ProbeError::Connect {
            target: "database".into(),
            reason: paths::io_reason(&io),
        },
        other => ProbeError::BadQuery {
            reason: other.to_string(),
        },
    }
}

/// The server's own statement limit: a little longer than the probe's, so the probe
/// reports the timeout and the server still stops the statement soon after.
fn server_limit(limit: Duration) -> Duration {
    limit.saturating_add(Duration::from_millis(500))
}

/// A statement the server cancelled for time is a timeout, whichever side noticed first.
fn server_timeout(r: Result<Object, ProbeError>, limit: Duration) -> Result<Object, ProbeError> {
    match r {
        Err(ProbeError::BadQuery { reason })
            if reason.contains("(code 57014)")
                || reason.contains("(code 70100)")
                || reason.contains("maximum statement execution time exceeded") =>
        {
            Err(ProbeError::Timeout {
                limit_ms: u64::try_from(limit.as_millis()).unwrap_or(u64::MAX),
            })
        }
        other => other,
    }
}

fn max_rows(m: Option<u64>) -> Result<u64, ProbeError> {
    match m {
        Some(0) => Err(ProbeError::invalid("max_rows must be at least 1")),
        Some(n) => Ok(n),
        None => Ok(DEFAULT_MAX_ROWS),
    }
}

/// Insert a column, refusing names that would hide another key.
fn put(obj: &mut Object, name: &str, v: Value) -> Result<(), ProbeError> {
    if name == "row_count" || obj.contains_key(name) {
        return Err(ProbeError::BadQuery {
            reason: format!(
                "column name {name:?} appears twice (or is row_count); alias it in the query"
            ),
        });
    }
    obj.insert(name.to_string(), v);
    Ok(())
}

fn float(f: f64) -> Value {
    // NaN and infinities have no JSON number; observed as strings so they still compare.
    Number::from_f64(f).map_or_else(|| Value::from(f.to_string()), Value::Number)
}

fn decode_err(column: &str, e: sqlx::Error) -> ProbeError {
    ProbeError::BadQuery {
        reason: format!("column {column:?} could not be read: {e}"),
    }
}

fn unsupported(column: &str, t: &str) -> ProbeError {
    ProbeError::UnsupportedColumn {
        column: column.to_string(),
        sql_type: t.to_string(),
    }
}

fn fmt_time(t: time::Time) -> String {
    let mut s = format!("{:02}:{:02}:{:02}", t.hour(), t.minute(), t.second());
    if t.nanosecond() != 0 {
        let frac = format!("{:09}", t.nanosecond());
        s.push('.');
        s.push_str(frac.trim_end_matches('0'));
    }
    s
}

fn fmt_primitive(dt: time::PrimitiveDateTime) -> String {
    format!("{}T{}", dt.date(), fmt_time(dt.time()))
}

fn fmt_offset(dt: time::OffsetDateTime) -> Result<String, ProbeError> {
    dt.format(&time::format_description::well_known::Rfc3339)
        .map_err(|e| ProbeError::BadQuery {
            reason: format!("a timestamp cannot be written as RFC 3339: {e}"),
        })
}

// ---------------------------------------------------------------- SQLite

pub async fn observe_sqlite(
    spec: &SqliteSpec,
    ctx: &Context,
    limit: Duration,
) -> Result<Object, ProbeError> {
    read_sqlite(spec, ctx, limit, false).await
}

/// The query's rows; with `all`, every row under `rows` (else the first row's columns).
pub async fn read_sqlite(
    spec: &SqliteSpec,
    ctx: &Context,
    limit: Duration,
    all: bool,
) -> Result<Object, ProbeError> {
    let max = max_rows(spec.max_rows)?;
    single_read_statement(&spec.query)?;
    let path = paths::existing(&ctx.root, &spec.path, false)?;
    let opts = SqliteConnectOptions::new()
        .filename(&path)
        .read_only(true)
        // A read-only connection still runs `VACUUM INTO 'file'` (a copy written
        // anywhere); query_only refuses every statement that would write.
        .pragma("query_only", "ON")
        .create_if_missing(false)
        .busy_timeout(Duration::from_secs(5));
    let target = format!("sqlite {}", spec.path);
    let mut conn = SqliteConnection::connect_with(&opts)
        .await
        .map_err(|e| connect_error(&target, e))?;
    // SQLite runs on a worker thread that a dropped future does not stop: interrupt the
    // statement itself shortly after the probe's limit, so a runaway query (an endless
    // recursive CTE) does not spin on after the timeout was reported.
    if let Some(deadline) =
        std::time::Instant::now().checked_add(limit + Duration::from_millis(200))
        && let Ok(mut handle) = conn.lock_handle().await
    {
        handle.set_progress_handler(10_000, move || std::time::Instant::now() < deadline);
    }
    let result = async {
        let q = bind_params!(sqlx::query(AssertSqlSafe(spec.query.clone())), &spec.params);
        Ok(collect_rows!(
            q.fetch(&mut conn),
            max,
            |r: &SqliteRow| sqlite_row(r, all),
            all
        ))
    }
    .await;
    let _ = conn.close().await;
    result
}

/// A SQLite readback is one `SELECT`, `WITH … SELECT` or `VALUES` statement. Even on a
/// read-only, `query_only` connection SQLite *opens* the file named by `VACUUM INTO` or
/// `ATTACH` (creating an empty file relative to the gate's working directory, outside
/// the contract root), so other statements, and a second statement after `;`, are
/// refused before the database is opened.
fn single_read_statement(query: &str) -> Result<(), ProbeError> {
    let code = strip_sql_comments_and_strings(query);
    let first = code
        .split(|c: char| !c.is_ascii_alphanumeric() && c != '_')
        .find(|w| !w.is_empty())
        .unwrap_or("")
        .to_ascii_uppercase();
    if !matches!(first.as_str(), "SELECT" | "WITH" | "VALUES") {
        return Err(ProbeError::BadQuery {
            reason: format!(
                "a SQLite readback must be a SELECT, WITH or VALUES statement, not {}",
                if first.is_empty() {
                    "nothing"
                } else {
                    first.as_str()
                }
            ),
        });
    }
    let trimmed = code.trim_end().trim_end_matches(';');
    if trimmed.contains(';') {
        return Err(ProbeError::BadQuery {
            reason: "a SQLite readback is one statement: no ';' between statements".into(),
        });
    }
    let upper = trimmed.to_ascii_uppercase();
    if upper
        .split(|c: char| !c.is_ascii_alphanumeric() && c != '_')
        .any(|w| matches!(w, "ATTACH" | "VACUUM" | "PRAGMA" | "DETACH"))
    {
        return Err(ProbeError::BadQuery {
            reason: "ATTACH, VACUUM and PRAGMA are not allowed in a SQLite readback".into(),
        });
    }
    Ok(())
}

/// The query with comments removed and string/identifier literals blanked, so keyword
/// and `;` checks see only SQL code.
fn strip_sql_comments_and_strings(q: &str) -> String {
    let mut out = String::with_capacity(q.len());
    let mut chars = q.chars().peekable();
    while let Some(c) = chars.next() {
        match c {
            '-' if chars.peek() == Some(&'-') => {
                for n in chars.by_ref() {
                    if n == '\n' {
                        break;
                    }
                }
                out.push(' ');
            }
            '/' if chars.peek() == Some(&'*') => {
                chars.next();
                let mut prev = ' ';
                for n in chars.by_ref() {
                    if prev == '*' && n == '/' {
                        break;
                    }
                    prev = n;
                }
                out.push(' ');
            }
            '\'' | '"' | '`' | '[' => {
                let close = if c == '[' { ']' } else { c };
                for n in chars.by_ref() {
                    if n == close {
                        break;
                    }
                }
                out.push_str(" x ");
            }
            c => out.push(c),
        }
    }
    out
}

#[cfg(test)]
mod statement_tests {
    use super::single_read_statement;

    #[test]
    fn only_one_read_statement() {
        for ok in [
            "SELECT 1",
            "  select a FROM t WHERE b = ?1;",
            "WITH x AS (SELECT 1) SELECT * FROM x",
            "VALUES (1)",
            "/* c */ -- c\n SELECT ';' AS semi, 'vacuum' AS word",
        ] {
            assert!(single_read_statement(ok).is_ok(), "{ok}");
        }
        for bad in [
            "VACUUM INTO 'copy.db'",
            "ATTACH DATABASE 'x.db' AS x",
            "PRAGMA journal_mode = WAL",
            "SELECT 1; VACUUM INTO 'copy.db'",
            "DELETE FROM t",
            "",
            "-- only a comment",
        ] {
            assert!(single_read_statement(bad).is_err(), "{bad}");
        }
    }
}

/// One row. `typed` (a snapshot's read, which hashes rows) keeps SQLite's storage
/// class where the plain form would hide it: a BLOB is `{"blob": hex}` (not the text
/// its hex spells), a non-finite REAL `{"real": "inf"}` (not the text `"inf"`), so
/// a value rewritten as another type with the same spelling is a change.
fn sqlite_row(row: &SqliteRow, typed: bool) -> Result<Object, ProbeError> {
    let mut obj = Map::new();
    for (i, col) in row.columns().iter().enumerate() {
        let name = col.name();
        let raw = row.try_get_raw(i).map_err(|e| decode_err(name, e))?;
        let v = if raw.is_null() {
            Value::Null
        } else {
            // The value's storage class (SQLite is dynamically typed).
            let t = raw.type_info().name().to_string();
            drop(raw);
            match t.as_str() {
                "INTEGER" | "BOOLEAN" | "INT8" => Value::from(
                    row.try_get_unchecked::<i64, _>(i)
                        .map_err(|e| decode_err(name, e))?,
                ),
                "REAL" => {
                    let f = row
                        .try_get_unchecked::<f64, _>(i)
                        .map_err(|e| decode_err(name, e))?;
                    if typed && !f.is_finite() {
                        serde_json::json!({ "real": f.to_string() })
                    } else {
                        float(f)
                    }
                }
                "TEXT" | "DATE" | "TIME" | "DATETIME" => Value::from(
                    row.try_get_unchecked::<String, _>(i)
                        .map_err(|e| decode_err(name, e))?,
                ),
                "BLOB" => {
                    let hex = hex::encode(
                        row.try_get_unchecked::<Vec<u8>, _>(i)
                            .map_err(|e| decode_err(name, e))?,
                    );
                    if typed {
                        serde_json::json!({ "blob": hex })
                    } else {
                        Value::from(hex)
                    }
                }
                "NULL" => Value::Null,
                other => return Err(unsupported(name, other)),
            }
        };
        put(&mut obj, name, v)?;
    }
    Ok(obj)
}

// ---------------------------------------------------------------- PostgreSQL

fn server_url<'a>(
    spec: &SqlSpec,
    ctx: &'a Context,
    scrub: &mut Scrubber,
) -> Result<&'a str, ProbeError> {
    let url = env_var(&ctx.env, &spec.url_env)?;
    scrub.add_url(url);
    Ok(url)
}

fn server_target(kind: &str, url: &str, env_name: &str) -> String {
    match url::Url::parse(url) {
        Ok(u) => format!(
            "{kind} {}:{} (${env_name})",
            u.host_str().unwrap_or("localhost"),
            u.port().map_or("default".to_string(), |p| p.to_string())
        ),
        Err(_) => format!("{kind} (${env_name})"),
    }
}

/// The `search_path` every PostgreSQL session of a probe is pinned to, as SQL: the
/// contract's schemas (default `public`), each quoted. Never `$user`: the server's
/// default path starts with the connecting role's name, so an agent allowed to create
/// a schema named after the gate's role would shadow every unqualified table.
/// (`pg_catalog` and the session's own, empty, `pg_temp` are still searched first.)
pub fn search_path(spec: &SqlSpec) -> Result<String, ProbeError> {
    let schemas = spec
        .search_path
        .clone()
        .unwrap_or_else(|| vec!["public".to_string()]);
    if schemas.is_empty() {
        return Err(ProbeError::invalid(
            "search_path is empty: name the schemas a table resolves in, e.g. [\"public\"]",
        ));
    }
    let mut out = Vec::new();
    for s in &schemas {
        if s.is_empty()
            || s.len() > 63
            || s.contains(['\0', '$'])
            || s.chars().any(char::is_control)
        {
            return Err(ProbeError::invalid(format!(
                "search_path: {s:?} is not a schema name (no $user, at most 63 bytes)"
            )));
        }
        out.push(format!("\"{}\"", s.replace('"', "\"\"")));
    }
    Ok(out.join(", "))
}

pub async fn observe_postgres(
    spec: &SqlSpec,
    ctx: &Context,
    limit: Duration,
    scrub: &mut Scrubber,
) -> Result<Object, ProbeError> {
    read_postgres(spec, ctx, limit, scrub, false).await
}

pub async fn read_postgres(
    spec: &SqlSpec,
    ctx: &Context,
    limit: Duration,
    scrub: &mut Scrubber,
    all: bool,
) -> Result<Object, ProbeError> {
    let max = max_rows(spec.max_rows)?;
    let url = server_url(spec, ctx, scrub)?;
    let target = server_target("postgres", url, &spec.url_env);
    let opts = PgConnectOptions::from_str(url).map_err(|_| {
        ProbeError::invalid(format!(
            "the value of ${} is not a PostgreSQL URL",
            spec.url_env
        ))
    })?;
    let mut conn = PgConnection::connect_with(&opts)
        .await
        .map_err(|e| connect_error(&target, e))?;
    let result = async {
        conn.execute("BEGIN READ ONLY").await.map_err(query_error)?;
        // The server stops the query too when the probe gives up.
        // statement_timeout is a 32-bit count of milliseconds.
        let ms = u64::try_from(server_limit(limit).as_millis())
            .unwrap_or(u64::MAX)
            .clamp(1, i32::MAX as u64);
        conn.execute(AssertSqlSafe(format!("SET LOCAL statement_timeout = {ms}")))
            .await
            .map_err(query_error)?;
        conn.execute(AssertSqlSafe(format!(
            "SET LOCAL search_path = {}",
            search_path(spec)?
        )))
        .await
        .map_err(query_error)?;
        let q = bind_params!(sqlx::query(AssertSqlSafe(spec.query.clone())), &spec.params);
        let obj = collect_rows!(q.fetch(&mut conn), max, pg_row, all);
        Ok(obj)
    }
    .await;
    let _ = conn.execute("ROLLBACK").await;
    let _ = conn.close().await;
    server_timeout(result, limit)
}

fn pg_row(row: &PgRow) -> Result<Object, ProbeError> {
    use sqlx::types::JsonValue;
    let mut obj = Map::new();
    for (i, col) in row.columns().iter().enumerate() {
        let name = col.name();
        let t = col.type_info().name().to_string();
        let raw = row.try_get_raw(i).map_err(|e| decode_err(name, e))?;
        if raw.is_null() {
            put(&mut obj, name, Value::Null)?;
            continue;
        }
        let bytes_or_err = raw.as_bytes().map(<[u8]>::to_vec);
        let binary = matches!(raw.format(), sqlx::postgres::PgValueFormat::Binary);
        drop(raw);
        macro_rules! get {
            ($ty:ty) => {
                row.try_get_unchecked::<$ty, _>(i)
                    .map_err(|e| decode_err(name, e))?
            };
        }
        let v = match t.as_str() {
            "BOOL" => Value::Bool(get!(bool)),
            "INT2" => Value::from(get!(i16)),
            "INT4" => Value::from(get!(i32)),
            "INT8" => Value::from(get!(i64)),
            "FLOAT4" => float(f64::from(get!(f32))),
            "FLOAT8" => float(get!(f64)),
            "NUMERIC" => {
                let bytes = bytes_or_err.map_err(|e| ProbeError::BadQuery {
                    reason: format!("column {name:?}: {e}"),
                })?;
                if !binary {
                    Value::from(String::from_utf8_lossy(&bytes).into_owned())
                } else {
                    Value::from(pg_numeric(&bytes).ok_or_else(|| ProbeError::BadQuery {
                        reason: format!("column {name:?}: malformed NUMERIC"),
                    })?)
                }
            }
            "TEXT" | "VARCHAR" | "BPCHAR" | "NAME" | "CITEXT" | "\"CHAR\"" | "CHAR" => {
                Value::from(get!(String))
            }
            "UUID" => {
                let b = bytes_or_err.map_err(|e| ProbeError::BadQuery {
                    reason: format!("column {name:?}: {e}"),
                })?;
                if b.len() != 16 {
                    return Err(ProbeError::BadQuery {
                        reason: format!("column {name:?}: malformed UUID"),
                    });
                }
                let h = hex::encode(&b);
                Value::from(format!(
                    "{}-{}-{}-{}-{}",
                    &h[0..8],
                    &h[8..12],
                    &h[12..16],
                    &h[16..20],
                    &h[20..32]
                ))
            }
            "JSON" | "JSONB" => get!(JsonValue),
            "TIMESTAMPTZ" => Value::from(fmt_offset(get!(time::OffsetDateTime))?),
            "TIMESTAMP" => Value::from(fmt_primitive(get!(time::PrimitiveDateTime))),
            "DATE" => Value::from(get!(time::Date).to_string()),
            "TIME" => Value::from(fmt_time(get!(time::Time))),
            "BYTEA" => Value::from(hex::encode(get!(Vec<u8>))),
            "VOID" => Value::Null,
            other => return Err(unsupported(name, other)),
        };
        put(&mut obj, name, v)?;
    }
    Ok(obj)
}

/// PostgreSQL's binary NUMERIC as an exact decimal string: `ndigits, weight, sign,
/// dscale` (i16/i16/u16/u16) then base-10000 digits.
pub(crate) fn pg_numeric(b: &[u8]) -> Option<String> {
    let rd = |i: usize| -> Option<u16> { Some(u16::from_be_bytes([*b.get(i)?, *b.get(i + 1)?])) };
    let ndigits = usize::from(rd(0)?);
    let weight = i64::from(rd(2)? as i16);
    let sign = rd(4)?;
    let dscale = usize::from(rd(6)?);
    match sign {
        0xC000 => return Some("NaN".into()),
        0xD000 => return Some("Infinity".into()),
        0xF000 => return Some("-Infinity".into()),
        0x0000 | 0x4000 => {}
        _ => return None,
    }
    let mut digits = Vec::with_capacity(ndigits);
    for k in 0..ndigits {
        let d = rd(8 + 2 * k)?;
        if d >= 10000 {
            return None;
        }
        digits.push(d);
    }
    let digit_at = |power: i64| -> u16 {
        // digits[j] has weight (weight - j).
        let j = weight - power;
        if j >= 0 && (j as usize) < digits.len() {
            digits[j as usize]
        } else {
            0
        }
    };
    let mut int_part = String::new();
    if weight >= 0 {
        for p in (0..=weight).rev() {
            let d = digit_at(p);
            if int_part.is_empty() {
                if d != 0 || p == 0 {
                    int_part = d.to_string();
                }
            } else {
                int_part.push_str(&format!("{d:04}"));
            }
        }
    }
    if int_part.is_empty() {
        int_part.push('0');
    }
    let mut frac = String::new();
    let mut p = -1i64;
    while frac.len() < dscale {
        frac.push_str(&format!("{:04}", digit_at(p)));
        p -= 1;
    }
    frac.truncate(dscale);
    let negative = sign == 0x4000 && (int_part != "0" || frac.chars().any(|c| c != '0'));
    let mut s = String::new();
    if negative {
        s.push('-');
    }
    s.push_str(&int_part);
    if !frac.is_empty() {
        s.push('.');
        s.push_str(&frac);
    }
    Some(s)
}

// ---------------------------------------------------------------- MySQL / MariaDB

pub async fn observe_mysql(
    spec: &SqlSpec,
    ctx: &Context,
    limit: Duration,
    scrub: &mut Scrubber,
) -> Result<Object, ProbeError> {
    read_mysql(spec, ctx, limit, scrub, false).await
}

pub async fn read_mysql(
    spec: &SqlSpec,
    ctx: &Context,
    limit: Duration,
    scrub: &mut Scrubber,
    all: bool,
) -> Result<Object, ProbeError> {
    let max = max_rows(spec.max_rows)?;
    let url = server_url(spec, ctx, scrub)?;
    let target = server_target("mysql", url, &spec.url_env);
    let opts = MySqlConnectOptions::from_str(url).map_err(|_| {
        ProbeError::invalid(format!("the value of ${} is not a MySQL URL", spec.url_env))
    })?;
    let mut conn = MySqlConnection::connect_with(&opts)
        .await
        .map_err(|e| connect_error(&target, e))?;
    let result = async {
        // Let the server stop the statement too (MariaDB: seconds; MySQL: ms, SELECT
        // only). Whichever the server does not know fails harmlessly.
        let secs = server_limit(limit)
            .as_secs_f64()
            .min(f64::from(i32::MAX) / 1000.0)
            .max(0.001);
        let _ = conn
            .execute(AssertSqlSafe(format!(
                "SET SESSION max_statement_time = {secs:.3}"
            )))
            .await;
        let _ = conn
            .execute(AssertSqlSafe(format!(
                "SET SESSION MAX_EXECUTION_TIME = {}",
                (secs * 1000.0) as u64
            )))
            .await;
        // DDL (DROP, TRUNCATE, ...) commits the open transaction implicitly and runs
        // outside it; with the session read-only, the transaction it starts is too.
        conn.execute("SET SESSION TRANSACTION READ ONLY")
            .await
            .map_err(query_error)?;
        conn.execute("START TRANSACTION READ ONLY")
            .await
            .map_err(query_error)?;
        let q = bind_params!(sqlx::query(AssertSqlSafe(spec.query.clone())), &spec.params);
        let obj = collect_rows!(q.fetch(&mut conn), max, mysql_row, all);
        Ok(obj)
    }
    .await;
    let _ = conn.execute("ROLLBACK").await;
    let _ = conn.close().await;
    server_timeout(result, limit)
}

fn mysql_row(row: &MySqlRow) -> Result<Object, ProbeError> {
    use sqlx::types::JsonValue;
    let mut obj = Map::new();
    for (i, col) in row.columns().iter().enumerate() {
        let name = col.name();
        let t = col.type_info().name().to_string();
        let raw = row.try_get_raw(i).map_err(|e| decode_err(name, e))?;
        if raw.is_null() {
            put(&mut obj, name, Value::Null)?;
            continue;
        }
        macro_rules! get {
            ($ty:ty) => {
                row.try_get_unchecked::<$ty, _>(i)
                    .map_err(|e| decode_err(name, e))?
            };
        }
        let v = match t.as_str() {
            "BOOLEAN" => Value::Bool(get!(bool)),
            "TINYINT" | "SMALLINT" | "MEDIUMINT" | "INT" | "BIGINT" | "YEAR" => {
                Value::from(get!(i64))
            }
            "TINYINT UNSIGNED" | "SMALLINT UNSIGNED" | "MEDIUMINT UNSIGNED" | "INT UNSIGNED"
            | "BIGINT UNSIGNED" => Value::from(get!(u64)),
            "FLOAT" => float(f64::from(get!(f32))),
            "DOUBLE" => float(get!(f64)),
            // Exact decimals: the server sends them as text, kept as text.
            "DECIMAL" => Value::from(get!(String)),
            "CHAR" | "VARCHAR" | "TEXT" | "TINYTEXT" | "MEDIUMTEXT" | "LONGTEXT" | "ENUM"
            | "SET" => Value::from(get!(String)),
            "BINARY" | "VARBINARY" | "BLOB" | "TINYBLOB" | "MEDIUMBLOB" | "LONGBLOB" | "BIT" => {
                Value::from(hex::encode(get!(Vec<u8>)))
            }
            "JSON" => get!(JsonValue),
            "DATE" => Value::from(get!(time::Date).to_string()),
            "DATETIME" => Value::from(fmt_primitive(get!(time::PrimitiveDateTime))),
            "TIMESTAMP" => Value::from(fmt_offset(get!(time::OffsetDateTime))?),
            "TIME" => Value::from(fmt_time(get!(time::Time))),
            "NULL" => Value::Null,
            other => return Err(unsupported(name, other)),
        };
        put(&mut obj, name, v)?;
    }
    Ok(obj)
}

#[cfg(test)]
mod tests {
    use super::pg_numeric;

    fn enc(ndigits: u16, weight: i16, sign: u16, dscale: u16, digits: &[u16]) -> Vec<u8> {
        let mut b = Vec::new();
        for v in [ndigits, weight as u16, sign, dscale] {
            b.extend_from_slice(&v.to_be_bytes());
        }
        for d in digits {
            b.extend_from_slice(&d.to_be_bytes());
        }
        b
    }

    proptest::proptest! {
        #[test]
        fn numeric_never_panics(b in proptest::collection::vec(proptest::num::u8::ANY, 0..64)) {
            let _ = pg_numeric(&b);
        }

        #[test]
        fn numeric_round_trips_integers(n in 0u64..1_000_000_000_000) {
            // Encode n as base-10000 digits, as PostgreSQL does.
            let mut digits = Vec::new();
            let mut m = n;
            while m > 0 {
                digits.push((m % 10000) as u16);
                m /= 10000;
            }
            digits.reverse();
            let weight = digits.len() as i16 - 1;
            let b = enc(digits.len() as u16, weight.max(0), 0, 0, &digits);
            proptest::prop_assert_eq!(pg_numeric(&b).unwrap(), n.to_string());
        }
    }

    #[test]
    fn numeric_decoding() {
        // 12345.678 = [1, 2345, 6780], weight 1, dscale 3
        assert_eq!(
            pg_numeric(&enc(3, 1, 0, 3, &[1, 2345, 6780])).unwrap(),
            "12345.678"
        );
        // -0.05 = [500], weight -1, dscale 2
        assert_eq!(pg_numeric(&enc(1, -1, 0x4000, 2, &[500])).unwrap(), "-0.05");
        // 10000 = [1], weight 1, dscale 0
        assert_eq!(pg_numeric(&enc(1, 1, 0, 0, &[1])).unwrap(), "10000");
        // 0 = no digits
        assert_eq!(pg_numeric(&enc(0, 0, 0, 2, &[])).unwrap(), "0.00");
        assert_eq!(pg_numeric(&enc(0, 0, 0xC000, 0, &[])).unwrap(), "NaN");
        assert!(pg_numeric(&[0, 1]).is_none());
    }
}
