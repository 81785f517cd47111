//! Durable background jobs: survive crashes and restarts, retried with backoff.
//!
//! A worker claims a job with a lease; a job whose lease ran out (its worker died) is claimed
//! again. Every claim takes a new lease generation: completing, failing, renewing — and,
//! inside the transaction that applies a job's result, [`finish_tx`] — check it, so a worker
//! that lost its lease (it stalled past it and another took the job over) can no longer
//! write anything for that job. Lanes order claims: interactive before memory before ingest.
//! Payloads are JSON and live in the encrypted database like everything else.

use std::time::Duration;

use rusqlite::{OptionalExtension, Row, params};
use serde::Serialize;

use super::Store;
use crate::time::{Millis, now_millis};
use crate::{Error, Result};

/// A job's id.
pub type JobId = i64;

/// Where a job is in its life.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum JobState {
    /// Waiting to run (first time or after a failed attempt).
    Queued,
    /// Claimed by a worker whose lease has not run out.
    Running,
    /// Finished.
    Done,
    /// Gave up after `max_attempts`.
    Failed,
}

impl JobState {
    fn parse(s: &str) -> rusqlite::Result<Self> {
        Ok(match s {
            "queued" => JobState::Queued,
            "running" => JobState::Running,
            "done" => JobState::Done,
            "failed" => JobState::Failed,
            other => {
                return Err(rusqlite::Error::FromSqlConversionFailure(
                    0,
                    rusqlite::types::Type::Text,
                    format!("unknown job state {other}").into(),
                ));
            }
        })
    }
}

/// Which queue a job waits in; a lower lane is claimed first.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum Lane {
    /// A command or the user is waiting for it.
    Interactive = 0,
    /// Learning from conversations, re-embedding memories.
    Memory = 1,
    /// Folder ingestion (tens of thousands of jobs).
    Ingest = 2,
}

impl Lane {
    pub const ALL: [Lane; 3] = [Lane::Interactive, Lane::Memory, Lane::Ingest];

    fn from_i64(n: i64) -> Self {
        match n {
            0 => Lane::Interactive,
            2 => Lane::Ingest,
            _ => Lane::Memory,
        }
    }
}

/// A worker's hold on a job: the job and the lease generation of its claim.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
pub struct Lease {
    pub job: JobId,
    pub generation: i64,
}

/// How many jobs are waiting, running and failed for good (`hearth doctor`).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize)]
pub struct JobCounts {
    pub queued: u32,
    pub running: u32,
    pub failed: u32,
}

/// One durable job.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Job {
    pub id: JobId,
    pub kind: String,
    pub payload: serde_json::Value,
    pub state: JobState,
    pub lane: Lane,
    /// Grows by one at every claim.
    pub lease_generation: i64,
    /// Attempts started so far, including the current one.
    pub attempts: u32,
    pub max_attempts: u32,
    pub last_error: Option<String>,
    pub created_at: Millis,
    pub updated_at: Millis,
}

const COLUMNS: &str = "id, kind, payload, state, attempts, max_attempts, last_error, created_at, \
    updated_at, lane, lease_gen";

fn job_from_row(row: &Row<'_>) -> rusqlite::Result<Job> {
    let payload: String = row.get(2)?;
    Ok(Job {
        id: row.get(0)?,
        kind: row.get(1)?,
        payload: serde_json::from_str(&payload).unwrap_or(serde_json::Value::Null),
        state: JobState::parse(&row.get::<_, String>(3)?)?,
        lane: Lane::from_i64(row.get(9)?),
        lease_generation: row.get(10)?,
        attempts: row.get(4)?,
        max_attempts: row.get(5)?,
        last_error: row.get(6)?,
        created_at: row.get(7)?,
        updated_at: row.get(8)?,
    })
}

impl Job {
    /// The hold this claim gives.
    pub fn lease(&self) -> Lease {
        Lease {
            job: self.id,
            generation: self.lease_generation,
        }
    }
}

/// Inside the transaction that applies a job's result: marks the job done if `lease` still
/// holds it, and returns false otherwise — the caller must then roll back (drop the
/// transaction), so a result is applied at most once. It writes first, taking the write
/// lock, so no other worker can take the job over between the check and the commit.
pub fn finish_tx(tx: &rusqlite::Transaction<'_>, lease: Lease) -> rusqlite::Result<bool> {
    let n = tx.execute(
        "UPDATE jobs SET state = 'done', lease_until = NULL, last_error = NULL, updated_at = ?1
         WHERE id = ?2 AND lease_gen = ?3 AND state = 'running'",
        params![now_millis(), lease.job, lease.generation],
    )?;
    Ok(n == 1)
}

