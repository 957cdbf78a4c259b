"""Export then import: a memory moved to another store comes back as it was (issue 32), when the
node that restores it trusts the key that signed it (issue 47: ``test_signed_export`` has the rest).

Before this, every crystal came back as an ``episode`` from a ``session``, supersession was dropped
and the outdated fact ranked first again. The stores here are real (SQLite, FTS5, sqlite-vec, MiniLM,
supersession on save); the comparison is field by field, links, derivations and history included.
"""

from __future__ import annotations

import io
import json
from collections.abc import AsyncIterator
from dataclasses import replace
from pathlib import Path

import pytest

from crypto.identity import Identity
from ground.authority import Speaker
from memory.embedders.base import Embedder
from memory.governance import quarantine
from memory.graph.links import link
from memory.graph.provenance import associations, attribution_chain
from memory.intake.store import IntakeStore
from memory.model import (
    AssociationType,
    Crystal,
    Lifecycle,
    Lifespan,
    NewCrystal,
    Origin,
    Quarantine,
    SemanticType,
    content_hash,
)
from memory.retrieval.query import SearchRequest
from memory.retrieval.search import search
from memory.storage.row_writes import crystal_by_hash
from memory.supersession.detect import Supersession
from memory.transfer.export import export_memory
from memory.transfer.records import VERSION, NewerFormat
from memory.transfer.restore import is_export_file, restore_export
from tests.memory.conftest import DAY, FakeClock

OLD = "Tomas lives in Riga."
NEW = "Actually, Tomas lives in Tallinn now."


async def _fill(store: IntakeStore, clock: FakeClock) -> dict[str, str]:
    """One crystal of each kind a round trip must keep; their ids by role."""
    ids: dict[str, str] = {}

    async def say(role: str, new: NewCrystal) -> None:
        ids[role] = (await store.remember(new)).crystal.id
        clock.advance(DAY)

    await say("old", NEW_CRYSTAL(OLD, SemanticType.FACT))
    await say("preference", NEW_CRYSTAL("I prefer window seats on long flights.", SemanticType.PREFERENCE))
    await say("episode", NewCrystal("Yesterday we hiked up to the lighthouse with Ana."))  # typed at ingest
    await say("pinned", NewCrystal("My passport number ends in 4471.", lifespan=Lifespan.PERMANENT, importance=0.9,
                                   importance_floor=0.9))  # fmt: skip
    await say("ttl", NewCrystal("The parcel locker code is 5521.", lifespan=Lifespan.TTL, ttl_ms=30 * DAY))
    await say("skill", NEW_CRYSTAL("To rotate the TLS cert: run certbot renew, then reload nginx.", SemanticType.SKILL))
    await say("derived", NewCrystal("Ana and I hike most weekends.", origin=Origin.INFERRED, parents=(ids["episode"],)))
    await say("held", NewCrystal("Peer tip: always pin your dependencies.", origin=Origin.PEER, source="peer:ab12",
                                 quarantine=Quarantine("author below trusted")))  # fmt: skip
    await say("archived", NewCrystal("The old wiki lived at wiki.internal."))
    await say("new", NEW_CRYSTAL(NEW, SemanticType.FACT))
    await store.transition(ids["archived"], Lifecycle.ARCHIVED, reason="merged away", actor="consolidation")
    await store.transition(ids["pinned"], Lifecycle.FROZEN, reason="pinned", actor="local")
    await link(store, ids["preference"], ids["episode"], AssociationType.CAUSED_BY, 0.7)
    await search(store, SearchRequest("lighthouse hike"))  # access counts and an activated lifecycle
    return ids


def NEW_CRYSTAL(text: str, stype: SemanticType) -> NewCrystal:
    return NewCrystal(text, semantic_type=stype)


async def _everything(store: IntakeStore) -> dict[str, Crystal]:
    return {c.id: c async for c in store.iter_live()}


#: The node that writes and restores the exports here: its own exports come back as they were.
ME = Identity.generate()
TRUSTED = frozenset({ME.public_key})
NOBODY: frozenset[bytes] = frozenset()


