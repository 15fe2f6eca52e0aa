-- Maintenance: the audit of every staleness run, and per workspace what the last
-- pass said about when something can next turn stale (so the scheduler can skip a workspace
-- without waking its actor).

-- One row per run (cron or manual), kept after the workspace is deleted (it is an audit).
CREATE TABLE maintenance_runs (
    seq          INTEGER PRIMARY KEY AUTOINCREMENT,   -- insertion order: newest = largest
    run_id       TEXT    NOT NULL UNIQUE,
    workspace_id TEXT    NOT NULL,
    trigger      TEXT    NOT NULL CHECK (trigger IN ('cron', 'manual')),
    started_at   INTEGER NOT NULL,                    -- epoch ms
    finished_at  INTEGER NOT NULL,                    -- epoch ms
    outcome      TEXT    NOT NULL CHECK (outcome IN ('ok', 'error', 'skipped')),
    calls        INTEGER NOT NULL DEFAULT 0,          -- runStalenessPass calls made by the run
    scanned      INTEGER NOT NULL DEFAULT 0,
    marked       INTEGER NOT NULL DEFAULT 0,
    cleared      INTEGER NOT NULL DEFAULT 0,
    remaining    INTEGER,                             -- after the last call (NULL: no call)
    next_due_at  INTEGER,                             -- after the last call, or the skip reason
    error        TEXT                                 -- error message, or why it was skipped
);
CREATE INDEX maintenance_runs_by_workspace ON maintenance_runs(workspace_id, seq);

-- What the last pass (or a due-changing write since) says about a workspace.
--   next_due_at  the pass's nextDueAt: when the next fresh entry turns stale (NULL: none can)
--   remaining    the pass's remaining (> 0: there is work now)
--   checked_at   when that pass was requested (epoch ms, scheduler's clock)
--   dirty_since  earliest capture/append/update not seen by that pass (NULL: none); such a
--                write can make an entry due no earlier than dirty_since + the shortest
--                volatility threshold
CREATE TABLE maintenance_due (
    workspace_id TEXT    PRIMARY KEY REFERENCES workspaces(id) ON DELETE CASCADE,
    next_due_at  INTEGER,
    remaining    INTEGER NOT NULL,
    checked_at   INTEGER NOT NULL,
    dirty_since  INTEGER
);
