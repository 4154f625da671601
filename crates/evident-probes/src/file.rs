//! A file under the contract's root: presence, size, digest, and opt-in views of its
//! content (text, substrings, JSON pointers).

use std::collections::BTreeMap;
use std::io::Read;
use std::path::Path;

use serde_json::{Map, Value};

use crate::error::ProbeError;
use crate::spec::FileSpec;
use crate::{Context, Object, paths};

pub const DEFAULT_MAX_FILE_BYTES: u64 = 64 * 1024 * 1024;

pub async fn observe(spec: &FileSpec, ctx: &Context) -> Result<Object, ProbeError> {
    let spec = spec.clone();
    let root = ctx.root.clone();
    let secrets = ctx.secrets.clone();
    tokio::task::spawn_blocking(move || observe_with_secrets(&spec, &root, &secrets))
        .await
        .map_err(|e| ProbeError::Io {
            path: String::new(),
            reason: format!("file probe task failed: {e}"),
        })?
}

pub(crate) fn observe_blocking(spec: &FileSpec, root: &Path) -> Result<Object, ProbeError> {
    observe_with_secrets(spec, root, &crate::Scrubber::default())
}

/// The file probe, its `sha256` taken of the content as scrubbed of `secrets` (the
/// red team's test wrote an inherited password alone into the file a readback
/// observed, publishing `sha256("hunter2")`); a file holding no secret hashes as its
/// raw bytes.
fn observe_with_secrets(
    spec: &FileSpec,
    root: &Path,
    secrets: &crate::Scrubber,
) -> Result<Object, ProbeError> {
    if let Some(pc) = &spec.postcondition {
        let max = spec.max_bytes.unwrap_or(DEFAULT_MAX_FILE_BYTES);
        return crate::postcondition::observe(&spec.path, pc, root, max);
    }
    for p in spec.pointers.values() {
        check_pointer(p)?;
    }
    let rel = paths::relative(&spec.path)?;
    let dir = paths::root_dir(root)?;
    let max = spec.max_bytes.unwrap_or(DEFAULT_MAX_FILE_BYTES);
    let mut obj = Map::new();
    let meta = match dir.metadata(&rel) {
        Ok(m) => m,
        // ENOTDIR: a parent is a file, so nothing is at this path either.
        Err(e) if e.kind() == std::io::ErrorKind::NotFound || e.raw_os_error() == Some(20) => {
            if let Ok(m) = dir.symlink_metadata(&rel)
                && m.file_type().is_symlink()
            {
                return Err(ProbeError::DanglingSymlink {
                    path: spec.path.clone(),
                });
            }
            obj.insert("exists".into(), Value::Bool(false));
            return Ok(obj);
        }
        Err(e) => return Err(paths::open_error(&spec.path, &e)),
    };
    obj.insert("exists".into(), Value::Bool(true));
    let wants_content = spec.text || !spec.contains.is_empty() || !spec.pointers.is_empty();
    if !meta.is_file() {
        let kind = if meta.is_dir() { "dir" } else { "other" };
        obj.insert("kind".into(), Value::from(kind));
        if wants_content {
            return Err(ProbeError::Io {
                path: spec.path.clone(),
                reason: format!("content requested but the path is a {kind}, not a file"),
            });
        }
        return Ok(obj);
    }
    obj.insert("kind".into(), Value::from("file"));
    // Opened without blocking and checked again: what was a file at the look may be a
    // FIFO by the open (paths::open_regular).
    let (file, meta) =
        paths::open_regular(&dir, &rel, true).map_err(|e| paths::open_error(&spec.path, &e))?;
    if meta.len() > max {
        return Err(ProbeError::Oversize {
            what: format!("file {:?} ({} bytes)", spec.path, meta.len()),
            limit: max,
        });
    }
    // Read at most max + 1 bytes: a file that grew past the limit is still caught.
    let mut reader = file.take(max.saturating_add(1));
    let mut hasher = crate::command::StreamDigest::new(Some(secrets));
    let mut kept = Vec::new();
    let mut buf = vec![0u8; 64 * 1024];
    let mut total: u64 = 0;
    loop {
        let n = reader.read(&mut buf).map_err(|e| ProbeError::Io {
            path: spec.path.clone(),
            reason: paths::io_reason(&e),
        })?;
        if n == 0 {
            break;
        }
        total += n as u64;
        if total > max {
            return Err(ProbeError::Oversize {
                what: format!("file {:?}", spec.path),
                limit: max,
            });
        }
        hasher.update(&buf[..n]);
        if wants_content {
            kept.extend_from_slice(&buf[..n]);
        }
    }
    // Both of the content as scrubbed: a file holding a secret shows neither its hash
    // nor its length (the size of a file the agent wrote, less what it wrote, would be
    // the secret's length). A file without one shows its own size and digest.
    let (sha256, size) = hasher.finish_with_len();
    obj.insert("size".into(), Value::from(size));
    obj.insert("sha256".into(), Value::from(sha256));
    if !spec.contains.is_empty() {
        let mut c = Map::new();
        for s in &spec.contains {
            c.insert(s.clone(), Value::Bool(contains(&kept, s.as_bytes())));
        }
        obj.insert("contains".into(), Value::Object(c));
    }
    if spec.text {
        let text = std::str::from_utf8(&kept).map_err(|e| ProbeError::Format {
            what: format!("file {:?}", spec.path),
            expected: "UTF-8 text".into(),
            reason: e.to_string(),
        })?;
        obj.insert("text".into(), Value::from(text));
    }
    if !spec.pointers.is_empty() {
        let doc = parse_json(&kept, &format!("file {:?}", spec.path))?;
        obj.insert("json".into(), pointer_values(&doc, &spec.pointers));
    }
    Ok(obj)
}

