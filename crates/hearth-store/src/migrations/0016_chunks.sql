-- A watched file's chunks (issue 11): its text in pieces sized for the embedder, each with
-- where it is in the file (bytes, lines, heading, page) and its token count in the chat
-- encoding, counted once. A file's chunks are replaced together in one transaction, so a
-- file is searchable with all of its latest text or none of it. Keyword search is FTS5 over
-- the text and the heading path; `secure-delete` makes a deleted chunk's terms leave the
-- index at once (a file the user deleted or stopped watching must not linger in it).
CREATE TABLE chunks (
    id          INTEGER PRIMARY KEY,
    file_id     INTEGER NOT NULL REFERENCES folder_files (id) ON DELETE CASCADE,
    ordinal     INTEGER NOT NULL,
    text        TEXT NOT NULL,
    heading     TEXT,
    byte_start  INTEGER NOT NULL,
    byte_end    INTEGER NOT NULL,
    line_start  INTEGER NOT NULL,
    line_end    INTEGER NOT NULL,
    page        INTEGER,
    tokens      INTEGER NOT NULL,
    UNIQUE (file_id, ordinal)
) STRICT;

CREATE VIRTUAL TABLE chunks_fts USING fts5 (
    text, heading, content = 'chunks', content_rowid = 'id',
    tokenize = 'porter unicode61 remove_diacritics 2'
);
INSERT INTO chunks_fts (chunks_fts, rank) VALUES ('secure-delete', 1);

CREATE TRIGGER chunks_fts_insert AFTER INSERT ON chunks BEGIN
    INSERT INTO chunks_fts (rowid, text, heading) VALUES (new.id, new.text, new.heading);
END;
CREATE TRIGGER chunks_fts_delete AFTER DELETE ON chunks BEGIN
    INSERT INTO chunks_fts (chunks_fts, rowid, text, heading)
        VALUES ('delete', old.id, old.text, old.heading);
END;

-- When a file's text was last committed, and how many chunks it has.
ALTER TABLE folder_files ADD COLUMN indexed_at INTEGER;
ALTER TABLE folder_files ADD COLUMN chunks INTEGER NOT NULL DEFAULT 0;
