-- Which chunks changed, in order: the in-memory keyword index of chunks (folders/lexical.rs)
-- replays the entries after its cursor instead of re-reading every chunk. Only ids: the
-- text stays in `chunks`. A chunk id may be reused after a delete, so an entry means
-- "re-read this id" (gone: drop it; present: index its current text). Old entries are
-- pruned by the indexer; a copy whose cursor falls behind them rebuilds.
CREATE TABLE chunk_journal (
    seq      INTEGER PRIMARY KEY,
    chunk_id INTEGER NOT NULL
);
CREATE TRIGGER chunk_journal_insert AFTER INSERT ON chunks BEGIN
    INSERT INTO chunk_journal (chunk_id) VALUES (new.id);
END;
CREATE TRIGGER chunk_journal_delete AFTER DELETE ON chunks BEGIN
    INSERT INTO chunk_journal (chunk_id) VALUES (old.id);
END;
CREATE TRIGGER chunk_journal_update AFTER UPDATE OF text, heading, file_id ON chunks BEGIN
    INSERT INTO chunk_journal (chunk_id) VALUES (new.id);
END;
