-- Vectors of folder chunks (issue 11): one per chunk, from the embedding model named beside
-- it (vectors of different models never mix; a chunk whose vector is of another model is
-- embedded again). A plain table, not vec0: a chunk's vector goes with it (ON DELETE
-- CASCADE: no orphan when a file is edited, deleted or its folder removed), and search
-- reads them by chunk id to rescore the candidates of a compact in-memory index.
CREATE TABLE chunk_vectors (
    chunk_id    INTEGER PRIMARY KEY REFERENCES chunks (id) ON DELETE CASCADE,
    model       TEXT NOT NULL,
    vector      BLOB NOT NULL          -- little-endian f32, L2-normalised
) STRICT;

CREATE INDEX chunk_vectors_by_model ON chunk_vectors (model);

-- Moves whenever a chunk vector is added or goes, so an in-memory copy knows it is stale.
INSERT OR IGNORE INTO meta (key, value) VALUES ('chunk_vectors_generation', '0');
CREATE TRIGGER chunk_vectors_added AFTER INSERT ON chunk_vectors BEGIN
    UPDATE meta SET value = CAST(CAST(value AS INTEGER) + 1 AS TEXT)
     WHERE key = 'chunk_vectors_generation';
END;
CREATE TRIGGER chunk_vectors_gone AFTER DELETE ON chunk_vectors BEGIN
    UPDATE meta SET value = CAST(CAST(value AS INTEGER) + 1 AS TEXT)
     WHERE key = 'chunk_vectors_generation';
END;
