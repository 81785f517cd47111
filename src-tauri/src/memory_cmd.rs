//! Memory commands: the Memory screen, the "Memory updated" chip's undo, and deleting a
//! conversation's memories with it.

use hearth_core::memory::{self, Actor, Filter, Kind, Memories, Memory, NewMemory, Source};
use hearth_core::tokens::Encoding;
use tauri::{AppHandle, Emitter, Runtime, State};

use crate::dto::{
    EmbeddingStatusDto, ErrorDto, ExportResultDto, ImportResultDto, MemoryChangeDto,
    MemoryCountsDto, MemoryDetailDto, MemoryDto, MemoryHistoryDto, MemorySettingsDto,
    MemorySourceDto, ModelDownloadEvent,
};
use crate::state::AppState;

async fn blocking<T: Send + 'static>(
    f: impl FnOnce() -> hearth_core::Result<T> + Send + 'static,
) -> Result<T, ErrorDto> {
    Ok(tauri::async_runtime::spawn_blocking(f)
        .await
        .map_err(|e| ErrorDto::new("internal", e.to_string()))??)
}

fn memories(state: &AppState) -> Result<Memories, ErrorDto> {
    Ok(Memories::new(state.hearth()?.store().clone()))
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
    }
}

#[allow(clippy::too_many_arguments)]
#[tauri::command]
pub async fn list_memories(
    state: State<'_, AppState>,
    kind: Option<String>,
    query: Option<String>,
    removed: bool,
    pinned: Option<bool>,
    critical: Option<bool>,
    source: Option<String>,
    from: Option<i64>,
    to: Option<i64>,
) -> Result<Vec<MemoryDto>, ErrorDto> {
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
    let hearth = state.hearth()?.clone();
    let list = blocking(move || {
        match (&filter.query, filter.removed) {
            // Instant search is hybrid (keyword + meaning) when the embedder is at hand.
            (Some(q), false) => hearth.search_memories(q, &filter),
            _ => memories.list(&filter),
        }
    })
    .await?;
    Ok(list.into_iter().map(memory_dto).collect())
}

#[tauri::command]
pub async fn memory_counts(state: State<'_, AppState>) -> Result<MemoryCountsDto, ErrorDto> {
    let memories = memories(&state)?;
    blocking(move || {
        let mut counts = MemoryCountsDto {
            fact: 0,
            preference: 0,
            episode: 0,
            instruction: 0,
            removed: 0,
            always_tokens: 0,
            budget: hearth_core::context::MEMORY_CAP,
        };
        for (kind, n) in memories.counts()? {
            match kind {
                Kind::Fact => counts.fact = n,
                Kind::Preference => counts.preference = n,
                Kind::Episode => counts.episode = n,
                Kind::Instruction => counts.instruction = n,
            }
        }
        counts.removed = memories
            .list(&Filter {
                removed: true,
                ..Filter::default()
            })?
            .len() as u32;
        counts.always_tokens = memories
            .always_in()?
            .iter()
            .map(|c| Encoding::O200kBase.count(&memory::block::render(c)) as u32 + 1)
            .sum();
        Ok(counts)
    })
    .await
}

