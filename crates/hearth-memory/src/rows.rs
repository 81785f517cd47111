//! The row-level writes every memory change goes through, inside the caller's
//! transaction: insert, update, soft removal, real delete — each logged in the history.

use rusqlite::{OptionalExtension, Row, params, params_from_iter};

use crate::time::now_millis;
use crate::{Error, Result};

use super::facets::{self, Facets};
use super::vectors::vec_tables;
use super::*;

pub fn new_id() -> String {
    let u = uuid::Uuid::new_v4().simple().to_string();
    format!("m-{}", &u[..12])
}

pub const COLUMNS: &str = "id, text, kind, subject, importance, pinned, critical, confidence, source_kind, \
    source_conversation, source_message, source_file, event_at, created_at, updated_at, last_used_at, \
    use_count, status, removed_at, embed_model, removal_awaits_consent, imported_from, context, facets, \
    superseded_by";

pub fn row_to_memory(r: &Row<'_>) -> rusqlite::Result<Memory> {
    let source = match r.get::<_, String>(8)?.as_str() {
        "conversation" => Source::Conversation {
            conversation: r.get::<_, Option<String>>(9)?.unwrap_or_default(),
            message: r.get(10)?,
        },
        "file" => Source::File {
            path: r.get::<_, Option<String>>(11)?.unwrap_or_default(),
        },
        "import" => Source::Import,
        _ => Source::Manual,
    };
    let tagged = stored_facets(r.get(23)?, &r.get::<_, String>(1)?, &r.get::<_, String>(2)?);
    Ok(Memory {
        id: r.get(0)?,
        text: r.get(1)?,
        kind: Kind::parse(&r.get::<_, String>(2)?).unwrap_or(Kind::Fact),
        subject: r.get(3)?,
        importance: r.get(4)?,
        pinned: r.get(5)?,
        critical: r.get(6)?,
        confidence: r.get(7)?,
        source,
        event_at: r.get(12)?,
        created: r.get(13)?,
        updated: r.get(14)?,
        last_used: r.get(15)?,
        use_count: r.get(16)?,
        status: Status::parse(&r.get::<_, String>(17)?),
        removed_at: r.get(18)?,
        embed_model: r.get(19)?,
        removal_awaits_consent: r.get(20)?,
        imported_from: r
            .get::<_, Option<String>>(21)?
            .and_then(|s| serde_json::from_str(&s).ok()),
        context: r.get(22)?,
        facets: tagged.names().into_iter().map(str::to_owned).collect(),
        no_longer_true: tagged.has(Facets::PAST),
        superseded_by: r.get(24)?,
    })
}

/// A row's facets: as stored, or (a row written before migration 27 and not yet tagged)
/// as the tagger says.
pub fn stored_facets(stored: Option<i64>, text: &str, kind: &str) -> Facets {
    match stored {
        Some(bits) => Facets(u32::try_from(bits).unwrap_or(0)),
        None => facets::tag(text, Kind::parse(kind).unwrap_or(Kind::Fact)),
    }
}

/// The facets to store for `text`: the tagger's, the topics and "no longer true" kept from
/// elsewhere (an import's file), and no longer true when a newer memory superseded it.
pub fn facets_for(text: &str, kind: Kind, kept: Facets, superseded: bool) -> i64 {
    let mut f = facets::tag(text, kind).0 | (kept.0 & (Facets::TOPICS | Facets::PAST));
    if superseded {
        f |= Facets::PAST;
    }
    i64::from(f)
}

/// The context to store: trimmed, at most [`MAX_CONTEXT_CHARS`], none when blank.
fn context_of(new: &NewMemory) -> Option<String> {
    let c = new.context.as_deref()?.trim();
    (!c.is_empty()).then(|| c.chars().take(MAX_CONTEXT_CHARS).collect())
}

pub fn check_text(text: &str) -> Result<String> {
    let t = text.trim();
    if t.is_empty() {
        return Err(Error::InvalidInput("a memory cannot be empty".into()));
    }
    if t.chars().count() > MAX_TEXT {
        return Err(Error::InvalidInput(format!(
            "a memory is at most {MAX_TEXT} characters"
        )));
    }
    Ok(t.to_owned())
}

pub fn source_json(s: &Source) -> Option<String> {
    match s {
        Source::Manual => None,
        other => serde_json::to_string(other).ok(),
    }
}

