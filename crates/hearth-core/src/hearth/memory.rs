//! [`MemoryService`]: every memory use case the front ends have, one method each, so the
//! app and the CLI cannot disagree (search is hybrid in both, a missing memory is
//! `not_found` in both, undo and export naming follow one rule). Blocking: call it from
//! `spawn_blocking` in async code.

use std::path::{Path, PathBuf};

use serde::Serialize;

use super::Hearth;
use crate::memory::proposals::Proposal;
use crate::memory::transfer::ImportReport;
use crate::memory::{
    Actor, Change, Filter, HistoryEntry, Kind, Memories, Memory, MemorySettings, NewMemory,
};
use crate::{Error, Result};

/// The two export formats.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum ExportFormat {
    /// JSON Lines with each memory's history (re-importable).
    Jsonl,
    /// Readable Markdown, grouped by kind.
    Md,
}

impl ExportFormat {
    /// `jsonl` or `md` (also `markdown`).
    pub fn parse(s: &str) -> Result<Self> {
        match s.trim().to_ascii_lowercase().as_str() {
            "jsonl" => Ok(Self::Jsonl),
            "md" | "markdown" => Ok(Self::Md),
            other => Err(Error::InvalidInput(format!(
                "unknown format {other:?}: use jsonl or md"
            ))),
        }
    }

    /// The format a file name asks for: `.md` / `.markdown` → Markdown, else JSON Lines.
    pub fn for_path(path: &Path) -> Self {
        match path.extension().and_then(|e| e.to_str()) {
            Some("md") | Some("markdown") => Self::Md,
            _ => Self::Jsonl,
        }
    }

    pub fn extension(self) -> &'static str {
        match self {
            Self::Jsonl => "jsonl",
            Self::Md => "md",
        }
    }
}

/// What the Memory screen's header shows.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize)]
pub struct MemoryCounts {
    pub fact: u32,
    pub preference: u32,
    pub episode: u32,
    pub instruction: u32,
    /// In "Recently removed".
    pub removed: u32,
    /// Tokens the always-in memories (pinned, critical) take in every prompt.
    pub always_tokens: u32,
    /// Tokens the memory zone may use for the main model (the assembler's own number).
    pub budget: u32,
    /// Proposals waiting for the user.
    pub proposals: u32,
}

/// A memory with the history of its changes and its pending proposals.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct MemoryDetail {
    pub memory: Memory,
    pub history: Vec<HistoryEntry>,
    pub proposals: Vec<Proposal>,
}

/// Memory, as the front ends use it. Cheap to clone.
#[derive(Clone)]
pub struct MemoryService {
    hearth: Hearth,
}

fn not_found(id: &str) -> Error {
    Error::NotFound(format!("there is no memory {id}"))
}

impl MemoryService {
    pub(super) fn new(hearth: Hearth) -> Self {
        Self { hearth }
    }

    fn memories(&self) -> Memories {
        Memories::new(self.hearth.inner.store.clone())
    }

    /// Memories matching `filter`. With a query, active memories are searched by words and
    /// by meaning (hybrid, when an embedding model is in use), best first; without one,
    /// pinned and critical come first, then newest. "Recently removed" is searched by words.
    pub fn list(&self, filter: &Filter) -> Result<Vec<Memory>> {
        match filter.query.as_deref().map(str::trim) {
            Some(q) if !q.is_empty() && !filter.removed => self.hearth.search_memories(q, filter),
            _ => self.memories().list(filter),
        }
    }

    /// One memory; `not_found` if there is none.
    pub fn get(&self, id: &str) -> Result<Memory> {
        self.memories().get(id)?.ok_or_else(|| not_found(id))
    }

    /// A memory with its history and pending proposals.
    pub fn detail(&self, id: &str) -> Result<MemoryDetail> {
        let memories = self.memories();
        let memory = self.get(id)?;
        let proposals = memories
            .proposals()?
            .into_iter()
            .filter(|p| p.memory_id == id)
            .collect();
        Ok(MemoryDetail {
            history: memories.history(id)?,
            memory,
            proposals,
        })
    }

    /// The user remembers something.
    pub fn add(&self, new: NewMemory) -> Result<Memory> {
        self.memories().add(new, Actor::User)
    }

    /// The user changes a memory's text.
    pub fn edit(&self, id: &str, text: &str) -> Result<Memory> {
        self.memories().edit(id, text, Actor::User, None)
    }

    pub fn set_pinned(&self, id: &str, pinned: bool) -> Result<Memory> {
        self.memories().set_pinned(id, pinned)
    }

    pub fn set_critical(&self, id: &str, critical: bool) -> Result<Memory> {
        self.memories().set_critical(id, critical)
    }

    /// The user's delete: real. `not_found` if there is no such memory.
    pub fn delete(&self, id: &str) -> Result<()> {
        if self.memories().delete(id)? {
            Ok(())
        } else {
            Err(not_found(id))
        }
    }

    /// Deletes several memories for real; returns how many went.
    pub fn delete_many(&self, ids: &[String]) -> Result<usize> {
        self.memories().delete_many(ids)
    }

    /// Brings back a removed memory.
    pub fn restore(&self, id: &str) -> Result<Memory> {
        self.memories().restore(id)
    }

    /// Empties "Recently removed", for real.
    pub fn empty_removed(&self) -> Result<usize> {
        self.memories().empty_removed()
    }

