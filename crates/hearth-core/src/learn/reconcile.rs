//! Reconciling a candidate with what is already known: the most similar memories, and the
//! model's decision (add, update, forget, or nothing) about them.

use super::*;

impl Learner {
    /// The existing memories most similar to `text`, to offer by id, with their cosine
    /// similarity to it when there is an embedder.
    pub(super) async fn similar(&self, text: &str) -> Result<Vec<Offered>> {
        let (memories, embedder, text) = (
            self.memories.clone(),
            self.embedder.clone(),
            text.to_owned(),
        );
        tokio::task::spawn_blocking(move || {
            let vector = match &embedder {
                Some(e) => {
                    memories.embed_pending(e.as_ref(), 256)?;
                    e.embed(&[&text])
                        .ok()
                        .and_then(|mut v| v.pop())
                        .map(|v| (e.model_id().to_owned(), v))
                }
                None => None,
            };
            let found = memories.search(
                &text,
                vector.as_ref().map(|(m, v)| (m.as_str(), v.as_slice())),
                Mode::Hybrid,
                OFFERED,
            )?;
            let cosines: Vec<Option<f32>> = match (&embedder, &vector) {
                (Some(e), Some((_, v))) if !found.is_empty() => {
                    let texts: Vec<&str> = found.iter().map(|c| c.text.as_str()).collect();
                    match e.embed(&texts) {
                        Ok(vs) => vs.iter().map(|o| Some(cosine(v, o))).collect(),
                        Err(_) => vec![None; found.len()],
                    }
                }
                _ => vec![None; found.len()],
            };
            Ok(found
                .into_iter()
                .zip(cosines)
                .map(|(c, cosine)| Offered {
                    id: c.id,
                    text: c.text,
                    cosine,
                })
                .collect())
        })
        .await
        .map_err(|e| Error::Task(e.to_string()))?
    }

    /// Decides what to do with one candidate.
    pub(super) async fn reconcile(&self, new: NewMemory) -> Result<Decision> {
        let offered = self.similar(&new.text).await?;
        if offered.is_empty() {
            return Ok(Decision::Add(new));
        }
        if let Some(o) = offered
            .iter()
            .find(|o| normalize(&o.text) == normalize(&new.text))
        {
            tracing::debug!(id = %o.id, "candidate already stored verbatim");
            return Ok(Decision::Noop);
        }
        // A near-duplicate that agrees merges into the memory already there, without asking
        // the model; one that disagrees (a negation, another number) goes to the model.
        if let Some(o) = offered
            .iter()
            .find(|o| o.cosine.is_some_and(|c| c >= NEAR_DUPLICATE) && agree(&o.text, &new.text))
        {
            tracing::debug!(id = %o.id, "candidate is a near-duplicate that agrees; merged");
            return Ok(Decision::Noop);
        }
        let Some(r) = self
            .ask_about(&offered, &new.text, "Choose the action.")
            .await?
        else {
            return Ok(Decision::Noop);
        };
        let reason = r.reason.clone().unwrap_or_default();
        let action = r.action.to_ascii_uppercase();
        // UPDATE, DELETE and SUPERSEDE name an offered memory; any other id skips the candidate.
        let id = find_offered(&offered, r.id.as_deref()).map(|o| o.id.clone());
        if matches!(action.as_str(), "UPDATE" | "DELETE" | "SUPERSEDE") && id.is_none() {
            tracing::warn!("reconciliation named an id that was not offered; candidate skipped");
            return Ok(Decision::Noop);
        }
        let id = id.unwrap_or_default();
        let decision = match action.as_str() {
            "ADD" => Decision::Add(new.clone()),
            "UPDATE" => Decision::Update {
                id,
                text: r
                    .text
                    .filter(|t| !t.trim().is_empty())
                    .unwrap_or_else(|| new.text.clone()),
                reason,
            },
            "DELETE" | "SUPERSEDE" => Decision::Replace {
                id,
                new: new.clone(),
                reason,
                keep_old: action == "SUPERSEDE",
            },
            "NOOP" => Decision::Noop,
            _ => {
                tracing::warn!("reconciliation chose no known action; candidate skipped");
                return Ok(Decision::Noop);
            }
        };
        // A contradiction never loses the newer fact, whatever the model said.
        if decision == Decision::Noop
            && let Some(o) = offered.iter().find(|o| contradicts(&o.text, &new.text))
        {
            tracing::info!(id = %o.id, "a NOOP would keep a contradicted memory; updating it instead");
            return Ok(Decision::Update {
                id: o.id.clone(),
                text: new.text,
                reason: "the new information contradicts it".into(),
            });
        }
        Ok(decision)
    }

    /// Finds what a "forget that …" refers to among the offered memories.
    pub(super) async fn forget(&self, what: &str) -> Result<Decision> {
        let offered = self.similar(what).await?;
        if offered.is_empty() {
            return Ok(Decision::Noop);
        }
        let Some(r) = self
            .ask_about(
                &offered,
                &format!("The user asked to forget: {what}"),
                "If one EXISTING memory is what the user asked to forget, answer DELETE with its id; otherwise NOOP.",
            )
            .await?
        else {
            return Ok(Decision::Noop);
        };
        if !r.action.eq_ignore_ascii_case("DELETE") {
            return Ok(Decision::Noop);
        }
        match find_offered(&offered, r.id.as_deref()) {
            Some(o) => Ok(Decision::Forget {
                id: o.id.clone(),
                reason: format!("You asked to forget: {what}"),
            }),
            None => {
                tracing::warn!("a forget named an id that was not offered; skipped");
                Ok(Decision::Noop)
            }
        }
    }

    /// Asks the fast model to reconcile `new` with the `offered` memories (listed by id),
    /// ending with `instruction`. `None` when the answer is not JSON of the right shape
    /// (logged, never applied).
    pub(super) async fn ask_about(
        &self,
        offered: &[Offered],
        new: &str,
        instruction: &str,
    ) -> Result<Option<Reconciliation>> {
        let existing: String = offered
            .iter()
            .map(|o| format!("[{}] {}\n", o.id, o.text))
            .collect();
        let prompt = format!("<data>\nEXISTING:\n{existing}NEW: {new}\n</data>\n{instruction}");
        let Some(answer) = self
            .ask(
                RECONCILE_PROMPT,
                prompt,
                ("reconciliation", reconciliation_schema()),
            )
            .await?
        else {
            return Ok(None);
        };
        match serde_json::from_value::<Reconciliation>(answer) {
            Ok(r) => Ok(Some(r)),
            Err(_) => {
                tracing::warn!("a reconciliation answer has the wrong shape; skipped");
                Ok(None)
            }
        }
    }
}
