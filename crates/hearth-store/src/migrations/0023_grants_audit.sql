-- Grants and the audit log (issue 12).

-- What the user allowed ahead of time: a tool for one conversation, or always. Never a
-- destructive tool (the gate refuses to store one). A conversation's grants go with it.
-- A temporary chat's grants are never written: they live in the run's memory only.
CREATE TABLE tool_grants (
    id              INTEGER PRIMARY KEY,
    tool            TEXT NOT NULL,
    origin          TEXT NOT NULL,
    scope           TEXT NOT NULL CHECK (scope IN ('conversation', 'always')),
    conversation_id TEXT REFERENCES conversations (id) ON DELETE CASCADE,
    created_at      INTEGER NOT NULL,
    CHECK ((scope = 'conversation') = (conversation_id IS NOT NULL))
) STRICT;
CREATE UNIQUE INDEX tool_grants_unique
    ON tool_grants (tool, origin, scope, coalesce(conversation_id, ''));

-- The audit log: append-only, hash-chained over digests, not payloads.
--   entry_hash = SHA-256(prev_hash ‖ seq ‖ kind ‖ time ‖ SHA-256(summary) ‖ payload_hash)
-- `summary` holds no user content (tool, origin, risk, decision, who decided, status; a
-- memory's id and the operation), so it is kept forever and covered by the chain.
-- `payload_hash` = SHA-256(payload); the payload itself (a call's arguments and result
-- summary) lives in `audit_payloads`, whose text is nulled when its content must go.
CREATE TABLE audit_log (
    seq          INTEGER PRIMARY KEY,
    kind         TEXT NOT NULL,
    time         INTEGER NOT NULL,
    summary      TEXT NOT NULL,
    payload_hash BLOB NOT NULL,
    entry_hash   BLOB NOT NULL
) STRICT;

CREATE TABLE audit_payloads (
    seq             INTEGER PRIMARY KEY REFERENCES audit_log (seq),
    payload         TEXT,
    conversation_id TEXT,
    memory_id       TEXT
) STRICT;
CREATE INDEX audit_payloads_by_conversation ON audit_payloads (conversation_id)
    WHERE conversation_id IS NOT NULL;
CREATE INDEX audit_payloads_by_memory ON audit_payloads (memory_id)
    WHERE memory_id IS NOT NULL;

-- The newest entry, so a log cut short at its end is told from a shorter one.
CREATE TABLE audit_head (
    id         INTEGER PRIMARY KEY CHECK (id = 1),
    seq        INTEGER NOT NULL,
    entry_hash BLOB NOT NULL
) STRICT;

-- A payload goes when what it is about goes: a deleted conversation's calls, a deleted
-- memory's changes.
CREATE TRIGGER audit_forget_conversation AFTER DELETE ON conversations BEGIN
    UPDATE audit_payloads SET payload = NULL WHERE conversation_id = old.id;
END;
CREATE TRIGGER audit_forget_memory AFTER DELETE ON memories BEGIN
    UPDATE audit_payloads SET payload = NULL WHERE memory_id = old.id;
END;

-- Memory texts are never audit payloads: an entry keeps HMAC(audit_salt, text), and the
-- salt lives in the memory's row, so it goes with a real delete and the digest can no
-- longer be tested against a guess.
ALTER TABLE memories ADD COLUMN audit_salt BLOB;
UPDATE memories SET audit_salt = randomblob(16);
