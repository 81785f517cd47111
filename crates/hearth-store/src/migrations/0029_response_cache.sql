-- The exact response cache (off by default): an answer keyed on the SHA-256 of the complete
-- request (provider, model, tools, memory, passages, history), so any change in what the
-- model would see is a miss. It lives in the encrypted database like everything else, goes
-- with the conversation it came from, and is purged when a memory or passage it may have
-- carried changes or goes (the triggers below over-purge rather than keep a stale answer).
CREATE TABLE response_cache (
    key              BLOB PRIMARY KEY NOT NULL,
    conversation_id  TEXT NOT NULL REFERENCES conversations (id) ON DELETE CASCADE,
    provider         TEXT NOT NULL,
    model            TEXT NOT NULL,
    answer           TEXT NOT NULL,
    carried_memory   INTEGER NOT NULL,
    carried_passages INTEGER NOT NULL,
    created_at       INTEGER NOT NULL,
    expires_at       INTEGER NOT NULL
) STRICT;
CREATE INDEX response_cache_by_conversation ON response_cache (conversation_id);

CREATE TRIGGER response_cache_memory_changed AFTER UPDATE OF text, status ON memories
BEGIN
    DELETE FROM response_cache WHERE carried_memory = 1;
END;
CREATE TRIGGER response_cache_memory_deleted AFTER DELETE ON memories
BEGIN
    DELETE FROM response_cache WHERE carried_memory = 1;
END;
CREATE TRIGGER response_cache_chunk_deleted AFTER DELETE ON chunks
BEGIN
    DELETE FROM response_cache WHERE carried_passages = 1;
END;
