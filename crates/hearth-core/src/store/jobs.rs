//! Durable background jobs: survive crashes and restarts, retried with backoff.
//!
//! A worker claims a job with a lease; a job whose lease ran out (its worker died) is claimed
//! again. Payloads are JSON and live in the encrypted database like everything else.

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

/// One durable job.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Job {
    pub id: JobId,
    pub kind: String,
    pub payload: serde_json::Value,
    pub state: JobState,
    /// Attempts started so far, including the current one.
    pub attempts: u32,
    pub max_attempts: u32,
    pub last_error: Option<String>,
    pub created_at: Millis,
    pub updated_at: Millis,
}

const COLUMNS: &str =
    "id, kind, payload, state, attempts, max_attempts, last_error, created_at, updated_at";

fn job_from_row(row: &Row<'_>) -> rusqlite::Result<Job> {
    let payload: String = row.get(2)?;
    Ok(Job {
        id: row.get(0)?,
        kind: row.get(1)?,
        payload: serde_json::from_str(&payload).unwrap_or(serde_json::Value::Null),
        state: JobState::parse(&row.get::<_, String>(3)?)?,
        attempts: row.get(4)?,
        max_attempts: row.get(5)?,
        last_error: row.get(6)?,
        created_at: row.get(7)?,
        updated_at: row.get(8)?,
    })
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
    pub(crate) fn new(store: Store) -> Self {
        Self { store }
    }

    /// Adds a job to run as soon as a worker is free.
    pub fn enqueue(&self, kind: &str, payload: &serde_json::Value) -> Result<JobId> {
        let payload = payload.to_string();
        let kind = kind.to_owned();
        self.store.write_blocking(move |c| {
            let now = now_millis();
            c.execute(
                "INSERT INTO jobs (kind, payload, run_after, created_at, updated_at) VALUES (?1, ?2, ?3, ?3, ?3)",
                params![kind, payload, now],
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
        if kinds.is_empty() {
            return Ok(None);
        }
        let kinds_json =
            serde_json::to_string(kinds).map_err(|e| Error::InvalidInput(e.to_string()))?;
        let lease_until = now.saturating_add(ms(lease));
        self.store.write_blocking(move |c| {
            let sql = format!(
                "UPDATE jobs SET state = 'running', attempts = attempts + 1, lease_until = ?2, updated_at = ?1
                 WHERE id = (
                   SELECT id FROM jobs
                   WHERE kind IN (SELECT value FROM json_each(?3))
                     AND ((state = 'queued' AND run_after <= ?1) OR (state = 'running' AND lease_until < ?1))
                   ORDER BY run_after, id LIMIT 1)
                 RETURNING {COLUMNS}"
            );
            c.query_row(&sql, params![now, lease_until, kinds_json], job_from_row)
                .optional()
        })
    }

    /// Claims job `id` if it is runnable now (queued, or running with its lease run out).
    pub fn claim_id(&self, id: JobId, lease: Duration) -> Result<Option<Job>> {
        let now = now_millis();
        let lease_until = now.saturating_add(ms(lease));
        self.store.write_blocking(move |c| {
            let sql = format!(
                "UPDATE jobs SET state = 'running', attempts = attempts + 1, lease_until = ?2, updated_at = ?1
                 WHERE id = ?3 AND ((state = 'queued' AND run_after <= ?1) OR (state = 'running' AND lease_until < ?1))
                 RETURNING {COLUMNS}"
            );
            c.query_row(&sql, params![now, lease_until, id], job_from_row)
                .optional()
        })
    }

    /// Extends the lease of a job still being worked on.
    pub fn heartbeat(&self, id: JobId, lease: Duration) -> Result<()> {
        self.store.write_blocking(move |c| {
            let now = now_millis();
            c.execute(
                "UPDATE jobs SET lease_until = ?2, updated_at = ?1 WHERE id = ?3 AND state = 'running'",
                params![now, now.saturating_add(ms(lease)), id],
            )?;
            Ok(())
        })
    }

    /// Marks a job finished.
    pub fn complete(&self, id: JobId) -> Result<()> {
        self.store.write_blocking(move |c| {
            c.execute(
                "UPDATE jobs SET state = 'done', lease_until = NULL, last_error = NULL, updated_at = ?1 WHERE id = ?2",
                params![now_millis(), id],
            )?;
            Ok(())
        })
    }

    /// Records a failed attempt: queued again after `retry_in`, or failed for good once its
    /// attempts are used up. `error` must not contain user content.
    pub fn fail(&self, id: JobId, error: &str, retry_in: Duration) -> Result<()> {
        let error = error.to_owned();
        self.store.write_blocking(move |c| {
            let now = now_millis();
            c.execute(
                "UPDATE jobs SET
                   state = CASE WHEN attempts >= max_attempts THEN 'failed' ELSE 'queued' END,
                   run_after = ?2, lease_until = NULL, last_error = ?3, updated_at = ?1
                 WHERE id = ?4",
                params![now, now.saturating_add(ms(retry_in)), error, id],
            )?;
            Ok(())
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
