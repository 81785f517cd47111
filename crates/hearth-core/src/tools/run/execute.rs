//! Running a call the gate let through: its time limit, the user's stop, retries of a
//! read that failed for a system reason.

use super::*;

/// Attempts of a read call that failed for a system reason (retried with backoff; a
/// write never is: it could apply twice, or run without fresh consent).
const READ_ATTEMPTS: u32 = 3;

/// Runs a call the gate let through, within its time limit, stopped by the user's cancel;
/// `None` when it did not finish (the record says why).
pub(super) async fn execute(
    mut ready: Ready,
    settings: &ToolSettings,
    cancel: &CancellationToken,
) -> (Ready, Option<Output>) {
    let name = ready.tool.name().to_owned();
    let read = ready.tool.risk() == Risk::Read;
    let mut attempt = 0;
    loop {
        attempt += 1;
        if cancel.is_cancelled() {
            ready.record.result_status = ResultStatus::Cancelled;
            ready.record.observation = "The call was not run: the user stopped the turn.".into();
            return (ready, None);
        }
        let run: std::pin::Pin<Box<dyn std::future::Future<Output = Option<Output>> + Send>> =
            match (&ready.tool, &ready.action) {
                (Callable::BuiltIn(_), Some(action)) => {
                    let (action, env, stop) = (action.clone(), ready.env.clone(), cancel.clone());
                    Box::pin(async move {
                        tokio::task::spawn_blocking(move || action.execute(&env, &stop))
                            .await
                            .ok()
                    })
                }
                // Dropped on a stop or a timeout: the tool's own drop ends what it started.
                (Callable::External(x), _) => {
                    let call = x.call(ready.arguments.clone());
                    Box::pin(async move {
                        let out = call.await;
                        // What an external tool says is outside text, whatever it claims.
                        Some(Output {
                            ok: out.ok,
                            transient: out.transient,
                            ..Output::outside(out.text)
                        })
                    })
                }
                (Callable::BuiltIn(_), None) => Box::pin(async { None }),
            };
        let run = {
            use tracing::Instrument;
            run.instrument(tracing::info_span!("tool_call", tool = %name, attempt))
        };
        let output = tokio::select! {
            r = run => r,
            _ = tokio::time::sleep(settings.call_timeout) => {
                ready.record.result_status = ResultStatus::Timeout;
                ready.record.observation = format!(
                    "Error: {name} did not finish within {} s and was abandoned.{}",
                    settings.call_timeout.as_secs_f64(),
                    if read {
                        ""
                    } else {
                        " It may still complete: check its result before trying again."
                    }
                );
                return (ready, None);
            }
            _ = cancel.cancelled() => {
                ready.record.result_status = ResultStatus::Cancelled;
                ready.record.observation = "The call was stopped: the user stopped the turn.".into();
                return (ready, None);
            }
        };
        match output {
            Some(o) if o.transient && read && attempt < READ_ATTEMPTS => {
                tracing::info!(tool = %name, attempt, "retrying a read after a system error");
                tokio::time::sleep(Duration::from_millis(50 * 4u64.pow(attempt - 1))).await;
            }
            Some(o) => return (ready, Some(o)),
            None => {
                ready.record.result_status = ResultStatus::Error;
                ready.record.observation = format!("Error: {name} failed unexpectedly.");
                return (ready, None);
            }
        }
    }
}
