//! Proposals: what the model wanted to do to a pinned or critical memory, waiting for the
//! user (SPEC §1.2, §4). The memory stays as it is — active, injected into every prompt —
//! until the user accepts (the change is applied) or rejects (the proposal is dropped).
//! Proposals never time out. A real delete of the memory, or of the conversation a
//! proposal came from, deletes the proposal too: it may quote either.
//!
//! **Invariant:** only [`Memories::accept_proposal`] — the user's decision — applies one.

use rusqlite::{OptionalExtension, params};
use serde::{Deserialize, Serialize};

use super::{Actor, Change, Kind, Memories, NewMemory, Source, source_json};
use crate::time::{Millis, now_millis};
use crate::{Error, Result};

/// Longest reason kept with a proposal (the model writes it).
pub const MAX_REASON: usize = 500;

/// What a proposal would do to its memory.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum ProposalAction {
    /// Change the memory's text to `proposed_text`.
    Update,
    /// Remove the memory (softly: restorable), and add `new_memory` if there is one.
    Remove,
}

impl ProposalAction {
    fn as_str(self) -> &'static str {
        match self {
            ProposalAction::Update => "update",
            ProposalAction::Remove => "remove",
        }
    }
}

/// A memory a proposal would add on accept (the candidate that replaces a removed one).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ProposedMemory {
    pub text: String,
    pub kind: Kind,
    pub subject: Option<String>,
    pub importance: f64,
    pub critical: bool,
    pub event_at: Option<Millis>,
}

/// A pending proposal (the shape of `hearth memory proposals --json`).
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Proposal {
    pub id: String,
    pub memory_id: String,
    pub action: ProposalAction,
    pub proposed_text: Option<String>,
    pub new_memory: Option<ProposedMemory>,
    pub reason: String,
    /// The conversation of the exchange it came from.
    pub conversation: Option<String>,
    /// The user's message of that exchange.
    pub message_id: Option<i64>,
    pub created: Millis,
}

fn new_id() -> String {
    let u = uuid::Uuid::new_v4().simple().to_string();
    format!("p-{}", &u[..12])
}

fn bounded_reason(reason: &str) -> String {
    let r = reason.trim();
    match r.char_indices().nth(MAX_REASON) {
        Some((cut, _)) => format!("{}…", &r[..cut]),
        None => r.to_owned(),
    }
}

/// Whether memory `id` is active and protected (pinned or critical).
pub fn is_protected_tx(tx: &rusqlite::Transaction<'_>, id: &str) -> rusqlite::Result<bool> {
    Ok(tx
        .query_row(
            "SELECT pinned OR critical FROM memories WHERE id = ?1 AND status = 'active'",
            [id],
            |r| r.get::<_, bool>(0),
        )
        .optional()?
        .unwrap_or(false))
}

/// Records a proposal inside a transaction and returns the chip's change for it; `None`
/// when the memory is not active or the same proposal is already pending.
pub fn propose_tx(
    tx: &rusqlite::Transaction<'_>,
    memory_id: &str,
    action: ProposalAction,
    proposed_text: Option<&str>,
    new_memory: Option<&NewMemory>,
    reason: &str,
    source: &Source,
) -> rusqlite::Result<Option<Change>> {
    let current: Option<String> = tx
        .query_row(
            "SELECT text FROM memories WHERE id = ?1 AND status = 'active'",
            [memory_id],
            |r| r.get(0),
        )
        .optional()?;
    let Some(current) = current else {
        return Ok(None);
    };
    let new_json = new_memory.and_then(|m| {
        serde_json::to_string(&ProposedMemory {
            text: m.text.trim().to_owned(),
            kind: m.kind,
            subject: m.subject.clone(),
            importance: m.importance,
            critical: m.critical,
            event_at: m.event_at,
        })
        .ok()
    });
    let pending: bool = tx.query_row(
        "SELECT EXISTS (SELECT 1 FROM memory_proposals WHERE memory_id = ?1 AND action = ?2
           AND proposed_text IS ?3 AND new_memory IS ?4)",
        params![memory_id, action.as_str(), proposed_text, new_json],
        |r| r.get(0),
    )?;
    if pending {
        return Ok(None);
    }
    let (conversation, message) = match source {
        Source::Conversation {
            conversation,
            message,
        } => (Some(conversation.clone()), *message),
        _ => (None, None),
    };
    let id = new_id();
    tx.execute(
        "INSERT INTO memory_proposals (id, memory_id, action, proposed_text, new_memory, reason,
           conversation, message_id, created_at) VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9)",
        params![
            id,
            memory_id,
            action.as_str(),
            proposed_text,
            new_json,
            bounded_reason(reason),
            conversation,
            message,
            now_millis()
        ],
    )?;
    let (text, old_text) = match action {
        ProposalAction::Update => (proposed_text.unwrap_or_default().to_owned(), Some(current)),
        ProposalAction::Remove => (current, None),
    };
    Ok(Some(Change {
        memory_id: memory_id.to_owned(),
        op: "proposal".into(),
        text,
        old_text,
        proposal_id: Some(id),
    }))
}

