//! Whole sets read for a contract's `[[snapshot]]`: every row of a query, every Redis
//! key matching a pattern, every file under a directory, every file of a git tree.
//! Each item comes back as its naming fields and the sha256 of its content; the gate
//! keeps only the hashes, so a snapshot file never holds a value. The reads are the
//! probes' own (the same read-only SQL sessions, the same root-bound file access, the
//! same hardened git witness), with their limits.

use std::collections::BTreeMap;
use std::io::Read;
use std::time::Duration;

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};
use serde_json::{Map, Value};
use sha2::{Digest, Sha256};

use crate::error::ProbeError;
use crate::secret::Scrubber;
use crate::spec::{SqlSpec, SqliteSpec};
use crate::{Context, Object, paths};

/// Most files (or keys) one set may hold.
pub const DEFAULT_MAX_ITEMS: u64 = 100_000;

/// What a snapshot reads. Externally tagged, like a check's source.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "snake_case", deny_unknown_fields)]
pub enum SetSource {
    /// Every row of a query on a SQLite file under the root (read-only).
    Sqlite(SqliteSpec),
    /// Every row of a PostgreSQL query (READ ONLY transaction).
    Postgres(SqlSpec),
    /// Every row of a MySQL / MariaDB query (READ ONLY transaction).
    Mysql(SqlSpec),
    /// Every Redis key matching a pattern (SCAN), each value hashed from DUMP.
    Redis(RedisKeys),
    /// Every file under a directory of the root (symlinks not followed).
    Files(FilesSpec),
    /// Every file of a git tree at a revision (blob ids from verified objects).
    Git(GitTree),
}

/// A `redis` set: every key matching a pattern, each value hashed from DUMP.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct RedisKeys {
    /// Name of the environment variable holding the `redis://` URL.
    pub url_env: String,
    /// A SCAN MATCH pattern (`session:*`).
    pub pattern: String,
    /// Most keys read (default 100 000); more is an error.
    #[serde(default)]
    pub max_keys: Option<u64>,
}

/// A `files` set: every file under a directory of the root.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct FilesSpec {
    /// A directory relative to the root (`.` for all of it).
    pub path: String,
    /// Most files read (default 100 000); more is an error.
    #[serde(default)]
    pub max_files: Option<u64>,
    /// Largest file read (default 64 MiB); a larger one is an error.
    #[serde(default)]
    pub max_bytes: Option<u64>,
}

/// A `git` set: every file of a commit's tree, by mode and blob id.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct GitTree {
    /// The repository directory, relative to the root (default: the root).
    #[serde(default)]
    pub repo: Option<String>,
    /// The revision whose tree is read (default HEAD).
    #[serde(default)]
    pub rev: Option<String>,
}

/// One item of a set: the fields a target template may name, and its content's hash.
#[derive(Debug, Clone, PartialEq)]
pub struct Item {
    /// The fields a snapshot's target template may name (a row's columns, `key`, `path`).
    pub fields: Object,
    /// The item's content hash (for git, its mode and blob id): a change is a difference.
    pub sha256: String,
}

