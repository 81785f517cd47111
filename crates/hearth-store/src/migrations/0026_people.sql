-- The people generation (issue 35): who holds which role in the user's life ("User is
-- married to Helena": "my wife" means Helena) is derived from the active memories, kept in
-- process (hearth-memory/src/people.rs) and read again when this moves — whenever a
-- memory is added, its text, status or source changes, or it is deleted, whichever process
-- wrote.
INSERT OR IGNORE INTO meta (key, value) VALUES ('memory_people_generation', '0');
CREATE TRIGGER memory_people_added AFTER INSERT ON memories BEGIN
    UPDATE meta SET value = CAST(CAST(value AS INTEGER) + 1 AS TEXT)
     WHERE key = 'memory_people_generation';
END;
CREATE TRIGGER memory_people_changed AFTER UPDATE OF text, status, source_kind ON memories BEGIN
    UPDATE meta SET value = CAST(CAST(value AS INTEGER) + 1 AS TEXT)
     WHERE key = 'memory_people_generation';
END;
CREATE TRIGGER memory_people_deleted AFTER DELETE ON memories BEGIN
    UPDATE meta SET value = CAST(CAST(value AS INTEGER) + 1 AS TEXT)
     WHERE key = 'memory_people_generation';
END;
