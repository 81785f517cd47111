//! A chat turn as the front ends start it: checked and given its models by the engine, so
//! the app and the CLI refuse the same mistakes with the same error, and the same model
//! learns from the exchange.

use tokio_util::sync::CancellationToken;

use super::Hearth;
use crate::chat::{ChatOptions, ModelSlots, Redo, TurnEvent, TurnOutcome};
use crate::memory::Change;
use crate::store::jobs::JobId;
use crate::{Error, Result};

/// The models a turn uses: the configured ones, or a provider and model the user named for
/// this turn (`hearth chat --provider P --model M`).
#[derive(Debug, Clone, Default)]
pub struct ModelChoice {
    pub provider: Option<String>,
    pub model: Option<String>,
}

/// A turn the engine accepted: its message checked, its models picked. Nothing has been
/// sent yet; [`Turn::run`] runs it.
pub struct Turn {
    hearth: Hearth,
    slots: ModelSlots,
    options: ChatOptions,
}

/// Refuses what no turn may be: a new or edited message that is empty or only whitespace
/// (`invalid_input`, before anything is stored or sent).
pub(crate) fn check(options: &ChatOptions) -> Result<()> {
    let needs_text = matches!(options.redo, Redo::No | Redo::EditLast);
    if needs_text && options.message.trim().is_empty() {
        return Err(Error::InvalidInput("the message is empty".into()));
    }
    Ok(())
}

impl Hearth {
    /// Checks a turn and picks its models (the configured slots, or `models`), before
    /// anything is sent: an empty message is `invalid_input`, no usable provider is
    /// `no_provider`, an unknown one `not_found`.
    pub fn turn(&self, options: ChatOptions, models: &ModelChoice) -> Result<Turn> {
        check(&options)?;
        let slots = self
            .providers()
            .for_chat(models.provider.as_deref(), models.model.clone())?;
        Ok(Turn {
            hearth: self.clone(),
            slots,
            options,
        })
    }
}

impl Turn {
    /// The provider and model that will answer.
    pub fn answering(&self) -> (&str, &str) {
        (&self.slots.main.provider.name, &self.slots.main.model)
    }

    /// Runs the turn (see [`Hearth::chat`]).
    pub async fn run(
        &self,
        cancel: &CancellationToken,
        on_event: impl FnMut(TurnEvent<'_>) + Send,
    ) -> Result<TurnOutcome> {
        self.hearth
            .chat(&self.slots, self.options.clone(), cancel, on_event)
            .await
    }

    /// Learns from the exchange now (the app's memory worker would take the job later),
    /// with this turn's fast model: the one that learns from a turn is the fast model of
    /// the models that answered it. Returns the memory changes made.
    pub async fn learn_now(&self, job: JobId) -> Result<Vec<Change>> {
        let runner = self.hearth.jobs().with_fast_model(self.slots.fast.clone());
        Ok(match runner.run_job(job).await? {
            Some(super::JobResult::Learned(changes)) => changes,
            _ => Vec::new(),
        })
    }
}
