//! The readable report shared by `verify` and `gate`: each mutation and the evidence
//! that covers it, why each item counted or not, and the verdict.

use crate::Decision;
use evident_format::{ClaimDocument, OnUnverified, Warning};
use evident_rules::{Code, Verdict};
use std::fmt::Write;

/// Renders the decision as the readable report.
pub fn render(d: &Decision) -> String {
    let mut out = String::new();
    render_to(d, &mut out);
    out
}

/// [`render`] written piece by piece into `out`: a report of a large claim (tens of
/// MB for 75,000 evidence items) is never held whole beside the claim.
pub fn render_to<W: Write>(d: &Decision, out: &mut W) {
    let doc = &d.claim;
    let verdict = &d.verdict;
    let warnings = &d.warnings;
    let notes = |i: usize| -> Vec<String> {
        d.runs
            .iter()
            .filter(|r| r.evidence == i)
            .map(|r| {
                let when = match r.wave {
                    evident_format::Wave::Before => ", before the commands",
                    evident_format::Wave::After => ", after the commands",
                    evident_format::Wave::Command => "",
                };
                format!(
                    "gate check {:?} ran in {} ms{when}",
                    r.check_id, r.duration_ms
                )
            })
            .collect()
    };
    let c = &doc.claim;
    let _ = writeln!(out, "task      {}", shown(&c.task.id));
    if let Some(outcome) = &c.claimed_outcome {
        let _ = writeln!(out, "claimed   {outcome:?}");
    }
    match &c.policy {
        Some(p) => {
            let requires: Vec<_> = p.requires.iter().map(|t| t.as_str()).collect();
            let _ = writeln!(
                out,
                "policy    {}: requires [{}]; max age {}; on_unverified {}",
                shown(p.id.as_deref().unwrap_or("(no id)")),
                requires.join(", "),
                p.max_age_s
                    .map_or("none".to_string(), |m| format!("{} s", m.0)),
                on_unverified_name(p.on_unverified.unwrap_or_default()),
            );
        }
        None => {
            let _ = writeln!(
                out,
                "policy    none (no required check types, no age limit)"
            );
        }
    }

    let _ = writeln!(out, "\nmutations");
    if c.mutations.is_empty() {
        let _ = writeln!(
            out,
            "  (none: the claim is not tied to any change in the world)"
        );
    }
    // For each mutation id: the satisfying evidence that covers it, and how many items
    // name it (one pass over the evidence: a claim may list thousands of both).
    let mut by_mutation: std::collections::HashMap<&str, (Vec<String>, usize)> =
        std::collections::HashMap::new();
    for (i, e) in c.evidence.iter().enumerate() {
        let satisfies = verdict
            .findings
            .get(i)
            .filter(|f| f.evidence == i)
            .or_else(|| verdict.findings.iter().find(|f| f.evidence == i))
            .filter(|f| f.code == Code::Satisfies);
        let mut seen = std::collections::HashSet::new();
        for id in e.covers.iter().filter(|id| seen.insert(id.as_str())) {
            let entry = by_mutation.entry(id.as_str()).or_default();
            entry.1 += 1;
            if let Some(f) = satisfies {
                entry.0.push(format!(
                    "evidence[{}] ({})",
                    f.evidence,
                    shown(&f.check_type)
                ));
            }
        }
    }
    for m in &c.mutations {
        let _ = writeln!(
            out,
            "  {} {} {} at {}",
            shown(&m.id),
            shown(&m.kind),
            shown(m.target.as_deref().unwrap_or("-")),
            m.at
        );
        let (satisfied, mentioned) = by_mutation
            .get(m.id.as_str())
            .map_or((&[][..], 0), |(s, n)| (s.as_slice(), *n));
        if satisfied.is_empty() {
            let _ = writeln!(
                out,
                "     NOT covered by satisfying independent evidence ({mentioned} item(s) name it)"
            );
        } else {
            let _ = writeln!(out, "     covered by {}", satisfied.join(", "));
        }
    }

    let _ = writeln!(out, "\nevidence");
    if c.evidence.is_empty() {
        let _ = writeln!(out, "  (none: absence is unverified, never verified)");
    }
    for f in &verdict.findings {
        let e = &c.evidence[f.evidence];
        let mark = match f.code {
            Code::Satisfies => "ok ",
            Code::Contradicts => "NO ",
            _ => " - ",
        };
        let _ = writeln!(
            out,
            "  [{}] {mark}{} {} — {}: {}",
            f.evidence,
            shown(&e.check_type),
            shown(e.target.as_deref().unwrap_or("-")),
            f.code,
            shown(&f.detail)
        );
        let _ = writeln!(
            out,
            "       by {} ({}) at {}, covers [{}]",
            shown(&e.verifier.id),
            kind_name(e),
            e.at,
            shown(&e.covers.join(", "))
        );
        let _ = writeln!(out, "       expected {}", shown(&e.expected.to_string()));
        if let Some(err) = &e.observation_error {
            let _ = writeln!(out, "       observed nothing: {}", shown(err));
        } else {
            let (observed, failure) = super::split_failure(&e.observed_value.to_value());
            let _ = writeln!(out, "       observed {}", shown(&observed.to_string()));
            for line in failure {
                let _ = writeln!(out, "       {}", shown(&line));
            }
        }
        for line in notes(f.evidence) {
            let _ = writeln!(out, "       {}", shown(&line));
        }
    }

    if !warnings.is_empty() {
        let _ = writeln!(out, "\nwarnings");
        for w in warnings {
            let _ = writeln!(out, "  {}", shown(&w.to_string()));
        }
    }

    let _ = writeln!(
        out,
        "\nverdict   {} (decided at {})",
        verdict.state.as_str().to_uppercase(),
        verdict.decided_at
    );
    if let Some(c) = verdict.coverage {
        let _ = writeln!(
            out,
            "coverage  {} of {} mutations covered by satisfying evidence",
            c.covered, c.total
        );
    }
    if !verdict.unmet.is_empty() {
        let _ = writeln!(out, "unmet     {}", shown(&verdict.unmet.join(", ")));
    }
    let _ = writeln!(out, "reason    {}", shown(&verdict.reason));
    let _ = writeln!(out, "policy    {}", shown(&d.policy_source.describe()));
    let skipped: Vec<_> = d.plan.iter().filter(|p| p.waves.is_empty()).collect();
    if !skipped.is_empty() {
        let _ = writeln!(out, "\nchecks not run");
        for p in skipped {
            let _ = writeln!(out, "  {} — {}", shown(&p.check_id), shown(&p.why));
        }
    }
}

