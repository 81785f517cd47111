//! The last stage: the answer's final write (a failed redo puts everything back), its
//! ledger row, and — for a saved exchange with text, learning on — the durable job that
//! learns from it (000:2608).

use super::prepare::Prepared;
use super::stream::{Rows, Streamed};
use super::{ChatOptions, TurnContext, TurnInfo, TurnOutcome};
use crate::conversations::MessageState;
use crate::usage::{self, Call};
use crate::{Error, Result};

pub(super) fn finish(
    ctx: &TurnContext<'_>,
    opts: &ChatOptions,
    turn: &Prepared,
    rows: Rows,
    streamed: Streamed<'_>,
) -> Result<TurnOutcome> {
    let Streamed {
        result,
        model,
        encoding,
        zones,
        cited,
        fallback_from,
        checkpoints,
        tool_calls,
        capped,
        timed_out,
        tools_left_out,
        reservations,
        over_budget,
        cached,
        cached_from,
    } = streamed;
    let convs = &turn.convs;
    let latency_ms = turn.started.elapsed().as_millis() as i64;
    let (state, text, usage, outcome) = match &result {
        Ok(done) if done.stopped => (
            MessageState::Stopped,
            done.text.clone(),
            done.usage,
            "stopped".to_owned(),
        ),
        Ok(done) => (
            MessageState::Complete,
            done.text.clone(),
            done.usage,
            "ok".to_owned(),
        ),
        // Text had reached the user when the call failed: kept, marked interrupted.
        Err(e) => match e.partial() {
            Some(partial) => (
                MessageState::Interrupted,
                partial.text.clone(),
                partial.usage,
                e.code().to_owned(),
            ),
            None => (
                MessageState::Failed,
                String::new(),
                None,
                e.code().to_owned(),
            ),
        },
    };
    let slot = if fallback_from.is_some() {
        "fallback"
    } else {
        "main"
    };
    let stop_reason = match &result {
        Ok(done) if done.stopped => super::StopReason::Cancelled,
        _ if over_budget => super::StopReason::Budget,
        _ if timed_out => super::StopReason::Timeout,
        _ if capped => super::StopReason::Cap,
        _ => super::StopReason::Answer,
    };
    let cost_usd = usage.and_then(|u| turn.models.cost(&model.provider.base_url, &model.model, u));
    let info = TurnInfo {
        provider: model.provider.name.clone(),
        model: model.model.clone(),
        usage: usage.unwrap_or_default(),
        cost_usd,
        zones,
        fallback_from: fallback_from.as_ref().map(|f| f.0.clone()),
        fallback_reason: fallback_from.as_ref().map(|f| f.1.clone()),
        tools_left_out: tools_left_out.clone(),
        stop_reason: serde_json::to_value(stop_reason)
            .ok()
            .and_then(|v| v.as_str().map(str::to_owned)),
        route: ctx.route.clone(),
        first_answer: ctx.first_answer.clone(),
        over_budget: opts.over_budget,
        cached,
        cached_from: cached_from.clone(),
    };
    // The answer row stays unless a failed redo takes it away again.
    let mut kept = rows.answer_id;
    if let Some(id) = rows.answer_id {
        let replaced = !text.is_empty() || state == MessageState::Complete;
        match (&turn.redo, replaced) {
            // The new answer stands: the answers it replaces go.
            (Some((user_id, _)), true) => convs.delete_between(*user_id, id)?,
            // A failed redo changes nothing: the old text and answer come back.
            (Some(_), false) => {
                convs.delete_message(id)?;
                kept = None;
                turn.undo_edit(opts, encoding)?;
            }
            (None, _) => {}
        }
        if kept.is_some() {
            convs.update(id, &text, encoding, state)?;
            convs.set_turn_info(id, &info)?;
            crate::folders::cite::record(ctx.store, id, &cited)?;
        }
    }
    checkpoints.finish();
    // A cached answer called no model: nothing for the ledger.
    if !cached {
        usage::record(
        ctx.store,
        &turn.models,
        Call {
            conversation: turn.conversation.as_deref(),
            message: kept,
            slot,
            model,
            usage: usage.unwrap_or_default(),
            latency_ms,
            outcome: &outcome,
        },
        )?;
    }
    // The ledger has the calls' cost now: their reservations go.
    crate::budget::release(ctx.store, reservations)?;
    let budget = crate::budget::notice(ctx.store, &model.provider.name)?;
    let done = result?;
    let cut_off = matches!(
        done.finish_reason.as_deref(),
        Some("length" | "max_tokens")
    );
    let learn_job = match (&turn.conversation, rows.user_id, kept) {
        (Some(c), Some(u), Some(a)) if !text.trim().is_empty() => {
            let settings = crate::memory::settings(ctx.store)?;
            if settings.enabled && !settings.extraction_paused {
                let exchange = crate::learn::Exchange {
                    conversation: c.clone(),
                    user_message: u,
                    answer_message: a,
                };
                let payload = serde_json::to_value(&exchange)
                    .map_err(|e| Error::InvalidInput(e.to_string()))?;
                Some(
                    ctx.store
                        .jobs()
                        .enqueue(crate::learn::JOB_KIND, &payload)?,
                )
            } else {
                None
            }
        }
        _ => None,
    };
    let sources = match kept {
        Some(id) if !cited.is_empty() => crate::folders::cite::sources(ctx.store, id)?,
        _ => Vec::new(),
    };
    Ok(TurnOutcome {
        tool_calls,
        tools_left_out,
        tools_unavailable: Vec::new(),
        stop_reason,
        learn_job,
        sources,
        conversation: turn.conversation.clone(),
        message_id: kept,
        answer: done.text,
        usage: done.usage,
        stopped: done.stopped,
        zones,
        cost_usd,
        provider: info.provider,
        model: info.model,
        fallback_from: info.fallback_from,
        route: info.route,
        first_answer: info.first_answer,
        cut_off,
        budget,
        over_budget: info.over_budget,
        cached,
        cached_from,
    })
}
