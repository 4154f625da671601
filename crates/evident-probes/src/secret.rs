//! Secrets come from the environment by name and never leave in output: every value a
//! probe reads from the environment is registered with a [`Scrubber`], which replaces
//! it in error messages and captured output, as it is and in any encoding it reads
//! (percent, backslash and shell escapes, hex, base64); URLs are printed with their
//! password replaced.

use std::borrow::Cow;
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

/// The shortest secret looked for in decoded hex and base64 too: shorter ones would be
/// found by chance in any blob (one byte in every few hundred of random data).
pub const MIN_ENCODED_LEN: usize = 8;

/// Texts are searched in parts of about this size (a decoding of one is held whole).
const SEARCH_PART: usize = 1 << 20;

/// Encoded text per byte of a secret that [`Scrubber::safe_cut`] keeps whole: the
/// longest escape of one byte is `\U0000XXXX` (10), percent-encoded as a URL holds it
/// `%5CU0000XXXX` (12). Longer spellings (each character of an escape encoded again,
/// empty quotes spliced in without end) are still found by [`Scrubber::scrub`], but a
/// cut far enough from their start may split them.
const ENCODED_REACH: usize = 12;

/// The secrets one observation has touched; replaces each with `***`, wherever it
/// appears as it is or encoded: the output is decoded, not the secrets encoded (see
/// [`Scrubber::scrub`]).
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
        self.add_parts(secret);
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

    /// [`Scrubber::scrub`] over bytes: the secrets found are replaced, every other byte
    /// (invalid UTF-8 included) is kept as it is, so a text holding no secret comes back
    /// byte for byte.
    pub fn scrub_bytes(&self, bytes: &[u8]) -> Vec<u8> {
        if self.secrets.is_empty() {
            return bytes.to_vec();
        }
        replace(bytes, self.find_all(bytes, Mode::Scrub).replace)
    }

    /// Where an unfinished text may be cut and scrubbed apart from what follows: as
    /// near its end as possible (`len - reach`, the reach being the longest secret's
    /// length times [`ENCODED_REACH`], so a secret starting later, encoded or not, may
    /// still be incomplete), moved back before any secret that would straddle it, in
    /// any encoding: before the whole hex or base64 run holding one where that is near
    /// enough, else before the characters that encode it. `None` when no cut is needed
    /// or none is found near the end.
    pub fn safe_cut(&self, bytes: &[u8]) -> Option<usize> {
        let start = bytes.len().checked_sub(self.reach())?;
        let floor = start / 2;
        let cut = self
            .cut_before(bytes, start, floor, true)
            .or_else(|| self.cut_before(bytes, start, floor, false))
            // A pathological run of overlapping secrets: cut anyway.
            .unwrap_or(start);
        (cut > 0).then_some(cut)
    }

    /// Bytes of text an encoded secret can span (and a little more for base64's groups).
    fn reach(&self) -> usize {
        self.secrets.first().map_or(0, String::len) * ENCODED_REACH + 16
    }

    /// The last cut at or before `cut` that no secret straddles (with `soft`, no hex or
    /// base64 run holding one either); `None` when it would be at or before `floor`.
    fn cut_before(&self, bytes: &[u8], mut cut: usize, floor: usize, soft: bool) -> Option<usize> {
        let reach = self.reach();
        loop {
            // A secret straddling `cut` starts at most `reach` before it and ends at most
            // `reach` after it; the window holds it whole.
            let from = cut.saturating_sub(2 * reach);
            let to = (cut + reach).min(bytes.len());
            let found = self.search(&bytes[from..to], Mode::Guard);
            let soft = if soft { &found.soft[..] } else { &[] };
            while let Some(p) = found
                .hard
                .iter()
                .chain(soft)
                .filter(|&&(s, e)| from + s < cut && from + e > cut)
                .map(|&(s, _)| from + s)
                .min()
            {
                cut = p;
            }
            if cut <= floor {
                return None;
            }
            if from == 0 || cut >= from + reach {
                return Some(cut);
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
    /// removed too, in any encoding the scrubber reads (an escape cut short after it
    /// included), so not even its first characters show.
    pub fn scrub_cut(&self, text: &str) -> String {
        if self.secrets.is_empty() {
            return text.to_string();
        }
        let found = self.find_all(text.as_bytes(), Mode::Cut);
        let mut ranges = found.replace;
        ranges.extend(found.tail.map(|t| (t, text.len())));
        replace_str(text, ranges)
    }

    /// Replaces each registered secret in `text` with `***` (a short one only standing
    /// alone), as it is and as the text encodes it. The text is decoded, not the secrets
    /// encoded: it is read as written, and also with its escapes decoded —
    /// percent-encoding (`%XX` in either case with any set of bytes left literal,
    /// `%uXXXX`, and `+` as a space), backslash escapes (JSON's `\uXXXX` with surrogate
    /// pairs and `\"` `\\` `\/` `\n`…, C's and Python's `\xHH`, octal, `\UXXXXXXXX`,
    /// JavaScript's `\u{…}`), HTML character references (`&#64;`, `&#x40;`, `&quot;`),
    /// shell words (backslashes, `'…'` and `"…"` with splicing such as `'a'\''b'`, and
    /// `$'…'`), and two layers (escapes or percent-encoding twice or mixed, escapes in
    /// character references); and each run of hex (either case) or base64 (standard or
    /// URL-safe, padded or not, wrapped at a fixed width) is decoded at each alignment. Where a decoding holds a secret, the characters that
    /// encode it are replaced — for hex and base64 the whole run, as its neighbours carry
    /// bits of the secret. Hex and base64 are read for secrets of [`MIN_ENCODED_LEN`]
    /// bytes or more; a secret shorter than [`MIN_SCRUB_LEN`] counts only where it
    /// stands alone in the decoded text too.
    pub fn scrub(&self, text: &str) -> String {
        if self.secrets.is_empty() {
            return text.to_string();
        }
        replace_str(text, self.find_all(text.as_bytes(), Mode::Scrub).replace)
    }

    /// [`Scrubber::search`] of a text of any size: one larger than [`SEARCH_PART`] is
    /// searched in parts cut where no secret straddles ([`Scrubber::safe_cut`]), so
    /// that its decodings are never held all at once.
    fn find_all(&self, src: &[u8], mode: Mode) -> Found {
        let mut found = Found::default();
        let mut at = 0;
        while src.len() - at > 2 * SEARCH_PART {
            let Some(cut) = self.safe_cut(&src[at..at + SEARCH_PART]) else {
                break;
            };
            let part = self.search(&src[at..at + cut], Mode::Scrub);
            found
                .replace
                .extend(part.replace.iter().map(|&(s, e)| (at + s, at + e)));
            at += cut;
        }
        let last = self.search(&src[at..], mode);
        found
            .replace
            .extend(last.replace.iter().map(|&(s, e)| (at + s, at + e)));
        found.tail = last.tail.map(|t| at + t);
        found
    }

    /// Every secret in `src`, read as it is and decoded.
    fn search(&self, src: &[u8], mode: Mode) -> Found {
        let mut search = Search::new(&self.secrets, src, mode);
        if search.needles.is_empty() || src.is_empty() {
            return search.found;
        }
        let raw = View {
            bytes: Cow::Borrowed(src),
            pieces: Vec::new(),
            parent: None,
        };
        search.view(&raw, true);
        for decoder in [
            Decoder::Unescape,
            Decoder::Percent,
            Decoder::Form,
            Decoder::Shell,
            Decoder::Html,
        ] {
            let Some(once) = decoder.decode(&raw, None) else {
                continue;
            };
            search.view(&once, decoder.reads_runs());
            for &then in decoder.then() {
                // A secret only the second layer shows holds escapes of both: the same
                // encoding twice starts at a decoded byte (`%2540`, `\\u0041`); two
                // encodings mixed (`%40` and `\/`) lie near one of the first.
                let near = if then == decoder {
                    once.escapes()
                } else {
                    once.windows(search.longest * ENCODED_REACH)
                };
                if let Some(twice) = then.decode(&once, Some(&near)) {
                    search.view(&twice, then.reads_runs());
                }
            }
        }
        search.found
    }
}

/// `bytes` with each range replaced by `***`; overlapping ranges become one.
fn replace(bytes: &[u8], mut ranges: Vec<(usize, usize)>) -> Vec<u8> {
    if ranges.is_empty() {
        return bytes.to_vec();
    }
    ranges.sort_unstable();
    let mut merged: Vec<(usize, usize)> = Vec::with_capacity(ranges.len());
    for (s, e) in ranges {
        match merged.last_mut() {
            Some(last) if s < last.1 => last.1 = last.1.max(e),
            _ => merged.push((s, e)),
        }
    }
    let mut out = Vec::with_capacity(bytes.len());
    let mut at = 0;
    for (s, e) in merged {
        out.extend_from_slice(&bytes[at..s]);
        out.extend_from_slice(b"***");
        at = e;
    }
    out.extend_from_slice(&bytes[at..]);
    out
}

/// [`replace`] in a string, each range widened to whole characters.
fn replace_str(text: &str, ranges: Vec<(usize, usize)>) -> String {
    let ranges = ranges
        .into_iter()
        .map(|(mut s, mut e)| {
            while !text.is_char_boundary(s) {
                s -= 1;
            }
            while !text.is_char_boundary(e) {
                e += 1;
            }
            (s, e)
        })
        .collect();
    match String::from_utf8(replace(text.as_bytes(), ranges)) {
        Ok(s) => s,
        Err(e) => String::from_utf8_lossy(e.as_bytes()).into_owned(),
    }
}

/// What a search is for.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Mode {
    /// What to replace.
    Scrub,
    /// That, and where the beginning of a secret ends the text (cut there).
    Cut,
    /// Where no cut may fall: every occurrence, of a short secret too.
    Guard,
}

/// Ranges of the searched text.
#[derive(Debug, Default)]
struct Found {
    /// To replace by `***`.
    replace: Vec<(usize, usize)>,
    /// Guard: the characters that hold a secret (a short one with its neighbours).
    hard: Vec<(usize, usize)>,
    /// Guard: the whole hex or base64 run holding a secret.
    soft: Vec<(usize, usize)>,
    /// Cut: where the beginning of a secret, running to the end, starts.
    tail: Option<usize>,
}

/// A secret looked for.
struct Needle<'a> {
    text: &'a str,
    /// Shorter than [`MIN_SCRUB_LEN`]: only where it stands alone.
    short: bool,
}

