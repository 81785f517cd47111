//! Export and import of memories. Exports are plaintext by design (the user asked for a
//! copy they can read); the UI and CLI say so.
//!
//! JSON Lines (schema in `docs/memory-formats.md`): one object per memory, with its
//! history. Markdown: readable, grouped by kind. Import reads JSON Lines and skips
//! memories whose normalized text already exists, so importing twice adds nothing. An
//! imported memory's source is `import` whatever the file says (the claimed origin is kept
//! as `imported_from`, informational only): a file cannot forge where a memory came from.
//! Import reads at most [`MAX_IMPORT_BYTES`], lines of at most [`MAX_IMPORT_LINE`].

use std::io::{BufRead, Read, Write};

use rusqlite::params;
use serde::{Deserialize, Serialize};

use super::facets::Facets;
use super::{Actor, HistoryEntry, Kind, Memories, Memory, NewMemory, Source, Status, normalize};
use crate::{Error, Result};

/// The `schema` of every exported line.
pub const SCHEMA: &str = "hearth.memory/1";

/// Largest import accepted (a file of 10,000 memories with history is ~10 MB).
pub const MAX_IMPORT_BYTES: u64 = 64 * 1024 * 1024;
/// Longest line of an import (one memory and its history).
pub const MAX_IMPORT_LINE: usize = 1024 * 1024;

/// One exported memory.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct Exported {
    pub schema: String,
    #[serde(flatten)]
    pub memory: Memory,
    #[serde(default)]
    pub history: Vec<HistoryEntry>,
}

/// What an import did.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize)]
pub struct ImportReport {
    pub added: usize,
    /// Already known (same normalized text).
    pub skipped: usize,
}

impl Memories {
    /// Every memory (active and removed) with its history, as JSON Lines.
    pub fn export_jsonl(&self, out: &mut impl Write) -> Result<usize> {
        let mut all = self.list(&super::Filter::default())?;
        all.extend(self.list(&super::Filter {
            removed: true,
            ..super::Filter::default()
        })?);
        all.sort_by_key(|m| m.created);
        for memory in &all {
            let line = Exported {
                schema: SCHEMA.to_owned(),
                history: self.history(&memory.id)?,
                memory: memory.clone(),
            };
            let json =
                serde_json::to_string(&line).map_err(|e| Error::InvalidInput(e.to_string()))?;
            writeln!(out, "{json}").map_err(|e| Error::io("export", e))?;
        }
        Ok(all.len())
    }

    /// Active memories as readable Markdown, grouped by kind.
    pub fn export_markdown(&self, out: &mut impl Write) -> Result<usize> {
        let all = self.list(&super::Filter::default())?;
        let w = |out: &mut dyn Write, s: String| {
            out.write_all(s.as_bytes())
                .map_err(|e| Error::io("export", e))
        };
        w(out, "# What Hearth remembers about you\n".into())?;
        for kind in Kind::ALL {
            let of_kind: Vec<&Memory> = all.iter().filter(|m| m.kind == kind).collect();
            if of_kind.is_empty() {
                continue;
            }
            let title = match kind {
                Kind::Fact => "Facts",
                Kind::Preference => "Preferences",
                Kind::Episode => "Episodes",
                Kind::Instruction => "Instructions",
            };
            w(out, format!("\n## {title}\n\n"))?;
            for m in of_kind {
                let mut marks = Vec::new();
                if m.pinned {
                    marks.push("pinned");
                }
                if m.critical {
                    marks.push("critical");
                }
                let marks = if marks.is_empty() {
                    String::new()
                } else {
                    format!(" _({})_", marks.join(", "))
                };
                let text = m.text.replace('\n', " ");
                w(out, format!("- {text}{marks}\n"))?;
            }
        }
        Ok(all.len())
    }