fn ms(d: Duration) -> i64 {
    i64::try_from(d.as_millis()).unwrap_or(i64::MAX)
}

/// The job queue of one store.
#[derive(Clone)]
pub struct Jobs {
    store: Store,
}

impl Jobs {
    pub fn new(store: Store) -> Self {
        Self { store }
    }

    /// Adds a job to run as soon as a worker is free (in the memory lane).
    pub fn enqueue(&self, kind: &str, payload: &serde_json::Value) -> Result<JobId> {
        self.enqueue_in(kind, Lane::Memory, payload)
    }

    /// Adds a job to `lane`.
    pub fn enqueue_in(&self, kind: &str, lane: Lane, payload: &serde_json::Value) -> Result<JobId> {
        let payload = payload.to_string();
        let kind = kind.to_owned();
        self.store.write_blocking(move |c| {
            let now = now_millis();
            c.execute(
                "INSERT INTO jobs (kind, payload, run_after, created_at, updated_at, lane)
                 VALUES (?1, ?2, ?3, ?3, ?3, ?4)",
                params![kind, payload, now, lane as i64],
            )?;
            Ok(c.last_insert_rowid())
        })
    }

    /// Claims the oldest runnable job of one of `kinds` for `lease`.
    pub fn claim(&self, kinds: &[&str], lease: Duration) -> Result<Option<Job>> {
        self.claim_at(kinds, lease, now_millis())
    }

    /// [`Jobs::claim`] as if the time were `now`.
    pub fn claim_at(&self, kinds: &[&str], lease: Duration, now: Millis) -> Result<Option<Job>> {
        self.claim_lane_at(kinds, None, lease, now)
    }

    /// Claims the oldest runnable job of one of `kinds` in `lane` (a worker per lane, so
    /// a long ingest backlog never holds up learning).
    pub fn claim_in(&self, kinds: &[&str], lane: Lane, lease: Duration) -> Result<Option<Job>> {
        self.claim_lane_at(kinds, Some(lane), lease, now_millis())
    }

    fn claim_lane_at(
        &self,
        kinds: &[&str],
        lane: Option<Lane>,
        lease: Duration,
        now: Millis,
    ) -> Result<Option<Job>> {
        if kinds.is_empty() {
            return Ok(None);
        }
        let lane = lane.map(|l| l as i64);
        let kinds_json =
            serde_json::to_string(kinds).map_err(|e| Error::InvalidInput(e.to_string()))?;
        let lease_until = now.saturating_add(ms(lease));
        self.store.write_blocking(move |c| {
            let sql = format!(
                "UPDATE jobs SET state = 'running', attempts = attempts + 1, lease_until = ?2,
                   lease_gen = lease_gen + 1, updated_at = ?1
                 WHERE id = (
                   SELECT id FROM jobs
                   WHERE kind IN (SELECT value FROM json_each(?3)) AND (?4 IS NULL OR lane = ?4)
                     AND ((state = 'queued' AND run_after <= ?1) OR (state = 'running' AND lease_until < ?1))
                   ORDER BY lane, run_after, id LIMIT 1)
                 RETURNING {COLUMNS}"
            );
            c.query_row(&sql, params![now, lease_until, kinds_json, lane], job_from_row)
                .optional()
        })
    }

    /// Claims job `id` if it is runnable now (queued, or running with its lease run out).
    pub fn claim_id(&self, id: JobId, lease: Duration) -> Result<Option<Job>> {
        let now = now_millis();
        let lease_until = now.saturating_add(ms(lease));
        self.store.write_blocking(move |c| {
            let sql = format!(
                "UPDATE jobs SET state = 'running', attempts = attempts + 1, lease_until = ?2,
                   lease_gen = lease_gen + 1, updated_at = ?1
                 WHERE id = ?3 AND ((state = 'queued' AND run_after <= ?1) OR (state = 'running' AND lease_until < ?1))
                 RETURNING {COLUMNS}"
            );
            c.query_row(&sql, params![now, lease_until, id], job_from_row)
                .optional()
        })
    }

