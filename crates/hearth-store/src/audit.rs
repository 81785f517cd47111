//! The audit log: every tool call and every memory change, append-only and hash-chained
//! over digests, so an entry edited, removed or cut from the end is found — while the
//! user's deletes still delete.
//!
//! `entry_hash = SHA-256(prev_hash ‖ seq ‖ kind ‖ time ‖ SHA-256(summary) ‖ payload_hash)`,
//! where `summary` carries no user content (tool, origin, risk, decision, who decided, how
//! it ended; a memory's id and the operation) and `payload_hash = SHA-256(payload)`. The
//! payload (a call's arguments and the start of its result) sits in its own row and is
//! nulled when its content must go — its conversation is deleted, the memory it is about is
//! deleted, the user forgets everything — or never written (a temporary chat). Its digest
//! stays in the chain, so the chain still verifies. Memory texts are never payloads: a
//! change keeps `HMAC(salt, text)` with the salt in the memory's row, gone with a real
//! delete. `audit_head` keeps the newest entry, so a log cut short at its end is detected.
//!
//! **Threat model** (docs/decisions/0019-audit-log-hash-chain.md): the chain finds accidental corruption
//! and partial tampering — an entry edited, removed, reordered, or the newest ones cut off.
//! It does not stop someone holding the database key from rewriting the whole log and its
//! head consistently.
//!
//! **The log has a first entry**, written when the store is created (or, for a store made
//! before this rule, when it is first opened): `{"op": "log_started"}`. Its hash is kept in
//! the id file beside the database too (`hearth.id.json`, `audit_genesis`), so a log
//! emptied — every row and the head deleted — or restarted with a new first entry is
//! reported as tampered, not as intact.
//!
//! **Invariant:** only [`append`] adds entries and nothing updates or deletes an entry's
//! row; payloads are only ever nulled. Depends on `store` and `time` alone.

use hmac::{Hmac, Mac};
use rusqlite::{Connection, OptionalExtension, params};
use serde::Serialize;
use serde_json::Value;
use sha2::{Digest, Sha256};

use crate::Result;
use crate::Store;

/// The previous hash of the first entry.
const GENESIS: [u8; 32] = [0; 32];

/// An entry to append.
pub struct NewEntry<'a> {
    /// `tool_call`, `memory`, `grant`.
    pub kind: &'a str,
    /// What happened, without user content (kept forever, covered by the chain).
    pub summary: Value,
    /// The content (arguments, a result's start); its digest is chained.
    pub payload: Value,
    /// Keep the payload (false: a temporary chat; only the digest is kept).
    pub keep_payload: bool,
    /// The payload goes when this conversation is deleted.
    pub conversation: Option<&'a str>,
    /// The payload goes when this memory is deleted.
    pub memory: Option<&'a str>,
}

/// Appends `entry` inside the caller's transaction; returns its `seq`.
pub fn append(c: &Connection, entry: &NewEntry<'_>) -> rusqlite::Result<i64> {
    let head: Option<(i64, Vec<u8>)> = c
        .query_row(
            "SELECT seq, entry_hash FROM audit_head WHERE id = 1",
            [],
            |r| Ok((r.get(0)?, r.get(1)?)),
        )
        .optional()?;
    let (seq, prev) = match head {
        Some((seq, hash)) => (seq + 1, hash),
        None => (1, GENESIS.to_vec()),
    };
    let time = crate::time::now_millis();
    let summary = entry.summary.to_string();
    let payload = entry.payload.to_string();
    let payload_hash = Sha256::digest(payload.as_bytes()).to_vec();
    let hash = entry_hash(&prev, seq, entry.kind, time, &summary, &payload_hash);
    c.execute(
        "INSERT INTO audit_log (seq, kind, time, summary, payload_hash, entry_hash)
         VALUES (?1, ?2, ?3, ?4, ?5, ?6)",
        params![seq, entry.kind, time, summary, payload_hash, hash.to_vec()],
    )?;
    c.execute(
        "INSERT INTO audit_payloads (seq, payload, conversation_id, memory_id)
         VALUES (?1, ?2, ?3, ?4)",
        params![
            seq,
            entry.keep_payload.then_some(payload),
            entry.conversation,
            entry.memory
        ],
    )?;
    c.execute(
        "INSERT INTO audit_head (id, seq, entry_hash) VALUES (1, ?1, ?2)
         ON CONFLICT (id) DO UPDATE SET seq = excluded.seq, entry_hash = excluded.entry_hash",
        params![seq, hash.to_vec()],
    )?;
    Ok(seq)
}

