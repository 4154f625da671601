//! A page rendered by a real headless Chromium (Debian's `chromium`), driven over the
//! DevTools protocol on a pipe ([`crate::cdp`]). One run: a fresh profile in a
//! temporary directory, downloads denied, every request of every target (page,
//! frames, workers) paused and held to the page's origin, the owner's headers and
//! cookies added only to requests of that origin, then the selector observed in an
//! isolated JavaScript world (the page's scripts cannot replace the functions that
//! read it). The browser's whole process group is killed and reaped at the end, on
//! timeout too. See docs/browser.md.

use std::collections::{BTreeSet, HashMap};
use std::path::{Path, PathBuf};
use std::process::Stdio;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use serde_json::{Map, Value, json};
use sha2::{Digest, Sha256};
use tokio::net::unix::pipe;

use crate::cdp::{self, Link};
use crate::command::GroupGuard;
use crate::error::ProbeError;
use crate::secret::{Scrubber, env_var, redact_url, resolve};
use crate::spec::{BrowserSpec, Redirects};
use crate::{Context, Object};

/// Where Debian installs the browser itself (`/usr/bin/chromium` is a shell wrapper
/// that reads the user's own init files; the binary is started directly).
const DEBIAN_CHROMIUM: &str = "/usr/lib/chromium/chromium";
/// Most other origins named in `blocked_origins`.
const MAX_BLOCKED_SHOWN: usize = 20;
/// How often the selector is looked for.
const POLL: Duration = Duration::from_millis(100);

/// What can be checked without starting a browser.
pub fn validate(b: &BrowserSpec) -> Result<(), ProbeError> {
    match (&b.url, &b.url_env) {
        (Some(u), None) => {
            page_url(u)?;
        }
        (None, Some(_)) => {}
        _ => return Err(ProbeError::invalid("give exactly one of url and url_env")),
    }
    if b.selector.trim().is_empty() {
        return Err(ProbeError::invalid("selector is empty"));
    }
    if b.redirects == Redirects::Observe {
        return Err(ProbeError::invalid(
            "a browser source refuses or follows redirects (within the page's origin); \"observe\" is for http sources",
        ));
    }
    for name in b.headers.keys() {
        if !is_token(name) {
            return Err(ProbeError::invalid(format!(
                "header name {name:?} is not valid"
            )));
        }
        if name.eq_ignore_ascii_case("cookie") {
            return Err(ProbeError::invalid(
                "set cookies in `cookies`, not as a Cookie header",
            ));
        }
    }
    for name in b.cookies.keys() {
        if !is_token(name) {
            return Err(ProbeError::invalid(format!(
                "cookie name {name:?} is not valid"
            )));
        }
    }
    Ok(())
}

fn is_token(s: &str) -> bool {
    !s.is_empty()
        && s.bytes()
            .all(|b| b.is_ascii_alphanumeric() || b"!#$%&'*+-.^_`|~".contains(&b))
}

fn page_url(raw: &str) -> Result<url::Url, ProbeError> {
    let u = url::Url::parse(raw)
        .map_err(|e| ProbeError::invalid(format!("the URL is not valid: {e}")))?;
    if u.password().is_some() || !u.username().is_empty() {
        return Err(ProbeError::invalid(
            "url contains credentials; put the URL in an environment variable and name it in url_env",
        ));
    }
    if u.scheme() != "http" && u.scheme() != "https" {
        return Err(ProbeError::invalid(format!(
            "URL scheme {:?} is not http or https",
            u.scheme()
        )));
    }
    Ok(u)
}

/// Whether a request of the page may go to `to`: the page's own origin (scheme, host
/// and port), or the same host upgraded to https on its default port. Everything else
/// is blocked before it leaves the browser.
pub(crate) fn same_origin(page: &url::Url, to: &url::Url) -> bool {
    let same = page.scheme() == to.scheme()
        && page.host_str() == to.host_str()
        && page.port_or_known_default() == to.port_or_known_default();
    let upgrade = page.scheme() == "http"
        && to.scheme() == "https"
        && page.host_str() == to.host_str()
        && to.port_or_known_default() == Some(443);
    same || upgrade
}