impl SetSource {
    /// The kind as written in a contract.
    pub fn kind(&self) -> &'static str {
        match self {
            SetSource::Sqlite(_) => "sqlite",
            SetSource::Postgres(_) => "postgres",
            SetSource::Mysql(_) => "mysql",
            SetSource::Redis(_) => "redis",
            SetSource::Files(_) => "files",
            SetSource::Git(_) => "git",
        }
    }

    /// The target template used when the snapshot names none: a file's path, a key.
    /// Rows have no default (name the row by its key columns).
    pub fn default_target(&self) -> Option<&'static str> {
        match self {
            SetSource::Files(_) | SetSource::Git(_) => Some("{path}"),
            SetSource::Redis(_) => Some("{key}"),
            _ => None,
        }
    }

    /// The mutation kinds that can change an item of this set when the snapshot
    /// declares none: a row or key is a `state_write` (the spec's kind for a write to
    /// authoritative state) or `db_write`; a file a `file_write` or `code_change`. A
    /// claimed mutation of another kind never claims a difference here.
    pub fn default_kinds(&self) -> &'static [&'static str] {
        match self {
            SetSource::Sqlite(_)
            | SetSource::Postgres(_)
            | SetSource::Mysql(_)
            | SetSource::Redis(_) => &["state_write", "db_write"],
            SetSource::Files(_) | SetSource::Git(_) => &["file_write", "code_change"],
        }
    }

    /// What is read, safe to print (URLs named by their variable).
    pub fn describe(&self) -> String {
        match self {
            SetSource::Sqlite(s) => format!("sqlite {}: {}", s.path, s.query),
            SetSource::Postgres(s) => format!("postgres ${}: {}", s.url_env, s.query),
            SetSource::Mysql(s) => format!("mysql ${}: {}", s.url_env, s.query),
            SetSource::Redis(r) => format!("redis ${}: SCAN {}", r.url_env, r.pattern),
            SetSource::Files(f) => format!("files under {}", f.path),
            SetSource::Git(g) => format!(
                "git {} tree at {}",
                g.repo.as_deref().unwrap_or("."),
                g.rev.as_deref().unwrap_or("HEAD")
            ),
        }
    }

    /// What can be checked without touching the world.
    pub fn validate(&self) -> Result<(), ProbeError> {
        match self {
            SetSource::Sqlite(s) => crate::Source::Sqlite(s.clone()).validate(),
            SetSource::Postgres(s) => crate::Source::Postgres(s.clone()).validate(),
            SetSource::Mysql(s) => crate::Source::Mysql(s.clone()).validate(),
            SetSource::Redis(r) if r.pattern.is_empty() => {
                Err(ProbeError::invalid("pattern is empty"))
            }
            SetSource::Redis(_) => Ok(()),
            SetSource::Files(f) => paths::relative(&f.path).map(|_| ()),
            SetSource::Git(g) => crate::Source::Git(crate::GitSpec {
                repo: g.repo.clone(),
                rev: g.rev.clone(),
                file: None,
                max_bytes: None,
            })
            .validate(),
        }
    }

    /// Registers the secrets the source names (its URL's password and tokens).
    pub fn register_secrets(&self, env: &BTreeMap<String, String>, scrub: &mut Scrubber) {
        let name = match self {
            SetSource::Postgres(s) | SetSource::Mysql(s) => &s.url_env,
            SetSource::Redis(r) => &r.url_env,
            _ => return,
        };
        if let Some(u) = env.get(name) {
            scrub.add_url(u);
        }
    }
}

/// Reads the whole set now, within `limit`. Errors are scrubbed of the source's
/// secrets; an error is never an empty set.
pub async fn read(
    source: &SetSource,
    ctx: &Context,
    limit: Duration,
) -> Result<Vec<Item>, ProbeError> {
    source.validate()?;
    let mut scrub = Scrubber::default();
    source.register_secrets(&ctx.env, &mut scrub);
    let fut = read_inner(source, ctx, limit, &mut scrub);
    let r = match tokio::time::timeout(limit, fut).await {
        Ok(r) => r,
        Err(_) => Err(ProbeError::Timeout {
            limit_ms: u64::try_from(limit.as_millis()).unwrap_or(u64::MAX),
        }),
    };
    r.map_err(|e| e.scrubbed(&scrub))
}

async fn read_inner(
    source: &SetSource,
    ctx: &Context,
    limit: Duration,
    scrub: &mut Scrubber,
) -> Result<Vec<Item>, ProbeError> {
    let rows = match source {
        SetSource::Sqlite(s) => crate::sql::read_sqlite(s, ctx, limit, true).await?,
        SetSource::Postgres(s) => crate::sql::read_postgres(s, ctx, limit, scrub, true).await?,
        SetSource::Mysql(s) => crate::sql::read_mysql(s, ctx, limit, scrub, true).await?,
        SetSource::Redis(r) => return crate::kv::scan(r, ctx, scrub).await,
        SetSource::Files(f) => {
            let (f, root) = (f.clone(), ctx.root.clone());
            return tokio::task::spawn_blocking(move || files(&f, &root))
                .await
                .map_err(|e| ProbeError::Io {
                    path: String::new(),
                    reason: format!("file walk failed: {e}"),
                })?;
        }
        SetSource::Git(g) => return git_tree(g, ctx).await,
    };
    let list = match rows.get("rows") {
        Some(Value::Array(a)) => a.clone(),
        _ => Vec::new(),
    };
    Ok(list
        .into_iter()
        .filter_map(|r| match r {
            Value::Object(fields) => {
                let text = Value::Object(fields.clone()).to_string();
                Some(Item {
                    fields,
                    sha256: hex::encode(Sha256::digest(text.as_bytes())),
                })
            }
            _ => None,
        })
        .collect())
}

fn path_item(path: String, sha256: String) -> Item {
    let mut fields = Map::new();
    fields.insert("path".into(), Value::from(path));
    Item { fields, sha256 }
}

