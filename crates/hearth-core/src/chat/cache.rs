//! The exact response cache (off by default): an answer is reused only for a request whose
//! every byte is the same — provider, model, tools, memory block, passages, history and the
//! message — so any change in what the model would see is a miss. A personal assistant
//! answers the same words differently as a life changes; keying on the whole request is what
//! keeps a cached answer from ever being someone else's or out of date.
//!
//! Never for a call that carries tool results (only a turn's first call is looked up or
//! stored), never for Regenerate (which exists to get a new answer), nothing from temporary
//! chats. Entries expire (24 h by default), live in the encrypted database, go with their
//! conversation (a foreign key), and are purged when a memory or passage they may have
//! carried changes or goes (triggers in migration 29).

use rusqlite::{OptionalExtension, params};
use serde::{Deserialize, Serialize};
use sha2::{Digest, Sha256};

use crate::Result;
use crate::llm::{ChatModel, ChatRequest};
use crate::store::Store;
use crate::time::now_millis;

/// The settings key of [`CacheSettings`].
pub const CACHE_SETTING: &str = "response_cache";

/// Whether answers are cached, and for how long.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
pub struct CacheSettings {
    /// The exact response cache.
    pub enabled: bool,
    pub ttl_hours: u32,
    /// The semantic cache (stateless questions only; see `semantic`).
    #[serde(default)]
    pub semantic: bool,
    /// The least cosine similarity of a semantic hit.
    #[serde(default = "default_similarity")]
    pub similarity: f32,
}

fn default_similarity() -> f32 {
    super::semantic::DEFAULT_SIMILARITY
}

impl Default for CacheSettings {
    fn default() -> Self {
        Self {
            enabled: false,
            ttl_hours: 24,
            semantic: false,
            similarity: default_similarity(),
        }
    }
}

/// The longest an entry may be kept (a year).
pub const MAX_TTL_HOURS: u32 = 24 * 366;

/// The user's cache settings.
pub(crate) fn settings(store: &Store) -> Result<CacheSettings> {
    Ok(store.setting(CACHE_SETTING)?.unwrap_or_default())
}

/// The key of a request: SHA-256 over everything the provider would receive, each part
/// length-prefixed so no two requests can run together into the same bytes.
pub fn key(model: &ChatModel, request: &ChatRequest) -> [u8; 32] {
    let messages = serde_json::to_vec(&request.messages).unwrap_or_default();
    digest(b"hearth response cache v1", model, request, [messages.as_slice()])
}

/// SHA-256 over `label`, where the request goes (protocol, base URL, model), its output
/// limit, temperature, schema and tools, then `more` — each part length-prefixed so no two
/// requests can run together into the same bytes. The response cache adds every message;
/// the semantic cache only the system prompts (its scope).
pub(crate) fn digest<'a>(
    label: &[u8],
    model: &ChatModel,
    request: &ChatRequest,
    more: impl IntoIterator<Item = &'a [u8]>,
) -> [u8; 32] {
    let mut h = Sha256::new();
    let mut part = |bytes: &[u8]| {
        h.update((bytes.len() as u64).to_le_bytes());
        h.update(bytes);
    };
    part(label);
    part(format!("{:?}", model.provider.protocol).as_bytes());
    part(model.provider.base_url.as_bytes());
    part(request.model.as_bytes());
    part(format!("{:?}/{:?}", request.max_output_tokens, request.temperature).as_bytes());
    let json = |v: Result<Vec<u8>, serde_json::Error>| v.unwrap_or_default();
    part(&json(serde_json::to_vec(&request.json_schema)));
    part(&json(serde_json::to_vec(&request.tools)));
    for bytes in more {
        part(bytes);
    }
    h.finalize().into()
}

/// The answer saved for `key`, if one has not expired.
pub fn lookup(store: &Store, key: &[u8; 32]) -> Result<Option<String>> {
    let key = key.to_vec();
    store.read_blocking(move |c| {
        c.query_row(
            "SELECT answer FROM response_cache WHERE key = ?1 AND expires_at > ?2",
            params![key, now_millis()],
            |r| r.get(0),
        )
        .optional()
    })
}

/// What a saved answer came from.
pub struct Entry<'a> {
    pub conversation: &'a str,
    pub model: &'a ChatModel,
    pub answer: &'a str,
    pub carried_memory: bool,
    pub carried_passages: bool,
}

/// Saves an answer for `key` (replacing an older one), to expire after the settings' hours.
pub fn save(
    store: &Store,
    key: &[u8; 32],
    entry: Entry<'_>,
    settings: CacheSettings,
) -> Result<()> {
    let now = now_millis();
    let expires = now.saturating_add(i64::from(settings.ttl_hours) * 3_600_000);
    let (key, conversation, provider, model, answer) = (
        key.to_vec(),
        entry.conversation.to_owned(),
        entry.model.provider.name.clone(),
        entry.model.model.clone(),
        entry.answer.to_owned(),
    );
    let (memory, passages) = (entry.carried_memory, entry.carried_passages);
    store.write_blocking(move |c| {
        c.execute(
            "DELETE FROM response_cache WHERE expires_at <= ?1",
            [now],
        )?;
        c.execute(
            "INSERT OR REPLACE INTO response_cache (key, conversation_id, provider, model, answer,
               carried_memory, carried_passages, created_at, expires_at)
             VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9)",
            params![
                key,
                conversation,
                provider,
                model,
                answer,
                memory,
                passages,
                now,
                expires
            ],
        )?;
        Ok(())
    })
}

/// How many answers are saved (expired ones not counted).
pub(crate) fn entries(store: &Store) -> Result<u64> {
    store.read_blocking(|c| {
        c.query_row(
            "SELECT COUNT(*) FROM response_cache WHERE expires_at > ?1",
            [now_millis()],
            |r| r.get::<_, i64>(0),
        )
        .map(|n| n.max(0) as u64)
    })
}

/// Removes every saved answer (of both caches); returns how many there were.
pub(crate) fn clear(store: &Store) -> Result<u64> {
    Ok(clear_exact(store)? + super::semantic::clear(store)?)
}

/// Removes every answer of the exact cache; returns how many there were.
pub(crate) fn clear_exact(store: &Store) -> Result<u64> {
    store.write_blocking(|c| {
        c.execute("DELETE FROM response_cache", [])
            .map(|n| n as u64)
    })
}
