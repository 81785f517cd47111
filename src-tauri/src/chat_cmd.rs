//! Chat commands: start a turn in the background and stream it to the UI as events.

use std::sync::atomic::Ordering;

use hearth_core::MessageState;
use hearth_core::{ChatOptions, Redo};
use tauri::{AppHandle, Emitter, EventTarget, Manager, Runtime, State, Webview};
use tokio_util::sync::CancellationToken;

use crate::dto::args::*;
use crate::dto::{
    ChatDoneEvent, ChatEscalatingEvent, ChatFailedEvent, ChatStatusDto, ChatTokenEvent,
    ChatToolEvent, ChatToolStartedEvent, ChatWaitingEvent, ConversationDto, ErrorDto, MessageDto,
    OpenConversationEvent, SendResultDto, ToolCallDto, TurnInfoDto,
};
use crate::state::AppState;
use hearth_core::TurnEvent;

fn state_name(s: MessageState) -> String {
    serde_json::to_value(s)
        .ok()
        .and_then(|v| v.as_str().map(str::to_owned))
        .unwrap_or_default()
}

#[tauri::command]
pub fn chat_status(state: State<'_, AppState>) -> Result<ChatStatusDto, ErrorDto> {
    let hearth = state.hearth()?;
    Ok(match hearth.providers().for_chat(None, None) {
        Ok(slots) => ChatStatusDto {
            ready: true,
            fast_model: slots.fast_is_distinct().then(|| slots.fast.model.clone()),
            provider: Some(slots.main.provider.name),
            model: Some(slots.main.model),
            hint: None,
        },
        Err(e) => ChatStatusDto {
            ready: false,
            provider: None,
            model: None,
            fast_model: None,
            hint: Some(e.to_string()),
        },
    })
}

#[tauri::command]
pub async fn list_conversations(
    state: State<'_, AppState>,
) -> Result<Vec<ConversationDto>, ErrorDto> {
    let convs = state.hearth()?.conversations();
    let list = tauri::async_runtime::spawn_blocking(move || convs.list())
        .await
        .map_err(|e| ErrorDto::new("internal", e.to_string()))??;
    Ok(list
        .into_iter()
        .map(|c| ConversationDto {
            id: c.id,
            title: c.title,
            updated_at: c.updated_at,
            messages: c.messages,
        })
        .collect())
}

#[tauri::command]
pub async fn get_messages(
    state: State<'_, AppState>,
    args: Args<ConversationArgs>,
) -> Result<Vec<MessageDto>, ErrorDto> {
    let ConversationArgs { conversation_id } = args.0;
    let convs = state.hearth()?.conversations();
    let (messages, mut sources, mut calls) = crate::cmd::blocking(move || {
        Ok((
            convs.messages(&conversation_id)?,
            convs.sources(&conversation_id)?,
            convs.tool_calls(&conversation_id)?,
        ))
    })
    .await?;
    Ok(messages
        .into_iter()
        .map(|m| MessageDto {
            id: m.id,
            role: format!("{:?}", m.message.role).to_lowercase(),
            content: m.message.content,
            state: state_name(m.state),
            turn: m.turn.map(Into::into),
            sources: sources
                .remove(&m.id)
                .unwrap_or_default()
                .into_iter()
                .map(Into::into)
                .collect(),
            tool_calls: calls
                .remove(&m.id)
                .unwrap_or_default()
                .iter()
                .map(ToolCallDto::from)
                .collect(),
        })
        .collect())
}

#[tauri::command]
pub fn send_message<R: Runtime>(
    app: AppHandle<R>,
    webview: Webview<R>,
    state: State<'_, AppState>,
    args: Args<SendMessageArgs>,
) -> Result<SendResultDto, ErrorDto> {
    let SendMessageArgs {
        conversation_id,
        text,
        temporary,
        over_budget,
        tier,
    } = args.0;
    start_turn(
        app,
        webview.label(),
        &state,
        ChatOptions {
            conversation: conversation_id,
            message: text,
            temporary,
            redo: Redo::No,
            over_budget: over_budget.unwrap_or(false),
            tier: tier.map(Into::into).unwrap_or_default(),
            ..Default::default()
        },
    )
}

