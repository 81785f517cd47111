//! Background work on the built-in model (learning from an exchange) gives way to the
//! user's turns: the worker runs one request at a time, so an extraction in progress would
//! delay the answer the user is waiting for. Background calls wait until no turn on the
//! built-in model runs, and one that a turn interrupts is dropped (the worker stops at its
//! next token) and started again once the turn is over.

use std::future::Future;
use std::sync::LazyLock;

use tokio::sync::watch;

/// How many of the user's turns on the built-in model run now.
static TURNS: LazyLock<watch::Sender<usize>> = LazyLock::new(|| watch::channel(0).0);

/// A user's turn on the built-in model, for as long as it is held.
pub struct UserTurn(());

impl UserTurn {
    pub fn begin() -> Self {
        TURNS.send_modify(|n| *n += 1);
        Self(())
    }
}

impl Drop for UserTurn {
    fn drop(&mut self) {
        TURNS.send_modify(|n| *n = n.saturating_sub(1));
    }
}

/// Runs the background call `make()` when no user turn runs; when one starts meanwhile,
/// the call is dropped and made again after it.
pub async fn behind_user_turns<T, F, Fut>(mut make: F) -> T
where
    F: FnMut() -> Fut,
    Fut: Future<Output = T>,
{
    let mut turns = TURNS.subscribe();
    loop {
        // The sender lives as long as the process: these waits end only by the count.
        let _ = turns.wait_for(|n| *n == 0).await;
        tokio::select! {
            out = make() => return out,
            _ = turns.wait_for(|n| *n > 0) => {
                tracing::info!("background work on the built-in model gives way to a turn");
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::sync::Arc;
    use std::sync::atomic::{AtomicUsize, Ordering};
    use std::time::Duration;

    #[tokio::test]
    async fn background_work_waits_for_a_turn_and_starts_again_after_one_interrupts_it() {
        let attempts = Arc::new(AtomicUsize::new(0));
        let turn = UserTurn::begin();
        let counted = attempts.clone();
        let work = tokio::spawn(behind_user_turns(move || {
            let counted = counted.clone();
            async move {
                let n = counted.fetch_add(1, Ordering::SeqCst) + 1;
                tokio::time::sleep(Duration::from_millis(300)).await;
                n
            }
        }));
        tokio::time::sleep(Duration::from_millis(50)).await;
        assert_eq!(attempts.load(Ordering::SeqCst), 0, "it waits while a turn runs");
        drop(turn);
        // It starts; a turn begins during it: that attempt is dropped.
        while attempts.load(Ordering::SeqCst) == 0 {
            tokio::task::yield_now().await;
        }
        let turn = UserTurn::begin();
        tokio::time::sleep(Duration::from_millis(400)).await;
        assert!(!work.is_finished(), "the interrupted attempt did not finish");
        assert_eq!(attempts.load(Ordering::SeqCst), 1);
        drop(turn);
        assert_eq!(work.await.expect("join"), 2, "made again after the turn");
    }
}
