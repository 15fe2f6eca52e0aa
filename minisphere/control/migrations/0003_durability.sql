-- Durability: the last snapshot status each workspace actor reported, its newest
-- version, and whether writes are not yet in any snapshot (hibernated while the store was down).
ALTER TABLE workspaces ADD COLUMN snapshot_json TEXT;
ALTER TABLE workspaces ADD COLUMN last_snapshot_version TEXT;
ALTER TABLE workspaces ADD COLUMN snapshot_pending INTEGER NOT NULL DEFAULT 0;
