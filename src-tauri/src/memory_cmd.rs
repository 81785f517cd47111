//! Memory commands: the Memory screen, the "Memory updated" chip's undo, and deleting a
//! conversation's memories with it.

use hearth_core::Proposal;
use hearth_core::{ExportFormat, MemoryService};
use hearth_core::{
    Memory, MemoryFilter as Filter, MemoryKind as Kind, MemorySource as Source, NewMemory,
};
use tauri::{AppHandle, Emitter, Runtime, State};

use crate::cmd::blocking;
use crate::dto::args::*;
use crate::dto::{
    EmbeddingStatusDto, ErrorDto, ExportResultDto, ImportResultDto, MemoryCountsDto,
    MemoryDetailDto, MemoryDto, MemoryHistoryDto, MemoryProposalDto, MemorySettingsDto,
    MemorySourceDto, ModelDownloadEvent,
};
use crate::state::AppState;

fn memories(state: &AppState) -> Result<MemoryService, ErrorDto> {
    Ok(state.hearth()?.memory())
}

pub(crate) fn proposal_dto(p: Proposal) -> MemoryProposalDto {
    MemoryProposalDto {
        id: p.id,
        memory_id: p.memory_id,
        memory_text: String::new(),
        action: serde_json::to_value(p.action)
            .ok()
            .and_then(|v| v.as_str().map(str::to_owned))
            .unwrap_or_default(),
        proposed_text: p.proposed_text,
        new_memory: p.new_memory.map(|m| m.text),
        reason: p.reason,
        conversation_id: p.conversation,
        message_id: p.message_id,
        created: p.created,
    }
}

pub(crate) fn memory_dto(m: Memory) -> MemoryDto {
    let source = match m.source {
        Source::Conversation {
            conversation,
            message,
        } => MemorySourceDto {
            kind: "conversation".into(),
            conversation_id: Some(conversation),
            message_id: message,
            path: None,
        },
        Source::File { path } => MemorySourceDto {
            kind: "file".into(),
            conversation_id: None,
            message_id: None,
            path: Some(path),
        },
        Source::Manual => MemorySourceDto {
            kind: "manual".into(),
            conversation_id: None,
            message_id: None,
            path: None,
        },
        Source::Import => MemorySourceDto {
            kind: "import".into(),
            conversation_id: None,
            message_id: None,
            path: None,
        },
    };
    MemoryDto {
        id: m.id,
        text: m.text,
        kind: m.kind.as_str().into(),
        subject: m.subject,
        importance: m.importance,
        pinned: m.pinned,
        critical: m.critical,
        confidence: m.confidence,
        source,
        event_at: m.event_at,
        created: m.created,
        updated: m.updated,
        last_used: m.last_used,
        use_count: m.use_count,
        status: m.status.as_str().into(),
        removed_at: m.removed_at,
        removal_awaits_consent: m.removal_awaits_consent,
        context: m.context,
        facets: m.facets,
        no_longer_true: m.no_longer_true,
        superseded_by: m.superseded_by,
    }
}

#[allow(clippy::too_many_arguments)]
#[tauri::command]
pub async fn list_memories(
    state: State<'_, AppState>,
    args: Args<ListMemoriesArgs>,
) -> Result<Vec<MemoryDto>, ErrorDto> {
    let ListMemoriesArgs {
        kind,
        query,
        removed,
        pinned,
        critical,
        source,
        from,
        to,
    } = args.0;
    let memories = memories(&state)?;
    let filter = Filter {
        kind: kind.as_deref().map(Kind::parse).transpose()?,
        removed,
        pinned,
        critical,
        source,
        from,
        to,
        query: query.filter(|q| !q.trim().is_empty()),
    };
    let list = blocking(move || memories.list(&filter)).await?;
    Ok(list.into_iter().map(memory_dto).collect())
}

#[tauri::command]
pub async fn memory_counts(state: State<'_, AppState>) -> Result<MemoryCountsDto, ErrorDto> {
    let memories = memories(&state)?;
    let c = blocking(move || memories.counts()).await?;
    Ok(MemoryCountsDto {
        fact: c.fact,
        preference: c.preference,
        episode: c.episode,
        instruction: c.instruction,
        removed: c.removed,
        always_tokens: c.always_tokens,
        budget: c.budget,
        proposals: c.proposals,
    })
}

#[tauri::command]
pub async fn get_memory(
    state: State<'_, AppState>,
    args: Args<IdArgs>,
) -> Result<MemoryDetailDto, ErrorDto> {
    let IdArgs { id } = args.0;
    let memories = memories(&state)?;
    let detail = blocking(move || memories.detail(&id)).await?;
    let text = detail.memory.text.clone();
    Ok(MemoryDetailDto {
        memory: memory_dto(detail.memory),
        proposals: detail
            .proposals
            .into_iter()
            .map(|p| MemoryProposalDto {
                memory_text: text.clone(),
                ..proposal_dto(p)
            })
            .collect(),
        history: detail
            .history
            .into_iter()
            .map(|h| MemoryHistoryDto {
                op: h.op,
                old_text: h.old_text,
                new_text: h.new_text,
                actor: serde_json::to_value(h.actor)
                    .ok()
                    .and_then(|v| v.as_str().map(str::to_owned))
                    .unwrap_or_default(),
                at: h.at,
            })
            .collect(),
    })
}

