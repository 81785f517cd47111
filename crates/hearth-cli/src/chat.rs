//! `hearth chat` and `hearth conversations`.

use std::io::Write;

use hearth_core::ToolSettings;
use hearth_core::{ChatOptions, Redo, TurnEvent};
use hearth_core::{Hearth, ModelChoice};
use serde_json::json;
use tokio_util::sync::CancellationToken;

use crate::open_options;
use crate::output::{Failure, Out};

/// Exit code after Ctrl-C.
pub const INTERRUPTED: u8 = 130;

/// What `hearth chat` was asked.
pub struct Turn {
    pub conversation: Option<String>,
    pub model: Option<String>,
    pub provider: Option<String>,
    pub temporary: bool,
    pub regenerate: bool,
    pub edit: bool,
    pub no_wait: bool,
    pub no_tools: bool,
    pub allow_writes: bool,
    pub tier: hearth_core::TierChoice,
    pub over_budget: bool,
    pub message: String,
}

/// Runs one turn; returns the exit code (0, or 130 when stopped by Ctrl-C).
pub fn chat(out: &Out, turn: Turn) -> Result<u8, Failure> {
    let Turn {
        conversation,
        model,
        provider,
        temporary,
        regenerate,
        edit,
        no_wait,
        no_tools,
        allow_writes,
        tier,
        over_budget,
        message,
    } = turn;
    let redo = match (regenerate, edit) {
        (true, _) => Redo::Regenerate,
        (false, true) => Redo::EditLast,
        _ => Redo::No,
    };
    let opts = open_options()?;
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .map_err(|e| Failure::new("internal", e.to_string()))?;
    runtime.block_on(async move {
        let hearth = Hearth::open_oneshot(&opts)?;
        let cancel = CancellationToken::new();
        let on_ctrl_c = cancel.clone();
        tokio::spawn(async move {
            if tokio::signal::ctrl_c().await.is_ok() {
                on_ctrl_c.cancel();
            }
        });
        let json = out.json;
        let choice = ModelChoice { provider, model };
        let options = ChatOptions {
            conversation,
            message,
            temporary,
            redo,
            tools: if no_tools {
                ToolSettings::off()
            } else {
                ToolSettings {
                    allow_writes,
                    ..ToolSettings::new(Some(std::sync::Arc::new(crate::tools::TtyConsent)))
                }
            },
            tier,
            over_budget,
        };
        // The engine checks the turn (an empty message is refused) and picks its models.
        let turn = hearth.turn(options, &choice)?;
        let mut stdout = std::io::stdout();
        let outcome = turn
            .run(&cancel, |event| match (json, event) {
                (false, TurnEvent::Text(piece)) => {
                    // The model's words, never its escape sequences (`display::prose`
                    // escapes character by character, so a sequence split across pieces
                    // is caught too).
                    let piece = hearth_core::display::prose(piece);
                    let _ = stdout.write_all(piece.as_bytes());
                    let _ = stdout.flush();
                }
                // Cascade: the fast answer above stays; the strong one follows it.
                (false, TurnEvent::Escalating { from, to, reason }) => {
                    let _ = stdout.write_all(b"\n");
                    let _ = stdout.flush();
                    let why = hearth_core::Route::escalated(reason, from).describe();
                    eprintln!(
                        "note: {} answered; {why} — {} answers again:",
                        hearth_core::display::prose(from),
                        hearth_core::display::prose(to)
                    );
                }
                (false, TurnEvent::Waiting { provider, seconds }) => {
                    eprintln!(
                        "note: {} asks Hearth to slow down: waiting about {seconds} s for its rate limit (Ctrl-C stops)",
                        hearth_core::display::prose(provider)
                    );
                }
                _ => {}
            })
            .await;
        // MCP servers this chat started are stopped (the whole process group).
        hearth.mcp().shutdown().await;
        let outcome = outcome?;
        if !json {
            println!();
            print_sources(&outcome.sources);
            print_calls(&outcome.tool_calls);
        }
        for down in &outcome.tools_unavailable {
            eprintln!(
                "note: the MCP server {} is not available ({}); this answer was made without its tools",
                down.server, down.reason
            );
        }
        if let Some(from) = &outcome.fallback_from {
            eprintln!(
                "note: {from} failed; this answer came from the fallback model {}",
                outcome.model
            );
        }
        // Which model answered and why, when there was a choice to make.
        if let Some(route) = &outcome.route
            && route.shown()
            && !json
        {
            eprintln!(
                "answered by {}: {}",
                hearth_core::display::prose(&outcome.model),
                route.describe()
            );
        }
        if let (Some(asked), false) = (&outcome.cached_from, json) {
            eprintln!(
                "note: answered from a saved reply to: “{}” (`hearth chat --conversation {} --regenerate` asks the model instead)",
                hearth_core::display::prose(asked),
                outcome.conversation.as_deref().unwrap_or("ID")
            );
        } else if outcome.cached && !json {
            eprintln!(
                "note: answered from the response cache (the same request was answered before; `hearth providers cache --clear` empties it)"
            );
        }
        if let Some(standing) = &outcome.budget
            && !json
        {
            eprintln!("note: {}", standing.describe());
        }
        if let Some(id) = &outcome.conversation {
            eprintln!("conversation: {id}");
        }
        // Learn from the exchange before exiting, so `hearth memory list` shows it.
        let mut learned = Vec::new();
        if let (Some(job), false) = (outcome.learn_job, no_wait) {
            match turn.learn_now(job).await {
                Ok(changes) => learned = changes,
                Err(e) => eprintln!("warning: could not learn from this exchange yet: {e}"),
            }
            if !json && !learned.is_empty() {
                let what: Vec<String> = learned
                    .iter()
                    .map(|c| format!("{} {}", c.op, c.memory_id))
                    .collect();
                eprintln!("memory updated: {}", what.join(", "));
            }
        }
        if json {
            out.print_json(&json!({
                "conversation": outcome.conversation,
                "message_id": outcome.message_id,
                "answer": outcome.answer,
                "stopped": outcome.stopped,
                "usage": outcome.usage,
                "cost_usd": outcome.cost_usd,
                "provider": outcome.provider,
                "model": outcome.model,
                "fallback_from": outcome.fallback_from,
                "route": outcome.route,
                "first_answer": outcome.first_answer,
                "budget": outcome.budget,
                "cached": outcome.cached,
                "cached_from": outcome.cached_from,
                "context": outcome.zones,
                "memory_changes": learned,
                "sources": outcome.sources,
                "tool_calls": outcome.tool_calls,
                "tools_unavailable": outcome.tools_unavailable,
                "stop_reason": outcome.stop_reason,
            }));
        }
        Ok(if outcome.stopped { INTERRUPTED } else { 0 })
    })
}

