-- A memory the assistant removed on its own (reconciliation DELETE) waits for the user's
-- consent: 1 until the user restores it, or the consent gate (a later feature) asks.
-- The user's own deletes never land here: they are real deletes.
ALTER TABLE memories ADD COLUMN removal_awaits_consent INTEGER NOT NULL DEFAULT 0
    CHECK (removal_awaits_consent IN (0, 1));
