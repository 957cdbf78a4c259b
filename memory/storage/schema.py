"""The memory database's schema, owned and migrated by the store.

``MIGRATIONS[n]`` takes a database from version n to n+1; the version lives in
``meta.schema_version``. Vector tables are not here: there is one per embedder
(``vec_<slug>``, see ``memory.storage.vectors``), created when that embedder is first used.
"""

from __future__ import annotations

SCHEMA_V1 = """
CREATE TABLE IF NOT EXISTS meta (
    key   TEXT PRIMARY KEY,
    value TEXT NOT NULL
);

-- rowid is AUTOINCREMENT so a deleted crystal's rowid is never reused: vec0 and FTS key on it.
CREATE TABLE crystals (
    rowid             INTEGER PRIMARY KEY AUTOINCREMENT,
    id                TEXT NOT NULL UNIQUE,
    text              TEXT NOT NULL,
    content_hash      TEXT NOT NULL UNIQUE,
    semantic_type     TEXT NOT NULL,
    origin            TEXT NOT NULL,
    created_at_ms     INTEGER NOT NULL,
    stored_at_ms      INTEGER NOT NULL,
    updated_at_ms     INTEGER NOT NULL,
    source_path       TEXT,
    source            TEXT,
    line_start        INTEGER,
    line_end          INTEGER,
    importance        REAL NOT NULL,
    access_count      INTEGER NOT NULL DEFAULT 0,
    last_access_ms    INTEGER,
    emotional_valence REAL NOT NULL DEFAULT 0,
    dopamine          REAL NOT NULL DEFAULT 0,
    cortisol          REAL NOT NULL DEFAULT 0,
    oxytocin          REAL NOT NULL DEFAULT 0,
    curiosity_boost   REAL NOT NULL DEFAULT 0,
    dream_count       INTEGER NOT NULL DEFAULT 0,
    last_dream_ms     INTEGER,
    steering_reward   REAL NOT NULL DEFAULT 0,
    epistemic_layer   TEXT NOT NULL,
    is_verified       INTEGER NOT NULL DEFAULT 0,
    verified_by       TEXT,
    bounty_id         TEXT,
    bounty_reward     INTEGER,
    stable_skill_id   TEXT,
    skill_version     INTEGER,
    previous_version_id TEXT,
    deprecated        INTEGER NOT NULL DEFAULT 0,
    deprecated_by     TEXT,
    tags              TEXT NOT NULL DEFAULT '',   -- space-separated, also indexed by FTS
    category          TEXT,
    lifecycle         TEXT NOT NULL,
    scope             TEXT NOT NULL,
    sensitivity       TEXT NOT NULL,
    lifespan          TEXT NOT NULL,
    expires_at_ms     INTEGER,
    embedded_with     TEXT                          -- embedder id of its vector, NULL until embedded
);
CREATE INDEX crystals_created ON crystals (created_at_ms);
CREATE INDEX crystals_type_created ON crystals (semantic_type, created_at_ms);
CREATE INDEX crystals_lifecycle ON crystals (lifecycle);
CREATE INDEX crystals_importance ON crystals (importance);
CREATE INDEX crystals_expires ON crystals (expires_at_ms) WHERE expires_at_ms IS NOT NULL;
CREATE INDEX crystals_unembedded ON crystals (embedded_with);
CREATE INDEX crystals_skill ON crystals (stable_skill_id) WHERE stable_skill_id IS NOT NULL;

CREATE VIRTUAL TABLE crystals_fts USING fts5(
    text, tags, content='crystals', content_rowid='rowid', tokenize='porter unicode61'
);
CREATE TRIGGER crystals_fts_insert AFTER INSERT ON crystals BEGIN
    INSERT INTO crystals_fts (rowid, text, tags) VALUES (new.rowid, new.text, new.tags);
END;
CREATE TRIGGER crystals_fts_delete AFTER DELETE ON crystals BEGIN
    INSERT INTO crystals_fts (crystals_fts, rowid, text, tags) VALUES ('delete', old.rowid, old.text, old.tags);
END;
CREATE TRIGGER crystals_fts_update AFTER UPDATE OF text, tags ON crystals BEGIN
    INSERT INTO crystals_fts (crystals_fts, rowid, text, tags) VALUES ('delete', old.rowid, old.text, old.tags);
    INSERT INTO crystals_fts (rowid, text, tags) VALUES (new.rowid, new.text, new.tags);
END;

-- Typed graph edges. Deleting nothing: edges to archived crystals stay for provenance.
CREATE TABLE associations (
    src_id     TEXT NOT NULL,
    dst_id     TEXT NOT NULL,
    type       TEXT NOT NULL,
    weight     REAL NOT NULL,
    created_ms INTEGER NOT NULL,
    PRIMARY KEY (src_id, dst_id, type)
);
CREATE INDEX associations_dst ON associations (dst_id);

-- Derivation DAG: child was derived from parent (merge, dream synthesis, new skill version…).
CREATE TABLE provenance (
    child_id  TEXT NOT NULL,
    parent_id TEXT NOT NULL,
    relation  TEXT NOT NULL,
    PRIMARY KEY (child_id, parent_id)
);
CREATE INDEX provenance_parent ON provenance (parent_id);

-- Attribution chain: who did what to a crystal, in order.
CREATE TABLE attributions (
    seq        INTEGER PRIMARY KEY AUTOINCREMENT,
    crystal_id TEXT NOT NULL,
    actor      TEXT NOT NULL,
    action     TEXT NOT NULL,
    ts_ms      INTEGER NOT NULL,
    detail     TEXT
);
CREATE INDEX attributions_crystal ON attributions (crystal_id, seq);

-- Every lifecycle transition, including creation (from_state NULL).
CREATE TABLE audit_log (
    seq        INTEGER PRIMARY KEY AUTOINCREMENT,
    crystal_id TEXT NOT NULL,
    from_state TEXT,
    to_state   TEXT NOT NULL,
    reason     TEXT NOT NULL,
    actor      TEXT NOT NULL,
    ts_ms      INTEGER NOT NULL
);
CREATE INDEX audit_crystal ON audit_log (crystal_id, seq);

-- Files already imported, so a re-run (or a resumed, interrupted import) skips them.
CREATE TABLE imported_files (
    path         TEXT PRIMARY KEY,
    content_hash TEXT NOT NULL,
    crystals     INTEGER NOT NULL,
    imported_ms  INTEGER NOT NULL
);
"""

