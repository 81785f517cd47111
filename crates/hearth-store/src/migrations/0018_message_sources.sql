-- The passages an answer was given, by chunk (issue 11): its sources, in citation order
-- ([1] first). Stored by id, never by copying text: a source goes when its chunk goes (the
-- file was edited, deleted or its folder removed), so no text outlives the user's file.
CREATE TABLE message_sources (
    message_id  INTEGER NOT NULL REFERENCES messages (id) ON DELETE CASCADE,
    position    INTEGER NOT NULL,       -- 1-based: the [n] the answer cites
    chunk_id    INTEGER NOT NULL REFERENCES chunks (id) ON DELETE CASCADE,
    PRIMARY KEY (message_id, position)
) STRICT;
CREATE INDEX message_sources_by_chunk ON message_sources (chunk_id);
