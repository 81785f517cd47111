-- Watched folders and what the walk found in them (issue 11). A file's row is its state:
-- its fingerprint (size, mtime, file id) compared at every reconcile pass, so changes made
-- while nothing ran are noticed; its status and, when skipped or failed, a fixed reason.
-- Removing a folder removes its rows (and, later, its chunks): nothing but derived data.
CREATE TABLE folders (
    id          INTEGER PRIMARY KEY,
    path        TEXT NOT NULL UNIQUE,           -- canonical, absolute
    paused      INTEGER NOT NULL DEFAULT 0,
    available   INTEGER NOT NULL DEFAULT 1,     -- 0: the path is gone (an unmounted drive)
    added_at    INTEGER NOT NULL,
    scanned_at  INTEGER,
    last_indexed INTEGER
) STRICT;

CREATE TABLE folder_files (
    id          INTEGER PRIMARY KEY,
    folder_id   INTEGER NOT NULL REFERENCES folders (id) ON DELETE CASCADE,
    rel_path    TEXT NOT NULL,
    size        INTEGER,
    mtime       INTEGER,                        -- ms since the epoch
    file_id     TEXT,                           -- device:inode where the OS has one
    hash        TEXT,                           -- of the content, once read
    status      TEXT NOT NULL CHECK (status IN ('indexed', 'pending', 'skipped', 'failed')),
    reason_code TEXT CHECK (reason_code IN ('too_large', 'binary', 'encrypted', 'corrupt',
                    'unreadable', 'symlink_loop', 'symlink_outside', 'not_regular', 'timeout',
                    'unsupported', 'no_text', 'empty')),
    message     TEXT,
    UNIQUE (folder_id, rel_path)
) STRICT;

CREATE INDEX folder_files_by_status ON folder_files (folder_id, status);
