//! The first stage: the request checked, the conversation loaded or started, a redo
//! prepared (an edit is written now and undone if the turn fails), the history loaded.

use std::time::Instant;

use super::{ChatOptions, Redo, TurnContext, compact};
use crate::conversations::Conversations;
use crate::models::{ModelTable, Models};
use crate::tokens::Encoding;
use crate::types::Message;
use crate::{Error, Result};

/// A turn ready to be assembled.
pub(super) struct Prepared {
    pub convs: Conversations,
    pub models: ModelTable,
    /// `None` for a temporary chat.
    pub conversation: Option<String>,
    pub summary: Option<String>,
    pub history: Vec<(Message, u32)>,
    /// The message to answer (for a redo, the last user message's text).
    pub text: String,
    /// A redo: the last user message's id and its text before the turn.
    pub redo: Option<(i64, String)>,
    /// Of the main model.
    pub encoding: Encoding,
    pub window: u32,
    pub started: Instant,
}

impl Prepared {
    /// A failed edit-and-answer puts the old text back.
    pub fn undo_edit(&self, opts: &ChatOptions, encoding: Encoding) -> Result<()> {
        if let (Some((user_id, old)), Redo::EditLast) = (&self.redo, opts.redo) {
            self.convs.edit_text(*user_id, old, encoding)?;
        }
        // A conversation this turn started, still without a message, goes with it.
        if opts.conversation.is_none()
            && let Some(id) = &self.conversation
            && self.convs.messages(id)?.is_empty()
        {
            self.convs.delete(id)?;
        }
        Ok(())
    }
}

pub(super) async fn prepare(ctx: &TurnContext<'_>, opts: &ChatOptions) -> Result<Prepared> {
    let model = &ctx.slots.main;
    let convs = Conversations::new(ctx.store.clone());
    let models = Models::new(ctx.store.clone()).table()?;
    let encoding = crate::builtin::encoding_for(model);
    let started = Instant::now();
    let window = models.window_for(model);
    if opts.redo != Redo::No && (opts.temporary || opts.conversation.is_none()) {
        return Err(Error::InvalidInput(
            "only a saved conversation can be answered again".into(),
        ));
    }
    // Redo: the last user message is answered again; history is what came before it.
    let mut redo: Option<(i64, String)> = None;
    let (conversation, summary, history, text) = if opts.temporary {
        (None, None, Vec::new(), opts.message.clone())
    } else if let Some(id) = &opts.conversation {
        if !convs.exists(id)? {
            return Err(Error::InvalidInput(format!(
                "there is no conversation {id}"
            )));
        }
        let (before, text) = match opts.redo {
            Redo::No => (None, opts.message.clone()),
            Redo::Regenerate | Redo::EditLast => {
                let (user_id, old) = convs.last_user_message(id)?.ok_or_else(|| {
                    Error::InvalidInput("this conversation has no message to answer again".into())
                })?;
                let text = if opts.redo == Redo::EditLast {
                    if opts.message.trim().is_empty() {
                        return Err(Error::InvalidInput("the message is empty".into()));
                    }
                    convs.edit_text(user_id, &opts.message, encoding)?;
                    opts.message.clone()
                } else {
                    old.clone()
                };
                redo = Some((user_id, old));
                (Some(user_id), text)
            }
        };
        let (summary, history) =
            compact::compact_if_needed(ctx, &convs, id, before, &models, window).await?;
        (Some(id.clone()), summary, history, text)
    } else {
        (
            Some(convs.create(&opts.message)?),
            None,
            Vec::new(),
            opts.message.clone(),
        )
    };
    Ok(Prepared {
        convs,
        models,
        conversation,
        summary,
        history,
        text,
        redo,
        encoding,
        window,
        started,
    })
}
