//! Watched folders: the Folders screen, search over the user's files, and the passages an
//! answer cites.

use serde::Serialize;
use ts_rs::TS;

use hearth_core::SearchHit as Hit;
use hearth_core::{CitedSource as Source, PassageView};
use hearth_core::{FolderState, FolderSummary};

/// A watched folder and where its indexing stands. `state` is
/// paused|unavailable|indexing|polling|watching|idle.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, TS)]
#[ts(export)]
pub struct FolderDto {
    #[ts(type = "number")]
    pub id: i64,
    /// Absolute, canonical.
    pub path: String,
    /// Its last component, for headings.
    pub name: String,
    pub state: String,
    #[ts(type = "number")]
    pub indexed: u64,
    #[ts(type = "number")]
    pub pending: u64,
    #[ts(type = "number")]
    pub skipped: u64,
    #[ts(type = "number")]
    pub failed: u64,
    #[ts(type = "number")]
    pub chunks: u64,
    /// Chunks with a vector of the search model in use.
    #[ts(type = "number")]
    pub chunks_embedded: u64,
    #[ts(type = "number | null")]
    pub last_indexed: Option<i64>,
    /// Why the system would not watch it (`polling`), else null.
    pub watch_reason: Option<String>,
    /// Tools may create, change and delete files here (reading works in any watched folder).
    pub writable: bool,
    /// How often a folder the system will not watch is checked for changes, in seconds.
    #[ts(type = "number")]
    pub poll_every_s: u64,
}

impl From<FolderSummary> for FolderDto {
    fn from(f: FolderSummary) -> Self {
        let name = std::path::Path::new(&f.path)
            .file_name()
            .map(|n| n.to_string_lossy().into_owned())
            .unwrap_or_else(|| f.path.clone());
        Self {
            id: f.id,
            name,
            state: match f.state {
                FolderState::Paused => "paused",
                FolderState::Unavailable => "unavailable",
                FolderState::Indexing => "indexing",
                FolderState::Polling => "polling",
                FolderState::Watching => "watching",
                FolderState::Idle => "idle",
            }
            .to_owned(),
            indexed: f.files.indexed,
            pending: f.files.pending,
            skipped: f.files.skipped,
            failed: f.files.failed,
            chunks: f.chunks,
            chunks_embedded: f.chunks_embedded,
            last_indexed: f.last_indexed,
            watch_reason: f.watch_reason,
            writable: f.writable,
            poll_every_s: f.poll_every_s,
            path: f.path,
        }
    }
}

/// A folder just added: it, and what the first walk found.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, TS)]
#[ts(export)]
pub struct AddFolderResultDto {
    pub folder: FolderDto,
    /// Files queued for indexing.
    #[ts(type = "number")]
    pub queued: u64,
    /// Entries skipped at once (too large, links leading outside, devices…).
    #[ts(type = "number")]
    pub skipped: u64,
}

/// One entry of a folder. `status` indexed|pending|skipped|failed; `reason_code` (skipped
/// or failed) one of the fixed codes of `hearth folders files`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, TS)]
#[ts(export)]
pub struct FileDto {
    /// Inside the folder.
    pub rel_path: String,
    pub status: String,
    pub reason_code: Option<String>,
    pub message: Option<String>,
    #[ts(type = "number | null")]
    pub size: Option<u64>,
}

/// One passage a search found.
#[derive(Debug, Clone, PartialEq, Serialize, TS)]
#[ts(export)]
pub struct SearchHitDto {
    #[ts(type = "number")]
    pub chunk_id: i64,
    /// The file, absolute.
    pub path: String,
    /// The file inside its watched folder.
    pub rel_path: String,
    /// The watched folder's name.
    pub folder_name: String,
    pub heading: Option<String>,
    /// `page 3`, `line 7` or `lines 7-12`.
    pub place: String,
    pub snippet: String,
}

impl From<Hit> for SearchHitDto {
    fn from(h: Hit) -> Self {
        let rel_path = std::path::Path::new(&h.path)
            .strip_prefix(&h.folder)
            .map(|p| p.to_string_lossy().into_owned())
            .unwrap_or_else(|_| h.path.clone());
        let folder_name = std::path::Path::new(&h.folder)
            .file_name()
            .map(|n| n.to_string_lossy().into_owned())
            .unwrap_or_default();
        Self {
            chunk_id: h.chunk_id,
            place: h.place(),
            path: h.path,
            rel_path,
            folder_name,
            heading: h.heading,
            snippet: h.snippet,
        }
    }
}

/// What a search of the user's files found. `mode` is the one that ran (hybrid falls back
/// to bm25 while no chunk has a vector, and `warning` says so).
#[derive(Debug, Clone, PartialEq, Serialize, TS)]
#[ts(export)]
pub struct SearchResultDto {
    pub mode: String,
    pub warning: Option<String>,
    pub results: Vec<SearchHitDto>,
}

/// One source of an answer: the passage it was given as `[position]`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, TS)]
#[ts(export)]
pub struct SourceDto {
    pub position: u32,
    #[ts(type = "number")]
    pub chunk_id: i64,
    /// The file, absolute.
    pub path: String,
    /// Its file name.
    pub name: String,
    pub heading: Option<String>,
    pub place: String,
}

impl From<Source> for SourceDto {
    fn from(s: Source) -> Self {
        let name = std::path::Path::new(&s.path)
            .file_name()
            .map(|n| n.to_string_lossy().into_owned())
            .unwrap_or_else(|| s.path.clone());
        Self {
            position: s.position,
            chunk_id: s.chunk_id,
            place: s.place(),
            name,
            path: s.path,
            heading: s.heading,
        }
    }
}

/// An indexed passage with its text, for the passage view.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, TS)]
#[ts(export)]
pub struct PassageDto {
    #[ts(type = "number")]
    pub chunk_id: i64,
    /// The file, absolute.
    pub path: String,
    pub rel_path: String,
    /// The watched folder, absolute.
    pub folder: String,
    pub heading: Option<String>,
    pub place: String,
    pub line_start: u32,
    pub line_end: u32,
    pub page: Option<u32>,
    pub text: String,
    #[ts(type = "number | null")]
    pub modified: Option<i64>,
}

impl From<PassageView> for PassageDto {
    fn from(p: PassageView) -> Self {
        Self {
            chunk_id: p.chunk_id,
            place: p.place(),
            path: p.path,
            rel_path: p.rel_path,
            folder: p.folder,
            heading: p.heading,
            line_start: p.line_start,
            line_end: p.line_end,
            page: p.page,
            text: p.text,
            modified: p.modified,
        }
    }
}

/// Indexing moved on: `done` of `total` files of this run.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, TS)]
#[ts(export)]
pub struct IndexProgressEvent {
    #[ts(type = "number")]
    pub done: u64,
    #[ts(type = "number")]
    pub total: u64,
}
