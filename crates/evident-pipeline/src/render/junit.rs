//! JUnit XML for CI systems: one test case per check, failed when its evidence did not
//! satisfy, plus one case for the verdict itself.

use crate::Decision;
use evident_rules::{Code, State};

/// Renders a gate decision as a JUnit XML document.
pub fn render(outcome: &Decision) -> String {
    let findings = &outcome.verdict.findings;
    let mut cases = String::new();
    let mut failures = 0;
    for run in &outcome.runs {
        let f = findings.iter().find(|f| f.evidence == run.evidence);
        let (ok, message) = match f {
            Some(f) if f.code == Code::Satisfies => (true, String::new()),
            Some(f) => (false, format!("{}: {}", f.code, f.detail)),
            None => (false, "no finding".into()),
        };
        let name = match run.wave {
            evident_format::Wave::After => format!("{} (after the commands)", run.check_id),
            _ => run.check_id.clone(),
        };
        cases.push_str(&format!(
            "    <testcase classname=\"evident.gate\" name=\"{}\" time=\"{:.3}\">\n",
            esc(&name),
            run.duration_ms as f64 / 1000.0
        ));
        if !ok {
            failures += 1;
            let (observed, failure) = super::split_failure(&run.observed);
            let failure: String = failure.iter().map(|l| format!("\n{}", esc(l))).collect();
            cases.push_str(&format!(
                "      <failure message=\"{}\">expected {} observed {}{failure}</failure>\n",
                esc(&message),
                esc(&serde_json::Value::Object(run.expected.clone()).to_string()),
                esc(&observed.to_string())
            ));
        }
        cases.push_str("    </testcase>\n");
    }
    let mut tests = outcome.runs.len() + 1;
    for p in outcome
        .plan
        .iter()
        .filter(|p| p.applies && p.waves.is_empty())
    {
        tests += 1;
        failures += 1;
        cases.push_str(&format!(
            "    <testcase classname=\"evident.gate\" name=\"{}\">\n      <failure message=\"not observed\">{}</failure>\n    </testcase>\n",
            esc(&p.check_id),
            esc(&p.why)
        ));
    }
    let v = &outcome.verdict;
    cases.push_str("    <testcase classname=\"evident.gate\" name=\"verdict\">\n");
    if v.state != State::Verified {
        failures += 1;
        cases.push_str(&format!(
            "      <failure message=\"{}\">{}</failure>\n",
            esc(v.state.as_str()),
            esc(&v.reason)
        ));
    }
    cases.push_str("    </testcase>\n");
    format!(
        "<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n<testsuites>\n  <testsuite name=\"evident gate\" tests=\"{tests}\" failures=\"{failures}\">\n{cases}  </testsuite>\n</testsuites>\n"
    )
}

fn esc(s: &str) -> String {
    s.chars()
        .filter(|c| !c.is_control() || *c == '\n' || *c == '\t')
        .map(|c| match c {
            '&' => "&amp;".to_string(),
            '<' => "&lt;".to_string(),
            '>' => "&gt;".to_string(),
            '"' => "&quot;".to_string(),
            '\'' => "&apos;".to_string(),
            c => c.to_string(),
        })
        .collect()
}
