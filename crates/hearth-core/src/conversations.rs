//! Conversations and their messages in the encrypted store. Each message keeps its token
//! count, computed once when it is written.

use rusqlite::{OptionalExtension, params};
use serde::{Deserialize, Serialize};

use crate::context::ZoneTokens;
use crate::store::Store;
use crate::time::{Millis, now_millis};
use crate::tokens::Encoding;
use crate::types::{Message, Role, Usage};
use crate::{Error, Result};

/// Where an assistant message is in its life; `Streaming` is the turn checkpoint.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum MessageState {
    Complete,
    /// Being written by a running turn.
    Streaming,
    /// The user stopped the answer; the text is what had arrived.
    Stopped,
    /// The turn died (crash, kill, broken connection); the text is what had arrived.
    Interrupted,
    /// The provider call failed before any answer.
    Failed,
}

impl MessageState {
    fn as_str(self) -> &'static str {
        match self {
            MessageState::Complete => "complete",
            MessageState::Streaming => "streaming",
            MessageState::Stopped => "stopped",
            MessageState::Interrupted => "interrupted",
            MessageState::Failed => "failed",
        }
    }
    fn parse(s: &str) -> Self {
        match s {
            "streaming" => MessageState::Streaming,
            "stopped" => MessageState::Stopped,
            "interrupted" => MessageState::Interrupted,
            "failed" => MessageState::Failed,
            _ => MessageState::Complete,
        }
    }
}

fn role_str(r: Role) -> &'static str {
    match r {
        Role::System => "system",
        Role::User => "user",
        Role::Assistant => "assistant",
        Role::Tool => "tool",
    }
}

fn parse_role(s: &str) -> Role {
    match s {
        "system" => Role::System,
        "assistant" => Role::Assistant,
        "tool" => Role::Tool,
        _ => Role::User,
    }
}

fn encoding_name(e: Encoding) -> &'static str {
    match e {
        Encoding::O200kBase => "o200k_base",
        Encoding::Cl100kBase => "cl100k_base",
        Encoding::Estimated => "estimated",
        Encoding::Model(_) => "model",
    }
}

/// A conversation as listed.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct ConversationSummary {
    pub id: String,
    pub title: String,
    pub created_at: Millis,
    pub updated_at: Millis,
    pub messages: u32,
}

/// A stored message.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct StoredMessage {
    pub id: i64,
    pub message: Message,
    pub tokens: u32,
    pub state: MessageState,
    pub created_at: Millis,
    /// For an answer: what its turn used.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub turn: Option<TurnInfo>,
}

/// The latest rolling summary of a conversation.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Summary {
    /// Messages with ids up to this one are covered by the summary.
    pub up_to_message_id: i64,
    pub content: String,
    pub tokens: u32,
}

/// Conversation storage over one store.
#[derive(Clone)]
pub struct Conversations {
    store: Store,
}

impl Conversations {
    pub fn new(store: Store) -> Self {
        Self { store }
    }

    /// Starts a conversation titled from its first message.
    pub fn create(&self, first_message: &str) -> Result<String> {
        let id = uuid::Uuid::new_v4().to_string();
        let title = title_from(first_message);
        let id2 = id.clone();
        self.store.write_blocking(move |c| {
            let now = now_millis();
            c.execute(
                "INSERT INTO conversations (id, title, created_at, updated_at) VALUES (?1, ?2, ?3, ?3)",
                params![id2, title, now],
            )?;
            Ok(())
        })?;
        Ok(id)
    }

    /// Whether the conversation exists.
    pub fn exists(&self, id: &str) -> Result<bool> {
        let id = id.to_owned();
        self.store.read_blocking(move |c| {
            c.query_row(
                "SELECT 1 FROM conversations WHERE id = ?1",
                [id],
                |_| Ok(()),
            )
            .optional()
            .map(|r| r.is_some())
        })
    }

