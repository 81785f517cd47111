-- Conversations, their messages (with token counts and turn state), and the usage ledger.
CREATE TABLE conversations (
    id         TEXT PRIMARY KEY NOT NULL,      -- UUID
    title      TEXT NOT NULL DEFAULT '',
    created_at INTEGER NOT NULL,
    updated_at INTEGER NOT NULL
) STRICT;

CREATE TABLE messages (
    id              INTEGER PRIMARY KEY,
    conversation_id TEXT NOT NULL REFERENCES conversations (id) ON DELETE CASCADE,
    role            TEXT NOT NULL CHECK (role IN ('system', 'user', 'assistant', 'tool')),
    content         TEXT NOT NULL,
    tool_calls      TEXT,                       -- JSON array, assistant only
    tool_call_id    TEXT,                       -- tool only
    tokens          INTEGER NOT NULL,           -- counted once, with `encoding`
    encoding        TEXT NOT NULL,
    state           TEXT NOT NULL DEFAULT 'complete'
                    CHECK (state IN ('complete', 'streaming', 'stopped', 'interrupted', 'failed')),
    model           TEXT,
    created_at      INTEGER NOT NULL,
    updated_at      INTEGER NOT NULL
) STRICT;

CREATE INDEX messages_by_conversation ON messages (conversation_id, id);

CREATE TABLE usage_ledger (
    id                  INTEGER PRIMARY KEY,
    conversation_id     TEXT REFERENCES conversations (id) ON DELETE SET NULL,
    slot                TEXT NOT NULL,          -- main | fast
    provider            TEXT NOT NULL,
    model               TEXT NOT NULL,
    input_tokens        INTEGER NOT NULL,
    output_tokens       INTEGER NOT NULL,
    cached_input_tokens INTEGER NOT NULL,
    cache_write_tokens  INTEGER NOT NULL,
    latency_ms          INTEGER NOT NULL,
    outcome             TEXT NOT NULL,          -- ok | stopped | an error code
    created_at          INTEGER NOT NULL
) STRICT;
