//! Secrets never reach the ledger or a message.
//!
//! - [`redact_value`] replaces secrets in a document before it is stored: the value of
//!   any object key that names a secret (`password`, `token`, `secret`, `api_key`,
//!   `authorization`, `cookie`, `private_key`, `credential`, … in any case, anywhere in
//!   the key: `DATABASE_PASSWORD`, `X-Api-Key`), the password in any URL written as
//!   `scheme://user:password@host`, and the token after `Bearer ` / `Basic `.
//! - [`redact_dsn`] hides the password of one connection string for messages.

use serde_json::{Map, Value};

/// What a removed secret is replaced with.
pub const REDACTED: &str = "[redacted]";

const SECRET_WORDS: &[&str] = &[
    "password",
    "passwd",
    "passphrase",
    "secret",
    "token",
    "apikey",
    "api_key",
    "api-key",
    "authorization",
    "cookie",
    "private_key",
    "privatekey",
    "private-key",
    "credential",
    "session_key",
    "access_key",
    "signing_key",
];

/// Does this object key name a secret?
pub fn is_secret_key(key: &str) -> bool {
    let k = key.as_bytes();
    if k.len() < 5 {
        return false;
    }
    let has = |w: &str| contains_ignore_ascii_case(k, w.as_bytes());
    // "tokens_used"/"max_tokens" are counts, not secrets.
    if has("tokens") && !has("secret") && !has("password") {
        return false;
    }
    SECRET_WORDS.iter().any(|w| has(w))
}

fn contains_ignore_ascii_case(hay: &[u8], needle: &[u8]) -> bool {
    hay.len() >= needle.len()
        && hay
            .windows(needle.len())
            .any(|w| w.eq_ignore_ascii_case(needle))
}

/// A copy of `value` with secrets replaced by [`REDACTED`].
pub fn redact_value(value: &Value) -> Value {
    match value {
        Value::Object(map) => {
            let mut out = Map::with_capacity(map.len());
            for (k, v) in map {
                let nv = if is_secret_key(k) && !is_empty_value(v) {
                    Value::String(REDACTED.into())
                } else {
                    redact_value(v)
                };
                out.insert(k.clone(), nv);
            }
            Value::Object(out)
        }
        Value::Array(items) => Value::Array(items.iter().map(redact_value).collect()),
        Value::String(s) => Value::String(redact_text(s)),
        other => other.clone(),
    }
}

/// [`redact_value`] without the copy: secrets in `value` are replaced where they are
/// (for large documents the ledger owns).
pub fn redact_in_place(value: &mut Value) {
    match value {
        Value::Object(map) => {
            for (k, v) in map.iter_mut() {
                if is_secret_key(k) && !is_empty_value(v) {
                    *v = Value::String(REDACTED.into());
                } else {
                    redact_in_place(v);
                }
            }
        }
        Value::Array(items) => items.iter_mut().for_each(redact_in_place),
        Value::String(s) if needs_text_redaction(s) => *s = redact_text(s),
        _ => {}
    }
}

fn needs_text_redaction(s: &str) -> bool {
    (s.contains("://") && s.contains('@'))
        || s.contains("earer ")
        || s.contains("asic ")
        || s.contains("oken ")
}

fn is_empty_value(v: &Value) -> bool {
    match v {
        Value::Null | Value::Bool(_) => true,
        Value::String(s) => s.is_empty(),
        _ => false,
    }
}

/// Redact URL passwords and `Bearer`/`Basic` tokens inside free text.
pub fn redact_text(s: &str) -> String {
    // Fast path: most strings hold neither a URL with credentials nor an auth scheme.
    if !needs_text_redaction(s) {
        return s.to_string();
    }
    let url = s.contains("://") && s.contains('@');
    let s = if url { redact_urls(s) } else { s.to_string() };
    redact_auth_schemes(&s)
}

/// `scheme://user:password@host` → `scheme://user:[redacted]@host`, everywhere in `s`.
fn redact_urls(s: &str) -> String {
    let mut out = String::with_capacity(s.len());
    let mut rest = s;
    while let Some(pos) = rest.find("://") {
        let (head, tail) = rest.split_at(pos + 3);
        out.push_str(head);
        // The authority ends at the first '/', '?', '#' or whitespace.
        let end = tail
            .find(|c: char| c == '/' || c == '?' || c == '#' || c.is_whitespace())
            .unwrap_or(tail.len());
        let authority = &tail[..end];
        match authority.rfind('@') {
            Some(at) => {
                let userinfo = &authority[..at];
                match userinfo.find(':') {
                    Some(colon) => {
                        out.push_str(&userinfo[..colon]);
                        out.push(':');
                        out.push_str(REDACTED);
                    }
                    None => out.push_str(userinfo),
                }
                out.push_str(&authority[at..]);
            }
            None => out.push_str(authority),
        }
        rest = &tail[end..];
    }
    out.push_str(rest);
    out
}

