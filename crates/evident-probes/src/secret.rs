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
    /// The variable's name; its value is read at run time and scrubbed from all output.
    pub env: String,
}

/// Values shorter than this are not scrubbed: replacing every "1" or "yes" in a message
/// would make it unreadable, and such a value cannot be a meaningful secret. This holds
/// for secrets known only as a whole value (a header, a command variable, a URL);
/// the credential parts of a URL or DSN ([`is_credential_param`], the userinfo
/// password) are scrubbed whatever their length, since their meaning is known.
pub const MIN_SCRUB_LEN: usize = 4;

/// Query-string values of env-held URLs under names that are not known credentials
/// are still taken as secrets from this length on (a token under an unusual name);
/// shorter ones are plain options (`?format=json` must not blank out every "json").
pub const MIN_QUERY_SECRET_LEN: usize = 8;

/// Does this query-string (or `key=value` DSN) parameter carry a credential? Case,
/// `-`, `_` and `.` are ignored: `password`, `sslpassword`, `passfile`, `sslkey`,
/// `token`, `access_token`, `api_key`, `apikey`, `X-Api-Key`, `secret`, `auth`, `key`,
/// `client_secret`, `X-Amz-Signature`, ... and any name containing `password`,
/// `passwd`, `secret` or `credential`, or ending in `token`, `apikey` or `key`.
pub fn is_credential_param(name: &str) -> bool {
    let n: String = name
        .chars()
        .filter(|c| !matches!(c, '-' | '_' | '.'))
        .flat_map(char::to_lowercase)
        .collect();
    const EXACT: &[&str] = &[
        "pass",
        "pwd",
        "passfile",
        "sslkey",
        "auth",
        "authorization",
        "sig",
        "signature",
        "jwt",
        "bearer",
        "session",
        "sessionid",
        "otp",
        "xamzsignature",
        "xamzcredential",
    ];
    EXACT.contains(&n.as_str())
        || ["password", "passwd", "secret", "credential"]
            .iter()
            .any(|w| n.contains(w))
        || ["token", "key"].iter().any(|w| n.ends_with(w))
}

/// `Scheme credentials` as an `Authorization`-style header value holds them, for the
/// schemes whose credentials are a secret on their own (RFC 9110 §11.4 and common API
/// schemes): the scheme and the credentials, trimmed.
fn auth_scheme(value: &str) -> Option<(&str, &str)> {
    const SCHEMES: &[&str] = &[
        "bearer",
        "basic",
        "token",
        "digest",
        "negotiate",
        "apikey",
        "api-key",
        "key",
        "dpop",
        "mac",
        "hmac",
        "sso-key",
        "otp",
    ];
    let (scheme, credentials) = value.trim().split_once(char::is_whitespace)?;
    let credentials = credentials.trim();
    let known = SCHEMES.iter().any(|s| s.eq_ignore_ascii_case(scheme));
    (known && !credentials.is_empty()).then_some((scheme, credentials))
}

/// A URL's user name without a password is taken for a token from this length on
/// (GitHub's `https://TOKEN@github.com` form); user names are shorter.
pub const MIN_USER_TOKEN_LEN: usize = 16;

/// The `key=value` pairs of a connection string, as the drivers read them: with a `;`,
/// ADO/JDBC's `Server=db;User Id=app;Password=a b c` (a value runs to the `;`);
/// otherwise libpq's `host=db password = 'a b\'c'` (blanks around `=`, a value in
/// single quotes with `\'` and `\\` escapes, or a bare word). Splitting at blanks
/// alone lost `password = x` and the tail of a quoted value.
fn conn_pairs(s: &str) -> Vec<(String, String)> {
    if s.contains(';') {
        return s
            .split(';')
            .filter_map(|p| p.split_once('='))
            .map(|(k, v)| (k.trim().to_string(), v.trim().to_string()))
            .collect();
    }
    let mut out = Vec::new();
    let mut chars = s.chars().peekable();
    loop {
        while chars.next_if(|c| c.is_whitespace()).is_some() {}
        let mut key = String::new();
        while let Some(c) = chars.next_if(|c| !c.is_whitespace() && *c != '=') {
            key.push(c);
        }
        if chars.peek().is_none() {
            break;
        }
        while chars.next_if(|c| c.is_whitespace()).is_some() {}
        if chars.next_if_eq(&'=').is_none() {
            // A word without `=`: not a pair; go on with the next one.
            continue;
        }
        while chars.next_if(|c| c.is_whitespace()).is_some() {}
        let mut value = String::new();
        if chars.next_if_eq(&'\'').is_some() {
            while let Some(c) = chars.next() {
                match c {
                    '\\' => value.extend(chars.next()),
                    '\'' => break,
                    c => value.push(c),
                }
            }
        } else {
            while let Some(c) = chars.next_if(|c| !c.is_whitespace()) {
                if c == '\\' {
                    value.extend(chars.next());
                } else {
                    value.push(c);
                }
            }
        }
        out.push((key, value));
    }
    out
}