fn authority(u: &url::Url) -> String {
    match (u.host_str(), u.port_or_known_default()) {
        (Some(h), Some(p)) => format!("{}://{h}:{p}", u.scheme()),
        (Some(h), None) => format!("{}://{h}", u.scheme()),
        _ => format!("{}:", u.scheme()),
    }
}

/// The browser binary: Debian's, else `chromium` (or `chromium-browser`) on the
/// gate's PATH.
fn find_chromium(ctx: &Context) -> Result<PathBuf, ProbeError> {
    if Path::new(DEBIAN_CHROMIUM).is_file() {
        return Ok(PathBuf::from(DEBIAN_CHROMIUM));
    }
    let path = ctx.env.get("PATH").map(String::as_str);
    crate::command::resolve_program("chromium", &ctx.root, path)
        .or_else(|_| crate::command::resolve_program("chromium-browser", &ctx.root, path))
        .map_err(|_| ProbeError::CommandNotFound {
            program: "chromium (install Debian's package: apt-get install chromium)".into(),
        })
}

/// What the event handler saw, shared with the observing task.
#[derive(Default)]
struct Seen {
    /// targetId → sessionId of every attached target.
    sessions: HashMap<String, String>,
    /// The last document response of the page's main frame: status.
    status: Option<u16>,
    /// A redirect of the page's main frame: status and (redacted) location.
    redirect: Option<(u16, String)>,
    /// Other origins a request was blocked to.
    blocked: BTreeSet<String>,
    /// Why the run cannot be trusted (interception could not be set up).
    broken: Option<String>,
}

/// Everything the handler needs to decide on a paused request.
struct Rules {
    page: url::Url,
    /// The page's main frame (its target id); set once the page exists.
    main: Mutex<Option<String>>,
    /// Headers for the page's own origin (the owner's, and `Cookie`).
    headers: Vec<(String, String)>,
    seen: Mutex<Seen>,
    attached: tokio::sync::Notify,
}

