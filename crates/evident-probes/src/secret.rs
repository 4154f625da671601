//! Secrets come from the environment by name and never leave in output: every value a
//! probe reads from the environment is registered with a [`Scrubber`], which replaces
//! it in error messages and captured output; URLs are printed with their password
//! replaced.

use std::collections::BTreeMap;

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

use crate::error::ProbeError;

/// A value written literally in the contract, or `{ env = "NAME" }`: read from the
/// environment at observation time and treated as a secret (never printed).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(untagged)]
pub enum EnvValue {
    /// A literal, written in the contract (so not a secret).
    Literal(String),
    /// The value of an environment variable, scrubbed from all output.
    Env(EnvRef),
}

/// `{ env = "NAME" }`: the value of the environment variable NAME.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct EnvRef {
    pub env: String,
}

/// Values shorter than this are not scrubbed: replacing every "1" or "yes" in a message
/// would make it unreadable, and such a value cannot be a meaningful secret.
pub const MIN_SCRUB_LEN: usize = 4;

/// Query-string values of env-held URLs shorter than this are taken as plain options.
pub const MIN_QUERY_SECRET_LEN: usize = 8;

/// The secrets one observation has touched; replaces each with `***`.
#[derive(Debug, Default, Clone)]
pub struct Scrubber {
    secrets: Vec<String>,
}

impl Scrubber {
    pub fn add(&mut self, secret: &str) {
        if secret.len() >= MIN_SCRUB_LEN && !self.secrets.iter().any(|s| s == secret) {
            self.secrets.push(secret.to_string());
            // Longest first, so a secret containing another is replaced whole.
            self.secrets.sort_by_key(|s| std::cmp::Reverse(s.len()));
        }
    }

    /// Register a URL read from the environment: the whole URL, and its password both
    /// raw and percent-decoded (drivers print either).
    pub fn add_url(&mut self, url: &str) {
        self.add(url);
        if let Ok(u) = url::Url::parse(url) {
            if let Some(p) = u.password() {
                self.add(p);
                if let Ok(decoded) = percent_decode(p) {
                    self.add(&decoded);
                }
            }
            // Tokens travel in query strings too (`?api_key=...`); a server may echo
            // them back in a redirect or an error page. Only values of token length:
            // `?format=json` must not blank out every "json" in the output.
            let mut values: Vec<String> = u.query_pairs().map(|(_, v)| v.into_owned()).collect();
            if let Some(q) = u.query() {
                values.extend(
                    q.split('&')
                        .filter_map(|p| p.split_once('='))
                        .map(|(_, v)| v.to_string()),
                );
            }
            for v in values.iter().filter(|v| v.len() >= MIN_QUERY_SECRET_LEN) {
                self.add(v);
            }
        }
    }

    /// Scrub every string (keys included) of an observed value.
    pub fn scrub_value(&self, v: serde_json::Value) -> serde_json::Value {
        use serde_json::Value;
        if self.secrets.is_empty() {
            return v;
        }
        match v {
            Value::String(s) => Value::String(self.scrub(&s)),
            Value::Array(a) => Value::Array(a.into_iter().map(|x| self.scrub_value(x)).collect()),
            Value::Object(m) => Value::Object(
                m.into_iter()
                    .map(|(k, x)| (self.scrub(&k), self.scrub_value(x)))
                    .collect(),
            ),
            other => other,
        }
    }

    /// Scrub text that was cut at a size limit: a secret cut in half at the end is
    /// removed too, so not even its first characters show.
    pub fn scrub_cut(&self, text: &str) -> String {
        let mut out = self.scrub(text);
        for s in &self.secrets {
            let cut = (MIN_SCRUB_LEN.saturating_sub(1)..s.len())
                .rev()
                .filter(|&k| k > 0 && s.is_char_boundary(k))
                .find(|&k| out.ends_with(&s[..k]));
            if let Some(k) = cut {
                out.truncate(out.len() - k);
                out.push_str("***");
            }
        }
        out
    }

    pub fn scrub(&self, text: &str) -> String {
        let mut out = text.to_string();
        for s in &self.secrets {
            if out.contains(s.as_str()) {
                out = out.replace(s.as_str(), "***");
            }
        }
        out
    }
}

fn percent_decode(s: &str) -> Result<String, ()> {
    let bytes = s.as_bytes();
    let mut out = Vec::with_capacity(bytes.len());
    let mut i = 0;
    while i < bytes.len() {
        if bytes[i] == b'%' && i + 2 < bytes.len() {
            let hex = std::str::from_utf8(&bytes[i + 1..i + 3]).map_err(|_| ())?;
            out.push(u8::from_str_radix(hex, 16).map_err(|_| ())?);
            i += 3;
        } else {
            out.push(bytes[i]);
            i += 1;
        }
    }
    String::from_utf8(out).map_err(|_| ())
}

/// A URL safe to print: the password (if any) replaced by `***`. Unparseable input is
/// not echoed at all.
pub fn redact_url(url: &str) -> String {
    match url::Url::parse(url) {
        Ok(mut u) => {
            if u.password().is_some() {
                let _ = u.set_password(Some("***"));
            }
            u.to_string()
        }
        Err(_) => "<unparseable URL>".to_string(),
    }
}

/// Read a variable from the context's environment snapshot.
pub fn env_var<'a>(env: &'a BTreeMap<String, String>, name: &str) -> Result<&'a str, ProbeError> {
    env.get(name)
        .map(String::as_str)
        .ok_or_else(|| ProbeError::EnvMissing {
            name: name.to_string(),
        })
}

/// Resolve a literal-or-env value, registering env values as secrets.
pub fn resolve(
    v: &EnvValue,
    env: &BTreeMap<String, String>,
    scrub: &mut Scrubber,
) -> Result<String, ProbeError> {
    match v {
        EnvValue::Literal(s) => Ok(s.clone()),
        EnvValue::Env(r) => {
            let val = env_var(env, &r.env)?;
            scrub.add(val);
            Ok(val.to_string())
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn redacts_password() {
        assert_eq!(
            redact_url("postgres://u:s3cret@h:5432/db"),
            "postgres://u:***@h:5432/db"
        );
        assert_eq!(redact_url("not a url"), "<unparseable URL>");
    }

    #[test]
    fn scrubs_raw_and_decoded_password() {
        let mut s = Scrubber::default();
        s.add_url("mysql://root:p%40ssword@127.0.0.1/x");
        assert_eq!(s.scrub("bad p@ssword and p%40ssword"), "bad *** and ***");
    }

    #[test]
    fn query_tokens_but_not_options() {
        let mut s = Scrubber::default();
        s.add_url("http://h/x?format=json&api_key=k3y-0123456789");
        assert_eq!(
            s.scrub("application/json k3y-0123456789"),
            "application/json ***"
        );
    }

    #[test]
    fn cut_secret_is_removed() {
        let mut s = Scrubber::default();
        s.add("abcdefgh");
        assert_eq!(s.scrub_cut("token=abcde"), "token=***");
        assert_eq!(s.scrub_cut("token=abcdefgh!"), "token=***!");
        assert_eq!(s.scrub_cut("token=xy"), "token=xy");
    }

    #[test]
    fn percent_decode_edges() {
        assert_eq!(percent_decode("a%4").unwrap(), "a%4");
        assert_eq!(percent_decode("%41%").unwrap(), "A%");
        assert!(percent_decode("%zz").is_err());
    }
}