impl Needle<'_> {
    fn bytes(&self) -> &[u8] {
        self.text.as_bytes()
    }

    /// Looked for in decoded hex and base64 too.
    fn encoded(&self) -> bool {
        self.text.len() >= MIN_ENCODED_LEN
    }

    /// The longest beginning of the secret (3 bytes or more, whole characters, not all
    /// of it) that `hay` ends with.
    fn cut_at_end(&self, hay: &[u8]) -> Option<usize> {
        (MIN_SCRUB_LEN.saturating_sub(1)..self.text.len())
            .rev()
            .filter(|&k| k > 0 && self.text.is_char_boundary(k))
            .find(|&k| hay.ends_with(&self.bytes()[..k]))
    }
}

/// One search of a text: the secrets, and what was found so far.
struct Search<'a> {
    src: &'a [u8],
    needles: Vec<Needle<'a>>,
    /// The first bytes of the secrets, of all and of those looked for in hex and base64.
    first: ByteSet,
    first_encoded: ByteSet,
    /// The shortest secret looked for in hex and base64 (0: none is).
    min_encoded: usize,
    /// The longest secret.
    longest: usize,
    mode: Mode,
    found: Found,
}

impl<'a> Search<'a> {
    fn new(secrets: &'a [String], src: &'a [u8], mode: Mode) -> Self {
        let needles: Vec<Needle> = secrets
            .iter()
            .filter(|s| !s.is_empty())
            .map(|s| Needle {
                text: s,
                short: s.len() < MIN_SCRUB_LEN,
            })
            .collect();
        let mut first = ByteSet::of(b"");
        let mut first_encoded = ByteSet::of(b"");
        let mut min_encoded = 0;
        for n in &needles {
            let b = n.bytes()[0];
            first.add(b);
            if n.encoded() {
                first_encoded.add(b);
                min_encoded = match min_encoded {
                    0 => n.text.len(),
                    m => n.text.len().min(m),
                };
            }
        }
        let longest = needles.iter().map(|n| n.text.len()).max().unwrap_or(0);
        Search {
            src,
            longest,
            needles,
            first,
            first_encoded,
            min_encoded,
            mode,
            found: Found::default(),
        }
    }

    /// Is the text past byte `e` of `v` empty, or only an escape cut short (`%4`,
    /// `\u00`, `&#6`)?
    fn ends_text(&self, v: &View, e: usize) -> bool {
        let rest = &self.src[v.source(e - 1, e).1..];
        let whole = |e: Option<Escape>| e.is_some_and(|e| e.len == rest.len());
        rest.is_empty()
            || (rest.len() < ENCODED_REACH
                && matches!(rest[0], b'%' | b'\\' | b'&')
                && !whole(percent(rest, 0, false))
                && !whole(c_escape(rest, 0))
                && !whole(entity(rest, 0)))
    }

    /// Look for the secrets in one reading of the text, and in its hex and base64 runs
    /// (`runs`).
    fn view(&mut self, v: &View, runs: bool) {
        let hay: &[u8] = &v.bytes;
        let mode = self.mode;
        let found = &mut self.found;
        for (from, to) in v.windows(self.longest) {
            find(&hay[from..to], &self.needles, &self.first, false, |a, n| {
                let a = from + a;
                let b = a + n.text.len();
                if mode == Mode::Guard {
                    // A short secret with its neighbours, which decide whether it stands
                    // alone.
                    let (a, b) = if n.short {
                        (a.saturating_sub(4), (b + 4).min(hay.len()))
                    } else {
                        (a, b)
                    };
                    found.hard.push(v.source(a, b));
                } else if !n.short || alone(hay, a, b) {
                    found.replace.push(v.source(a, b));
                }
            });
        }
        if mode == Mode::Cut {
            // The beginning of a secret at the end (before an escape cut short).
            for e in (hay.len().saturating_sub(ENCODED_REACH)..=hay.len()).rev() {
                if e == 0 || !self.ends_text(v, e) {
                    continue;
                }
                for n in &self.needles {
                    if let Some(k) = n.cut_at_end(&hay[..e]) {
                        let start = v.source(e - k, e).0;
                        self.found.tail = Some(self.found.tail.map_or(start, |t| t.min(start)));
                    }
                }
            }
        }
        if runs && self.min_encoded > 0 {
            self.runs(v, Alphabet::Base64);
            self.runs(v, Alphabet::Hex);
        }
    }

    /// Each run of `alphabet` long enough to hold a secret, decoded at each alignment.
    /// In a decoding, only the runs that hold a decoded byte: the others read there as
    /// in its parent.
    fn runs(&mut self, v: &View, alphabet: Alphabet) {
        let hay: &[u8] = &v.bytes;
        let values = alphabet.values();
        let is = |b: u8| values[usize::from(b)] != 0xFF;
        let mut run = Run::default();
        let mut buf = Vec::new();
        // Runs too short to hold a secret are passed over without being read: one that
        // is not the first line of a wrapped run nor at the end of a cut text.
        let min = alphabet.chars_for(self.min_encoded).min(16);
        let cut = self.mode == Mode::Cut;
        let short = |start: usize, end: usize| end - start < min && (end < hay.len() || !cut);
        if v.parent.is_none() {
            let mut i = 0;
            while i < hay.len() {
                if !is(hay[i]) {
                    i += 1;
                    continue;
                }
                let mut end = i;
                while end < hay.len() && is(hay[end]) {
                    end += 1;
                }
                if short(i, end) {
                    i = end;
                    continue;
                }
                i = run.read(hay, i, alphabet);
                self.run(v, alphabet, &run, &mut buf);
            }
            return;
        }
        let mut read_to = 0;
        // The piece the run being read starts in (runs are read in order).
        let mut piece = 0;
        for edge in v.edges() {
            for at in [edge.wrapping_sub(1), edge] {
                if at < read_to || at >= hay.len() || !is(hay[at]) {
                    continue;
                }
                let (mut start, mut end) = (at, at);
                while start > 0 && is(hay[start - 1]) {
                    start -= 1;
                }
                while end < hay.len() && is(hay[end]) {
                    end += 1;
                }
                if short(start, end) {
                    read_to = end;
                    continue;
                }
                read_to = run.read(hay, start, alphabet);
                while v.pieces.get(piece + 1).is_some_and(|p| p.at <= start) {
                    piece += 1;
                }
                let next = v.pieces.get(piece + 1).map_or(hay.len(), |p| p.at);
                if !(v.pieces[piece].literal && read_to <= next) {
                    self.run(v, alphabet, &run, &mut buf);
                }
            }
        }
    }

