//! A GitHub pull request's state (the reference's v0.8 verifier): one authenticated GET
//! of `/repos/{owner}/{name}/pulls/{n}` through the http probe's client (no redirect,
//! no retry, no proxy), the body capped, the answer read strictly.
//!
//! Three outcomes, kept apart. *Indeterminate* — authentication, permission, rate limit,
//! 404 (GitHub answers 404 for a private repository the token cannot see), redirect,
//! network, a server error, an oversize or malformed answer, duplicate JSON keys, a bad
//! shape, merged-while-open, a `Date` more than 300 s off — is a
//! [`ProbeError::Github`] with its reason code: nothing was observed. A fresh,
//! authenticated answer that contradicts the contract is an observation whose flags are
//! false (the gate refutes); a full match has every flag true. The observation holds
//! eight booleans and fixed labels, never an id, ref, name or URL.

use std::time::Duration;

use reqwest::header::{HeaderMap, HeaderName, HeaderValue};
use serde_json::{Map, Value};

use crate::error::ProbeError;
use crate::secret::{Scrubber, env_var};
use crate::spec::{GithubPrSpec, PrState};
use crate::{Context, Object};

/// The API a `github_pr` source asks when it names no `api_url`.
pub const DEFAULT_API_URL: &str = "https://api.github.com";
/// Seconds a `github_pr` read may take when the source sets no `timeout_s`.
pub const DEFAULT_TIMEOUT_S: f64 = 10.0;
/// Largest answer read when the source sets no `max_body_bytes` (1 MiB).
pub const DEFAULT_MAX_BODY_BYTES: u64 = 1024 * 1024;
/// The API version the answer is read as.
pub const API_VERSION: &str = "2022-11-28";
/// Most seconds a server `Date` may be from the moment the answer arrived.
pub const MAX_DATE_SKEW_S: i64 = 300;
/// Most seconds between the observation and the decision (checked by the gate).
pub const MAX_AGE_S: i64 = 60;
/// Most seconds an observation may lie after the decision (a clock that stepped).
pub const MAX_FUTURE_S: i64 = 5;

/// The eight flags, in the order mismatches are reported, with each one's reason.
pub const FLAGS: [(&str, &str); 7] = [
    (
        "repository_identity_matches",
        "repository_identity_mismatch",
    ),
    ("pull_request_matches", "pull_request_mismatch"),
    ("state_matches", "state_mismatch"),
    ("head_matches", "head_mismatch"),
    ("head_repository_matches", "head_repository_mismatch"),
    ("base_matches", "base_mismatch"),
    ("merge_matches", "merge_mismatch"),
];

/// The default expectation: every flag true, fresh.
pub fn default_expected() -> Object {
    let mut m = Map::new();
    for (flag, _) in FLAGS {
        m.insert(flag.into(), Value::Bool(true));
    }
    m.insert("fresh".into(), Value::Bool(true));
    m
}

/// Keys the observation has, with their JSON types.
pub const OBSERVED_KEYS: [(&str, &str); 12] = [
    ("provider", "a string"),
    ("kind", "a string"),
    ("outcome", "a string"),
    ("reason", "a string"),
    ("repository_identity_matches", "a boolean"),
    ("pull_request_matches", "a boolean"),
    ("state_matches", "a boolean"),
    ("head_matches", "a boolean"),
    ("head_repository_matches", "a boolean"),
    ("base_matches", "a boolean"),
    ("merge_matches", "a boolean"),
    ("fresh", "a boolean"),
];

fn is_oid(s: &str) -> bool {
    (s.len() == 40 || s.len() == 64) && s.bytes().all(|b| b.is_ascii_hexdigit())
}

fn is_ref(s: &str) -> bool {
    !s.is_empty() && s.len() <= 255 && !s.chars().any(char::is_control)
}

fn is_repo_part(s: &str) -> bool {
    !s.is_empty()
        && s != "."
        && s != ".."
        && s.bytes()
            .all(|b| b.is_ascii_alphanumeric() || matches!(b, b'_' | b'.' | b'-'))
}

fn is_env_name(s: &str) -> bool {
    !s.is_empty() && !s.contains(['=', '\0'])
}