    /// Extends the lease of a job still being worked on. False: the lease was lost (run out
    /// and taken over), and the worker must not apply anything.
    pub fn heartbeat(&self, lease: Lease, duration: Duration) -> Result<bool> {
        self.store.write_blocking(move |c| {
            let now = now_millis();
            let n = c.execute(
                "UPDATE jobs SET lease_until = ?2, updated_at = ?1
                 WHERE id = ?3 AND lease_gen = ?4 AND state = 'running'",
                params![
                    now,
                    now.saturating_add(ms(duration)),
                    lease.job,
                    lease.generation
                ],
            )?;
            Ok(n == 1)
        })
    }

    /// Marks a job finished, if `lease` still holds it (false otherwise: another worker
    /// has it now).
    pub fn complete(&self, lease: Lease) -> Result<bool> {
        self.store.write_blocking(move |c| {
            let tx = c.transaction()?;
            let done = finish_tx(&tx, lease)?;
            tx.commit()?;
            Ok(done)
        })
    }

    /// Records a failed attempt, if `lease` still holds the job: queued again after
    /// `retry_in`, or failed for good once its attempts are used up. `error` is a code,
    /// never user content. False if the lease was lost (nothing recorded).
    pub fn fail(&self, lease: Lease, error: &str, retry_in: Duration) -> Result<bool> {
        let error = error.to_owned();
        self.store.write_blocking(move |c| {
            let now = now_millis();
            let n = c.execute(
                "UPDATE jobs SET
                   state = CASE WHEN attempts >= max_attempts THEN 'failed' ELSE 'queued' END,
                   run_after = ?2, lease_until = NULL, last_error = ?3, updated_at = ?1
                 WHERE id = ?4 AND lease_gen = ?5 AND state = 'running'",
                params![
                    now,
                    now.saturating_add(ms(retry_in)),
                    error,
                    lease.job,
                    lease.generation
                ],
            )?;
            Ok(n == 1)
        })
    }

    /// Puts a job that could not run for a reason outside it (a spending cap) back in the
    /// queue for `retry_in`, without using up one of its attempts. False if the lease was
    /// lost.
    pub fn postpone(&self, lease: Lease, error: &str, retry_in: Duration) -> Result<bool> {
        let error = error.to_owned();
        self.store.write_blocking(move |c| {
            let now = now_millis();
            let n = c.execute(
                "UPDATE jobs SET state = 'queued', attempts = MAX(attempts - 1, 0),
                   run_after = ?2, lease_until = NULL, last_error = ?3, updated_at = ?1
                 WHERE id = ?4 AND lease_gen = ?5 AND state = 'running'",
                params![
                    now,
                    now.saturating_add(ms(retry_in)),
                    error,
                    lease.job,
                    lease.generation
                ],
            )?;
            Ok(n == 1)
        })
    }

    /// Jobs waiting, running (lease not run out) and failed for good.
    pub fn counts(&self) -> Result<JobCounts> {
        self.store.read_blocking(|c| {
            c.query_row(
                "SELECT count(*) FILTER (WHERE state = 'queued' OR (state = 'running' AND lease_until < ?1)),
                        count(*) FILTER (WHERE state = 'running' AND lease_until >= ?1),
                        count(*) FILTER (WHERE state = 'failed')
                   FROM jobs",
                [now_millis()],
                |r| {
                    Ok(JobCounts {
                        queued: r.get(0)?,
                        running: r.get(1)?,
                        failed: r.get(2)?,
                    })
                },
            )
        })
    }

    /// Jobs that failed for good, newest first, with their error codes.
    pub fn failed(&self) -> Result<Vec<Job>> {
        self.store.read_blocking(|c| {
            let mut stmt = c.prepare(&format!(
                "SELECT {COLUMNS} FROM jobs WHERE state = 'failed' ORDER BY updated_at DESC, id DESC LIMIT 100"
            ))?;
            let rows = stmt.query_map([], job_from_row)?;
            rows.collect()
        })
    }

    /// One job by id.
    pub fn get(&self, id: JobId) -> Result<Option<Job>> {
        self.store.read_blocking(move |c| {
            c.query_row(
                &format!("SELECT {COLUMNS} FROM jobs WHERE id = ?1"),
                [id],
                job_from_row,
            )
            .optional()
        })
    }
}
