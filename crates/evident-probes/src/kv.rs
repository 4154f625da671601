//! Redis readback: exactly one read command (GET, HGETALL or EXISTS), sizes checked
//! before the value is fetched.

use serde_json::{Map, Value};

use crate::error::ProbeError;
use crate::secret::{Scrubber, env_var};
use crate::spec::{RedisOp, RedisSpec};
use crate::{Context, Object};

pub const DEFAULT_MAX_BYTES: u64 = 1024 * 1024;
/// Most hash fields read by HGETALL.
pub const MAX_FIELDS: u64 = 10_000;

fn target(url: &str, env_name: &str) -> String {
    match url::Url::parse(url) {
        Ok(u) => format!(
            "redis {}:{} (${env_name})",
            u.host_str().unwrap_or("?"),
            u.port().unwrap_or(6379)
        ),
        Err(_) => format!("redis (${env_name})"),
    }
}

fn cmd_error(e: redis::RedisError) -> ProbeError {
    if e.is_io_error() || e.is_timeout() {
        ProbeError::Connect {
            target: "redis".into(),
            reason: e.to_string(),
        }
    } else {
        ProbeError::BadQuery {
            reason: e.to_string(),
        }
    }
}

fn utf8(b: Vec<u8>, what: &str) -> Result<String, ProbeError> {
    String::from_utf8(b).map_err(|e| ProbeError::Format {
        what: what.to_string(),
        expected: "UTF-8 text".into(),
        reason: e.utf8_error().to_string(),
    })
}

pub async fn observe(
    spec: &RedisSpec,
    ctx: &Context,
    scrub: &mut Scrubber,
) -> Result<Object, ProbeError> {
    let url = env_var(&ctx.env, &spec.url_env)?;
    scrub.add_url(url);
    let target = target(url, &spec.url_env);
    let max = spec.max_bytes.unwrap_or(DEFAULT_MAX_BYTES);
    let client = redis::Client::open(url).map_err(|_| {
        ProbeError::invalid(format!(
            "the value of ${} is not a usable redis:// URL (rediss:// TLS is not supported)",
            spec.url_env
        ))
    })?;
    let mut con = connect(&client, &target).await?;
    let mut obj = Map::new();
    observe_op(spec, &mut con, max, &mut obj).await?;
    Ok(obj)
}

async fn connect(
    client: &redis::Client,
    target: &str,
) -> Result<redis::aio::MultiplexedConnection, ProbeError> {
    let target = target.to_string();
    client
        .get_multiplexed_async_connection()
        .await
        .map_err(|e| {
            if e.is_connection_refusal() {
                ProbeError::ConnectionRefused {
                    target: target.clone(),
                }
            } else if e.is_io_error() || e.is_timeout() {
                ProbeError::Connect {
                    target: target.clone(),
                    reason: e.to_string(),
                }
            } else {
                ProbeError::Database {
                    target: target.clone(),
                    reason: e.to_string(),
                }
            }
        })
}

async fn observe_op(
    spec: &RedisSpec,
    con: &mut redis::aio::MultiplexedConnection,
    max: u64,
    obj: &mut Object,
) -> Result<(), ProbeError> {
    match spec.op {
        RedisOp::Exists => {
            let n: i64 = redis::cmd("EXISTS")
                .arg(&spec.key)
                .query_async(&mut *con)
                .await
                .map_err(cmd_error)?;
            obj.insert("exists".into(), Value::Bool(n > 0));
        }
        RedisOp::Get => {
            // STRLEN fails with WRONGTYPE on a non-string, as GET would.
            let len: u64 = redis::cmd("STRLEN")
                .arg(&spec.key)
                .query_async(&mut *con)
                .await
                .map_err(cmd_error)?;
            if len > max {
                return Err(ProbeError::Oversize {
                    what: format!("value of key {:?} ({len} bytes)", spec.key),
                    limit: max,
                });
            }
            let v: Option<Vec<u8>> = redis::cmd("GET")
                .arg(&spec.key)
                .query_async(&mut *con)
                .await
                .map_err(cmd_error)?;
            obj.insert("exists".into(), Value::Bool(v.is_some()));
            let value = match v {
                Some(b) => Value::from(utf8(b, &format!("value of key {:?}", spec.key))?),
                None => Value::Null,
            };
            obj.insert("value".into(), value);
        }
        RedisOp::Hgetall => {
            let n: u64 = redis::cmd("HLEN")
                .arg(&spec.key)
                .query_async(&mut *con)
                .await
                .map_err(cmd_error)?;
            if n > MAX_FIELDS {
                return Err(ProbeError::Oversize {
                    what: format!("hash {:?} ({n} fields)", spec.key),
                    limit: MAX_FIELDS,
                });
            }
            let pairs: Vec<(Vec<u8>, Vec<u8>)> = redis::cmd("HGETALL")
                .arg(&spec.key)
                .query_async(&mut *con)
                .await
                .map_err(cmd_error)?;
            let total: u64 = pairs.iter().map(|(k, v)| (k.len() + v.len()) as u64).sum();
            if total > max {
                return Err(ProbeError::Oversize {
                    what: format!("hash {:?} ({total} bytes)", spec.key),
                    limit: max,
                });
            }
            obj.insert("exists".into(), Value::Bool(!pairs.is_empty()));
            let mut fields = Map::new();
            for (k, v) in pairs {
                let k = utf8(k, &format!("a field name of hash {:?}", spec.key))?;
                let v = utf8(v, &format!("field {k:?} of hash {:?}", spec.key))?;
                fields.insert(k, Value::from(v));
            }
            obj.insert("fields".into(), Value::Object(fields));
        }
    }
    Ok(())
}

