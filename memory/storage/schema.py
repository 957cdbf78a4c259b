"""The memory's tables in the database, owned and migrated by the store.

``MIGRATIONS[n]`` takes them from version n to n+1; the version lives in
``meta.schema_version``. Other packages' tables in the same file are their own sets
(``memory.storage.migrations.SchemaSet``). Vector tables are not here: there is one per embedder
(``vec_<slug>``, see ``memory.storage.vectors``), created when that embedder is first used.
"""

from __future__ import annotations

import aiosqlite

from memory.epistemic import MIGRATE_LAYER_SQL
from memory.model import Sensitivity
from memory.sensitivity import classify_sensitivity
from memory.storage.migrations import Migration, SchemaSet, split_sql, table_exists

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

# v5-v9 created the marketplace's tables (skill executions, listings, purchases and sales, bounties
# and endorsements, the payment column). Those are the marketplace's own set now
# (``marketplace.schema``), which adopts them as older releases left them; here the versions remain,
# empty, so a file at any version still counts its steps the same way.
MOVED_TO_MARKETPLACE = ""

# v10: quarantine. Content from peers without standing, or that reads like instructions to the
# agent, is stored but held: out of default search, MEMORY.md, the bootstrap text and dream
# prompts until the person approves it. ``quarantine`` keeps why, and the decision (a rejected
# text is refused if it comes again). Peer content stored before v10, except what this node
# bought, is held for review.
_V10_TABLES = """
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
"""
_V10_HOLD = """
INSERT INTO quarantine (crystal_id, content_hash, source, reason, flags, status, received_ms)
SELECT id, content_hash, coalesce(source, 'peer'), 'received from a peer before quarantine existed', '[]', 'held',
       stored_at_ms
FROM crystals
WHERE origin = 'peer' AND lifecycle != 'expired'{not_bought};
UPDATE crystals SET quarantined = 1 WHERE id IN (SELECT crystal_id FROM quarantine);
"""


async def schema_v10(db: aiosqlite.Connection) -> None:
    for statement in split_sql(_V10_TABLES):
        await db.execute(statement)
    # What this node bought is not held. ``purchases`` is the marketplace's table: a file without it
    # (a store opened without the marketplace) bought nothing.
    not_bought = (
        "\n  AND id NOT IN (SELECT crystal_id FROM purchases WHERE crystal_id IS NOT NULL)"
        if await table_exists(db, "purchases")
        else ""
    )
    for statement in split_sql(_V10_HOLD.format(not_bought=not_bought)):
        await db.execute(statement)


# v11: quotas on what peers may store here (memory.governance.peer_quota). ``text_bytes`` is the UTF-8 size of
# the text, kept at insert (the text never changes), so a quota sums an index instead of reading
# every text; the partial index covers exactly the content a quota counts.
SCHEMA_V11 = """
ALTER TABLE crystals ADD COLUMN text_bytes INTEGER NOT NULL DEFAULT 0;
UPDATE crystals SET text_bytes = length(CAST(text AS BLOB));
CREATE INDEX crystals_peer_content ON crystals (source, stored_at_ms, text_bytes)
    WHERE origin = 'peer' AND scope = 'shared' AND lifecycle != 'expired';
"""

# v13: automatic typing and the design's epistemic layers (memory.cognition). Each crystal keeps
# how sure its typing was and who decided it (stored crystals were typed by their callers, or
# defaulted to general: 'legacy'); the old layers (observation, belief, knowledge, insight) map to
# experience, directive, world_fact and mental_model by type and origin. A person's corrections
# (``memory retype``) are kept as labelled examples the typer learns from.
SCHEMA_V13 = f"""
ALTER TABLE crystals ADD COLUMN type_confidence REAL NOT NULL DEFAULT 1.0;
ALTER TABLE crystals ADD COLUMN type_source TEXT NOT NULL DEFAULT 'caller';
UPDATE crystals SET type_source = 'legacy';
UPDATE crystals SET epistemic_layer = {MIGRATE_LAYER_SQL.strip()};
CREATE TABLE type_corrections (
    content_hash  TEXT PRIMARY KEY,
    text          TEXT NOT NULL,
    semantic_type TEXT NOT NULL,
    corrected_ms  INTEGER NOT NULL,
    actor         TEXT NOT NULL
);
CREATE INDEX type_corrections_time ON type_corrections (corrected_ms);
"""

