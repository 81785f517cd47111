-- A memory's context: the words around it where it came from (for a conversation imported
-- turn by turn, the turns before and after it). Searchable by words (a second FTS5 column),
-- never sent in the memory block. A turn like "5 years already!" is found by the
-- question that its neighbours answer ("How long have Mel and her husband been married?").
-- With the named-speaker rule, LoCoMo hybrid recall@10 rose from 0.640 to 0.754 on the
-- tuning conversations (26, 30) (ARCHITECTURE.md, "Memory ranking").
ALTER TABLE memories ADD COLUMN context TEXT;

DROP TRIGGER memories_fts_insert;
DROP TRIGGER memories_fts_delete;
DROP TRIGGER memories_fts_update;
DROP TABLE memories_fts_vocab;
DROP TABLE memories_fts;
CREATE VIRTUAL TABLE memories_fts USING fts5 (
    text, context, content = 'memories', content_rowid = 'n',
    tokenize = 'porter unicode61 remove_diacritics 2'
);
INSERT INTO memories_fts (memories_fts) VALUES ('rebuild');
CREATE VIRTUAL TABLE memories_fts_vocab USING fts5vocab (memories_fts, 'row');

CREATE TRIGGER memories_fts_insert AFTER INSERT ON memories BEGIN
    INSERT INTO memories_fts (rowid, text, context) VALUES (new.n, new.text, new.context);
END;
CREATE TRIGGER memories_fts_delete AFTER DELETE ON memories BEGIN
    INSERT INTO memories_fts (memories_fts, rowid, text, context)
        VALUES ('delete', old.n, old.text, old.context);
END;
CREATE TRIGGER memories_fts_update AFTER UPDATE OF text, context ON memories BEGIN
    INSERT INTO memories_fts (memories_fts, rowid, text, context)
        VALUES ('delete', old.n, old.text, old.context);
    INSERT INTO memories_fts (rowid, text, context) VALUES (new.n, new.text, new.context);
END;
