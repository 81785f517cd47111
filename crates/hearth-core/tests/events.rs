//! Changes made elsewhere reach the app as `StoreChanged` events.

mod common;

use std::time::Duration;

use common::*;
use hearth_core::{Event, Hearth, KeyBackend};

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_change_by_another_connection_is_announced() {
    let tmp = tempfile::tempdir().expect("tempdir");
    let opts = options(tmp.path(), KeyBackend::File);
    let app = Hearth::open(&opts).expect("app");
    let mut events = app.subscribe();
    // Another process would be the CLI; another connection behaves the same for SQLite.
    let cli = Hearth::open_oneshot(&opts).expect("cli");
    cli.store()
        .jobs()
        .enqueue("reembed", &serde_json::json!({}))
        .expect("enqueue");
    let event = tokio::time::timeout(Duration::from_secs(30), events.recv())
        .await
        .expect("an event arrives")
        .expect("channel open");
    assert_eq!(event, Event::StoreChanged);
}