# v2: the store indexes new rows in FTS with one INSERT ... SELECT per batch, which is about
# twice as fast as a per-row trigger (measured: 9.9K vs 5.0K rows/s); update/delete triggers stay.
SCHEMA_V2 = """
DROP TRIGGER IF EXISTS crystals_fts_insert;
-- Too unselective to help (most rows share a lifecycle) and it lured the planner into scans.
DROP INDEX IF EXISTS crystals_lifecycle;
-- Situating text embedded with the crystal (see NewCrystal.context).
ALTER TABLE crystals ADD COLUMN context TEXT;
INSERT INTO crystals_fts (crystals_fts, rank) VALUES ('automerge', 16);
"""

# v3: the crystal's context is keyword-searchable too, in its own FTS column that search weights
# below the text (LoCoMo: BM25 recall@10 0.654 -> 0.740 with the surrounding turns at weight 0.35).
SCHEMA_V3 = """
DROP TRIGGER IF EXISTS crystals_fts_delete;
DROP TRIGGER IF EXISTS crystals_fts_update;
DROP TABLE IF EXISTS crystals_fts;
CREATE VIRTUAL TABLE crystals_fts USING fts5(
    text, tags, context, content='crystals', content_rowid='rowid', tokenize='porter unicode61'
);
INSERT INTO crystals_fts (crystals_fts, rank) VALUES ('automerge', 16);
INSERT INTO crystals_fts (crystals_fts) VALUES ('rebuild');
CREATE TRIGGER crystals_fts_delete AFTER DELETE ON crystals BEGIN
    INSERT INTO crystals_fts (crystals_fts, rowid, text, tags, context)
    VALUES ('delete', old.rowid, old.text, old.tags, coalesce(old.context, ''));
END;
CREATE TRIGGER crystals_fts_update AFTER UPDATE OF text, tags, context ON crystals BEGIN
    INSERT INTO crystals_fts (crystals_fts, rowid, text, tags, context)
    VALUES ('delete', old.rowid, old.text, old.tags, coalesce(old.context, ''));
    INSERT INTO crystals_fts (rowid, text, tags, context)
    VALUES (new.rowid, new.text, new.tags, coalesce(new.context, ''));
END;
"""

# v4: memory dynamics. A merge is recorded so that it can be undone; the replay queue is the
# spaced-repetition schedule (1, 3, 7, 14, 30 days) the dream cycle draws from.
SCHEMA_V4 = """
CREATE TABLE merges (
    loser_id          TEXT PRIMARY KEY,
    winner_id         TEXT NOT NULL,
    similarity        REAL NOT NULL,
    loser_lifecycle   TEXT NOT NULL,   -- what unmerge restores
    winner_lifecycle  TEXT NOT NULL,
    moved_accesses    INTEGER NOT NULL, -- added to the winner; unmerge takes them back
    merged_ms         INTEGER NOT NULL
);
CREATE INDEX merges_winner ON merges (winner_id);
CREATE TABLE replay_queue (
    crystal_id TEXT PRIMARY KEY,
    stage      INTEGER NOT NULL,        -- index into the replay intervals
    due_ms     INTEGER NOT NULL
);
CREATE INDEX replay_due ON replay_queue (due_ms);
"""

