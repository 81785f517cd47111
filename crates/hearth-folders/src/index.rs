//! The indexer: takes `pending` files, has the extraction worker read and chunk each, and
//! commits each file's chunks (and their FTS rows, by trigger) in one short transaction, so
//! a file is searchable with all of its latest text or none of it.
//!
//! A file is stat'ed before it is read and again after: if it changed in between, nothing
//! is committed and it stays `pending` with its new fingerprint, read again in this run (up
//! to [`MAX_REQUEUES`] times), so a file edited during indexing ends with its latest
//! content only. The commit also checks the row still has the fingerprint the read started
//! from (a reconcile or the watcher may have seen a newer one). A file whose bytes hash as
//! before (touched, not changed) keeps its chunks, their ids and their vectors.
//!
//! One indexer at a time across processes: [`IndexLock`], an OS lock on `index.lock`
//! beside the database, which the kernel frees when its process dies (kill -9 included).

use std::collections::HashMap;
use std::path::{Path, PathBuf};

use rusqlite::{OptionalExtension, params};
use serde::Serialize;

use super::extract::{Kind, Limits, Refusal};
use super::worker::{Extraction, Worker, WorkerCommand};
use super::{FileStatus, Reason};
use crate::store::Store;
use crate::time::{Millis, now_millis};
use crate::{Error, Result};

/// How often a file that keeps changing while it is read is read again in one run.
pub const MAX_REQUEUES: u32 = 3;

/// Files taken from the queue at a time.
pub const BATCH: usize = 100;

/// The indexer's lock, held while this process indexes.
pub struct IndexLock {
    _file: std::fs::File,
}

impl IndexLock {
    /// Takes the lock at `path`, or `None` when another process holds it.
    pub fn try_acquire(path: &Path) -> Result<Option<IndexLock>> {
        let file = std::fs::OpenOptions::new()
            .create(true)
            .truncate(false)
            .write(true)
            .open(path)
            .map_err(|e| Error::io(path, e))?;
        match file.try_lock() {
            Ok(()) => Ok(Some(IndexLock { _file: file })),
            Err(std::fs::TryLockError::WouldBlock) => Ok(None),
            Err(std::fs::TryLockError::Error(e)) => Err(Error::io(path, e)),
        }
    }
}

/// Where the indexer is.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Progress {
    /// `scan` (the reconcile pass finished), `file` (a file was committed), `requeued` (a
    /// file changed while it was read: it is read again), `follow` (another process
    /// indexes; counts from the store), `done`.
    pub phase: &'static str,
    /// Files handled in this run.
    pub done: u64,
    /// Files handled plus those still pending: known once the scan is over; it grows when
    /// files are queued during the run, and is never below `done`.
    pub total: u64,
    /// The file just handled (absolute), for `file`.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub path: Option<String>,
    /// Its status, for `file`.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub status: Option<FileStatus>,
}

/// What one run did.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize)]
pub struct RunReport {
    pub indexed: u64,
    pub skipped: u64,
    pub failed: u64,
    /// Files changed while they were read (read again).
    pub requeued: u64,
    /// Files that were gone when their turn came.
    pub removed: u64,
    /// Files whose bytes had not changed (chunks kept).
    pub unchanged: u64,
}

/// A pending file as the queue holds it.
#[derive(Debug, Clone)]
struct Queued {
    id: i64,
    path: PathBuf,
    fingerprint: Stat,
    hash: Option<String>,
}

/// Size, mtime, file id.
type Stat = (Option<i64>, Option<i64>, Option<String>);

/// A row's fingerprint, status and chunk count, as the commit reads them.
type RowState = (Option<i64>, Option<i64>, Option<String>, String, i64);

fn stat(path: &Path) -> Option<(Stat, bool)> {
    let m = std::fs::symlink_metadata(path).ok()?;
    let regular = m.file_type().is_file();
    let size = i64::try_from(m.len()).ok();
    let mtime = m
        .modified()
        .ok()
        .and_then(|t| t.duration_since(std::time::UNIX_EPOCH).ok())
        .and_then(|d| i64::try_from(d.as_millis()).ok());
    #[cfg(unix)]
    let id = {
        use std::os::unix::fs::MetadataExt;
        Some(format!("{}:{}", m.dev(), m.ino()))
    };
    #[cfg(not(unix))]
    let id = None;
    Some(((size, mtime, id), regular))
}

/// Pending files of folders that are neither paused nor unavailable: what an indexer run
/// would take.
pub fn runnable_pending(store: &Store) -> Result<u64> {
    store
        .read_blocking(|c| {
            c.query_row(
                "SELECT count(*) FROM folder_files f JOIN folders d ON d.id = f.folder_id
                  WHERE f.status = 'pending' AND d.paused = 0 AND d.available = 1",
                [],
                |r| r.get::<_, i64>(0),
            )
        })
        .map(|n| n.max(0) as u64)
}

