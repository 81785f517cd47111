//! [`ConversationService`]: every conversation use case the front ends have, one method
//! each, so the app and the CLI give the same answer and the same error (a missing
//! conversation is `not_found` with the same message in both; opening one marks the
//! answers of processes that died as interrupted first, in both). Blocking: call it from
//! `spawn_blocking` in async code.

use super::Hearth;
use crate::conversations::{ConversationSummary, Conversations, StoredMessage};
use crate::{Error, Result};

/// Conversations, one method per use case. Get it with [`Hearth::conversations`].
#[derive(Clone)]
pub struct ConversationService {
    hearth: Hearth,
}

impl ConversationService {
    pub(super) fn new(hearth: Hearth) -> Self {
        ConversationService { hearth }
    }

    fn store(&self) -> Conversations {
        Conversations::new(self.hearth.inner.store.clone())
    }

    fn not_found(id: &str) -> Error {
        Error::NotFound(format!("there is no conversation {id}"))
    }

    /// All conversations, most recently active first.
    pub fn list(&self) -> Result<Vec<ConversationSummary>> {
        self.store().list()
    }

    /// Conversations whose title or messages contain `text` (case-insensitive for ASCII).
    pub fn search(&self, text: &str) -> Result<Vec<ConversationSummary>> {
        let text = text.trim();
        if text.is_empty() {
            return Err(Error::InvalidInput("say what to search for".into()));
        }
        self.store().search(text)
    }

    /// A conversation's messages, oldest first. An answer a process left streaming when
    /// it died is marked interrupted before they are read. `not_found` if there is no
    /// such conversation.
    pub fn messages(&self, id: &str) -> Result<Vec<StoredMessage>> {
        if let Err(e) = self.hearth.sweep_dead_turns() {
            tracing::warn!(
                code = e.code(),
                "could not look for turns of processes that died"
            );
        }
        let store = self.store();
        if !store.exists(id)? {
            return Err(Self::not_found(id));
        }
        store.messages(id)
    }

    /// The sources of every answer of conversation `id` (the passages of watched folders
    /// each was given), by message id. A source whose file's text is gone is not listed.
    pub fn sources(
        &self,
        id: &str,
    ) -> Result<std::collections::HashMap<i64, Vec<crate::folders::cite::Source>>> {
        crate::folders::cite::sources_of_conversation(&self.hearth.inner.store, id)
    }

    /// The tool calls of every answer of conversation `id`, by message id, in the order
    /// they were made: what the gate decided, how each ended, and its whole result.
    pub fn tool_calls(
        &self,
        id: &str,
    ) -> Result<std::collections::HashMap<i64, Vec<crate::tools::CallRecord>>> {
        crate::tools::history::calls_of_conversation(&self.hearth.inner.store, id)
    }

    /// Renames a conversation; the title is trimmed and cannot be empty.
    pub fn rename(&self, id: &str, title: &str) -> Result<()> {
        if self.store().rename(id, title)? {
            Ok(())
        } else {
            Err(Self::not_found(id))
        }
    }

    /// Deletes a conversation and its messages for real, and the memory proposals that
    /// came from it; with `with_memories`, the memories learned in it too. `not_found`
    /// (and nothing changed) if there is no such conversation.
    pub fn delete(&self, id: &str, with_memories: bool) -> Result<()> {
        let store = self.store();
        if !store.exists(id)? {
            return Err(Self::not_found(id));
        }
        let memories = crate::memory::Memories::new(self.hearth.inner.store.clone());
        if with_memories {
            memories.forget_conversation(id)?;
        } else {
            memories.drop_proposals_from(id)?;
        }
        if !store.delete(id)? {
            return Err(Self::not_found(id));
        }
        self.hearth.inner.store.checkpoint_wal();
        Ok(())
    }
}