    /// One run, if long enough, decoded from each of its first characters in turn.
    fn run(&mut self, v: &View, alphabet: Alphabet, run: &Run, buf: &mut Vec<u8>) {
        let n = run.chars.len();
        let at_end = self.mode == Mode::Cut && self.ends_text(v, run.end);
        if n < alphabet.chars_for(self.min_encoded) && !(at_end && n >= 4) {
            return;
        }
        let whole = v.source(run.start, run.end);
        for offset in 0..alphabet.group().min(n) {
            alphabet.decode(&run.chars[offset..], buf);
            let mode = self.mode;
            let found = &mut self.found;
            let mut hit = false;
            find(
                buf,
                &self.needles,
                &self.first_encoded,
                true,
                |a, needle| {
                    hit = true;
                    if mode == Mode::Guard {
                        let (c, d) = alphabet.holding(a, a + needle.text.len(), n - offset);
                        let (c, d) = (run.position(offset + c), run.position(offset + d - 1) + 1);
                        found.hard.push(v.source(c, d));
                        found.soft.push(whole);
                    } else {
                        found.replace.push(whole);
                    }
                },
            );
            if at_end
                && self
                    .needles
                    .iter()
                    .any(|n| n.encoded() && n.cut_at_end(buf).is_some())
            {
                self.found.tail = Some(self.found.tail.map_or(whole.0, |t| t.min(whole.0)));
            }
            if hit && mode == Mode::Scrub {
                return;
            }
        }
    }
}

/// A run of hex or base64: its characters, and where they are.
#[derive(Default)]
struct Run {
    /// The run, `=` padding included.
    start: usize,
    end: usize,
    /// Its characters, without line breaks or padding.
    chars: Vec<u8>,
    /// Where its lines (one, unless wrapped) are.
    lines: Vec<(usize, usize)>,
}

impl Run {
    /// Read the run starting at `hay[start]`; returns where it ends. Lines of one
    /// width, a multiple of the group, continue a run (wrapped base64, `xxd -p`).
    fn read(&mut self, hay: &[u8], start: usize, alphabet: Alphabet) -> usize {
        let values = alphabet.values();
        let is = |b: u8| values[usize::from(b)] != 0xFF;
        self.start = start;
        self.chars.clear();
        self.lines.clear();
        let mut i = start;
        let mut width = 0;
        self.end = loop {
            let line = i;
            while i < hay.len() && is(hay[i]) {
                i += 1;
            }
            self.chars.extend_from_slice(&hay[line..i]);
            self.lines.push((line, i));
            if alphabet == Alphabet::Base64 {
                let padded = hay[i..].iter().take(2).take_while(|&&b| b == b'=').count();
                if padded > 0 {
                    break i + padded;
                }
            }
            let newline = match &hay[i..] {
                [b'\n', ..] => 1,
                [b'\r', b'\n', ..] => 2,
                _ => 0,
            };
            let len = i - line;
            let wrapped = newline > 0
                && len >= 16
                && len.is_multiple_of(alphabet.group())
                && (width == 0 || width == len)
                && hay.get(i + newline).is_some_and(|&b| is(b));
            if !wrapped {
                break i;
            }
            width = len;
            i += newline;
        };
        self.end
    }

    /// Where character `k` of the run is.
    fn position(&self, mut k: usize) -> usize {
        for &(from, to) in &self.lines {
            if k < to - from {
                return from + k;
            }
            k -= to - from;
        }
        self.end
    }
}

/// Each occurrence in `hay` of a secret (of one looked for in hex and base64, with
/// `encoded`): one pass over `hay`, comparing where a secret's first byte is.
fn find(
    hay: &[u8],
    needles: &[Needle],
    first: &ByteSet,
    encoded: bool,
    mut hit: impl FnMut(usize, &Needle),
) {
    for i in 0..hay.len() {
        let b = hay[i];
        if !first.has(b) {
            continue;
        }
        for n in needles {
            if n.bytes()[0] == b && (!encoded || n.encoded()) && hay[i..].starts_with(n.bytes()) {
                hit(i, n);
            }
        }
    }
}

/// Does `hay[a..b]` stand alone: no letter or digit just before or after it? A
/// credential shorter than [`MIN_SCRUB_LEN`] is replaced only so, because as a
/// substring it occurs by chance inside words, hashes and base64 (a signature payload
/// altered by scrubbing would no longer verify).
fn alone(hay: &[u8], a: usize, b: usize) -> bool {
    let before = (1..=a.min(4))
        .find_map(|k| std::str::from_utf8(&hay[a - k..a]).ok())
        .and_then(|s| s.chars().next_back());
    let after = (1..=(hay.len() - b).min(4))
        .find_map(|k| std::str::from_utf8(&hay[b..b + k]).ok())
        .and_then(|s| s.chars().next());
    !before.is_some_and(char::is_alphanumeric) && !after.is_some_and(char::is_alphanumeric)
}

/// The text as one decoder reads it: its bytes, and where each was read from in the
/// text it was decoded from (`parent`), back to the searched text itself.
struct View<'a> {
    bytes: Cow<'a, [u8]>,
    /// Sorted by `at`; empty for the searched text itself (no parent).
    pieces: Vec<Piece>,
    parent: Option<&'a View<'a>>,
}

/// The bytes of a view from `at` on, read from `from..to` of its parent: byte for byte
/// (`literal`), or all from the whole range (an escape).
#[derive(Debug, Clone, Copy)]
struct Piece {
    at: usize,
    from: usize,
    to: usize,
    literal: bool,
}

impl View<'_> {
    /// The range of the searched text that bytes `a..b` (not empty) were read from.
    fn source(&self, a: usize, b: usize) -> (usize, usize) {
        let Some(parent) = self.parent else {
            return (a, b);
        };
        let (first, last) = (self.piece(a), self.piece(b - 1));
        let start = if first.literal {
            first.from + (a - first.at)
        } else {
            first.from
        };
        let end = if last.literal {
            last.from + (b - last.at)
        } else {
            last.to
        };
        parent.source(start, end)
    }

    /// The piece byte `k` is in.
    fn piece(&self, k: usize) -> &Piece {
        &self.pieces[self.pieces.partition_point(|p| p.at <= k) - 1]
    }

    /// Where a decoded stretch starts or ends: each piece's start, each escape's end.
    fn edges(&self) -> Vec<usize> {
        let len = self.bytes.len();
        let mut out = Vec::with_capacity(self.pieces.len() * 2);
        for (i, p) in self.pieces.iter().enumerate() {
            out.push(p.at);
            if !p.literal {
                out.push(self.pieces.get(i + 1).map_or(len, |n| n.at));
            }
        }
        out
    }

    /// The bytes decoded from an escape.
    fn escapes(&self) -> Vec<(usize, usize)> {
        let len = self.bytes.len();
        (0..self.pieces.len())
            .filter(|&i| !self.pieces[i].literal)
            .map(|i| {
                let end = self.pieces.get(i + 1).map_or(len, |n| n.at);
                (self.pieces[i].at, end)
            })
            .collect()
    }

    /// The parts of the view within `reach` of a decoded stretch's edge (one byte
    /// more, for whether a short secret stands alone): there a secret of up to `reach`
    /// bytes may read otherwise than in the parent. The whole of the searched text
    /// itself. Merged, in order.
    fn windows(&self, reach: usize) -> Vec<(usize, usize)> {
        let len = self.bytes.len();
        if self.parent.is_none() {
            return vec![(0, len)];
        }
        let mut out: Vec<(usize, usize)> = Vec::new();
        for x in self.edges() {
            let w = (x.saturating_sub(reach + 1), (x + reach + 1).min(len));
            match out.last_mut() {
                Some(last) if w.0 <= last.1 => last.1 = last.1.max(w.1),
                _ => out.push(w),
            }
        }
        out
    }
}

/// A set of byte values.
#[derive(Clone, Copy)]
struct ByteSet([u64; 4]);

