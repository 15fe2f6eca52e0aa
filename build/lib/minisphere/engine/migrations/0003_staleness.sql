-- Staleness bookkeeping (contract §7).
--   stale_due_at     when the entry turns stale unless re-confirmed: updated_at + threshold of
--                    its volatility (maintained by the engine on every confirming write)
--   stale_since      set by the staleness pass when it marks the entry (= stale_due_at), NULL
--                    while fresh
--   stale_checked_at when the pass last looked at the entry
ALTER TABLE entries ADD COLUMN stale_due_at INTEGER;
ALTER TABLE entries ADD COLUMN stale_since INTEGER;
ALTER TABLE entries ADD COLUMN stale_checked_at INTEGER;

-- Backfill with the thresholds in force when this migration was written (365 / 30 / 2 days).
UPDATE entries SET stale_due_at = updated_at + CASE volatility
    WHEN 'durable' THEN 31536000000 WHEN 'state' THEN 2592000000 ELSE 172800000 END;

-- The pass walks "fresh but due" entries longest-overdue first, and repairs "marked but
-- re-confirmed" ones; both are index range scans.
CREATE INDEX entries_stale_due    ON entries(stale_due_at) WHERE stale_since IS NULL;
CREATE INDEX entries_stale_marked ON entries(stale_due_at) WHERE stale_since IS NOT NULL;