impl Rules {
    fn seen(&self) -> std::sync::MutexGuard<'_, Seen> {
        self.seen
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
    }

    fn broken(&self, why: String) {
        let mut s = self.seen();
        s.broken.get_or_insert(why);
    }

    fn on_event(self: &Arc<Self>, link: &Link, msg: &Value) {
        let method = msg.get("method").and_then(Value::as_str).unwrap_or("");
        let params = msg.get("params").cloned().unwrap_or(Value::Null);
        let session = msg.get("sessionId").and_then(Value::as_str);
        match method {
            "Target.attachedToTarget" => self.attached(link, &params),
            "Fetch.requestPaused" => self.paused(link, session, &params),
            "Network.responseReceived" if self.is_main_document(&params) => {
                let status = params
                    .pointer("/response/status")
                    .and_then(Value::as_u64)
                    .and_then(|s| u16::try_from(s).ok());
                self.seen().status = status;
            }
            "Network.requestWillBeSent" => {
                if self.is_main_document(&params)
                    && let Some(r) = params.get("redirectResponse")
                {
                    let status = r
                        .get("status")
                        .and_then(Value::as_u64)
                        .and_then(|s| u16::try_from(s).ok())
                        .unwrap_or(0);
                    let to = params
                        .pointer("/request/url")
                        .and_then(Value::as_str)
                        .map(redact_url)
                        .unwrap_or_default();
                    self.seen().redirect.get_or_insert((status, to));
                }
            }
            _ => {}
        }
    }

    fn is_main_document(&self, params: &Value) -> bool {
        let main = self.main.lock().ok().and_then(|m| m.clone());
        params.get("type").and_then(Value::as_str) == Some("Document")
            && main.is_some()
            && params.get("frameId").and_then(Value::as_str) == main.as_deref()
    }

    /// A new target (the page, a frame in another process, a worker): interception on
    /// before it runs a line. If interception cannot be switched on, the run is broken
    /// (nothing it shows counts).
    fn attached(self: &Arc<Self>, link: &Link, params: &Value) {
        let Some(session) = params.get("sessionId").and_then(Value::as_str) else {
            return;
        };
        let target = params
            .pointer("/targetInfo/targetId")
            .and_then(Value::as_str)
            .unwrap_or("")
            .to_string();
        let kind = params
            .pointer("/targetInfo/type")
            .and_then(Value::as_str)
            .unwrap_or("")
            .to_string();
        let session = session.to_string();
        let s = Some(session.as_str());
        let fetch = link.send(
            s,
            "Fetch.enable",
            json!({ "patterns": [{ "urlPattern": "*", "requestStage": "Request" }] }),
        );
        // Frames and dedicated workers of this target are attached (paused) in turn.
        // (WebSockets and preconnects pass no interception: the origin proxy holds
        // them, crate::origin_proxy.)
        link.fire(
            s,
            "Target.setAutoAttach",
            json!({ "autoAttach": true, "waitForDebuggerOnStart": true, "flatten": true }),
        );
        link.fire(s, "Network.enable", json!({}));
        // WebSockets never pass through Fetch: none may open (a page needing one
        // cannot be observed here; docs/browser.md).
        let rules = self.clone();
        let link = link.clone();
        tokio::spawn(async move {
            let s = Some(session.as_str());
            let resume = match fetch.await {
                Ok(Ok(_)) => true,
                // A dedicated worker has no Fetch domain of its own: Chromium sends its
                // requests through the frame that started it, whose interception holds
                // them (the exfiltration test has a worker reach for another origin).
                Ok(Err(_)) if kind == "worker" => true,
                Ok(Err(e)) => {
                    rules.broken(format!(
                        "request interception could not be switched on for a {kind} target ({e}), so its requests could not be held to the page's origin"
                    ));
                    false
                }
                Err(_) => {
                    rules.broken("the browser went away while starting".into());
                    false
                }
            };
            // A target whose requests cannot be held stays paused: it never runs.
            if resume {
                link.fire(s, "Runtime.runIfWaitingForDebugger", json!({}));
            }
            rules.seen().sessions.insert(target, session);
            rules.attached.notify_waiters();
        });
    }

    /// One request of any target: continued (with the owner's headers) to the page's
    /// origin, failed to every other.
    fn paused(&self, link: &Link, session: Option<&str>, params: &Value) {
        let Some(id) = params.get("requestId").and_then(Value::as_str) else {
            return;
        };
        let raw = params
            .pointer("/request/url")
            .and_then(Value::as_str)
            .unwrap_or("");
        let allowed = url::Url::parse(raw)
            .ok()
            .filter(|u| same_origin(&self.page, u));
        match allowed {
            Some(_) => {
                let mut headers: Vec<(String, String)> = params
                    .pointer("/request/headers")
                    .and_then(Value::as_object)
                    .map(|h| {
                        h.iter()
                            .filter(|(k, _)| {
                                !self.headers.iter().any(|(n, _)| n.eq_ignore_ascii_case(k))
                            })
                            .map(|(k, v)| (k.clone(), v.as_str().unwrap_or("").to_string()))
                            .collect()
                    })
                    .unwrap_or_default();
                headers.extend(self.headers.iter().cloned());
                let list: Vec<Value> = headers
                    .into_iter()
                    .map(|(name, value)| json!({ "name": name, "value": value }))
                    .collect();
                link.fire(
                    session,
                    "Fetch.continueRequest",
                    json!({ "requestId": id, "headers": list }),
                );
            }
            None => {
                let shown = url::Url::parse(raw)
                    .map(|u| authority(&u))
                    .unwrap_or_else(|_| "<unparseable URL>".into());
                self.seen().blocked.insert(shown);
                link.fire(
                    session,
                    "Fetch.failRequest",
                    json!({ "requestId": id, "errorReason": "BlockedByClient" }),
                );
            }
        }
    }
}

/// The running browser: killed (whole process group) and reaped when dropped.
struct Running {
    child: Option<tokio::process::Child>,
    pid: Option<i32>,
    guard: GroupGuard,
}

impl Running {
    /// Kill the group, wait for the browser and reap what it left (its renderers and
    /// helpers, re-parented here when this process is their subreaper).
    async fn stop(mut self) {
        self.guard.kill();
        if let Some(mut c) = self.child.take() {
            let _ = tokio::time::timeout(Duration::from_secs(5), c.wait()).await;
        }
        if let Some(p) = self.pid {
            crate::reaper::ended(p);
            crate::reaper::reap_group(p);
        }
    }
}

impl Drop for Running {
    fn drop(&mut self) {
        self.guard.kill();
        if let Some(p) = self.pid {
            crate::reaper::ended(p);
        }
    }
}