impl ByteSet {
    const fn of(bytes: &[u8]) -> ByteSet {
        let mut set = [0u64; 4];
        let mut i = 0;
        while i < bytes.len() {
            set[(bytes[i] >> 6) as usize] |= 1 << (bytes[i] & 63);
            i += 1;
        }
        ByteSet(set)
    }

    fn add(&mut self, b: u8) {
        self.0[usize::from(b >> 6)] |= 1 << (b & 63);
    }

    fn has(&self, b: u8) -> bool {
        (self.0[usize::from(b >> 6)] >> (b & 63)) & 1 == 1
    }

    /// The first byte of `s` from `i` on in the set (`s.len()` if none is).
    fn next(&self, s: &[u8], mut i: usize) -> usize {
        while i < s.len() && !self.has(s[i]) {
            i += 1;
        }
        i
    }
}

/// A view being decoded.
#[derive(Default)]
struct Builder {
    bytes: Vec<u8>,
    pieces: Vec<Piece>,
    changed: bool,
}

impl Builder {
    /// Bytes `from..to` of the parent `s`, as they are.
    fn literal(&mut self, s: &[u8], from: usize, to: usize) {
        if from == to {
            return;
        }
        match self.pieces.last_mut() {
            Some(p) if p.literal && p.to == from => p.to = to,
            _ => self.pieces.push(Piece {
                at: self.bytes.len(),
                from,
                to,
                literal: true,
            }),
        }
        self.bytes.extend_from_slice(&s[from..to]);
    }

    /// Bytes `from..to` of the parent stand for `decoded` (nothing: a quote).
    fn escape(&mut self, from: usize, to: usize, decoded: &[u8]) {
        self.changed = true;
        if !decoded.is_empty() {
            self.pieces.push(Piece {
                at: self.bytes.len(),
                from,
                to,
                literal: false,
            });
            self.bytes.extend_from_slice(decoded);
        }
    }
}

/// The textual encodings a program writes a secret in.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Decoder {
    /// Backslash escapes (JSON, C, Python, JavaScript, bash's `$'…'`).
    Unescape,
    /// `%XX`, with any bytes left literal.
    Percent,
    /// `%XX` and `+` as a space (HTML forms, `quote_plus`).
    Form,
    /// A shell word: backslashes and quotes.
    Shell,
    /// HTML and XML character references (a JUnit report's attributes).
    Html,
}

impl Decoder {
    /// Bytes where a decoding may start; without them, the decoder changes nothing.
    fn triggers(self) -> ByteSet {
        const UNESCAPE: ByteSet = ByteSet::of(b"\\");
        const HTML: ByteSet = ByteSet::of(b"&");
        const PERCENT: ByteSet = ByteSet::of(b"%");
        const FORM: ByteSet = ByteSet::of(b"%+");
        const SHELL: ByteSet = ByteSet::of(b"\\'\"$\n");
        match self {
            Decoder::Unescape => UNESCAPE,
            Decoder::Percent => PERCENT,
            Decoder::Form => FORM,
            Decoder::Shell => SHELL,
            Decoder::Html => HTML,
        }
    }

    /// Decoders applied to this one's output too (a second layer).
    fn then(self) -> &'static [Decoder] {
        match self {
            Decoder::Unescape => &[Decoder::Unescape, Decoder::Percent],
            Decoder::Percent => &[Decoder::Percent, Decoder::Unescape],
            Decoder::Html => &[Decoder::Unescape],
            Decoder::Form | Decoder::Shell => &[],
        }
    }

    /// Are hex and base64 runs read in this decoder's output (`\/` in JSON, `%2B` in
    /// a URL)?
    fn reads_runs(self) -> bool {
        matches!(self, Decoder::Unescape | Decoder::Percent)
    }

    /// `parent` decoded (with `only`, the escapes starting in those ranges alone);
    /// `None` when that changes nothing.
    fn decode<'a>(self, parent: &'a View<'a>, only: Option<&[(usize, usize)]>) -> Option<View<'a>> {
        let s: &[u8] = &parent.bytes;
        let triggers = self.triggers();
        // Form decodes what Percent does, and `+`: without one, it adds nothing.
        let needed = match self {
            Decoder::Form => ByteSet::of(b"+"),
            _ => triggers,
        };
        if needed.next(s, 0) == s.len() {
            return None;
        }
        let mut out = Builder {
            bytes: Vec::with_capacity(s.len()),
            ..Builder::default()
        };
        let mut i = 0;
        let mut quote = Quote::None;
        let mut only = only.map(|w| w.iter().peekable());
        while i < s.len() {
            let mut j = triggers.next(s, i);
            if let Some(windows) = &mut only {
                while windows.next_if(|w| w.1 <= j).is_some() {}
                match windows.peek() {
                    Some(w) if w.0 > j => {
                        // Nothing to decode before the next range.
                        out.literal(s, i, w.0);
                        i = w.0;
                        continue;
                    }
                    Some(_) => {}
                    None => j = s.len(),
                }
            }
            out.literal(s, i, j);
            if j == s.len() {
                break;
            }
            let escape = match self {
                Decoder::Unescape => c_escape(s, j),
                Decoder::Percent => percent(s, j, false),
                Decoder::Form => percent(s, j, true),
                Decoder::Shell => shell(s, j, &mut quote),
                Decoder::Html => entity(s, j),
            };
            match escape {
                Some(e) => {
                    out.escape(j, j + e.len, e.bytes());
                    i = j + e.len;
                }
                None => {
                    out.literal(s, j, j + 1);
                    i = j + 1;
                }
            }
        }
        out.changed.then_some(View {
            bytes: Cow::Owned(out.bytes),
            pieces: out.pieces,
            parent: Some(parent),
        })
    }
}

/// One escape: its length and the (up to 4) bytes it stands for.
struct Escape {
    len: usize,
    buf: [u8; 4],
    n: usize,
}

impl Escape {
    fn byte(len: usize, b: u8) -> Option<Escape> {
        Some(Escape {
            len,
            buf: [b, 0, 0, 0],
            n: 1,
        })
    }

    /// Nothing: a quote, a line continued.
    fn none(len: usize) -> Option<Escape> {
        Some(Escape {
            len,
            buf: [0; 4],
            n: 0,
        })
    }

    /// A code point, as UTF-8.
    fn char(len: usize, c: u32) -> Option<Escape> {
        let c = char::from_u32(c)?;
        let mut buf = [0; 4];
        let n = c.encode_utf8(&mut buf).len();
        Some(Escape { len, buf, n })
    }

    fn bytes(&self) -> &[u8] {
        &self.buf[..self.n]
    }
}

/// `n` (1 to 8) hex digits at `s[i..]`.
fn hex_at(s: &[u8], i: usize, n: usize) -> Option<u32> {
    if n == 0 || n > 8 {
        return None;
    }
    s.get(i..i + n)?
        .iter()
        .try_fold(0u32, |v, &b| Some((v << 4) | char::from(b).to_digit(16)?))
}

/// `\xH`, `\xHH` or octal `\N` to `\NNN` at `s[i]`: its length and byte.
fn byte_escape(s: &[u8], i: usize) -> Option<(usize, u8)> {
    if s.get(i) != Some(&b'\\') {
        return None;
    }
    match *s.get(i + 1)? {
        b'x' => {
            let high = char::from(*s.get(i + 2)?).to_digit(16)?;
            match s.get(i + 3).and_then(|&b| char::from(b).to_digit(16)) {
                Some(low) => Some((4, (high * 16 + low) as u8)),
                None => Some((3, high as u8)),
            }
        }
        b'0'..=b'7' => {
            let mut v = 0u32;
            let mut n = 0;
            while n < 3
                && let Some(&d @ b'0'..=b'7') = s.get(i + 1 + n)
                && v * 8 + u32::from(d - b'0') <= 0xFF
            {
                v = v * 8 + u32::from(d - b'0');
                n += 1;
            }
            Some((1 + n, v as u8))
        }
        _ => None,
    }
}

