-- What each provider call cost, from the built-in price table (NULL: unknown price).
ALTER TABLE usage_ledger ADD COLUMN cost_usd REAL;