#[tauri::command]
pub fn regenerate<R: Runtime>(
    app: AppHandle<R>,
    webview: Webview<R>,
    state: State<'_, AppState>,
    args: Args<ConversationArgs>,
) -> Result<SendResultDto, ErrorDto> {
    let ConversationArgs { conversation_id } = args.0;
    start_turn(
        app,
        webview.label(),
        &state,
        ChatOptions {
            conversation: Some(conversation_id),
            redo: Redo::Regenerate,
            ..ChatOptions::default()
        },
    )
}

#[tauri::command]
pub fn edit_last_message<R: Runtime>(
    app: AppHandle<R>,
    webview: Webview<R>,
    state: State<'_, AppState>,
    args: Args<EditLastMessageArgs>,
) -> Result<SendResultDto, ErrorDto> {
    let EditLastMessageArgs {
        conversation_id,
        text,
    } = args.0;
    start_turn(
        app,
        webview.label(),
        &state,
        ChatOptions {
            conversation: Some(conversation_id),
            message: text,
            redo: Redo::EditLast,
            ..ChatOptions::default()
        },
    )
}

/// Starts a turn in the background; its answer arrives as `chat_token` events, then
/// `chat_done` or `chat_failed`, sent to the window that asked (`origin`) only. The turn
/// belongs to that window: only it may stop it.
fn start_turn<R: Runtime>(
    app: AppHandle<R>,
    origin: &str,
    state: &AppState,
    options: ChatOptions,
) -> Result<SendResultDto, ErrorDto> {
    let hearth = state.hearth()?.clone();
    // Tools on, asking through the consent window (whichever window started the turn).
    let consent: std::sync::Arc<dyn hearth_core::Consent> = state.consent.clone();
    let mut options = options;
    options.tools = hearth_core::ToolSettings::new(Some(consent));
    // The engine checks the turn (an empty message is refused) and picks its models.
    let turn = hearth.turn(options, &hearth_core::ModelChoice::default())?;
    let turn_id = state.next_turn.fetch_add(1, Ordering::Relaxed);
    let cancel = CancellationToken::new();
    if let Ok(mut turns) = state.turns.lock() {
        turns.insert(turn_id, (origin.to_owned(), cancel.clone()));
    }
    let target = EventTarget::webview_window(origin);
    tauri::async_runtime::spawn(async move {
        let (emitter, token_target) = (app.clone(), target.clone());
        // The turn runs in a task of its own so that a panic in it still ends the turn
        // here: its answer row is marked failed by the engine as the turn unwinds (which
        // also stops its checkpoints), and the window gets `chat_failed`.
        let turn = {
            tauri::async_runtime::spawn(async move {
                turn.run(&cancel, move |event| {
                    let _ = match event {
                        TurnEvent::Text(piece) => emitter.emit_to(
                            token_target.clone(),
                            "chat_token",
                            ChatTokenEvent {
                                turn_id,
                                text: piece.to_owned(),
                            },
                        ),
                        TurnEvent::ToolStarted { id, tool } => emitter.emit_to(
                            token_target.clone(),
                            "chat_tool_started",
                            ChatToolStartedEvent {
                                turn_id,
                                call_id: id.to_owned(),
                                tool: tool.to_owned(),
                            },
                        ),
                        TurnEvent::ToolEnded(call) => emitter.emit_to(
                            token_target.clone(),
                            "chat_tool",
                            ChatToolEvent {
                                turn_id,
                                call: call.into(),
                            },
                        ),
                        // Cascade: the streamed fast answer is set aside; the strong
                        // model's text follows.
                        TurnEvent::Escalating { from, to, reason } => emitter.emit_to(
                            token_target.clone(),
                            "chat_escalating",
                            ChatEscalatingEvent {
                                turn_id,
                                from: from.to_owned(),
                                to: to.to_owned(),
                                text: hearth_core::Route::escalated(reason, from).describe(),
                            },
                        ),
                        // The provider's rate limit holds the next call for a while.
                        TurnEvent::Waiting { provider, seconds } => emitter.emit_to(
                            token_target.clone(),
                            "chat_waiting",
                            ChatWaitingEvent {
                                turn_id,
                                provider: provider.to_owned(),
                                seconds,
                            },
                        ),
                    };
                })
                .await
            })
        };
        let result = match turn.await {
            Ok(result) => result,
            Err(e) => {
                tracing::error!(error = %e, "the chat turn panicked");
                Err(hearth_core::Error::Task(
                    "the turn stopped unexpectedly; the answer was not saved".into(),
                ))
            }
        };
        if let Some(state) = app.try_state::<AppState>()
            && let Ok(mut turns) = state.turns.lock()
        {
            turns.remove(&turn_id);
        }
        let _ = match result {
            Ok(done) => {
                let usage = done.usage.unwrap_or_default();
                app.emit_to(
                    target,
                    "chat_done",
                    ChatDoneEvent {
                        turn_id,
                        conversation_id: done.conversation,
                        answer: done.answer,
                        stopped: done.stopped,
                        input_tokens: usage.input_tokens,
                        output_tokens: usage.output_tokens,
                        message_id: done.message_id,
                        turn: TurnInfoDto {
                            provider: done.provider,
                            model: done.model,
                            input_tokens: usage.input_tokens,
                            output_tokens: usage.output_tokens,
                            cached_input_tokens: usage.cached_input_tokens,
                            cost_usd: done.cost_usd,
                            zones: Some(done.zones.into()),
                            fallback_from: done.fallback_from,
                            tools_left_out: done.tools_left_out,
                            stop_reason: serde_json::to_value(done.stop_reason)
                                .ok()
                                .and_then(|v| v.as_str().map(str::to_owned)),
                            route: done.route.filter(hearth_core::Route::shown).map(Into::into),
                            first_answer: done.first_answer,
                            over_budget: done.over_budget,
                            cached: done.cached,
                            cached_from: done.cached_from,
                        },
                        sources: done.sources.into_iter().map(Into::into).collect(),
                        tool_calls: done.tool_calls.iter().map(ToolCallDto::from).collect(),
                        stop_reason: serde_json::to_value(done.stop_reason)
                            .ok()
                            .and_then(|v| v.as_str().map(str::to_owned))
                            .unwrap_or_default(),
                        budget: done.budget.map(Into::into),
                    },
                )
            }
            Err(e) => app.emit_to(
                target,
                "chat_failed",
                ChatFailedEvent {
                    turn_id,
                    code: e.code().to_owned(),
                    message: e.to_string(),
                },
            ),
        };
        // Learning from the exchange is the engine's job runner's (`memory_updated` tells
        // the window).
    });
    Ok(SendResultDto { turn_id })
}

