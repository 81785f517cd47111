-- Rolling conversation summaries written at compaction (003:300, 003:331).
CREATE TABLE summaries (
    id               INTEGER PRIMARY KEY,
    conversation_id  TEXT NOT NULL REFERENCES conversations (id) ON DELETE CASCADE,
    up_to_message_id INTEGER NOT NULL,      -- covers the conversation's messages with id <= this
    content          TEXT NOT NULL,
    tokens           INTEGER NOT NULL,
    model            TEXT NOT NULL,
    created_at       INTEGER NOT NULL
) STRICT;

CREATE INDEX summaries_by_conversation ON summaries (conversation_id, id);
