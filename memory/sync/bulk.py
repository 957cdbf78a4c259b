"""Reads and writes of many crystals at once for the journal and the apply step: one query per
500 ids instead of several per crystal (each query is a hop to the database's thread; per crystal,
a 10,000-crystal sync spent most of its time in the hops)."""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence

import aiosqlite

from memory.model import Crystal
from memory.storage.connection import select_in
from memory.storage.rows import SELECT_COLUMNS, crystal_from_row
from memory.sync.image import Image, loads


async def crystals_of(db: aiosqlite.Connection, ids: Iterable[str]) -> dict[str, Crystal]:
    rows = await select_in(db, f"SELECT {SELECT_COLUMNS} FROM crystals c WHERE c.id IN ({{marks}})", ids)
    return {c.id: c for c in map(crystal_from_row, rows)}


async def reviews_of(db: aiosqlite.Connection, ids: Iterable[str]) -> dict[str, str]:
    rows = await select_in(db, "SELECT crystal_id, status FROM quarantine WHERE crystal_id IN ({marks})", ids)
    return {str(r[0]): str(r[1]) for r in rows}


async def images_of(db: aiosqlite.Connection, ids: Iterable[str]) -> dict[str, Image]:
    rows = await select_in(db, "SELECT crystal_id, image FROM sync_image WHERE crystal_id IN ({marks})", ids)
    return {str(r[0]): loads(r[1]) for r in rows}


async def save_images(db: aiosqlite.Connection, images: Mapping[str, Image]) -> None:
    await db.executemany(
        "INSERT INTO sync_image (crystal_id, image) VALUES (?, ?) "
        "ON CONFLICT(crystal_id) DO UPDATE SET image = excluded.image",
        [(cid, image.dumps()) for cid, image in images.items()],
    )


async def forget_marks(db: aiosqlite.Connection, ids: Sequence[str]) -> None:
    await db.executemany("DELETE FROM sync_dirty WHERE crystal_id = ?", [(c,) for c in ids])