/// What can be checked before anything runs: `(field, message with a hint)`, the field
/// relative to the source (`github_pr.expected_head_oid`).
pub fn check(spec: &GithubPrSpec) -> Result<(), (String, String)> {
    let at = |f: &str| format!("github_pr.{f}");
    let repo_ok = spec.repository.len() <= 200
        && spec
            .repository
            .split_once('/')
            .is_some_and(|(o, n)| is_repo_part(o) && is_repo_part(n));
    if !repo_ok {
        return Err((
            at("repository"),
            "repository must be owner/name (letters, digits, `_`, `.`, `-`; not `.` or `..`) (hint: write it as in github.com/OWNER/NAME)".into(),
        ));
    }
    if spec.repository_id == 0 {
        return Err((
            at("repository_id"),
            "repository_id must be a positive integer (hint: `gh api repos/OWNER/NAME --jq .id`)"
                .into(),
        ));
    }
    if spec.pull_number == 0 {
        return Err((
            at("pull_number"),
            "pull_number must be a positive integer".into(),
        ));
    }
    if !is_oid(&spec.expected_head_oid) {
        return Err((
            at("expected_head_oid"),
            format!(
                "expected_head_oid must be a full 40- or 64-character hex object id, got {} characters (hint: the full output of `git rev-parse HEAD`)",
                spec.expected_head_oid.chars().count()
            ),
        ));
    }
    if !is_ref(&spec.expected_base_ref) {
        return Err((
            at("expected_base_ref"),
            "expected_base_ref must be a branch name of 1 to 255 characters without control characters (hint: main)".into(),
        ));
    }
    if let Some(m) = &spec.expected_merge_oid {
        if spec.expected_state != PrState::Merged {
            return Err((
                at("expected_merge_oid"),
                "expected_merge_oid needs expected_state = \"merged\" (hint: drop it, or declare the pull request merged)".into(),
            ));
        }
        if !is_oid(m) {
            return Err((
                at("expected_merge_oid"),
                "expected_merge_oid must be a full 40- or 64-character hex object id".into(),
            ));
        }
    }
    if spec.expected_head_repository_id == Some(0) {
        return Err((
            at("expected_head_repository_id"),
            "expected_head_repository_id must be a positive integer".into(),
        ));
    }
    if !is_env_name(&spec.token_env) {
        return Err((
            at("token_env"),
            "token_env must name the environment variable that holds the token (hint: token_env = \"GITHUB_TOKEN\")".into(),
        ));
    }
    api_base(spec).map_err(|m| (at("api_url"), m.0))?;
    if let Some(t) = spec.timeout_s
        && !(t.is_finite() && t > 0.0)
    {
        return Err((
            at("timeout_s"),
            format!("timeout_s must be a positive number, got {t}"),
        ));
    }
    if spec.max_body_bytes == Some(0) {
        return Err((
            at("max_body_bytes"),
            "max_body_bytes must be at least 1".into(),
        ));
    }
    Ok(())
}

evident_format::message_error! {
    /// Why an `api_url` or an answer from GitHub is refused: a message, with its hint.
    pub struct Refused;
}

/// The API base: `https`, or `http` to a loopback address only (a test server; a token
/// must not cross a network in clear); no credentials, query or fragment.
fn api_base(spec: &GithubPrSpec) -> Result<url::Url, Refused> {
    let raw = spec.api_url.as_deref().unwrap_or(DEFAULT_API_URL);
    let u = url::Url::parse(raw).map_err(|e| {
        format!("api_url is not a URL: {e} (hint: https://api.github.com, or https://HOST/api/v3)")
    })?;
    let loopback = match u.host() {
        Some(url::Host::Ipv4(a)) => a.is_loopback(),
        Some(url::Host::Ipv6(a)) => a.is_loopback(),
        Some(url::Host::Domain(d)) => d.eq_ignore_ascii_case("localhost"),
        None => false,
    };
    match u.scheme() {
        "https" => {}
        "http" if loopback => {}
        "http" => {
            return Err(
                "api_url uses http to a host that is not loopback: the token would cross the network in clear (hint: use https)".into(),
            );
        }
        s => return Err(format!("api_url scheme {s:?} is not https").into()),
    }
    if u.host().is_none() || u.cannot_be_a_base() {
        return Err("api_url has no host".into());
    }
    if !u.username().is_empty() || u.password().is_some() {
        return Err(
            "api_url contains credentials (hint: put the token in the variable token_env names)"
                .into(),
        );
    }
    if u.query().is_some() || u.fragment().is_some() {
        return Err("api_url must not have a query or fragment".into());
    }
    Ok(u)
}

/// The request's URL.
pub fn request_url(spec: &GithubPrSpec) -> Result<url::Url, Refused> {
    let base = api_base(spec)?;
    let url = format!(
        "{}/repos/{}/pulls/{}",
        base.as_str().trim_end_matches('/'),
        spec.repository,
        spec.pull_number
    );
    url::Url::parse(&url).map_err(|e| Refused(format!("the request URL is not valid: {e}")))
}

