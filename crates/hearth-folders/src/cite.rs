//! Watched folders in the chat: the engine's [`RetrievalSource`] (the passages of the
//! user's files most relevant to a message, each with its chunk id), and an answer's
//! sources, stored by chunk id with the answer — never by copying text, so a source goes
//! when its file's text goes.

use std::sync::Arc;

use rusqlite::params;
use serde::Serialize;

use crate::Result;
use crate::embed::EmbedderSlot;
use crate::store::Store;

/// Passages from the user's files for a message, best first (watched folders fill it).
pub trait RetrievalSource: Send + Sync {
    fn retrieve(&self, message: &str, budget: u32) -> Result<Vec<Passage>>;
}

/// A retrieved passage and where it came from (cited in answers).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Passage {
    pub source: String,
    pub text: String,
    /// The chunk it is, by which the answer stores it as a source.
    pub chunk_id: Option<i64>,
}

/// Passages offered per message (the assembler keeps those that fit its budget).
pub const PASSAGES: usize = 8;

/// A passage found only by its vector must be at least this similar to the message to be
/// offered (all-MiniLM-L6-v2's cosine: below it, a passage is rarely about the message,
/// and "hi" should not bring in the nearest file).
pub const MIN_SIMILARITY: f64 = 0.35;

/// One source of an answer: the passage it was given as `[position]`.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Source {
    pub position: u32,
    pub chunk_id: i64,
    /// The file, absolute.
    pub path: String,
    pub heading: Option<String>,
    pub line_start: u32,
    pub line_end: u32,
    pub page: Option<u32>,
}

impl Source {
    /// Where the passage is, as people read it (`page 3`, `lines 7-12`).
    pub fn place(&self) -> String {
        super::search::place(self.page, self.line_start, self.line_end)
    }
}

/// Stores the sources of answer `message`: `(citation id, chunk id)`. A chunk deleted
/// since the prompt was made is left out.
pub fn record(store: &Store, message: i64, cited: &[(u32, i64)]) -> Result<()> {
    if cited.is_empty() {
        return Ok(());
    }
    let cited = cited.to_vec();
    store.write_blocking(move |c| {
        let tx = c.transaction()?;
        tx.execute(
            "DELETE FROM message_sources WHERE message_id = ?1",
            [message],
        )?;
        for (position, chunk) in &cited {
            tx.execute(
                "INSERT INTO message_sources (message_id, position, chunk_id)
                 SELECT ?1, ?2, ?3 WHERE EXISTS (SELECT 1 FROM chunks WHERE id = ?3)",
                params![message, position, chunk],
            )?;
        }
        tx.commit()
    })
}

const SOURCE_COLUMNS: &str =
    "s.position, s.chunk_id, d.path, f.rel_path, ch.heading, ch.line_start,
     ch.line_end, ch.page, s.message_id";

const SOURCE_JOINS: &str = "message_sources s JOIN chunks ch ON ch.id = s.chunk_id
     JOIN folder_files f ON f.id = ch.file_id JOIN folders d ON d.id = f.folder_id";

fn source_row(r: &rusqlite::Row<'_>) -> rusqlite::Result<(i64, Source)> {
    let root: String = r.get(2)?;
    let rel: String = r.get(3)?;
    Ok((
        r.get(8)?,
        Source {
            position: r.get(0)?,
            chunk_id: r.get(1)?,
            path: std::path::Path::new(&root)
                .join(rel)
                .to_string_lossy()
                .into_owned(),
            heading: r.get(4)?,
            line_start: u32::try_from(r.get::<_, i64>(5)?).unwrap_or(0),
            line_end: u32::try_from(r.get::<_, i64>(6)?).unwrap_or(0),
            page: r
                .get::<_, Option<i64>>(7)?
                .and_then(|p| u32::try_from(p).ok()),
        },
    ))
}

/// The sources of answer `message`, in citation order.
pub fn sources(store: &Store, message: i64) -> Result<Vec<Source>> {
    store.read_blocking(move |c| {
        let mut stmt = c.prepare_cached(&format!(
            "SELECT {SOURCE_COLUMNS} FROM {SOURCE_JOINS} WHERE s.message_id = ?1 ORDER BY s.position"
        ))?;
        let rows = stmt.query_map([message], source_row)?;
        rows.map(|r| r.map(|(_, s)| s)).collect()
    })
}

/// The sources of every answer of `conversation`, by message id, each in citation order.
pub fn sources_of_conversation(
    store: &Store,
    conversation: &str,
) -> Result<std::collections::HashMap<i64, Vec<Source>>> {
    let conversation = conversation.to_owned();
    store.read_blocking(move |c| {
        let mut stmt = c.prepare_cached(&format!(
            "SELECT {SOURCE_COLUMNS} FROM {SOURCE_JOINS} JOIN messages m ON m.id = s.message_id
              WHERE m.conversation_id = ?1 ORDER BY s.message_id, s.position"
        ))?;
        let mut out: std::collections::HashMap<i64, Vec<Source>> = Default::default();
        for row in stmt.query_map([conversation], source_row)? {
            let (message, source) = row?;
            out.entry(message).or_default().push(source);
        }
        Ok(out)
    })
}