/// A backslash escape at `s[i]` (JSON, C, Python, JavaScript, bash's `$'…'`); any
/// other escaped character stands for itself (`\"`, `\/`, `\@`).
fn c_escape(s: &[u8], i: usize) -> Option<Escape> {
    let c = *s.get(i + 1)?;
    match c {
        b'u' if s.get(i + 2) == Some(&b'{') => {
            let digits = s.iter().skip(i + 3).take(7).position(|&b| b == b'}')?;
            Escape::char(digits + 4, hex_at(s, i + 3, digits)?)
        }
        b'u' => {
            let unit = hex_at(s, i + 2, 4)?;
            if (0xD800..0xDC00).contains(&unit) {
                // A surrogate pair: `\ud83d\ude00`.
                let low = Some(s.get(i + 6..i + 8)?)
                    .filter(|u| u == b"\\u")
                    .and_then(|_| hex_at(s, i + 8, 4))
                    .filter(|low| (0xDC00..0xE000).contains(low))?;
                return Escape::char(12, 0x10000 + ((unit - 0xD800) << 10) + (low - 0xDC00));
            }
            Escape::char(6, unit)
        }
        b'U' => Escape::char(10, hex_at(s, i + 2, 8)?),
        b'x' | b'0'..=b'7' => {
            let (len, v) = byte_escape(s, i)?;
            if v < 0x80 {
                return Escape::byte(len, v);
            }
            // The bytes of one UTF-8 character each escaped (`\xc3\xa9`: bash, C,
            // Python's bytes), else a code point (`\xe9`: Python's str, JavaScript).
            let need = match v {
                0xC2..=0xDF => 2,
                0xE0..=0xEF => 3,
                0xF0..=0xF4 => 4,
                _ => 0,
            };
            let mut buf = [v, 0, 0, 0];
            let mut at = i + len;
            let mut k = 1;
            while k < need
                && let Some((l, b @ 0x80..=0xBF)) = byte_escape(s, at)
            {
                buf[k] = b;
                at += l;
                k += 1;
            }
            if need > 0 && k == need && std::str::from_utf8(&buf[..need]).is_ok() {
                return Some(Escape {
                    len: at - i,
                    buf,
                    n: need,
                });
            }
            Escape::char(len, u32::from(v))
        }
        b'n' => Escape::byte(2, b'\n'),
        b't' => Escape::byte(2, b'\t'),
        b'r' => Escape::byte(2, b'\r'),
        b'b' => Escape::byte(2, 8),
        b'f' => Escape::byte(2, 12),
        b'v' => Escape::byte(2, 11),
        b'a' => Escape::byte(2, 7),
        b'e' | b'E' => Escape::byte(2, 27),
        // A line continued.
        b'\n' => Escape::none(2),
        c => Escape::byte(2, c),
    }
}

/// At `s[i]` (`&`): an HTML character reference (`&#64;`, `&#x40;`, `&quot;`,
/// `&amp;`, `&lt;`, `&gt;`, `&apos;`).
fn entity(s: &[u8], i: usize) -> Option<Escape> {
    let len = s.iter().skip(i + 1).take(10).position(|&b| b == b';')?;
    let name = &s[i + 1..i + 1 + len];
    let c = match name {
        b"quot" => 0x22,
        b"amp" => 0x26,
        b"lt" => 0x3C,
        b"gt" => 0x3E,
        b"apos" => 0x27,
        [b'#', b'x' | b'X', hex @ ..] => hex_at(hex, 0, hex.len())?,
        [b'#', dec @ ..] if (1..=7).contains(&dec.len()) && dec.iter().all(u8::is_ascii_digit) => {
            dec.iter().fold(0, |v, &d| v * 10 + u32::from(d - b'0'))
        }
        _ => return None,
    };
    Escape::char(len + 2, c)
}

/// At `s[i]`: `%XX` (either case), `%uXXXX`, or with `plus` a `+` for a space.
fn percent(s: &[u8], i: usize, plus: bool) -> Option<Escape> {
    match s[i] {
        b'+' if plus => Escape::byte(1, b' '),
        b'%' => match s.get(i + 1) {
            Some(b'u' | b'U') => Escape::char(6, hex_at(s, i + 2, 4)?),
            _ => Escape::byte(3, hex_at(s, i + 1, 2)? as u8),
        },
        _ => None,
    }
}

/// How a shell word is quoted at a point.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Quote {
    None,
    Single,
    Double,
    AnsiC,
}

/// At `s[i]`, in a shell word quoted as `quote` says: a backslash outside quotes
/// escapes any character, `'…'` is literal, `"…"` escapes `$` `` ` `` `"` `\`, `$'…'`
/// takes C escapes; the quotes themselves stand for nothing. Quotes close at the end of
/// a line, so that a stray apostrophe does not change how the next line reads.
fn shell(s: &[u8], i: usize, quote: &mut Quote) -> Option<Escape> {
    let next = s.get(i + 1).copied();
    match (*quote, s[i]) {
        (_, b'\n') => {
            *quote = Quote::None;
            None
        }
        (Quote::None | Quote::Double, b'\\') if next == Some(b'\n') => Escape::none(2),
        (Quote::None, b'\\') => Escape::byte(2, next?),
        (Quote::Double, b'\\') if matches!(next, Some(b'$' | b'`' | b'"' | b'\\')) => {
            Escape::byte(2, next?)
        }
        (Quote::AnsiC, b'\\') => c_escape(s, i),
        (Quote::None, b'\'') => {
            *quote = Quote::Single;
            Escape::none(1)
        }
        (Quote::None, b'"') => {
            *quote = Quote::Double;
            Escape::none(1)
        }
        (Quote::None, b'$') if next == Some(b'\'') => {
            *quote = Quote::AnsiC;
            Escape::none(2)
        }
        (Quote::Single | Quote::AnsiC, b'\'') | (Quote::Double, b'"') => {
            *quote = Quote::None;
            Escape::none(1)
        }
        _ => None,
    }
}

/// The alphabets of binary-to-text encodings read in runs.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Alphabet {
    /// Standard and URL-safe at once (`+` or `-` is 62, `/` or `_` is 63).
    Base64,
    /// Either case.
    Hex,
}

/// Each byte's value in base64 and hex; 0xFF for none.
const BASE64_VALUES: [u8; 256] = alphabet_values(true);
const HEX_VALUES: [u8; 256] = alphabet_values(false);

const fn alphabet_values(base64: bool) -> [u8; 256] {
    let mut t = [0xFF; 256];
    let mut b = 0;
    while b < 256 {
        let c = b as u8;
        t[b] = match c {
            b'0'..=b'9' if base64 => c - b'0' + 52,
            b'0'..=b'9' => c - b'0',
            b'A'..=b'Z' if base64 => c - b'A',
            b'a'..=b'z' if base64 => c - b'a' + 26,
            b'A'..=b'F' => c - b'A' + 10,
            b'a'..=b'f' => c - b'a' + 10,
            b'+' | b'-' if base64 => 62,
            b'/' | b'_' if base64 => 63,
            _ => 0xFF,
        };
        b += 1;
    }
    t
}

