//! Where the memory of reading one large claim goes, stage by stage (resident set
//! from /proc/self/status after each). A profiling aid outside CI:
//! `cargo run --release -p evident-format --example claim_memory -- CLAIM.json`.

fn status(field: &str) -> u64 {
    std::fs::read_to_string("/proc/self/status")
        .unwrap_or_default()
        .lines()
        .find(|l| l.starts_with(field))
        .and_then(|l| l.split_whitespace().nth(1)?.parse().ok())
        .unwrap_or(0)
}

fn show(stage: &str, size: usize) {
    let rss = status("VmRSS:");
    println!(
        "{stage:<34} RSS {:>7.1} MiB ({:.2}× the file), peak {:>7.1} MiB",
        rss as f64 / 1024.0,
        rss as f64 * 1024.0 / size as f64,
        status("VmHWM:") as f64 / 1024.0
    );
}

fn main() {
    let path = std::env::args()
        .nth(1)
        .expect("usage: claim_memory CLAIM.json");
    show("start", 1);
    let bytes = std::fs::read(&path).expect("readable claim");
    let size = bytes.len();
    show("file read", size);
    let t = std::time::Instant::now();
    let checked = evident_format::json::check(&bytes).expect("strict JSON");
    println!("  json::check took {:?}", t.elapsed());
    show("strict check (text + spans)", size);
    drop(bytes);
    show("file bytes dropped", size);
    let t = std::time::Instant::now();
    let doc = evident_format::Claim::from_checked(checked, &path).expect("a claim");
    println!("  typing took {:?}", t.elapsed());
    show("typed claim (claim + text + spans)", size);
    let evidence = doc.claim.evidence.len();
    let raw = doc.raw;
    drop(raw);
    show("text dropped", size);
    drop(doc.spans);
    show("spans dropped", size);
    println!("{evidence} evidence items");
    drop(doc.claim);
    show("claim dropped", size);
}