/// The status a refusal leaves a file in: `failed` when Hearth tried and could not read it
/// (broken, unreadable, too slow), `skipped` when it is not something to index.
pub fn status_of(reason: Reason) -> FileStatus {
    match reason {
        Reason::Corrupt | Reason::Unreadable | Reason::Timeout => FileStatus::Failed,
        _ => FileStatus::Skipped,
    }
}

/// Takes pending files and indexes them.
pub struct Indexer {
    store: Store,
    worker: Worker,
    limits: Limits,
    requeues: HashMap<i64, u32>,
}

impl Indexer {
    pub fn new(store: Store, command: WorkerCommand, limits: Limits) -> Self {
        Self {
            store,
            worker: Worker::new(command),
            limits,
            requeues: HashMap::new(),
        }
    }

    /// Worker processes started so far (one, plus one per timeout or crash).
    pub fn workers_started(&self) -> usize {
        self.worker.started
    }

    /// Pending files of folders that are neither paused nor unavailable.
    pub fn pending(&self) -> Result<u64> {
        runnable_pending(&self.store)
    }

    fn next_batch(&self) -> Result<Vec<Queued>> {
        let exhausted: Vec<i64> = self
            .requeues
            .iter()
            .filter(|(_, n)| **n >= MAX_REQUEUES)
            .map(|(id, _)| *id)
            .collect();
        let exclude = serde_json::to_string(&exhausted).unwrap_or_else(|_| "[]".into());
        self.store.read_blocking(move |c| {
            let mut stmt = c.prepare(
                "SELECT f.id, d.path, f.rel_path, f.size, f.mtime, f.file_id, f.hash
                   FROM folder_files f JOIN folders d ON d.id = f.folder_id
                  WHERE f.status = 'pending' AND d.paused = 0 AND d.available = 1
                    AND f.id NOT IN (SELECT value FROM json_each(?1))
                  ORDER BY f.id LIMIT ?2",
            )?;
            let rows = stmt.query_map(params![exclude, BATCH as i64], |r| {
                let root: String = r.get(1)?;
                let rel: String = r.get(2)?;
                Ok(Queued {
                    id: r.get(0)?,
                    path: Path::new(&root).join(rel),
                    fingerprint: (r.get(3)?, r.get(4)?, r.get(5)?),
                    hash: r.get(6)?,
                })
            })?;
            rows.collect()
        })
    }

    /// Indexes pending files until none is left (or only ones that kept changing), calling
    /// `on` after each file. `stop` is asked between files (pause, quit).
    pub fn run(
        &mut self,
        stop: &dyn Fn() -> bool,
        on: &mut dyn FnMut(&Progress),
    ) -> Result<RunReport> {
        let mut report = RunReport::default();
        let mut done = 0u64;
        loop {
            if stop() {
                break;
            }
            let batch = self.next_batch()?;
            if batch.is_empty() {
                break;
            }
            for file in batch {
                if stop() {
                    break;
                }
                let status = match self.index_one(&file, &mut report)? {
                    Handled::Status(status) => status,
                    Handled::Removed => continue,
                    Handled::Requeued => {
                        on(&Progress {
                            phase: "requeued",
                            done,
                            total: done + self.pending()?,
                            path: Some(file.path.to_string_lossy().into_owned()),
                            status: None,
                        });
                        continue;
                    }
                };
                done += 1;
                let total = done + self.pending()?;
                on(&Progress {
                    phase: "file",
                    done,
                    total,
                    path: Some(file.path.to_string_lossy().into_owned()),
                    status: Some(status),
                });
            }
        }
        // The keyword copies' journal keeps the newest entries only.
        self.store
            .write_blocking(|c| super::lexical::prune_journal(c))?;
        Ok(report)
    }

