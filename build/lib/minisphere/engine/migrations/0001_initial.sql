-- Mini-Sphere workspace schema v1 (MINI_SPHERE_CONTRACT@0.1 §4).
-- `seq` is an explicit rowid alias so FTS rows stay bound to their entry across VACUUM.

CREATE TABLE entries (
    seq              INTEGER PRIMARY KEY,
    id               TEXT    NOT NULL UNIQUE,
    content          TEXT    NOT NULL,
    source           TEXT,
    created_at       INTEGER NOT NULL,            -- epoch ms
    updated_at       INTEGER NOT NULL,            -- epoch ms; moves only on write/confirmation
    recall_count     INTEGER NOT NULL DEFAULT 0,
    importance_score REAL    NOT NULL DEFAULT 0 CHECK (importance_score BETWEEN 0 AND 1),
    claim_tag        TEXT    CHECK (claim_tag IN ('VERIFIED', 'INFERRED', 'UNKNOWN')),
    evidence_ref     TEXT,
    status           TEXT    NOT NULL CHECK (status IN ('canonical', 'draft', 'deprecated')),
    kind             TEXT    NOT NULL CHECK (kind IN ('episodic', 'semantic')),
    volatility       TEXT    NOT NULL CHECK (volatility IN ('durable', 'state', 'volatile')),
    unclassified     INTEGER NOT NULL DEFAULT 0,  -- 1 when kind or volatility was not given by the caller
    content_hash     TEXT    NOT NULL             -- sha256 of normalized content (exact dedup)
);
CREATE INDEX entries_status     ON entries(status);
CREATE INDEX entries_kind       ON entries(kind);
CREATE INDEX entries_volatility ON entries(volatility);
CREATE INDEX entries_created    ON entries(created_at);
CREATE INDEX entries_updated    ON entries(updated_at);
CREATE INDEX entries_hash       ON entries(content_hash);

CREATE TABLE tags (
    entry_id TEXT NOT NULL REFERENCES entries(id) ON DELETE CASCADE,
    tag      TEXT NOT NULL,
    PRIMARY KEY (entry_id, tag)
) WITHOUT ROWID;
CREATE INDEX tags_by_tag ON tags(tag, entry_id);

CREATE TABLE edges (
    src        TEXT    NOT NULL REFERENCES entries(id) ON DELETE CASCADE,
    dst        TEXT    NOT NULL REFERENCES entries(id) ON DELETE CASCADE,
    type       TEXT    NOT NULL CHECK (type IN ('relates_to', 'supersedes', 'caused_by', 'decided',
                                                'about_person', 'part_of_project', 'follows',
                                                'document_of')),
    weight     REAL    NOT NULL CHECK (weight > 0 AND weight <= 1),
    provenance TEXT    NOT NULL CHECK (provenance IN ('explicit', 'inferred', 'system')),
    metadata   TEXT,                              -- JSON object or NULL
    created_at INTEGER NOT NULL,
    updated_at INTEGER NOT NULL,
    UNIQUE (src, dst, type),
    CHECK (src <> dst),
    CHECK (type <> 'relates_to' OR src < dst)
);
CREATE INDEX edges_src ON edges(src);
CREATE INDEX edges_dst ON edges(dst);

CREATE TABLE revisions (
    seq      INTEGER PRIMARY KEY,
    entry_id TEXT    NOT NULL REFERENCES entries(id) ON DELETE CASCADE,
    content  TEXT    NOT NULL,                    -- the content as it was before the change
    at       INTEGER NOT NULL,                    -- epoch ms of the change
    reason   TEXT    NOT NULL CHECK (reason IN ('append', 'update'))
);
CREATE INDEX revisions_entry ON revisions(entry_id, at);

-- Keyword index. External-content FTS5 over entries.content, kept in sync by triggers so every
-- write that touches content updates the index inside the same transaction.
-- Tokenizer: porter over unicode61. Porter stems English ("decided"/"decides"/"decision" -> one
-- stem) which measurably lifts BM25 recall for natural-language agent notes; unicode61 with
-- remove_diacritics 2 folds case and accents for every script, so non-English text still
-- tokenizes sanely (porter leaves non-ASCII tokens unchanged).
CREATE VIRTUAL TABLE entries_fts USING fts5(
    content,
    content = 'entries',
    content_rowid = 'seq',
    tokenize = 'porter unicode61 remove_diacritics 2'
);

CREATE TRIGGER entries_fts_insert AFTER INSERT ON entries BEGIN
    INSERT INTO entries_fts(rowid, content) VALUES (new.seq, new.content);
END;
CREATE TRIGGER entries_fts_delete AFTER DELETE ON entries BEGIN
    INSERT INTO entries_fts(entries_fts, rowid, content) VALUES ('delete', old.seq, old.content);
END;
CREATE TRIGGER entries_fts_update AFTER UPDATE OF content ON entries BEGIN
    INSERT INTO entries_fts(entries_fts, rowid, content) VALUES ('delete', old.seq, old.content);
    INSERT INTO entries_fts(rowid, content) VALUES (new.seq, new.content);
END;

-- Free-form per-workspace facts (e.g. the contract the workspace was born with).
CREATE TABLE workspace_meta (
    key   TEXT PRIMARY KEY,
    value TEXT NOT NULL
) WITHOUT ROWID;
