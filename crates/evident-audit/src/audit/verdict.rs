//! How the observations become the audit's verdict and overall status.

use super::model::{Audit, ClaimStatus, Status, Verdict};
use crate::input::ClaimKind;

impl Audit {
    /// The verdict on the real claims (seed 000's words). When the claims name a commit
    /// or a ledger item (the emitted Completion Claim has mutations), it is
    /// `evident_rules::decide` on that document (see [`crate::emit::decide`]): the
    /// verdict `evident verify` gives it, by construction. Claims of test spans only
    /// have no mutation, which the rules can never verify or refute (evidence that
    /// covers no mutation speaks for none), so there the audit's own rule decides: a
    /// contradiction refutes, every claim verified verifies (docs/audit.md, "The
    /// audit's verdict"). A refused document, and an audit that stopped before
    /// observing, are unverified.
    pub fn verdict(&self) -> Verdict {
        self.decision().0
    }

    /// [`Audit::verdict`] with its reason and the rules' unmet requirements.
    pub fn decision(&self) -> (Verdict, String, Vec<String>) {
        if let Some((code, message)) = &self.blocked {
            return (
                Verdict::Unverified,
                format!("{code}: {message}"),
                Vec::new(),
            );
        }
        let claims_a_mutation = self
            .claims
            .iter()
            .any(|c| !matches!(c.kind, ClaimKind::Span(_)));
        if !claims_a_mutation {
            return (
                self.span_only_verdict(),
                "only test spans are claimed (no mutation): decided by the audit's own rule, not by evident_rules::decide".into(),
                Vec::new(),
            );
        }
        match crate::emit::decide(self) {
            Ok(v) => {
                let verdict = match v.state {
                    evident_rules::State::Verified => Verdict::Verified,
                    evident_rules::State::Refuted => Verdict::Refuted,
                    evident_rules::State::Unverified | evident_rules::State::Partial => {
                        Verdict::Unverified
                    }
                };
                (verdict, v.reason, v.unmet)
            }
            Err(e) => (
                Verdict::Unverified,
                format!("the audit's claim document was refused: {e}"),
                Vec::new(),
            ),
        }
    }

    /// Claims of test spans only: a contradiction refutes, all verified verifies,
    /// anything else (not observed, pass unchecked) leaves them unverified.
    fn span_only_verdict(&self) -> Verdict {
        if self
            .results
            .iter()
            .any(|r| r.status == ClaimStatus::Rejected)
        {
            Verdict::Refuted
        } else if !self.results.is_empty()
            && self
                .results
                .iter()
                .all(|r| r.status == ClaimStatus::Verified)
        {
            Verdict::Verified
        } else {
            Verdict::Unverified
        }
    }

    /// The `--self-test` cases the evaluator did not reject: any makes the audit fail.
    pub fn missing_negative_cases(&self) -> Vec<&'static str> {
        if !self.options.self_test || self.blocked.is_some() {
            return Vec::new();
        }
        self.negative_cases
            .iter()
            .filter(|c| !c.observed)
            .map(|c| c.case_id)
            .collect()
    }

    /// The overall status before the record scan.
    pub fn status(&self) -> Status {
        if self.blocked.is_some() {
            return Status::Blocked;
        }
        if !self.missing_negative_cases().is_empty() {
            return Status::Fail;
        }
        match self.verdict() {
            Verdict::Verified => Status::Pass,
            Verdict::Refuted => Status::Rejected,
            Verdict::Unverified => {
                if self
                    .results
                    .iter()
                    .any(|r| r.status == ClaimStatus::Blocked)
                {
                    Status::Blocked
                } else {
                    Status::Unverified
                }
            }
        }
    }
}