/// The shortest secret whose encodings (hex, base64) are scrubbed too.
pub const MIN_ENCODED_LEN: usize = 8;

/// The secrets one observation has touched; replaces each with `***`.
#[derive(Debug, Default, Clone)]
pub struct Scrubber {
    secrets: Vec<String>,
}

impl Scrubber {
    /// Register a secret value read from the environment. When it is a URL or a
    /// `key=value` connection string, its credential parts are registered too (a
    /// program may print the password alone, or the URL re-encoded).
    pub fn add(&mut self, secret: &str) {
        self.add_min(secret, MIN_SCRUB_LEN);
        self.add_encodings(secret);
        self.add_parts(secret);
    }

    /// The secret as the agent's code might print it to slip past an exact match: hex
    /// (either case) and base64 (standard and URL-safe, at each of the three byte
    /// alignments it can have inside a longer encoded text, keeping only the groups the
    /// secret alone decides). Only for secrets of at least [`MIN_ENCODED_LEN`] bytes,
    /// so an encoding never matches ordinary text by chance.
    fn add_encodings(&mut self, secret: &str) {
        use base64::Engine as _;
        let bytes = secret.as_bytes();
        if bytes.len() < MIN_ENCODED_LEN {
            return;
        }
        self.add_min(&hex::encode(bytes), MIN_ENCODED_LEN);
        self.add_min(&hex::encode_upper(bytes), MIN_ENCODED_LEN);
        for engine in [
            &base64::engine::general_purpose::STANDARD_NO_PAD,
            &base64::engine::general_purpose::URL_SAFE_NO_PAD,
        ] {
            for skip in 0..3 {
                let rest = &bytes[skip..];
                let whole = rest.len() / 3 * 3;
                if whole >= 6 {
                    self.add_min(&engine.encode(&rest[..whole]), MIN_ENCODED_LEN);
                }
            }
        }
    }

    /// Register a URL read from the environment: the whole URL, its password raw and
    /// percent-decoded (drivers print either), and its query (and fragment) values
    /// under credential names whatever their length, others from
    /// [`MIN_QUERY_SECRET_LEN`].
    pub fn add_url(&mut self, url: &str) {
        self.add(url);
    }

    fn add_min(&mut self, secret: &str, min: usize) {
        if secret.len() >= min.max(1) && !self.secrets.iter().any(|s| s == secret) {
            self.secrets.push(secret.to_string());
            // Longest first, so a secret containing another is replaced whole.
            self.secrets.sort_by_key(|s| std::cmp::Reverse(s.len()));
        }
    }

    /// A credential: raw and percent-decoded, any length.
    fn add_credential(&mut self, value: &str) {
        self.add_min(value, 1);
        if let Ok(decoded) = percent_decode(value) {
            self.add_min(&decoded, 1);
        }
        if value.contains('+') {
            // Form-encoding: `+` is a space.
            self.add_min(&value.replace('+', " "), 1);
        }
    }

