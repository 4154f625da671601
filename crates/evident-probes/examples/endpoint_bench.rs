//! Benchmark: 100 endpoint checks against a local server that answers after 50 ms,
//! run concurrently with at most N in flight. Sequentially this would take 5 s.
//!
//! `cargo run --release -p evident-probes --example endpoint_bench`

#[path = "../tests/probes/server.rs"]
mod server;

use std::sync::Arc;
use std::time::{Duration, Instant};

use evident_probes::{Context, Source, observe};

const CHECKS: usize = 100;
const ROUNDS: usize = 5;

#[tokio::main(flavor = "multi_thread", worker_threads = 2)]
async fn main() {
    let s = server::Server::start().await;
    let dir = std::env::temp_dir();
    let ctx = Arc::new(Context::from_process(dir));
    let source: Source = serde_json::from_str(&format!(
        r#"{{"http": {{"url": "{}", "pointers": {{"ok": "/ok"}}}}}}"#,
        s.url("/delay50")
    ))
    .expect("source");
    let source = Arc::new(source);
    println!("{CHECKS} endpoint checks, server answers after 50 ms (sequential: 5.0 s)");
    for jobs in [100usize, 32, 8] {
        let mut times = Vec::new();
        for _ in 0..ROUNDS {
            let sem = Arc::new(tokio::sync::Semaphore::new(jobs));
            let t = Instant::now();
            let mut set = tokio::task::JoinSet::new();
            for _ in 0..CHECKS {
                let (ctx, source, sem) = (ctx.clone(), source.clone(), sem.clone());
                set.spawn(async move {
                    let _permit = sem.acquire_owned().await.expect("semaphore");
                    observe(&source, &ctx, Duration::from_secs(10)).await
                });
            }
            let mut good = 0;
            while let Some(r) = set.join_next().await {
                if let Ok(o) = r
                    && o.value.as_ref().is_ok_and(|v| v["json"]["ok"] == true)
                {
                    good += 1;
                }
            }
            assert_eq!(good, CHECKS, "every check must observe the endpoint");
            times.push(t.elapsed());
        }
        times.sort();
        println!(
            "jobs={jobs:>3}: median {:>7.1} ms, best {:>7.1} ms, worst {:>7.1} ms ({ROUNDS} rounds)",
            ms(times[ROUNDS / 2]),
            ms(times[0]),
            ms(times[ROUNDS - 1])
        );
    }
}

fn ms(d: Duration) -> f64 {
    d.as_secs_f64() * 1000.0
}