fn entry_hash(
    prev: &[u8],
    seq: i64,
    kind: &str,
    time: i64,
    summary: &str,
    payload_hash: &[u8],
) -> [u8; 32] {
    let mut h = Sha256::new();
    h.update(prev);
    h.update(seq.to_be_bytes());
    h.update((kind.len() as u64).to_be_bytes());
    h.update(kind.as_bytes());
    h.update(time.to_be_bytes());
    h.update(Sha256::digest(summary.as_bytes()));
    h.update(payload_hash);
    h.finalize().into()
}

/// `HMAC-SHA-256(salt, text)`, hex: how a memory's text appears in the log.
pub fn text_digest(salt: &[u8], text: &str) -> String {
    match Hmac::<Sha256>::new_from_slice(salt) {
        Ok(mut mac) => {
            mac.update(text.as_bytes());
            hex::encode(mac.finalize().into_bytes())
        }
        // HMAC takes a key of any length; kept total anyway.
        Err(_) => String::new(),
    }
}

/// One entry, as `hearth audit list` shows it.
#[derive(Debug, Clone, Serialize)]
pub struct Entry {
    pub seq: i64,
    pub kind: String,
    /// The tool of a `tool_call` (or a `grant`).
    pub tool: Option<String>,
    pub risk: Option<String>,
    pub decision: Option<String>,
    pub decided_by: Option<String>,
    /// Milliseconds since the epoch.
    pub time: i64,
    /// The payload is gone (deleted with what it was about) or was never kept.
    pub payload_redacted: bool,
    /// Everything the entry records besides its payload.
    pub summary: Value,
}

/// What a check of the chain found (`hearth audit verify`).
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Verification {
    pub ok: bool,
    pub entries: u64,
    /// The first entry that does not check out (the first missing one when the log was
    /// cut short).
    pub first_bad_seq: Option<i64>,
    /// What is wrong, in words.
    pub problem: Option<String>,
}

/// Which entries to list.
#[derive(Debug, Clone, Default)]
pub struct Filter {
    pub kind: Option<String>,
    pub tool: Option<String>,
    /// The newest `limit` entries (all when `None`), oldest first.
    pub limit: Option<usize>,
}

/// Reads and checks the log.
#[derive(Clone)]
pub struct Audit {
    store: Store,
}

impl Audit {
    pub fn new(store: Store) -> Self {
        Self { store }
    }

    /// Entries, oldest first.
    pub fn list(&self, filter: &Filter) -> Result<Vec<Entry>> {
        let filter = filter.clone();
        self.store.read_blocking(move |c| {
            let mut stmt = c.prepare(
                "SELECT l.seq, l.kind, l.time, l.summary, p.payload IS NULL
                 FROM audit_log l LEFT JOIN audit_payloads p ON p.seq = l.seq
                 WHERE (?1 IS NULL OR l.kind = ?1)
                   AND (?2 IS NULL OR json_extract(l.summary, '$.tool') = ?2)
                 ORDER BY l.seq DESC LIMIT ?3",
            )?;
            let limit = filter.limit.map_or(-1, |n| n as i64);
            let rows = stmt.query_map(params![filter.kind, filter.tool, limit], |r| {
                let summary: String = r.get(3)?;
                let summary: Value = serde_json::from_str(&summary).unwrap_or(Value::Null);
                let field = |k: &str| summary.get(k).and_then(Value::as_str).map(str::to_owned);
                Ok(Entry {
                    seq: r.get(0)?,
                    kind: r.get(1)?,
                    tool: field("tool"),
                    risk: field("risk"),
                    decision: field("decision"),
                    decided_by: field("decided_by"),
                    time: r.get(2)?,
                    payload_redacted: r.get(4)?,
                    summary,
                })
            })?;
            let mut out = rows.collect::<rusqlite::Result<Vec<_>>>()?;
            out.reverse();
            Ok(out)
        })
    }

    /// The payload of entry `seq`, if it is still kept.
    pub fn payload(&self, seq: i64) -> Result<Option<Value>> {
        self.store.read_blocking(move |c| {
            let p: Option<Option<String>> = c
                .query_row(
                    "SELECT payload FROM audit_payloads WHERE seq = ?1",
                    [seq],
                    |r| r.get(0),
                )
                .optional()?;
            Ok(p.flatten().and_then(|t| serde_json::from_str(&t).ok()))
        })
    }

