//! Each agent's hook protocol: what it sends on stdin and how a stop is allowed or
//! refused on stdout. Every answer exits 0 with JSON on stdout: agents treat other
//! exit codes (and a crash) as "let the stop through", which evident never relies on.

use crate::error::{HookError, json};
use serde_json::{Value, json};

/// The coding agents evident answers. Each protocol fact, and where it comes from, is
/// in docs/agents.md.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Agent {
    /// Claude Code: `Stop`, `SubagentStop`, `SessionStart` (settings `.claude/settings.json`).
    ClaudeCode,
    /// Codex: `Stop`, `SubagentStop`, `SessionStart` (`.codex/hooks.json`); the Stop
    /// output schema is closed (`continue`, `decision`, `reason`, `stopReason`,
    /// `suppressOutput`, `systemMessage`).
    Codex,
    /// Cursor: `stop` (and `subagentStop`) answered with `followup_message`, which
    /// Cursor submits as the next user message; `sessionStart` (`.cursor/hooks.json`).
    Cursor,
    /// Gemini CLI: `AfterAgent` answered with `decision: "deny"`, whose `reason` becomes
    /// the agent's next prompt; `SessionStart` (`.gemini/settings.json`).
    Gemini,
    /// Copilot CLI: `agentStop` / `subagentStop` answered with `decision: "block"`,
    /// whose `reason` is the next turn's prompt; `sessionStart` (`.github/hooks/*.json`).
    Copilot,
}

impl Agent {
    /// Every agent evident answers, so a name can be looked up and each one tested.
    pub const ALL: [Agent; 5] = [
        Agent::ClaudeCode,
        Agent::Codex,
        Agent::Cursor,
        Agent::Gemini,
        Agent::Copilot,
    ];

    /// The agent a command line names (`claude-code`, `codex`, …), if evident answers it.
    pub fn parse(s: &str) -> Option<Agent> {
        Agent::ALL.into_iter().find(|a| a.name() == s)
    }

    /// The agent's name on the command line and in task ids (`claude-code`).
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

/// How an agent's transcript is written, so the claim builder picks the right reader.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum TranscriptFormat {
    /// Claude Code's JSON Lines session log.
    ClaudeCode,
    /// Codex's JSON Lines rollout file.
    Codex,
    /// Harbor's Agent Trajectory Interchange Format (no agent hook writes it; for
    /// `evident claim --from atif`).
    Atif,
}

/// Which event the agent reports.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Kind {
    /// A session begins: evident records its baseline (and snapshot) and says nothing.
    SessionStart,
    /// The agent would end its turn: the contract runs, and the stop is allowed or refused.
    Stop,
    /// A subagent wants to stop: decided like [`Kind::Stop`].
    SubagentStop,
}

impl Agent {
    /// The event names this agent uses for each kind evident answers, from its
    /// published hook reference (docs/agents.md cites each): `evident init` registers
    /// the first name of each kind, and `parse_event` accepts only these.
    pub fn events(self) -> &'static [(&'static str, Kind)] {
        match self {
            Agent::ClaudeCode | Agent::Codex => &[
                ("SessionStart", Kind::SessionStart),
                ("Stop", Kind::Stop),
                ("SubagentStop", Kind::SubagentStop),
            ],
            Agent::Cursor => &[
                ("sessionStart", Kind::SessionStart),
                ("stop", Kind::Stop),
                ("subagentStop", Kind::SubagentStop),
            ],
            // Gemini CLI has no subagent stop; AfterAgent fires once per turn.
            Agent::Gemini => &[
                ("SessionStart", Kind::SessionStart),
                ("AfterAgent", Kind::Stop),
            ],
            // Copilot CLI's camelCase events carry no `hook_event_name` (the command
            // passes `--event`); its VS Code compatible PascalCase events do.
            Agent::Copilot => &[
                ("sessionStart", Kind::SessionStart),
                ("agentStop", Kind::Stop),
                ("subagentStop", Kind::SubagentStop),
                ("SessionStart", Kind::SessionStart),
                ("Stop", Kind::Stop),
                ("SubagentStop", Kind::SubagentStop),
            ],
        }
    }

    /// The kinds evident registers for, with the event name `evident init` uses.
    pub fn registered(self) -> Vec<(&'static str, Kind)> {
        let mut out: Vec<(&'static str, Kind)> = Vec::new();
        for &(name, kind) in self.events() {
            if !out.iter().any(|(_, k)| *k == kind) {
                out.push((name, kind));
            }
        }
        out
    }

    /// Whether the agent's event names must be passed on the command line
    /// (`--event NAME`) because its payload does not name the event.
    pub fn needs_event_flag(self) -> bool {
        self == Agent::Copilot
    }

    /// The kind of this agent's event `event_name`; `None` for one evident does not answer.
    pub fn kind_of(self, event_name: &str) -> Option<Kind> {
        self.events()
            .iter()
            .find(|(n, _)| *n == event_name)
            .map(|(_, k)| *k)
    }
}

