//! The page alone, over a ledger, for looking at it by hand and for tests:
//!
//! ```sh
//! cargo run -p evident-web --example page -- --ledger /var/lib/evident/ledger.db \
//!     [--listen 127.0.0.1:8080] [--trust trust.toml]
//! ```
//!
//! It has no authentication, so it listens on loopback only; `evident serve` mounts
//! the same router behind its own rules.

use std::net::SocketAddr;
use std::sync::Arc;

fn main() {
    if let Err(e) = run() {
        eprintln!("page: {e}");
        std::process::exit(2);
    }
}

fn run() -> Result<(), String> {
    let mut ledger = None;
    let mut listen = "127.0.0.1:8080".to_string();
    let mut trust = None;
    let mut args = std::env::args().skip(1);
    while let Some(a) = args.next() {
        let mut value = || args.next().ok_or(format!("{a} needs a value"));
        match a.as_str() {
            "--ledger" => ledger = Some(value()?),
            "--listen" => listen = value()?,
            "--trust" => trust = Some(value()?),
            "-h" | "--help" => {
                println!("page --ledger PATH|URL [--listen 127.0.0.1:PORT] [--trust FILE]");
                return Ok(());
            }
            other => return Err(format!("unknown argument {other:?} (see --help)")),
        }
    }
    let addr: SocketAddr = listen
        .parse()
        .map_err(|_| format!("--listen {listen:?} is not an address like 127.0.0.1:8080"))?;
    if !addr.ip().is_loopback() {
        return Err(format!(
            "--listen {addr}: this has no authentication, so it listens on loopback only (use evident serve)"
        ));
    }
    let ledger = evident_ledger::open_existing(ledger.as_deref()).map_err(|e| e.to_string())?;
    let trust = trust
        .map(|t| evident_sign::TrustList::load(std::path::Path::new(&t)).map_err(|e| e.to_string()))
        .transpose()?;
    let decisions = evident_pipeline::view::Decisions::new(ledger);
    let app = evident_web::router(Arc::new(decisions), evident_web::Options { trust });
    let rt = tokio::runtime::Runtime::new().map_err(|e| e.to_string())?;
    rt.block_on(async move {
        let listener = tokio::net::TcpListener::bind(addr)
            .await
            .map_err(|e| format!("cannot listen on {addr}: {e}"))?;
        eprintln!(
            "page: http://{}/",
            listener.local_addr().map_err(|e| e.to_string())?
        );
        axum::serve(listener, app).await.map_err(|e| e.to_string())
    })
}
