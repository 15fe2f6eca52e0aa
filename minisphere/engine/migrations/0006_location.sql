-- Where this copy of the workspace stands, so a host can tell a current file from a stale or
-- foreign one before it opens it:
--   generation  the creation of the workspace id this file belongs to (NULL: made before
--               files carried it; adopted by the first host that opens it)
--   epoch       the fencing token of the last host that opened it for writing; a host holding
--               an older epoch must not write (another owner has taken over)
--   position    how many committed transactions changed the memory: the same number travels
--               in every snapshot, so a copy is current exactly when its position is the newest
CREATE TABLE location (
    one        INTEGER PRIMARY KEY CHECK (one = 1),
    generation TEXT,
    epoch      INTEGER NOT NULL DEFAULT 0,
    position   INTEGER NOT NULL DEFAULT 0
);
INSERT INTO location(one, generation, epoch, position) VALUES (1, NULL, 0, 0);
