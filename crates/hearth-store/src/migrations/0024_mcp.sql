-- MCP servers and their tools (issue 13).

-- A server the user added. Env values and header values are secrets: their names are
-- here, their values in the OS keyring (`secrets_location = 'keyring'`) or, under the file
-- and passphrase key backends, in `secrets` (this database is encrypted).
CREATE TABLE mcp_servers (
    name             TEXT PRIMARY KEY,
    transport        TEXT NOT NULL CHECK (transport IN ('stdio', 'http')),
    command          TEXT,
    args             TEXT NOT NULL DEFAULT '[]',
    url              TEXT,
    env_names        TEXT NOT NULL DEFAULT '[]',
    header_names     TEXT NOT NULL DEFAULT '[]',
    secrets_location TEXT NOT NULL DEFAULT 'none'
                     CHECK (secrets_location IN ('none', 'keyring', 'database')),
    secrets          TEXT,
    enabled          INTEGER NOT NULL DEFAULT 1,
    approved         INTEGER NOT NULL DEFAULT 0,
    state            TEXT NOT NULL DEFAULT 'new',
    last_error       TEXT,
    created_at       INTEGER NOT NULL,
    CHECK ((transport = 'stdio') = (command IS NOT NULL)),
    CHECK ((transport = 'http') = (url IS NOT NULL))
) STRICT;

-- Each tool a server listed: its definition as last seen (canonical JSON) and as the user
-- approved it, each with its SHA-256. A tool whose hashes differ, or that has none
-- approved, is never offered to the model. `exposed` is the name the model calls it by
-- (`server__tool`, sanitized, unique), mapped back through this table, never split.
CREATE TABLE mcp_tools (
    server              TEXT NOT NULL REFERENCES mcp_servers (name) ON DELETE CASCADE,
    name                TEXT NOT NULL,
    exposed             TEXT NOT NULL UNIQUE,
    definition          TEXT NOT NULL,
    hash                TEXT NOT NULL,
    approved_definition TEXT,
    approved_hash       TEXT,
    risk_override       TEXT CHECK (risk_override IN ('read', 'write', 'destructive')),
    present             INTEGER NOT NULL DEFAULT 1,
    PRIMARY KEY (server, name)
) STRICT;