/// Every file under `spec.path`, walked without recursion and without following a
/// symlink (a symlink is hashed as its target text), through the root capability.
fn files(spec: &FilesSpec, root: &std::path::Path) -> Result<Vec<Item>, ProbeError> {
    let dir = paths::root_dir(root)?;
    let start = paths::relative(&spec.path)?;
    let max_files = spec.max_files.unwrap_or(DEFAULT_MAX_ITEMS);
    let max_bytes = spec
        .max_bytes
        .unwrap_or(crate::file::DEFAULT_MAX_FILE_BYTES);
    let shown = |p: &std::path::Path| -> Result<String, ProbeError> {
        p.to_str()
            .map(|s| s.trim_start_matches("./").to_string())
            .ok_or_else(|| ProbeError::Format {
                what: format!("a file name under {}", spec.path),
                expected: "UTF-8".into(),
                reason: "the name is not UTF-8".into(),
            })
    };
    let mut out = Vec::new();
    let mut stack = vec![(start, 0usize)];
    while let Some((rel, depth)) = stack.pop() {
        if depth > 128 {
            return Err(ProbeError::invalid(
                "the directory is deeper than 128 levels",
            ));
        }
        let name = shown(&rel)?;
        let entries = if rel.as_os_str().is_empty() || rel == std::path::Path::new(".") {
            dir.entries()
        } else {
            dir.read_dir(&rel)
        }
        .map_err(|e| paths::open_error(&name, &e))?;
        for e in entries {
            let e = e.map_err(|e| paths::open_error(&name, &e))?;
            let child = rel.join(e.file_name());
            let child_name = shown(&child)?;
            let ft = e
                .file_type()
                .map_err(|e| paths::open_error(&child_name, &e))?;
            if ft.is_dir() {
                stack.push((child, depth + 1));
                continue;
            }
            if out.len() as u64 >= max_files {
                return Err(ProbeError::Oversize {
                    what: format!("files under {} (more than {max_files})", spec.path),
                    limit: max_files,
                });
            }
            let hash = if ft.is_symlink() {
                let target = dir
                    .read_link_contents(&child)
                    .map_err(|e| paths::open_error(&child_name, &e))?;
                let mut h = Sha256::new();
                h.update(b"symlink\0");
                h.update(target.as_os_str().as_encoded_bytes());
                hex::encode(h.finalize())
            } else if ft.is_file() {
                let (mut f, mode) =
                    open_regular(&dir, &child).map_err(|e| paths::open_error(&child_name, &e))?;
                let mut h = Sha256::new();
                // The permission bits are part of the file (a config made
                // world-writable, a script made setuid, is a change).
                h.update(format!("file {mode:o}\0").as_bytes());
                let mut buf = vec![0u8; 64 * 1024];
                let mut total: u64 = 0;
                loop {
                    let n = f
                        .read(&mut buf)
                        .map_err(|e| paths::open_error(&child_name, &e))?;
                    if n == 0 {
                        break;
                    }
                    total += n as u64;
                    if total > max_bytes {
                        return Err(ProbeError::Oversize {
                            what: format!("file {child_name}"),
                            limit: max_bytes,
                        });
                    }
                    h.update(&buf[..n]);
                }
                hex::encode(h.finalize())
            } else {
                hex::encode(Sha256::digest(b"other\0"))
            };
            out.push(path_item(child_name, hash));
        }
    }
    Ok(out)
}

/// Opens a file the walk listed as a regular file: not following a symlink, never
/// blocking, and only if it still is a regular file ([`paths::open_regular`]). Its
/// permission bits with it.
fn open_regular(
    dir: &cap_std::fs::Dir,
    path: &std::path::Path,
) -> std::io::Result<(cap_std::fs::File, u32)> {
    use cap_std::fs::PermissionsExt;
    let (f, meta) = paths::open_regular(dir, path, false)?;
    Ok((f, meta.permissions().mode() & 0o7777))
}

