//! hearth-memory — long-term profile memory: what Hearth knows about the user, every change to it, and
//! deletion that is real.
//!
//! A memory is a fact, preference, episode (a dated event) or instruction (how the user
//! wants answers), with provenance (conversation + message, file, manual, import), and a
//! history of every change (operation, old → new text, actor, time, source). Deletion, as
//! the user sees it:
//! - a **user's delete** is real: the row, its FTS5 entry and its vector go (the FTS index
//!   is optimised so no segment keeps the text; the store runs with `secure_delete`), and
//!   its history keeps only a tombstone without text;
//! - a **removal by the model** (reconciliation DELETE, a "forget that …" the model
//!   resolved) is soft: status `removed`, listed under "Recently removed" until the user
//!   restores it or empties the list — nothing the model decides is a real delete;
//! - the model never changes a **pinned or critical** memory: what it wants to do to one
//!   becomes a [`proposals::Proposal`] the user accepts or rejects;
//! - **forget everything / between dates** deletes for real.
//!
//! **Invariant:** no memory text is ever logged. **Never depends on** a provider, tools,
//! chat or the engine (its Hearth dependencies are `hearth-base`, `hearth-store`,
//! `hearth-embed` and `hearth-text`): the memory store cannot call a model, so what the
//! model proposes reaches it only through the engine's learner (`hearth-core::learn`),
//! which applies this crate's rules (soft removal, proposals for protected memories).
//! Kept by this crate's `Cargo.toml`.

pub mod block;
pub mod distractors;
pub mod facets;

pub mod people;
pub mod phrasing;
pub mod proposals;
pub mod rank;
pub mod safety;
pub mod transfer;

mod model;
mod rows;
mod settings;

#[cfg(test)]
mod tests;
mod vector_index;
mod vectors;

pub use model::*;
pub use rows::*;
pub use settings::*;
use vectors::drop_vectors;

use rusqlite::{OptionalExtension, params, params_from_iter};

use hearth_base::{Error, Result, time};
use hearth_embed as embed;
use hearth_store::{self as store, audit};
use hearth_text::tokens;
#[cfg(test)]
use {hearth_base::paths::DataDir, hearth_store::key::KeyBackend};

use crate::store::Store;
use crate::time::{Millis, now_millis};

/// A range of creation times `[from, to)` a user may forget: not empty or reversed (the
/// first day after the last), and not starting in the future.
pub fn check_range(from: Millis, to: Millis) -> Result<()> {
    if from >= to {
        return Err(Error::InvalidInput(
            "the first day must not be after the last".into(),
        ));
    }
    if from > now_millis() {
        return Err(Error::InvalidInput(
            "the range lies in the future: no memory was created then".into(),
        ));
    }
    Ok(())
}

/// The memory store over one database.
#[derive(Clone)]
pub struct Memories {
    store: Store,
    /// The block's in-process nearest-neighbour search, for long-lived readers.
    vector_index: Option<std::sync::Arc<vector_index::VectorIndex>>,
    /// Who holds which role in the user's life, read again when a memory changes.
    people: std::sync::Arc<people::PeopleCache>,
}

impl Memories {
    pub fn new(store: Store) -> Self {
        Self {
            store,
            vector_index: None,
            people: Default::default(),
        }
    }

    /// The same, searching vectors in process (a copy of the vector table kept while no
    /// process changes a vector): for a reader that searches again and again — the chat's
    /// memory source, the evaluations.
    pub fn with_vector_index(mut self) -> Self {
        self.vector_index = Some(Default::default());
        self
    }

    pub fn store(&self) -> &Store {
        &self.store
    }

    /// Who holds which role in the user's life, as the user's own memories state it now.
    pub fn people(&self) -> Result<std::sync::Arc<people::People>> {
        let cache = self.people.clone();
        self.store.read_blocking(move |c| cache.get(c))
    }

    /// Adds a memory; returns it.
    pub fn add(&self, new: NewMemory, actor: Actor) -> Result<Memory> {
        validate(&new)?;
        let id = self.store.write_blocking(move |c| {
            let tx = c.transaction()?;
            let id = insert(&tx, &new, actor)?;
            tx.commit()?;
            Ok(id)
        })?;
        self.require(&id)
    }

