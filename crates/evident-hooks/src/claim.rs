//! The Completion Claim an agent never writes, built from what the world shows: every
//! path that differs between the base commit and the work tree is a `code_change`
//! mutation (committed or not, untracked included, ignored files excluded), dated when
//! the hook started (file times are the agent's to set). The transcript supplies the
//! task (its first user message) and the claimed outcome (the last agent message, or
//! the event's `last_assistant_message`), and is cross-checked with git: a write the
//! transcript shows that git does not, and a change git shows that no call in the
//! transcript names, are findings. They inform; the contract's checks decide.

use crate::error::HookError;
use std::path::Path;

use evident_probes::Scrubber;
use evident_probes::git::{Change, Changes, Witness};
use evident_traces::Trace;
use serde_json::{Value, json};

/// Longest text kept from the transcript for the task and the outcome.
const MAX_TEXT: usize = 4000;

/// The claim built for one stop, with what it was built from.
pub struct Built {
    /// The Completion Claim document the gate decides.
    pub claim: Value,
    /// What git saw changed since the base, reused for the contract and tree checks.
    pub changes: Changes,
    /// Where the transcript and git disagree, in words; they inform, they do not decide.
    pub findings: Vec<String>,
}

/// What [`build`] needs besides the git witness.
pub struct Input<'a> {
    /// The claim's `task.id` (one per agent session).
    pub task_id: String,
    /// The baseline commit the changes are counted from.
    pub base: &'a str,
    /// The agent's transcript, when one could be read.
    pub trace: Option<&'a Trace>,
    /// Where the agent ran (relative paths in the transcript are taken from here).
    pub cwd: &'a Path,
    /// The event's last agent message: the claimed outcome when the transcript has none.
    pub last_message: Option<String>,
    /// The user's request when the event carries it and no transcript is read
    /// (Gemini CLI's AfterAgent `prompt`).
    pub task: Option<String>,
    /// When the hook started: every mutation is dated then (file times are the agent's).
    pub at: time::OffsetDateTime,
    /// Removes the contract's secrets from transcript text before it is recorded.
    pub scrub: &'a Scrubber,
}

/// Text from the transcript as it may be recorded: registered secrets and URL
/// credentials scrubbed, cut to [`MAX_TEXT`] characters.
pub fn scrubbed(text: &str, scrub: &Scrubber) -> String {
    let urls: String = text
        .split_inclusive(char::is_whitespace)
        .map(|w| {
            let t = w.trim_end();
            if t.contains("://") {
                format!("{}{}", evident_probes::redact_url(t), &w[t.len()..])
            } else {
                w.to_string()
            }
        })
        .collect();
    let s = scrub.scrub(&urls);
    if s.chars().count() > MAX_TEXT {
        let cut: String = s.chars().take(MAX_TEXT).collect();
        format!("{cut}…")
    } else {
        s
    }
}

/// Agent-made text (a file name, a tool call's id or name) as it may appear in a
/// reason the agent and the user read: secrets scrubbed, and control characters
/// (newline, ESC, CR, bidirectional overrides) shown as `\u{..}` escapes, so it can add
/// no line of its own ("evident: verified…") and no terminal control.
pub fn shown(text: &str, scrub: &Scrubber) -> String {
    evident_pipeline::render::shown(&scrubbed(text, scrub)).into_owned()
}

/// A path written in the transcript, relative to the repository's top, when inside it.
fn relative(path: &str, cwd: &Path, top: &Path) -> Option<String> {
    let p = Path::new(path);
    let full = if p.is_absolute() {
        p.to_path_buf()
    } else {
        cwd.join(p)
    };
    let mut parts: Vec<String> = Vec::new();
    let rest = full.strip_prefix(top).ok()?;
    for c in rest.components() {
        match c {
            std::path::Component::Normal(x) => parts.push(x.to_string_lossy().into_owned()),
            std::path::Component::ParentDir => {
                parts.pop()?;
            }
            _ => {}
        }
    }
    (!parts.is_empty()).then(|| parts.join("/"))
}