fn conversations() -> Result<hearth_core::ConversationService, Failure> {
    Ok(Hearth::open_oneshot(&open_options()?)?.conversations())
}

/// A turn's tool calls on stderr, one line each, as `hearth chat` and `hearth
/// conversations show` print them.
fn print_calls(calls: &[hearth_core::CallRecord]) {
    let word = |v: serde_json::Value| v.as_str().map(str::to_owned).unwrap_or_default();
    for call in calls {
        eprintln!(
            "tool: {} ({}) {} by {}, {}{}",
            call.tool,
            call.risk.as_str(),
            word(serde_json::to_value(call.decision).unwrap_or_default()),
            word(serde_json::to_value(call.decided_by).unwrap_or_default()),
            word(serde_json::to_value(call.result_status).unwrap_or_default()),
            if call.escalated { ", escalated" } else { "" }
        );
    }
}

/// An answer's sources, as `hearth chat` and `hearth conversations show` print them.
fn print_sources(sources: &[hearth_core::CitedSource]) {
    if sources.is_empty() {
        return;
    }
    println!("\nSources:");
    for src in sources {
        let place = src.place();
        let under = src
            .heading
            .as_deref()
            .map(|h| format!(" — {h}"))
            .unwrap_or_default();
        println!("[{}] {} ({place}){under}", src.position, src.path);
    }
}

pub fn show(out: &Out, id: &str) -> Result<(), Failure> {
    let service = conversations()?;
    let messages = service.messages(id)?;
    let mut sources = service.sources(id)?;
    let mut calls = service.tool_calls(id)?;
    if out.json {
        let rows: Vec<_> = messages
            .iter()
            .map(|m| {
                let tool_calls: Vec<serde_json::Value> = calls
                    .get(&m.id)
                    .map(Vec::as_slice)
                    .unwrap_or_default()
                    .iter()
                    .map(|c| {
                        let mut v = serde_json::to_value(c).unwrap_or_default();
                        v["result"] = json!(c.shown_result());
                        v
                    })
                    .collect();
                json!({"id": m.id, "role": m.message.role, "content": m.message.content,
                            "state": m.state, "tokens": m.tokens, "created_at": m.created_at,
                            "turn": m.turn,
                            "sources": sources.get(&m.id).cloned().unwrap_or_default(),
                            "tool_calls": tool_calls})
            })
            .collect();
        out.print_json(&rows);
    } else {
        for m in messages {
            let role = format!("{:?}", m.message.role).to_lowercase();
            let state = match m.state {
                hearth_core::MessageState::Complete => String::new(),
                other => format!(
                    " [{}]",
                    serde_json::to_value(other)
                        .ok()
                        .and_then(|v| v.as_str().map(str::to_owned))
                        .unwrap_or_default()
                ),
            };
            println!("{role}{state}: {}", m.message.content);
            if let Some(c) = calls.remove(&m.id) {
                print_calls(&c);
            }
            if let Some(src) = sources.remove(&m.id) {
                print_sources(&src);
            }
            println!();
        }
    }
    Ok(())
}

pub fn search(out: &Out, text: &str) -> Result<(), Failure> {
    print_list(
        out,
        conversations()?.search(text)?,
        "No conversation mentions that.",
    );
    Ok(())
}

pub fn rename(out: &Out, id: &str, title: &str) -> Result<(), Failure> {
    conversations()?.rename(id, title)?;
    if out.json {
        out.print_json(&json!({"id": id, "title": title.trim()}));
    } else {
        println!("Renamed.");
    }
    Ok(())
}

pub fn delete(out: &Out, id: &str, yes: bool) -> Result<(), Failure> {
    if !yes && !crate::secrets::confirm("Delete this conversation and all its messages for good?") {
        return Err(Failure::new(
            "confirmation_required",
            "not confirmed: run on a terminal and type yes, or pass --yes",
        ));
    }
    conversations()?.delete(id, false)?;
    if out.json {
        out.print_json(&json!({"deleted": id}));
    } else {
        println!("Deleted.");
    }
    Ok(())
}

pub fn list(out: &Out) -> Result<(), Failure> {
    print_list(
        out,
        conversations()?.list()?,
        "No conversations yet. Start one with: hearth chat \"hello\"",
    );
    Ok(())
}

fn print_list(out: &Out, list: Vec<hearth_core::ConversationSummary>, empty: &str) {
    if out.json {
        out.print_json(&list);
    } else if list.is_empty() {
        println!("{empty}");
    } else {
        for c in list {
            println!("{}  {:>3} messages  {}", c.id, c.messages, c.title);
        }
    }
}
