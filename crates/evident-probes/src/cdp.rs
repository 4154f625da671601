//! A small Chrome DevTools Protocol client over Chromium's `--remote-debugging-pipe`:
//! JSON messages ended by a NUL byte, commands written to the browser's fd 3, replies
//! and events read from its fd 4. A pipe, not a port: no other process on the machine
//! (the agent's server on loopback included) can connect to the browser and drive it.

use std::collections::HashMap;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex};

use serde_json::{Value, json};
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::unix::pipe;
use tokio::sync::{mpsc, oneshot};

/// Largest message read from the browser (an outerHTML comes back in one).
pub const MAX_MESSAGE: usize = 32 * 1024 * 1024;

type Reply = Result<Value, CdpError>;

/// Why a DevTools command got no result.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum CdpError {
    /// The pipe to the browser is closed or could not be read (the reason says which).
    #[error("{0}")]
    Pipe(&'static str),
    /// The browser answered with an error; its `message`.
    #[error("{0}")]
    Browser(String),
}
/// Replies awaited, by command id; `None` once the pipe closed.
type Pending = Arc<Mutex<Option<HashMap<u64, oneshot::Sender<Reply>>>>>;

/// A handle for sending commands; cheap to clone (the event handler holds one).
#[derive(Clone)]
pub struct Link {
    tx: mpsc::UnboundedSender<Vec<u8>>,
    pending: Pending,
    next: Arc<AtomicU64>,
}

impl Link {
    /// Sends `method` (to `session`, or the browser when `None`) and returns where its
    /// reply arrives. A closed pipe answers with an error, never hangs.
    pub fn send(
        &self,
        session: Option<&str>,
        method: &str,
        params: Value,
    ) -> oneshot::Receiver<Reply> {
        let (tx, rx) = oneshot::channel();
        let id = self.next.fetch_add(1, Ordering::Relaxed);
        let mut msg = json!({ "id": id, "method": method, "params": params });
        if let Some(s) = session {
            msg["sessionId"] = Value::from(s);
        }
        let registered = match self.pending.lock() {
            Ok(mut p) => match p.as_mut() {
                Some(map) => {
                    map.insert(id, tx);
                    None
                }
                None => Some(tx),
            },
            Err(_) => Some(tx),
        };
        if let Some(tx) = registered {
            let _ = tx.send(Err(CdpError::Pipe("the browser's DevTools pipe is closed")));
            return rx;
        }
        let mut bytes = msg.to_string().into_bytes();
        bytes.push(0);
        if self.tx.send(bytes).is_err() {
            self.fail_all("the browser's DevTools pipe is closed");
        }
        rx
    }

    /// Sends without waiting for the reply (it is dropped when it comes).
    pub fn fire(&self, session: Option<&str>, method: &str, params: Value) {
        drop(self.send(session, method, params));
    }

    /// Sends and waits for the reply's `result`.
    pub async fn call(&self, session: Option<&str>, method: &str, params: Value) -> Reply {
        match self.send(session, method, params).await {
            Ok(r) => r,
            Err(_) => Err(CdpError::Pipe("the browser's DevTools pipe is closed")),
        }
    }

    fn fail_all(&self, why: &'static str) {
        let drained = self.pending.lock().ok().and_then(|mut p| p.take());
        for (_, tx) in drained.into_iter().flatten() {
            let _ = tx.send(Err(CdpError::Pipe(why)));
        }
    }
}

/// Starts the writer and reader tasks. `on_event` sees every event (a message with a
/// `method` and no `id`) on the reader task, in order, and may send commands.
pub fn start(
    write: pipe::Sender,
    read: pipe::Receiver,
    mut on_event: impl FnMut(&Link, &Value) + Send + 'static,
) -> Link {
    let (tx, mut rx) = mpsc::unbounded_channel::<Vec<u8>>();
    let link = Link {
        tx,
        pending: Arc::new(Mutex::new(Some(HashMap::new()))),
        next: Arc::new(AtomicU64::new(1)),
    };
    tokio::spawn(async move {
        let mut write = write;
        while let Some(bytes) = rx.recv().await {
            if write.write_all(&bytes).await.is_err() {
                break;
            }
        }
    });
    let reader = link.clone();
    tokio::spawn(async move {
        let mut read = read;
        let mut buf: Vec<u8> = Vec::new();
        let mut chunk = vec![0u8; 64 * 1024];
        let why = loop {
            let n = match read.read(&mut chunk).await {
                Ok(0) => break "the browser closed its DevTools pipe",
                Ok(n) => n,
                Err(_) => break "reading the browser's DevTools pipe failed",
            };
            let mut start = buf.len();
            buf.extend_from_slice(&chunk[..n]);
            while let Some(end) = buf[start..].iter().position(|&b| b == 0).map(|i| start + i) {
                let msg: Option<Value> = serde_json::from_slice(&buf[..end]).ok();
                buf.drain(..=end);
                start = 0;
                if let Some(msg) = msg {
                    dispatch(&reader, &msg, &mut on_event);
                }
            }
            if buf.len() > MAX_MESSAGE {
                break "a DevTools message exceeds 32 MiB";
            }
        };
        reader.fail_all(why);
    });
    link
}

fn dispatch(link: &Link, msg: &Value, on_event: &mut impl FnMut(&Link, &Value)) {
    if let Some(id) = msg.get("id").and_then(Value::as_u64) {
        let tx = link
            .pending
            .lock()
            .ok()
            .and_then(|mut p| p.as_mut().and_then(|m| m.remove(&id)));
        if let Some(tx) = tx {
            let reply = match msg.get("error") {
                Some(e) => Err(CdpError::Browser(
                    e.get("message")
                        .and_then(Value::as_str)
                        .unwrap_or("DevTools error")
                        .to_string(),
                )),
                None => Ok(msg.get("result").cloned().unwrap_or(Value::Null)),
            };
            let _ = tx.send(reply);
        }
    } else if msg.get("method").is_some() {
        on_event(link, msg);
    }
}