/// Appends a history entry inside a transaction.
pub fn log(
    tx: &rusqlite::Transaction<'_>,
    memory_id: &str,
    op: &str,
    old: Option<&str>,
    new: Option<&str>,
    actor: Actor,
    source: Option<&str>,
) -> rusqlite::Result<()> {
    tx.execute(
        "INSERT INTO memory_history (memory_id, op, old_text, new_text, actor, source, at)
         VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7)",
        params![
            memory_id,
            op,
            old,
            new,
            actor.as_str(),
            source,
            now_millis()
        ],
    )?;
    // The audit entry: the texts only as digests keyed by the memory's own salt.
    let salt: Option<Vec<u8>> = tx
        .query_row(
            "SELECT audit_salt FROM memories WHERE id = ?1",
            [memory_id],
            |r| r.get(0),
        )
        .optional()?
        .flatten();
    let digest = |t: Option<&str>| match (&salt, t) {
        (Some(salt), Some(t)) => serde_json::Value::String(crate::audit::text_digest(salt, t)),
        _ => serde_json::Value::Null,
    };
    crate::audit::append(
        tx,
        &crate::audit::NewEntry {
            kind: "memory",
            summary: serde_json::json!({"memory": memory_id, "op": op, "actor": actor.as_str()}),
            payload: serde_json::json!({"old_hmac": digest(old), "new_hmac": digest(new)}),
            keep_payload: true,
            conversation: None,
            memory: Some(memory_id),
        },
    )?;
    Ok(())
}

/// Checks a new memory before it is written; returns its cleaned text.
pub fn validate(new: &NewMemory) -> Result<String> {
    let text = check_text(&new.text)?;
    if new.kind == Kind::Instruction && matches!(new.source, Source::File { .. }) {
        return Err(Error::InvalidInput(
            "text drawn from a file never becomes an instruction".into(),
        ));
    }
    Ok(text)
}

/// Inserts a memory (already [`validate`]d) inside a transaction; returns its id.
pub fn insert(
    tx: &rusqlite::Transaction<'_>,
    new: &NewMemory,
    actor: Actor,
) -> rusqlite::Result<String> {
    let text = new.text.trim().to_owned();
    let id = new_id();
    let now = now_millis();
    let created = new.created.unwrap_or(now);
    let (conv, msg, file) = match &new.source {
        Source::Conversation {
            conversation,
            message,
        } => (Some(conversation.clone()), *message, None),
        Source::File { path } => (None, None, Some(path.clone())),
        _ => (None, None, None),
    };
    tx.execute(
        "INSERT INTO memories (id, text, norm, kind, subject, importance, pinned, critical, confidence,
           source_kind, source_conversation, source_message, source_file, event_at, created_at, updated_at, context,
           facets, audit_salt)
         VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10, ?11, ?12, ?13, ?14, ?15, ?16, ?17, ?18, randomblob(16))",
        params![
            id,
            text,
            normalize(&text),
            new.kind.as_str(),
            new.subject,
            new.importance.clamp(0.0, 1.0),
            new.pinned,
            new.critical,
            new.confidence.clamp(0.0, 1.0),
            new.source.kind_str(),
            conv,
            msg,
            file,
            new.event_at,
            created,
            now,
            context_of(new),
            facets_for(&text, new.kind, new.facets, false)
        ],
    )?;
    let op = if actor == Actor::Import {
        "import"
    } else {
        "add"
    };
    log(
        tx,
        &id,
        op,
        None,
        Some(&text),
        actor,
        source_json(&new.source).as_deref(),
    )?;
    Ok(id)
}

/// Changes a memory's text inside a transaction (history keeps the old); returns the old
/// text, or `None` when there is no such active memory.
pub fn update_text_tx(
    tx: &rusqlite::Transaction<'_>,
    id: &str,
    text: &str,
    actor: Actor,
    source: Option<&str>,
) -> rusqlite::Result<Option<String>> {
    let old: Option<(i64, String)> = tx
        .query_row(
            "SELECT n, text FROM memories WHERE id = ?1 AND status = 'active'",
            [id],
            |r| Ok((r.get(0)?, r.get(1)?)),
        )
        .optional()?;
    let Some((n, old)) = old else {
        return Ok(None);
    };
    let text = text.trim();
    if text.is_empty() || old == text {
        return Ok(None);
    }
    set_text_tx(tx, n, text)?;
    drop_vectors(tx, n)?;
    log(tx, id, "update", Some(&old), Some(text), actor, source)?;
    Ok(Some(old))
}

/// Writes a memory's new text (row `n`) with its facets tagged again; the vector is made
/// again later.
pub fn set_text_tx(tx: &rusqlite::Transaction<'_>, n: i64, text: &str) -> rusqlite::Result<()> {
    let (kind, superseded): (String, bool) = tx.query_row(
        "SELECT kind, superseded_by IS NOT NULL FROM memories WHERE n = ?1",
        [n],
        |r| Ok((r.get(0)?, r.get(1)?)),
    )?;
    let kind = Kind::parse(&kind).unwrap_or(Kind::Fact);
    tx.execute(
        "UPDATE memories SET text = ?1, norm = ?2, updated_at = ?3, embed_model = NULL, facets = ?5
          WHERE n = ?4",
        params![
            text,
            normalize(text),
            now_millis(),
            n,
            facets_for(text, kind, Facets::default(), superseded)
        ],
    )?;
    Ok(())
}

