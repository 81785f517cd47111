-- Configured model providers. API keys live in the OS keyring; only under the file or
-- passphrase key backends are they kept here, inside the encrypted database.
CREATE TABLE providers (
    name           TEXT PRIMARY KEY NOT NULL,
    preset         TEXT NOT NULL,
    protocol       TEXT NOT NULL CHECK (protocol IN ('openai', 'anthropic')),
    base_url       TEXT NOT NULL,
    model          TEXT,
    fast_model     TEXT,
    context_window INTEGER,
    key_location   TEXT NOT NULL CHECK (key_location IN ('none', 'keyring', 'database')),
    api_key        TEXT,
    is_default     INTEGER NOT NULL DEFAULT 0,
    created_at     INTEGER NOT NULL
) STRICT;
