"""The marketplace's tables in the node's database, and their migrations.

They share the one SQLite file with the memory (a bought skill is a crystal, and a purchase row
and its crystal are written in the same file), but they are this package's set: versions under
``meta.schema_version:marketplace``. Releases up to memory schema v12 created them among the
memory's migrations (v5-v9, v12); ``adopt`` reads which of them a file already holds.
"""

from __future__ import annotations

import aiosqlite

from memory.storage.migrations import SchemaSet, column_exists, table_exists

# 1 (memory v5 before): executions of skills, as the local agent reports them: the marketplace's quality gate and
# price, and the trust of the peer a skill came from, are computed from these.
_EXECUTIONS = """
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

# 2 (memory v6 before): skill listings seen on the network (and this node's own), newest version per seller and skill.
# The signed envelope is kept: a buyer later proves what was offered (content hash, price) with it.
_LISTINGS = """
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

# 3 (memory v7 before): purchases (as buyer) and sales (as seller), one row per purchase id, every step persisted so
# that a restart resumes a purchase where it stood; the signed quote is kept as proof.
_PURCHASES_AND_SALES = """
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

# 4 (memory v8 before): bounties seen on the network (and this node's own), and management endorsements of listed
# skills (one per seller, skill and endorser; it covers the content hash it names, nothing newer).
_BOUNTIES_AND_ENDORSEMENTS = """
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

# 5 (memory v9 before): how each purchase pays: through the escrow, or directly (a signed EIP-3009 authorization the
# seller collects before it delivers).
_PAYMENT = """
ALTER TABLE purchases ADD COLUMN payment TEXT NOT NULL DEFAULT 'escrow';
"""

# 6 (memory v12 before): what peers publish to the market is bounded and indexed
# (marketplace.gossip.received_quota; marketplace.catalog: bounties, browse). ``bounties_fts`` finds
# the bounties a skill's words, tags or category could answer without reading every bounty;
# ``listings_fts`` does the same for listings and ranks a `skills list` query. Each keeps its own
# copy of the words, keyed by the row's primary key (no rowid to go stale).
_INDEXES = """
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


# 7: when the seller signed the listing kept. A listing signed later at the same version replaces
# the one kept (a new price or address, or listed again after a revocation); before, it was dropped.
_SIGNED_AT = """
ALTER TABLE listings ADD COLUMN signed_ms INTEGER NOT NULL DEFAULT 0;
"""


# 8: what settles a deal without the other side. The seller keeps the one-time key of each delivery
# (the ciphertext is reproducible from it, and both go on chain if the buyer does not release); the
# buyer keeps the seller's signed delivery, its evidence in a dispute.
_DELIVERIES = """
ALTER TABLE sales ADD COLUMN delivery_key BLOB;
ALTER TABLE purchases ADD COLUMN delivery BLOB;
"""


# 9: the sealed commitment (issue 26). A sale keeps the buyer's wallet (a seller that stops selling to
# a buyer who took its money back stops for the wallet, not only for one node key) and whether the
# buyer had standing here when it was quoted (strangers share only part of the open-quote slots).
_STANDING = """
ALTER TABLE sales ADD COLUMN buyer_address TEXT NOT NULL DEFAULT '';
ALTER TABLE sales ADD COLUMN standing INTEGER NOT NULL DEFAULT 0;
CREATE INDEX sales_state_updated ON sales (state, updated_ms);
"""


# 10: who asked for each purchase and what it cost, when (issue 47): the agent's purchases of the
# last day count against its daily budget, across restarts. Earlier purchases read as the person's.
# A sale keeps whether its buyer proved a wallet that holds the price (the strangers' quote slots
# are for such buyers; those without proof share a few of their own).
_WHO_SPENT = """
ALTER TABLE purchases ADD COLUMN speaker TEXT NOT NULL DEFAULT 'person';
ALTER TABLE purchases ADD COLUMN price_micro_usdc INTEGER NOT NULL DEFAULT 0;
ALTER TABLE purchases ADD COLUMN created_ms INTEGER NOT NULL DEFAULT 0;
CREATE INDEX purchases_speaker_created ON purchases (speaker, created_ms);
ALTER TABLE sales ADD COLUMN funded INTEGER NOT NULL DEFAULT 0;
"""


# 11: where each reader of chain events got to (issue 49): a restart reads on from there, not from
# block 0, which a public chain's RPC refuses over millions of blocks (``public_chain.log_cursor``).
_CURSORS = """
CREATE TABLE chain_cursors (
    reader     TEXT NOT NULL,
    chain_id   INTEGER NOT NULL,
    contract   TEXT NOT NULL,
    next_block INTEGER NOT NULL,
    PRIMARY KEY (reader, chain_id, contract)
);
"""


async def _adopt(db: aiosqlite.Connection) -> int:
    """The version of the marketplace tables an older release created under the memory's migrations."""
    if await table_exists(db, "listings_fts"):
        return 6
    if await column_exists(db, "purchases", "payment"):
        return 5
    for version, table in ((4, "bounties"), (3, "purchases"), (2, "listings"), (1, "skill_executions")):
        if await table_exists(db, table):
            return version
    return 0


#: MIGRATIONS[n] takes the marketplace's tables from version n to n+1.
MIGRATIONS = [
    _EXECUTIONS, _LISTINGS, _PURCHASES_AND_SALES, _BOUNTIES_AND_ENDORSEMENTS, _PAYMENT, _INDEXES, _SIGNED_AT,
    _DELIVERIES, _STANDING, _WHO_SPENT, _CURSORS,
]  # fmt: skip
MARKET_SCHEMA = SchemaSet("marketplace", "schema_version:marketplace", MIGRATIONS, adopt=_adopt)
