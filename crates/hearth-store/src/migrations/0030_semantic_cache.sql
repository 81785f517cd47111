-- The semantic cache (opt-in): a saved answer to a stateless question (no memory, no
-- passages, no history) found again for a question that means the same (cosine similarity at
-- or above the user's threshold) and names the same numbers, dates and names. Scoped to one
-- provider, model, system prompt and tools array (`scope`, a SHA-256), in the encrypted
-- database, gone with the conversation it came from.
CREATE TABLE semantic_cache (
    id               INTEGER PRIMARY KEY,
    scope            BLOB NOT NULL,
    conversation_id  TEXT NOT NULL REFERENCES conversations (id) ON DELETE CASCADE,
    question         TEXT NOT NULL,
    anchors          TEXT NOT NULL,
    embedding_model  TEXT NOT NULL,
    vector           BLOB NOT NULL,
    provider         TEXT NOT NULL,
    model            TEXT NOT NULL,
    answer           TEXT NOT NULL,
    created_at       INTEGER NOT NULL,
    expires_at       INTEGER NOT NULL
) STRICT;
CREATE INDEX semantic_cache_by_scope ON semantic_cache (scope, embedding_model, expires_at);
CREATE INDEX semantic_cache_by_conversation ON semantic_cache (conversation_id);