# v14: keep-this. The importance a caller stated when it stored a crystal is a floor that
# consolidation never rescores below (stored crystals stated none: 0).
SCHEMA_V14 = """
ALTER TABLE crystals ADD COLUMN importance_floor REAL NOT NULL DEFAULT 0;
"""

# v15: curiosity gaps (memory.cognition.curiosity): searches that found nothing relevant, by their
# stemmed content words, with how often they were asked; closed by the crystal that filled them.
SCHEMA_V15 = """
CREATE TABLE curiosity_gaps (
    key        TEXT PRIMARY KEY,
    query      TEXT NOT NULL,
    asked      INTEGER NOT NULL,
    first_ms   INTEGER NOT NULL,
    last_ms    INTEGER NOT NULL,
    closed_ms  INTEGER,
    closed_by  TEXT
);
CREATE INDEX curiosity_gaps_open ON curiosity_gaps (asked, last_ms) WHERE closed_ms IS NULL;
"""

# v16: supersession (memory.supersession). A crystal a newer one replaced keeps its text and names
# its superseder and when that one was said (its creation time); default search shows the current
# one in its place, history searches still find it. ``memory unsupersede`` sets both back to NULL.
SCHEMA_V16 = """
ALTER TABLE crystals ADD COLUMN superseded_by TEXT;
ALTER TABLE crystals ADD COLUMN superseded_ms INTEGER;
CREATE INDEX crystals_superseded_by ON crystals (superseded_by) WHERE superseded_by IS NOT NULL;
"""

# v17: the time a crystal's own words name ("yesterday", "last Friday"), resolved against when it
# was said (memory.when), so that a question about that day finds it. Crystals stored
# before v17 keep NULL: they are found by when they were said, as before.
SCHEMA_V17 = """
ALTER TABLE crystals ADD COLUMN refers_from_ms INTEGER;
ALTER TABLE crystals ADD COLUMN refers_until_ms INTEGER;
"""


# v18: secrets found by phrasing (issue 27, memory.governance.secrets). A crystal stored under the
# earlier rules that the present ones call confidential ("the staging db pw is hunter2") is raised to
# confidential, so it leaves MEMORY.md, the bootstrap text and every remote endpoint; none is lowered
# (a person's or an earlier rule's caution stays). Read in batches: a store can hold a million.
async def schema_v18(db: aiosqlite.Connection) -> None:
    raised: list[tuple[str]] = []
    async with db.execute("SELECT id, text FROM crystals WHERE sensitivity != 'confidential'") as cursor:
        while batch := await cursor.fetchmany(10_000):
            raised += [(cid,) for cid, text in batch if classify_sensitivity(text) is Sensitivity.CONFIDENTIAL]
    await db.executemany("UPDATE crystals SET sensitivity = 'confidential' WHERE id = ?", raised)


# v19: where captured crystals came from (memory.capture): every message of a captured conversation,
# by its session and its key (the format's message id, else '#<position>'), with the crystal it
# became (NULL when it was left out as small talk, an echo or a system message). Capturing the same
# conversation again skips the messages found here; ``memory show`` links a crystal back to them.
SCHEMA_V19 = """
CREATE TABLE captured_messages (
    session      TEXT NOT NULL,
    message_key  TEXT NOT NULL,
    position     INTEGER NOT NULL,
    crystal_id   TEXT,
    captured_ms  INTEGER NOT NULL,
    PRIMARY KEY (session, message_key)
);
CREATE INDEX captured_messages_crystal ON captured_messages (crystal_id) WHERE crystal_id IS NOT NULL;
"""


