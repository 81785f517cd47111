//! The model a run calls, and what happens when a call fails: a prompt too long for the
//! model's real window is assembled once more at half of it; a main model that failed
//! before saying anything gives way to the fallback, if the user enabled one.

use super::assemble::Prompt;
use super::{ChatModel, ModelSlots};
use crate::context::Assembled;
use crate::llm::LlmError;
use crate::models::ModelTable;
use crate::tokens::Encoding;

/// The model in use and how its prompt is counted and fitted.
pub(super) struct ModelCaller<'a> {
    pub model: &'a ChatModel,
    pub encoding: Encoding,
    pub window: u32,
    fallback: Option<&'a ChatModel>,
    /// The main model and why it failed, once the fallback answers.
    pub fallback_from: Option<(String, String)>,
    retried_smaller: bool,
}

/// What to do after a failed call.
pub(super) struct Recovery<'a> {
    /// A failed call to record in the usage ledger first: its model and slot.
    pub record: Option<(&'a ChatModel, &'static str)>,
    /// The prompt to call with again (`None`: the turn ends with the error).
    pub retry: Option<Assembled>,
}

impl<'a> ModelCaller<'a> {
    pub fn new(slots: &'a ModelSlots, encoding: Encoding, window: u32) -> Self {
        Self {
            model: &slots.main,
            encoding,
            window,
            fallback: slots.fallback.as_ref(),
            fallback_from: None,
            retried_smaller: false,
        }
    }

    /// The slot answering now, as the usage ledger names it.
    pub fn slot(&self) -> &'static str {
        if self.fallback_from.is_some() {
            "fallback"
        } else {
            "main"
        }
    }

    /// After `error` (`nothing_yet`: no text of the answer arrived): a smaller prompt for
    /// the same model once, else the fallback model with a prompt fitted to it, else
    /// nothing.
    pub fn recover(
        &mut self,
        error: &LlmError,
        nothing_yet: bool,
        prompt: &Prompt<'_>,
        models: &ModelTable,
    ) -> Recovery<'a> {
        // The model's real window is smaller than we thought: re-assemble once, smaller.
        if let LlmError::ContextLength { .. } = error
            && !self.retried_smaller
        {
            self.retried_smaller = true;
            let smaller = self.window / 2;
            tracing::warn!(
                window = self.window,
                smaller,
                "context length exceeded; re-assembling with a smaller budget"
            );
            if let Ok(again) = prompt.assemble(smaller, self.encoding) {
                return Recovery {
                    record: Some((self.model, self.slot())),
                    retry: Some(again),
                };
            }
        }
        // The main model failed before saying anything: the fallback, if the user enabled it.
        if nothing_yet
            && self.fallback_from.is_none()
            && let Some(fallback) = self.fallback
        {
            tracing::warn!(
                code = error.code(),
                main = %self.model.model,
                fallback = %fallback.model,
                "the main model failed; answering with the fallback model"
            );
            let failed = self.model;
            self.fallback_from = Some((failed.model.clone(), error.to_string()));
            self.model = fallback;
            self.encoding = crate::builtin::encoding_for(fallback);
            self.window = models.window_for(fallback);
            self.retried_smaller = false;
            return Recovery {
                record: Some((failed, "main")),
                retry: prompt.assemble(self.window, self.encoding).ok(),
            };
        }
        Recovery {
            record: None,
            retry: None,
        }
    }
}