/// Every file of the tree at `rev`, by mode and blob id (objects verified by the
/// witness).
async fn git_tree(g: &GitTree, ctx: &Context) -> Result<Vec<Item>, ProbeError> {
    let dir = match &g.repo {
        Some(r) => ctx.root.join(paths::relative(r)?),
        None => ctx.root.clone(),
    };
    let w = crate::git::Witness::open(&dir, ctx.env.get("PATH").map(String::as_str)).await?;
    let rev = g.rev.as_deref().unwrap_or("HEAD");
    let commit = w.resolve(rev).await?.ok_or_else(|| ProbeError::Git {
        reason: format!("revision {rev:?} names no commit"),
    })?;
    let files = w.files_at(&commit).await?;
    files
        .into_iter()
        .map(|f| {
            let path = String::from_utf8(f.path).map_err(|_| ProbeError::Format {
                what: "a path in the git tree".into(),
                expected: "UTF-8".into(),
                reason: "the name is not UTF-8".into(),
            })?;
            Ok(path_item(path, format!("{:o}:{}", f.mode, f.oid)))
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn hashes(root: &std::path::Path) -> BTreeMap<String, String> {
        let spec = FilesSpec {
            path: "config".into(),
            max_files: None,
            max_bytes: None,
        };
        files(&spec, root)
            .unwrap()
            .into_iter()
            .map(|i| (i.fields["path"].as_str().unwrap().to_string(), i.sha256))
            .collect()
    }

    /// Attack (red16): a process renaming a FIFO over a file the walk had listed made
    /// the open block for ever (no writer), and the gate with it, past its time limit
    /// and SIGTERM. The open is refused at once; a regular file (twin) opens.
    #[test]
    fn a_fifo_where_a_file_was_listed_is_refused_without_blocking() {
        let d = tempfile::tempdir().unwrap();
        std::fs::write(d.path().join("plain"), "x").unwrap();
        rustix::fs::mknodat(
            rustix::fs::CWD,
            d.path().join("fifo"),
            rustix::fs::FileType::Fifo,
            rustix::fs::Mode::from_raw_mode(0o600),
            0,
        )
        .unwrap();
        let root = d.path().to_path_buf();
        let (tx, rx) = std::sync::mpsc::channel();
        std::thread::spawn(move || {
            let dir = paths::root_dir(&root).unwrap();
            let fifo = open_regular(&dir, std::path::Path::new("fifo")).map(|(_, m)| m);
            let plain = open_regular(&dir, std::path::Path::new("plain")).map(|(_, m)| m);
            let _ = tx.send((fifo.is_err(), plain.is_ok()));
        });
        let (fifo_refused, plain_opened) = rx
            .recv_timeout(std::time::Duration::from_secs(5))
            .expect("opening a FIFO blocked");
        assert!(fifo_refused, "a FIFO is not a regular file");
        assert!(plain_opened, "twin: a regular file opens");
    }

    /// Attack (red16): a row was hashed from its plain observation, where SQLite's
    /// BLOB x'cafe' reads as the text "cafe" and REAL infinity as the text "inf": an
    /// agent rewriting a value as another storage class with the same spelling made no
    /// change. Twin: rows left alone hash the same.
    #[tokio::test]
    async fn a_sqlite_value_rewritten_as_another_type_is_a_change() {
        let d = tempfile::tempdir().unwrap();
        let db = d.path().join("t.db");
        let sql = |q: &str| {
            let out = std::process::Command::new("python3")
                .args([
                    "-c",
                    "import sqlite3,sys; c=sqlite3.connect(sys.argv[1]); c.executescript(sys.argv[2]); c.commit()",
                ])
                .arg(&db)
                .arg(q)
                .output()
                .expect("python3 runs");
            assert!(
                out.status.success(),
                "{}",
                String::from_utf8_lossy(&out.stderr)
            );
        };
        sql("CREATE TABLE t(id INTEGER PRIMARY KEY, token, lim); \
             INSERT INTO t VALUES (1, 'cafe', 'inf'), (2, 'beef', 'x');");
        let source = SetSource::Sqlite(SqliteSpec {
            path: "t.db".into(),
            query: "SELECT id, token, lim FROM t ORDER BY id".into(),
            params: Vec::new(),
            max_rows: None,
        });
        let ctx = Context::from_process(d.path());
        let read = || async {
            read(&source, &ctx, Duration::from_secs(10))
                .await
                .unwrap()
                .into_iter()
                .map(|i| i.sha256)
                .collect::<Vec<_>>()
        };
        let before = read().await;
        assert_eq!(read().await, before, "twin: nothing changed");
        sql("UPDATE t SET token = x'cafe' WHERE id = 1;");
        let blob = read().await;
        assert_ne!(blob[0], before[0], "TEXT 'cafe' → BLOB x'cafe' is a change");
        assert_eq!(blob[1], before[1]);
        sql("UPDATE t SET token = 'cafe', lim = 1e999 WHERE id = 1;");
        assert_ne!(
            read().await[0],
            before[0],
            "TEXT 'inf' → REAL inf is a change"
        );
    }

    /// Attack (red16): only content was hashed, so a config made world-writable and
    /// setuid (`chmod 4777`) was no change. Twin: a file left alone hashes the same.
    #[test]
    fn a_chmod_is_a_change() {
        use std::os::unix::fs::PermissionsExt;
        let d = tempfile::tempdir().unwrap();
        std::fs::create_dir(d.path().join("config")).unwrap();
        for f in ["app.toml", "other.toml"] {
            let p = d.path().join("config").join(f);
            std::fs::write(&p, "mode = 'live'\n").unwrap();
            std::fs::set_permissions(&p, std::fs::Permissions::from_mode(0o600)).unwrap();
        }
        let before = hashes(d.path());
        assert_eq!(hashes(d.path()), before, "twin: nothing changed");
        std::fs::set_permissions(
            d.path().join("config/app.toml"),
            std::fs::Permissions::from_mode(0o4777),
        )
        .unwrap();
        let after = hashes(d.path());
        assert_ne!(after["config/app.toml"], before["config/app.toml"]);
        assert_eq!(after["config/other.toml"], before["config/other.toml"]);
    }
}
