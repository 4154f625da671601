//! One HTTP(S) request: GET or HEAD, no proxy, no connection reuse, redirects refused
//! unless the source allows them, the body capped, rustls (ring) for TLS.

use std::sync::OnceLock;
use std::time::Duration;

use reqwest::header::{HeaderName, HeaderValue};
use serde_json::{Map, Value};

use crate::error::ProbeError;
use crate::file::{check_pointer, contains, parse_json, pointer_values};
use crate::secret::{EnvValue, Scrubber, env_var, resolve};
use crate::spec::{HttpSpec, Method, Redirects};
use crate::{Context, Object};

pub const DEFAULT_MAX_BODY_BYTES: u64 = 1024 * 1024;
const MAX_REDIRECTS: usize = 10;

struct Clients {
    no_redirect: reqwest::Client,
    follow: reqwest::Client,
}

fn build(policy: reqwest::redirect::Policy) -> Result<reqwest::Client, reqwest::Error> {
    // The process-wide provider; ignore "already installed" (same or another).
    let _ = rustls::crypto::ring::default_provider().install_default();
    reqwest::Client::builder()
        .no_proxy()
        .pool_max_idle_per_host(0)
        .redirect(policy)
        // One request per probe: reqwest's default retries protocol NACKs.
        .retry(reqwest::retry::never())
        .user_agent(concat!("evident-probes/", env!("CARGO_PKG_VERSION")))
        .build()
}

/// Built once: building a client loads the TLS roots. No connection is pooled, so a
/// client is safe to share between runtimes and every probe sees a fresh connection.
fn clients() -> Result<&'static Clients, ProbeError> {
    static CLIENTS: OnceLock<Result<Clients, reqwest::Error>> = OnceLock::new();
    CLIENTS
        .get_or_init(|| {
            Ok(Clients {
                no_redirect: build(reqwest::redirect::Policy::none())?,
                follow: build(reqwest::redirect::Policy::limited(MAX_REDIRECTS))?,
            })
        })
        .as_ref()
        .map_err(|e| ProbeError::Http {
            reason: format!("cannot build the HTTP client: {}", chain(e)),
        })
}

/// A redirect hop refused because it would carry secret headers to another origin.
#[derive(Debug)]
struct CrossOrigin(String);

impl std::fmt::Display for CrossOrigin {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(
            f,
            "redirect to another origin ({}) refused: the request carries headers from the environment, which must not reach another host",
            self.0
        )
    }
}

impl std::error::Error for CrossOrigin {}

/// Same host, and the same scheme and port or an upgrade to https.
fn same_origin(from: &url::Url, to: &url::Url) -> bool {
    from.host_str() == to.host_str()
        && ((from.scheme() == to.scheme()
            && from.port_or_known_default() == to.port_or_known_default())
            || to.scheme() == "https")
}

/// For a request with headers from the environment: follows redirects only within the
/// origin. reqwest itself strips only `Authorization` and cookies on a cross-host hop,
/// so an `X-Api-Key` taken from the environment would reach any host redirected to.
fn guarded_follow() -> Result<reqwest::Client, ProbeError> {
    build(reqwest::redirect::Policy::custom(|attempt| {
        let cross = attempt
            .previous()
            .last()
            .is_some_and(|prev| !same_origin(prev, attempt.url()));
        if cross {
            let to = authority(attempt.url());
            attempt.error(CrossOrigin(to))
        } else if attempt.previous().len() > MAX_REDIRECTS {
            attempt.error("too many redirects")
        } else {
            attempt.follow()
        }
    }))
    .map_err(|e| ProbeError::Http {
        reason: format!("cannot build the HTTP client: {}", chain(&e)),
    })
}