    /// Walks the chain from the first entry and compares its end with the stored head, and
    /// its first entry with the one the id file names.
    pub fn verify(&self) -> Result<Verification> {
        let genesis = self.store.audit_genesis()?;
        self.store.read_blocking(move |c| {
            let v = verify(c)?;
            if !v.ok {
                return Ok(v);
            }
            let first: Option<Vec<u8>> = c
                .query_row("SELECT entry_hash FROM audit_log WHERE seq = 1", [], |r| {
                    r.get(0)
                })
                .optional()?;
            let problem = match (first, genesis) {
                (None, _) => Some(
                    "the log is empty: its first entry, written when the store was created, is gone"
                        .to_owned(),
                ),
                (Some(h), Some(g)) if hex::encode(&h) != g => Some(
                    "entry 1 is not the entry this store's log began with (its id file names another)"
                        .to_owned(),
                ),
                _ => None,
            };
            Ok(match problem {
                Some(p) => Verification {
                    ok: false,
                    entries: v.entries,
                    first_bad_seq: Some(1),
                    problem: Some(p),
                },
                None => v,
            })
        })
    }

    /// Writes the log's first entry if it has none, and records its hash in the id file if
    /// the id file has none yet. Called when the store opens.
    pub fn ensure_started(&self) -> Result<()> {
        let first = self.store.write_blocking(|c| {
            let tx = c.transaction()?;
            let empty: bool = tx.query_row(
                "SELECT NOT EXISTS (SELECT 1 FROM audit_log) AND NOT EXISTS (SELECT 1 FROM audit_head)",
                [],
                |r| r.get(0),
            )?;
            if empty {
                append(
                    &tx,
                    &NewEntry {
                        kind: "audit",
                        summary: serde_json::json!({"op": "log_started"}),
                        payload: Value::Null,
                        keep_payload: false,
                        conversation: None,
                        memory: None,
                    },
                )?;
            }
            let first: Option<Vec<u8>> = tx
                .query_row("SELECT entry_hash FROM audit_log WHERE seq = 1", [], |r| {
                    r.get(0)
                })
                .optional()?;
            tx.commit()?;
            Ok(first)
        })?;
        if let Some(first) = first {
            self.store.remember_audit_genesis(&hex::encode(first))?;
        }
        Ok(())
    }

    /// Nulls every payload (forget everything).
    pub fn forget_payloads(&self) -> Result<usize> {
        self.store.write_blocking(|c| {
            c.execute(
                "UPDATE audit_payloads SET payload = NULL WHERE payload IS NOT NULL",
                [],
            )
        })
    }
}