#[tauri::command]
pub async fn get_memory(
    state: State<'_, AppState>,
    id: String,
) -> Result<MemoryDetailDto, ErrorDto> {
    let memories = memories(&state)?;
    let (memory, history) = blocking(move || {
        let m = memories
            .get(&id)?
            .ok_or_else(|| hearth_core::Error::NotFound(format!("there is no memory {id}")))?;
        Ok((m, memories.history(&id)?))
    })
    .await?;
    Ok(MemoryDetailDto {
        memory: memory_dto(memory),
        history: history
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
    text: String,
    kind: String,
    pinned: bool,
    critical: bool,
) -> Result<MemoryDto, ErrorDto> {
    let memories = memories(&state)?;
    let mut new = NewMemory::manual(text, Kind::parse(&kind)?);
    new.pinned = pinned;
    new.critical = critical;
    Ok(memory_dto(
        blocking(move || memories.add(new, Actor::User)).await?,
    ))
}

#[tauri::command]
pub async fn edit_memory(
    state: State<'_, AppState>,
    id: String,
    text: String,
) -> Result<MemoryDto, ErrorDto> {
    let memories = memories(&state)?;
    Ok(memory_dto(
        blocking(move || memories.edit(&id, &text, Actor::User, None)).await?,
    ))
}

#[tauri::command]
pub async fn set_memory_pinned(
    state: State<'_, AppState>,
    id: String,
    pinned: bool,
) -> Result<MemoryDto, ErrorDto> {
    let memories = memories(&state)?;
    Ok(memory_dto(
        blocking(move || memories.set_pinned(&id, pinned)).await?,
    ))
}

#[tauri::command]
pub async fn set_memory_critical(
    state: State<'_, AppState>,
    id: String,
    critical: bool,
) -> Result<MemoryDto, ErrorDto> {
    let memories = memories(&state)?;
    Ok(memory_dto(
        blocking(move || memories.set_critical(&id, critical)).await?,
    ))
}

#[tauri::command]
pub async fn delete_memories(
    state: State<'_, AppState>,
    ids: Vec<String>,
) -> Result<u32, ErrorDto> {
    let memories = memories(&state)?;
    Ok(blocking(move || memories.delete_many(&ids)).await? as u32)
}

#[tauri::command]
pub async fn restore_memory(state: State<'_, AppState>, id: String) -> Result<MemoryDto, ErrorDto> {
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
    all: bool,
    from: Option<i64>,
    to: Option<i64>,
) -> Result<u32, ErrorDto> {
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
    format: String,
) -> Result<ExportResultDto, ErrorDto> {
    let memories = memories(&state)?;
    let ext = match format.as_str() {
        "jsonl" => "jsonl",
        "md" => "md",
        other => {
            return Err(ErrorDto::new(
                "invalid_input",
                format!("unknown format {other:?}: use jsonl or md"),
            ));
        }
    };
    let date = jiff::Zoned::now().strftime("%Y-%m-%d").to_string();
    let dir = hearth_core::paths::export_dir();
    let mut path = dir.join(format!("hearth-memories-{date}.{ext}"));
    let mut i = 2;
    while path.exists() {
        path = dir.join(format!("hearth-memories-{date}-{i}.{ext}"));
        i += 1;
    }
    let target = path.clone();
    let count = blocking(move || {
        let file = std::fs::File::create(&target).map_err(|e| {
            hearth_core::Error::InvalidInput(format!("cannot write {}: {e}", target.display()))
        })?;
        let mut w = std::io::BufWriter::new(file);
        let n = if ext == "jsonl" {
            memories.export_jsonl(&mut w)?
        } else {
            memories.export_markdown(&mut w)?
        };
        std::io::Write::flush(&mut w).map_err(|e| {
            hearth_core::Error::InvalidInput(format!("cannot write {}: {e}", target.display()))
        })?;
        Ok(n)
    })
    .await?;
    Ok(ExportResultDto {
        path: path.display().to_string(),
        count: count as u32,
    })
}

#[tauri::command]
pub async fn import_memories(
    state: State<'_, AppState>,
    content: String,
) -> Result<ImportResultDto, ErrorDto> {
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
    let store = state.hearth()?.store().clone();
    let s = blocking(move || memory::settings(&store)).await?;
    Ok(MemorySettingsDto {
        enabled: s.enabled,
        extraction_paused: s.extraction_paused,
    })
}

#[tauri::command]
pub async fn set_memory_settings(
    state: State<'_, AppState>,
    enabled: bool,
    extraction_paused: bool,
) -> Result<MemorySettingsDto, ErrorDto> {
    let store = state.hearth()?.store().clone();
    let s = memory::MemorySettings {
        enabled,
        extraction_paused,
    };
    blocking(move || memory::set_settings(&store, s)).await?;
    Ok(MemorySettingsDto {
        enabled,
        extraction_paused,
    })
}

#[tauri::command]
pub async fn undo_memory_change(
    state: State<'_, AppState>,
    change: MemoryChangeDto,
) -> Result<(), ErrorDto> {
    let memories = memories(&state)?;
    blocking(move || {
        match change.op.as_str() {
            "add" => {
                memories.delete(&change.memory_id)?;
            }
            "update" => {
                let old = change.old_text.ok_or_else(|| {
                    hearth_core::Error::InvalidInput("an update to undo needs its old text".into())
                })?;
                memories.edit(&change.memory_id, &old, Actor::User, None)?;
            }
            "remove" => {
                memories.restore(&change.memory_id)?;
            }
            other => {
                return Err(hearth_core::Error::InvalidInput(format!(
                    "cannot undo {other:?}"
                )));
            }
        }
        Ok(())
    })
    .await
}

#[tauri::command]
pub async fn count_conversation_memories(
    state: State<'_, AppState>,
    conversation_id: String,
) -> Result<u32, ErrorDto> {
    let memories = memories(&state)?;
    blocking(move || memories.count_from_conversation(&conversation_id)).await
}

/// Indexing runs one at a time; a request while one runs makes it go round once more.
static INDEXING: std::sync::atomic::AtomicU8 = std::sync::atomic::AtomicU8::new(0);

/// Gives memories added or edited since (here, by the CLI, by an import) their vectors, in
/// the background, one run at a time (progress as `embedding_progress` events). Called
/// when the store changes; cheap when there is nothing to do.
pub(crate) fn index_in_background(hearth: &hearth_core::Hearth) {
    use std::sync::atomic::Ordering;
    // 0 idle, 1 running, 2 running and asked again.
    if INDEXING.fetch_add(1, Ordering::SeqCst) > 0 {
        INDEXING.store(2, Ordering::SeqCst);
        return;
    }
    let hearth = hearth.clone();
    tauri::async_runtime::spawn_blocking(move || {
        loop {
            if let Err(e) = hearth.embed_pending() {
                tracing::warn!(code = e.code(), "could not index new memories");
            }
            // Asked again while running: go round once more; else stop.
            if INDEXING
                .compare_exchange(1, 0, Ordering::SeqCst, Ordering::SeqCst)
                .is_ok()
            {
                break;
            }
            INDEXING.store(1, Ordering::SeqCst);
        }
    });
}

/// Gives memories vectors from the current embedding model, off the UI's way (progress
/// goes out as `embedding_progress` events).
pub(crate) fn reembed_in_background(hearth: &hearth_core::Hearth) {
    let hearth = hearth.clone();
    tauri::async_runtime::spawn_blocking(move || {
        if let Err(e) = hearth.reembed(None) {
            tracing::warn!(code = e.code(), "re-embedding memories stopped; will retry");
        }
        // And whatever else is new (memories added while the app was closed).
        index_in_background(&hearth);
    });
}

async fn embedding_status(state: &AppState) -> Result<EmbeddingStatusDto, ErrorDto> {
    let hearth = state.hearth()?.clone();
    let downloading = state
        .downloading_model
        .load(std::sync::atomic::Ordering::SeqCst);
    let s = blocking(move || hearth.embedding_status()).await?;
    Ok(EmbeddingStatusDto::new(s, downloading))
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
    kind: String,
    provider: Option<String>,
    model: Option<String>,
) -> Result<EmbeddingStatusDto, ErrorDto> {
    use hearth_core::embed::EmbeddingChoice;
    let choice = match kind.as_str() {
        "local" => EmbeddingChoice::Local,
        "off" => EmbeddingChoice::Off,
        "provider" => match (provider, model) {
            (Some(p), Some(m)) if !p.trim().is_empty() && !m.trim().is_empty() => {
                EmbeddingChoice::Provider {
                    provider: p.trim().to_owned(),
                    model: m.trim().to_owned(),
                    dimensions: 0,
                }
            }
            _ => {
                return Err(ErrorDto::new(
                    "invalid_input",
                    "choose a provider and type its embedding model",
                ));
            }
        },
        other => {
            return Err(ErrorDto::new(
                "invalid_input",
                format!("unknown embedding choice {other:?}"),
            ));
        }
    };
    let hearth = state.hearth()?.clone();
    let h = hearth.clone();
    if blocking(move || h.set_embedding(choice)).await?.is_some() {
        reembed_in_background(&hearth);
    }
    embedding_status(&state).await
}

/// Downloads the local embedding model once (progress as `model_download_progress`
/// events), starts using it and embeds memories in the background.
#[tauri::command]
pub async fn download_embedding_model<R: Runtime>(
    app: AppHandle<R>,
    state: State<'_, AppState>,
) -> Result<EmbeddingStatusDto, ErrorDto> {
    use std::sync::atomic::Ordering;
    let hearth = state.hearth()?.clone();
    if state.downloading_model.swap(true, Ordering::SeqCst) {
        return Err(ErrorDto::new(
            "busy",
            "the embedding model is already downloading",
        ));
    }
    let h = hearth.clone();
    let result = blocking(move || {
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
        h.download_local_model(Some(&progress))
    })
    .await;
    state.downloading_model.store(false, Ordering::SeqCst);
    if result?.is_some() {
        reembed_in_background(&hearth);
    }
    embedding_status(&state).await
}
