-- Tools (issue 12). A watched folder may be made writable for tools: file tools that
-- create, change or delete files work only inside writable folders (reading works in any
-- watched folder).
ALTER TABLE folders ADD COLUMN writable INTEGER NOT NULL DEFAULT 0;

-- Every tool call of an answer, written as each call ends, so a crash mid-run keeps the
-- calls made so far. `arguments` and `result` are the call's payload (the user's data):
-- they go with the answer (cascade) and are never copied into logs.
CREATE TABLE tool_calls (
    id            INTEGER PRIMARY KEY,
    message_id    INTEGER NOT NULL REFERENCES messages (id) ON DELETE CASCADE,
    call_id       TEXT NOT NULL,
    seq           INTEGER NOT NULL,
    tool          TEXT NOT NULL,
    origin        TEXT NOT NULL,
    risk          TEXT NOT NULL CHECK (risk IN ('read', 'write', 'destructive')),
    arguments     TEXT NOT NULL,
    decision      TEXT NOT NULL CHECK (decision IN ('allowed', 'denied', 'invalid')),
    decided_by    TEXT NOT NULL,
    escalated     INTEGER NOT NULL DEFAULT 0,
    result_status TEXT NOT NULL,
    result        TEXT,
    created_at    INTEGER NOT NULL
) STRICT;
CREATE INDEX tool_calls_by_message ON tool_calls (message_id, seq);
