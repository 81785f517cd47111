-- A chunk re-embedded by another model is an UPDATE (upsert), which 0017's triggers miss:
-- the generation moves for it too, so an in-memory copy never keeps a vector that changed.
CREATE TRIGGER chunk_vectors_changed AFTER UPDATE ON chunk_vectors BEGIN
    UPDATE meta SET value = CAST(CAST(value AS INTEGER) + 1 AS TEXT)
     WHERE key = 'chunk_vectors_generation';
END;
