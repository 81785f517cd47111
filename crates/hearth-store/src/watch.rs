//! Notices commits from any connection or process by polling `PRAGMA data_version`.

use std::sync::mpsc;
use std::thread::JoinHandle;
use std::time::Duration;

use rusqlite::Connection;

/// Stops the watcher thread when dropped.
pub struct ChangeWatcher {
    stop: Option<mpsc::Sender<()>>,
    thread: Option<JoinHandle<()>>,
}

impl ChangeWatcher {
    /// Polls `conn` every `interval` and calls `on_change` after each change.
    pub fn spawn(
        conn: Connection,
        interval: Duration,
        on_change: impl Fn() + Send + 'static,
    ) -> std::io::Result<Self> {
        let (stop, stopped) = mpsc::channel::<()>();
        let thread = std::thread::Builder::new()
            .name("hearth-store-watch".into())
            .spawn(move || {
                let read =
                    |c: &Connection| c.query_row("PRAGMA data_version", [], |r| r.get::<_, i64>(0));
                let Ok(mut last) = read(&conn) else { return };
                // recv_timeout doubles as the sleep; a dropped sender ends the loop at once.
                while let Err(mpsc::RecvTimeoutError::Timeout) = stopped.recv_timeout(interval) {
                    match read(&conn) {
                        Ok(v) if v != last => {
                            last = v;
                            on_change();
                        }
                        Ok(_) => {}
                        Err(e) => tracing::debug!(error = %e, "data_version poll failed"),
                    }
                }
            })?;
        Ok(Self {
            stop: Some(stop),
            thread: Some(thread),
        })
    }
}

impl Drop for ChangeWatcher {
    fn drop(&mut self) {
        drop(self.stop.take());
        if let Some(t) = self.thread.take() {
            let _ = t.join();
        }
    }
}