/// Builds the claim from what git shows changed since `base`, with the transcript's
/// task, outcome and findings; `Err` when git could not be read.
pub async fn build(witness: &Witness, input: Input<'_>) -> Result<Built, HookError> {
    let changes = witness.changes(input.base).await.map_err(HookError::Git)?;
    let at = input
        .at
        .replace_nanosecond(0)
        .unwrap_or(input.at)
        .format(&time::format_description::well_known::Rfc3339)
        .map_err(|e| format!("the time cannot be written as RFC 3339: {e}"))?;
    let top = witness.top();
    let cwd = input
        .cwd
        .canonicalize()
        .unwrap_or_else(|_| input.cwd.to_path_buf());
    let changed: Vec<String> = changes
        .changed
        .iter()
        .map(|(p, _)| String::from_utf8_lossy(p).into_owned())
        .collect();
    let mutations: Vec<Value> = changes
        .changed
        .iter()
        .enumerate()
        .map(|(i, (p, how))| {
            json!({
                "id": format!("m{}", i + 1),
                "kind": "code_change",
                "target": String::from_utf8_lossy(p),
                "at": at,
                "x_change": match how { Change::Added => "added", Change::Modified => "modified", Change::Deleted => "deleted" },
            })
        })
        .collect();
    let mut findings = Vec::new();
    let base_short = &input.base[..input.base.len().min(12)];
    let mut task = input.task.clone();
    let mut outcome = input.last_message.clone();
    if let Some(trace) = input.trace {
        if let Some(t) = trace.first_user_message() {
            task = Some(t.to_string());
        }
        if outcome.is_none() {
            outcome = trace.last_agent_message().map(str::to_string);
        }
        let mut written: Vec<(String, usize)> = Vec::new();
        for c in &trace.calls {
            if c.outcome.as_ref().is_some_and(|o| o.is_error) {
                continue;
            }
            for w in &c.writes {
                if let Some(r) = relative(w, &cwd, top)
                    && !written.iter().any(|(x, _)| *x == r)
                {
                    written.push((r, c.line));
                }
            }
        }
        for (w, line) in &written {
            if !changed.iter().any(|c| c == w) {
                findings.push(format!(
                    "the transcript shows a write to {} (line {line}) that git does not show changed since {base_short}: the edit was lost or reverted",
                    shown(w, input.scrub)
                ));
            }
        }
        let shells = trace.calls.iter().filter(|c| c.shell).count();
        for c in &changed {
            if !written.iter().any(|(w, _)| w == c) {
                let why = if shells > 0 {
                    format!(
                        "a side effect of one of its {shells} shell commands, or another process"
                    )
                } else {
                    "another process".to_string()
                };
                findings.push(format!(
                    "git shows {} changed since {base_short} but no call in the transcript wrote it ({why})",
                    shown(c, input.scrub)
                ));
            }
        }
        for c in trace.calls.iter().filter(|c| c.outcome.is_none()) {
            findings.push(format!(
                "tool call {} ({}) at line {} never got a result (unfinished)",
                shown(&c.id, input.scrub),
                shown(&c.name, input.scrub),
                c.line
            ));
        }
    }
    let mut claim = json!({
        "spec_version": "0.1",
        "task": { "id": input.task_id, "requested_by": "user" },
        "mutations": mutations,
        "evidence": [],
        "x_observed": {
            "base": input.base,
            "tree_hash": changes.tree_hash,
            "findings": findings,
        },
    });
    if let Some(t) = task {
        claim["task"]["description"] = Value::from(scrubbed(&t, input.scrub));
    }
    if let Some(o) = outcome {
        claim["claimed_outcome"] = Value::from(scrubbed(&o, input.scrub));
    }
    Ok(Built {
        claim,
        changes,
        findings,
    })
}
