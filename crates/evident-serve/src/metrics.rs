//! `/metrics` in the Prometheus text format (0.0.4), written by hand: a few counters
//! and histograms need no registry crate.

use std::collections::BTreeMap;
use std::fmt::Write as _;
use std::sync::Mutex;
use std::sync::atomic::{AtomicI64, Ordering};

/// Upper bounds (seconds) of the request-latency buckets.
const REQUEST_BUCKETS: &[f64] = &[
    0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1.0, 2.5, 5.0, 10.0, 30.0,
    60.0, 300.0,
];
/// Upper bounds (seconds) of the probe-latency buckets.
const PROBE_BUCKETS: &[f64] = &[
    0.001, 0.005, 0.01, 0.05, 0.1, 0.5, 1.0, 5.0, 10.0, 30.0, 60.0, 300.0, 600.0,
];

#[derive(Default)]
struct Histogram {
    counts: Vec<u64>,
    sum: f64,
    count: u64,
}

impl Histogram {
    fn observe(&mut self, bounds: &[f64], v: f64) {
        if self.counts.is_empty() {
            self.counts = vec![0; bounds.len()];
        }
        for (c, b) in self.counts.iter_mut().zip(bounds) {
            if v <= *b {
                *c += 1;
            }
        }
        self.sum += v;
        self.count += 1;
    }
}

/// The service's metrics.
#[derive(Default)]
pub struct Metrics {
    decisions: Mutex<BTreeMap<(String, String), u64>>,
    requests: Mutex<BTreeMap<(String, String, u16), u64>>,
    latency: Mutex<BTreeMap<String, Histogram>>,
    probes: Mutex<BTreeMap<String, Histogram>>,
    /// Gates running now.
    pub gates_running: AtomicI64,
    /// Gates waiting for a slot.
    pub gates_queued: AtomicI64,
}

fn lock<T>(m: &Mutex<T>) -> std::sync::MutexGuard<'_, T> {
    m.lock().unwrap_or_else(std::sync::PoisonError::into_inner)
}

impl Metrics {
    /// One decision made.
    pub fn decision(&self, kind: &str, state: &str) {
        *lock(&self.decisions)
            .entry((kind.to_string(), state.to_string()))
            .or_default() += 1;
    }

    /// One request answered.
    pub fn request(&self, route: &str, method: &str, status: u16, seconds: f64) {
        *lock(&self.requests)
            .entry((route.to_string(), method.to_string(), status))
            .or_default() += 1;
        lock(&self.latency)
            .entry(route.to_string())
            .or_default()
            .observe(REQUEST_BUCKETS, seconds);
    }

    /// One probe observation (a check's run) of a source kind.
    pub fn probe(&self, source: &str, seconds: f64) {
        lock(&self.probes)
            .entry(source.to_string())
            .or_default()
            .observe(PROBE_BUCKETS, seconds);
    }

    /// The text exposition.
    pub fn render(&self) -> String {
        let mut out = String::new();
        out.push_str("# HELP evident_decisions_total Decisions made, by kind and verdict state.\n# TYPE evident_decisions_total counter\n");
        for ((kind, state), n) in lock(&self.decisions).iter() {
            let _ = writeln!(
                out,
                "evident_decisions_total{{kind=\"{}\",state=\"{}\"}} {n}",
                esc(kind),
                esc(state)
            );
        }
        out.push_str("# HELP evident_http_requests_total HTTP requests answered, by route, method and status.\n# TYPE evident_http_requests_total counter\n");
        for ((route, method, status), n) in lock(&self.requests).iter() {
            let _ = writeln!(
                out,
                "evident_http_requests_total{{route=\"{}\",method=\"{}\",status=\"{status}\"}} {n}",
                esc(route),
                esc(method)
            );
        }
        histograms(
            &mut out,
            "evident_http_request_duration_seconds",
            "Time to answer an HTTP request, by route.",
            "route",
            REQUEST_BUCKETS,
            &lock(&self.latency),
        );
        histograms(
            &mut out,
            "evident_probe_duration_seconds",
            "Time one check's observation took, by source kind.",
            "source",
            PROBE_BUCKETS,
            &lock(&self.probes),
        );
        let _ = writeln!(
            out,
            "# HELP evident_gates_running Gates running now.\n# TYPE evident_gates_running gauge\nevident_gates_running {}",
            self.gates_running.load(Ordering::Relaxed)
        );
        let _ = writeln!(
            out,
            "# HELP evident_gates_queued Gates waiting for a free slot.\n# TYPE evident_gates_queued gauge\nevident_gates_queued {}",
            self.gates_queued.load(Ordering::Relaxed)
        );
        out
    }
}

fn histograms(
    out: &mut String,
    name: &str,
    help: &str,
    label: &str,
    bounds: &[f64],
    map: &BTreeMap<String, Histogram>,
) {
    let _ = writeln!(out, "# HELP {name} {help}\n# TYPE {name} histogram");
    for (key, h) in map {
        let key = esc(key);
        for (b, c) in bounds.iter().zip(&h.counts) {
            let _ = writeln!(out, "{name}_bucket{{{label}=\"{key}\",le=\"{b}\"}} {c}");
        }
        let _ = writeln!(
            out,
            "{name}_bucket{{{label}=\"{key}\",le=\"+Inf\"}} {}",
            h.count
        );
        let _ = writeln!(out, "{name}_sum{{{label}=\"{key}\"}} {}", h.sum);
        let _ = writeln!(out, "{name}_count{{{label}=\"{key}\"}} {}", h.count);
    }
}

/// A label value escaped for the text format.
fn esc(s: &str) -> String {
    s.replace('\\', "\\\\")
        .replace('"', "\\\"")
        .replace('\n', "\\n")
}
