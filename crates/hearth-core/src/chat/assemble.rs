//! The second stage: the memory and retrieved zones for the message (off the async
//! threads; never for a temporary chat), then the prompt inside the budget — again, smaller
//! or for another model, when the stream stage asks.

use super::prepare::Prepared;
use super::{ChatOptions, SYSTEM_PROMPT, Sources, TurnContext};
use crate::context::{self, Assembled, Budgets, MemoryParts, Parts, Passage};
use crate::tokens::Encoding;
use crate::types::Message;
use crate::{Error, Result};

/// Everything the prompt is made of.
pub(super) struct Prompt<'a> {
    turn: &'a Prepared,
    memory: Option<MemoryParts>,
    passages: Vec<Passage>,
    user: Message,
    /// The tokens of the run's tools array (fitted to the tools zone before assembly).
    tools: u32,
    /// The full schemas of this message's likeliest tools (when the catalog is short
    /// entries).
    tool_schemas: Option<String>,
}

impl<'a> Prompt<'a> {
    pub async fn gather(ctx: &TurnContext<'_>, opts: &ChatOptions, turn: &'a Prepared) -> Self {
        let (memory, passages) = if opts.temporary {
            (None, Vec::new())
        } else {
            gather(
                ctx.sources,
                &turn.text,
                Budgets::for_window(turn.window),
                turn.encoding,
            )
            .await
        };
        Self {
            turn,
            memory,
            passages,
            user: Message::user(turn.text.clone()),
            tools: 0,
            tool_schemas: None,
        }
    }

    /// The tokens the tools array takes (counted into the budget of every assembly).
    pub fn set_tools_tokens(&mut self, tokens: u32) {
        self.tools = tokens;
    }

    /// The schemas block for the retrieved zone.
    pub fn set_tool_schemas(&mut self, block: Option<String>) {
        self.tool_schemas = block;
    }

    /// The texts of the passages the prompt may carry (for the tools' quoting rule).
    pub fn passage_texts(&self) -> Vec<String> {
        self.passages.iter().map(|p| p.text.clone()).collect()
    }

    /// The user's message as sent.
    pub fn user(&self) -> &Message {
        &self.user
    }

    /// The prompt for a model with `window` tokens and `encoding`.
    pub fn assemble(&self, window: u32, encoding: Encoding) -> Result<Assembled> {
        context::assemble(
            Parts {
                system: SYSTEM_PROMPT,
                tools: self.tools,
                memory: self.memory.as_ref(),
                summary: self.turn.summary.as_deref(),
                history: &self.turn.history,
                retrieved: &self.passages,
                tool_schemas: self.tool_schemas.as_deref(),
                current: &self.user,
            },
            encoding,
            window,
        )
        .map_err(Error::InvalidInput)
    }
}

/// The memory and retrieved zones for a message, from the sources, off the async threads.
async fn gather(
    sources: &Sources,
    message: &str,
    budgets: Budgets,
    encoding: Encoding,
) -> (Option<MemoryParts>, Vec<Passage>) {
    let (memory, retrieval, text) = (
        sources.memory.clone(),
        sources.retrieval.clone(),
        message.to_owned(),
    );
    if memory.is_none() && retrieval.is_none() {
        return (None, Vec::new());
    }
    let joined = tokio::task::spawn_blocking(move || {
        let block = memory.and_then(|m| match m.memory_block(&text, budgets.memory, encoding) {
            Ok(b) => b,
            Err(e) => {
                tracing::warn!(error = %e, "the memory block could not be built; answering without it");
                None
            }
        });
        let passages = retrieval
            .map(|r| match r.retrieve(&text, budgets.retrieved) {
                Ok(p) => p,
                Err(e) => {
                    tracing::warn!(error = %e, "retrieval failed; answering without passages");
                    Vec::new()
                }
            })
            .unwrap_or_default();
        (block, passages)
    })
    .await;
    joined.unwrap_or_default()
}