fn launch(
    chromium: &Path,
    profile: &Path,
    proxy: u16,
) -> Result<(Running, pipe::Sender, pipe::Receiver), ProbeError> {
    use command_fds::{CommandFdExt, FdMapping};
    let spawn_err = |reason: String| ProbeError::Spawn {
        program: chromium.display().to_string(),
        reason,
    };
    // fd 3: what the browser reads (our commands); fd 4: what it writes.
    let (to_browser_r, to_browser_w) = rustix::pipe::pipe_with(rustix::pipe::PipeFlags::CLOEXEC)
        .map_err(|e| spawn_err(format!("pipe: {e}")))?;
    let (from_browser_r, from_browser_w) =
        rustix::pipe::pipe_with(rustix::pipe::PipeFlags::CLOEXEC)
            .map_err(|e| spawn_err(format!("pipe: {e}")))?;
    let data = profile.join("profile");
    let home = profile.join("home");
    for d in [&data, &home] {
        std::fs::create_dir_all(d).map_err(|e| spawn_err(format!("profile: {e}")))?;
    }
    let log = std::fs::File::create(profile.join("stderr.log"))
        .map_err(|e| spawn_err(format!("log: {e}")))?;
    let mut args: Vec<String> = vec![
        "--headless".into(),
        "--remote-debugging-pipe".into(),
        format!("--user-data-dir={}", data.display()),
        "--no-first-run".into(),
        "--no-default-browser-check".into(),
        // Every connection through the origin proxy, loopback included (Chromium
        // otherwise bypasses a proxy for loopback), and no QUIC, which it cannot carry.
        format!("--proxy-server=http://127.0.0.1:{proxy}"),
        "--proxy-bypass-list=<-loopback>".into(),
        "--disable-quic".into(),
        "--disable-gpu".into(),
        "--disable-dev-shm-usage".into(),
        "--disable-extensions".into(),
        "--disable-background-networking".into(),
        "--disable-component-update".into(),
        "--disable-sync".into(),
        "--disable-default-apps".into(),
        "--disable-breakpad".into(),
        "--disable-crash-reporter".into(),
        "--disable-domain-reliability".into(),
        "--disable-client-side-phishing-detection".into(),
        "--disable-features=Translate,MediaRouter,OptimizationHints,AutofillServerCommunication"
            .into(),
        "--metrics-recording-only".into(),
        "--password-store=basic".into(),
        "--use-mock-keychain".into(),
        "--mute-audio".into(),
        // WebRTC only through the proxy (which carries no UDP): no STUN or ICE check
        // to a UDP port of the agent's. Full Chromium reads the policy from
        // `--webrtc-ip-handling-policy` (its command-line preference); the `--force-`
        // spelling only headless-shell builds read (found by attacks/dom_exfil.sh).
        "--webrtc-ip-handling-policy=disable_non_proxied_udp".into(),
        "--force-webrtc-ip-handling-policy=disable_non_proxied_udp".into(),
    ];
    if !sandboxed() {
        // Chromium refuses to start as root with its sandbox; the observation says so.
        args.push("--no-sandbox".into());
    }
    args.push("about:blank".into());
    let mut cmd = tokio::process::Command::new(chromium);
    cmd.args(&args)
        .env_clear()
        .env("HOME", &home)
        .env("XDG_CONFIG_HOME", home.join(".config"))
        .env("XDG_CACHE_HOME", home.join(".cache"))
        .env("TMPDIR", profile)
        .current_dir(profile)
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::from(log))
        .process_group(0)
        .kill_on_drop(true);
    cmd.fd_mappings(vec![
        FdMapping {
            parent_fd: to_browser_r,
            child_fd: 3,
        },
        FdMapping {
            parent_fd: from_browser_w,
            child_fd: 4,
        },
    ])
    .map_err(|e| spawn_err(e.to_string()))?;
    let scan = crate::reaper::spawning();
    let child = cmd
        .spawn()
        .map_err(|e| spawn_err(crate::paths::io_reason(&e)))?;
    let pid = child.id().and_then(|id| i32::try_from(id).ok());
    if let Some(p) = pid {
        crate::reaper::started(p);
    }
    drop(scan);
    // The child's ends close here with the command.
    drop(cmd);
    let running = Running {
        child: Some(child),
        pid,
        guard: GroupGuard(pid.and_then(rustix::process::Pid::from_raw)),
    };
    let write =
        pipe::Sender::from_owned_fd(to_browser_w).map_err(|e| spawn_err(format!("pipe: {e}")))?;
    let read = pipe::Receiver::from_owned_fd(from_browser_r)
        .map_err(|e| spawn_err(format!("pipe: {e}")))?;
    Ok((running, write, read))
}

