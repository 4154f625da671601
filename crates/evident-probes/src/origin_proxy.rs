//! The browser's only way out: an HTTP proxy on 127.0.0.1 that connects to the page's
//! own host and port and to nothing else. DevTools request interception holds what it
//! sees to the page's origin, but it never sees WebSockets, speculative preconnects or
//! WebRTC; with every connection of the browser made through this proxy (loopback
//! included: `--proxy-bypass-list=<-loopback>`), those cannot reach another origin
//! either. It adds nothing to a request: the owner's headers are added by the
//! interception, to requests of the page's origin only.

use std::sync::{Arc, Mutex};
use std::time::Duration;

use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::{TcpListener, TcpStream};
use tokio::task::JoinSet;

/// Largest request head read from the browser.
const MAX_HEAD: usize = 64 * 1024;

/// The running proxy; every task it started is aborted when it is dropped.
pub struct OriginProxy {
    pub port: u16,
    _tasks: Arc<Mutex<JoinSet<()>>>,
    accept: tokio::task::JoinHandle<()>,
}

impl Drop for OriginProxy {
    fn drop(&mut self) {
        self.accept.abort();
        if let Ok(mut t) = self._tasks.lock() {
            t.abort_all();
        }
    }
}

/// Starts the proxy for `host` on `ports`; connections elsewhere are refused and
/// the `scheme://host:port` asked for is told to `blocked`. A port in `tls_only` (443
/// beside an http page: the https upgrade) is only a TLS tunnel: a plain request
/// or WebSocket to it is refused, so a server of the agent's listening there cannot
/// be sent the page's data in the clear (TLS needs a certificate the browser trusts).
pub async fn start(
    host: String,
    ports: Vec<u16>,
    tls_only: Vec<u16>,
    blocked: Arc<dyn Fn(String) + Send + Sync>,
) -> std::io::Result<OriginProxy> {
    let listener = TcpListener::bind("127.0.0.1:0").await?;
    let own = listener.local_addr()?.port();
    let tasks = Arc::new(Mutex::new(JoinSet::new()));
    let set = tasks.clone();
    let accept = tokio::spawn(async move {
        while let Ok((sock, _)) = listener.accept().await {
            let (host, ports, tls, blocked) = (
                host.clone(),
                ports.clone(),
                tls_only.clone(),
                blocked.clone(),
            );
            if let Ok(mut t) = set.lock() {
                // Reap finished connections so the set stays small.
                while t.try_join_next().is_some() {}
                t.spawn(serve(sock, host, ports, tls, blocked));
            }
        }
    });
    Ok(OriginProxy {
        port: own,
        _tasks: tasks,
        accept,
    })
}