# v5: executions of skills, as the local agent reports them: the marketplace's quality gate and
# price, and the trust of the peer a skill came from, are computed from these.
SCHEMA_V5 = """
CREATE TABLE skill_executions (
    seq          INTEGER PRIMARY KEY AUTOINCREMENT,
    crystal_id   TEXT NOT NULL,
    ts_ms        INTEGER NOT NULL,
    success      INTEGER NOT NULL,     -- 1 or 0
    reward_milli INTEGER NOT NULL,     -- 0..1000
    actor        TEXT NOT NULL
);
CREATE INDEX skill_executions_crystal ON skill_executions (crystal_id);
"""

# v6: skill listings seen on the network (and this node's own), newest version per seller and skill.
# The signed envelope is kept: a buyer later proves what was offered (content hash, price) with it.
SCHEMA_V6 = """
CREATE TABLE listings (
    seller           TEXT NOT NULL,      -- hex public key
    stable_skill_id  TEXT NOT NULL,
    version          INTEGER NOT NULL,
    content_hash     TEXT NOT NULL,
    title            TEXT NOT NULL,
    category         TEXT NOT NULL,
    price_micro_usdc INTEGER NOT NULL,
    seller_address   TEXT NOT NULL,
    executions       INTEGER NOT NULL,
    successes        INTEGER NOT NULL,
    revoked          INTEGER NOT NULL DEFAULT 0,
    received_ms      INTEGER NOT NULL,
    envelope         BLOB NOT NULL,
    PRIMARY KEY (seller, stable_skill_id)
);
CREATE INDEX listings_category ON listings (category);
"""

# v7: purchases (as buyer) and sales (as seller), one row per purchase id, every step persisted so
# that a restart resumes a purchase where it stood; the signed quote is kept as proof.
SCHEMA_V7 = """
CREATE TABLE purchases (
    purchase_id   TEXT PRIMARY KEY,      -- hex, chosen by the seller in the signed quote
    seller        TEXT NOT NULL,
    seller_peer   TEXT NOT NULL,
    quote         BLOB NOT NULL,         -- the seller's signed quote envelope
    state         TEXT NOT NULL,         -- quoted, locked, completed, refused, refunded
    detail        TEXT NOT NULL DEFAULT '',
    crystal_id    TEXT,
    updated_ms    INTEGER NOT NULL
);
CREATE TABLE sales (
    purchase_id   TEXT PRIMARY KEY,
    buyer         TEXT NOT NULL,
    crystal_id    TEXT NOT NULL,
    quote         BLOB NOT NULL,
    state         TEXT NOT NULL,         -- quoted, delivered
    updated_ms    INTEGER NOT NULL
);
"""

# v8: bounties seen on the network (and this node's own), and management endorsements of listed
# skills (one per seller, skill and endorser; it covers the content hash it names, nothing newer).
SCHEMA_V8 = """
CREATE TABLE bounties (
    author            TEXT NOT NULL,     -- hex public key
    bounty_id         TEXT NOT NULL,
    description       TEXT NOT NULL,
    tags              TEXT NOT NULL,     -- JSON array
    category          TEXT NOT NULL,
    reward_micro_usdc INTEGER NOT NULL,
    expires_ms        INTEGER NOT NULL,
    received_ms       INTEGER NOT NULL,
    envelope          BLOB NOT NULL,
    PRIMARY KEY (author, bounty_id)
);
CREATE INDEX bounties_expiry ON bounties (expires_ms);
CREATE TABLE endorsements (
    seller            TEXT NOT NULL,
    stable_skill_id   TEXT NOT NULL,
    endorser          TEXT NOT NULL,
    version           INTEGER NOT NULL,
    content_hash      TEXT NOT NULL,
    received_ms       INTEGER NOT NULL,
    envelope          BLOB NOT NULL,
    PRIMARY KEY (seller, stable_skill_id, endorser)
);
"""

# v9: how each purchase pays: through the escrow, or directly (a signed EIP-3009 authorization the
# seller collects before it delivers).
SCHEMA_V9 = """
ALTER TABLE purchases ADD COLUMN payment TEXT NOT NULL DEFAULT 'escrow';
"""