#[tauri::command]
pub async fn add_memory(
    state: State<'_, AppState>,
    args: Args<AddMemoryArgs>,
) -> Result<MemoryDto, ErrorDto> {
    let AddMemoryArgs {
        text,
        kind,
        pinned,
        critical,
    } = args.0;
    let memories = memories(&state)?;
    let mut new = NewMemory::manual(text, Kind::parse(&kind)?);
    new.pinned = pinned;
    new.critical = critical;
    Ok(memory_dto(blocking(move || memories.add(new)).await?))
}

#[tauri::command]
pub async fn edit_memory(
    state: State<'_, AppState>,
    args: Args<EditMemoryArgs>,
) -> Result<MemoryDto, ErrorDto> {
    let EditMemoryArgs { id, text } = args.0;
    let memories = memories(&state)?;
    Ok(memory_dto(
        blocking(move || memories.edit(&id, &text)).await?,
    ))
}

#[tauri::command]
pub async fn set_memory_pinned(
    state: State<'_, AppState>,
    args: Args<SetMemoryPinnedArgs>,
) -> Result<MemoryDto, ErrorDto> {
    let SetMemoryPinnedArgs { id, pinned } = args.0;
    let memories = memories(&state)?;
    Ok(memory_dto(
        blocking(move || memories.set_pinned(&id, pinned)).await?,
    ))
}

#[tauri::command]
pub async fn set_memory_critical(
    state: State<'_, AppState>,
    args: Args<SetMemoryCriticalArgs>,
) -> Result<MemoryDto, ErrorDto> {
    let SetMemoryCriticalArgs { id, critical } = args.0;
    let memories = memories(&state)?;
    Ok(memory_dto(
        blocking(move || memories.set_critical(&id, critical)).await?,
    ))
}

#[tauri::command]
pub async fn delete_memories(
    state: State<'_, AppState>,
    args: Args<DeleteMemoriesArgs>,
) -> Result<u32, ErrorDto> {
    let DeleteMemoriesArgs { ids } = args.0;
    let memories = memories(&state)?;
    Ok(blocking(move || memories.delete_many(&ids)).await? as u32)
}

#[tauri::command]
pub async fn restore_memory(
    state: State<'_, AppState>,
    args: Args<IdArgs>,
) -> Result<MemoryDto, ErrorDto> {
    let IdArgs { id } = args.0;
    let memories = memories(&state)?;
    Ok(memory_dto(blocking(move || memories.restore(&id)).await?))
}

#[tauri::command]
pub async fn empty_removed_memories(state: State<'_, AppState>) -> Result<u32, ErrorDto> {
    let memories = memories(&state)?;
    Ok(blocking(move || memories.empty_removed()).await? as u32)
}

#[tauri::command]
pub async fn forget_memories(
    state: State<'_, AppState>,
    args: Args<ForgetMemoriesArgs>,
) -> Result<u32, ErrorDto> {
    let ForgetMemoriesArgs { all, from, to } = args.0;
    let memories = memories(&state)?;
    let n = match (all, from, to) {
        (true, _, _) => blocking(move || memories.forget_all()).await?,
        (false, Some(f), Some(t)) => blocking(move || memories.forget_between(f, t)).await?,
        _ => {
            return Err(ErrorDto::new(
                "invalid_input",
                "say what to forget: everything, or a date range",
            ));
        }
    };
    Ok(n as u32)
}

#[tauri::command]
pub async fn export_memories(
    state: State<'_, AppState>,
    args: Args<ExportMemoriesArgs>,
) -> Result<ExportResultDto, ErrorDto> {
    let ExportMemoriesArgs { format } = args.0;
    let memories = memories(&state)?;
    let format = ExportFormat::parse(&format)?;
    let (path, count) =
        blocking(move || memories.export_to_folder(&hearth_core::export_dir()?, format)).await?;
    Ok(ExportResultDto {
        path: path.display().to_string(),
        count: count as u32,
    })
}

#[tauri::command]
pub async fn import_memories(
    state: State<'_, AppState>,
    args: Args<ImportMemoriesArgs>,
) -> Result<ImportResultDto, ErrorDto> {
    let ImportMemoriesArgs { content } = args.0;
    let memories = memories(&state)?;
    let report = blocking(move || memories.import_jsonl(content.as_bytes())).await?;
    Ok(ImportResultDto {
        added: report.added as u32,
        skipped: report.skipped as u32,
    })
}