/// Whether Chromium keeps its sandbox: not as root, where it refuses to start with it.
fn sandboxed() -> bool {
    !rustix::process::geteuid().is_root()
}

/// The last lines Chromium wrote to stderr, for an error message.
fn stderr_tail(profile: &Path, scrub: &Scrubber) -> String {
    let text = std::fs::read(profile.join("stderr.log")).unwrap_or_default();
    let text = String::from_utf8_lossy(&text[text.len().saturating_sub(600)..]).into_owned();
    let one = text.split_whitespace().collect::<Vec<_>>().join(" ");
    scrub.scrub(&one)
}

pub async fn observe(
    spec: &BrowserSpec,
    ctx: &Context,
    limit: Duration,
    scrub: &mut Scrubber,
) -> Result<Object, ProbeError> {
    let started = Instant::now();
    validate(spec)?;
    let raw = match (&spec.url, &spec.url_env) {
        (Some(u), None) => u.clone(),
        (None, Some(name)) => {
            let v = env_var(&ctx.env, name)?;
            scrub.add_url(v);
            v.to_string()
        }
        _ => return Err(ProbeError::invalid("give exactly one of url and url_env")),
    };
    let page = page_url(&raw)?;
    let mut headers: Vec<(String, String)> = Vec::new();
    for (name, value) in &spec.headers {
        let v = resolve(value, &ctx.env, scrub)?;
        if v.chars().any(|c| c.is_control()) {
            return Err(ProbeError::invalid(format!(
                "the value of header {name:?} is not a valid header value"
            )));
        }
        headers.push((name.clone(), v));
    }
    if !spec.cookies.is_empty() {
        let mut pairs = Vec::new();
        for (name, value) in &spec.cookies {
            let v = resolve(value, &ctx.env, scrub)?;
            if v.chars().any(|c| c.is_control() || c == ';' || c == ',') {
                return Err(ProbeError::invalid(format!(
                    "the value of cookie {name:?} is not a valid cookie value"
                )));
            }
            pairs.push(format!("{name}={v}"));
        }
        headers.push(("Cookie".into(), pairs.join("; ")));
    }
    let chromium = find_chromium(ctx)?;
    let profile = tempfile::Builder::new()
        .prefix("evident-browser-")
        .tempdir()
        .map_err(|e| ProbeError::Spawn {
            program: chromium.display().to_string(),
            reason: format!("cannot make a profile directory: {e}"),
        })?;
    let rules = Arc::new(Rules {
        page: page.clone(),
        main: Mutex::new(None),
        headers,
        seen: Mutex::new(Seen::default()),
        attached: tokio::sync::Notify::new(),
    });
    let mut ports: Vec<u16> = page.port_or_known_default().into_iter().collect();
    let mut tls_only = Vec::new();
    if page.scheme() == "http" && !ports.contains(&443) {
        ports.push(443);
        tls_only.push(443);
    }
    let recorder = rules.clone();
    let proxy = crate::origin_proxy::start(
        page.host_str().unwrap_or_default().to_string(),
        ports,
        tls_only,
        Arc::new(move |origin| {
            recorder.seen().blocked.insert(origin);
        }),
    )
    .await
    .map_err(|e| ProbeError::Spawn {
        program: chromium.display().to_string(),
        reason: format!("cannot start the origin proxy: {e}"),
    })?;
    let (running, write, read) = launch(&chromium, profile.path(), proxy.port)?;
    let handler = rules.clone();
    let link = cdp::start(write, read, move |link, msg| handler.on_event(link, msg));
    // Leave time to stop the browser and say why, inside the caller's limit.
    let margin = (limit / 10).min(Duration::from_secs(2));
    let deadline = started + limit.saturating_sub(margin);
    let result = drive(spec, &page, &link, &rules, deadline, limit).await;
    let _ = tokio::time::timeout(
        Duration::from_millis(500),
        link.call(None, "Browser.close", json!({})),
    )
    .await;
    running.stop().await;
    drop(proxy);
    let result = result.map_err(|e| match e {
        ProbeError::Spawn { program, reason } => ProbeError::Spawn {
            program,
            reason: format!(
                "{reason}; chromium said: {}",
                stderr_tail(profile.path(), scrub)
            ),
        },
        e => e,
    });
    drop(profile);
    let mut obj = result?;
    obj.insert("sandboxed".into(), Value::Bool(sandboxed()));
    Ok(obj)
}