    /// One memory, whatever its status.
    pub fn get(&self, id: &str) -> Result<Option<Memory>> {
        let id = id.to_owned();
        self.store.read_blocking(move |c| {
            c.query_row(
                &format!("SELECT {COLUMNS} FROM memories WHERE id = ?1"),
                [id],
                row_to_memory,
            )
            .optional()
        })
    }

    fn require(&self, id: &str) -> Result<Memory> {
        self.get(id)?.ok_or_else(|| not_found(id))
    }

    /// Memories matching `filter`: pinned and critical first, then newest.
    pub fn list(&self, filter: &Filter) -> Result<Vec<Memory>> {
        let mut clauses = vec![if filter.removed {
            "status = 'removed'".to_owned()
        } else {
            "status = 'active'".to_owned()
        }];
        let mut args: Vec<rusqlite::types::Value> = Vec::new();
        if let Some(k) = filter.kind {
            args.push(k.as_str().to_owned().into());
            clauses.push(format!("kind = ?{}", args.len()));
        }
        if let Some(p) = filter.pinned {
            args.push(i64::from(p).into());
            clauses.push(format!("pinned = ?{}", args.len()));
        }
        if let Some(p) = filter.critical {
            args.push(i64::from(p).into());
            clauses.push(format!("critical = ?{}", args.len()));
        }
        if let Some(s) = &filter.source {
            args.push(s.clone().into());
            clauses.push(format!("source_kind = ?{}", args.len()));
        }
        if let Some(f) = filter.from {
            args.push(f.into());
            clauses.push(format!("created_at >= ?{}", args.len()));
        }
        if let Some(t) = filter.to {
            args.push(t.into());
            clauses.push(format!("created_at < ?{}", args.len()));
        }
        let mut order = "pinned DESC, critical DESC, updated_at DESC".to_owned();
        if let Some(q) = filter.query.as_deref().and_then(fts_query) {
            args.push(q.into());
            clauses.push(format!(
                "n IN (SELECT rowid FROM memories_fts WHERE memories_fts MATCH ?{})",
                args.len()
            ));
            args.push(rank::bm25_weights().to_owned().into());
            order = format!(
                "(SELECT rank FROM memories_fts WHERE memories_fts MATCH ?{} AND rank MATCH ?{} AND rowid = n), updated_at DESC",
                args.len() - 1,
                args.len()
            );
        }
        let sql = format!(
            "SELECT {COLUMNS} FROM memories WHERE {} ORDER BY {order}",
            clauses.join(" AND ")
        );
        self.store.read_blocking(move |c| {
            let mut stmt = c.prepare(&sql)?;
            let rows = stmt.query_map(params_from_iter(args.iter()), row_to_memory)?;
            rows.collect()
        })
    }

    /// Whether there is any active memory (no need to embed a message otherwise).
    pub fn any_active(&self) -> Result<bool> {
        self.store.read_blocking(|c| {
            c.query_row(
                "SELECT EXISTS (SELECT 1 FROM memories WHERE status = 'active')",
                [],
                |r| r.get(0),
            )
        })
    }

    /// How many active memories of each kind.
    pub fn counts(&self) -> Result<Vec<(Kind, u32)>> {
        self.store.read_blocking(|c| {
            let mut stmt = c.prepare(
                "SELECT kind, count(*) FROM memories WHERE status = 'active' GROUP BY kind",
            )?;
            let rows = stmt.query_map([], |r| {
                Ok((
                    Kind::parse(&r.get::<_, String>(0)?).unwrap_or(Kind::Fact),
                    r.get(1)?,
                ))
            })?;
            rows.collect()
        })
    }