    /// One file.
    fn index_one(&mut self, file: &Queued, report: &mut RunReport) -> Result<Handled> {
        let id = file.id;
        let Some((before, regular)) = stat(&file.path) else {
            // Gone since the scan: its row and chunks go (the watcher or the next scan
            // would say the same).
            self.store.write_blocking(move |c| {
                c.execute("DELETE FROM folder_files WHERE id = ?1", [id])
            })?;
            report.removed += 1;
            return Ok(Handled::Removed);
        };
        if before != file.fingerprint {
            let fp = before.clone();
            self.store.write_blocking(move |c| {
                c.execute(
                    "UPDATE folder_files SET size = ?1, mtime = ?2, file_id = ?3 WHERE id = ?4",
                    params![fp.0, fp.1, fp.2, id],
                )
            })?;
        }
        let extraction = if !regular {
            Extraction::Refused(Refusal::new(
                Reason::NotRegular,
                "not a regular file (a link, FIFO, socket or device)",
            ))
        } else if let Some(kind) = Kind::of(&file.path) {
            self.worker
                .extract(&file.path, kind, self.limits)
                .map_err(|e| Error::io(&file.path, e))?
        } else {
            Extraction::Refused(Refusal::new(
                Reason::Unsupported,
                "Hearth does not read this kind of file",
            ))
        };
        let after = stat(&file.path).map(|(s, _)| s);
        if after.as_ref() != Some(&before) {
            *self.requeues.entry(id).or_default() += 1;
            report.requeued += 1;
            if let Some(fp) = after {
                self.store.write_blocking(move |c| {
                    c.execute(
                        "UPDATE folder_files SET size = ?1, mtime = ?2, file_id = ?3 WHERE id = ?4",
                        params![fp.0, fp.1, fp.2, id],
                    )
                })?;
            }
            return Ok(Handled::Requeued);
        }
        crate::failpoint::delay("index.before_commit");
        let known_hash = file.hash.clone();
        let committed = self
            .store
            .write_blocking(move |c| commit(c, id, &before, known_hash.as_deref(), extraction))?;
        crate::failpoint::hit("index.after_commit");
        match committed {
            Committed::Stale => {
                *self.requeues.entry(id).or_default() += 1;
                report.requeued += 1;
                Ok(Handled::Requeued)
            }
            Committed::Unchanged => {
                report.unchanged += 1;
                report.indexed += 1;
                Ok(Handled::Status(FileStatus::Indexed))
            }
            Committed::Done(status) => {
                match status {
                    FileStatus::Indexed => report.indexed += 1,
                    FileStatus::Failed => report.failed += 1,
                    _ => report.skipped += 1,
                }
                Ok(Handled::Status(status))
            }
        }
    }
}

/// What became of one queued file.
enum Handled {
    Status(FileStatus),
    /// It changed while it was read: read again later in this run.
    Requeued,
    /// It was gone.
    Removed,
}

enum Committed {
    /// The row's fingerprint is not the one the read started from: read it again.
    Stale,
    /// The bytes hash as before: chunks kept.
    Unchanged,
    Done(FileStatus),
}

fn commit(
    c: &mut rusqlite::Connection,
    id: i64,
    read: &Stat,
    known_hash: Option<&str>,
    extraction: Extraction,
) -> rusqlite::Result<Committed> {
    let tx = c.transaction()?;
    let row: Option<RowState> = tx
        .query_row(
            "SELECT size, mtime, file_id, status, chunks FROM folder_files WHERE id = ?1",
            [id],
            |r| Ok((r.get(0)?, r.get(1)?, r.get(2)?, r.get(3)?, r.get(4)?)),
        )
        .optional()?;
    let Some((size, mtime, file_id, status, n_chunks)) = row else {
        return Ok(Committed::Stale);
    };
    if (size, mtime, file_id) != *read || status != "pending" {
        return Ok(Committed::Stale);
    }
    let now: Millis = now_millis();
    let outcome = match extraction {
        Extraction::Chunks { hash, chunks } => {
            if known_hash == Some(hash.as_str()) && n_chunks > 0 {
                tx.execute(
                    "UPDATE folder_files SET status = 'indexed', reason_code = NULL,
                       message = NULL, indexed_at = ?1 WHERE id = ?2",
                    params![now, id],
                )?;
                Committed::Unchanged
            } else {
                tx.execute("DELETE FROM chunks WHERE file_id = ?1", [id])?;
                {
                    let mut insert = tx.prepare(
                        "INSERT INTO chunks (file_id, ordinal, text, heading, byte_start, byte_end,
                           line_start, line_end, page, tokens)
                         VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10)",
                    )?;
                    for (i, ch) in chunks.iter().enumerate() {
                        insert.execute(params![
                            id,
                            i as i64,
                            ch.text,
                            ch.heading,
                            ch.byte_start as i64,
                            ch.byte_end as i64,
                            ch.line_start as i64,
                            ch.line_end as i64,
                            ch.page.map(|p| p as i64),
                            ch.tokens as i64,
                        ])?;
                    }
                }
                tx.execute(
                    "UPDATE folder_files SET status = 'indexed', hash = ?1, reason_code = NULL,
                       message = NULL, indexed_at = ?2, chunks = ?3 WHERE id = ?4",
                    params![hash, now, chunks.len() as i64, id],
                )?;
                Committed::Done(FileStatus::Indexed)
            }
        }
        Extraction::Refused(r) => {
            let status = status_of(r.reason);
            tx.execute("DELETE FROM chunks WHERE file_id = ?1", [id])?;
            tx.execute(
                "UPDATE folder_files SET status = ?1, hash = NULL, reason_code = ?2,
                   message = ?3, indexed_at = ?4, chunks = 0 WHERE id = ?5",
                params![status.as_str(), r.reason.as_str(), r.message, now, id],
            )?;
            Committed::Done(status)
        }
    };
    tx.execute(
        "UPDATE folders SET last_indexed = ?1
          WHERE id = (SELECT folder_id FROM folder_files WHERE id = ?2)",
        params![now, id],
    )?;
    tx.commit()?;
    Ok(outcome)
}
