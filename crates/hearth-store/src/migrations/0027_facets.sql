-- Facets (issue 35): the parts of life a memory touches and three marks — a safety fact
-- (1 << 16), about another person (1 << 17), no longer true (1 << 18) — as a bit set
-- (hearth-memory/src/facets.rs). NULL until the memory layer tags a row written before
-- this migration (`Memories::tag_untagged`, run when Hearth opens the store).
-- `superseded_by`: the memory that replaced this one when the user's own words said it
-- changed ("we moved"); the old one stays, searchable, marked no longer true.
ALTER TABLE memories ADD COLUMN facets INTEGER;
ALTER TABLE memories ADD COLUMN superseded_by TEXT;
-- The user's own safety facts, read for every request about food, health or travel.
CREATE INDEX memories_own_safety ON memories (status) WHERE (facets & 196608) = 65536;
CREATE INDEX memories_untagged ON memories (n) WHERE facets IS NULL;