    /// Changes a memory's text (its vector is dropped until re-embedded); history keeps the
    /// old text.
    pub fn edit(
        &self,
        id: &str,
        text: &str,
        actor: Actor,
        source: Option<&Source>,
    ) -> Result<Memory> {
        let text = check_text(text)?;
        let (id_owned, source) = (id.to_owned(), source.and_then(source_json));
        let changed = self.store.write_blocking(move |c| {
            let tx = c.transaction()?;
            let old: Option<(i64, String)> = tx
                .query_row(
                    "SELECT n, text FROM memories WHERE id = ?1 AND status != 'superseded'",
                    [&id_owned],
                    |r| Ok((r.get(0)?, r.get(1)?)),
                )
                .optional()?;
            let Some((n, old)) = old else {
                return Ok(false);
            };
            if old != text {
                set_text_tx(&tx, n, &text)?;
                drop_vectors(&tx, n)?;
                log(
                    &tx,
                    &id_owned,
                    "update",
                    Some(&old),
                    Some(&text),
                    actor,
                    source.as_deref(),
                )?;
            }
            tx.commit()?;
            Ok(true)
        })?;
        if !changed {
            return Err(not_found(id));
        }
        self.require(id)
    }

    /// Pins or unpins (pinned memories are always in the prompt).
    pub fn set_pinned(&self, id: &str, pinned: bool) -> Result<Memory> {
        self.set_flag(id, "pinned", pinned, if pinned { "pin" } else { "unpin" })
    }

    /// Marks a memory safety-critical (always in the prompt) or not.
    pub fn set_critical(&self, id: &str, critical: bool) -> Result<Memory> {
        self.set_flag(
            id,
            "critical",
            critical,
            if critical { "critical" } else { "uncritical" },
        )
    }

    fn set_flag(
        &self,
        id: &str,
        column: &'static str,
        on: bool,
        op: &'static str,
    ) -> Result<Memory> {
        let id_owned = id.to_owned();
        let n = self.store.write_blocking(move |c| {
            let tx = c.transaction()?;
            let n = tx.execute(
                &format!("UPDATE memories SET {column} = ?1, updated_at = ?2 WHERE id = ?3 AND {column} != ?1"),
                params![on, now_millis(), id_owned],
            )?;
            if n > 0 {
                log(&tx, &id_owned, op, None, None, Actor::User, None)?;
            }
            tx.commit()?;
            Ok(n)
        })?;
        if n == 0 {
            tracing::debug!(op, "flag already set");
        }
        self.require(id)
    }

    /// The user's delete: real (row, FTS entry, vector, history texts). False if unknown.
    pub fn delete(&self, id: &str) -> Result<bool> {
        self.delete_many(&[id.to_owned()]).map(|n| n > 0)
    }

    /// Deletes several memories for real, in one transaction.
    pub fn delete_many(&self, ids: &[String]) -> Result<usize> {
        if ids.is_empty() {
            return Ok(0);
        }
        let ids = ids.to_vec();
        self.store
            .write_blocking(move |c| {
                let tx = c.transaction()?;
                let marks = (1..=ids.len())
                    .map(|i| format!("?{i}"))
                    .collect::<Vec<_>>()
                    .join(", ");
                let args: Vec<rusqlite::types::Value> = ids.into_iter().map(Into::into).collect();
                let n = purge(&tx, &format!("id IN ({marks})"), &args)?;
                tx.commit()?;
                Ok(n)
            })
            .inspect(|&n| {
                if n > 0 {
                    self.store.checkpoint_wal();
                }
            })
    }

    /// A soft removal: restorable until the user empties "Recently removed".
    pub fn remove(&self, id: &str, actor: Actor, source: Option<&Source>) -> Result<bool> {
        let (id, source) = (id.to_owned(), source.and_then(source_json));
        self.store.write_blocking(move |c| {
            let tx = c.transaction()?;
            let n = tx.execute(
                "UPDATE memories SET status = 'removed', removed_at = ?1, updated_at = ?1,
                   removal_awaits_consent = ?3 WHERE id = ?2 AND status = 'active'",
                params![now_millis(), id, actor == Actor::Assistant],
            )?;
            if n > 0 {
                log(&tx, &id, "remove", None, None, actor, source.as_deref())?;
            }
            tx.commit()?;
            Ok(n > 0)
        })
    }