    /// Appends a message, counting its tokens with `encoding`; returns its id.
    pub fn append(
        &self,
        conversation: &str,
        message: &Message,
        encoding: Encoding,
        state: MessageState,
        model: Option<&str>,
    ) -> Result<i64> {
        let tokens = encoding.count(&message.content) as i64;
        let tool_calls = if message.tool_calls.is_empty() {
            None
        } else {
            Some(
                serde_json::to_string(&message.tool_calls)
                    .map_err(|e| Error::InvalidInput(e.to_string()))?,
            )
        };
        let (conv, role, content, call_id, model) = (
            conversation.to_owned(),
            role_str(message.role),
            message.content.clone(),
            message.tool_call_id.clone(),
            model.map(str::to_owned),
        );
        self.store.write_blocking(move |c| {
            let now = now_millis();
            let tx = c.transaction()?;
            tx.execute(
                "INSERT INTO messages (conversation_id, role, content, tool_calls, tool_call_id, tokens, encoding, state, model, created_at, updated_at)
                 VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10, ?10)",
                params![conv, role, content, tool_calls, call_id, tokens, encoding_name(encoding), state.as_str(), model, now],
            )?;
            let id = tx.last_insert_rowid();
            tx.execute("UPDATE conversations SET updated_at = ?1 WHERE id = ?2", params![now, conv])?;
            tx.commit()?;
            Ok(id)
        })
    }

    /// Saves the text so far of an answer that is still streaming (a turn checkpoint).
    /// Only a `streaming` row is touched: a checkpoint that lands after the turn's final
    /// write changes nothing. True if the row was updated.
    pub fn checkpoint(&self, message_id: i64, content: &str, encoding: Encoding) -> Result<bool> {
        let tokens = encoding.count(content) as i64;
        let content = content.to_owned();
        crate::failpoint::delay("checkpoint");
        self.store.write_blocking(move |c| {
            let n = c.execute(
                "UPDATE messages SET content = ?1, tokens = ?2, updated_at = ?3
                 WHERE id = ?4 AND state = 'streaming'",
                params![content, tokens, now_millis(), message_id],
            )?;
            Ok(n > 0)
        })
    }

    /// Marks an answer whose turn ended abnormally (a panic, a dropped turn) `failed`,
    /// keeping `content` (what had arrived); only if it is still `streaming`.
    pub fn fail_if_streaming(
        &self,
        message_id: i64,
        content: &str,
        encoding: Encoding,
    ) -> Result<bool> {
        let tokens = encoding.count(content) as i64;
        let content = content.to_owned();
        self.store.write_blocking(move |c| {
            let n = c.execute(
                "UPDATE messages SET content = ?1, tokens = ?2, state = 'failed', updated_at = ?3
                 WHERE id = ?4 AND state = 'streaming'",
                params![content, tokens, now_millis(), message_id],
            )?;
            Ok(n > 0)
        })
    }

    /// Replaces an assistant message's text and state (the end of a turn).
    pub fn update(
        &self,
        message_id: i64,
        content: &str,
        encoding: Encoding,
        state: MessageState,
    ) -> Result<()> {
        let tokens = encoding.count(content) as i64;
        let content = content.to_owned();
        self.store.write_blocking(move |c| {
            c.execute(
                "UPDATE messages SET content = ?1, tokens = ?2, state = ?3, updated_at = ?4 WHERE id = ?5",
                params![content, tokens, state.as_str(), now_millis(), message_id],
            )?;
            Ok(())
        })
    }

    /// The last user message of a conversation: its id and text.
    pub fn last_user_message(&self, conversation: &str) -> Result<Option<(i64, String)>> {
        let conv = conversation.to_owned();
        self.store.read_blocking(move |c| {
            c.query_row(
                "SELECT id, content FROM messages WHERE conversation_id = ?1 AND role = 'user'
                 ORDER BY id DESC LIMIT 1",
                [conv],
                |r| Ok((r.get(0)?, r.get(1)?)),
            )
            .optional()
        })
    }

    /// Replaces a user message's text (edit-and-resend), recounting its tokens.
    pub fn edit_text(&self, message_id: i64, content: &str, encoding: Encoding) -> Result<()> {
        let tokens = encoding.count(content) as i64;
        let content = content.to_owned();
        self.store.write_blocking(move |c| {
            c.execute(
                "UPDATE messages SET content = ?1, tokens = ?2, encoding = ?3, updated_at = ?4 WHERE id = ?5",
                params![content, tokens, encoding_name(encoding), now_millis(), message_id],
            )?;
            Ok(())
        })
    }

    /// Deletes the messages strictly between two of the same conversation (the answers a
    /// regenerated one replaces).
    pub fn delete_between(&self, after: i64, before: i64) -> Result<()> {
        self.store.write_blocking(move |c| {
            c.execute(
                "DELETE FROM messages WHERE id > ?1 AND id < ?2
                   AND conversation_id = (SELECT conversation_id FROM messages WHERE id = ?1)",
                params![after, before],
            )?;
            Ok(())
        })
    }

    /// Deletes one message.
    pub fn delete_message(&self, message_id: i64) -> Result<()> {
        self.store.write_blocking(move |c| {
            c.execute("DELETE FROM messages WHERE id = ?1", [message_id])?;
            Ok(())
        })
    }

    /// Records which process streams an answer (see `run/` in the data folder).
    pub fn set_owner(&self, message_id: i64, owner: &str) -> Result<()> {
        let owner = owner.to_owned();
        self.store.write_blocking(move |c| {
            c.execute(
                "UPDATE messages SET owner = ?1 WHERE id = ?2",
                params![owner, message_id],
            )?;
            Ok(())
        })
    }

    /// Stores what an answer's turn used (model, tokens, cost, context zones).
    pub fn set_turn_info(&self, message_id: i64, info: &TurnInfo) -> Result<()> {
        let json = serde_json::to_string(info).map_err(|e| Error::InvalidInput(e.to_string()))?;
        self.store.write_blocking(move |c| {
            c.execute(
                "UPDATE messages SET turn_json = ?1 WHERE id = ?2",
                params![json, message_id],
            )?;
            Ok(())
        })
    }

    /// Marks answers left `streaming` by a turn that died (not updated since `stale_before`).
    pub fn mark_interrupted(&self, stale_before: Millis) -> Result<usize> {
        self.store.write_blocking(move |c| {
            c.execute(
                "UPDATE messages SET state = 'interrupted' WHERE state = 'streaming' AND updated_at < ?1",
                [stale_before],
            )
        })
    }

    /// The messages of a conversation, oldest first.
    pub fn messages(&self, conversation: &str) -> Result<Vec<StoredMessage>> {
        let conv = conversation.to_owned();
        self.store.read_blocking(move |c| {
            let mut stmt = c.prepare(
                "SELECT id, role, content, tool_calls, tool_call_id, tokens, state, created_at, turn_json
                 FROM messages WHERE conversation_id = ?1 ORDER BY id",
            )?;
            let rows = stmt.query_map([conv], |r| {
                let calls: Option<String> = r.get(3)?;
                Ok(StoredMessage {
                    id: r.get(0)?,
                    message: Message {
                        role: parse_role(&r.get::<_, String>(1)?),
                        content: r.get(2)?,
                        tool_calls: calls
                            .and_then(|c| serde_json::from_str(&c).ok())
                            .unwrap_or_default(),
                        tool_call_id: r.get(4)?,
                    },
                    tokens: r.get(5)?,
                    state: MessageState::parse(&r.get::<_, String>(6)?),
                    created_at: r.get(7)?,
                    turn: r
                        .get::<_, Option<String>>(8)?
                        .and_then(|j| serde_json::from_str(&j).ok()),
                })
            })?;
            rows.collect()
        })
    }

    /// The newest summary of a conversation, if it was ever compacted.
    pub fn latest_summary(&self, conversation: &str) -> Result<Option<Summary>> {
        let conv = conversation.to_owned();
        self.store.read_blocking(move |c| {
            c.query_row(
                "SELECT up_to_message_id, content, tokens FROM summaries WHERE conversation_id = ?1 ORDER BY id DESC LIMIT 1",
                [conv],
                |r| Ok(Summary { up_to_message_id: r.get(0)?, content: r.get(1)?, tokens: r.get(2)? }),
            )
            .optional()
        })
    }

    /// Stores a new rolling summary covering messages up to `up_to_message_id`.
    pub fn save_summary(
        &self,
        conversation: &str,
        up_to_message_id: i64,
        content: &str,
        encoding: Encoding,
        model: &str,
    ) -> Result<()> {
        let tokens = encoding.count(content) as i64;
        let (conv, content, model) = (
            conversation.to_owned(),
            content.to_owned(),
            model.to_owned(),
        );
        self.store.write_blocking(move |c| {
            c.execute(
                "INSERT INTO summaries (conversation_id, up_to_message_id, content, tokens, model, created_at)
                 VALUES (?1, ?2, ?3, ?4, ?5, ?6)",
                params![conv, up_to_message_id, content, tokens, model, now_millis()],
            )?;
            Ok(())
        })
    }

    /// Renames a conversation; false if there is none with that id.
    pub fn rename(&self, id: &str, title: &str) -> Result<bool> {
        let title = title.trim();
        if title.is_empty() {
            return Err(Error::InvalidInput("a title cannot be empty".into()));
        }
        let (id, title) = (id.to_owned(), title.to_owned());
        self.store
            .write_blocking(move |c| {
                c.execute(
                    "UPDATE conversations SET title = ?1 WHERE id = ?2",
                    params![title, id],
                )
            })
            .map(|n| n > 0)
    }

    /// Deletes a conversation for real: its messages and summaries go with it (the store
    /// runs with `secure_delete`), usage rows keep their numbers but lose the link.
    pub fn delete(&self, id: &str) -> Result<bool> {
        let id = id.to_owned();
        self.store
            .write_blocking(move |c| c.execute("DELETE FROM conversations WHERE id = ?1", [id]))
            .map(|n| n > 0)
    }

    /// Conversations whose title or messages contain `query` (case-insensitive for ASCII).
    pub fn search(&self, query: &str) -> Result<Vec<ConversationSummary>> {
        let escaped = query
            .replace('\\', "\\\\")
            .replace('%', "\\%")
            .replace('_', "\\_");
        self.summaries(
            "WHERE c.title LIKE ?1 ESCAPE '\\'
                OR EXISTS (SELECT 1 FROM messages m WHERE m.conversation_id = c.id AND m.content LIKE ?1 ESCAPE '\\')",
            Some(format!("%{escaped}%")),
        )
    }

    /// All conversations, most recently active first.
    pub fn list(&self) -> Result<Vec<ConversationSummary>> {
        self.summaries("", None)
    }

    /// Conversation summaries matching `filter` (an SQL WHERE clause over `c`, with an
    /// optional parameter), most recently active first.
    fn summaries(
        &self,
        filter: &'static str,
        param: Option<String>,
    ) -> Result<Vec<ConversationSummary>> {
        self.store.read_blocking(move |c| {
            let mut stmt = c.prepare(&format!(
                "SELECT c.id, c.title, c.created_at, c.updated_at,
                        (SELECT count(*) FROM messages m2 WHERE m2.conversation_id = c.id)
                 FROM conversations c {filter}
                 ORDER BY c.updated_at DESC, c.id"
            ))?;
            let map = |r: &rusqlite::Row<'_>| {
                Ok(ConversationSummary {
                    id: r.get(0)?,
                    title: r.get(1)?,
                    created_at: r.get(2)?,
                    updated_at: r.get(3)?,
                    messages: r.get(4)?,
                })
            };
            match &param {
                Some(p) => stmt.query_map([p], map)?.collect(),
                None => stmt.query_map([], map)?.collect(),
            }
        })
    }
}