async fn drive(
    spec: &BrowserSpec,
    page: &url::Url,
    link: &Link,
    rules: &Arc<Rules>,
    deadline: Instant,
    limit: Duration,
) -> Result<Object, ProbeError> {
    let limit_ms = u64::try_from(limit.as_millis()).unwrap_or(u64::MAX);
    let timeout = |what: &str| ProbeError::Http {
        reason: format!("{what} within the time limit of {limit_ms} ms"),
    };
    let dev = |method: &str, e: crate::cdp::CdpError| ProbeError::Spawn {
        program: "chromium".into(),
        reason: format!("DevTools {method} failed: {e}"),
    };
    let until = |d: Instant| tokio::time::Instant::from_std(d);
    let call = |session: Option<String>, method: &'static str, params: Value| {
        let link = link.clone();
        async move {
            match tokio::time::timeout_at(
                until(deadline),
                link.call(session.as_deref(), method, params),
            )
            .await
            {
                Ok(Ok(v)) => Ok(v),
                Ok(Err(e)) => Err(dev(method, e)),
                Err(_) => Err(timeout(&format!("the browser did not answer {method}"))),
            }
        }
    };
    call(
        None,
        "Browser.setDownloadBehavior",
        json!({ "behavior": "deny" }),
    )
    .await?;
    call(
        None,
        "Target.setAutoAttach",
        json!({ "autoAttach": true, "waitForDebuggerOnStart": true, "flatten": true }),
    )
    .await?;
    let created = call(None, "Target.createTarget", json!({ "url": "about:blank" })).await?;
    let target = created
        .get("targetId")
        .and_then(Value::as_str)
        .ok_or_else(|| {
            dev(
                "Target.createTarget",
                crate::cdp::CdpError::Browser("no targetId".into()),
            )
        })?
        .to_string();
    if let Ok(mut m) = rules.main.lock() {
        *m = Some(target.clone());
    }
    // Wait until the handler has switched interception on for the page.
    let session = loop {
        let notified = rules.attached.notified();
        if let Some(s) = rules.seen().sessions.get(&target) {
            break s.clone();
        }
        if tokio::time::timeout_at(until(deadline), notified)
            .await
            .is_err()
        {
            return Err(timeout("the browser did not attach the page"));
        }
    };
    if let Some(why) = rules.seen().broken.clone() {
        return Err(ProbeError::Http { reason: why });
    }
    let s = Some(session);
    let nav = call(s.clone(), "Page.navigate", json!({ "url": page.as_str() })).await?;
    let target_shown = authority(page);
    if let Some(err) = nav
        .get("errorText")
        .and_then(Value::as_str)
        .filter(|e| !e.is_empty())
    {
        let status = rules.seen().status;
        if let Some(st) = status.filter(|s| *s >= 500) {
            return Err(server_error(st));
        }
        if err.contains("ERR_CONNECTION_REFUSED") {
            return Err(ProbeError::ConnectionRefused {
                target: target_shown,
            });
        }
        return Err(ProbeError::Connect {
            target: target_shown,
            reason: format!("the browser could not load the page: {err}"),
        });
    }
    let expr = script(&spec.selector, &spec.attributes);
    loop {
        {
            let seen = rules.seen();
            if let Some(why) = &seen.broken {
                return Err(ProbeError::Http {
                    reason: why.clone(),
                });
            }
            if let Some((status, location)) = &seen.redirect
                && spec.redirects == Redirects::Refuse
            {
                return Err(ProbeError::RedirectRefused {
                    status: *status,
                    location: location.clone(),
                });
            }
            if let Some(st) = seen.status.filter(|s| *s >= 500) {
                return Err(server_error(st));
            }
        }
        let world = call(
            s.clone(),
            "Page.createIsolatedWorld",
            json!({ "frameId": target, "worldName": "evident" }),
        )
        .await;
        let found = match world
            .ok()
            .and_then(|w| w.get("executionContextId").and_then(Value::as_i64))
        {
            // Between documents (a navigation in progress): try again.
            None => None,
            Some(ctx) => {
                let r = call(
                    s.clone(),
                    "Runtime.evaluate",
                    json!({ "expression": expr, "contextId": ctx, "returnByValue": true }),
                )
                .await;
                match r {
                    Ok(r) if r.get("exceptionDetails").is_none() => {
                        r.pointer("/result/value").cloned().filter(|v| !v.is_null())
                    }
                    Ok(_) => None,
                    // The page kept its thread busy past the deadline.
                    Err(_) if Instant::now() >= deadline => {
                        return Err(not_found(spec, rules.seen().status, limit_ms, true));
                    }
                    Err(e) => return Err(e),
                }
            }
        };
        if let Some(v) = found {
            if let Some(e) = v.get("error").and_then(Value::as_str) {
                return Err(ProbeError::invalid(format!(
                    "selector {:?} is not valid CSS: {e}",
                    spec.selector
                )));
            }
            let seen = rules.seen();
            return Ok(observed(&v, seen.status, &seen.blocked));
        }
        if Instant::now() + POLL >= deadline {
            return Err(not_found(spec, rules.seen().status, limit_ms, false));
        }
        tokio::time::sleep(POLL).await;
    }
}