/// `gate --dry-run`: every check of the contract, whether it applies to the claim and
/// why, when it would run, and what it must show.
pub fn render_plan(contract: &evident_gate::Contract, plan: &[evident_gate::Planned]) -> String {
    let mut out = String::new();
    for (c, p) in contract.checks.iter().zip(plan) {
        let waves: Vec<&str> = p.waves.iter().map(|w| w.as_str()).collect();
        let _ = writeln!(out, "{} ({})", shown(&p.check_id), p.check_type);
        let _ = writeln!(out, "  source    {}", shown(&p.target));
        let _ = writeln!(out, "  {}", shown(&p.why));
        let runs = if waves.is_empty() {
            "does not run".to_string()
        } else {
            format!("runs in wave(s): {}", waves.join(", "))
        };
        let _ = writeln!(out, "  {runs}");
        let expected = c
            .expected
            .clone()
            .or_else(|| c.source.default_expected())
            .unwrap_or_default();
        let _ = writeln!(
            out,
            "  expected  {}",
            shown(&serde_json::Value::Object(expected).to_string())
        );
    }
    // Snapshot comparisons (`snapshot:<id>`) follow the checks in the plan.
    for p in plan.iter().skip(contract.checks.len()) {
        let waves: Vec<&str> = p.waves.iter().map(|w| w.as_str()).collect();
        let _ = writeln!(out, "{} ({})", shown(&p.check_id), p.check_type);
        let _ = writeln!(out, "  source    {}", shown(&p.target));
        let _ = writeln!(out, "  {}", shown(&p.why));
        let _ = writeln!(out, "  runs in wave(s): {}", waves.join(", "));
        let _ = writeln!(out, "  expected  {{\"unclaimed_changes\":0}}");
    }
    let required = plan.iter().filter(|p| p.applies).count();
    let _ = writeln!(
        out,
        "\n{required} of {} checks apply and must all pass; nothing was run (--dry-run)",
        plan.len()
    );
    out
}

