-- Tokens become grants that can be listed, scoped, given a lifetime and revoked one by one.
-- A token created before this migration keeps what it could do: scope write, no expiry. Its
-- id is derived from its hash (the hash is never shown; the id is what an admin revokes).
ALTER TABLE workspace_tokens ADD COLUMN token_id TEXT;
ALTER TABLE workspace_tokens ADD COLUMN scope TEXT NOT NULL DEFAULT 'write'
    CHECK (scope IN ('read', 'write'));
ALTER TABLE workspace_tokens ADD COLUMN label TEXT;
ALTER TABLE workspace_tokens ADD COLUMN expires_at INTEGER;
ALTER TABLE workspace_tokens ADD COLUMN last_used_at INTEGER;
UPDATE workspace_tokens SET token_id = 'tok-' || substr(token_hash, 1, 16) WHERE token_id IS NULL;
CREATE UNIQUE INDEX workspace_tokens_by_id ON workspace_tokens(token_id);