/// The fields evident reads from an agent's event (the rest is ignored).
#[derive(Debug, Clone, Default)]
pub struct Event {
    /// What the event is, or `None` for one evident does not answer (it stays silent).
    pub kind: Option<Kind>,
    /// The event's name, as sent or as passed with `--event`.
    pub name: String,
    /// The agent's session (Cursor: conversation) id, which keys the session's state.
    pub session_id: String,
    /// Where the agent runs: the repository is found from here.
    pub cwd: Option<String>,
    /// The agent's transcript, read for the task and outcome and cross-checked with git.
    pub transcript_path: Option<String>,
    /// This stop follows a refusal; never by itself a reason to let it through.
    pub stop_hook_active: bool,
    /// The agent's last message, the claimed outcome when no transcript says it.
    pub last_assistant_message: Option<String>,
    /// The user's request for this turn, where the event carries it (Gemini CLI's
    /// AfterAgent `prompt`).
    pub prompt: Option<String>,
    /// Why the agent loop ended, where the agent says (Cursor's stop `status`:
    /// `completed`, `aborted` or `error`).
    pub status: Option<String>,
}

/// Read the event JSON an agent writes on stdin. `event_flag` is the `--event NAME`
/// the registered command passes (Copilot CLI's camelCase payloads do not name the
/// event); a payload's own `hook_event_name` must agree with it.
pub fn parse_event(
    agent: Agent,
    bytes: &[u8],
    event_flag: Option<&str>,
) -> Result<Event, HookError> {
    if bytes.len() > 16 * 1024 * 1024 {
        return Err("the hook event on stdin exceeds 16 MiB".into());
    }
    let v: Value =
        serde_json::from_slice(bytes).map_err(json("the hook event on stdin is not JSON"))?;
    if !v.is_object() {
        return Err("the hook event on stdin is not a JSON object".into());
    }
    let s = |k: &str| v.get(k).and_then(Value::as_str).map(str::to_string);
    let sent = s("hook_event_name");
    let name = match (sent, event_flag) {
        (Some(a), Some(b)) if a != b => {
            return Err(format!(
                "the hook event names itself {a:?} but the command was registered with --event {b}; hint: run `evident init {}` again",
                agent.name()
            ).into());
        }
        (Some(a), _) => a,
        (None, Some(b)) => b.to_string(),
        (None, None) => {
            return Err(format!(
                "the hook event does not say which event it is (no hook_event_name, no --event); hint: run `evident init {}` again, it registers the command with --event",
                agent.name()
            ).into());
        }
    };
    if let Some(f) = event_flag
        && agent.kind_of(f).is_none()
    {
        return Err(format!(
            "--event {f:?} is not an event evident answers for {}",
            agent.name()
        )
        .into());
    }
    let kind = agent.kind_of(&name);
    // Cursor's conversation_id is in every event of its common schema; prefer it so a
    // session start and the stops of one conversation share one session.
    let session_id = match agent {
        Agent::Cursor => s("conversation_id").or_else(|| s("session_id")),
        _ => s("session_id").or_else(|| s("sessionId")),
    }
    .ok_or("the hook event has no session id (session_id, sessionId or conversation_id)")?;
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
        name,
        session_id,
        cwd,
        transcript_path: s("agent_transcript_path")
            .or_else(|| s("transcript_path"))
            .or_else(|| s("transcriptPath")),
        stop_hook_active: v.get("stop_hook_active").and_then(Value::as_bool) == Some(true),
        last_assistant_message: last,
        prompt: match agent {
            Agent::Gemini => s("prompt"),
            _ => None,
        },
        status: match agent {
            Agent::Cursor => s("status"),
            _ => None,
        },
    })
}

/// What evident tells the agent.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Answer {
    /// The stop goes through; `message` is shown to the user where the protocol can
    /// (and always written to stderr).
    Allow {
        /// What the user is told, if anything (say, that the stop went through unverified).
        message: Option<String>,
    },
    /// The stop is refused; `reason` is what the agent reads and acts on.
    Refuse {
        /// Why the stop was refused and what to fix, for the agent's next turn.
        reason: String,
    },
    /// Nothing to say (a session-start event).
    Silent,
}

