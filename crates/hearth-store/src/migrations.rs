//! Forward-only schema migrations on `PRAGMA user_version`.
//!
//! A small migrator of our own rather than `rusqlite_migration`: that crate's current
//! release pins an older rusqlite than the one whose bundled SQLCipher we need. Each
//! migration runs in its own transaction together with the version bump, so a crash leaves
//! the schema at a version boundary.

use rusqlite::Connection;

/// One step of the schema.
pub struct Migration {
    /// The `user_version` after this step.
    pub version: u32,
    /// What the step adds.
    pub name: &'static str,
    /// The SQL it runs.
    pub sql: &'static str,
}

/// Every migration, in order; `version` equals the 1-based index.
pub const MIGRATIONS: &[Migration] = &[
    Migration {
        version: 1,
        name: "core: meta and settings",
        sql: include_str!("migrations/0001_core.sql"),
    },
    Migration {
        version: 2,
        name: "durable jobs",
        sql: include_str!("migrations/0002_jobs.sql"),
    },
    Migration {
        version: 3,
        name: "conversations, messages and the usage ledger",
        sql: include_str!("migrations/0003_conversations.sql"),
    },
    Migration {
        version: 4,
        name: "rolling summaries",
        sql: include_str!("migrations/0004_summaries.sql"),
    },
    Migration {
        version: 5,
        name: "providers",
        sql: include_str!("migrations/0005_providers.sql"),
    },
    Migration {
        version: 6,
        name: "usage cost",
        sql: include_str!("migrations/0006_usage_cost.sql"),
    },
    Migration {
        version: 7,
        name: "turns and models",
        sql: include_str!("migrations/0007_turns_and_models.sql"),
    },
    Migration {
        version: 8,
        name: "memory",
        sql: include_str!("migrations/0008_memory.sql"),
    },
    Migration {
        version: 9,
        name: "memory stemming",
        sql: include_str!("migrations/0009_memory_stemming.sql"),
    },
    Migration {
        version: 10,
        name: "removal consent",
        sql: include_str!("migrations/0010_removal_consent.sql"),
    },
    Migration {
        version: 11,
        name: "memory proposals",
        sql: include_str!("migrations/0011_memory_proposals.sql"),
    },
    Migration {
        version: 12,
        name: "job leases and lanes",
        sql: include_str!("migrations/0012_job_leases.sql"),
    },
    Migration {
        version: 13,
        name: "memory block: index and vector generation",
        sql: include_str!("migrations/0013_memory_block.sql"),
    },
    Migration {
        version: 14,
        name: "memory context",
        sql: include_str!("migrations/0014_memory_context.sql"),
    },
    Migration {
        version: 15,
        name: "watched folders",
        sql: include_str!("migrations/0015_folders.sql"),
    },
    Migration {
        version: 16,
        name: "folder chunks",
        sql: include_str!("migrations/0016_chunks.sql"),
    },
    Migration {
        version: 17,
        name: "chunk vectors",
        sql: include_str!("migrations/0017_chunk_vectors.sql"),
    },
    Migration {
        version: 18,
        name: "message sources",
        sql: include_str!("migrations/0018_message_sources.sql"),
    },
    Migration {
        version: 19,
        name: "folder watch state",
        sql: include_str!("migrations/0019_folder_watch.sql"),
    },
    Migration {
        version: 20,
        name: "chunk vector updates move the generation",
        sql: include_str!("migrations/0020_chunk_vectors_updated.sql"),
    },
    Migration {
        version: 21,
        name: "chunk journal",
        sql: include_str!("migrations/0021_chunk_journal.sql"),
    },
    Migration {
        version: 22,
        name: "tools: writable folders and tool calls",
        sql: include_str!("migrations/0022_tools.sql"),
    },
    Migration {
        version: 23,
        name: "tool grants and the audit log",
        sql: include_str!("migrations/0023_grants_audit.sql"),
    },
    Migration {
        version: 24,
        name: "MCP servers and their pinned tools",
        sql: include_str!("migrations/0024_mcp.sql"),
    },
    Migration {
        version: 25,
        name: "consent: untrusted calls, confirmed MCP labels, bound grants",
        sql: include_str!("migrations/0025_consent.sql"),
    },
    Migration {
        version: 26,
        name: "the people generation",
        sql: include_str!("migrations/0026_people.sql"),
    },
    Migration {
        version: 27,
        name: "memory facets and what superseded a memory",
        sql: include_str!("migrations/0027_facets.sql"),
    },
    Migration {
        version: 28,
        name: "budget reservations",
        sql: include_str!("migrations/0028_budget_reservations.sql"),
    },
    Migration {
        version: 29,
        name: "response cache",
        sql: include_str!("migrations/0029_response_cache.sql"),
    },
    Migration {
        version: 30,
        name: "semantic cache",
        sql: include_str!("migrations/0030_semantic_cache.sql"),
    },
];

/// The schema version this binary writes.
pub const LATEST: u32 = MIGRATIONS.len() as u32;

/// The schema version of an open database.
pub fn schema_version(conn: &Connection) -> rusqlite::Result<u32> {
    conn.query_row("PRAGMA user_version", [], |r| r.get(0))
}

/// Brings the schema up to `target` (≤ [`LATEST`]); returns the versions applied.
pub fn migrate_to(conn: &mut Connection, target: u32) -> rusqlite::Result<Vec<u32>> {
    let mut applied = Vec::new();
    let current = schema_version(conn)?;
    for m in MIGRATIONS
        .iter()
        .filter(|m| m.version > current && m.version <= target)
    {
        let tx = conn.transaction()?;
        tx.execute_batch(m.sql)?;
        tx.pragma_update(None, "user_version", m.version)?;
        tx.commit()?;
        tracing::info!(version = m.version, name = m.name, "applied migration");
        applied.push(m.version);
    }
    Ok(applied)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn versions_are_dense_and_ordered() {
        for (i, m) in MIGRATIONS.iter().enumerate() {
            assert_eq!(m.version as usize, i + 1, "{}", m.name);
        }
    }
}
