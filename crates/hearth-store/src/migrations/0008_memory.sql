-- Long-term profile memory: the memories, their full change history, and the FTS5 index.
-- Vectors live in vec0 tables created per dimension on demand (`memory_vec_<dims>`),
-- keyed by `memories.n`; `memories.embed_model` says which model made a row's vector.
CREATE TABLE memories (
    n                   INTEGER PRIMARY KEY,            -- rowid for FTS5 and vec0
    id                  TEXT NOT NULL UNIQUE,           -- stable opaque id shown to people
    text                TEXT NOT NULL,
    norm                TEXT NOT NULL,                  -- normalized text (import dedupe)
    kind                TEXT NOT NULL CHECK (kind IN ('fact', 'preference', 'episode', 'instruction')),
    subject             TEXT,                           -- e.g. home_city
    importance          REAL NOT NULL DEFAULT 0.5,
    pinned              INTEGER NOT NULL DEFAULT 0,
    critical            INTEGER NOT NULL DEFAULT 0,     -- safety: allergies, hard constraints
    confidence          REAL NOT NULL DEFAULT 1.0,
    source_kind         TEXT NOT NULL CHECK (source_kind IN ('conversation', 'file', 'manual', 'import')),
    source_conversation TEXT,
    source_message      INTEGER,
    source_file         TEXT,
    event_at            INTEGER,                        -- episodes: when it happened
    created_at          INTEGER NOT NULL,
    updated_at          INTEGER NOT NULL,
    last_used_at        INTEGER,
    use_count           INTEGER NOT NULL DEFAULT 0,
    status              TEXT NOT NULL DEFAULT 'active' CHECK (status IN ('active', 'superseded', 'removed')),
    removed_at          INTEGER,
    embed_model         TEXT
) STRICT;

CREATE INDEX memories_by_status ON memories (status, kind);
CREATE INDEX memories_by_created ON memories (created_at);
CREATE INDEX memories_by_source ON memories (source_conversation);

CREATE VIRTUAL TABLE memories_fts USING fts5 (
    text, content = 'memories', content_rowid = 'n', tokenize = 'unicode61 remove_diacritics 2'
);
CREATE VIRTUAL TABLE memories_fts_vocab USING fts5vocab (memories_fts, 'row');

CREATE TRIGGER memories_fts_insert AFTER INSERT ON memories BEGIN
    INSERT INTO memories_fts (rowid, text) VALUES (new.n, new.text);
END;
CREATE TRIGGER memories_fts_delete AFTER DELETE ON memories BEGIN
    INSERT INTO memories_fts (memories_fts, rowid, text) VALUES ('delete', old.n, old.text);
END;
CREATE TRIGGER memories_fts_update AFTER UPDATE OF text ON memories BEGIN
    INSERT INTO memories_fts (memories_fts, rowid, text) VALUES ('delete', old.n, old.text);
    INSERT INTO memories_fts (rowid, text) VALUES (new.n, new.text);
END;

-- Every change: operation, old → new text, who, when, from where. A user's delete keeps a
-- tombstone without text (and blanks the texts of earlier entries).
CREATE TABLE memory_history (
    id        INTEGER PRIMARY KEY,
    memory_id TEXT NOT NULL,                            -- no foreign key: tombstones outlive rows
    op        TEXT NOT NULL,
    old_text  TEXT,
    new_text  TEXT,
    actor     TEXT NOT NULL CHECK (actor IN ('assistant', 'user', 'import')),
    source    TEXT,                                     -- JSON: conversation/message, file, …
    at        INTEGER NOT NULL
) STRICT;

CREATE INDEX memory_history_by_memory ON memory_history (memory_id, id);