    /// Brings a removed memory back.
    pub fn restore(&self, id: &str) -> Result<Memory> {
        let id_owned = id.to_owned();
        let n = self.store.write_blocking(move |c| {
            let tx = c.transaction()?;
            let n = tx.execute(
                "UPDATE memories SET status = 'active', removed_at = NULL, updated_at = ?1,
                   removal_awaits_consent = 0 WHERE id = ?2 AND status = 'removed'",
                params![now_millis(), id_owned],
            )?;
            if n > 0 {
                log(&tx, &id_owned, "restore", None, None, Actor::User, None)?;
            }
            tx.commit()?;
            Ok(n)
        })?;
        if n == 0 {
            return Err(match self.get(id)? {
                Some(_) => Error::InvalidInput(format!("memory {id} was not removed")),
                None => not_found(id),
            });
        }
        self.require(id)
    }

    /// Empties "Recently removed" (for real). Returns how many went.
    pub fn empty_removed(&self) -> Result<usize> {
        self.purge_where("status = 'removed'", Vec::new())
    }

    /// Forget everything: every memory, for real.
    pub fn forget_all(&self) -> Result<usize> {
        self.purge_where("1 = 1", Vec::new())
    }

    /// Forgets (for real) the memories created in `[from, to)`.
    pub fn forget_between(&self, from: Millis, to: Millis) -> Result<usize> {
        check_range(from, to)?;
        self.purge_where(
            "created_at >= ?1 AND created_at < ?2",
            vec![from.into(), to.into()],
        )
    }

    /// Deletes for real the memories learned in a conversation, and every proposal that
    /// came from it (they quote what was said there).
    pub fn forget_conversation(&self, conversation: &str) -> Result<usize> {
        let n = self.purge_where(
            "source_conversation = ?1",
            vec![conversation.to_owned().into()],
        )?;
        self.drop_proposals_from(conversation)?;
        Ok(n)
    }

    fn purge_where(
        &self,
        where_sql: &'static str,
        args: Vec<rusqlite::types::Value>,
    ) -> Result<usize> {
        self.store
            .write_blocking(move |c| {
                let tx = c.transaction()?;
                let n = purge(&tx, where_sql, &args)?;
                tx.commit()?;
                Ok(n)
            })
            .inspect(|&n| {
                if n > 0 {
                    self.store.checkpoint_wal();
                }
            })
    }

    /// A memory's history, oldest first (for a deleted memory: its tombstones).
    pub fn history(&self, id: &str) -> Result<Vec<HistoryEntry>> {
        let id = id.to_owned();
        self.store.read_blocking(move |c| {
            let mut stmt = c.prepare(
                "SELECT op, old_text, new_text, actor, at, source FROM memory_history WHERE memory_id = ?1 ORDER BY id",
            )?;
            let rows = stmt.query_map([id], |r| {
                Ok(HistoryEntry {
                    op: r.get(0)?,
                    old_text: r.get(1)?,
                    new_text: r.get(2)?,
                    actor: Actor::parse(&r.get::<_, String>(3)?),
                    at: r.get(4)?,
                    source: r
                        .get::<_, Option<String>>(5)?
                        .and_then(|s| serde_json::from_str(&s).ok()),
                })
            })?;
            rows.collect()
        })
    }

    /// How many memories were learned in a conversation (offered for deletion with it).
    pub fn count_from_conversation(&self, conversation: &str) -> Result<u32> {
        let conversation = conversation.to_owned();
        self.store.read_blocking(move |c| {
            c.query_row(
                "SELECT count(*) FROM memories WHERE source_conversation = ?1",
                [conversation],
                |r| r.get(0),
            )
        })
    }

    /// Records that memories went into a prompt.
    pub fn touch(&self, ids: Vec<String>) -> Result<()> {
        if ids.is_empty() {
            return Ok(());
        }
        self.store.write_blocking(move |c| {
            let tx = c.transaction()?;
            let now = now_millis();
            for id in &ids {
                tx.execute(
                    "UPDATE memories SET last_used_at = ?1, use_count = use_count + 1 WHERE id = ?2",
                    params![now, id],
                )?;
            }
            tx.commit()?;
            Ok(())
        })
    }
}

fn not_found(id: &str) -> Error {
    Error::NotFound(format!("there is no memory {id}"))
}