/// The answer as that agent's protocol writes it on stdout.
pub fn render(agent: Agent, answer: &Answer) -> String {
    let v = match (agent, answer) {
        // Claude Code adds a session start's plain stdout to the model's context, and
        // Codex reads it likewise: nothing at all is the quiet answer there.
        (Agent::ClaudeCode | Agent::Codex, Answer::Silent) => return String::new(),
        // The others parse stdout as JSON; `{}` changes nothing.
        (_, Answer::Silent) => json!({}),
        // Cursor: a non-empty followup_message is submitted as the next user message;
        // there is no field for a message to the user.
        (Agent::Cursor, Answer::Refuse { reason }) => json!({ "followup_message": reason }),
        (Agent::Cursor, Answer::Allow { .. }) => json!({}),
        // Gemini CLI AfterAgent: "deny" rejects the response and sends `reason` to the
        // agent as a new prompt; systemMessage is shown to the user.
        (Agent::Gemini, Answer::Refuse { reason }) => {
            json!({ "decision": "deny", "reason": reason })
        }
        (Agent::Gemini, Answer::Allow { message: Some(m) }) => {
            json!({ "decision": "allow", "systemMessage": m })
        }
        (Agent::Gemini, Answer::Allow { message: None }) => json!({ "decision": "allow" }),
        // Copilot CLI agentStop/subagentStop: "block" forces another turn with
        // `reason` as the prompt; only decision and reason are read.
        (Agent::Copilot, Answer::Refuse { reason }) => {
            json!({ "decision": "block", "reason": reason })
        }
        (Agent::Copilot, Answer::Allow { .. }) => json!({ "decision": "allow" }),
        // Claude Code and Codex.
        (_, Answer::Refuse { reason }) => json!({ "decision": "block", "reason": reason }),
        (_, Answer::Allow { message: Some(m) }) => json!({ "systemMessage": m }),
        (_, Answer::Allow { message: None }) => json!({}),
    };
    format!("{v}\n")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_answer_of_every_agent_is_one_json_object_except_claude_and_codex_silence() {
        for agent in Agent::ALL {
            for a in [
                Answer::Silent,
                Answer::Allow { message: None },
                Answer::Allow {
                    message: Some("m".into()),
                },
                Answer::Refuse { reason: "r".into() },
            ] {
                let out = render(agent, &a);
                if out.is_empty() {
                    assert!(matches!(agent, Agent::ClaudeCode | Agent::Codex));
                    assert_eq!(a, Answer::Silent);
                    continue;
                }
                let v: Value = serde_json::from_str(&out).unwrap();
                assert!(v.is_object(), "{agent:?} {a:?}: {out}");
                if let Answer::Refuse { .. } = a {
                    assert!(
                        out.contains("\"r\""),
                        "{agent:?}: the reason is sent: {out}"
                    );
                }
            }
        }
    }

    #[test]
    fn events_are_read_by_each_agents_own_names() {
        let stop = |agent, name: &str| {
            parse_event(
                agent,
                json!({"session_id": "s", "conversation_id": "c", "cwd": "/r", "hook_event_name": name})
                    .to_string()
                    .as_bytes(),
                None,
            )
            .unwrap()
            .kind
        };
        assert_eq!(stop(Agent::Gemini, "AfterAgent"), Some(Kind::Stop));
        assert_eq!(stop(Agent::Gemini, "Stop"), None);
        assert_eq!(stop(Agent::Cursor, "stop"), Some(Kind::Stop));
        assert_eq!(stop(Agent::Cursor, "AfterAgent"), None);
        assert_eq!(stop(Agent::Copilot, "Stop"), Some(Kind::Stop));
        // Copilot's camelCase payload names no event: --event does, and must agree.
        let camel =
            json!({"sessionId": "s", "cwd": "/r", "timestamp": 1, "stopReason": "end_turn"})
                .to_string();
        let e = parse_event(Agent::Copilot, camel.as_bytes(), Some("agentStop")).unwrap();
        assert_eq!((e.kind, e.session_id.as_str()), (Some(Kind::Stop), "s"));
        assert!(parse_event(Agent::Copilot, camel.as_bytes(), None).is_err());
        let named =
            json!({"session_id": "s", "cwd": "/r", "hook_event_name": "SessionStart"}).to_string();
        assert!(parse_event(Agent::Copilot, named.as_bytes(), Some("agentStop")).is_err());
        // Cursor keys the session by conversation_id.
        let e = parse_event(
            Agent::Cursor,
            json!({"conversation_id": "c", "session_id": "x", "hook_event_name": "stop", "workspace_roots": ["/w"], "status": "aborted"}).to_string().as_bytes(),
            None,
        )
        .unwrap();
        assert_eq!(
            (e.session_id.as_str(), e.cwd.as_deref(), e.status.as_deref()),
            ("c", Some("/w"), Some("aborted"))
        );
    }
}