/// Stops a turn of the calling window. Another window's turn is refused (`not_found`, as
/// if it did not exist); a turn that already ended is a no-op.
#[tauri::command]
pub fn stop_turn<R: Runtime>(
    webview: Webview<R>,
    state: State<'_, AppState>,
    args: Args<StopTurnArgs>,
) -> Result<(), ErrorDto> {
    let StopTurnArgs { turn_id } = args.0;
    let turns = state
        .turns
        .lock()
        .map_err(|_| ErrorDto::new("internal", "the turn table is poisoned"))?;
    match turns.get(&turn_id) {
        Some((origin, _)) if origin != webview.label() => Err(ErrorDto::new(
            "not_found",
            "there is no such turn in this window",
        )),
        Some((_, cancel)) => {
            cancel.cancel();
            Ok(())
        }
        None => Ok(()),
    }
}

#[tauri::command]
pub async fn delete_conversation(
    state: State<'_, AppState>,
    args: Args<DeleteConversationArgs>,
) -> Result<(), ErrorDto> {
    let DeleteConversationArgs {
        conversation_id,
        delete_memories,
    } = args.0;
    let convs = state.hearth()?.conversations();
    tauri::async_runtime::spawn_blocking(move || convs.delete(&conversation_id, delete_memories))
        .await
        .map_err(|e| ErrorDto::new("internal", e.to_string()))??;
    Ok(())
}

#[tauri::command]
pub fn open_in_main<R: Runtime>(
    app: AppHandle<R>,
    args: Args<ConversationArgs>,
) -> Result<(), ErrorDto> {
    let ConversationArgs { conversation_id } = args.0;
    crate::windows::hide_quick_prompt(&app)?;
    crate::windows::show_main(&app)?;
    app.emit_to(
        crate::windows::MAIN,
        "open_conversation",
        OpenConversationEvent { conversation_id },
    )?;
    Ok(())
}