fn redact_auth_schemes(s: &str) -> String {
    let mut out = s.to_string();
    for scheme in ["Bearer ", "bearer ", "Basic ", "basic ", "Token ", "token "] {
        let mut from = 0;
        while let Some(found) = out[from..].find(scheme) {
            let start = from + found + scheme.len();
            let end = out[start..]
                .find(|c: char| c.is_whitespace() || c == '"' || c == '\'' || c == ',')
                .map_or(out.len(), |e| start + e);
            // Only a token-looking run (at least 8 chars) is a credential.
            if end - start >= 8 && !out[start..end].starts_with('[') {
                out.replace_range(start..end, REDACTED);
                from = start + REDACTED.len();
            } else {
                from = start;
            }
            if from >= out.len() {
                break;
            }
        }
    }
    out
}

/// A ledger location or DSN with any password hidden, for messages.
pub fn redact_dsn(location: &str) -> String {
    let once = redact_urls(location);
    // Also every credential-named `key=value` in key/value connection strings and query
    // strings (`password=`, `sslpassword=`, `token=`, `api_key=` …), whatever its length.
    let mut out = String::with_capacity(once.len());
    let mut rest = once.as_str();
    while let Some((start, end)) = next_credential(rest) {
        out.push_str(&rest[..start]);
        out.push_str(REDACTED);
        rest = &rest[end..];
    }
    out.push_str(rest);
    out
}

/// Query and connection-string parameters that carry a credential.
pub const CREDENTIAL_KEYS: &[&str] = &[
    "password",
    "sslpassword",
    "passfile",
    "sslkey",
    "token",
    "access_token",
    "api_key",
    "apikey",
    "secret",
    "auth",
    "key",
];

/// The byte range of the first credential value (`key=VALUE`) in `text`.
fn next_credential(text: &str) -> Option<(usize, usize)> {
    let lower = text.to_ascii_lowercase();
    let mut from = 0;
    while let Some(eq) = lower[from..].find('=').map(|i| from + i) {
        let key_start = lower[..eq]
            .rfind(|c: char| c == '?' || c == '&' || c == ';' || c.is_whitespace())
            .map_or(0, |i| i + 1);
        let key = &lower[key_start..eq];
        if CREDENTIAL_KEYS.contains(&key) {
            let start = eq + 1;
            let end = text[start..]
                .find(|c: char| c == '&' || c.is_whitespace() || c == ';' || c == '#')
                .map_or(text.len(), |e| start + e);
            if end > start {
                return Some((start, end));
            }
        }
        from = eq + 1;
    }
    None
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_credential_parameter_of_a_ledger_location_is_hidden() {
        let shown = redact_dsn(
            "postgres://u@db/ledger?sslmode=require&token=ab1&sslpassword=x&api_key=k9&schema=evident",
        );
        assert_eq!(
            shown,
            format!(
                "postgres://u@db/ledger?sslmode=require&token={REDACTED}&sslpassword={REDACTED}&api_key={REDACTED}&schema=evident"
            )
        );
        assert_eq!(
            redact_dsn("host=db password=hunter2 user=u"),
            format!("host=db password={REDACTED} user=u")
        );
    }
    use serde_json::json;

    #[test]
    fn dsn_passwords_are_hidden() {
        assert_eq!(
            redact_dsn("postgres://alice:s3cr%40t@db.example:5432/ledger"),
            "postgres://alice:[redacted]@db.example:5432/ledger"
        );
        assert_eq!(
            redact_dsn("postgres://alice@db/ledger?password=hunter2&sslmode=require"),
            "postgres://alice@db/ledger?password=[redacted]&sslmode=require"
        );
        assert_eq!(redact_dsn("postgres://db/x"), "postgres://db/x");
        assert_eq!(redact_dsn(".evident/ledger.db"), ".evident/ledger.db");
        // A password holding '@' and '/' characters unescaped.
        let r = redact_dsn("postgres://u:p@ss@host/db");
        assert!(!r.contains("p@ss"), "{r}");
    }

    #[test]
    fn documents_lose_their_secrets() {
        let doc = json!({
            "source": { "postgres": { "url": "postgres://app:topsecret@10.0.0.5/billing", "query": "SELECT 1" } },
            "env": { "DATABASE_PASSWORD": "pw1", "PATH": "/usr/bin" },
            "headers": { "Authorization": "Bearer abcdefghijklmnop", "Accept": "application/json" },
            "note": "called with Bearer zzzzzzzzzzzzzz then",
            "api_key": 12345,
            "usage": { "max_tokens": 100 },
            "list": [{ "token": "t0k3n-value" }],
            "password": ""
        });
        let r = redact_value(&doc);
        let text = r.to_string();
        for secret in [
            "topsecret",
            "pw1",
            "abcdefghijklmnop",
            "zzzzzzzzzzzzzz",
            "12345",
            "t0k3n-value",
        ] {
            assert!(!text.contains(secret), "{secret} leaked: {text}");
        }
        let mut in_place = doc.clone();
        redact_in_place(&mut in_place);
        assert_eq!(in_place, r);
        assert_eq!(r["usage"]["max_tokens"], json!(100));
        assert_eq!(r["env"]["PATH"], json!("/usr/bin"));
        assert_eq!(r["source"]["postgres"]["query"], json!("SELECT 1"));
        assert_eq!(
            r["source"]["postgres"]["url"],
            json!("postgres://app:[redacted]@10.0.0.5/billing")
        );
    }
}
