//! Durable jobs: what a worker started is finished even if the worker is killed.

mod common;

use std::io::{BufRead, BufReader, Write};
use std::process::{Command, Stdio};
use std::time::Duration;

use common::*;
use hearth_core::KeyBackend;
use hearth_core::store::Store;
use hearth_core::store::jobs::JobState;
use hearth_core::time::now_millis;

const CHILD_ENV: &str = "HEARTH_TEST_JOB_CHILD_DIR";
const LEASE: Duration = Duration::from_secs(60);

#[test]
fn a_failed_job_is_retried_then_given_up() {
    let tmp = tempfile::tempdir().expect("tempdir");
    let store = Store::open(&options(tmp.path(), KeyBackend::File)).expect("open");
    let jobs = store.jobs();
    let id = jobs
        .enqueue("extract", &serde_json::json!({"n": 1}))
        .expect("enqueue");
    assert!(
        jobs.claim(&["other"], LEASE).expect("claim").is_none(),
        "wrong kind is not claimed"
    );
    for attempt in 1..=5u32 {
        let job = jobs
            .claim_at(
                &["extract"],
                LEASE,
                now_millis() + i64::from(attempt) * 1_000_000,
            )
            .expect("claim")
            .expect("job is runnable");
        assert_eq!((job.id, job.attempts), (id, attempt));
        assert!(
            jobs.fail(job.lease(), "provider unreachable", Duration::from_secs(30))
                .expect("fail")
        );
    }
    let job = jobs.get(id).expect("get").expect("exists");
    assert_eq!(job.state, JobState::Failed);
    assert_eq!(job.last_error.as_deref(), Some("provider unreachable"));
    assert!(
        jobs.claim_at(&["extract"], LEASE, now_millis() + 10_000_000_000)
            .expect("claim")
            .is_none()
    );
}

#[test]
fn a_job_claimed_by_a_killed_worker_runs_again() {
    if let Ok(root) = std::env::var(CHILD_ENV) {
        // Child: claim the job, say so, then wait to be killed.
        let store =
            Store::open(&options(std::path::Path::new(&root), KeyBackend::File)).expect("open");
        let job = store
            .jobs()
            .claim(&["ingest"], LEASE)
            .expect("claim")
            .expect("a job");
        // Straight to the pipe: the test harness captures println!.
        let mut out = std::io::stdout().lock();
        writeln!(out, "\nclaimed {}", job.id).expect("report");
        out.flush().expect("flush");
        std::thread::sleep(Duration::from_secs(600));
        return;
    }
    let tmp = tempfile::tempdir().expect("tempdir");
    let opts = options(tmp.path(), KeyBackend::File);
    let id = {
        let store = Store::open(&opts).expect("open");
        store
            .jobs()
            .enqueue("ingest", &serde_json::json!({"path": "notes.md"}))
            .expect("enqueue")
    };
    let mut child = Command::new(std::env::current_exe().expect("exe"))
        .args([
            "--exact",
            "a_job_claimed_by_a_killed_worker_runs_again",
            "--nocapture",
            "--test-threads=1",
        ])
        .env(CHILD_ENV, tmp.path())
        .stdout(Stdio::piped())
        .spawn()
        .expect("spawn worker");
    let stdout = child.stdout.take().expect("stdout");
    let claimed = BufReader::new(stdout)
        .lines()
        .map_while(Result::ok)
        .find(|l| l.starts_with("claimed "))
        .expect("worker claimed the job");
    assert_eq!(claimed.trim(), format!("claimed {id}"));
    child.kill().expect("kill worker");
    child.wait().expect("reap worker");

    let store = Store::open(&opts).expect("reopen");
    let jobs = store.jobs();
    let job = jobs.get(id).expect("get").expect("job survived");
    assert_eq!(
        job.state,
        JobState::Running,
        "still marked as running by the dead worker"
    );
    assert!(
        jobs.claim(&["ingest"], LEASE).expect("claim").is_none(),
        "lease still held"
    );
    // Once the dead worker's lease runs out, the job is handed out again, payload intact.
    let again = jobs
        .claim_at(&["ingest"], LEASE, now_millis() + 2 * 60_000)
        .expect("claim")
        .expect("reclaimed");
    assert_eq!((again.id, again.attempts), (id, 2));
    assert_eq!(again.payload, serde_json::json!({"path": "notes.md"}));
    assert_eq!(again.lease_generation, 2, "a new claim, a new lease");
    // The dead worker's lease no longer counts: were it to wake, it could not finish,
    // fail or renew the job.
    let stale = hearth_core::store::jobs::Lease {
        job: id,
        generation: 1,
    };
    assert!(!jobs.complete(stale).expect("complete"));
    assert!(!jobs.fail(stale, "late", Duration::ZERO).expect("fail"));
    assert!(!jobs.heartbeat(stale, LEASE).expect("renew"));
    assert_eq!(
        jobs.get(id).expect("get").expect("job").state,
        JobState::Running
    );
    assert!(jobs.complete(again.lease()).expect("complete"));
    assert_eq!(
        jobs.get(id).expect("get").expect("job").state,
        JobState::Done
    );
}