# v10: quarantine. Content from peers without standing, or that reads like instructions to the
# agent, is stored but held: out of default search, MEMORY.md, the bootstrap text and dream
# prompts until the person approves it. ``quarantine`` keeps why, and the decision (a rejected
# text is refused if it comes again). Peer content stored before v10, except what this node
# bought, is held for review.
SCHEMA_V10 = """
ALTER TABLE crystals ADD COLUMN quarantined INTEGER NOT NULL DEFAULT 0;
CREATE TABLE quarantine (
    crystal_id   TEXT PRIMARY KEY,
    content_hash TEXT NOT NULL,
    source       TEXT NOT NULL,        -- who sent it: peer:<hex key>
    reason       TEXT NOT NULL,        -- why it is held
    flags        TEXT NOT NULL,        -- JSON array: instruction-like findings in its text
    status       TEXT NOT NULL,        -- held, approved, rejected
    received_ms  INTEGER NOT NULL,
    decided_ms   INTEGER,
    decided_by   TEXT
);
CREATE INDEX quarantine_status ON quarantine (status, received_ms);
CREATE INDEX quarantine_hash ON quarantine (content_hash);
INSERT INTO quarantine (crystal_id, content_hash, source, reason, flags, status, received_ms)
SELECT id, content_hash, coalesce(source, 'peer'), 'received from a peer before quarantine existed', '[]', 'held',
       stored_at_ms
FROM crystals
WHERE origin = 'peer' AND lifecycle != 'expired'
  AND id NOT IN (SELECT crystal_id FROM purchases WHERE crystal_id IS NOT NULL);
UPDATE crystals SET quarantined = 1 WHERE id IN (SELECT crystal_id FROM quarantine);
"""

# v11: quotas on what peers may store here (memory.governance.peer_quota). ``text_bytes`` is the UTF-8 size of
# the text, kept at insert (the text never changes), so a quota sums an index instead of reading
# every text; the partial index covers exactly the content a quota counts.
SCHEMA_V11 = """
ALTER TABLE crystals ADD COLUMN text_bytes INTEGER NOT NULL DEFAULT 0;
UPDATE crystals SET text_bytes = length(CAST(text AS BLOB));
CREATE INDEX crystals_peer_content ON crystals (source, stored_at_ms, text_bytes)
    WHERE origin = 'peer' AND scope = 'shared' AND lifecycle != 'expired';
"""

# v12: what peers publish to the market is bounded and indexed (marketplace.received_quota,
# marketplace.bounties, marketplace.catalog). ``bounties_fts`` finds the bounties a skill's words,
# tags or category could answer without reading every bounty; ``listings_fts`` does the same for
# listings and ranks a `skills list` query. Each keeps its own copy of the words, keyed by the
# row's primary key (no rowid to go stale).
SCHEMA_V12 = """
CREATE VIRTUAL TABLE bounties_fts USING fts5(author UNINDEXED, bounty_id UNINDEXED, words);
INSERT INTO bounties_fts (author, bounty_id, words)
SELECT author, bounty_id, description || ' ' || tags || ' ' || category FROM bounties;
CREATE TRIGGER bounties_fts_insert AFTER INSERT ON bounties BEGIN
    INSERT INTO bounties_fts (author, bounty_id, words)
    VALUES (new.author, new.bounty_id, new.description || ' ' || new.tags || ' ' || new.category);
END;
CREATE TRIGGER bounties_fts_update AFTER UPDATE ON bounties BEGIN
    DELETE FROM bounties_fts WHERE author = old.author AND bounty_id = old.bounty_id;
    INSERT INTO bounties_fts (author, bounty_id, words)
    VALUES (new.author, new.bounty_id, new.description || ' ' || new.tags || ' ' || new.category);
END;
CREATE TRIGGER bounties_fts_delete AFTER DELETE ON bounties BEGIN
    DELETE FROM bounties_fts WHERE author = old.author AND bounty_id = old.bounty_id;
END;
CREATE VIRTUAL TABLE listings_fts USING fts5(seller UNINDEXED, stable_skill_id UNINDEXED, text, tags, category);
-- text is the title and description, tags one per line. A listing's description and tags are in its
-- signed envelope only (msgpack); rows from before v12 are matched by title and category until their
-- seller publishes again.
INSERT INTO listings_fts (seller, stable_skill_id, text, tags, category)
SELECT seller, stable_skill_id, title, '', category FROM listings;
CREATE TRIGGER listings_fts_delete AFTER DELETE ON listings BEGIN
    DELETE FROM listings_fts WHERE seller = old.seller AND stable_skill_id = old.stable_skill_id;
END;
CREATE INDEX listings_seller_received ON listings (seller, received_ms);
CREATE INDEX bounties_author_received ON bounties (author, received_ms);
"""

#: MIGRATIONS[n] upgrades version n to n+1. Version 0 is an empty file.
MIGRATIONS: list[str] = [
    SCHEMA_V1, SCHEMA_V2, SCHEMA_V3, SCHEMA_V4, SCHEMA_V5, SCHEMA_V6, SCHEMA_V7, SCHEMA_V8, SCHEMA_V9, SCHEMA_V10,
    SCHEMA_V11, SCHEMA_V12,
]  # fmt: skip
SCHEMA_VERSION = len(MIGRATIONS)