async fn serve(
    mut sock: TcpStream,
    host: String,
    ports: Vec<u16>,
    tls_only: Vec<u16>,
    blocked: Arc<dyn Fn(String) + Send + Sync>,
) {
    let mut buf = Vec::new();
    let mut chunk = [0u8; 8192];
    let end = loop {
        if let Some(i) = buf.windows(4).position(|w| w == b"\r\n\r\n") {
            break i + 4;
        }
        if buf.len() > MAX_HEAD {
            return;
        }
        match tokio::time::timeout(Duration::from_secs(10), sock.read(&mut chunk)).await {
            Ok(Ok(n)) if n > 0 => buf.extend_from_slice(&chunk[..n]),
            _ => return,
        }
    };
    let head = String::from_utf8_lossy(&buf[..end]).into_owned();
    let line = head.lines().next().unwrap_or("");
    let mut parts = line.split(' ');
    let method = parts.next().unwrap_or("");
    let target = parts.next().unwrap_or("");
    let connect = method.eq_ignore_ascii_case("CONNECT");
    let asked = if connect {
        split_authority(target, 443).map(|(h, p)| (format!("https://{h}:{p}"), h, p))
    } else {
        url::Url::parse(target).ok().and_then(|u| {
            let h = u.host_str()?.to_string();
            let p = u.port_or_known_default()?;
            Some((format!("{}://{h}:{p}", u.scheme()), h, p))
        })
    };
    let Some((shown, h, p)) = asked else {
        let _ = sock.write_all(FORBIDDEN).await;
        return;
    };
    let tls = tls_only.contains(&p);
    if !same_host(&h, &host) || !ports.contains(&p) || (tls && !connect) {
        blocked(shown);
        let _ = sock.write_all(FORBIDDEN).await;
        return;
    }
    // A TLS-only port: the tunnel is granted first and its first byte must open a TLS
    // handshake record (0x16) before any connection is made, so a plain WebSocket
    // never reaches whatever listens there.
    let mut first = buf[end..].to_vec();
    if tls {
        if sock
            .write_all(b"HTTP/1.1 200 Connection Established\r\n\r\n")
            .await
            .is_err()
        {
            return;
        }
        while first.is_empty() {
            match tokio::time::timeout(Duration::from_secs(10), sock.read(&mut chunk)).await {
                Ok(Ok(n)) if n > 0 => first.extend_from_slice(&chunk[..n]),
                _ => return,
            }
        }
        if first[0] != 0x16 {
            blocked(format!("{shown} (not TLS)"));
            return;
        }
    }
    let Ok(Ok(mut up)) = tokio::time::timeout(
        Duration::from_secs(10),
        TcpStream::connect((host.trim_matches(['[', ']']), p)),
    )
    .await
    else {
        if !tls {
            let _ = sock
                .write_all(
                    b"HTTP/1.1 502 Bad Gateway\r\nContent-Length: 0\r\nConnection: close\r\n\r\n",
                )
                .await;
        }
        return;
    };
    if connect {
        if !tls
            && sock
                .write_all(b"HTTP/1.1 200 Connection Established\r\n\r\n")
                .await
                .is_err()
        {
            return;
        }
        if up.write_all(&first).await.is_err() {
            return;
        }
    } else {
        // One request per connection, in origin form (`GET /path`), as a server that
        // was never behind a proxy expects it; the next request opens a new one.
        let Some(head) = origin_form(&head) else {
            let _ = sock.write_all(FORBIDDEN).await;
            return;
        };
        if up.write_all(head.as_bytes()).await.is_err() || up.write_all(&buf[end..]).await.is_err()
        {
            return;
        }
    }
    let _ = tokio::io::copy_bidirectional(&mut sock, &mut up).await;
}

/// `GET http://h:p/a?b HTTP/1.1` → `GET /a?b HTTP/1.1`, hop-by-hop headers dropped
/// and `Connection: close` set.
fn origin_form(head: &str) -> Option<String> {
    let mut lines = head.split("\r\n");
    let first = lines.next()?;
    let mut parts = first.splitn(3, ' ');
    let (method, target, version) = (parts.next()?, parts.next()?, parts.next()?);
    let u = url::Url::parse(target).ok()?;
    let mut path = u.path().to_string();
    if let Some(q) = u.query() {
        path.push('?');
        path.push_str(q);
    }
    let mut out = format!("{method} {path} {version}\r\n");
    for line in lines.filter(|l| !l.is_empty()) {
        let name = line.split(':').next().unwrap_or("").trim();
        let hop = [
            "connection",
            "proxy-connection",
            "keep-alive",
            "proxy-authorization",
        ]
        .iter()
        .any(|h| name.eq_ignore_ascii_case(h));
        if !hop {
            out.push_str(line);
            out.push_str("\r\n");
        }
    }
    out.push_str("Connection: close\r\n\r\n");
    Some(out)
}

const FORBIDDEN: &[u8] =
    b"HTTP/1.1 403 Forbidden\r\nContent-Length: 0\r\nConnection: close\r\n\r\n";

fn same_host(a: &str, b: &str) -> bool {
    a.trim_matches(['[', ']'])
        .eq_ignore_ascii_case(b.trim_matches(['[', ']']))
}