/// A JSON pointer is empty or starts with `/` (RFC 6901).
pub fn check_pointer(p: &str) -> Result<(), ProbeError> {
    if p.is_empty() || p.starts_with('/') {
        Ok(())
    } else {
        Err(ProbeError::invalid(format!(
            "JSON pointer {p:?} must be empty or start with '/'"
        )))
    }
}

/// Strict JSON (evident's reader): a duplicate key at any depth is refused, because
/// which of the two values counts depends on who reads the document.
pub fn parse_json(bytes: &[u8], what: &str) -> Result<Value, ProbeError> {
    evident_format::json::parse(bytes)
        .map(|p| p.value)
        .map_err(|e| ProbeError::Format {
            what: what.to_string(),
            expected: "strict JSON".into(),
            reason: format!("{} at line {} column {}", e.message, e.pos.line, e.pos.col),
        })
}

/// Each pointer's value under its name; a pointer that resolves to nothing is left out
/// (not observed), so it can neither satisfy nor contradict.
pub fn pointer_values(doc: &Value, pointers: &BTreeMap<String, String>) -> Value {
    let mut m = Map::new();
    for (name, p) in pointers {
        if let Some(v) = doc.pointer(p) {
            m.insert(name.clone(), v.clone());
        }
    }
    Value::Object(m)
}

pub fn contains(hay: &[u8], needle: &[u8]) -> bool {
    needle.is_empty() || hay.windows(needle.len()).any(|w| w == needle)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Attack (the check-then-open race red16 found in the snapshot walk, here in the
    /// file probe): a process of the agent's swaps a FIFO and a regular file at the
    /// probed path. Where the look (`stat`) saw a file and the open met the FIFO, the
    /// open blocked for ever (no writer) and the gate with it, past its time limit:
    /// the blocking thread never ends and the runtime waits for it. Every observation
    /// now ends at once (a file, "other", or "replaced while it was read"); twin: with
    /// no swapping the file is observed with its digest.
    #[test]
    fn a_fifo_swapped_in_after_the_look_never_blocks_the_probe() {
        let d = tempfile::tempdir().unwrap();
        let root = d.path().to_path_buf();
        std::fs::write(root.join("f"), "ready\n").unwrap();
        let spec = FileSpec {
            path: "f".into(),
            text: false,
            contains: Vec::new(),
            pointers: BTreeMap::new(),
            max_bytes: None,
            postcondition: None,
        };
        let twin = observe_blocking(&spec, &root).unwrap();
        assert_eq!(twin["kind"], "file");
        assert_eq!(twin["size"], 6);
        let stop = std::sync::Arc::new(std::sync::atomic::AtomicBool::new(false));
        let swapper = {
            let (root, stop) = (root.clone(), stop.clone());
            std::thread::spawn(move || {
                let mut i = 0u64;
                while !stop.load(std::sync::atomic::Ordering::Relaxed) {
                    let tmp = root.join(format!("t{i}"));
                    if i.is_multiple_of(2) {
                        let _ = rustix::fs::mknodat(
                            rustix::fs::CWD,
                            &tmp,
                            rustix::fs::FileType::Fifo,
                            rustix::fs::Mode::from_raw_mode(0o600),
                            0,
                        );
                    } else {
                        let _ = std::fs::write(&tmp, "ready\n");
                    }
                    let _ = std::fs::rename(&tmp, root.join("f"));
                    i += 1;
                }
            })
        };
        let (tx, rx) = std::sync::mpsc::channel();
        {
            let root = root.clone();
            std::thread::spawn(move || {
                let mut kinds = BTreeMap::<String, u32>::new();
                // 20,000 looks, and on until both kinds were seen (for at most 30 s): on a
                // loaded machine the swapper may not run at all during the first ones.
                let started = std::time::Instant::now();
                for looks in 0.. {
                    let both = kinds.contains_key("file") && kinds.contains_key("other");
                    if looks >= 20_000 && (both || started.elapsed().as_secs() >= 30) {
                        break;
                    }
                    let k = match observe_blocking(&spec, &root) {
                        Ok(o) => o["kind"].as_str().unwrap_or("?").to_string(),
                        Err(e) => format!("error: {e}").chars().take(80).collect(),
                    };
                    *kinds.entry(k).or_default() += 1;
                }
                let _ = tx.send(kinds);
            });
        }
        let got = rx.recv_timeout(std::time::Duration::from_secs(60));
        stop.store(true, std::sync::atomic::Ordering::Relaxed);
        let kinds = got.expect("an observation blocked: a FIFO opened as the file");
        swapper.join().unwrap();
        assert!(
            kinds.contains_key("file") && kinds.contains_key("other"),
            "{kinds:?}"
        );
    }
}