fn cross_origin(e: &(dyn std::error::Error + 'static)) -> Option<String> {
    let mut cur: Option<&(dyn std::error::Error + 'static)> = Some(e);
    while let Some(c) = cur {
        if let Some(x) = c.downcast_ref::<CrossOrigin>() {
            return Some(x.to_string());
        }
        cur = c.source();
    }
    None
}

/// The causes of an error, without reqwest's top line (which prints the URL).
fn chain(e: &(dyn std::error::Error + 'static)) -> String {
    let mut parts = Vec::new();
    let mut cur = e.source();
    while let Some(c) = cur {
        parts.push(c.to_string());
        cur = c.source();
    }
    if parts.is_empty() {
        "unknown error".to_string()
    } else {
        parts.join(": ")
    }
}

fn refused(e: &(dyn std::error::Error + 'static)) -> bool {
    let mut cur: Option<&(dyn std::error::Error + 'static)> = Some(e);
    while let Some(c) = cur {
        if let Some(io) = c.downcast_ref::<std::io::Error>()
            && io.kind() == std::io::ErrorKind::ConnectionRefused
        {
            return true;
        }
        cur = c.source();
    }
    false
}

fn authority(u: &url::Url) -> String {
    format!(
        "{}:{}",
        u.host_str().unwrap_or("?"),
        u.port_or_known_default().unwrap_or(0)
    )
}

pub async fn observe(
    spec: &HttpSpec,
    ctx: &Context,
    limit: Duration,
    scrub: &mut Scrubber,
) -> Result<Object, ProbeError> {
    let raw = match (&spec.url, &spec.url_env) {
        (Some(u), None) => {
            if url::Url::parse(u).is_ok_and(|p| p.password().is_some()) {
                return Err(ProbeError::invalid(
                    "url contains a password; put the URL in an environment variable and name it in url_env",
                ));
            }
            u.clone()
        }
        (None, Some(name)) => {
            let v = env_var(&ctx.env, name)?;
            scrub.add_url(v);
            v.to_string()
        }
        _ => return Err(ProbeError::invalid("give exactly one of url and url_env")),
    };
    let url = url::Url::parse(&raw)
        .map_err(|e| ProbeError::invalid(format!("the URL is not valid: {e}")))?;
    if url.scheme() != "http" && url.scheme() != "https" {
        return Err(ProbeError::invalid(format!(
            "URL scheme {:?} is not http or https",
            url.scheme()
        )));
    }
    for p in spec.pointers.values() {
        check_pointer(p)?;
    }
    let max = spec.max_body_bytes.unwrap_or(DEFAULT_MAX_BODY_BYTES);
    let target = authority(&url);
    let clients = clients()?;
    let secret_headers = spec.headers.values().any(|v| matches!(v, EnvValue::Env(_)));
    let guarded;
    let client = match spec.redirects {
        Redirects::Follow if secret_headers => {
            guarded = guarded_follow()?;
            &guarded
        }
        Redirects::Follow => &clients.follow,
        Redirects::Refuse | Redirects::Observe => &clients.no_redirect,
    };
    let method = match spec.method {
        Method::Get => reqwest::Method::GET,
        Method::Head => reqwest::Method::HEAD,
    };
    let mut req = client.request(method, url.clone()).timeout(limit);
    for (name, value) in &spec.headers {
        let hn = HeaderName::from_bytes(name.as_bytes())
            .map_err(|_| ProbeError::invalid(format!("header name {name:?} is not valid")))?;
        let v = resolve(value, &ctx.env, scrub)?;
        let mut hv = HeaderValue::from_str(&v).map_err(|_| {
            ProbeError::invalid(format!(
                "the value of header {name:?} is not a valid header value"
            ))
        })?;
        hv.set_sensitive(true);
        req = req.header(hn, hv);
    }
    let limit_ms = u64::try_from(limit.as_millis()).unwrap_or(u64::MAX);
    let map_err = |e: reqwest::Error| request_error(&e, limit_ms, &target);
    let mut resp = req.send().await.map_err(map_err)?;
    let status = resp.status();
    let mut obj = Map::new();
    obj.insert("status".into(), Value::from(status.as_u16()));
    if status.is_redirection() {
        let location = resp
            .headers()
            .get(reqwest::header::LOCATION)
            .map(|v| String::from_utf8_lossy(v.as_bytes()).into_owned())
            .unwrap_or_default();
        match spec.redirects {
            Redirects::Refuse => {
                return Err(ProbeError::RedirectRefused {
                    status: status.as_u16(),
                    location,
                });
            }
            Redirects::Observe => {
                obj.insert("redirect_location".into(), Value::from(location));
            }
            Redirects::Follow => {}
        }
    }
    if !spec.headers_observed.is_empty() {
        let mut h = Map::new();
        for name in &spec.headers_observed {
            let v = resp.headers().get(name.as_str()).map_or(Value::Null, |v| {
                Value::from(String::from_utf8_lossy(v.as_bytes()).into_owned())
            });
            h.insert(name.to_ascii_lowercase(), v);
        }
        obj.insert("headers".into(), Value::Object(h));
    }
    if spec.method == Method::Head {
        if spec.body_contains.is_some() || !spec.pointers.is_empty() {
            return Err(ProbeError::invalid(
                "a HEAD request has no body: body_contains and pointers need GET",
            ));
        }
        return Ok(obj);
    }
    let body = read_capped(&mut resp, max, &map_err).await?;
    if let Some(s) = &spec.body_contains {
        obj.insert(
            "body_contains".into(),
            Value::Bool(contains(&body, s.as_bytes())),
        );
    }
    if !spec.pointers.is_empty() {
        let doc = parse_json(&body, "response body")?;
        obj.insert("json".into(), pointer_values(&doc, &spec.pointers));
    }
    Ok(obj)
}

/// Why a request failed, without the URL (reqwest's top line prints it).
fn request_error(e: &reqwest::Error, limit_ms: u64, target: &str) -> ProbeError {
    if e.is_timeout() {
        ProbeError::Timeout { limit_ms }
    } else if e.is_redirect() {
        ProbeError::Http {
            reason: cross_origin(e)
                .unwrap_or_else(|| format!("more than {MAX_REDIRECTS} redirects")),
        }
    } else if refused(e) {
        ProbeError::ConnectionRefused {
            target: target.to_string(),
        }
    } else if e.is_connect() {
        ProbeError::Connect {
            target: target.to_string(),
            reason: chain(e),
        }
    } else {
        ProbeError::Http { reason: chain(e) }
    }
}

/// The whole body, refused (not truncated) past `max` bytes, announced or streamed.
async fn read_capped(
    resp: &mut reqwest::Response,
    max: u64,
    map_err: &(dyn Fn(reqwest::Error) -> ProbeError + Sync),
) -> Result<Vec<u8>, ProbeError> {
    if let Some(len) = resp.content_length()
        && len > max
    {
        return Err(ProbeError::Oversize {
            what: format!("response body ({len} bytes announced)"),
            limit: max,
        });
    }
    let mut body: Vec<u8> = Vec::new();
    while let Some(chunk) = resp.chunk().await.map_err(map_err)? {
        if body.len() as u64 + chunk.len() as u64 > max {
            return Err(ProbeError::Oversize {
                what: "response body".into(),
                limit: max,
            });
        }
        body.extend_from_slice(&chunk);
    }
    Ok(body)
}

/// One answer to [`get_once`].
pub(crate) struct Answer {
    pub status: u16,
    pub headers: reqwest::header::HeaderMap,
    /// Read only when the caller asked for this status's body.
    pub body: Option<Vec<u8>>,
}

/// One GET through the probes' shared client that never follows a redirect (no proxy,
/// no pooled connection, no retry), under `limit` for the whole exchange; the body is
/// read only when `want_body(status)`, and refused past `max` bytes. For probes that
/// speak one API over HTTP (github_pr), so there is one HTTP stack.
pub(crate) async fn get_once(
    url: &url::Url,
    headers: Vec<(HeaderName, HeaderValue)>,
    limit: Duration,
    max: u64,
    want_body: impl Fn(u16) -> bool,
) -> Result<Answer, ProbeError> {
    let target = authority(url);
    let limit_ms = u64::try_from(limit.as_millis()).unwrap_or(u64::MAX);
    let map_err = |e: reqwest::Error| request_error(&e, limit_ms, &target);
    let client = &clients()?.no_redirect;
    let mut req = client.get(url.clone()).timeout(limit);
    for (name, value) in headers {
        req = req.header(name, value);
    }
    let mut resp = req.send().await.map_err(map_err)?;
    let status = resp.status().as_u16();
    let headers = resp.headers().clone();
    let body = if want_body(status) {
        Some(read_capped(&mut resp, max, &map_err).await?)
    } else {
        None
    };
    Ok(Answer {
        status,
        headers,
        body,
    })
}