# v20: continuous capture's watermarks (memory.capture.watch): per transcript file followed, how far
# it was read (bytes, messages), the hash of its first bytes (another one is a rewritten file), its
# format and session, and why it could not be read, if it could not.
SCHEMA_V20 = """
CREATE TABLE capture_files (
    path         TEXT PRIMARY KEY,
    size         INTEGER NOT NULL,
    mtime_ns     INTEGER NOT NULL,
    byte_offset  INTEGER NOT NULL,
    messages     INTEGER NOT NULL,
    head         TEXT NOT NULL,
    fmt          TEXT NOT NULL,
    session      TEXT NOT NULL,
    error        TEXT,
    updated_ms   INTEGER NOT NULL
);
"""


# v21: who said each crystal's words (``ground.authority``), which alone decides what they may do.
# Earlier releases recorded only the road in (origin) and who called (the 'created' attribution), so
# the speaker is read off both. Then what the table no
# longer allows is taken back: a directive whose speaker may not direct becomes what its type is
# (a preference of the agent's is a fact about the person, not an order). A captured piece is the
# person's when no line of it is the assistant's (the extractor wrote 'assistant: ' before those).
SCHEMA_V21 = """
ALTER TABLE crystals ADD COLUMN speaker TEXT NOT NULL DEFAULT 'file';
UPDATE crystals SET speaker = CASE
    WHEN origin = 'user_input' THEN
        CASE WHEN source = 'MEMORY.md (hand-written)' THEN 'agent' ELSE 'person' END
    WHEN origin IN ('dream', 'inferred') THEN 'node'
    WHEN origin = 'peer' THEN 'peer'
    WHEN origin = 'indexed' THEN 'file'
    WHEN origin = 'session' AND source LIKE 'capture:%' THEN
        CASE WHEN char(10) || text LIKE '%' || char(10) || 'assistant: %' THEN 'agent_in_transcript'
             ELSE 'person_in_transcript' END
    ELSE 'agent'
END;
UPDATE crystals SET epistemic_layer = CASE
    WHEN semantic_type IN ('fact', 'relationship', 'skill', 'preference') THEN 'world_fact'
    WHEN semantic_type IN ('insight', 'task_pattern') THEN 'mental_model'
    ELSE 'experience'
END
WHERE epistemic_layer = 'directive' AND speaker != 'person';
CREATE INDEX crystals_speaker ON crystals (speaker);
"""


# v22: the steps after embedding (type refined by meaning, links, supersession: the store's embedded
# hook) still owed, per crystal (memory.storage.after_embedding). Written with the vectors, cleared
# when the steps are done: a failure or a kill between the two leaves them owed, never lost.
SCHEMA_V22 = """
CREATE TABLE after_embedding_owed (
    rowid      INTEGER PRIMARY KEY,
    crystal_id TEXT NOT NULL,
    attempts   INTEGER NOT NULL DEFAULT 0,
    error      TEXT
);
"""


# v23: an unvouched-for export's restore under way (memory.transfer.foreign_ids): per file (its
# SHA-256), each record's id in the file, its text's hash, and whether that text was here before the
# file. A restore cut off and run again knows which crystals the file itself created, so it still
# applies the file's links and supersessions among them. Dropped once the restore completes.
SCHEMA_V23 = """
CREATE TABLE foreign_export_ids (
    source        TEXT NOT NULL,
    file_id       TEXT NOT NULL,
    content_hash  TEXT NOT NULL,
    was_here      INTEGER NOT NULL,
    PRIMARY KEY (source, file_id)
);
"""


# v24: the name a transcript gives whoever said a captured crystal's words (``voice``: "Caroline",
# "user"; NULL for words not from a transcript). Two people in one chat are both
# ``person_in_transcript`` to the authority table; supersession must still tell them apart (issue 52:
# one person's "I've started eating healthier" was hidden by another's "I've started a new diet").
# Crystals captured before v24 keep NULL: they are judged as before.
SCHEMA_V24 = """
ALTER TABLE crystals ADD COLUMN voice TEXT;
"""


