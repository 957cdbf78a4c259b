"""The network's tables in the node's database: what this node observed of peers, the ratings
other nodes attested, and the weather sequences it has applied (``p2p.trust.records``).

Releases up to this one kept these in ``p2p/trust.json`` and ``p2p/state.json``; the first start
with this set imports them (``TrustRecords.import_files``).
"""

from __future__ import annotations

from memory.storage.migrations import SchemaSet

_TRUST = """
CREATE TABLE trust_outcomes (
    peer              TEXT PRIMARY KEY,   -- hex public key
    seq               INTEGER NOT NULL,   -- order of first news, oldest first (trimming forgets oldest)
    valid             INTEGER NOT NULL,
    invalid           INTEGER NOT NULL,
    executions_ok     INTEGER NOT NULL,
    executions_failed INTEGER NOT NULL,
    purchases_ok      INTEGER NOT NULL,
    purchases_failed  INTEGER NOT NULL,
    defaults          INTEGER NOT NULL
);
CREATE TABLE trust_ratings (
    attester     TEXT NOT NULL,           -- hex public key of the node that signed the attestation
    peer         TEXT NOT NULL,
    milli        INTEGER NOT NULL,        -- 0..1000
    attester_seq INTEGER NOT NULL,        -- order the attesters were heard in
    PRIMARY KEY (attester, peer)
);
CREATE TABLE p2p_state (
    key   TEXT PRIMARY KEY,
    value TEXT NOT NULL
);
"""

MIGRATIONS = [_TRUST]
P2P_SCHEMA = SchemaSet("p2p", "schema_version:p2p", MIGRATIONS)
