-- An exact entry count kept by triggers, so "how many entries" costs one row read instead of a
-- scan (recall's distillation and feedback ask on every call).
CREATE TABLE counters (
    name  TEXT PRIMARY KEY,
    value INTEGER NOT NULL
) WITHOUT ROWID;
INSERT INTO counters(name, value) SELECT 'entries', COUNT(*) FROM entries;
CREATE TRIGGER entries_count_insert AFTER INSERT ON entries BEGIN
    UPDATE counters SET value = value + 1 WHERE name = 'entries';
END;
CREATE TRIGGER entries_count_delete AFTER DELETE ON entries BEGIN
    UPDATE counters SET value = value - 1 WHERE name = 'entries';
END;
