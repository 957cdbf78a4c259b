"""A crystal forgotten while its steps after embedding are owed owes none of them.

Found with two devices syncing behind NATs (tests/node/test_devices_nat.py): the phone took the
laptop's crystal with its vector (which owes the steps, as an embedding does), the laptop's forget
of it came in before the phone's embedding loop paid them, and the supersession step's read of the
crystal, now expired and so unseen, raised: the loop logged a traceback and was restarted, and the
debt was tried twice more before being set aside as a failure."""

from __future__ import annotations

from pathlib import Path

from memory.embedders.hashing import HashingEmbedder
from memory.intake.store import IntakeStore
from memory.model import NewCrystal
from memory.storage.after_embedding import owe, owed_count
from memory.supersession.detect import Supersession


async def test_a_crystal_forgotten_before_its_steps_ran_is_let_go_not_failed(tmp_path: Path) -> None:
    store = await IntakeStore.open(tmp_path / "m.db", HashingEmbedder(), on_embedded=Supersession().hook())
    try:
        kept = (await store.remember(NewCrystal("The router sits in room 4 of the old house"))).crystal
        gone = (await store.remember(NewCrystal("The bins go out on Mondays from the back door"))).crystal
        assert await store.backlog_size() == 0 and await owed_count(store) == (0, 0)  # embedded, steps paid
        rows = await store.reader().execute_fetchall(
            "SELECT rowid, id FROM crystals WHERE id IN (?, ?) ORDER BY rowid", (kept.id, gone.id)
        )
        async with store.transaction() as db:  # owed again, as a vector taken from another device leaves them
            await owe(db, [(int(r[0]), str(r[1])) for r in rows])
        await store.forget(gone.id)
        await store.embed_backlog()  # pays what is owed first: raised CrystalNotFound for the forgotten one
        assert await owed_count(store) == (0, 0)
    finally:
        await store.close()