/// One indexed passage as the passage view shows it: where it is and its text (as indexed:
/// the file may have changed since, which the next reconcile pass notices).
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct PassageView {
    pub chunk_id: i64,
    /// The file, absolute.
    pub path: String,
    /// The watched folder it is in.
    pub folder: String,
    /// The file's path inside the folder.
    pub rel_path: String,
    pub heading: Option<String>,
    pub line_start: u32,
    pub line_end: u32,
    pub page: Option<u32>,
    pub text: String,
    /// When the file was last modified (ms since the epoch), as last indexed.
    pub modified: Option<crate::time::Millis>,
}

impl PassageView {
    /// Where the passage is, as people read it (`page 3`, `lines 7-12`).
    pub fn place(&self) -> String {
        super::search::place(self.page, self.line_start, self.line_end)
    }
}

/// The passage of chunk `id`; `None` when it is gone (its file changed or was removed).
pub fn passage(store: &Store, id: i64) -> Result<Option<PassageView>> {
    store.read_blocking(move |c| {
        let mut stmt = c.prepare_cached(
            "SELECT ch.id, d.path, f.rel_path, ch.heading, ch.line_start, ch.line_end, ch.page,
                    ch.text, f.mtime
               FROM chunks ch JOIN folder_files f ON f.id = ch.file_id
               JOIN folders d ON d.id = f.folder_id
              WHERE ch.id = ?1",
        )?;
        let row = stmt.query_row([id], |r| {
            let folder: String = r.get(1)?;
            let rel_path: String = r.get(2)?;
            Ok(PassageView {
                chunk_id: r.get(0)?,
                path: std::path::Path::new(&folder)
                    .join(&rel_path)
                    .to_string_lossy()
                    .into_owned(),
                folder,
                rel_path,
                heading: r.get(3)?,
                line_start: u32::try_from(r.get::<_, i64>(4)?).unwrap_or(0),
                line_end: u32::try_from(r.get::<_, i64>(5)?).unwrap_or(0),
                page: r
                    .get::<_, Option<i64>>(6)?
                    .and_then(|p| u32::try_from(p).ok()),
                text: r.get(7)?,
                modified: r.get(8)?,
            })
        });
        match row {
            Ok(p) => Ok(Some(p)),
            Err(rusqlite::Error::QueryReturnedNoRows) => Ok(None),
            Err(e) => Err(e),
        }
    })
}

/// The chat's passages from watched folders: hybrid search (keyword only while the chunks
/// have no vectors from the model in use) over every indexed chunk.
pub struct FolderRetrieval {
    store: Store,
    embedder: EmbedderSlot,
}

impl FolderRetrieval {
    pub fn new(store: Store, embedder: EmbedderSlot) -> Arc<Self> {
        Arc::new(Self { store, embedder })
    }
}

impl RetrievalSource for FolderRetrieval {
    fn retrieve(&self, message: &str, _budget: u32) -> Result<Vec<Passage>> {
        let any = self.store.read_blocking(|c| {
            c.query_row("SELECT EXISTS (SELECT 1 FROM chunks)", [], |r| {
                r.get::<_, bool>(0)
            })
        })?;
        if !any {
            return Ok(Vec::new());
        }
        let embedder = self.embedder.get();
        let with_vectors = match &embedder {
            Some(e) => super::vectors::any(&self.store, e.model_id())?,
            None => false,
        };
        let hits = match embedder {
            Some(e) if with_vectors => {
                let q = e.embed_query(message)?;
                super::search::hybrid_with_floor(
                    &self.store,
                    message,
                    e.model_id(),
                    &q,
                    PASSAGES,
                    &super::search::Filter::default(),
                    Some(MIN_SIMILARITY),
                )?
            }
            _ => super::search::keyword(
                &self.store,
                message,
                PASSAGES,
                &super::search::Filter::default(),
            )?,
        };
        let ids: Vec<i64> = hits.iter().map(|h| h.chunk_id).collect();
        let texts = super::search::texts(&self.store, ids)?;
        Ok(hits
            .into_iter()
            .filter_map(|h| {
                let text = texts.get(&h.chunk_id)?.clone();
                let name = std::path::Path::new(&h.folder)
                    .file_name()
                    .map(|n| n.to_string_lossy().into_owned())
                    .unwrap_or_default();
                let rel = std::path::Path::new(&h.path)
                    .strip_prefix(&h.folder)
                    .map(|p| p.to_string_lossy().into_owned())
                    .unwrap_or_else(|_| h.path.clone());
                let place = super::search::place(h.page, h.line_start, h.line_end);
                let under = h
                    .heading
                    .as_deref()
                    .map(|x| format!(", under {x}"))
                    .unwrap_or_default();
                Some(Passage {
                    source: format!("{name}/{rel}, {place}{under}"),
                    text,
                    chunk_id: Some(h.chunk_id),
                })
            })
            .collect())
    }
}
