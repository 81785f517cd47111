-- Spending caps: the estimated cost of a priced call in flight, held until the ledger has
-- its real cost (so two processes, or a turn and background work, cannot both pass a cap
-- the sum of their calls crosses). A row outlives a crashed process only until expires_at.
CREATE TABLE budget_reservations (
    id INTEGER PRIMARY KEY,
    provider TEXT NOT NULL,
    usd REAL NOT NULL,
    expires_at INTEGER NOT NULL
);
