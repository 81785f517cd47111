-- Changes the model wants to make to a pinned or critical memory wait here for the user's
-- accept or reject (SPEC §1.2, §4): the memory itself stays as it is, active and injected.
-- Proposals never time out. A real delete of the memory (or of the conversation they came
-- from) deletes them too, since they may quote its text.
CREATE TABLE memory_proposals (
    id            TEXT PRIMARY KEY,                     -- p-…, shown to people
    memory_id     TEXT NOT NULL,                        -- the protected memory
    action        TEXT NOT NULL CHECK (action IN ('update', 'remove')),
    proposed_text TEXT,                                 -- update: the text suggested
    new_memory    TEXT,                                 -- JSON: a candidate stored only on accept
    reason        TEXT NOT NULL,
    conversation  TEXT,                                 -- where the exchange happened
    message_id    INTEGER,                              -- the user's message of that exchange
    created_at    INTEGER NOT NULL
) STRICT;
CREATE INDEX memory_proposals_by_memory ON memory_proposals (memory_id);
CREATE INDEX memory_proposals_by_conversation ON memory_proposals (conversation);

-- An imported memory's source is `import`, whatever the file said; the origin the file
-- claimed is kept here, informational only (JSON), so a file cannot forge provenance.
ALTER TABLE memories ADD COLUMN imported_from TEXT;
