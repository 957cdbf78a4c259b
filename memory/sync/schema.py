"""The tables of sync (``memory.sync``), a set of their own in the memory's database file.

- ``sync_ops``: every operation this device holds, its own and other devices', by author and
  number (``memory.sync.operations``). An erased crystal's operations keep their place with their
  words taken out.
- ``sync_image``: per crystal, what sync last knew of it (the fields operations carry). A change
  is found by comparing a crystal's row with its image: every writer of memory is covered, however
  it writes, without each having to remember to say so.
- ``sync_dirty``: crystals whose row changed since their image was taken, filled by triggers.
  The triggers write only while ``sync_on`` holds a row (a device in a group), so a node that is
  not paired pays one empty-table check per write.
"""

from __future__ import annotations

from memory.storage.migrations import SchemaSet

_WATCHED = "text, semantic_type, scope, lifecycle, lifespan, superseded_by, quarantined, speaker, embedded_with"

SYNC_V1 = f"""
CREATE TABLE sync_ops (
    device        TEXT NOT NULL,
    seq           INTEGER NOT NULL,
    wall_ms       INTEGER NOT NULL,
    counter       INTEGER NOT NULL,
    stamp_device  TEXT NOT NULL,
    speaker       TEXT NOT NULL,
    change        TEXT NOT NULL,
    target        TEXT NOT NULL,
    text          TEXT NOT NULL DEFAULT '',
    semantic_type TEXT NOT NULL DEFAULT '',
    scope         TEXT NOT NULL DEFAULT '',
    held          INTEGER NOT NULL DEFAULT 0,
    other         TEXT NOT NULL DEFAULT '',
    emptied       INTEGER NOT NULL DEFAULT 0,
    details       TEXT NOT NULL DEFAULT '',   -- STORE: the rest of the crystal, as the export writes it
    model         TEXT NOT NULL DEFAULT '',   -- VECTOR: the embedder's id
    vector        BLOB,                       -- VECTOR: float32
    PRIMARY KEY (device, seq)
);
CREATE INDEX sync_ops_target ON sync_ops (target);
CREATE TABLE sync_image (
    crystal_id TEXT PRIMARY KEY,
    image      TEXT NOT NULL                  -- JSON: memory.sync.image.Image
);
CREATE TABLE sync_dirty (crystal_id TEXT PRIMARY KEY);
CREATE TABLE sync_on (one INTEGER PRIMARY KEY CHECK (one = 1));
CREATE TRIGGER sync_dirty_insert AFTER INSERT ON crystals WHEN EXISTS (SELECT 1 FROM sync_on) BEGIN
    INSERT OR IGNORE INTO sync_dirty (crystal_id) VALUES (new.id);
END;
CREATE TRIGGER sync_dirty_update AFTER UPDATE OF {_WATCHED} ON crystals WHEN EXISTS (SELECT 1 FROM sync_on) BEGIN
    INSERT OR IGNORE INTO sync_dirty (crystal_id) VALUES (new.id);
END;
CREATE TRIGGER sync_dirty_delete AFTER DELETE ON crystals WHEN EXISTS (SELECT 1 FROM sync_on) BEGIN
    INSERT OR IGNORE INTO sync_dirty (crystal_id) VALUES (old.id);
END;
CREATE TRIGGER sync_dirty_review AFTER UPDATE OF status ON quarantine WHEN EXISTS (SELECT 1 FROM sync_on) BEGIN
    INSERT OR IGNORE INTO sync_dirty (crystal_id) VALUES (new.crystal_id);
END;
"""

#: ``MIGRATIONS[n]`` takes the set from version n to n+1.
MIGRATIONS = [SYNC_V1]
SYNC_SCHEMA = SchemaSet("sync", "schema_version:sync", MIGRATIONS)
