//! A tiny HTTP/1.1 server on 127.0.0.1 for the probe tests and the benchmark: real
//! sockets, fixed routes, one request per connection.

use std::net::SocketAddr;
use std::time::Duration;

use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::{TcpListener, TcpStream};

/// The bearer token `/auth` accepts.
pub const TOKEN: &str = "tok-3f9a7c1e55d2";

pub struct Server {
    pub addr: SocketAddr,
}

impl Server {
    pub async fn start() -> Server {
        let listener = TcpListener::bind("127.0.0.1:0").await.expect("bind");
        let addr = listener.local_addr().expect("addr");
        tokio::spawn(async move {
            loop {
                let Ok((sock, _)) = listener.accept().await else {
                    return;
                };
                tokio::spawn(handle(sock));
            }
        });
        Server { addr }
    }

    pub fn url(&self, path: &str) -> String {
        format!("http://{}{}", self.addr, path)
    }
}

async fn handle(mut sock: TcpStream) {
    let mut buf = Vec::new();
    let mut chunk = [0u8; 4096];
    while !buf.windows(4).any(|w| w == b"\r\n\r\n") {
        match sock.read(&mut chunk).await {
            Ok(0) | Err(_) => return,
            Ok(n) => buf.extend_from_slice(&chunk[..n]),
        }
        if buf.first() == Some(&0x16) {
            // A TLS ClientHello: answer in plain HTTP, as a real plain server does.
            let _ = sock
                .write_all(b"HTTP/1.1 400 Bad Request\r\nConnection: close\r\n\r\n")
                .await;
            return;
        }
        if buf.len() > 64 * 1024 {
            return;
        }
    }
    let head = String::from_utf8_lossy(&buf).to_string();
    let mut lines = head.split("\r\n");
    let request_line = lines.next().unwrap_or("");
    let mut parts = request_line.split(' ');
    let method = parts.next().unwrap_or("").to_string();
    let path = parts.next().unwrap_or("/").to_string();
    let header = |name: &str| -> Option<String> {
        head.split("\r\n").skip(1).find_map(|l| {
            let (k, v) = l.split_once(':')?;
            k.trim()
                .eq_ignore_ascii_case(name)
                .then(|| v.trim().to_string())
        })
    };
    let (status, extra, body): (&str, Vec<String>, Vec<u8>) = match path.as_str() {
        "/health" => (
            "200 OK",
            vec![
                "Content-Type: application/json".into(),
                "X-Deploy: abc123".into(),
            ],
            br#"{"status":"ok","version":"1.2.3","deploy":{"id":"abc123","replicas":3}}"#.to_vec(),
        ),
        "/text" => ("200 OK", vec![], b"hello world, not json".to_vec()),
        "/fail" => ("500 Internal Server Error", vec![], b"boom".to_vec()),
        "/unavailable" => (
            "503 Service Unavailable",
            vec![],
            b"{\"status\":\"down\"}".to_vec(),
        ),
        "/slow" => {
            tokio::time::sleep(Duration::from_secs(10)).await;
            ("200 OK", vec![], b"late".to_vec())
        }
        "/delay50" => {
            tokio::time::sleep(Duration::from_millis(50)).await;
            ("200 OK", vec![], b"{\"ok\":true}".to_vec())
        }
        "/big" => ("200 OK", vec![], vec![b'x'; 2 * 1024 * 1024]),
        "/big-chunked" => {
            // No Content-Length: the cap must hold while streaming.
            let _ = sock
                .write_all(
                    b"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\nConnection: close\r\n\r\n",
                )
                .await;
            let piece = vec![b'y'; 64 * 1024];
            for _ in 0..40 {
                let _ = sock
                    .write_all(format!("{:x}\r\n", piece.len()).as_bytes())
                    .await;
                if sock.write_all(&piece).await.is_err() {
                    return;
                }
                let _ = sock.write_all(b"\r\n").await;
            }
            let _ = sock.write_all(b"0\r\n\r\n").await;
            return;
        }
        "/redirect" => ("302 Found", vec!["Location: /health".into()], Vec::new()),
        p if p.starts_with("/bounce") => (
            "302 Found",
            vec![format!("Location: /landing?from={}", &p["/bounce".len()..])],
            Vec::new(),
        ),
        "/loop" => ("302 Found", vec!["Location: /loop".into()], Vec::new()),
        // `/away/HOST:PORT/PATH` redirects to `http://HOST:PORT/PATH` (another origin).
        p if p.starts_with("/away/") => (
            "302 Found",
            vec![format!("Location: http://{}", &p["/away/".len()..])],
            Vec::new(),
        ),
        // Echoes what a Basic `Authorization` header carries: the raw credentials,
        // the decoded pair and the user name alone (a token given as a URL's user).
        "/echo-basic" => {
            use base64::Engine as _;
            let raw = header("authorization")
                .and_then(|a| a.strip_prefix("Basic ").map(str::to_string))
                .unwrap_or_default();
            let pair = base64::engine::general_purpose::STANDARD
                .decode(&raw)
                .ok()
                .and_then(|b| String::from_utf8(b).ok())
                .unwrap_or_default();
            let user = pair.split(':').next().unwrap_or("").to_string();
            let body = serde_json::json!({"raw": raw, "pair": pair, "user": user});
            ("200 OK", vec![], body.to_string().into_bytes())
        }
        "/auth" => {
            if header("authorization").as_deref() == Some(&format!("Bearer {TOKEN}")) {
                ("200 OK", vec![], b"{\"user\":\"owner\"}".to_vec())
            } else {
                ("401 Unauthorized", vec![], b"{\"error\":\"no\"}".to_vec())
            }
        }
        _ => ("404 Not Found", vec![], b"not found".to_vec()),
    };
    let mut resp = format!("HTTP/1.1 {status}\r\nConnection: close\r\n");
    for h in extra {
        resp.push_str(&h);
        resp.push_str("\r\n");
    }
    resp.push_str(&format!("Content-Length: {}\r\n\r\n", body.len()));
    let _ = sock.write_all(resp.as_bytes()).await;
    if method != "HEAD" {
        let _ = sock.write_all(&body).await;
    }
    let _ = sock.shutdown().await;
}
