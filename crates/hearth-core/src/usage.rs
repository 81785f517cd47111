//! The usage ledger: one row per provider call — the chat turn's, the fast model's
//! compaction and memory extraction alike — with tokens, latency, outcome and cost
//! (SPEC §7). Content-free: no text is ever written here.

use rusqlite::params;

use crate::Result;
use crate::llm::ChatModel;
use crate::models::ModelTable;
use crate::store::Store;
use crate::time::now_millis;
use crate::types::Usage;

/// One provider call, as the ledger records it.
pub(crate) struct Call<'a> {
    pub conversation: Option<&'a str>,
    pub message: Option<i64>,
    /// `main`, `fast` or `fallback`.
    pub slot: &'a str,
    pub model: &'a ChatModel,
    pub usage: Usage,
    pub latency_ms: i64,
    /// `ok`, `stopped`, `empty` or an error code.
    pub outcome: &'a str,
}

/// Writes one ledger row, its cost from `models` (`NULL` when the price is unknown).
pub(crate) fn record(store: &Store, models: &ModelTable, call: Call<'_>) -> Result<()> {
    let Call {
        conversation,
        message,
        slot,
        model,
        usage,
        latency_ms,
        outcome,
    } = call;
    let (conversation, slot, provider, name, outcome) = (
        conversation.map(str::to_owned),
        slot.to_owned(),
        model.provider.name.clone(),
        model.model.clone(),
        outcome.to_owned(),
    );
    let cost = models.cost(&model.provider.base_url, &model.model, usage);
    store.write_blocking(move |c| {
        c.execute(
            "INSERT INTO usage_ledger (conversation_id, message_id, slot, provider, model, input_tokens, output_tokens,
               cached_input_tokens, cache_write_tokens, latency_ms, outcome, created_at, cost_usd)
             VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10, ?11, ?12, ?13)",
            params![
                conversation,
                message,
                slot,
                provider,
                name,
                usage.input_tokens as i64,
                usage.output_tokens as i64,
                usage.cached_input_tokens as i64,
                usage.cache_write_tokens as i64,
                latency_ms,
                outcome,
                now_millis(),
                cost
            ],
        )?;
        Ok(())
    })
}