async def _exported(store: IntakeStore, *, include_confidential: bool = False, signer: Identity | None = ME) -> str:
    sink = io.StringIO()
    await export_memory(store, sink, include_confidential=include_confidential, signer=signer)
    return sink.getvalue()


async def _by_text(store: IntakeStore, text: str) -> Crystal:
    found = await crystal_by_hash(store.reader(), content_hash(text))
    assert found is not None, text
    return found


@pytest.fixture
async def other(tmp_path: Path, clock: FakeClock, minilm: Embedder) -> AsyncIterator[IntakeStore]:
    """A second node's store, as ``memory`` is: where the export is imported."""
    store = await IntakeStore.open(tmp_path / "other.db", minilm, now_ms=clock, on_embedded=Supersession().hook())
    try:
        yield store
    finally:
        await store.close()


async def test_export_then_import_gives_back_every_crystal_link_and_supersession(
    memory: IntakeStore, other: IntakeStore, clock: FakeClock, tmp_path: Path
) -> None:
    ids = await _fill(memory, clock)
    assert (await memory.get(ids["old"])).superseded is not None  # the store under test did supersede
    path = tmp_path / "memories.jsonl"
    path.write_text(await _exported(memory, include_confidential=True))
    assert is_export_file(path)

    clock.advance(DAY)
    done = await restore_export(other, path, trusted=TRUSTED)
    before, after = await _everything(memory), await _everything(other)
    assert done.trusted and done.demoted == 0
    assert done.created == len(before) and done.damaged_count == 0 and done.dangling == 0
    for cid, crystal in before.items():  # every field but the vector, which the new node makes itself
        assert after[cid] == replace(crystal, embedded_with=None), cid
    kinds = {role: after[ids[role]] for role in ids}
    assert kinds["old"].superseded is not None and kinds["old"].superseded.by == ids["new"]
    assert kinds["preference"].semantic_type is SemanticType.PREFERENCE and kinds["held"].origin is Origin.PEER
    assert kinds["archived"].lifecycle is Lifecycle.ARCHIVED and kinds["pinned"].lifecycle is Lifecycle.FROZEN

    for role in ("preference", "old", "derived"):
        assert await associations(other, ids[role]) == await associations(memory, ids[role]), role
    assert any(
        a.type is AssociationType.CAUSED_BY and a.weight == 0.7 for a in await associations(other, ids["episode"])
    )
    async with other.reader().execute("SELECT child_id, parent_id FROM provenance") as cursor:
        assert (ids["derived"], ids["episode"]) in set(await cursor.fetchall())
    chain = await attribution_chain(other, ids["old"])
    assert chain[:-1] == await attribution_chain(memory, ids["old"]) and chain[-1].action == "imported"
    assert [h.crystal.id for h in await quarantine.held(other)] == [ids["held"]]  # held again, for review here

    await other.embed_backlog()
    hits = await search(other, SearchRequest("Where does Tomas live?", touch=False))
    assert hits[0].crystal.text == NEW and OLD not in [h.crystal.text for h in hits]


async def test_importing_the_same_export_again_stores_nothing_new(
    memory: IntakeStore, other: IntakeStore, clock: FakeClock, tmp_path: Path
) -> None:
    await _fill(memory, clock)
    path = tmp_path / "memories.jsonl"
    path.write_text(await _exported(memory))
    first = await restore_export(other, path, trusted=TRUSTED)
    again = await restore_export(other, path, trusted=TRUSTED)
    assert first.created > 0 and again.created == 0 and again.duplicates == first.created
    assert again.superseded == again.links == again.derivations == 0