    /// Imports JSON Lines written by [`Memories::export_jsonl`]; memories whose normalized
    /// text already exists are skipped. A malformed or over-long line, or an input over
    /// [`MAX_IMPORT_BYTES`], stops the import before anything is written, naming the line.
    pub fn import_jsonl(&self, input: impl BufRead) -> Result<ImportReport> {
        let mut items = Vec::new();
        let mut input = input.take(MAX_IMPORT_BYTES + 1);
        let mut raw = Vec::new();
        let mut read_total: u64 = 0;
        for i in 0.. {
            raw.clear();
            let n = (&mut input)
                .take(MAX_IMPORT_LINE as u64 + 1)
                .read_until(b'\n', &mut raw)
                .map_err(|e| Error::io("import", e))?;
            if n == 0 {
                break;
            }
            read_total += n as u64;
            if read_total > MAX_IMPORT_BYTES {
                return Err(Error::InvalidInput(format!(
                    "the import is larger than {} MiB; nothing was imported",
                    MAX_IMPORT_BYTES / (1024 * 1024)
                )));
            }
            if raw.len() > MAX_IMPORT_LINE && raw.last() != Some(&b'\n') {
                return Err(Error::InvalidInput(format!(
                    "line {} is longer than {} KiB; nothing was imported",
                    i + 1,
                    MAX_IMPORT_LINE / 1024
                )));
            }
            let Ok(line) = std::str::from_utf8(&raw) else {
                return Err(Error::InvalidInput(format!(
                    "line {} is not UTF-8 text; nothing was imported",
                    i + 1
                )));
            };
            if line.trim().is_empty() {
                continue;
            }
            // serde's message can quote the line's text: name the position only.
            let item: Exported = serde_json::from_str(line).map_err(|e| {
                Error::InvalidInput(format!(
                    "line {} is not a Hearth memory ({:?} error at column {})",
                    i + 1,
                    e.classify(),
                    e.column()
                ))
            })?;
            if item.schema != SCHEMA {
                return Err(Error::InvalidInput(format!(
                    "line {} has schema {:?}, not {SCHEMA}",
                    i + 1,
                    item.schema
                )));
            }
            // The file's topics are kept; of its marks only "no longer true", which can
            // only lower what a memory weighs (safety and subject come from the words).
            let mut facets = Facets::from_names(&item.memory.facets);
            if item.memory.no_longer_true {
                facets.0 |= Facets::PAST;
            }
            let new = NewMemory {
                facets,
                text: item.memory.text.clone(),
                kind: item.memory.kind,
                subject: item.memory.subject.clone(),
                importance: item.memory.importance,
                pinned: item.memory.pinned,
                critical: item.memory.critical,
                confidence: item.memory.confidence,
                source: Source::Import,
                event_at: item.memory.event_at,
                created: Some(item.memory.created),
                context: item.memory.context.clone(),
            };
            super::validate(&new)
                .map_err(|e| Error::InvalidInput(format!("line {}: {e}", i + 1)))?;
            items.push((new, item));
        }
        self.store().write_blocking(move |c| {
            let tx = c.transaction()?;
            let mut report = ImportReport::default();
            for (new, item) in items {
                let known: bool = tx.query_row(
                    "SELECT EXISTS (SELECT 1 FROM memories WHERE norm = ?1 AND status != 'superseded')",
                    [normalize(&new.text)],
                    |r| r.get(0),
                )?;
                if known {
                    report.skipped += 1;
                    continue;
                }
                let id = super::insert(&tx, &new, Actor::Import)?;
                // The exported history comes along, before the import entry.
                let import_entry: i64 = tx.query_row(
                    "SELECT max(id) FROM memory_history WHERE memory_id = ?1",
                    [&id],
                    |r| r.get(0),
                )?;
                for h in &item.history {
                    tx.execute(
                        "INSERT INTO memory_history (memory_id, op, old_text, new_text, actor, source, at)
                         VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7)",
                        params![
                            id,
                            h.op,
                            h.old_text,
                            h.new_text,
                            h.actor.as_str(),
                            h.source.as_ref().map(|s| s.to_string()),
                            h.at
                        ],
                    )?;
                }
                // Keep the import entry last.
                tx.execute(
                    "UPDATE memory_history SET id = (SELECT max(id) + 1 FROM memory_history) WHERE id = ?1",
                    [import_entry],
                )?;
                tx.execute(
                    "UPDATE memories SET updated_at = ?1, last_used_at = ?2, use_count = ?3, status = ?4,
                       removed_at = ?5, removal_awaits_consent = ?7 WHERE id = ?6",
                    params![
                        item.memory.updated,
                        item.memory.last_used,
                        item.memory.use_count,
                        match item.memory.status {
                            Status::Removed => "removed",
                            _ => "active",
                        },
                        item.memory.removed_at,
                        id,
                        item.memory.status == Status::Removed && item.memory.removal_awaits_consent
                    ],
                )?;
                // The origin the file claims, kept for the user to read; never the source.
                let claimed = match (&item.memory.source, &item.memory.imported_from) {
                    (Source::Import, Some(earlier)) => Some(earlier.clone()),
                    (Source::Import, None) | (Source::Manual, _) => None,
                    (other, _) => serde_json::to_value(other).ok(),
                };
                if let Some(claimed) = claimed {
                    tx.execute(
                        "UPDATE memories SET imported_from = ?1 WHERE id = ?2",
                        params![claimed.to_string(), id],
                    )?;
                }
                report.added += 1;
            }
            tx.commit()?;
            Ok(report)
        })
    }
}

impl Source {
    /// Whether this memory came from outside any conversation.
    pub fn is_external(&self) -> bool {
        matches!(self, Source::File { .. } | Source::Import)
    }
}
