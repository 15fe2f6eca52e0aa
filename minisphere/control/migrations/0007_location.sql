-- The location record of each workspace: where its live copy is (node_id, already there), the
-- fencing epoch handed to the host that opens it (one more on every activation), the newest
-- position (count of committed changes) known to be acknowledged, and the newest position the
-- snapshot store holds. A host never opens a copy below `position`; a copy elsewhere at or
-- below `stored_position` is safe to delete.
ALTER TABLE workspaces ADD COLUMN epoch INTEGER NOT NULL DEFAULT 0;
ALTER TABLE workspaces ADD COLUMN position INTEGER NOT NULL DEFAULT 0;
ALTER TABLE workspaces ADD COLUMN stored_position INTEGER NOT NULL DEFAULT 0;

-- Generations of deleted workspaces: every node deletes copies of these on sight (at a wake
-- and in its sweep), so a deleted workspace leaves no file behind on any node, and a workspace
-- re-created with the same id never opens one.
CREATE TABLE tombstones (
    workspace_id TEXT    NOT NULL,
    generation   TEXT    NOT NULL,
    deleted_at   INTEGER NOT NULL,
    PRIMARY KEY (workspace_id, generation)
);
