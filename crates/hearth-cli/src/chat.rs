//! `hearth chat` and `hearth conversations`.

use std::io::Write;

use hearth_core::Hearth;
use hearth_core::chat::{ChatModel, ChatOptions, ModelSlots};
use hearth_core::llm::{Protocol, Provider};
use serde_json::json;
use tokio_util::sync::CancellationToken;
use zeroize::Zeroizing;

use crate::open_options;
use crate::output::{Failure, Out};

/// Exit code after Ctrl-C.
pub const INTERRUPTED: u8 = 130;

fn env(name: &str) -> Option<String> {
    std::env::var(name).ok().filter(|s| !s.is_empty())
}

/// The one-off provider configured by the environment: `main` from `--model` or
/// HEARTH_MODEL, `fast` from HEARTH_FAST_MODEL (defaults to the main model).
fn slots_from_env(model: Option<String>) -> Result<ModelSlots, Failure> {
    let main = model_from_env(model)?;
    let window = match env("HEARTH_CONTEXT_WINDOW") {
        None => None,
        Some(w) => Some(w.parse::<u32>().map_err(|_| {
            Failure::new(
                "invalid_input",
                format!("HEARTH_CONTEXT_WINDOW must be a number of tokens, not {w:?}"),
            )
        })?),
    };
    let main = ChatModel {
        context_window: window,
        ..main
    };
    let fast = match env("HEARTH_FAST_MODEL") {
        Some(m) => ChatModel {
            model: m,
            context_window: None,
            ..main.clone()
        },
        None => main.clone(),
    };
    Ok(ModelSlots { main, fast })
}

/// The one-off provider configured by the environment.
fn model_from_env(model: Option<String>) -> Result<ChatModel, Failure> {
    let url = std::env::var("HEARTH_PROVIDER_URL")
        .ok()
        .filter(|s| !s.is_empty());
    let model = model.or_else(|| std::env::var("HEARTH_MODEL").ok().filter(|s| !s.is_empty()));
    let (Some(base_url), Some(model)) = (url, model) else {
        return Err(no_provider());
    };
    let api_key = std::env::var("HEARTH_API_KEY")
        .ok()
        .filter(|s| !s.is_empty())
        .map(Zeroizing::new);
    Ok(ChatModel {
        provider: Provider {
            name: host_name(&base_url),
            protocol: Protocol::OpenAiCompatible,
            base_url,
            api_key,
        },
        model,
        context_window: None,
    })
}

fn no_provider() -> Failure {
    Failure::new(
        "no_provider",
        "no model is configured: run `hearth providers add NAME --preset ollama --model llama3.2` (or another \
         preset), or set HEARTH_PROVIDER_URL (an OpenAI-compatible base URL ending in /v1) and HEARTH_MODEL",
    )
}

fn host_name(url: &str) -> String {
    url.split("://")
        .nth(1)
        .and_then(|rest| rest.split('/').next())
        .unwrap_or(url)
        .to_owned()
}

/// Runs one turn; returns the exit code (0, or 130 when stopped by Ctrl-C).
pub fn chat(
    out: &Out,
    conversation: Option<String>,
    model: Option<String>,
    provider: Option<String>,
    temporary: bool,
    message: String,
) -> Result<u8, Failure> {
    let opts = open_options()?;
    let slots = if env("HEARTH_PROVIDER_URL").is_some() && provider.is_none() {
        slots_from_env(model)?
    } else {
        let hearth = Hearth::open_oneshot(&opts)?;
        hearth_core::providers::Providers::new(hearth.store().clone())
            .slots(provider.as_deref(), model)?
            .ok_or_else(no_provider)?
    };
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
        let options = ChatOptions {
            conversation,
            message,
            temporary,
        };
        let mut stdout = std::io::stdout();
        let outcome = hearth
            .chat(&slots, options, &cancel, |piece| {
                if !json {
                    let _ = stdout.write_all(piece.as_bytes());
                    let _ = stdout.flush();
                }
            })
            .await?;
        if !json {
            println!();
        }
        if let Some(id) = &outcome.conversation {
            eprintln!("conversation: {id}");
        }
        if json {
            out.print_json(&json!({
                "conversation": outcome.conversation,
                "answer": outcome.answer,
                "stopped": outcome.stopped,
                "usage": outcome.usage,
            }));
        }
        Ok(if outcome.stopped { INTERRUPTED } else { 0 })
    })
}

fn conversations() -> Result<hearth_core::conversations::Conversations, Failure> {
    Ok(Hearth::open_oneshot(&open_options()?)?.conversations())
}

fn not_found(id: &str) -> Failure {
    Failure::new("not_found", format!("there is no conversation {id}"))
}

pub fn show(out: &Out, id: &str) -> Result<(), Failure> {
    let convs = conversations()?;
    if !convs.exists(id)? {
        return Err(not_found(id));
    }
    let messages = convs.messages(id)?;
    if out.json {
        let rows: Vec<_> = messages
            .iter()
            .map(|m| {
                json!({"id": m.id, "role": m.message.role, "content": m.message.content,
                            "state": m.state, "tokens": m.tokens, "created_at": m.created_at})
            })
            .collect();
        out.print_json(&rows);
    } else {
        for m in messages {
            let role = format!("{:?}", m.message.role).to_lowercase();
            let state = match m.state {
                hearth_core::conversations::MessageState::Complete => String::new(),
                other => format!(
                    " [{}]",
                    serde_json::to_value(other)
                        .ok()
                        .and_then(|v| v.as_str().map(str::to_owned))
                        .unwrap_or_default()
                ),
            };
            println!("{role}{state}: {}\n", m.message.content);
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
    if !conversations()?.rename(id, title)? {
        return Err(not_found(id));
    }
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
    if !conversations()?.delete(id)? {
        return Err(not_found(id));
    }
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

fn print_list(out: &Out, list: Vec<hearth_core::conversations::ConversationSummary>, empty: &str) {
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
