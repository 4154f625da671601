//! Each agent's hook protocol: what it sends on stdin and how a stop is allowed or
//! refused on stdout. Every answer exits 0 with JSON on stdout: agents treat other
//! exit codes (and a crash) as "let the stop through", which evident never relies on.

use serde_json::{Value, json};

/// The coding agents evident answers.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Agent {
    /// Claude Code: `Stop`, `SubagentStop`, `SessionStart` (settings `.claude/settings.json`).
    ClaudeCode,
    /// Codex: `Stop`, `SubagentStop`, `SessionStart` (`.codex/hooks.json`); the Stop
    /// output schema is closed (`continue`, `decision`, `reason`, `stopReason`,
    /// `suppressOutput`, `systemMessage`).
    Codex,
    /// Cursor: `stop` answered with `followup_message` (`.cursor/hooks.json`).
    Cursor,
    /// Gemini CLI: `AfterAgent` answered with `decision: "deny"` (`.gemini/settings.json`).
    Gemini,
    /// Copilot CLI: `agentStop` answered with `decision: "block"`.
    Copilot,
}

impl Agent {
    pub const ALL: [Agent; 5] = [
        Agent::ClaudeCode,
        Agent::Codex,
        Agent::Cursor,
        Agent::Gemini,
        Agent::Copilot,
    ];

    pub fn parse(s: &str) -> Option<Agent> {
        Agent::ALL.into_iter().find(|a| a.name() == s)
    }

    pub fn name(self) -> &'static str {
        match self {
            Agent::ClaudeCode => "claude-code",
            Agent::Codex => "codex",
            Agent::Cursor => "cursor",
            Agent::Gemini => "gemini",
            Agent::Copilot => "copilot",
        }
    }

    /// The transcript format of this agent, for the claim builder.
    pub fn transcript_format(self) -> Option<TranscriptFormat> {
        match self {
            Agent::ClaudeCode => Some(TranscriptFormat::ClaudeCode),
            Agent::Codex => Some(TranscriptFormat::Codex),
            _ => None,
        }
    }
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum TranscriptFormat {
    ClaudeCode,
    Codex,
    /// Harbor's Agent Trajectory Interchange Format (no agent hook writes it; for
    /// `evident claim --from atif`).
    Atif,
}

/// Which event the agent reports.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Kind {
    SessionStart,
    Stop,
    SubagentStop,
}

/// The fields evident reads from an agent's event (the rest is ignored).
#[derive(Debug, Clone, Default)]
pub struct Event {
    pub kind: Option<Kind>,
    pub session_id: String,
    pub cwd: Option<String>,
    pub transcript_path: Option<String>,
    pub stop_hook_active: bool,
    pub last_assistant_message: Option<String>,
}

/// Read the event JSON an agent writes on stdin.
pub fn parse_event(agent: Agent, bytes: &[u8]) -> Result<Event, String> {
    if bytes.len() > 16 * 1024 * 1024 {
        return Err("the hook event on stdin exceeds 16 MiB".into());
    }
    let v: Value = serde_json::from_slice(bytes)
        .map_err(|e| format!("the hook event on stdin is not JSON: {e}"))?;
    if !v.is_object() {
        return Err("the hook event on stdin is not a JSON object".into());
    }
    let s = |k: &str| v.get(k).and_then(Value::as_str).map(str::to_string);
    let name = s("hook_event_name").unwrap_or_default();
    let kind = match name.as_str() {
        "SessionStart" | "sessionStart" => Some(Kind::SessionStart),
        "Stop" | "stop" | "AfterAgent" | "agentStop" => Some(Kind::Stop),
        "SubagentStop" | "subagentStop" => Some(Kind::SubagentStop),
        _ => None,
    };
    let session_id = s("session_id")
        .or_else(|| s("sessionId"))
        .or_else(|| s("conversation_id"))
        .ok_or("the hook event has no session_id")?;
    let cwd = s("cwd").or_else(|| {
        v.get("workspace_roots")
            .and_then(Value::as_array)
            .and_then(|a| a.first())
            .and_then(Value::as_str)
            .map(str::to_string)
    });
    let last = s("last_assistant_message").or_else(|| match agent {
        Agent::Gemini => s("prompt_response"),
        _ => None,
    });
    Ok(Event {
        kind,
        session_id,
        cwd,
        transcript_path: s("agent_transcript_path").or_else(|| s("transcript_path")),
        stop_hook_active: v.get("stop_hook_active").and_then(Value::as_bool) == Some(true),
        last_assistant_message: last,
    })
}

/// What evident tells the agent.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Answer {
    /// The stop goes through; `message` is shown to the user where the protocol can.
    Allow { message: Option<String> },
    /// The stop is refused; `reason` is what the agent reads and acts on.
    Refuse { reason: String },
    /// Nothing to say (a session-start event).
    Silent,
}

/// The answer as that agent's protocol writes it on stdout.
pub fn render(agent: Agent, answer: &Answer) -> String {
    let v = match (agent, answer) {
        (_, Answer::Silent) => return String::new(),
        (Agent::Cursor, Answer::Refuse { reason }) => json!({ "followup_message": reason }),
        (Agent::Cursor, Answer::Allow { .. }) => json!({}),
        (Agent::Gemini, Answer::Refuse { reason }) => {
            json!({ "decision": "deny", "reason": reason })
        }
        (_, Answer::Refuse { reason }) => json!({ "decision": "block", "reason": reason }),
        (Agent::Copilot, Answer::Allow { .. }) => json!({}),
        (_, Answer::Allow { message: Some(m) }) => json!({ "systemMessage": m }),
        (_, Answer::Allow { message: None }) => json!({}),
    };
    format!("{v}\n")
}