fn row_to_proposal(r: &rusqlite::Row<'_>) -> rusqlite::Result<Proposal> {
    Ok(Proposal {
        id: r.get(0)?,
        memory_id: r.get(1)?,
        action: match r.get::<_, String>(2)?.as_str() {
            "update" => ProposalAction::Update,
            _ => ProposalAction::Remove,
        },
        proposed_text: r.get(3)?,
        new_memory: r
            .get::<_, Option<String>>(4)?
            .and_then(|s| serde_json::from_str(&s).ok()),
        reason: r.get(5)?,
        conversation: r.get(6)?,
        message_id: r.get(7)?,
        created: r.get(8)?,
    })
}

const COLUMNS: &str = "id, memory_id, action, proposed_text, new_memory, reason, conversation, message_id, created_at";

fn not_found(id: &str) -> Error {
    Error::NotFound(format!(
        "there is no proposal {id}; see `hearth memory proposals`"
    ))
}

impl Memories {
    /// Every pending proposal, oldest first.
    pub fn proposals(&self) -> Result<Vec<Proposal>> {
        self.store.read_blocking(|c| {
            let mut stmt = c.prepare(&format!(
                "SELECT {COLUMNS} FROM memory_proposals ORDER BY created_at, id"
            ))?;
            let rows = stmt.query_map([], row_to_proposal)?;
            rows.collect()
        })
    }

    /// The user accepts a proposal: its change is applied (a removal is soft and, being
    /// consented to, not marked as awaiting consent), and every pending proposal for that
    /// memory is dropped (they were about the text it had). Returns the changes made.
    pub fn accept_proposal(&self, id: &str) -> Result<Vec<Change>> {
        let id_owned = id.to_owned();
        let outcome = self.store.write_blocking(move |c| {
            let tx = c.transaction()?;
            let p = tx
                .query_row(
                    &format!("SELECT {COLUMNS} FROM memory_proposals WHERE id = ?1"),
                    [&id_owned],
                    row_to_proposal,
                )
                .optional()?;
            let Some(p) = p else { return Ok(None) };
            let source = p
                .conversation
                .clone()
                .map(|conversation| Source::Conversation {
                    conversation,
                    message: p.message_id,
                });
            let source_text = source.as_ref().and_then(source_json);
            let mut changes = Vec::new();
            match p.action {
                ProposalAction::Update => {
                    let text = p.proposed_text.clone().unwrap_or_default();
                    if let Some(old) = super::update_text_tx(
                        &tx,
                        &p.memory_id,
                        &text,
                        Actor::Assistant,
                        source_text.as_deref(),
                    )? {
                        changes.push(Change {
                            memory_id: p.memory_id.clone(),
                            op: "update".into(),
                            text,
                            old_text: Some(old),
                            proposal_id: None,
                        });
                    }
                }
                ProposalAction::Remove => {
                    if let Some(old) = super::remove_marked_tx(
                        &tx,
                        &p.memory_id,
                        Actor::User,
                        false,
                        source_text.as_deref(),
                    )? {
                        changes.push(Change {
                            memory_id: p.memory_id.clone(),
                            op: "remove".into(),
                            text: old,
                            old_text: None,
                            proposal_id: None,
                        });
                    }
                }
            }
            if let Some(m) = &p.new_memory {
                let new = NewMemory {
                    facets: Default::default(),
                    text: m.text.clone(),
                    kind: m.kind,
                    subject: m.subject.clone(),
                    importance: m.importance,
                    pinned: false,
                    critical: m.critical,
                    confidence: 0.8,
                    source: source.clone().unwrap_or(Source::Manual),
                    event_at: m.event_at,
                    created: None,
                    context: None,
                };
                if super::validate(&new).is_ok() {
                    let added = super::insert(&tx, &new, Actor::Assistant)?;
                    changes.push(Change {
                        memory_id: added,
                        op: "add".into(),
                        text: new.text,
                        old_text: None,
                        proposal_id: None,
                    });
                }
            }
            tx.execute(
                "DELETE FROM memory_proposals WHERE memory_id = ?1",
                [&p.memory_id],
            )?;
            tx.commit()?;
            Ok(Some(changes))
        })?;
        outcome.ok_or_else(|| not_found(id))
    }

