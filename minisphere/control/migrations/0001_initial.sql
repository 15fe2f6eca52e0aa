-- Control plane (directory): one row per workspace, its tokens (hashed), and an audit trail.
CREATE TABLE workspaces (
    id             TEXT    PRIMARY KEY,
    created_at     INTEGER NOT NULL,
    updated_at     INTEGER NOT NULL,
    state          TEXT    NOT NULL DEFAULT 'active'
                   CHECK (state IN ('active', 'hibernated', 'deleting')),
    contracts_json TEXT    NOT NULL,   -- [{"name", "version", "sha256"}] it was born with
    blueprint_json TEXT    NOT NULL,
    label          TEXT,
    node_id        TEXT,               -- placement: node holding the file
    last_active_at INTEGER
);

CREATE TABLE workspace_tokens (
    token_hash   TEXT    PRIMARY KEY,  -- sha256 hex of the bearer token; never the token
    workspace_id TEXT    NOT NULL REFERENCES workspaces(id) ON DELETE CASCADE,
    created_at   INTEGER NOT NULL
);
CREATE INDEX workspace_tokens_by_workspace ON workspace_tokens(workspace_id);

CREATE TABLE audit (
    seq          INTEGER PRIMARY KEY AUTOINCREMENT,
    at           INTEGER NOT NULL,
    workspace_id TEXT,
    action       TEXT    NOT NULL,
    detail       TEXT
);
