//! A deterministic generator of realistic case JSONL for benchmarks: 2–5 requirements
//! and 2–8 events per case, with verified, partial, unverified and failed outcomes,
//! retries that recover, rollbacks that regress, missing or blank evidence, unrelated
//! actions, and metadata the evaluator must skip. Same seed, same bytes.

use std::io::{self, Write};

/// splitmix64: tiny, fast, and good enough to vary a corpus.
#[derive(Debug, Clone)]
pub struct Rng(u64);

impl Rng {
    /// A generator whose sequence depends only on `seed` (same seed, same corpus).
    pub fn new(seed: u64) -> Self {
        Rng(seed)
    }

    /// The next 64 pseudo-random bits.
    pub fn next_u64(&mut self) -> u64 {
        self.0 = self.0.wrapping_add(0x9E37_79B9_7F4A_7C15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
        z ^ (z >> 31)
    }

    /// Uniform in `lo..=hi`.
    pub fn range(&mut self, lo: u64, hi: u64) -> u64 {
        lo + self.next_u64() % (hi - lo + 1)
    }

    /// True with probability `p` percent.
    pub fn pct(&mut self, p: u64) -> bool {
        self.next_u64() % 100 < p
    }

    /// One of `xs`, uniformly (`xs` must not be empty).
    pub fn pick<'a>(&mut self, xs: &[&'a str]) -> &'a str {
        xs[(self.next_u64() % xs.len() as u64) as usize]
    }
}

const ACTIONS: &[(&str, &[&str])] = &[
    ("send_email", &["message_id", "recipient"]),
    ("create_event", &["event_id", "start_time"]),
    ("invite_attendee", &["attendee"]),
    ("write_file", &["path", "sha256", "size"]),
    ("create_branch", &["branch"]),
    ("create_commit", &["commit_sha"]),
    ("open_pull_request", &["pr_url", "pr_number"]),
    ("issue_refund", &["refund_id", "amount"]),
    ("update_record", &["record_id", "version"]),
    ("publish_page", &["url"]),
    ("share_document", &["document_id", "recipient"]),
    ("deploy_service", &["deployment_id", "revision", "region"]),
];

const TASKS: &[&str] = &[
    "Send the customer an update about their open ticket and confirm delivery.",
    "Create the quarterly review meeting and invite the finance reviewers.",
    "Write the incident report to the shared drive and record its checksum.",
    "Create a branch, commit the retry fix and open a pull request for review.",
    "Issue the approved refund and update the billing record with the new state.",
    "Publish the release notes page and share the document with the release team.",
    "Deploy the new revision to the staging region and record the deployment id.",
];

const MODELS: &[&str] = &[
    "agent-large-2026-05",
    "agent-small-2026-03",
    "planner-v4",
    "coder-7",
];

#[derive(Clone, Copy)]
enum Plan {
    Proven,
    Retry,
    Rollback,
    Failed,
    NoEvidence,
    BlankEvidence,
    NoEvent,
}

fn push_str_json(out: &mut Vec<u8>, s: &str) {
    crate::text::write_json_str(out, s, false);
}

fn evidence(out: &mut Vec<u8>, rng: &mut Rng, fields: &[&str], mode: Plan, i: u64) {
    out.push(b'{');
    let mut first = true;
    let mut sep = |out: &mut Vec<u8>| {
        if !first {
            out.push(b',');
        }
        first = false;
    };
    match mode {
        Plan::Failed | Plan::Rollback | Plan::Retry => {
            sep(out);
            let reason = rng.pick(&[
                "timeout",
                "permission denied",
                "rate limited",
                "rollback",
                "conflict",
            ]);
            write!(
                out,
                "\"error\":\"{reason}\",\"attempt_ms\":{}",
                rng.range(20, 30_000)
            )
            .ok();
        }
        _ => {
            for (k, f) in fields.iter().enumerate() {
                let skip = matches!(mode, Plan::NoEvidence) && k == fields.len() - 1;
                if skip {
                    continue;
                }
                sep(out);
                push_str_json(out, f);
                out.push(b':');
                if matches!(mode, Plan::BlankEvidence) && k == 0 {
                    out.extend_from_slice(if rng.pct(50) { b"\"  \"" } else { b"null" });
                } else if *f == "amount" || *f == "size" || *f == "version" || *f == "pr_number" {
                    write!(out, "{}", rng.range(0, 250_000)).ok();
                } else {
                    write!(out, "\"{f}-{i:x}-{:08x}\"", rng.next_u64() as u32).ok();
                }
            }
            sep(out);
            write!(out, "\"latency_ms\":{}", rng.range(5, 9000)).ok();
        }
    }
    out.push(b'}');
}

