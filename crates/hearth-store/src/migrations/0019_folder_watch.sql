-- Whether each folder is being watched, and how (issue 11), so `hearth folders list` and the
-- Folders screen say `watching` or `polling` whichever process watches. Written by the
-- watcher when it changes; `watch_owner` is that process's liveness id (run/<id>.lock), and
-- a state whose owner is gone reads as not watched (the app was closed or killed).
ALTER TABLE folders ADD COLUMN watch TEXT CHECK (watch IN ('watching', 'polling'));
ALTER TABLE folders ADD COLUMN watch_reason TEXT;
ALTER TABLE folders ADD COLUMN watch_owner TEXT;
