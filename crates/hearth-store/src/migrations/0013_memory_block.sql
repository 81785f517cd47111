-- What the memory block reads at every turn.
--
-- The critical and pinned memories: without an index that was a scan of every active
-- memory (10,000 rows: a third of the block's time). The query names it (INDEXED BY).
CREATE INDEX memories_always_in ON memories (critical DESC, importance DESC, updated_at DESC)
    WHERE status = 'active' AND (critical = 1 OR pinned = 1);

-- Memories still to embed (no vector, or one from another model), looked up before every
-- turn: without an index, a scan of every memory.
CREATE INDEX memories_by_embed_model ON memories (embed_model);

-- The vector generation: moves whenever a memory's vector may have changed (a vector is
-- stored or dropped together with `embed_model`; a deleted memory takes its vectors), so
-- an in-process copy of the vectors (memory/vector_index.rs) knows when to reload, whichever
-- process wrote. Vector tables (vec0) cannot carry triggers; the memories table can.
INSERT INTO meta (key, value) VALUES ('memory_vectors_generation', '0');
CREATE TRIGGER memory_vectors_changed AFTER UPDATE OF embed_model ON memories BEGIN
    UPDATE meta SET value = CAST(CAST(value AS INTEGER) + 1 AS TEXT)
     WHERE key = 'memory_vectors_generation';
END;
CREATE TRIGGER memory_vectors_deleted AFTER DELETE ON memories BEGIN
    UPDATE meta SET value = CAST(CAST(value AS INTEGER) + 1 AS TEXT)
     WHERE key = 'memory_vectors_generation';
END;