fn indeterminate(reason: &str, detail: impl Into<String>) -> ProbeError {
    ProbeError::Github {
        reason: reason.into(),
        detail: detail.into(),
    }
}

/// Runs the one GET and reads the answer.
pub async fn observe(
    spec: &GithubPrSpec,
    ctx: &Context,
    limit: Duration,
    scrub: &mut Scrubber,
) -> Result<Object, ProbeError> {
    check(spec).map_err(|(f, m)| ProbeError::invalid(format!("{f}: {m}")))?;
    let token = match env_var(&ctx.env, &spec.token_env) {
        Ok(t) => t.to_string(),
        Err(_) => {
            return Err(indeterminate(
                "authentication_failed",
                format!("environment variable {} is not set", spec.token_env),
            ));
        }
    };
    scrub.add(&token);
    let auth = HeaderValue::from_str(&format!("Bearer {token}"))
        .ok()
        .filter(|_| !token.trim().is_empty());
    let Some(mut auth) = auth else {
        return Err(indeterminate(
            "authentication_failed",
            format!(
                "the token in {} is empty or not a valid header value",
                spec.token_env
            ),
        ));
    };
    auth.set_sensitive(true);
    let url = request_url(spec).map_err(|m| ProbeError::invalid(m.0))?;
    let headers = vec![
        (reqwest::header::AUTHORIZATION, auth),
        (
            reqwest::header::ACCEPT,
            HeaderValue::from_static("application/vnd.github+json"),
        ),
        (
            HeaderName::from_static("x-github-api-version"),
            HeaderValue::from_static(API_VERSION),
        ),
    ];
    let max = spec.max_body_bytes.unwrap_or(DEFAULT_MAX_BODY_BYTES);
    let started = time::OffsetDateTime::now_utc();
    let answer = crate::http::get_once(&url, headers, limit, max, |s| s == 200)
        .await
        .map_err(|e| match e {
            ProbeError::Oversize { .. } => {
                indeterminate("invalid_provider_response", e.to_string())
            }
            other => indeterminate("provider_unavailable", other.to_string()),
        })?;
    let finished = time::OffsetDateTime::now_utc();
    if let Some((reason, detail)) = refusal(answer.status, &answer.headers) {
        return Err(indeterminate(reason, detail));
    }
    let body = answer.body.unwrap_or_default();
    let snap = snapshot(&body).map_err(|d| indeterminate("invalid_provider_response", d.0))?;
    let date = provider_date(&answer.headers)
        .map_err(|d| indeterminate("invalid_provider_response", d.0))?;
    if let Some(why) = not_fresh(started, finished, date) {
        return Err(indeterminate("observation_not_fresh", why));
    }
    Ok(compare(spec, &snap))
}

/// The indeterminate reading of a status other than 200, in the reference's order.
pub fn refusal(status: u16, headers: &HeaderMap) -> Option<(&'static str, String)> {
    let text = |name: &str| {
        headers
            .get(name)
            .map(|v| String::from_utf8_lossy(v.as_bytes()).trim().to_string())
    };
    let limited = text("retry-after").is_some_and(|v| !v.is_empty())
        || text("x-ratelimit-remaining").as_deref() == Some("0");
    let said = |what: &str| format!("HTTP {status}: {what}");
    Some(match status {
        200 => return None,
        401 => ("authentication_failed", said("the token was not accepted")),
        404 => (
            "resource_unobservable",
            said(
                "not found, or not visible to this token (GitHub answers 404 for a private repository it cannot see), so absence is not proven",
            ),
        ),
        429 => ("rate_limited", said("rate limited")),
        403 if limited => (
            "rate_limited",
            said("rate limited (Retry-After or X-RateLimit-Remaining: 0)"),
        ),
        403 => (
            "permission_unverified",
            said("the token may not read this pull request"),
        ),
        300..=399 => ("redirect_rejected", said("redirects are not followed")),
        500.. => ("provider_unavailable", said("a server error")),
        _ => (
            "invalid_provider_response",
            said("not an answer to this request"),
        ),
    })
}