/// The selector was not seen in time; `busy`: the page stopped answering the read.
fn not_found(spec: &BrowserSpec, status: Option<u16>, limit_ms: u64, busy: bool) -> ProbeError {
    ProbeError::Http {
        reason: format!(
            "selector {:?} did not appear on the loaded page (HTTP {}) within the time limit of {limit_ms} ms{}",
            spec.selector,
            status.map_or("status unknown".to_string(), |s| s.to_string()),
            if busy {
                " (the page's scripts kept it from answering)"
            } else {
                ""
            }
        ),
    }
}

fn server_error(status: u16) -> ProbeError {
    ProbeError::Http {
        reason: format!(
            "the page answered HTTP {status} (a server error), which is not an observation of the page"
        ),
    }
}

/// The expression run in the isolated world: `null` until the document has loaded
/// and the selector matches; then what is observed (the subtree as HTML, hashed here).
fn script(selector: &str, attributes: &[String]) -> String {
    let sel = Value::from(selector).to_string();
    let names = Value::from(attributes.to_vec()).to_string();
    format!(
        r#"(() => {{
  if (document.readyState !== "complete") return null;
  let all;
  try {{ all = document.querySelectorAll({sel}); }} catch (e) {{ return {{ error: String(e.message) }}; }}
  if (all.length === 0) return null;
  const el = all[0];
  // Seen by a person: some of its text (or, without text, its box) is painted at a
  // point where the page's own hit test finds this element — not scaled to nothing,
  // clipped, off the page, covered, in a transparent colour or at font size 0.
  const hit = (r) => {{
    if (r.width < 1 || r.height < 1) return false;
    const x = r.left + r.width / 2, y = r.top + r.height / 2;
    if (x < 0 || y < 0 || x >= innerWidth || y >= innerHeight) return false;
    const at = document.elementFromPoint(x, y);
    return at !== null && el.contains(at);
  }};
  const alpha = (c) => {{
    const m = /rgba?\(([^)]*)\)/.exec(c || "");
    if (!m) return c === "transparent" ? 0 : 1;
    const parts = m[1].split(/[\s,\/]+/).filter(Boolean);
    return parts.length > 3 ? parseFloat(parts[3]) : 1;
  }};
  const seen = (el) => {{
    const r = el.getBoundingClientRect();
    if (r.width < 1 || r.height < 1) return false;
    el.scrollIntoView({{ block: "center", inline: "center" }});
    const walker = document.createTreeWalker(el, NodeFilter.SHOW_TEXT);
    let texts = 0;
    for (let n = walker.nextNode(); n; n = walker.nextNode()) {{
      if (!n.data.trim() || !n.parentElement) continue;
      texts++;
      const cs = getComputedStyle(n.parentElement);
      if (alpha(cs.color) === 0 || alpha(cs.webkitTextFillColor) === 0) continue;
      if (parseFloat(cs.fontSize) < 1) continue;
      const range = document.createRange();
      range.selectNodeContents(n);
      for (const q of range.getClientRects()) if (hit(q)) return true;
    }}
    return texts === 0 && hit(el.getBoundingClientRect());
  }};
  const attributes = {{}};
  for (const n of {names}) attributes[n] = el.getAttribute(n);
  const boxes = el.getClientRects().length > 0;
  const shown = typeof el.checkVisibility === "function"
    ? el.checkVisibility({{ opacityProperty: true, visibilityProperty: true }})
    : true;
  const text = typeof el.innerText === "string" ? el.innerText : el.textContent;
  return {{ count: all.length, text: text || "", visible: boxes && shown && seen(el), attributes, html: el.outerHTML }};
}})()"#
    )
}