/// The first line of a message, shortened to a title.
fn title_from(message: &str) -> String {
    let line = message
        .lines()
        .find(|l| !l.trim().is_empty())
        .unwrap_or("")
        .trim();
    let mut title: String = line.chars().take(60).collect();
    if line.chars().count() > 60 {
        title.push('…');
    }
    title
}

/// What an answer's turn used, stored with the answer for the chat screen.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct TurnInfo {
    pub provider: String,
    pub model: String,
    pub usage: Usage,
    /// USD: 0 on a local server, `None` when the price is unknown.
    pub cost_usd: Option<f64>,
    pub zones: ZoneTokens,
    /// Set when the main model failed and the enabled fallback answered: the main model.
    pub fallback_from: Option<String>,
    /// Why the main model failed, when the fallback answered.
    pub fallback_reason: Option<String>,
    /// Tools the model's window had no room for in this turn (the tools zone).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub tools_left_out: Vec<String>,
    /// Why the run ended (`answer`, `cap`, `cancelled`, `timeout`); absent in answers
    /// stored before it was kept.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub stop_reason: Option<String>,
    /// Which tier answered and why; absent in answers stored before routing.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub route: Option<crate::route::Route>,
    /// The fast model's answer a cascade replaced with this one, kept to be shown under it.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub first_answer: Option<String>,
    /// The user sent this message over a spending cap ("this message anyway").
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub over_budget: bool,
    /// The answer came from the response cache: no model was called.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub cached: bool,
    /// The semantic cache answered: the question its saved reply was given to.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub cached_from: Option<String>,
}
