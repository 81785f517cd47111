//! The agent loop's two types: a [`ToolStep`] (the calls of one model reply in, the
//! observations the model reads next out, the gate inside) and a [`RunBudget`] (what a run
//! may spend on tools before the model must answer).

use std::time::{Duration, Instant};

use tokio_util::sync::CancellationToken;

use super::TurnEvent;
use crate::Result;
use crate::tools::CallRecord;
use crate::tools::gate::ToolSettings;
use crate::tools::run::ToolRun;
use crate::types::{Message, Role, ToolCall};

/// One step of a run: the tool calls of one model reply, each through the gate, in order.
/// The reads of a step run side by side; a write or destructive call runs alone, never
/// batched. Each call is saved and told to the front end as it starts and ends.
pub(super) struct ToolStep<'s> {
    pub tools: &'s mut ToolRun,
    /// The answer the calls belong to (`None`: a temporary chat).
    pub answer_id: Option<i64>,
    pub cancel: &'s CancellationToken,
}

impl ToolStep<'_> {
    /// Runs the calls the model `asked` for (a `call_tool` as the call it names), appends
    /// each record to `records`, and returns the observations in call order.
    pub async fn run(
        &mut self,
        asked: &[ToolCall],
        records: &mut Vec<CallRecord>,
        on_event: &mut (impl FnMut(TurnEvent<'_>) + Send),
    ) -> Result<Vec<Message>> {
        let calls: Vec<ToolCall> = asked.iter().map(|c| self.tools.resolve(c)).collect();
        tracing::info!(state = "tool_dispatch", calls = calls.len());
        let mut observations = Vec::with_capacity(calls.len());
        let mut i = 0;
        while i < calls.len() {
            let mut j = i + 1;
            if self.tools.is_read(&calls[i]) {
                while j < calls.len() && self.tools.is_read(&calls[j]) {
                    j += 1;
                }
            }
            for call in &calls[i..j] {
                on_event(TurnEvent::ToolStarted {
                    id: &call.id,
                    tool: &call.name,
                });
            }
            let done = if j - i > 1 {
                self.tools.handle_reads(&calls[i..j], self.cancel).await
            } else {
                vec![self.tools.handle(&calls[i], self.cancel).await]
            };
            for (call, record) in calls[i..j].iter().zip(done) {
                tracing::info!(
                    tool = %record.tool,
                    decision = ?record.decision,
                    decided_by = ?record.decided_by,
                    status = ?record.result_status,
                    "tool call"
                );
                self.tools
                    .save(self.answer_id, records.len(), &record)
                    .await?;
                crate::failpoint::hit("tool_saved");
                on_event(TurnEvent::ToolEnded(&record));
                observations.push(Message {
                    role: Role::Tool,
                    content: record.observation.clone(),
                    tool_calls: Vec::new(),
                    tool_call_id: Some(call.id.clone()),
                });
                records.push(record);
            }
            i = j;
        }
        Ok(observations)
    }
}

/// Why a run must answer now.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum Spent {
    /// Its time (less the time the user took to answer) is up.
    Time,
    /// The iteration cap.
    Iterations,
    /// The token or cost cap.
    Budget,
}

impl Spent {
    /// What the model is told, as the last user message of the forced answer.
    pub fn note(self) -> &'static str {
        match self {
            Spent::Time => {
                "The time for tool calls in this turn is up. Answer now with what you have, and say what is left undone."
            }
            Spent::Iterations => {
                "The limit of tool calls for this turn is reached. Answer now with what you have, and say what is left undone."
            }
            Spent::Budget => {
                "The token and cost budget for tool calls in this turn is used up. Answer now with what you have, and say what is left undone."
            }
        }
    }
}

/// What a run has spent on tools, against the caps of its [`ToolSettings`]: model calls
/// that asked for tools, time, tokens and cost.
pub(super) struct RunBudget {
    started: Instant,
    /// Model calls that asked for tools so far.
    pub iterations: usize,
}

impl RunBudget {
    pub fn start() -> Self {
        Self {
            started: Instant::now(),
            iterations: 0,
        }
    }

    /// After a step: whether a cap is reached, given the time the user spent answering
    /// questions (not counted), and the tokens and cost of the run's model calls so far.
    pub fn spent(
        &self,
        caps: &ToolSettings,
        consent_wait: Duration,
        tokens: u64,
        cost_usd: f64,
    ) -> Option<Spent> {
        let time = self.started.elapsed().saturating_sub(consent_wait);
        if time >= caps.run_timeout {
            Some(Spent::Time)
        } else if self.iterations >= caps.max_iterations {
            Some(Spent::Iterations)
        } else if tokens >= caps.max_run_tokens || cost_usd >= caps.max_run_cost_usd {
            Some(Spent::Budget)
        } else {
            None
        }
    }
}

#[cfg(test)]
mod tests {
    use super::{RunBudget, Spent};
    use crate::tools::gate::ToolSettings;
    use std::time::Duration;

    #[test]
    fn a_run_answers_at_the_first_cap_it_reaches_and_waiting_for_the_user_is_not_counted() {
        let caps = ToolSettings {
            max_iterations: 3,
            run_timeout: Duration::from_secs(60),
            max_run_tokens: 1_000,
            max_run_cost_usd: 0.5,
            ..ToolSettings::off()
        };
        let mut budget = RunBudget::start();
        budget.iterations = 2;
        assert_eq!(budget.spent(&caps, Duration::ZERO, 10, 0.0), None);
        assert_eq!(
            budget.spent(&caps, Duration::ZERO, 1_000, 0.0),
            Some(Spent::Budget)
        );
        assert_eq!(
            budget.spent(&caps, Duration::ZERO, 0, 0.5),
            Some(Spent::Budget)
        );
        budget.iterations = 3;
        assert_eq!(
            budget.spent(&caps, Duration::ZERO, 0, 0.0),
            Some(Spent::Iterations)
        );
        let slow = ToolSettings {
            run_timeout: Duration::ZERO,
            ..caps.clone()
        };
        assert_eq!(
            budget.spent(&slow, Duration::ZERO, 0, 0.0),
            Some(Spent::Time)
        );
        // An hour spent answering questions leaves the run's own time untouched.
        let hour = ToolSettings {
            run_timeout: Duration::from_secs(1),
            ..caps
        };
        assert_ne!(
            RunBudget::start().spent(&hour, Duration::from_secs(3600), 0, 0.0),
            Some(Spent::Time)
        );
    }
}
