-- Hearth's own bookkeeping and user settings.
PRAGMA application_id = 1212502088; -- 'HRTH'

CREATE TABLE meta (
    key   TEXT PRIMARY KEY NOT NULL,
    value TEXT NOT NULL
) STRICT;

CREATE TABLE settings (
    key        TEXT PRIMARY KEY NOT NULL,
    value      TEXT NOT NULL,            -- JSON
    updated_at INTEGER NOT NULL          -- unix ms
) STRICT;
