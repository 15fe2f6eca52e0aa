-- The live actor holding each resident workspace (NULL while hibernated). Actor names never
-- change, so a restarted directory, or a workspace actor Ray restarted after a crash, finds the
-- binding here.
ALTER TABLE workspaces ADD COLUMN actor_name TEXT;
CREATE INDEX workspaces_by_actor ON workspaces(actor_name);