/// The parts of the answer compared with the contract.
#[derive(Debug, PartialEq)]
pub struct Snapshot {
    /// The base repository's stable id (`base.repo.id`): the pull request's identity.
    pub repository_id: u64,
    /// The pull request's number.
    pub number: u64,
    /// Whether `state` is `open`.
    pub open: bool,
    /// Whether it was merged (never together with `open`).
    pub merged: bool,
    /// The head commit (`head.sha`), lowercase hex.
    pub head_oid: String,
    /// The head repository's id; `None` when GitHub gives none (a deleted fork).
    pub head_repository_id: Option<u64>,
    /// The base branch (`base.ref`).
    pub base_ref: String,
    /// The merge commit (`merge_commit_sha`), when GitHub gives one.
    pub merge_oid: Option<String>,
}

/// Reads the body strictly: UTF-8, JSON without duplicate keys, the shape GitHub
/// documents, and no pull request both open and merged.
pub fn snapshot(body: &[u8]) -> Result<Snapshot, Refused> {
    let doc = evident_format::json::parse(body).map_err(|e| match e.key {
        Some(_) => "the answer has a duplicate JSON key (readers disagree on which value counts)"
            .to_string(),
        None => format!("the answer is not strict JSON: {}", e.message),
    })?;
    let v = doc.value;
    let obj = |v: &Value, what: &str| -> Result<Map<String, Value>, Refused> {
        v.as_object()
            .cloned()
            .ok_or_else(|| Refused(format!("{what} is not an object")))
    };
    let positive = |v: Option<&Value>, what: &str| -> Result<u64, Refused> {
        v.and_then(Value::as_u64)
            .filter(|n| *n > 0)
            .ok_or_else(|| Refused(format!("{what} is not a positive integer")))
    };
    let oid = |v: Option<&Value>, what: &str| -> Result<String, Refused> {
        v.and_then(Value::as_str)
            .filter(|s| is_oid(s))
            .map(str::to_ascii_lowercase)
            .ok_or_else(|| Refused(format!("{what} is not a 40- or 64-character hex object id")))
    };
    let top = obj(&v, "the answer")?;
    let head = obj(top.get("head").unwrap_or(&Value::Null), "head")?;
    let base = obj(top.get("base").unwrap_or(&Value::Null), "base")?;
    let base_repo = obj(base.get("repo").unwrap_or(&Value::Null), "base.repo")?;
    let head_repository_id = match head.get("repo") {
        None | Some(Value::Null) => None,
        Some(r) => Some(positive(obj(r, "head.repo")?.get("id"), "head.repo.id")?),
    };
    let open = match top.get("state").and_then(Value::as_str) {
        Some("open") => true,
        Some("closed") => false,
        _ => return Err("state is not \"open\" or \"closed\"".into()),
    };
    let merged = top
        .get("merged")
        .and_then(Value::as_bool)
        .ok_or("merged is not a boolean")?;
    if open && merged {
        return Err("the pull request is both open and merged".into());
    }
    let base_ref = base
        .get("ref")
        .and_then(Value::as_str)
        .filter(|s| is_ref(s))
        .ok_or("base.ref is not a branch name")?
        .to_string();
    let merge_oid = match top.get("merge_commit_sha") {
        None | Some(Value::Null) => None,
        Some(m) => Some(oid(Some(m), "merge_commit_sha")?),
    };
    Ok(Snapshot {
        repository_id: positive(base_repo.get("id"), "base.repo.id")?,
        number: positive(top.get("number"), "number")?,
        open,
        merged,
        head_oid: oid(head.get("sha"), "head.sha")?,
        head_repository_id,
        base_ref,
        merge_oid,
    })
}

/// The server's `Date` (IMF-fixdate, or RFC 2822), when it sent one. Several, or one
/// that does not parse, is a malformed answer.
pub fn provider_date(headers: &HeaderMap) -> Result<Option<time::OffsetDateTime>, Refused> {
    let mut all = headers.get_all(reqwest::header::DATE).iter();
    let Some(v) = all.next() else {
        return Ok(None);
    };
    if all.next().is_some() {
        return Err("the answer has several Date headers".into());
    }
    let s = v
        .to_str()
        .map_err(|_| "the Date header is not text")?
        .trim();
    parse_http_date(s)
        .map(Some)
        .ok_or_else(|| Refused::from("the Date header is not an HTTP date"))
}

/// `Sun, 06 Nov 1994 08:49:37 GMT` (RFC 9110's IMF-fixdate) or RFC 2822.
pub fn parse_http_date(s: &str) -> Option<time::OffsetDateTime> {
    let imf = time::macros::format_description!(
        "[weekday repr:short], [day] [month repr:short] [year] [hour]:[minute]:[second] GMT"
    );
    if let Ok(p) = time::PrimitiveDateTime::parse(s, imf) {
        return Some(p.assume_utc());
    }
    time::OffsetDateTime::parse(s, &time::format_description::well_known::Rfc2822).ok()
}