/// Every key matching `spec.pattern` (SCAN, never KEYS), each with the sha256 of its
/// DUMP (type and value; an expired key is left out).
pub async fn scan(
    spec: &crate::sets::RedisKeys,
    ctx: &Context,
    scrub: &mut Scrubber,
) -> Result<Vec<crate::sets::Item>, ProbeError> {
    use sha2::{Digest, Sha256};
    let url = env_var(&ctx.env, &spec.url_env)?;
    scrub.add_url(url);
    let target = target(url, &spec.url_env);
    let client = redis::Client::open(url).map_err(|_| {
        ProbeError::invalid(format!(
            "the value of ${} is not a usable redis:// URL (rediss:// TLS is not supported)",
            spec.url_env
        ))
    })?;
    let mut con = connect(&client, &target).await?;
    let max = spec.max_keys.unwrap_or(crate::sets::DEFAULT_MAX_ITEMS);
    let mut keys: std::collections::BTreeSet<Vec<u8>> = std::collections::BTreeSet::new();
    let mut cursor: u64 = 0;
    loop {
        let (next, batch): (u64, Vec<Vec<u8>>) = redis::cmd("SCAN")
            .arg(cursor)
            .arg("MATCH")
            .arg(&spec.pattern)
            .arg("COUNT")
            .arg(1000)
            .query_async(&mut con)
            .await
            .map_err(cmd_error)?;
        keys.extend(batch);
        if keys.len() as u64 > max {
            return Err(ProbeError::Oversize {
                what: format!("keys matching {:?} (more than {max})", spec.pattern),
                limit: max,
            });
        }
        cursor = next;
        if cursor == 0 {
            break;
        }
    }
    let mut out = Vec::with_capacity(keys.len());
    // PEXPIRETIME (Redis 7) names the moment a key expires; an older server only says
    // whether it will (PTTL's sign).
    let mut exact_expiry = true;
    for key in keys {
        let dump: Option<Vec<u8>> = redis::cmd("DUMP")
            .arg(&key)
            .query_async(&mut con)
            .await
            .map_err(cmd_error)?;
        let Some(dump) = dump else { continue };
        let Some(expiry) = expiry(&mut con, &key, &mut exact_expiry).await? else {
            continue;
        };
        let name = utf8(key, "a key name")?;
        let mut fields = Map::new();
        fields.insert("key".into(), Value::from(name));
        // DUMP carries no expiry: an EXPIRE set on a key (it will vanish) or a PERSIST
        // (a temporary key made permanent) is a change too.
        let mut h = Sha256::new();
        h.update(&dump);
        h.update(format!("\0expiry:{expiry}").as_bytes());
        out.push(crate::sets::Item {
            fields,
            sha256: hex::encode(h.finalize()),
        });
    }
    Ok(out)
}

/// A key's expiry as hashed: the absolute time in ms (`-1` when it has none), or with
/// a server before Redis 7 `expires`/`-1`; `None` when the key went away meanwhile.
async fn expiry(
    con: &mut redis::aio::MultiplexedConnection,
    key: &[u8],
    exact: &mut bool,
) -> Result<Option<String>, ProbeError> {
    if *exact {
        match redis::cmd("PEXPIRETIME")
            .arg(key)
            .query_async::<i64>(con)
            .await
        {
            Ok(-2) => return Ok(None),
            Ok(t) => return Ok(Some(t.to_string())),
            Err(e)
                if e.to_string()
                    .to_ascii_lowercase()
                    .contains("unknown command") =>
            {
                *exact = false;
            }
            Err(e) => return Err(cmd_error(e)),
        }
    }
    let ttl: i64 = redis::cmd("PTTL")
        .arg(key)
        .query_async(con)
        .await
        .map_err(cmd_error)?;
    Ok(match ttl {
        -2 => None,
        -1 => Some("-1".into()),
        _ => Some("expires".into()),
    })
}
