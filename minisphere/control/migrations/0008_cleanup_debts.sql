-- Workspaces that hibernated while a forget's clean-up outside their file was still unpaid
-- (the replica's history not started over, snapshot versions from before it not deleted: the
-- store was down). The directory wakes each again when `next_at` (epoch ms) comes, on a growing
-- back-off, so forgotten text does not wait in the store for as long as the workspace sleeps.
CREATE TABLE cleanup_debts (
    workspace_id TEXT    NOT NULL PRIMARY KEY,
    since        INTEGER NOT NULL,
    attempts     INTEGER NOT NULL DEFAULT 1,
    next_at      INTEGER NOT NULL,
    last_error   TEXT
);