/// Why the answer is not fresh: the clock stepped back during the request, or the
/// server's `Date` is more than [`MAX_DATE_SKEW_S`] from when the answer arrived.
pub fn not_fresh(
    started: time::OffsetDateTime,
    finished: time::OffsetDateTime,
    date: Option<time::OffsetDateTime>,
) -> Option<String> {
    if started > finished {
        return Some("the clock went back during the request".into());
    }
    let skew = (date? - finished).whole_seconds();
    (skew.abs() > MAX_DATE_SKEW_S).then(|| {
        format!(
            "the server's Date is {} s from the local clock (more than {MAX_DATE_SKEW_S} s): the answer may be replayed or the clock wrong",
            skew.abs()
        )
    })
}

/// Why an observation completed at `completed` no longer speaks for the pull request
/// at `now`: older than [`MAX_AGE_S`], or more than [`MAX_FUTURE_S`] after it. The gate
/// asks this of a check's last observation just before deciding.
pub fn stale_at(completed: time::OffsetDateTime, now: time::OffsetDateTime) -> Option<ProbeError> {
    let age = (now - completed).whole_seconds();
    let why = if age > MAX_AGE_S {
        format!("the observation is {age} s old at the decision (more than {MAX_AGE_S} s)")
    } else if -age > MAX_FUTURE_S {
        format!("the observation is dated {} s after the decision", -age)
    } else {
        return None;
    };
    Some(indeterminate("observation_not_fresh", why))
}

/// The observation: each flag, `fresh`, and the first mismatch as `reason`.
pub fn compare(spec: &GithubPrSpec, s: &Snapshot) -> Object {
    let state = match spec.expected_state {
        PrState::Open => s.open && !s.merged,
        PrState::Closed => !s.open && !s.merged,
        PrState::Merged => s.merged,
    };
    let values = [
        s.repository_id == spec.repository_id,
        s.number == spec.pull_number,
        state,
        s.head_oid == spec.expected_head_oid.to_ascii_lowercase(),
        spec.expected_head_repository_id
            .is_none_or(|id| s.head_repository_id == Some(id)),
        s.base_ref == spec.expected_base_ref,
        spec.expected_merge_oid
            .as_ref()
            .is_none_or(|m| s.merge_oid.as_deref() == Some(m.to_ascii_lowercase().as_str())),
    ];
    let reason = FLAGS
        .iter()
        .zip(values)
        .find(|(_, ok)| !ok)
        .map(|((_, r), _)| *r);
    let mut o = Map::new();
    o.insert("provider".into(), Value::from("github"));
    o.insert("kind".into(), Value::from("pull_request"));
    o.insert(
        "outcome".into(),
        Value::from(if reason.is_some() {
            "mismatch"
        } else {
            "match"
        }),
    );
    o.insert("reason".into(), Value::from(reason.unwrap_or("matched")));
    for ((flag, _), ok) in FLAGS.iter().zip(values) {
        o.insert((*flag).into(), Value::Bool(ok));
    }
    o.insert("fresh".into(), Value::Bool(true));
    o
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn dates() {
        let d = parse_http_date("Sun, 06 Nov 1994 08:49:37 GMT").unwrap();
        assert_eq!(d.unix_timestamp(), 784111777);
        assert!(parse_http_date("Sun, 06 Nov 1994 08:49:37 +0000").is_some());
        assert!(parse_http_date("yesterday").is_none());
        assert!(parse_http_date("").is_none());
    }

    #[test]
    fn age_at_the_decision() {
        let t = time::OffsetDateTime::now_utc();
        let s = time::Duration::seconds;
        assert!(stale_at(t, t + s(60)).is_none());
        assert!(stale_at(t, t + s(61)).is_some());
        assert!(stale_at(t + s(5), t).is_none());
        assert!(stale_at(t + s(6), t).is_some());
    }

    #[test]
    fn freshness() {
        let t = time::OffsetDateTime::now_utc();
        let s = time::Duration::seconds;
        assert!(not_fresh(t, t, None).is_none());
        assert!(not_fresh(t, t, Some(t - s(300))).is_none());
        assert!(not_fresh(t, t, Some(t - s(301))).is_some());
        assert!(not_fresh(t, t, Some(t + s(301))).is_some());
        assert!(not_fresh(t + s(1), t, None).is_some());
    }
}