fn observed(v: &Value, status: Option<u16>, blocked: &BTreeSet<String>) -> Object {
    let mut obj = Map::new();
    obj.insert("status".into(), status.map_or(Value::Null, Value::from));
    obj.insert(
        "count".into(),
        v.get("count").cloned().unwrap_or(Value::Null),
    );
    let text = v.get("text").and_then(Value::as_str).unwrap_or("");
    obj.insert("text".into(), Value::from(normalise(text)));
    obj.insert(
        "visible".into(),
        Value::Bool(v.get("visible") == Some(&Value::Bool(true))),
    );
    let attrs = v
        .get("attributes")
        .and_then(Value::as_object)
        .cloned()
        .unwrap_or_default();
    if !attrs.is_empty() {
        obj.insert("attributes".into(), Value::Object(attrs));
    }
    let html = v.get("html").and_then(Value::as_str).unwrap_or("");
    obj.insert(
        "html_sha256".into(),
        Value::from(hex::encode(Sha256::digest(html.as_bytes()))),
    );
    if !blocked.is_empty() {
        let shown: Vec<Value> = blocked
            .iter()
            .take(MAX_BLOCKED_SHOWN)
            .map(|s| Value::from(s.as_str()))
            .collect();
        obj.insert("blocked_origins".into(), Value::Array(shown));
    }
    obj
}

/// Whitespace runs (any Unicode whitespace, newlines included) become one space; the
/// ends are trimmed: `"  Paid\n "` reads `"Paid"`.
pub(crate) fn normalise(s: &str) -> String {
    s.split_whitespace().collect::<Vec<_>>().join(" ")
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::collections::BTreeMap;

    #[test]
    fn origins_are_scheme_host_and_port() {
        let page = url::Url::parse("http://127.0.0.1:8080/orders/4471").unwrap();
        let ok = |u: &str| same_origin(&page, &url::Url::parse(u).unwrap());
        assert!(ok("http://127.0.0.1:8080/api/status"));
        assert!(ok("https://127.0.0.1/x"));
        assert!(
            !ok("http://127.0.0.1:9999/steal"),
            "another port is another origin"
        );
        assert!(
            !ok("https://127.0.0.1:8443/"),
            "an upgrade only to the default port"
        );
        assert!(!ok("http://localhost:8080/"), "another host name");
        assert!(!ok("ws://127.0.0.1:8080/"));
        assert!(!ok("file:///etc/passwd"));
    }

    #[test]
    fn text_is_whitespace_normalised() {
        assert_eq!(normalise("  Paid\n\t now \u{a0}"), "Paid now");
        assert_eq!(normalise(""), "");
    }

    #[test]
    fn credentials_and_bad_selectors_are_refused_before_a_browser_starts() {
        let spec = |url: &str, sel: &str| BrowserSpec {
            url: Some(url.into()),
            url_env: None,
            selector: sel.into(),
            timeout_s: None,
            headers: BTreeMap::new(),
            cookies: BTreeMap::new(),
            redirects: Redirects::Refuse,
            attributes: Vec::new(),
        };
        assert!(validate(&spec("http://u:p@127.0.0.1/", "#a")).is_err());
        assert!(validate(&spec("file:///etc/passwd", "#a")).is_err());
        assert!(validate(&spec("http://127.0.0.1/", "  ")).is_err());
        assert!(validate(&spec("http://127.0.0.1/", "#a")).is_ok());
        let mut s = spec("http://127.0.0.1/", "#a");
        s.redirects = Redirects::Observe;
        assert!(validate(&s).is_err());
    }
}