#[tauri::command]
pub async fn get_memory_settings(
    state: State<'_, AppState>,
) -> Result<MemorySettingsDto, ErrorDto> {
    let memories = memories(&state)?;
    let s = blocking(move || memories.settings()).await?;
    Ok(MemorySettingsDto {
        enabled: s.enabled,
        extraction_paused: s.extraction_paused,
    })
}

#[tauri::command]
pub async fn set_memory_settings(
    state: State<'_, AppState>,
    args: Args<SetMemorySettingsArgs>,
) -> Result<MemorySettingsDto, ErrorDto> {
    let SetMemorySettingsArgs {
        enabled,
        extraction_paused,
    } = args.0;
    let memories = memories(&state)?;
    let s = hearth_core::MemorySettings {
        enabled,
        extraction_paused,
    };
    blocking(move || memories.set_settings(s)).await?;
    Ok(MemorySettingsDto {
        enabled,
        extraction_paused,
    })
}

#[tauri::command]
pub async fn undo_memory_change(
    state: State<'_, AppState>,
    args: Args<UndoMemoryChangeArgs>,
) -> Result<(), ErrorDto> {
    let UndoMemoryChangeArgs { change } = args.0;
    let memories = memories(&state)?;
    let change = hearth_core::MemoryChange {
        memory_id: change.memory_id,
        op: change.op,
        text: change.text,
        old_text: change.old_text,
        proposal_id: change.proposal_id,
    };
    blocking(move || memories.undo(&change)).await
}

/// Changes Hearth suggests to pinned or critical memories, oldest first.
#[tauri::command]
pub async fn list_memory_proposals(
    state: State<'_, AppState>,
) -> Result<Vec<MemoryProposalDto>, ErrorDto> {
    let memories = memories(&state)?;
    let list = blocking(move || {
        let mut out = Vec::new();
        for p in memories.proposals()? {
            let text = memories
                .get(&p.memory_id)
                .map(|m| m.text)
                .unwrap_or_default();
            out.push(MemoryProposalDto {
                memory_text: text,
                ..proposal_dto(p)
            });
        }
        Ok(out)
    })
    .await?;
    Ok(list)
}

#[tauri::command]
pub async fn accept_memory_proposal(
    state: State<'_, AppState>,
    args: Args<IdArgs>,
) -> Result<(), ErrorDto> {
    let IdArgs { id } = args.0;
    let memories = memories(&state)?;
    blocking(move || memories.accept_proposal(&id).map(|_| ())).await
}

#[tauri::command]
pub async fn reject_memory_proposal(
    state: State<'_, AppState>,
    args: Args<IdArgs>,
) -> Result<(), ErrorDto> {
    let IdArgs { id } = args.0;
    let memories = memories(&state)?;
    blocking(move || memories.reject_proposal(&id)).await
}

#[tauri::command]
pub async fn count_conversation_memories(
    state: State<'_, AppState>,
    args: Args<ConversationArgs>,
) -> Result<u32, ErrorDto> {
    let ConversationArgs { conversation_id } = args.0;
    let memories = memories(&state)?;
    blocking(move || memories.count_from_conversation(&conversation_id)).await
}

async fn embedding_status(state: &AppState) -> Result<EmbeddingStatusDto, ErrorDto> {
    let hearth = state.hearth()?.clone();
    Ok(blocking(move || hearth.embedding_status()).await?.into())
}

#[tauri::command]
pub async fn get_embedding_status(
    state: State<'_, AppState>,
) -> Result<EmbeddingStatusDto, ErrorDto> {
    embedding_status(&state).await
}

/// Chooses the embedding model (`local`, `off`, or `provider` with its model); a
/// provider's model is tried first. Memories are re-embedded in the background.
#[tauri::command]
pub async fn set_embedding(
    state: State<'_, AppState>,
    args: Args<SetEmbeddingArgs>,
) -> Result<EmbeddingStatusDto, ErrorDto> {
    let SetEmbeddingArgs {
        kind,
        provider,
        model,
    } = args.0;
    let choice =
        hearth_core::EmbeddingChoice::from_form(&kind, provider.as_deref(), model.as_deref())?;
    // A re-embedding job, if the model changed, goes to the engine's job runner.
    let hearth = state.hearth()?.clone();
    blocking(move || hearth.set_embedding(choice)).await?;
    embedding_status(&state).await
}

/// Downloads the local embedding model once (progress as `model_download_progress`
/// events), starts using it and embeds memories in the background.
#[tauri::command]
pub async fn download_embedding_model<R: Runtime>(
    app: AppHandle<R>,
    state: State<'_, AppState>,
) -> Result<EmbeddingStatusDto, ErrorDto> {
    let hearth = state.hearth()?.clone();
    blocking(move || {
        let progress = move |file: &str, done: u64, total: Option<u64>| {
            let _ = app.emit(
                "model_download_progress",
                ModelDownloadEvent {
                    file: file.to_owned(),
                    done: done as f64,
                    total: total.map(|t| t as f64),
                },
            );
        };
        hearth.download_local_model(Some(&progress))
    })
    .await?;
    embedding_status(&state).await
}
