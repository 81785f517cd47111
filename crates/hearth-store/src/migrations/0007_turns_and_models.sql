-- What each answer's turn used (model, tokens, cost, context zones) for the chat screen,
-- the link from a usage row to its answer, and the user-editable model table.
ALTER TABLE messages ADD COLUMN turn_json TEXT;       -- JSON, assistant answers only
ALTER TABLE messages ADD COLUMN owner TEXT;           -- the process streaming it (run/<owner>.lock)
ALTER TABLE usage_ledger ADD COLUMN message_id INTEGER REFERENCES messages (id) ON DELETE SET NULL;

-- Context windows and prices by model name (or name prefix). `context_window` and the
-- prices are the user's; `server_context_window` is what a server reported (Ollama
-- /api/show). Built-in defaults live in code; a row here overrides them.
CREATE TABLE model_info (
    model                    TEXT PRIMARY KEY NOT NULL,
    context_window           INTEGER,
    input_usd_per_mtok       REAL,
    output_usd_per_mtok      REAL,
    cached_usd_per_mtok      REAL,
    server_context_window    INTEGER,
    updated_at               INTEGER NOT NULL
) STRICT;