/// `host:port` (or `[v6]:port`) of a CONNECT request.
fn split_authority(s: &str, default: u16) -> Option<(String, u16)> {
    let (h, p) = match s.rsplit_once(':') {
        Some((h, p)) if !h.is_empty() && !p.contains(']') => (h, p.parse().ok()?),
        _ => (s, default),
    };
    Some((h.to_string(), p))
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Attack (red16): for an http page the proxy also let through 443 (the https
    /// upgrade), for anything: a page's `new WebSocket("ws://127.0.0.1:443/?d=…")`
    /// carried the page's data in the clear to whatever listened there (the agent, as
    /// root). Port 443 is now a TLS tunnel only. Twins: a TLS handshake passes; a
    /// plain WebSocket to the page's own port passes.
    #[tokio::test]
    async fn the_upgrade_port_carries_only_tls() {
        async fn listener() -> (u16, tokio::sync::mpsc::UnboundedReceiver<Vec<u8>>) {
            let l = TcpListener::bind("127.0.0.1:0").await.unwrap();
            let port = l.local_addr().unwrap().port();
            let (tx, rx) = tokio::sync::mpsc::unbounded_channel();
            tokio::spawn(async move {
                while let Ok((mut s, _)) = l.accept().await {
                    let tx = tx.clone();
                    tokio::spawn(async move {
                        let mut b = vec![0u8; 1024];
                        let n = tokio::time::timeout(Duration::from_secs(2), s.read(&mut b))
                            .await
                            .ok()
                            .and_then(Result::ok)
                            .unwrap_or(0);
                        let _ = tx.send(b[..n].to_vec());
                    });
                }
            });
            (port, rx)
        }
        let (page, mut page_rx) = listener().await;
        let (upgrade, mut upgrade_rx) = listener().await;
        let proxy = start(
            "127.0.0.1".into(),
            vec![page, upgrade],
            vec![upgrade],
            Arc::new(|_| {}),
        )
        .await
        .unwrap();
        let send = |port: u16, first: &'static [u8]| {
            let pp = proxy.port;
            async move {
                let mut s = TcpStream::connect(("127.0.0.1", pp)).await.unwrap();
                s.write_all(format!("CONNECT 127.0.0.1:{port} HTTP/1.1\r\n\r\n").as_bytes())
                    .await
                    .unwrap();
                let mut b = [0u8; 64];
                let _ = s.read(&mut b).await;
                let _ = s.write_all(first).await;
                tokio::time::sleep(Duration::from_millis(300)).await;
            }
        };
        send(upgrade, b"GET /ws?d=PAGEDATA HTTP/1.1\r\n\r\n").await;
        let plain = tokio::time::timeout(Duration::from_secs(1), upgrade_rx.recv()).await;
        assert!(
            plain.is_err() || plain.unwrap().is_none_or(|b| b.is_empty()),
            "a plain request reached the upgrade port"
        );
        send(upgrade, b"\x16\x03\x01hello").await;
        let tls = tokio::time::timeout(Duration::from_secs(2), upgrade_rx.recv())
            .await
            .unwrap()
            .unwrap();
        assert!(tls.starts_with(b"\x16\x03\x01"), "twin: TLS passes");
        send(page, b"GET /ws HTTP/1.1\r\n\r\n").await;
        let own = tokio::time::timeout(Duration::from_secs(2), page_rx.recv())
            .await
            .unwrap()
            .unwrap();
        assert!(
            own.starts_with(b"GET /ws"),
            "twin: the page's own port is not TLS-only"
        );
    }

    #[test]
    fn connect_targets_are_split() {
        assert_eq!(
            split_authority("127.0.0.1:9999", 443),
            Some(("127.0.0.1".into(), 9999))
        );
        assert_eq!(split_authority("[::1]:80", 443), Some(("[::1]".into(), 80)));
        assert!(same_host("[::1]", "::1"));
        assert!(!same_host("127.0.0.2", "127.0.0.1"));
        let h = origin_form("GET http://127.0.0.1:8080/a?b=1 HTTP/1.1\r\nHost: 127.0.0.1:8080\r\nProxy-Connection: keep-alive\r\nCookie: x=1\r\n\r\n").unwrap();
        assert_eq!(
            h,
            "GET /a?b=1 HTTP/1.1\r\nHost: 127.0.0.1:8080\r\nCookie: x=1\r\nConnection: close\r\n\r\n"
        );
    }
}