async def test_a_damaged_line_is_skipped_and_named_and_the_rest_is_restored(
    memory: IntakeStore, other: IntakeStore, clock: FakeClock, tmp_path: Path
) -> None:
    """The file is unsigned (edited files are, whatever they were): its lines come in as text."""
    await _fill(memory, clock)
    lines = (await _exported(memory, signer=None)).splitlines()
    crystals = [i for i, line in enumerate(lines) if json.loads(line).get("kind") == "crystal"]
    wrong_type = json.loads(lines[crystals[0]]) | {"semantic_type": "rumour"}
    out_of_range = json.loads(lines[crystals[1]]) | {"importance": 7}
    lines[crystals[0]] = json.dumps(wrong_type)
    lines[crystals[1]] = json.dumps(out_of_range)
    lines.append(lines[crystals[2]][:40])  # a cut last line, as a copy interrupted midway leaves it
    path = tmp_path / "damaged.jsonl"
    path.write_text("\n".join(lines) + "\n")

    done = await restore_export(other, path, trusted=TRUSTED)
    assert done.damaged_count == 3
    assert done.damaged[0].startswith(f"line {crystals[0] + 1}: semantic_type must be one of")
    assert done.damaged[1].startswith(f"line {crystals[1] + 1}: importance must be a number in [0, 1]")
    assert done.damaged[2] == f"line {len(lines)}: not JSON (a cut or edited line?)"
    restored = await _everything(other)
    assert len(restored) == len(await _everything(memory)) - 2 - 1  # the confidential passport is left out
    assert (await _by_text(other, NEW)).speaker is Speaker.FILE


async def test_a_file_from_a_newer_release_is_refused_whole(other: IntakeStore, tmp_path: Path) -> None:
    path = tmp_path / "future.jsonl"
    path.write_text(json.dumps({"format": "bitterbot-memory", "version": VERSION + 1}) + "\n")
    with pytest.raises(NewerFormat, match="newer bitterbot-node"):
        await restore_export(other, path, trusted=TRUSTED)
    assert await _everything(other) == {}


async def test_an_export_of_the_first_format_restores_as_imported_text(
    other: IntakeStore, tmp_path: Path, clock: FakeClock
) -> None:
    """Release 10 and earlier wrote bare crystal objects, no header and no kinds, and no signature:
    nothing vouches for what such a file says of its crystals, so each comes in as a file's text."""
    donor = await IntakeStore.open(tmp_path / "donor.db", other.embedder, now_ms=clock)
    try:
        preference = (await donor.remember(NEW_CRYSTAL("I like my coffee black.", SemanticType.PREFERENCE))).crystal
    finally:
        await donor.close()
    from memory.transfer.records import crystal_fields

    path = tmp_path / "old.jsonl"
    path.write_text(json.dumps(crystal_fields(preference)) + "\n")
    assert is_export_file(path)
    done = await restore_export(other, path, trusted=TRUSTED)
    assert not done.trusted and done.demoted == done.created == 1
    back = await _by_text(other, "I like my coffee black.")
    assert back.created_at_ms == preference.created_at_ms and back.id != preference.id
    assert (back.speaker, back.origin) == (Speaker.FILE, Origin.INDEXED)


async def test_a_file_cannot_make_a_secret_less_private_than_this_nodes_rules_call_it(
    other: IntakeStore, tmp_path: Path, clock: FakeClock
) -> None:
    """An export says each crystal's sensitivity; one that calls a password "normal" would put it in
    MEMORY.md and send it to the [llm] endpoint. The stricter of the file's word and ours stands."""
    from memory.model import Sensitivity
    from memory.transfer.records import crystal_fields

    donor = await IntakeStore.open(tmp_path / "donor.db", other.embedder, now_ms=clock)
    try:
        secret = (await donor.remember(NewCrystal("The router admin password is hunter2-correct"))).crystal
        personal = (await donor.remember(NewCrystal("Ana's birthday is on 3 May"))).crystal
    finally:
        await donor.close()
    assert secret.sensitivity is Sensitivity.CONFIDENTIAL
    lines = [
        crystal_fields(secret) | {"sensitivity": "normal"},
        crystal_fields(personal) | {"sensitivity": "confidential"},
    ]
    path = tmp_path / "lowered.jsonl"
    path.write_text("".join(json.dumps(doc) + "\n" for doc in lines))
    await restore_export(other, path, trusted=TRUSTED)
    assert (await _by_text(other, secret.text)).sensitivity is Sensitivity.CONFIDENTIAL
    assert (await _by_text(other, personal.text)).sensitivity is Sensitivity.CONFIDENTIAL  # never lowered
