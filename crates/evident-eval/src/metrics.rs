//! Claim-quality metrics (`--metrics`): plain counters that merge by addition, so each
//! worker keeps its own and the collector sums them.

use crate::evaluate::{Outcome, Status};
use crate::text::py_float_repr;

/// Counters over evaluated cases.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Metrics {
    /// Cases counted.
    pub total: u64,
    /// Indexed by [`Status::index`].
    pub status: [u64; 4],
    /// Claimed cases, by status.
    pub claimed_by_status: [u64; 4],
    /// Cases verified complete that made no claim (the agent under-reported).
    pub silent_verified: u64,
    /// Cases where a requirement succeeded after failing first.
    pub recovered: u64,
    /// Cases where a requirement failed after it was once proven.
    pub regressed: u64,
}

impl Metrics {
    /// Counts one evaluated case.
    pub fn add(&mut self, o: &Outcome) {
        self.add_parts(o.status, o.claimed, o.recovered, o.regressed);
    }

    /// Counts one case from its parts (object-form cases have no [`Outcome`]).
    pub fn add_parts(&mut self, status: Status, claimed: bool, recovered: bool, regressed: bool) {
        self.total += 1;
        let i = status.index();
        self.status[i] += 1;
        if claimed {
            self.claimed_by_status[i] += 1;
        } else if status == Status::VerifiedComplete {
            self.silent_verified += 1;
        }
        self.recovered += recovered as u64;
        self.regressed += regressed as u64;
    }

    /// Adds another worker's counters (merging in any order gives the same sums).
    pub fn merge(&mut self, other: &Metrics) {
        self.total += other.total;
        for i in 0..4 {
            self.status[i] += other.status[i];
            self.claimed_by_status[i] += other.claimed_by_status[i];
        }
        self.silent_verified += other.silent_verified;
        self.recovered += other.recovered;
        self.regressed += other.regressed;
    }

    /// Cases that claimed completion, whatever their status.
    pub fn claimed(&self) -> u64 {
        self.claimed_by_status.iter().sum()
    }

    /// The peer's metrics object, keys in its order, indented by 2, with a final newline.
    pub fn to_json(&self) -> String {
        let v = Status::VerifiedComplete.index();
        let claimed = self.claimed();
        let verified_claim = self.claimed_by_status[v];
        let false_completion = claimed - verified_claim;
        let ratio = |n: u64, d: u64| -> String {
            let x = if d == 0 { 0.0 } else { n as f64 / d as f64 };
            py_float_repr(x).unwrap_or_else(|| "0.0".into())
        };
        let s = &self.status;
        let c = &self.claimed_by_status;
        format!(
            "{{\n  \"total_cases\": {total},\n  \"status_counts\": {{\n    \"VERIFIED_COMPLETE\": {s0},\n    \"PARTIAL\": {s1},\n    \"UNVERIFIED\": {s2},\n    \"FAILED\": {s3}\n  }},\n  \"claim_counts\": {{\n    \"claimed_completion\": {claimed},\n    \"verified_claim\": {verified_claim},\n    \"false_completion\": {false_completion},\n    \"unsupported_claim\": {c2},\n    \"partial_claim\": {c1},\n    \"failed_claim\": {c3},\n    \"silent_verified_completion\": {silent}\n  }},\n  \"trace_counts\": {{\n    \"recovered\": {rec},\n    \"regressed\": {reg}\n  }},\n  \"rates\": {{\n    \"claim_rate\": {r1},\n    \"verified_completion_rate\": {r2},\n    \"false_completion_rate\": {r3},\n    \"completion_claim_precision\": {r4}\n  }}\n}}\n",
            total = self.total,
            s0 = s[0],
            s1 = s[1],
            s2 = s[2],
            s3 = s[3],
            c1 = c[Status::Partial.index()],
            c2 = c[Status::Unverified.index()],
            c3 = c[Status::Failed.index()],
            silent = self.silent_verified,
            rec = self.recovered,
            reg = self.regressed,
            r1 = ratio(claimed, self.total),
            r2 = ratio(s[v], self.total),
            r3 = ratio(false_completion, claimed),
            r4 = ratio(verified_claim, claimed),
        )
    }
}

/// The plain-mode summary: a blank line, `Summary`, then each status present in
/// alphabetical order, left-aligned in 20 columns, and its count.
pub fn plain_summary(status_counts: &[u64; 4]) -> String {
    let mut present: Vec<(&str, u64)> = Status::ALL
        .iter()
        .filter(|s| status_counts[s.index()] > 0)
        .map(|s| (s.as_str(), status_counts[s.index()]))
        .collect();
    present.sort();
    let mut out = String::from("\nSummary\n");
    for (name, n) in present {
        out.push_str(&format!("  {name:<20} {n}\n"));
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn zero_denominators_give_zero() {
        let m = Metrics::default();
        let v: serde_json::Value = serde_json::from_str(&m.to_json()).unwrap();
        assert_eq!(v["rates"]["false_completion_rate"].as_f64(), Some(0.0));
        assert!(m.to_json().contains("\"claim_rate\": 0.0"));
    }

    #[test]
    fn summary_is_alphabetical_and_skips_absent() {
        let s = plain_summary(&[7, 0, 4, 3]);
        assert_eq!(
            s,
            "\nSummary\n  FAILED               3\n  UNVERIFIED           4\n  VERIFIED_COMPLETE    7\n"
        );
    }
}