fn verify(c: &Connection) -> rusqlite::Result<Verification> {
    let bad = |entries: u64, seq: i64, problem: String| Verification {
        ok: false,
        entries,
        first_bad_seq: Some(seq),
        problem: Some(problem),
    };
    let mut stmt = c.prepare(
        "SELECT l.seq, l.kind, l.time, l.summary, l.payload_hash, l.entry_hash, p.payload
         FROM audit_log l LEFT JOIN audit_payloads p ON p.seq = l.seq ORDER BY l.seq",
    )?;
    let mut rows = stmt.query([])?;
    let mut prev = GENESIS.to_vec();
    let mut expected = 1i64;
    let mut entries = 0u64;
    while let Some(r) = rows.next()? {
        let seq: i64 = r.get(0)?;
        let kind: String = r.get(1)?;
        let time: i64 = r.get(2)?;
        let summary: String = r.get(3)?;
        let payload_hash: Vec<u8> = r.get(4)?;
        let stored: Vec<u8> = r.get(5)?;
        let payload: Option<String> = r.get(6)?;
        if seq != expected {
            return Ok(bad(
                entries,
                expected,
                format!("entry {expected} is missing (the next one is {seq})"),
            ));
        }
        if let Some(p) = payload
            && Sha256::digest(p.as_bytes()).as_slice() != payload_hash.as_slice()
        {
            return Ok(bad(
                entries,
                seq,
                format!("entry {seq}'s payload does not match its digest"),
            ));
        }
        let hash = entry_hash(&prev, seq, &kind, time, &summary, &payload_hash);
        if hash.as_slice() != stored.as_slice() {
            return Ok(bad(
                entries,
                seq,
                format!("entry {seq} does not match its hash (it or the one before was changed)"),
            ));
        }
        prev = stored;
        expected += 1;
        entries += 1;
    }
    let head: Option<(i64, Vec<u8>)> = c
        .query_row(
            "SELECT seq, entry_hash FROM audit_head WHERE id = 1",
            [],
            |r| Ok((r.get(0)?, r.get(1)?)),
        )
        .optional()?;
    let last = expected - 1;
    match head {
        None if entries == 0 => {}
        None => {
            return Ok(bad(entries, last + 1, "the log's head is missing".into()));
        }
        Some((seq, _)) if seq > last => {
            return Ok(bad(
                entries,
                last + 1,
                format!("the log was cut short: it ends at {last}, its head says {seq}"),
            ));
        }
        Some((seq, hash)) if seq != last || hash != prev => {
            return Ok(bad(
                entries,
                seq.min(last).max(1),
                "the log's head does not match its last entry".into(),
            ));
        }
        Some(_) => {}
    }
    Ok(Verification {
        ok: true,
        entries,
        first_bad_seq: None,
        problem: None,
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn store() -> (tempfile::TempDir, Store) {
        let tmp = tempfile::tempdir().expect("tempdir");
        let mut opts = crate::OpenOptions::new(crate::paths::DataDir::new(tmp.path().join("d")));
        opts.new_key_backend = crate::key::KeyBackend::File;
        let store = Store::open(&opts).expect("open");
        (tmp, store)
    }

    fn add(store: &Store, n: usize, conversation: Option<&'static str>) {
        for i in 0..n {
            store
                .write_blocking(move |c| {
                    append(
                        c,
                        &NewEntry {
                            kind: "tool_call",
                            summary: json!({"tool": "read_file", "risk": "read", "decision": "allowed", "decided_by": "auto"}),
                            payload: json!({"arguments": {"path": format!("/notes/{i}.txt")}}),
                            keep_payload: true,
                            conversation,
                            memory: None,
                        },
                    )
                    .map(|_| ())
                })
                .expect("append");
        }
    }

    #[test]
    fn an_intact_log_verifies_and_a_nulled_payload_keeps_it_valid() {
        let (_d, store) = store();
        let audit = Audit::new(store.clone());
        // A log with no first entry is not intact: the store writes one when it opens
        // (the façade calls `ensure_started`).
        let v = audit.verify().expect("verify");
        assert_eq!((v.ok, v.first_bad_seq), (false, Some(1)), "{v:?}");
        audit.ensure_started().expect("start");
        assert_eq!(
            store.audit_genesis().expect("id file").map(|g| g.len()),
            Some(64),
            "the id file names the first entry"
        );
        add(&store, 5, Some("c1"));
        let v = audit.verify().expect("verify");
        assert_eq!((v.ok, v.entries, v.first_bad_seq), (true, 6, None));
        assert_eq!(audit.forget_payloads().expect("forget"), 5);
        let v = audit.verify().expect("verify");
        assert!(v.ok, "{v:?}");
        assert!(
            audit
                .list(&Filter::default())
                .expect("list")
                .iter()
                .all(|e| e.payload_redacted)
        );
    }

    #[test]
    fn edits_removals_and_a_cut_tail_are_each_found_at_their_entry() {
        let cases: &[(&str, Option<i64>)] = &[
            (
                "UPDATE audit_log SET summary = replace(summary, 'read_file', 'delete_file') WHERE seq = 3",
                Some(3),
            ),
            (
                "UPDATE audit_payloads SET payload = '{\"arguments\":{}}' WHERE seq = 2",
                Some(2),
            ),
            (
                "UPDATE audit_log SET time = time + 1 WHERE seq = 4",
                Some(4),
            ),
            ("DELETE FROM audit_log WHERE seq = 3", Some(3)),
            ("DELETE FROM audit_log WHERE seq >= 5", Some(5)),
            ("DELETE FROM audit_head", Some(7)),
        ];
        for (sql, bad) in cases {
            let (_d, store) = store();
            add(&store, 6, None);
            let owned = sql.to_string();
            store
                .write_blocking(move |c| {
                    c.execute_batch("PRAGMA foreign_keys = OFF")?;
                    c.execute_batch(&owned)
                })
                .expect("tamper");
            let v = Audit::new(store).verify().expect("verify");
            assert!(!v.ok, "{sql}: {v:?}");
            assert_eq!(v.first_bad_seq, *bad, "{sql}: {v:?}");
        }
    }

    #[test]
    fn a_memory_digest_depends_on_its_salt() {
        let a = text_digest(b"salt-one-16bytes", "I live in Lyon");
        assert_eq!(a.len(), 64);
        assert_eq!(a, text_digest(b"salt-one-16bytes", "I live in Lyon"));
        assert_ne!(a, text_digest(b"salt-two-16bytes", "I live in Lyon"));
    }
}
