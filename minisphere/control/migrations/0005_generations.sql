-- Each creation of a workspace id gets its own generation, and its snapshots are stored under
-- it, so a workspace re-created with the same id never lists or restores the snapshots of the
-- one deleted before it. NULL: a workspace created before generations (its snapshots keep the
-- older layout, directly under the id).
ALTER TABLE workspaces ADD COLUMN generation TEXT;

-- Snapshots of deleted workspaces that could not be removed yet (the store was down); the
-- directory retries until they are gone. generation '' stands for the older layout.
CREATE TABLE snapshot_debts (
    workspace_id TEXT    NOT NULL,
    generation   TEXT    NOT NULL,
    since        INTEGER NOT NULL,
    attempts     INTEGER NOT NULL DEFAULT 0,
    last_error   TEXT,
    PRIMARY KEY (workspace_id, generation)
);