    /// Forgets everything, for real — and every audit payload with it (the chain of
    /// digests stays).
    pub fn forget_all(&self) -> Result<usize> {
        let n = self.memories().forget_all()?;
        self.hearth.audit().forget_payloads()?;
        Ok(n)
    }

    /// Forgets, for real, what was created in `[from, to)` (ms since the epoch). The range
    /// must not be empty or reversed, nor start in the future (`invalid_input`).
    pub fn forget_between(&self, from: i64, to: i64) -> Result<usize> {
        self.memories().forget_between(from, to)
    }

    /// The range of local days `first` to `last` (ISO dates, both included) as
    /// `[from, to)` in ms for [`MemoryService::forget_between`], checked as it checks
    /// them; a date that is not one is `invalid_input`.
    pub fn day_range(first: &str, last: &str) -> Result<(i64, i64)> {
        let day = |date: &str| -> Result<jiff::civil::Date> {
            date.trim()
                .parse()
                .map_err(|_| Error::InvalidInput(format!("{date:?} is not a date like 2026-05-31")))
        };
        let start = |d: jiff::civil::Date| -> Result<i64> {
            d.to_zoned(jiff::tz::TimeZone::system())
                .map(|z| z.timestamp().as_millisecond())
                .map_err(|e| Error::InvalidInput(format!("{d}: {e}")))
        };
        let (first, last) = (day(first)?, day(last)?);
        let after = last
            .tomorrow()
            .map_err(|e| Error::InvalidInput(format!("{last}: {e}")))?;
        let (from, to) = (start(first)?, start(after)?);
        crate::memory::check_range(from, to)?;
        Ok((from, to))
    }

    /// How many memories were learned in a conversation.
    pub fn count_from_conversation(&self, conversation: &str) -> Result<u32> {
        self.memories().count_from_conversation(conversation)
    }

    /// The Memory screen's counts; the budget is the one the prompt assembler uses for the
    /// main model's window.
    pub fn counts(&self) -> Result<MemoryCounts> {
        let memories = self.memories();
        let mut counts = MemoryCounts::default();
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
            .map(|c| {
                crate::tokens::Encoding::O200kBase.count(&crate::memory::block::render(c)) as u32
                    + 1
            })
            .sum();
        counts.budget = self.hearth.memory_budget()?;
        counts.proposals = memories.proposals()?.len() as u32;
        Ok(counts)
    }

    /// A memory's history, oldest first.
    pub fn history(&self, id: &str) -> Result<Vec<HistoryEntry>> {
        self.memories().history(id)
    }

    pub fn settings(&self) -> Result<MemorySettings> {
        crate::memory::settings(&self.hearth.inner.store)
    }

    pub fn set_settings(&self, s: MemorySettings) -> Result<()> {
        crate::memory::set_settings(&self.hearth.inner.store, s)
    }

    /// Proposals waiting for the user, oldest first.
    pub fn proposals(&self) -> Result<Vec<Proposal>> {
        self.memories().proposals()
    }

    /// Applies a proposal; returns the changes made.
    pub fn accept_proposal(&self, id: &str) -> Result<Vec<Change>> {
        self.memories().accept_proposal(id)
    }

    /// Drops a proposal; the memory stays as it is.
    pub fn reject_proposal(&self, id: &str) -> Result<()> {
        self.memories().reject_proposal(id)
    }

    /// Undoes a change the "Memory updated" chip listed.
    pub fn undo(&self, change: &Change) -> Result<()> {
        self.memories().undo(change)
    }

    /// Writes every memory to `path` (readable by the user only: mode 0600 on Unix;
    /// atomically: a failed export leaves no half file). Returns how many were written.
    pub fn export_to(&self, path: &Path, format: ExportFormat) -> Result<usize> {
        let memories = self.memories();
        let mut store_error = None;
        let written = crate::fsio::write_atomic_with(path, true, |mut w| {
            let n = match format {
                ExportFormat::Jsonl => memories.export_jsonl(&mut w),
                ExportFormat::Md => memories.export_markdown(&mut w),
            };
            n.map_err(|e| {
                store_error = Some(e);
                std::io::Error::other("reading the memories failed")
            })
        });
        match (written, store_error) {
            (Ok(n), _) => Ok(n),
            (Err(_), Some(e)) => Err(e),
            (Err(e), None) => Err(e),
        }
    }

    /// Exports into `dir` under a dated name that does not overwrite an earlier export
    /// (`hearth-memories-2026-12-01.jsonl`, then `…-2.jsonl`). Returns the file and count.
    pub fn export_to_folder(&self, dir: &Path, format: ExportFormat) -> Result<(PathBuf, usize)> {
        let date = jiff::Zoned::now().strftime("%Y-%m-%d").to_string();
        let ext = format.extension();
        let mut path = dir.join(format!("hearth-memories-{date}.{ext}"));
        let mut i = 2;
        while path.exists() {
            path = dir.join(format!("hearth-memories-{date}-{i}.{ext}"));
            i += 1;
        }
        let n = self.export_to(&path, format)?;
        Ok((path, n))
    }

    /// Imports a JSON Lines export from memory (the app's file picker hands over text).
    pub fn import_jsonl(&self, content: &[u8]) -> Result<ImportReport> {
        self.memories().import_jsonl(content)
    }

    /// Imports a JSON Lines export file.
    pub fn import_file(&self, path: &Path) -> Result<ImportReport> {
        let f = std::fs::File::open(path).map_err(|e| Error::io(path, e))?;
        self.memories().import_jsonl(std::io::BufReader::new(f))
    }
}