# v25: the entity graph (memory.entities), derived from the words: each device keeps its own. By
# triggers, a crystal written or changed is owed a reading (``entities_owed``, every crystal of an
# older file too); its mentions and aliases go with its words in the same transaction, and an entity
# with no mention left goes too (an erasure leaves no name); ``mentions`` counts its crystals.
SCHEMA_V25 = """
CREATE TABLE entities (
    id       INTEGER PRIMARY KEY,
    key      TEXT NOT NULL UNIQUE,
    name     TEXT NOT NULL,
    kind     TEXT NOT NULL,
    owner    TEXT,
    mentions INTEGER NOT NULL DEFAULT 0
);
CREATE TABLE crystal_entities (
    crystal_rowid INTEGER NOT NULL,
    entity_id     INTEGER NOT NULL,
    role          TEXT NOT NULL,
    PRIMARY KEY (crystal_rowid, entity_id)
) WITHOUT ROWID;
CREATE INDEX crystal_entities_entity ON crystal_entities (entity_id, crystal_rowid);
CREATE TABLE entity_aliases (
    alias_key     TEXT NOT NULL,
    entity_id     INTEGER NOT NULL,
    crystal_rowid INTEGER NOT NULL,
    alias         TEXT NOT NULL,
    PRIMARY KEY (alias_key, entity_id, crystal_rowid)
) WITHOUT ROWID;
CREATE INDEX entity_aliases_crystal ON entity_aliases (crystal_rowid);
CREATE TABLE entities_owed (crystal_rowid INTEGER PRIMARY KEY);
INSERT INTO entities_owed (crystal_rowid) SELECT rowid FROM crystals;
CREATE TRIGGER entities_owed_new AFTER INSERT ON crystals BEGIN
    INSERT OR IGNORE INTO entities_owed (crystal_rowid) VALUES (new.rowid);
END;
CREATE TRIGGER entities_owed_changed AFTER UPDATE OF text, voice, context ON crystals BEGIN
    DELETE FROM crystal_entities WHERE crystal_rowid = old.rowid;
    DELETE FROM entity_aliases WHERE crystal_rowid = old.rowid;
    INSERT OR IGNORE INTO entities_owed (crystal_rowid) VALUES (new.rowid);
END;
CREATE TRIGGER entities_gone AFTER DELETE ON crystals BEGIN
    DELETE FROM crystal_entities WHERE crystal_rowid = old.rowid;
    DELETE FROM entity_aliases WHERE crystal_rowid = old.rowid;
    DELETE FROM entities_owed WHERE crystal_rowid = old.rowid;
END;
CREATE TRIGGER entity_mentioned AFTER INSERT ON crystal_entities BEGIN
    UPDATE entities SET mentions = mentions + 1 WHERE id = new.entity_id;
END;
CREATE TRIGGER entity_mention_gone AFTER DELETE ON crystal_entities BEGIN
    UPDATE entities SET mentions = mentions - 1 WHERE id = old.entity_id;
END;
CREATE TRIGGER entity_unmentioned AFTER DELETE ON crystal_entities
WHEN NOT EXISTS (SELECT 1 FROM crystal_entities WHERE entity_id = old.entity_id) BEGIN
    DELETE FROM entity_aliases WHERE entity_id = old.entity_id;
    DELETE FROM entities WHERE id = old.entity_id;
END;
"""


#: MIGRATIONS[n] upgrades version n to n+1. Version 0 is an empty file.
MIGRATIONS: list[Migration] = [
    SCHEMA_V1, SCHEMA_V2, SCHEMA_V3, SCHEMA_V4, MOVED_TO_MARKETPLACE, MOVED_TO_MARKETPLACE, MOVED_TO_MARKETPLACE,
    MOVED_TO_MARKETPLACE, MOVED_TO_MARKETPLACE, schema_v10, SCHEMA_V11, MOVED_TO_MARKETPLACE, SCHEMA_V13,
    SCHEMA_V14, SCHEMA_V15, SCHEMA_V16, SCHEMA_V17, schema_v18, SCHEMA_V19, SCHEMA_V20, SCHEMA_V21,
    SCHEMA_V22, SCHEMA_V23, SCHEMA_V24, SCHEMA_V25,
]  # fmt: skip
SCHEMA_VERSION = len(MIGRATIONS)
#: The memory's tables; its version keeps the key every release has used.
MEMORY_SCHEMA = SchemaSet("memory", "schema_version", MIGRATIONS)