    /// One `key=value` of a query string or connection string. With `only_credentials`
    /// (a value that is not a secret as a whole: an inherited variable) only parameters
    /// whose name means a credential count.
    fn add_pair(&mut self, k: &str, v: &str, only_credentials: bool) {
        let k = percent_decode(k).unwrap_or_else(|_| k.to_string());
        let v = v.trim_matches(|c| c == '\'' || c == '"');
        if v.is_empty() {
            return;
        }
        if is_credential_param(k.trim()) {
            self.add_credential(v);
        } else if !only_credentials && v.len() >= MIN_QUERY_SECRET_LEN {
            self.add_min(v, MIN_QUERY_SECRET_LEN);
            if let Ok(d) = percent_decode(v) {
                self.add_min(&d, MIN_QUERY_SECRET_LEN);
            }
        }
    }

    fn add_pairs<'a>(&mut self, pairs: impl Iterator<Item = &'a str>, only_credentials: bool) {
        for pair in pairs {
            if let Some((k, v)) = pair.split_once('=') {
                self.add_pair(k, v, only_credentials);
            }
        }
    }

    fn add_parts(&mut self, value: &str) {
        self.add_parts_as(value, false);
    }

    /// Register only the credential parts of a value that is not itself a secret — a
    /// variable a command merely inherits (`inherit_env`): the password of a URL held
    /// there (`DATABASE_URL`), its credential parameters, the credentials of an
    /// `Authorization`-style value. `PATH` or `HOME` have none and stay readable.
    pub fn add_credentials_of(&mut self, value: &str) {
        self.add_parts_as(value, true);
    }

    fn add_parts_as(&mut self, value: &str, only_credentials: bool) {
        if let Some((scheme, credentials)) = auth_scheme(value) {
            // `Authorization: Bearer <token>`: the server the header is sent to may echo
            // the token alone, without its scheme; Basic's password may come back decoded.
            self.add_credential(credentials);
            self.add_encodings(credentials);
            if scheme.eq_ignore_ascii_case("basic") {
                self.add_basic(credentials);
            }
            return;
        }
        if let Some((_, rest)) = value.split_once("://") {
            // The userinfo password, read by hand too: a URL the url crate refuses
            // may still be printed by a driver.
            // Up to the query, so that a password holding an unescaped '/' is whole.
            let before_query = rest.split(['?', '#']).next().unwrap_or("");
            if let Some((userinfo, _)) = before_query.rsplit_once('@')
                && let Some((_, password)) = userinfo.split_once(':')
                && !password.is_empty()
            {
                self.add_credential(password);
            }
            if let Ok(u) = url::Url::parse(value)
                && let Some(p) = u.password()
            {
                self.add_credential(p);
            }
            self.add_user_token(before_query.split('/').next().unwrap_or(""));
            let after = rest.split_once(['?', '#']).map_or("", |(_, q)| q);
            self.add_pairs(after.split(['&', ';', '#', '?']), only_credentials);
        } else if value.contains('=') {
            // libpq / JDBC-style `host=db user=app password=hunter2` or `a=b;c=d`.
            for (k, v) in conn_pairs(value) {
                self.add_pair(&k, &v, only_credentials);
            }
        }
    }

    /// A user name with no password in a URL's authority is the credential itself when
    /// it is token-long: `https://ghp_…@github.com`, `https://sk_live_…:@api.stripe.com`.
    /// reqwest sends it as `Basic base64(user:)`, which the server may echo either way.
    /// Shorter user names (`postgres://postgres@db`) are plain names.
    fn add_user_token(&mut self, authority: &str) {
        let Some((userinfo, _)) = authority.rsplit_once('@') else {
            return;
        };
        let user = match userinfo.split_once(':') {
            Some((user, "")) => user,
            Some(_) => return,
            None => userinfo,
        };
        if user.len() < MIN_USER_TOKEN_LEN {
            return;
        }
        self.add_min(user, MIN_USER_TOKEN_LEN);
        if let Ok(d) = percent_decode(user) {
            self.add_min(&d, MIN_USER_TOKEN_LEN);
        }
        self.add_encodings(user);
        self.add_encodings(&format!("{user}:"));
    }

    /// Basic credentials: base64 of `user:password`; the decoded pair and the password.
    fn add_basic(&mut self, credentials: &str) {
        use base64::Engine as _;
        let Ok(bytes) = base64::engine::general_purpose::STANDARD.decode(credentials.trim()) else {
            return;
        };
        let Ok(pair) = String::from_utf8(bytes) else {
            return;
        };
        self.add_min(&pair, MIN_SCRUB_LEN);
        if let Some((_, password)) = pair.split_once(':')
            && !password.is_empty()
        {
            self.add_credential(password);
        }
    }

    /// Every secret of `other` too.
    pub fn extend(&mut self, other: &Scrubber) {
        for s in &other.secrets {
            self.add_min(s, 1);
        }
    }

    /// No secret registered.
    pub fn is_empty(&self) -> bool {
        self.secrets.is_empty()
    }

    /// [`Scrubber::scrub`] over bytes: each valid UTF-8 run is scrubbed, other bytes
    /// are kept as they are, so a text holding no secret comes back byte for byte.
    pub fn scrub_bytes(&self, bytes: &[u8]) -> Vec<u8> {
        let mut out = Vec::with_capacity(bytes.len());
        for chunk in bytes.utf8_chunks() {
            let valid = chunk.valid();
            if self.secrets.iter().any(|s| valid.contains(s.as_str())) {
                out.extend_from_slice(self.scrub(valid).as_bytes());
            } else {
                out.extend_from_slice(valid.as_bytes());
            }
            out.extend_from_slice(chunk.invalid());
        }
        out
    }

    /// Where an unfinished text may be cut and scrubbed apart from what follows: as
    /// near its end as possible (`len - longest secret`, so a secret starting later
    /// may still be incomplete), moved back before any secret that would straddle it.
    /// `None` when no cut is needed or none is found near the end.
    pub fn safe_cut(&self, bytes: &[u8]) -> Option<usize> {
        let longest = self.secrets.first().map_or(0, String::len);
        let mut cut = bytes.len().checked_sub(longest.max(1))?;
        let floor = cut / 2;
        'again: loop {
            let from = cut.saturating_sub(longest);
            let window = &bytes[from..(cut + longest).min(bytes.len())];
            for s in &self.secrets {
                let s = s.as_bytes();
                if let Some(p) = window
                    .windows(s.len())
                    .enumerate()
                    .map(|(i, _)| from + i)
                    .find(|&p| p < cut && p + s.len() > cut && bytes[p..].starts_with(s))
                {
                    if p <= floor {
                        // A pathological run of overlapping secrets: cut anyway.
                        return Some(bytes.len() - longest);
                    }
                    cut = p;
                    continue 'again;
                }
            }
            return (cut > 0).then_some(cut);
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
            // A numeric password written as a JSON number (by the agent, in its own
            // claim) is a secret too: the number becomes its scrubbed text.
            Value::Number(n) => {
                let text = n.to_string();
                let scrubbed = self.scrub(&text);
                if scrubbed == text {
                    Value::Number(n)
                } else {
                    Value::String(scrubbed)
                }
            }
            Value::Array(a) => Value::Array(a.into_iter().map(|x| self.scrub_value(x)).collect()),
            Value::Object(m) => Value::Object(
                m.into_iter()
                    .map(|(k, x)| (self.scrub(&k), self.scrub_value(x)))
                    .collect(),
            ),
            other => other,
        }
    }

    /// [`Scrubber::scrub_value`] of a document held as text, piece by piece: parts
    /// larger than [`evident_format::json::SPLIT`] are split into members and items, so a
    /// claim of 75,000 items is never one value. Two keys that scrub to the same text
    /// keep the first one's value, as the value's scrub does not promise either.
    pub fn scrub_text(&self, text: evident_format::JsonText) -> evident_format::JsonText {
        if self.secrets.is_empty() {
            return text;
        }
        let value = |v| self.scrub_value(v);
        let key = |k: &str| self.scrub(k);
        let scrubbed = evident_format::json::Rewrite::new(text.as_str(), &value, &key);
        evident_format::JsonText::from_serialize(&scrubbed).unwrap_or_default()
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

    /// Replaces each registered secret in `text` with `***` (a short one only standing alone).
    pub fn scrub(&self, text: &str) -> String {
        let mut out = text.to_string();
        for s in &self.secrets {
            if !out.contains(s.as_str()) {
                continue;
            }
            if s.len() >= MIN_SCRUB_LEN {
                out = out.replace(s.as_str(), "***");
            } else {
                out = replace_whole(&out, s);
            }
        }
        out
    }
}