    /// The user rejects a proposal: it is dropped, the memory stays as it is.
    pub fn reject_proposal(&self, id: &str) -> Result<()> {
        let id_owned = id.to_owned();
        let n = self.store.write_blocking(move |c| {
            c.execute("DELETE FROM memory_proposals WHERE id = ?1", [id_owned])
        })?;
        if n == 0 {
            return Err(not_found(id));
        }
        Ok(())
    }

    /// Drops the proposals that came from a conversation (it is being deleted).
    pub fn drop_proposals_from(&self, conversation: &str) -> Result<usize> {
        let conversation = conversation.to_owned();
        self.store.write_blocking(move |c| {
            c.execute(
                "DELETE FROM memory_proposals WHERE conversation = ?1",
                [conversation],
            )
        })
    }

    /// Undoes a change the chip listed: an addition is deleted (for real: the user asked),
    /// an update gets its old text back, a removal is restored, a proposal is rejected.
    pub fn undo(&self, change: &Change) -> Result<()> {
        match change.op.as_str() {
            "add" => {
                self.delete(&change.memory_id)?;
            }
            "update" => {
                let old = change.old_text.as_deref().ok_or_else(|| {
                    Error::InvalidInput("an update to undo needs its old text".into())
                })?;
                self.edit(&change.memory_id, old, Actor::User, None)?;
            }
            "remove" => {
                self.restore(&change.memory_id)?;
            }
            "supersede" => {
                let id = change.memory_id.clone();
                self.store().write_blocking(move |c| {
                    let tx = c.transaction()?;
                    super::unsupersede_tx(&tx, &id, Actor::User)?;
                    tx.commit()?;
                    Ok(())
                })?;
            }
            "proposal" => {
                let id = change.proposal_id.as_deref().ok_or_else(|| {
                    Error::InvalidInput("a proposal to dismiss needs its id".into())
                })?;
                self.reject_proposal(id)?;
            }
            other => {
                return Err(Error::InvalidInput(format!(
                    "there is no change {other:?} to undo"
                )));
            }
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::store::{OpenOptions, Store};
    use crate::{DataDir, KeyBackend};
    use crate::{Filter, Status};

    fn open(root: &std::path::Path) -> Memories {
        let mut opts = OpenOptions::new(DataDir::new(root.join("d")));
        opts.new_key_backend = KeyBackend::File;
        Memories::new(Store::open(&opts).expect("open"))
    }

    fn conversation() -> Source {
        Source::Conversation {
            conversation: "c-1".into(),
            message: Some(1),
        }
    }

    fn propose(
        memories: &Memories,
        id: &str,
        action: ProposalAction,
        text: Option<&str>,
    ) -> Change {
        let (id, text) = (id.to_owned(), text.map(str::to_owned));
        memories
            .store()
            .write_blocking(move |c| {
                let tx = c.transaction()?;
                let change = propose_tx(
                    &tx,
                    &id,
                    action,
                    text.as_deref(),
                    None,
                    "why",
                    &conversation(),
                )?;
                tx.commit()?;
                Ok(change)
            })
            .expect("propose")
            .expect("a proposal")
    }

    #[test]
    fn every_change_the_chip_lists_can_be_undone() {
        let tmp = tempfile::tempdir().expect("tempdir");
        let memories = open(tmp.path());
        let added = memories
            .add(
                NewMemory::manual("Likes tea", Kind::Preference),
                Actor::Assistant,
            )
            .expect("add");
        let change = |op: &str, id: &str, text: &str, old: Option<&str>| Change {
            memory_id: id.into(),
            op: op.into(),
            text: text.into(),
            old_text: old.map(Into::into),
            proposal_id: None,
        };
        // update → the old text comes back
        memories
            .edit(&added.id, "Likes green tea", Actor::Assistant, None)
            .expect("edit");
        memories
            .undo(&change(
                "update",
                &added.id,
                "Likes green tea",
                Some("Likes tea"),
            ))
            .expect("undo update");
        assert_eq!(
            memories.get(&added.id).expect("get").expect("m").text,
            "Likes tea"
        );
        // remove → restored
        memories
            .remove(&added.id, Actor::Assistant, None)
            .expect("remove");
        memories
            .undo(&change("remove", &added.id, "Likes tea", None))
            .expect("undo remove");
        assert_eq!(
            memories.get(&added.id).expect("get").expect("m").status,
            Status::Active
        );
        // proposal → rejected
        let pinned = memories
            .add(
                NewMemory {
                    facets: Default::default(),
                    pinned: true,
                    ..NewMemory::manual("Lives in Porto", Kind::Fact)
                },
                Actor::User,
            )
            .expect("add");
        let p = propose(
            &memories,
            &pinned.id,
            ProposalAction::Update,
            Some("Lives in Faro"),
        );
        memories.undo(&p).expect("undo proposal");
        assert!(memories.proposals().expect("list").is_empty());
        assert_eq!(
            memories.get(&pinned.id).expect("get").expect("m").text,
            "Lives in Porto"
        );
        // add → gone for real
        memories
            .undo(&change("add", &added.id, "Likes tea", None))
            .expect("undo add");
        assert!(memories.get(&added.id).expect("get").is_none());
        assert!(memories.undo(&change("delete", "m-x", "", None)).is_err());
    }

    #[test]
    fn a_real_delete_or_a_deleted_conversation_takes_its_proposals_along() {
        let tmp = tempfile::tempdir().expect("tempdir");
        let memories = open(tmp.path());
        let critical = |text: &str| {
            memories
                .add(
                    NewMemory {
                        facets: Default::default(),
                        critical: true,
                        ..NewMemory::manual(text, Kind::Fact)
                    },
                    Actor::User,
                )
                .expect("add")
        };
        let (a, b) = (
            critical("Allergic to peanuts"),
            critical("Allergic to bees"),
        );
        propose(&memories, &a.id, ProposalAction::Remove, None);
        propose(&memories, &b.id, ProposalAction::Remove, None);
        // The same proposal twice is one.
        let again = memories.store().write_blocking({
            let id = b.id.clone();
            move |c| {
                let tx = c.transaction()?;
                let p = propose_tx(
                    &tx,
                    &id,
                    ProposalAction::Remove,
                    None,
                    None,
                    "why",
                    &conversation(),
                )?;
                tx.commit()?;
                Ok(p)
            }
        });
        assert_eq!(again.expect("propose"), None);
        assert_eq!(memories.proposals().expect("list").len(), 2);
        assert!(memories.delete(&a.id).expect("delete"));
        let left = memories.proposals().expect("list");
        assert_eq!(left.len(), 1);
        assert_eq!(left[0].memory_id, b.id);
        assert_eq!(memories.drop_proposals_from("c-1").expect("drop"), 1);
        assert!(memories.proposals().expect("list").is_empty());
        // Nothing the proposals did touched the memory.
        let still = memories.list(&Filter::default()).expect("list");
        assert_eq!(still.len(), 1);
        assert!(still[0].critical);
    }
}