/// Appends one case line (with its trailing newline) to `out`.
pub fn case_line(out: &mut Vec<u8>, rng: &mut Rng, i: u64) {
    let n_req = rng.range(2, 5) as usize;
    let mut reqs: Vec<(&str, &[&str])> = Vec::with_capacity(n_req);
    while reqs.len() < n_req {
        let a = ACTIONS[(rng.next_u64() % ACTIONS.len() as u64) as usize];
        if !reqs.iter().any(|r| r.0 == a.0) {
            reqs.push(a);
        }
    }
    // Each requirement gets a plan; its events form one group, in order.
    let budget = rng.range(2, 8) as usize;
    let mut used = 0usize;
    let mut groups: Vec<Vec<(&str, bool, Plan)>> = Vec::new();
    // A profile per case, so every outcome is well represented.
    let profile = rng.range(0, 99);
    for (action, _) in &reqs {
        let roll = rng.range(0, 99);
        let plan = match profile {
            // A careful agent: everything proven, some after a retry.
            0..=34 => match roll {
                0..=79 => Plan::Proven,
                _ => Plan::Retry,
            },
            // An agent that stops early or forgets receipts: nothing proven.
            35..=54 => match roll {
                0..=39 => Plan::NoEvent,
                40..=74 => Plan::NoEvidence,
                _ => Plan::BlankEvidence,
            },
            // Anything goes.
            _ => match roll {
                0..=44 => Plan::Proven,
                45..=54 => Plan::Retry,
                55..=64 => Plan::Rollback,
                65..=71 => Plan::Failed,
                72..=81 => Plan::NoEvidence,
                82..=87 => Plan::BlankEvidence,
                _ => Plan::NoEvent,
            },
        };
        let need = match plan {
            Plan::Retry | Plan::Rollback => 2,
            Plan::NoEvent => 0,
            _ => 1,
        };
        let plan = if used + need > budget {
            Plan::NoEvent
        } else {
            plan
        };
        let g = match plan {
            Plan::Retry => vec![(*action, false, Plan::Retry), (*action, true, Plan::Proven)],
            Plan::Rollback => vec![
                (*action, true, Plan::Proven),
                (*action, false, Plan::Rollback),
            ],
            Plan::Failed => vec![(*action, false, Plan::Failed)],
            Plan::NoEvent => vec![],
            p => vec![(*action, true, p)],
        };
        used += g.len();
        groups.push(g);
    }
    // Fill up with unrelated actions (they never count).
    while used < budget.max(2) {
        let other = ACTIONS[(rng.next_u64() % ACTIONS.len() as u64) as usize].0;
        if reqs.iter().any(|r| r.0 == other) {
            groups.push(vec![("lookup_contact", true, Plan::Proven)]);
        } else {
            groups.push(vec![(other, true, Plan::Proven)]);
        }
        used += 1;
    }
    let claimed = rng.pct(80);
    write!(out, "{{\"case_id\":\"case-{i:08}\",\"task\":").ok();
    push_str_json(out, rng.pick(TASKS));
    write!(out, ",\"completion_claimed\":{claimed},\"requirements\":[").ok();
    for (k, (a, fields)) in reqs.iter().enumerate() {
        if k > 0 {
            out.push(b',');
        }
        write!(out, "{{\"action\":\"{a}\",\"evidence_fields\":[").ok();
        for (j, f) in fields.iter().enumerate() {
            if j > 0 {
                out.push(b',');
            }
            push_str_json(out, f);
        }
        out.extend_from_slice(b"]}");
    }
    out.extend_from_slice(b"],\"events\":[");
    // Interleave the groups at random, keeping each group's own order.
    let mut heads: Vec<usize> = vec![0; groups.len()];
    let mut left = used;
    let mut first = true;
    while left > 0 {
        let mut g = (rng.next_u64() % groups.len() as u64) as usize;
        while heads[g] >= groups[g].len() {
            g = (g + 1) % groups.len();
        }
        let (action, success, plan) = groups[g][heads[g]];
        heads[g] += 1;
        left -= 1;
        if !first {
            out.push(b',');
        }
        first = false;
        let fields = ACTIONS
            .iter()
            .find(|a| a.0 == action)
            .map_or(&["contact_id"][..], |a| a.1);
        write!(
            out,
            "{{\"action\":\"{action}\",\"success\":{success},\"evidence\":"
        )
        .ok();
        evidence(out, rng, fields, plan, i);
        out.push(b'}');
    }
    writeln!(
        out,
        "],\"metadata\":{{\"model\":\"{}\",\"run\":{},\"duration_ms\":{},\"tags\":[\"bench\",\"synthetic\"]}}}}",
        rng.pick(MODELS),
        rng.range(1, 10_000),
        rng.range(100, 600_000)
    )
    .ok();
}

/// Writes `n` cases with the given seed; returns the bytes written.
pub fn generate(out: &mut dyn Write, n: u64, seed: u64) -> io::Result<u64> {
    let mut rng = Rng::new(seed);
    let mut buf = Vec::with_capacity(1 << 20);
    let mut total = 0u64;
    for i in 0..n {
        case_line(&mut buf, &mut rng, i);
        if buf.len() >= 1 << 20 {
            out.write_all(&buf)?;
            total += buf.len() as u64;
            buf.clear();
        }
    }
    out.write_all(&buf)?;
    total += buf.len() as u64;
    out.flush()?;
    Ok(total)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::case::parse_case;
    use crate::evaluate::{Status, evaluate};

    #[test]
    fn corpus_is_valid_deterministic_and_mixed() {
        let mut a = Vec::new();
        generate(&mut a, 2000, 7).unwrap();
        let mut b = Vec::new();
        generate(&mut b, 2000, 7).unwrap();
        assert_eq!(a, b);
        let mut seen = [0u64; 4];
        let (mut rec, mut reg) = (0, 0);
        for line in a.split(|&c| c == b'\n').filter(|l| !l.is_empty()) {
            let c = parse_case(line).unwrap();
            assert!((2..=5).contains(&c.requirements.len()));
            assert!((2..=8).contains(&c.events.len()), "{}", c.events.len());
            let o = evaluate(&c);
            seen[o.status.index()] += 1;
            rec += o.recovered as u32;
            reg += o.regressed as u32;
        }
        for s in Status::ALL {
            assert!(seen[s.index()] > 50, "{s:?}: {seen:?}");
        }
        assert!(rec > 50 && reg > 50, "recovered {rec}, regressed {reg}");
    }
}
