//! Errors as `application/problem+json` (RFC 9457): a stable `type` per kind of
//! error, a human `detail`, and for a bad document the JSON path of each error.

use axum::http::{HeaderValue, StatusCode, header};
use axum::response::{IntoResponse, Response};
use schemars::JsonSchema;
use serde::Serialize;

/// The media type of every error.
pub const PROBLEM_JSON: &str = "application/problem+json";

/// An error response.
#[derive(Debug, Clone, Serialize, JsonSchema)]
pub struct Problem {
    /// A URI naming the kind of error (`urn:evident:problem:<code>`).
    #[serde(rename = "type")]
    pub kind: String,
    /// A short summary of the kind of error.
    pub title: String,
    /// The HTTP status.
    pub status: u16,
    /// What went wrong here, and what to do.
    pub detail: String,
    /// For a document that does not parse: where, and why.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub errors: Vec<ProblemError>,
    /// For a gate still running: where to poll for its decision.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub poll: Option<String>,
    /// The query parameter or header at fault.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub parameter: Option<String>,
    /// Seconds to wait before retrying (also sent as `Retry-After`).
    #[serde(skip)]
    pub retry_after: Option<u64>,
    /// `WWW-Authenticate` for a 401.
    #[serde(skip)]
    pub challenge: bool,
}

/// One error in a document.
#[derive(Debug, Clone, Serialize, JsonSchema)]
pub struct ProblemError {
    /// The JSON path of the offending value, as evident writes it
    /// (`evidence[0].verifier.kind`; `""` is the document root).
    pub path: String,
    /// The same as a JSON Pointer (RFC 6901).
    pub pointer: String,
    /// 1-based line of the value in the body, when known.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub line: Option<usize>,
    /// 1-based column, when known.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub column: Option<usize>,
    /// What is wrong.
    pub message: String,
}

impl Problem {
    /// A problem of kind `code` with `status`.
    pub fn new(status: StatusCode, code: &str, detail: impl Into<String>) -> Problem {
        Problem {
            kind: format!("urn:evident:problem:{code}"),
            title: status.canonical_reason().unwrap_or("Error").to_string(),
            status: status.as_u16(),
            detail: detail.into(),
            errors: Vec::new(),
            poll: None,
            parameter: None,
            retry_after: None,
            challenge: false,
        }
    }

    /// 400 for a query parameter or header.
    pub fn parameter(parameter: &str, detail: impl Into<String>) -> Problem {
        let mut p = Problem::new(StatusCode::BAD_REQUEST, "invalid-parameter", detail);
        p.parameter = Some(parameter.to_string());
        p
    }

    /// 400 for a claim document that does not parse or validate.
    pub fn invalid_document(e: &evident_format::Error) -> Problem {
        let mut p = Problem::new(
            StatusCode::BAD_REQUEST,
            "invalid-claim",
            format!(
                "the claim is not a valid Completion Claim v0.1 document: at {}: {} (see `evident schema claim`)",
                if e.path.is_empty() {
                    "(document root)"
                } else {
                    &e.path
                },
                e.message
            ),
        );
        p.errors.push(ProblemError {
            pointer: pointer(&e.path),
            path: e.path.clone(),
            line: e.pos.map(|p| p.line),
            column: e.pos.map(|p| p.col),
            message: e.message.clone(),
        });
        p
    }

    /// 500, with the detail kept for the log only.
    pub fn internal(what: &str) -> Problem {
        Problem::new(
            StatusCode::INTERNAL_SERVER_ERROR,
            "internal",
            format!("{what}; the server's log says why"),
        )
    }
}

/// `evidence[0].verifier.kind` → `/evidence/0/verifier/kind` (keys escaped per RFC
/// 6901). evident writes keys that are not identifiers as `["…"]`.
pub fn pointer(path: &str) -> String {
    let mut out = String::new();
    let mut rest = path;
    while !rest.is_empty() {
        if let Some(r) = rest.strip_prefix('.') {
            rest = r;
            continue;
        }
        if let Some(r) = rest.strip_prefix('[')
            && r.starts_with('"')
            && let Some(end) = quoted_end(r)
            && let Ok(key) = serde_json::from_str::<String>(&r[..end])
        {
            push_token(&mut out, &key);
            rest = r[end..].strip_prefix(']').unwrap_or(&r[end..]);
            continue;
        }
        if let Some(r) = rest.strip_prefix('[')
            && let Some(end) = r.find(']')
        {
            push_token(&mut out, &r[..end]);
            rest = &r[end + 1..];
            continue;
        }
        let end = rest.find(['.', '[']).unwrap_or(rest.len());
        let end = if end == 0 { rest.len() } else { end };
        push_token(&mut out, &rest[..end]);
        rest = &rest[end..];
    }
    out
}

/// The end (exclusive) of the JSON string at the start of `s`.
fn quoted_end(s: &str) -> Option<usize> {
    let mut escaped = false;
    for (i, c) in s.char_indices().skip(1) {
        match (escaped, c) {
            (true, _) => escaped = false,
            (false, '\\') => escaped = true,
            (false, '"') => return Some(i + 1),
            _ => {}
        }
    }
    None
}

fn push_token(out: &mut String, t: &str) {
    out.push('/');
    out.push_str(&t.replace('~', "~0").replace('/', "~1"));
}

impl IntoResponse for Problem {
    fn into_response(self) -> Response {
        let status = StatusCode::from_u16(self.status).unwrap_or(StatusCode::INTERNAL_SERVER_ERROR);
        let body = serde_json::to_vec(&self).unwrap_or_else(|_| b"{}".to_vec());
        let mut r = (status, body).into_response();
        let h = r.headers_mut();
        h.insert(header::CONTENT_TYPE, HeaderValue::from_static(PROBLEM_JSON));
        if let Some(s) = self.retry_after
            && let Ok(v) = HeaderValue::from_str(&s.to_string())
        {
            h.insert(header::RETRY_AFTER, v);
        }
        if self.challenge {
            h.insert(
                header::WWW_AUTHENTICATE,
                HeaderValue::from_static("Bearer realm=\"evident\""),
            );
        }
        r
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn paths_become_pointers() {
        assert_eq!(pointer(""), "");
        assert_eq!(pointer("spec_version"), "/spec_version");
        assert_eq!(
            pointer("evidence[0].verifier.kind"),
            "/evidence/0/verifier/kind"
        );
        assert_eq!(pointer("a[\"x.y/z~\"].b"), "/a/x.y~1z~0/b");
        assert_eq!(pointer("a[\"q\\\"]\"][2]"), "/a/q\"]/2");
    }
}
