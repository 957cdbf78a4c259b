"""Issue 49: a buyer is told where a bought skill went. A skill held for review says so, and how to
release it; once decided it says what was decided; one never held says nothing."""

from __future__ import annotations

from ground.authority import Speaker
from memory.governance.quarantine import approve, hold_of, review_note
from memory.intake.store import IntakeStore
from memory.model import NewCrystal, Origin, Quarantine, SemanticType
from memory.service.recall import show
from memory.service.requests import ShowArgs
from node.commands.texts.memory import shown


async def test_a_held_skill_says_it_is_held_and_how_to_release_it(store: IntakeStore) -> None:
    held = Quarantine("bought from a seller not trusted here")
    bought = await store.remember(
        NewCrystal("Vacuum the db: VACUUM ANALYZE", semantic_type=SemanticType.SKILL, origin=Origin.PEER,
                   source="peer:ab", speaker=Speaker.SELLER, quarantine=held)
    )  # fmt: skip
    crystal_id = bought.crystal.id
    note = review_note(await hold_of(store, crystal_id))
    assert note is not None and note["status"] == "held"
    assert note["release"] == f"bitterbot-node memory quarantine approve {crystal_id}"
    assert "held for your review (bought from a seller not trusted here)" in note["says"]

    doc = await show(store, ShowArgs(id=crystal_id))
    assert doc["held"] == note
    assert f"memory quarantine approve {crystal_id}" in shown(doc, None)  # type: ignore[arg-type]

    await approve(store, crystal_id, actor="cli")
    after = review_note(await hold_of(store, crystal_id))
    assert after is not None and after["status"] == "approved" and "release" not in after
    assert after["says"].startswith("approved by cli")


async def test_a_crystal_never_held_has_no_note(store: IntakeStore) -> None:
    own = await store.remember(NewCrystal("Rotate logs: logrotate -f", semantic_type=SemanticType.SKILL))
    assert await hold_of(store, own.crystal.id) is None
    assert (await show(store, ShowArgs(id=own.crystal.id)))["held"] is None