/// Marks active memory `id` as no longer true, replaced by memory `by` (the user said their
/// life changed: "we moved"). It stays active, listed and searchable; the memory block
/// prefers the current one and says which is older. Returns its text, or `None` when it is
/// not an active memory not superseded already.
pub fn supersede_tx(
    tx: &rusqlite::Transaction<'_>,
    id: &str,
    by: &str,
    actor: Actor,
    source: Option<&str>,
) -> rusqlite::Result<Option<String>> {
    let row: Option<(i64, String)> = tx
        .query_row(
            "SELECT n, text FROM memories
              WHERE id = ?1 AND status = 'active' AND superseded_by IS NULL",
            [id],
            |r| Ok((r.get(0)?, r.get(1)?)),
        )
        .optional()?;
    let Some((n, text)) = row else {
        return Ok(None);
    };
    tx.execute(
        "UPDATE memories SET superseded_by = ?1, facets = coalesce(facets, 0) | ?2 WHERE n = ?3",
        params![by, Facets::PAST, n],
    )?;
    log(tx, id, "supersede", None, Some(&text), actor, source)?;
    Ok(Some(text))
}

/// Undoes [`supersede_tx`]: the memory is current again (unless its own words say it
/// ended). Returns whether it was superseded.
pub fn unsupersede_tx(
    tx: &rusqlite::Transaction<'_>,
    id: &str,
    actor: Actor,
) -> rusqlite::Result<bool> {
    let row: Option<(i64, String, String)> = tx
        .query_row(
            "SELECT n, text, kind FROM memories WHERE id = ?1 AND superseded_by IS NOT NULL",
            [id],
            |r| Ok((r.get(0)?, r.get(1)?, r.get(2)?)),
        )
        .optional()?;
    let Some((n, text, kind)) = row else {
        return Ok(false);
    };
    let kind = Kind::parse(&kind).unwrap_or(Kind::Fact);
    tx.execute(
        "UPDATE memories SET superseded_by = NULL, facets = ?1 WHERE n = ?2",
        params![facets_for(&text, kind, Facets::default(), false), n],
    )?;
    log(tx, id, "unsupersede", None, Some(&text), actor, None)?;
    Ok(true)
}

/// Soft-removes a memory inside a transaction; returns its text, or `None` if it was not
/// active. A removal by the assistant is marked as awaiting the user's consent.
pub fn remove_tx(
    tx: &rusqlite::Transaction<'_>,
    id: &str,
    actor: Actor,
    source: Option<&str>,
) -> rusqlite::Result<Option<String>> {
    remove_marked_tx(tx, id, actor, actor == Actor::Assistant, source)
}

/// [`remove_tx`] with the consent mark given (false once the user accepted the removal).
pub fn remove_marked_tx(
    tx: &rusqlite::Transaction<'_>,
    id: &str,
    actor: Actor,
    awaits_consent: bool,
    source: Option<&str>,
) -> rusqlite::Result<Option<String>> {
    let text: Option<String> = tx
        .query_row(
            "SELECT text FROM memories WHERE id = ?1 AND status = 'active'",
            [id],
            |r| r.get(0),
        )
        .optional()?;
    if text.is_some() {
        tx.execute(
            "UPDATE memories SET status = 'removed', removed_at = ?1, updated_at = ?1,
               removal_awaits_consent = ?3 WHERE id = ?2",
            params![now_millis(), id, awaits_consent],
        )?;
        log(tx, id, "remove", None, None, actor, source)?;
    }
    Ok(text)
}

/// Deletes memories for real: rows (their FTS entries follow by trigger), vectors, and the
/// texts in their history, leaving one tombstone each. Returns how many went.
pub fn purge(
    tx: &rusqlite::Transaction<'_>,
    where_sql: &str,
    args: &[rusqlite::types::Value],
) -> rusqlite::Result<usize> {
    let victims: Vec<(i64, String)> = {
        let mut stmt = tx.prepare(&format!("SELECT n, id FROM memories WHERE {where_sql}"))?;
        let rows = stmt.query_map(params_from_iter(args.iter()), |r| {
            Ok((r.get(0)?, r.get(1)?))
        })?;
        rows.collect::<rusqlite::Result<_>>()?
    };
    let vec_tables = vec_tables(tx)?;
    for (n, id) in &victims {
        tx.execute("DELETE FROM memories WHERE n = ?1", [n])?;
        for t in &vec_tables {
            tx.execute(&format!("DELETE FROM {t} WHERE rowid = ?1"), [n])?;
        }
        tx.execute(
            "UPDATE memory_history SET old_text = NULL, new_text = NULL, source = NULL WHERE memory_id = ?1",
            [id],
        )?;
        // Its proposals may quote its text: they go with it.
        tx.execute("DELETE FROM memory_proposals WHERE memory_id = ?1", [id])?;
        log(tx, id, "delete", None, None, Actor::User, None)?;
    }
    if !victims.is_empty() {
        // Merge every FTS segment so no old segment keeps the deleted text.
        tx.execute(
            "INSERT INTO memories_fts (memories_fts) VALUES ('optimize')",
            [],
        )?;
    }
    Ok(victims.len())
}