impl Alphabet {
    fn values(self) -> &'static [u8; 256] {
        match self {
            Alphabet::Base64 => &BASE64_VALUES,
            Alphabet::Hex => &HEX_VALUES,
        }
    }

    /// Characters that decode to whole bytes together.
    fn group(self) -> usize {
        match self {
            Alphabet::Base64 => 4,
            Alphabet::Hex => 2,
        }
    }

    /// Characters needed for `bytes` decoded bytes.
    fn chars_for(self, bytes: usize) -> usize {
        match self {
            Alphabet::Base64 => (bytes * 4).div_ceil(3),
            Alphabet::Hex => bytes * 2,
        }
    }

    /// The characters (of `n`) that decoded bytes `a..b` come from, whole groups for
    /// base64 (a group is decoded only whole).
    fn holding(self, a: usize, b: usize, n: usize) -> (usize, usize) {
        match self {
            Alphabet::Base64 => (a / 3 * 4, ((b - 1) / 3 * 4 + 4).min(n)),
            Alphabet::Hex => (2 * a, (2 * b).min(n)),
        }
    }

    /// `chars` decoded into `out`; a last partial group gives the bytes it holds whole.
    fn decode(self, chars: &[u8], out: &mut Vec<u8>) {
        out.clear();
        let t = self.values();
        let v = |k: usize| u32::from(t[usize::from(chars[k])]);
        let mut k = 0;
        match self {
            Alphabet::Base64 => {
                while k + 4 <= chars.len() {
                    let w = (v(k) << 18) | (v(k + 1) << 12) | (v(k + 2) << 6) | v(k + 3);
                    out.extend_from_slice(&w.to_be_bytes()[1..]);
                    k += 4;
                }
                let rest = chars.len() - k;
                if rest >= 2 {
                    let mut w = (v(k) << 18) | (v(k + 1) << 12);
                    if rest == 3 {
                        w |= v(k + 2) << 6;
                    }
                    out.extend_from_slice(&w.to_be_bytes()[1..rest]);
                }
            }
            Alphabet::Hex => {
                while k + 2 <= chars.len() {
                    out.push((v(k) * 16 + v(k + 1)) as u8);
                    k += 2;
                }
            }
        }
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

/// Secrets found by decoding what a program wrote (issue 22, item 7): the red team got
/// an inherited database password into every output as Python's `quote(pw)` and a JSON
/// escape write it. Each test holds a form the enumerated encodings missed, beside an
/// honest twin that must come back unchanged.
#[cfg(test)]
mod decoding {
    use super::*;
    use base64::Engine as _;
    use base64::engine::general_purpose::{STANDARD, STANDARD_NO_PAD, URL_SAFE, URL_SAFE_NO_PAD};
    use std::fmt::Write as _;

    /// The red team's password: almost every character of it needs encoding somewhere.
    const PW: &str = "p@ss/w:rd\"é";

    /// PW as the password of a DSN the command only inherits (its URL form fully
    /// percent-encoded, so PW itself is registered as its decoded password).
    fn inherited() -> Scrubber {
        let mut s = Scrubber::default();
        s.add_credentials_of(&format!(
            "postgres://app:{}@db.internal/billing?sslmode=require",
            quote(PW, b"", false)
        ));
        s
    }

    /// `urllib.parse.quote(text, safe)`: bytes outside the unreserved set and `safe`
    /// as `%XX` (lower-case hex with `lower`).
    pub(super) fn quote(text: &str, safe: &[u8], lower: bool) -> String {
        let mut out = String::new();
        for &b in text.as_bytes() {
            if b.is_ascii_alphanumeric() || b"_.-~".contains(&b) || safe.contains(&b) {
                out.push(b as char);
            } else if lower {
                write!(out, "%{b:02x}").unwrap();
            } else {
                write!(out, "%{b:02X}").unwrap();
            }
        }
        out
    }

    /// A JSON string's content: `\"`, `\\` and control characters escaped, and each
    /// character `escape` picks as `\uXXXX` (a surrogate pair beyond the BMP).
    pub(super) fn json(text: &str, escape: impl Fn(usize, char) -> bool) -> String {
        let mut out = String::new();
        for (i, c) in text.chars().enumerate() {
            if escape(i, c) || (c as u32) < 0x20 && c != '\n' {
                let mut units = [0u16; 2];
                for u in c.encode_utf16(&mut units) {
                    write!(out, "\\u{u:04x}").unwrap();
                }
            } else {
                match c {
                    '"' => out.push_str("\\\""),
                    '\\' => out.push_str("\\\\"),
                    '\n' => out.push_str("\\n"),
                    c => out.push(c),
                }
            }
        }
        out
    }

    /// The secret inside ordinary text, as a log line holds it.
    fn line(encoded: &str) -> String {
        format!("db error: cannot log in as app with {encoded} (attempt 2)\n")
    }

    /// What is left of `line(encoded)` once scrubbed must be the line with `***` in
    /// place of the encoded secret (quotes of a shell word may stay around it).
    #[track_caller]
    fn gone(s: &Scrubber, encoded: &str) {
        let out = s.scrub(&line(encoded));
        let middle = out
            .strip_prefix("db error: cannot log in as app with ")
            .and_then(|m| m.strip_suffix(" (attempt 2)\n"))
            .unwrap_or_else(|| panic!("{encoded:?} -> {out:?}"));
        assert!(
            ["***", "'***'", "\"***\"", "$'***'"].contains(&middle),
            "{encoded:?} -> {out:?}"
        );
        // The same through the byte scrubber the output digests use.
        assert_eq!(s.scrub_bytes(line(encoded).as_bytes()), out.as_bytes());
    }

    /// Honest twin: text that holds no secret comes back byte for byte.
    #[track_caller]
    fn kept(s: &Scrubber, text: &str) {
        assert_eq!(s.scrub(text), text);
        assert_eq!(s.scrub_bytes(text.as_bytes()), text.as_bytes());
    }

    #[test]
    fn percent_encoded_with_any_safe_set() {
        let s = inherited();
        for encoded in [
            // Python's urllib.parse.quote(pw): the default safe set is '/'.
            quote(PW, b"/", false),
            quote(PW, b"", true),
            quote(PW, b"@/:", false),
            quote(PW, b"@/:\"", true),
            // Mixed case hex, one escape upper and the next lower.
            "p%40ss%2fw%3Ard%22%c3%A9".to_string(),
        ] {
            gone(&s, &encoded);
        }
        // quote_plus: a space as '+'.
        let mut s = Scrubber::default();
        s.add("correct horse:battery/staple");
        gone(&s, "correct+horse%3Abattery%2Fstaple");
        gone(&s, "correct%20horse:battery/staple");
        // Honest twin: other percent-encoded text, '+' included.
        kept(
            &inherited(),
            "GET /search?q=caf%C3%A9+au+lait&next=%2Fhome&u=p%40ss HTTP/1.1 200\n",
        );
    }

    #[test]
    fn json_escaped_in_every_form() {
        let s = inherited();
        for encoded in [
            // json.dumps(pw): the quote escaped, é as \u00e9 (ensure_ascii).
            json(PW, |_, c| !c.is_ascii()),
            // PHP's json_encode: '/' as \/ too.
            json(PW, |_, c| !c.is_ascii()).replace('/', "\\/"),
            // Every character as \uXXXX, or every other one.
            json(PW, |_, _| true),
            json(PW, |i, _| i % 2 == 0),
            // JSON inside a JSON string (a log line's payload): escaped twice.
            json(&json(PW, |_, c| !c.is_ascii()), |_, _| false),
        ] {
            gone(&s, &encoded);
        }
        // Beyond the BMP, a surrogate pair; a newline as \n.
        let mut s = Scrubber::default();
        s.add("tok😀en\nline-secret");
        gone(&s, &json("tok😀en\nline-secret", |_, c| !c.is_ascii()));
        gone(&s, &json("tok😀en\nline-secret", |_, _| true));
        // Honest twin: a JSON document full of escapes but not the secret.
        kept(
            &inherited(),
            r#"{"name":"caf\u00e9","path":"a\/b","say":"\"hi\"\n","emoji":"\ud83d\ude00","pw":"p@ss"}"#,
        );
    }

    #[test]
    fn shell_escaped_in_every_form() {
        let s = inherited();
        for encoded in [
            // bash `printf %q`: a backslash before each special character.
            r#"p\@ss/w\:rd\"é"#.to_string(),
            // bash's ANSI-C quoting, bytes as \xHH or octal.
            r#"$'p@ss/w:rd"\xc3\xa9'"#.to_string(),
            r#"$'p\x40ss\x2fw:rd\"\303\251'"#.to_string(),
            // Double quotes, the quote escaped.
            r#""p@ss/w:rd\"é""#.to_string(),
        ] {
            gone(&s, &encoded);
        }
        // A password holding a single quote, spliced as shells quote it.
        let mut s = Scrubber::default();
        s.add_credentials_of("postgres://app:it%27s%20a%20s3cret@db/billing");
        // `${pw@Q}` / `printf %q`-style splicing and Python's shlex.quote.
        gone(&s, r"'it'\''s a s3cret'");
        gone(&s, r#"'it'"'"'s a s3cret'"#);
        gone(&s, r"it\'s\ a\ s3cret");
        gone(&s, r"$'it\'s a s3cret'");
        // Honest twin: shell-quoted words that are not the secret.
        kept(
            &s,
            "run: echo 'it'\\''s fine' $'tab\\there' \"a \\\"b\\\"\" it\\'s\\ a\\ test\n",
        );
    }

    #[test]
    fn base64_at_every_alignment() {
        let s = inherited();
        for prefix in ["", "x", "xy", "API_PASSWORD=", "password: "] {
            let data = format!("{prefix}{PW}\n");
            for engine in [&STANDARD, &STANDARD_NO_PAD, &URL_SAFE, &URL_SAFE_NO_PAD] {
                gone(&s, &engine.encode(&data));
                gone(&s, &engine.encode(format!("{data}more data after it")));
            }
        }
        // Honest twin: base64 of other data, padded or not, standard or URL-safe,
        // and a JWT-like token.
        for data in [
            "Some ordinary data that is not a secret",
            "p@ss/w:rd",
            "\u{1}\u{2}ab",
        ] {
            for engine in [&STANDARD, &STANDARD_NO_PAD, &URL_SAFE, &URL_SAFE_NO_PAD] {
                kept(&s, &line(&engine.encode(data)));
            }
        }
        kept(
            &s,
            "Authorization: Bearer eyJhbGciOiJIUzI1NiJ9.eyJzdWIiOiIxMjM0NTY3ODkwIn0.dozjgNryP4J3jVmNHl0w5N_XgL0n3I9PlFUP0THsR8U\n",
        );
    }

    #[test]
    fn hex_in_either_case() {
        let s = inherited();
        for data in [PW.to_string(), format!("pw={PW};"), format!("x{PW}")] {
            gone(&s, &hex::encode(&data));
            gone(&s, &hex::encode_upper(&data));
        }
        // Honest twin: digests and other hex.
        kept(
            &s,
            "sha256 9f86d081884c7d659a2feaa0c55ad015a3bf4f1b2b0b822cd15d6c15b0f00a08 \
             commit 3aa029cf00d1 id 70407373\n",
        );
        kept(&s, &line(&hex::encode("p@ss/w:rd")));
    }

    #[test]
    fn html_character_references() {
        let s = inherited();
        gone(&s, "p&#64;ss/w:rd&quot;&#233;");
        gone(&s, "p&#x40;ss&#x2F;w&#58;rd&#34;é");
        // A JUnit attribute holding JSON: a reference, then a backslash escape.
        gone(&s, "p@ss\\/w:rd\\&quot;\\u00e9");
        // Honest twin.
        kept(
            &s,
            "<failure message=\"expected &quot;caf&#233;&quot; &amp; got &lt;p@ss&gt;\"/>",
        );
    }

    /// A 1-character credential: scrubbed where it stands alone once decoded, as it is
    /// raw; inside a word it stays (the existing rule for short credentials). Hex and
    /// base64 are not searched for it (any blob would hold it by chance).
    #[test]
    fn a_short_credential_decoded_stands_alone() {
        let mut s = Scrubber::default();
        s.add_credentials_of("postgres://app:%C3%A9@db/billing");
        assert_eq!(s.scrub(r#"{"pw": "\u00e9"}"#), r#"{"pw": "***"}"#);
        assert_eq!(s.scrub("pw=%C3%A9&x=1"), "pw=***&x=1");
        assert_eq!(s.scrub(r"pw $'\xc3\xa9' x"), r"pw $'***' x");
        // Honest twins: the same character inside words, and base64 and hex.
        // (`%C3%A9` itself is the password as the DSN holds it: scrubbed anywhere.)
        kept(
            &s,
            r#"{"name": "caf\u00e9", "q": "caf%c3%a9s", "b": "w6k=", "h": "c3a9"}"#,
        );
        let mut s = Scrubber::default();
        s.add_credentials_of("https://h/x?api_key=k9");
        assert_eq!(s.scrub("key %6B9, (k\\x39)"), "key ***, (***)");
        kept(&s, "key %6B9x, k\\x39k9 FSk9NIH");
    }

    /// Output cut at a size limit in the middle of an encoded secret: not even its
    /// first characters show.
    #[test]
    fn an_encoded_secret_cut_at_the_end() {
        let s = inherited();
        for encoded in [
            quote(PW, b"/", false),
            json(PW, |_, _| true),
            STANDARD.encode(format!("pw={PW}")),
            hex::encode(PW),
        ] {
            let half = &encoded[..encoded.len() * 2 / 3];
            let out = s.scrub_cut(&format!("login with {half}"));
            assert_eq!(out, "login with ***", "{half}");
        }
        // Honest twins: a cut that holds no secret's beginning, and one where a
        // beginning is followed by a whole escape that does not go on with the secret.
        assert_eq!(s.scrub_cut("login with %41%42"), "login with %41%42");
        assert_eq!(s.scrub_cut("login with p@s%41"), "login with p@s%41");
    }

    /// An output digest scrubs a long line in parts (`safe_cut`): no encoded secret
    /// may straddle a cut, wherever it lies near it.
    #[test]
    fn a_cut_never_splits_an_encoded_secret() {
        let s = inherited();
        let filler = "lorem ipsum dolor 0123 ".repeat(400);
        for encoded in [
            quote(PW, b"/", false),
            json(PW, |_, _| true),
            STANDARD.encode(format!("pw={PW}")),
            hex::encode_upper(PW),
            r#"$'p@ss/w:rd"\xc3\xa9'"#.to_string(),
        ] {
            for back in (0..1500).step_by(7) {
                let mut text = filler.clone().into_bytes();
                let at = text.len() - back;
                text.splice(at..at, format!(" {encoded} ").into_bytes());
                let whole = s.scrub_bytes(&text);
                assert!(!contains(&whole, encoded.as_bytes()));
                let Some(cut) = s.safe_cut(&text) else {
                    continue;
                };
                let mut parts = s.scrub_bytes(&text[..cut]);
                parts.extend(s.scrub_bytes(&text[cut..]));
                assert_eq!(parts, whole, "{encoded} at {back}, cut {cut}");
            }
        }
    }

    /// A base64 run far longer than the reach of a cut, holding the secret near its end:
    /// the cut cannot go before the run, so it goes before the characters of the secret.
    #[test]
    fn a_cut_in_a_long_base64_run_spares_the_secret() {
        let s = inherited();
        let junk: Vec<u8> = (0..6000u32).map(|i| (i * 7 % 251) as u8).collect();
        // The secret at each distance from the end around the natural cut.
        for after in (0..400).step_by(5) {
            let data = [&junk[..], b"pw=", PW.as_bytes(), &junk[..after]].concat();
            let encoded = STANDARD.encode(&data);
            // The characters that carry the secret's bits.
            let (first, last) = (junk.len() + 3, junk.len() + 3 + PW.len());
            let held = &encoded[first / 3 * 4..(last - 1) / 3 * 4 + 4];
            let text = format!("{} {encoded} .", "lorem ipsum ".repeat(200));
            let text = text.as_bytes();
            let cut = s.safe_cut(text).expect("a cut");
            let mut parts = s.scrub_bytes(&text[..cut]);
            parts.extend(s.scrub_bytes(&text[cut..]));
            for window in held.as_bytes().windows(8) {
                assert!(!contains(&parts, window), "{after}: cut {cut}");
            }
            assert!(!contains(&s.scrub_bytes(text), &encoded.as_bytes()[..40]));
        }
    }

    fn contains(hay: &[u8], needle: &[u8]) -> bool {
        hay.windows(needle.len()).any(|w| w == needle)
    }

    /// Megabytes of output full of encodable text (hex, base64, percent, JSON and
    /// shell escapes) scrub in linear time.
    #[test]
    fn a_large_output_scrubs_fast() {
        let s = inherited();
        let mut text = String::new();
        let mut i = 0u64;
        while text.len() < 4 << 20 {
            let h = hex::encode(i.wrapping_mul(0x9e37_79b9_7f4a_7c15).to_be_bytes());
            writeln!(
                text,
                "{i} GET /a?q=caf%C3%A9+{h}&n={i} {} {{\"m\":\"caf\\u00e9 \\\"{h}\\\"\"}} 'it'\\''s' {h}{h}",
                STANDARD.encode(format!("line {i} {h} some payload")),
            )
            .unwrap();
            i += 1;
        }
        let plain = text.clone();
        text.push_str(&line(&json(PW, |_, c| !c.is_ascii())));
        text.push_str(&line(&STANDARD.encode(format!("pw={PW}"))));
        text.push_str(&plain[..4096]);
        let start = std::time::Instant::now();
        let out = s.scrub(&text);
        let secret = start.elapsed();
        let start = std::time::Instant::now();
        let same = s.scrub(&plain);
        let clean = start.elapsed();
        eprintln!(
            "scrub of {} bytes: {secret:?} with two encoded secrets, {clean:?} without",
            text.len()
        );
        assert_eq!(same, plain);
        assert_eq!(out.matches("***").count(), 2, "both encoded secrets");
        assert!(out.starts_with(&plain) && out.ends_with(&plain[..4096]));
        assert!(
            secret.as_secs_f64() < 20.0 && clean.as_secs_f64() < 20.0,
            "{secret:?} {clean:?}"
        );
    }
}

/// Property-style: many random secrets (any length, characters that need encoding)
/// in every encoding, from a fixed seed. Each is gone from its line, leaving at most
/// the quotes of a shell word around `***`; the same data without the secret, encoded
/// the same way, is left as it is.
#[cfg(test)]
mod random {
    use super::Scrubber;
    use super::decoding::{json, quote};
    use base64::Engine as _;
    use base64::engine::general_purpose::{STANDARD, STANDARD_NO_PAD, URL_SAFE, URL_SAFE_NO_PAD};
    use std::fmt::Write as _;

    /// xorshift64*: deterministic, no dependency.
    struct Rng(u64);
    impl Rng {
        fn next(&mut self) -> u64 {
            self.0 ^= self.0 >> 12;
            self.0 ^= self.0 << 25;
            self.0 ^= self.0 >> 27;
            self.0.wrapping_mul(0x2545_f491_4f6c_dd1d)
        }
        fn below(&mut self, n: usize) -> usize {
            (self.next() % n as u64) as usize
        }
        fn coin(&mut self) -> bool {
            self.next() & 1 == 1
        }
        fn text(&mut self, alphabet: &[char], len: usize) -> String {
            (0..len)
                .map(|_| alphabet[self.below(alphabet.len())])
                .collect()
        }
    }

    /// Characters of the secrets: letters, digits and everything an encoding touches.
    const SECRET: &[char] = &[
        'a', 'b', 'c', 'x', 'y', 'z', 'A', 'B', 'C', 'X', 'Y', 'Z', '0', '1', '8', '9', ' ', '@',
        '/', ':', '"', '\'', '\\', '%', '+', '&', '=', '?', '#', 'é', '€', '😀', '-', '_', '.',
        '~', ';', '$', '`', '!', '*', '<', '>',
    ];
    /// Characters of the honest twins' data: none of the secrets' letters or digits.
    const OTHER: &[char] = &[
        'd', 'e', 'f', 'g', 'h', 'D', 'E', 'F', 'G', '2', '3', '4', ' ', '@', '/', ':', '"', 'ü',
        '%', '+', '\'', '\\',
    ];

    /// The encodings a program writes; `None` where one does not apply (hex and base64
    /// are not searched for a secret shorter than MIN_ENCODED_LEN).
    fn encode(rng: &mut Rng, how: usize, text: &str) -> Option<String> {
        let bytes = text.as_bytes();
        let long = bytes.len() >= super::MIN_ENCODED_LEN;
        Some(match how {
            // Percent-encoding with a random safe set (never '%'), random hex case.
            0 => {
                let mut out = String::new();
                for &b in bytes {
                    let unreserved = b.is_ascii_alphanumeric() || b"_.-~".contains(&b);
                    if unreserved || (b.is_ascii_graphic() && b != b'%' && rng.coin()) {
                        out.push(b as char);
                    } else if rng.coin() {
                        write!(out, "%{b:02x}").unwrap();
                    } else {
                        write!(out, "%{b:02X}").unwrap();
                    }
                }
                out
            }
            // quote_plus.
            1 => quote(text, b"", false).replace("%20", "+"),
            // JSON: the minimal escapes, or a random choice of characters as \uXXXX.
            2 => json(text, |_, _| false),
            3 => {
                let pick: Vec<bool> = text.chars().map(|_| rng.coin()).collect();
                json(text, |i, _| pick[i])
            }
            // JSON inside JSON.
            4 => json(&json(text, |_, c| !c.is_ascii()), |_, _| false),
            // Shell: backslashes, single quotes spliced ('\'' or '"'"'), double
            // quotes, ANSI-C with bytes as \xHH.
            5 => text
                .chars()
                .map(|c| {
                    if c.is_ascii_alphanumeric() || !c.is_ascii() {
                        c.to_string()
                    } else {
                        format!("\\{c}")
                    }
                })
                .collect(),
            6 => format!("'{}'", text.replace('\'', r"'\''")),
            7 => format!("'{}'", text.replace('\'', r#"'"'"'"#)),
            8 => {
                let mut out = String::from("\"");
                for c in text.chars() {
                    if matches!(c, '$' | '`' | '"' | '\\') {
                        out.push('\\');
                    }
                    out.push(c);
                }
                out + "\""
            }
            9 => {
                let mut out = String::from("$'");
                for &b in bytes {
                    if b.is_ascii_alphanumeric() || (b.is_ascii() && b" @/:%+-_.".contains(&b)) {
                        out.push(b as char);
                    } else {
                        write!(out, "\\x{b:02x}").unwrap();
                    }
                }
                out + "'"
            }
            // Base64, any engine, the secret at any alignment within the data.
            10 if long => {
                let engine =
                    [&STANDARD, &STANDARD_NO_PAD, &URL_SAFE, &URL_SAFE_NO_PAD][rng.below(4)];
                let before = "k=v\n\u{0}\u{ff}".as_bytes();
                let mut data = before[..rng.below(before.len() + 1)].to_vec();
                data.extend_from_slice(bytes);
                data.extend_from_slice(&before[..rng.below(before.len() + 1)]);
                engine.encode(data)
            }
            // Hex, either case, after a byte or two.
            11 if long => {
                let data = [&b"\x01\x02"[..rng.below(3)], bytes].concat();
                if rng.coin() {
                    hex::encode(data)
                } else {
                    hex::encode_upper(data)
                }
            }
            // HTML / XML character references, some characters as they are.
            12 => text
                .chars()
                .map(|c| match (c, rng.below(3)) {
                    ('&', 0) => "&amp;".to_string(),
                    ('"', 0) => "&quot;".to_string(),
                    ('<', 0) => "&lt;".to_string(),
                    (c, 0 | 1) => format!("&#{};", c as u32),
                    (c, _) if c != '&' => c.to_string(),
                    (c, _) => format!("&#x{:x};", c as u32),
                })
                .collect(),
            // A URL's query value inside JSON written by PHP: `%40` and `\/` mixed.
            13 => quote(text, b"/", false).replace('/', "\\/"),
            _ => return None,
        })
    }

    #[test]
    fn random_secrets_in_every_encoding() {
        let mut rng = Rng(0x5eed_0022_0007);
        let mut checked = 0;
        for round in 0..500 {
            // Lengths 1..40, the short ones as DSN credentials (scrubbed whatever
            // their length), the others as whole values or credentials.
            let len = 1 + rng.below(if round % 4 == 0 { 3 } else { 40 });
            let secret = rng.text(SECRET, len);
            if secret.trim().is_empty() || !secret.chars().any(char::is_alphanumeric) {
                continue;
            }
            let mut s = Scrubber::default();
            if len < super::MIN_SCRUB_LEN || rng.coin() {
                s.add_credentials_of(&format!(
                    "postgres://app:{}@db.internal/billing",
                    quote(&secret, b"", false)
                ));
            } else {
                s.add(&secret);
            }
            let other = rng.text(OTHER, len.max(super::MIN_SCRUB_LEN));
            for how in 0..14 {
                let Some(encoded) = encode(&mut rng, how, &secret) else {
                    continue;
                };
                let text = format!("«{encoded}» ok\n");
                let out = s.scrub(&text);
                let left: String = out.replace("***", "");
                assert!(
                    out.contains("***")
                        && left.ends_with("» ok\n")
                        && left
                            .trim_end_matches("» ok\n")
                            .chars()
                            .all(|c| "«'\"$".contains(c)),
                    "{secret:?} as {how}: {text:?} -> {out:?}"
                );
                assert_eq!(s.scrub_bytes(text.as_bytes()), out.as_bytes());
                // The honest twin: other data, the same encoding.
                if secret.len() >= super::MIN_SCRUB_LEN
                    && let Some(encoded) = encode(&mut rng, how, &other)
                {
                    let text = format!("«{encoded}» ok\n");
                    assert_eq!(s.scrub(&text), text, "{secret:?}: twin {other:?} as {how}");
                }
                checked += 1;
            }
        }
        assert!(checked > 4000, "{checked}");
    }
}
