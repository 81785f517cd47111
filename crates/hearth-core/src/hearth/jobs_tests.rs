//! The job runner against a real store and a scripted model server on 127.0.0.1.

use std::sync::{Arc, Mutex};

use hearth_testkit::llm_server::{LlmServer, Reply, stream, text_stream};
use serde_json::{Value, json};
use tokio_util::sync::CancellationToken;

use super::*;
use crate::chat::{ChatOptions, ModelSlots, Redo};
use crate::llm::{Protocol, Provider};
use crate::store::jobs::JobState;
use crate::store::{OpenOptions, Store};
use crate::{DataDir, KeyBackend};

fn options(root: &std::path::Path) -> OpenOptions {
    let mut opts = OpenOptions::new(DataDir::new(root.join("d")));
    opts.new_key_backend = KeyBackend::File;
    opts
}

fn model(server: &LlmServer) -> ChatModel {
    ChatModel {
        provider: Provider {
            name: "scripted".into(),
            protocol: Protocol::OpenAiCompatible,
            base_url: server.base_url.clone(),
            api_key: None,
            launch: None,
        },
        model: "gpt-4o-mini".into(),
        context_window: None,
    }
}

fn answer(text: &str) -> Reply {
    stream(text_stream(&[text], None))
}

fn is_extraction(body: &Value) -> bool {
    body["response_format"]["json_schema"]["name"] == "memory_extraction"
}

async fn one_turn(hearth: &Hearth, fast: &ChatModel, text: &str) -> JobId {
    let outcome = hearth
        .chat(
            &ModelSlots::single(fast.clone()),
            ChatOptions {
                conversation: None,
                message: text.into(),
                temporary: false,
                redo: Redo::No,
                ..Default::default()
            },
            &CancellationToken::new(),
            |_| {},
        )
        .await
        .expect("turn");
    outcome.learn_job.expect("a learning job")
}

fn memory_rows(store: &Store) -> (i64, i64) {
    store
        .read_blocking(|c| {
            Ok((
                c.query_row("SELECT count(*) FROM memories", [], |r| r.get(0))?,
                c.query_row(
                    "SELECT count(*) FROM memory_history WHERE op = 'add'",
                    [],
                    |r| r.get(0),
                )?,
            ))
        })
        .expect("counts")
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_worker_whose_lease_was_taken_over_while_the_model_answered_cannot_apply() {
    let tmp = tempfile::tempdir().expect("tempdir");
    let opts = options(tmp.path());
    let hearth = Hearth::open_oneshot(&opts).expect("open");
    // While the first worker waits for the model, another process takes the job over
    // (its lease ran out): the takeover's lease is kept for later.
    let takeover: Arc<Mutex<Option<Lease>>> = Arc::default();
    let (taken, takeover_opts) = (takeover.clone(), opts.clone());
    let script = Reply::Dynamic(Arc::new(move |body: &Value| {
        if is_extraction(body) {
            let mut t = taken.lock().expect("lock");
            if t.is_none() {
                let other = Store::open(&takeover_opts).expect("second process's store");
                let later = crate::time::now_millis() + 10 * 60_000;
                let job = other
                    .jobs()
                    .claim_at(&[LEARN_JOB], Duration::from_secs(60), later)
                    .expect("claim")
                    .expect("the stalled worker's job is handed out again");
                *t = Some(job.lease());
            }
            let mem = json!({"memories": [{"text": "User keeps bees.", "kind": "fact", "subject": null,
                "importance": 0.6, "critical": false, "event_date": null}], "forget": []});
            answer(&mem.to_string())
        } else {
            answer("Bees are wonderful.")
        }
    }));
    let server = LlmServer::start(vec![script; 8]).await;
    let fast = model(&server);
    let job = one_turn(&hearth, &fast, "I keep bees in my garden.").await;

    let runner = hearth.jobs().with_fast_model(fast.clone());
    let stalled = runner.run_job(job).await;
    assert!(matches!(stalled, Err(Error::LeaseLost)), "{stalled:?}");
    let store = hearth.inner.store.clone();
    assert_eq!(
        memory_rows(&store),
        (0, 0),
        "nothing of the stalled worker was applied"
    );
    let row = store.jobs().get(job).expect("get").expect("job");
    assert_eq!(
        row.state,
        JobState::Running,
        "the job is the other worker's now"
    );

    // The worker that holds the job applies it, once.
    let lease = takeover.lock().expect("lock").expect("taken over");
    let learner = Learner {
        memories: crate::memory::Memories::new(store.clone()),
        client: hearth.inner.llm.clone(),
        fast,
        embedder: None,
    };
    let exchange: Exchange = serde_json::from_value(row.payload).expect("payload");
    let changes = learner.learn(&exchange, Some(lease)).await.expect("learn");
    assert_eq!(changes.len(), 1);
    assert_eq!(memory_rows(&store), (1, 1));
    assert_eq!(
        store.jobs().get(job).expect("get").expect("job").state,
        JobState::Done
    );
    // And a second try with the same lease applies nothing more.
    assert!(matches!(
        learner.learn(&exchange, Some(lease)).await,
        Err(Error::LeaseLost)
    ));
    assert_eq!(memory_rows(&store), (1, 1));
}

struct Panics;

impl JobHandler for Panics {
    fn lane(&self) -> Lane {
        Lane::Memory
    }

    fn run(&self, _ctx: JobContext) -> BoxFuture<'static, Result<Outcome>> {
        Box::pin(async { panic!("a bug in a job") })
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_job_that_panics_every_time_ends_failed_with_its_code_not_in_a_loop() {
    let tmp = tempfile::tempdir().expect("tempdir");
    let hearth = Hearth::open_oneshot(&options(tmp.path())).expect("open");
    let id = hearth
        .inner
        .store
        .jobs()
        .enqueue("test_panics", &json!({}))
        .expect("enqueue");
    let runner = hearth
        .jobs()
        .with_handler("test_panics", Arc::new(Panics))
        .with_policy(RunPolicy {
            retry_base: Duration::ZERO,
            ..RunPolicy::default()
        });
    let ran = runner.run_until_idle().await.expect("run");
    let job = hearth
        .inner
        .store
        .jobs()
        .get(id)
        .expect("get")
        .expect("job");
    assert_eq!(job.state, JobState::Failed);
    assert_eq!(job.attempts, job.max_attempts);
    assert_eq!(
        ran, job.max_attempts as usize,
        "one run per attempt, then it stops"
    );
    assert_eq!(job.last_error.as_deref(), Some("panicked"));
    let status = hearth.status_blocking().expect("status");
    assert_eq!(status.jobs.failed, 1);
    assert_eq!(status.failed_jobs[0].code.as_deref(), Some("panicked"));
    assert!(runner.run_until_idle().await.expect("run again") == 0);
}

#[test]
fn retries_back_off_exponentially_up_to_a_cap() {
    let p = RunPolicy::default();
    assert_eq!(p.retry_in(1), Duration::from_secs(30));
    assert_eq!(p.retry_in(2), Duration::from_secs(60));
    assert_eq!(p.retry_in(4), Duration::from_secs(240));
    assert_eq!(p.retry_in(40), Duration::from_secs(3600));
}