/// Replace `secret` where it stands alone: not preceded or followed by a letter or
/// digit. A credential shorter than [`MIN_SCRUB_LEN`] is replaced only so, because
/// as a substring it occurs by chance inside words, hashes and base64 (a signature
/// payload altered by scrubbing would no longer verify).
fn replace_whole(text: &str, secret: &str) -> String {
    let alnum = |c: Option<char>| c.is_some_and(|c| c.is_alphanumeric());
    let mut out = String::with_capacity(text.len());
    let mut rest = text;
    while let Some(i) = rest.find(secret) {
        let before = if i > 0 {
            rest[..i].chars().last()
        } else {
            out.chars().last()
        };
        let after = rest[i + secret.len()..].chars().next();
        out.push_str(&rest[..i]);
        if alnum(before) || alnum(after) {
            // Part of a longer word: keep its first character and look further.
            let c = rest[i..].chars().next().map_or(1, char::len_utf8);
            out.push_str(&rest[i..i + c]);
            rest = &rest[i + c..];
        } else {
            out.push_str("***");
            rest = &rest[i + secret.len()..];
        }
    }
    out.push_str(rest);
    out
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

/// A URL safe to print: the password (if any) and every query or fragment value under
/// a credential name ([`is_credential_param`]) replaced by `***`. Unparseable input is
/// not echoed at all.
pub fn redact_url(url: &str) -> String {
    match url::Url::parse(url) {
        Ok(mut u) => {
            if u.password().is_some() {
                let _ = u.set_password(Some("***"));
            }
            let redact = |q: &str| {
                q.split('&')
                    .map(|pair| match pair.split_once('=') {
                        Some((k, _))
                            if is_credential_param(&percent_decode(k).unwrap_or_default()) =>
                        {
                            format!("{k}=***")
                        }
                        _ => pair.to_string(),
                    })
                    .collect::<Vec<_>>()
                    .join("&")
            };
            if let Some(q) = u.query().map(redact) {
                u.set_query(Some(&q));
            }
            if let Some(f) = u.fragment().map(redact) {
                u.set_fragment(Some(&f));
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
    fn credential_parts_whatever_their_length() {
        for (url, secret) in [
            ("postgres://u:hunter2@h/db", "hunter2"),
            ("postgres://u:pw@h/db", "pw"),
            ("postgres://u:p/w@h/db", "p/w"),
            ("postgres://u@h/db?password=hunter2", "hunter2"),
            (
                "postgres://u@h/db?sslmode=disable&sslpassword=hunter2",
                "hunter2",
            ),
            ("postgres://u@h/db?PassWord=hunter2", "hunter2"),
            ("postgres://u@h/db?passfile=%2Ftmp%2Fpgp", "/tmp/pgp"),
            ("postgres://u@h/db?sslkey=k.pem", "k.pem"),
            ("https://h/x?token=abc", "abc"),
            ("https://h/x?access_token=abc", "abc"),
            ("https://h/x?api_key=abc", "abc"),
            ("https://h/x?apikey=abc", "abc"),
            ("https://h/x?X-Api-Key=abc", "abc"),
            ("https://h/x?secret=abc", "abc"),
            ("https://h/x?auth=abc", "abc"),
            ("https://h/x?key=abc", "abc"),
            ("https://h/cb#access_token=abc&x=1", "abc"),
            ("host=db user=app password=hunter2", "hunter2"),
            ("Server=db;User Id=app;Password='hunter2'", "hunter2"),
        ] {
            let mut s = Scrubber::default();
            s.add(url);
            let text = format!("login failed with [{secret}] for app");
            assert_eq!(s.scrub(&text), "login failed with [***] for app", "{url}");
        }
        // Plain options stay readable; short non-credential values are not secrets.
        let mut s = Scrubber::default();
        s.add("postgres://u:pw@h/db?sslmode=disable&application_name=billing");
        assert_eq!(
            s.scrub("sslmode disable app billing"),
            "sslmode disable app billing"
        );
        s.add("ab");
        assert_eq!(s.scrub("ab"), "ab");
        // A credential shorter than MIN_SCRUB_LEN goes where it stands alone, not
        // inside words or base64.
        let mut s = Scrubber::default();
        s.add("https://h/x?api_key=k9");
        assert_eq!(
            s.scrub("key k9, (k9) k9k9 FSk9NIH k9"),
            "key ***, (***) k9k9 FSk9NIH ***"
        );
        assert!(!is_credential_param("max_tokens"));
        assert!(!is_credential_param("sslmode"));
        assert!(!is_credential_param("format"));
    }

    #[test]
    fn an_authorization_value_scrubs_its_credentials_alone() {
        // The attack: the agent's app echoes the token without "Bearer ".
        let mut s = Scrubber::default();
        s.add("Bearer owner-tok-1234");
        assert_eq!(s.scrub("got owner-tok-1234"), "got ***");
        // The whole header value is registered too, so it goes as one.
        assert_eq!(s.scrub("got Bearer owner-tok-1234"), "got ***");
        // Basic: the decoded pair and the password alone.
        let mut s = Scrubber::default();
        s.add("Basic YWxpY2U6aHVudGVyMg=="); // alice:hunter2
        assert_eq!(
            s.scrub("pw hunter2, pair alice:hunter2"),
            "pw ***, pair ***"
        );
        assert!(
            !s.scrub("YWxpY2U6aHVudGVyMg==")
                .contains("YWxpY2U6aHVudGVyMg")
        );
        // Honest twin: a plain secret phrase is scrubbed whole, its words are kept.
        let mut s = Scrubber::default();
        s.add("correct horse battery");
        assert_eq!(s.scrub("a horse; correct horse battery"), "a horse; ***");
    }

    #[test]
    fn redact_url_hides_query_credentials() {
        assert_eq!(
            redact_url("https://h/x?format=json&api_key=abc&token=t#access_token=z"),
            "https://h/x?format=json&api_key=***&token=***#access_token=***"
        );
        assert_eq!(
            redact_url("postgres://u:pw@h/db?sslpassword=x&sslmode=require"),
            "postgres://u:***@h/db?sslpassword=***&sslmode=require"
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

#[cfg(test)]
mod encoded {
    use super::*;
    use base64::Engine as _;

    /// The agent's test printed the token base64- or hex-encoded to slip past the
    /// exact match (found by the red team, reading the gate's environment).
    #[test]
    fn encoded_secrets_are_scrubbed() {
        let token = "tok-6e1f0a9c-encoded";
        let mut s = Scrubber::default();
        s.add(token);
        for text in [
            base64::engine::general_purpose::STANDARD.encode(token),
            base64::engine::general_purpose::STANDARD.encode(format!("API_TOKEN={token}\n")),
            base64::engine::general_purpose::URL_SAFE.encode(format!("x{token}")),
            hex::encode(token),
            hex::encode_upper(format!("ab{token}")),
        ] {
            let out = s.scrub(&text);
            assert!(out.contains("***"), "{text} -> {out}");
        }
        // Ordinary text is left alone.
        assert_eq!(s.scrub("hello world"), "hello world");
    }
}

#[cfg(test)]
mod by_meaning {
    use super::*;

    /// libpq reads `password = hunter2` (blanks around `=`) and quoted values with
    /// blanks; splitting at blanks registered neither (found by the red team).
    #[test]
    fn connection_string_values_are_read_as_the_drivers_read_them() {
        for (dsn, secret) in [
            ("host=db password = hunter2 dbname=billing", "hunter2"),
            ("host=db password='hunter 2 x' dbname=billing", "hunter 2 x"),
            (r"host=db password='it\'s' dbname=billing", "it's"),
            (
                "Server=db;User Id=app;Password=my pass word;Database=billing",
                "my pass word",
            ),
        ] {
            let mut s = Scrubber::default();
            s.add(dsn);
            assert_eq!(
                s.scrub(&format!("auth failed [{secret}] on billing")),
                "auth failed [***] on billing",
                "{dsn}"
            );
        }
        // Honest twin: the other values stay readable.
        let mut s = Scrubber::default();
        s.add("host=db dbname = billing sslmode=require");
        assert_eq!(s.scrub("db billing require"), "db billing require");
    }

    /// A URL's token-long user name without a password is the credential; a name is not.
    #[test]
    fn a_token_as_user_name() {
        let mut s = Scrubber::default();
        s.add("https://ghp_Zq8TokenSecretValue0000@github.com/o/r.git");
        assert_eq!(s.scrub("user ghp_Zq8TokenSecretValue0000"), "user ***");
        let mut s = Scrubber::default();
        s.add("https://sk_test_4eC39HqLyjWDarjtT1zdp7dc:@api.stripe.com/v1");
        assert_eq!(s.scrub("key sk_test_4eC39HqLyjWDarjtT1zdp7dc:"), "key ***:");
        // Honest twins: user names stay readable, with or without a password.
        let mut s = Scrubber::default();
        s.add("postgres://postgres@127.0.0.1:5432/test");
        s.add("postgres://billing_service_user:pw@db/x");
        assert_eq!(
            s.scrub("postgres billing_service_user"),
            "postgres billing_service_user"
        );
    }

    /// Only the credentials of an inherited value; the rest of it is no secret.
    #[test]
    fn credentials_of_an_inherited_value() {
        let mut s = Scrubber::default();
        s.add_credentials_of(
            "postgres://app:Hunter2Secret@db/billing?sslmode=require&application_name=longappname",
        );
        s.add_credentials_of("/usr/local/bin:/usr/bin");
        s.add_credentials_of("-q -k test_longname_here");
        assert_eq!(
            s.scrub("Hunter2Secret app db billing longappname /usr/bin test_longname_here"),
            "*** app db billing longappname /usr/bin test_longname_here"
        );
    }
}

#[cfg(test)]
mod text {
    use super::*;
    use serde_json::json;

    /// The gate scrubs the decided document as text, piece by piece: on a document
    /// past the split size, with the secret in keys, values and an escaped form, it
    /// equals scrubbing the document's value.
    #[test]
    fn a_large_document_scrubs_as_its_value_does() {
        let secret = "tok-71c2e9-scrub";
        let mut s = Scrubber::default();
        s.add(secret);
        let items: Vec<_> = (0..3000)
            .map(|i| json!({"observed_value": {"out": format!("row {i} {secret}"), "n": i}}))
            .collect();
        let doc = json!({
            "task": {"id": format!("t-{secret}")},
            "evidence": items,
            format!("key-{secret}"): [1, 2],
        });
        let mut text = serde_json::to_string(&doc).unwrap();
        // The same secret with one letter escaped, as JSON allows.
        text = text.replacen("row 0 tok", "row 0 \\u0074ok", 1);
        let checked = evident_format::json::check(text.as_bytes()).unwrap();
        assert!(checked.text.as_str().len() > evident_format::json::SPLIT);
        let by_value = s.scrub_value(checked.text.to_value());
        let by_text = s.scrub_text(checked.text);
        assert!(!by_text.as_str().contains(secret), "a secret survived");
        assert_eq!(by_text.to_value(), by_value);
        // A numeric secret written as a number is scrubbed too (found by the red
        // team: a DSN password of digits, pasted by the agent as a JSON number), and
        // an ordinary number is left alone.
        let mut digits = Scrubber::default();
        digits.add("postgres://app:90817263@127.0.0.1/billing");
        let doc = evident_format::json::check(br#"{"a":90817263,"b":[190817263],"c":42}"#)
            .unwrap()
            .text;
        let out = digits.scrub_text(doc).to_value();
        assert!(!out.to_string().contains("90817263"), "{out}");
        assert_eq!(out["c"], json!(42));
        // Without secrets the text is returned as it was.
        let plain = evident_format::json::check(b"{\"a\":[1,\"x\"]}")
            .unwrap()
            .text;
        assert_eq!(Scrubber::default().scrub_text(plain.clone()), plain);
    }
}
