//! Where `evident eval` and `evident adapt` show what the run tells them: bad lines,
//! skipped traces and notes on stderr, and a progress line when stderr is a terminal.

use std::io::{self, IsTerminal, Write};
use std::time::{Duration, Instant};

use evident_eval::engine::{Hooks, LineError};

/// Prints bad lines, and a progress line when stderr is a terminal and the run is long.
pub struct StderrHooks {
    enabled: bool,
    total: Option<u64>,
    start: Instant,
    last: Option<Instant>,
    drawn: bool,
}

impl StderrHooks {
    /// `progress`: allow the progress line; `total`: the input's size, for a percentage.
    pub fn new(progress: bool, total: Option<u64>) -> Self {
        StderrHooks {
            enabled: progress && io::stderr().is_terminal(),
            total,
            start: Instant::now(),
            last: None,
            drawn: false,
        }
    }

    /// Erase the progress line, before other text or at the end.
    pub fn clear(&mut self) {
        if self.drawn {
            eprint!("\r\x1b[2K");
            self.drawn = false;
        }
    }
}

impl Hooks for StderrHooks {
    fn note(&mut self, msg: &str) {
        self.clear();
        eprintln!("{msg}");
    }

    fn bad_line(&mut self, label: &str, e: &LineError) {
        self.clear();
        eprintln!("{label}:{}: {}", e.line, e.message);
    }

    fn progress(&mut self, bytes: u64, cases: u64) {
        // Only for runs that last: nothing is drawn in the first half second.
        let now = Instant::now();
        let since = now.duration_since(self.start);
        if !self.enabled || since < Duration::from_millis(500) {
            return;
        }
        if self
            .last
            .is_some_and(|l| now.duration_since(l) < Duration::from_millis(100))
        {
            return;
        }
        self.last = Some(now);
        let mb = bytes as f64 / 1e6;
        let rate = mb / since.as_secs_f64();
        let pct = match self.total {
            Some(t) if t > 0 => format!("{:>3.0}% ", bytes as f64 * 100.0 / t as f64),
            _ => String::new(),
        };
        eprint!("\r\x1b[2K{pct}{cases} cases, {mb:.0} MB, {rate:.0} MB/s");
        let _ = io::stderr().flush();
        self.drawn = true;
    }
}
