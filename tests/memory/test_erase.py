"""Forget means gone (issue 32): an erased crystal's text is in neither the database file, nor its
WAL, nor its keyword index, nor another crystal's context; one audit row without the text stays."""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import pytest

from memory.embedders import make_embedder
from memory.errors import CrystalNotFound
from memory.governance.erase import ERASED_MARK, erase
from memory.intake.store import IntakeStore
from memory.model import NewCrystal, Origin
from memory.retrieval.query import SearchMode, SearchRequest
from memory.retrieval.search import search

SECRET = "the vault passphrase is quokka-tangerine-4471"
MARKER = b"quokka-tangerine"


def _on_disk(folder: Path) -> bytes:
    return b"".join(p.read_bytes() for p in sorted(folder.glob("m.db*")) if p.is_file())


async def test_an_erased_text_is_nowhere_on_disk(tmp_path: Path) -> None:
    store = await IntakeStore.open(tmp_path / "m.db", make_embedder("hashing"))
    try:
        kept = (
            await store.remember(NewCrystal("the spare key is under the blue pot", origin=Origin.USER_INPUT))
        ).crystal
        gone = (await store.remember(NewCrystal(SECRET, origin=Origin.USER_INPUT))).crystal
        quoting = await store.remember(
            NewCrystal("ok, noted", origin=Origin.SESSION, context=f"user: {SECRET}\nassistant: ok, noted")
        )
        await store.embed_backlog()
        await store.forget(gone.id, actor="cli")  # a soft forget first: the text is still there
        assert MARKER in _on_disk(tmp_path)

        done = await erase(store, gone.id, actor="cli", reason="asked to")
        assert done.contexts_scrubbed == 1 and done.wal_truncated
        assert MARKER not in _on_disk(tmp_path)
        assert b"quokka" not in _on_disk(tmp_path)  # nor the keyword index's term for it
        with pytest.raises(CrystalNotFound):
            await store.get(gone.id)
        assert ERASED_MARK in ((await store.get(quoting.crystal.id)).context or "")
        found = await search(store, SearchRequest("quokka", mode=SearchMode.KEYWORD, touch=False))
        assert found == []
        assert [h.crystal.id for h in await search(store, SearchRequest("spare key", touch=False))] == [kept.id]
        async with store.reader().execute(
            "SELECT reason, actor FROM audit_log WHERE crystal_id = ? ORDER BY seq DESC LIMIT 1", (gone.id,)
        ) as cursor:
            assert tuple(await cursor.fetchone() or ()) == ("erased: asked to", "cli")
    finally:
        await store.close()
    assert MARKER not in _on_disk(tmp_path)


async def test_an_erase_starting_as_another_ends_leaves_nothing_on_disk(tmp_path: Path) -> None:
    # The zeroing switch is the writer connection's: the first erase turning it off as it ends must not
    # leave the second's delete, which was waiting for the write lock, to run without it. The second
    # starts inside the first's last transaction. Before the fix, 1,596 copies of "south wing" stayed.
    store = await IntakeStore.open(tmp_path / "m.db", make_embedder("hashing"))
    # Long enough to fill pages of their own (overflow pages go to the free list whole).
    first, second = (f"{SECRET} and the {word} door " + f"{word} wing " * 800 for word in ("north", "south"))
    try:
        first_id = (await store.remember(NewCrystal(first, origin=Origin.USER_INPUT))).crystal.id
        second_id = (await store.remember(NewCrystal(second, origin=Origin.USER_INPUT))).crystal.id
        await store.embed_backlog()
        transaction = store.transaction
        transactions = 0
        later: list[asyncio.Task[Any]] = []

        @contextlib.asynccontextmanager
        async def second_starts_in_the_last(**options: Any) -> AsyncIterator[Any]:
            nonlocal transactions
            async with transaction(**options) as db:
                transactions += 1
                if transactions == 2:  # the first erase's last transaction (its index rewrite)
                    later.append(asyncio.create_task(erase(store, second_id, actor="cli", reason="asked to")))
                    await asyncio.sleep(0.05)  # the second is now waiting for the write lock
                yield db

        store.transaction = second_starts_in_the_last  # type: ignore[method-assign]
        await erase(store, first_id, actor="cli", reason="asked to")
        await later[0]
        assert b"south wing" not in _on_disk(tmp_path) and b"north wing" not in _on_disk(tmp_path)
    finally:
        await store.close()
    assert MARKER not in _on_disk(tmp_path)
