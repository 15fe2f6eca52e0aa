-- A forget is permanent: with secure-delete, deleting an entry removes its words from the FTS5
-- segments themselves instead of marking them deleted, so the text leaves the index too (the
-- write connection also runs with PRAGMA secure_delete, which zeroes freed table pages).
INSERT INTO entries_fts(entries_fts, rank) VALUES ('secure-delete', 1);

-- Idempotent writes: the answer of every write sent with an idempotency key, stored in the
-- same transaction as the write, so a repeat of the same call answers it again and writes
-- nothing; the same key with another call is refused. Kept at least a day.
CREATE TABLE idempotency_keys (
    key        TEXT    PRIMARY KEY,
    method     TEXT    NOT NULL,
    body_hash  TEXT    NOT NULL,
    answer     TEXT    NOT NULL,
    at         INTEGER NOT NULL
) WITHOUT ROWID;
CREATE INDEX idempotency_keys_by_age ON idempotency_keys(at);