/// A string the agent (or a system it touched) wrote, safe to print on a terminal:
/// control characters (ESC, CR, newline, ...) and bidirectional overrides are shown
/// as `\u{..}` escapes, so a field can neither redraw the screen nor add a line.
pub fn shown(s: &str) -> std::borrow::Cow<'_, str> {
    let unsafe_char =
        |c: char| c.is_control() || matches!(c, '\u{202a}'..='\u{202e}' | '\u{2066}'..='\u{2069}');
    if !s.chars().any(unsafe_char) {
        return std::borrow::Cow::Borrowed(s);
    }
    let mut out = String::with_capacity(s.len() + 8);
    for c in s.chars() {
        if unsafe_char(c) {
            out.push_str(&format!("\\u{{{:x}}}", u32::from(c)));
        } else {
            out.push(c);
        }
    }
    std::borrow::Cow::Owned(out)
}

fn kind_name(e: &evident_format::Evidence) -> &'static str {
    match e.verifier.kind {
        evident_format::VerifierKind::Independent => "independent",
        evident_format::VerifierKind::SelfAttested => "self_attested",
        evident_format::VerifierKind::Absent => "absent",
    }
}

fn on_unverified_name(o: OnUnverified) -> &'static str {
    match o {
        OnUnverified::Block => "block",
        OnUnverified::Warn => "warn",
        OnUnverified::Record => "record",
    }
}

/// Warnings the decision itself adds: a missing policy, a mutation dated after the
/// decision, an evidence type v0.1 does not define, no trust list.
pub(crate) fn decision_warnings(
    doc: &ClaimDocument,
    verdict: &Verdict,
    trust_list: bool,
) -> Vec<Warning> {
    let c = &doc.claim;
    let mut w = doc.warnings.clone();
    let at = |path: String, message: String| Warning {
        file: Some(doc.file.clone()),
        pos: doc.spans.nearest(&path),
        path,
        message,
    };
    if c.policy.is_none() {
        w.push(at(
            "policy".into(),
            "no policy: no check type is required, there is no age limit, and unverified blocks"
                .into(),
        ));
    }
    for (i, m) in c.mutations.iter().enumerate() {
        if m.at > verdict.decided_at {
            w.push(at(
                format!("mutations[{i}].at"),
                format!(
                    "mutation {:?} is dated after the decision time {}: no evidence can follow it yet",
                    m.id, verdict.decided_at
                ),
            ));
        }
    }
    for (i, e) in c.evidence.iter().enumerate() {
        if evident_format::CheckType::parse(&e.check_type).is_none() {
            w.push(at(
                format!("evidence[{i}].check_type"),
                format!("{:?} is not a v0.1 check type; it can cover mutations but no policy can require it", e.check_type),
            ));
        }
    }
    let independent = c
        .evidence
        .iter()
        .any(|e| e.verifier.kind == evident_format::VerifierKind::Independent);
    if !trust_list && independent {
        w.push(at(
            "evidence".into(),
            "no trust list: `independent` is taken as asserted by the document, not proven by a signature (see --trust)".into(),
        ));
    }
    w
}
