"""What the network offers and wants, a page at a time (`skills list`, `skills bounties`).

Listings are ordered by their seller's trust level here, then relevance, then the seller's
combined trust score, then newest, so a crowd of fresh keys cannot push a trusted seller's
listings off the first page. Relevance: with a query, its BM25 rank over each listing's
title, description, tags and category (``listings_fts``), and only listings matching it;
without one, the reward of this node's own live bounties a listing answers. Each listing
on a page carries the live bounties it answers (not its seller's own).

Bounties are ordered by their author's trust level, then reward, then soonest to expire;
each on a page says how many live listings answer it.

Both tables are bounded (``marketplace.gossip.received_quota``), so ordering every row costs at
most a few thousand small rows; matching reads only rows that share a word, tag or
category (the FTS indexes), and no signed envelope is decoded.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Generic, TypeVar

import aiosqlite

from marketplace.catalog.bounties import BountyRow, bounties_answered_by, bounty_terms, live_bounties, matches
from marketplace.catalog.listings import ListingRow, live_listings
from marketplace.catalog.words import any_of
from marketplace.gossip.received_quota import KeyStanding
from memory.storage.store import MemoryStore

MAX_PAGE = 500
T = TypeVar("T")
_QUERY_WORD = re.compile(r"\w+")


@dataclass(frozen=True, slots=True)
class CatalogEntry:
    listing: ListingRow
    bounties: tuple[BountyRow, ...]


@dataclass(frozen=True, slots=True)
class Page(Generic[T]):
    items: list[T]
    total: int  # rows in the whole ordering (matching the query, if any)
    offset: int


@dataclass(frozen=True, slots=True)
class _Indexed:
    """A listing's searchable words, as ``listings_fts`` keeps them."""

    text: str
    tags: tuple[str, ...]
    category: str

    @classmethod
    def of(cls, text: object, tags: object, category: object) -> _Indexed:
        return cls(str(text), tuple(t for t in str(tags).split("\n") if t), str(category))

    def answers(self, bounty: BountyRow) -> bool:
        return matches(bounty, text=self.text, tags=self.tags, category=self.category)


async def _indexed(db: aiosqlite.Connection, fts_query: str) -> dict[tuple[str, str], tuple[_Indexed, float]]:
    """Listings matching an FTS query: (seller, skill id) -> (their words, BM25 rank: lower is better)."""
    async with db.execute(
        "SELECT seller, stable_skill_id, text, tags, category, bm25(listings_fts) FROM listings_fts "
        "WHERE listings_fts MATCH ?",
        (fts_query,),
    ) as cursor:
        return {(str(r[0]), str(r[1])): (_Indexed.of(r[2], r[3], r[4]), float(r[5])) for r in await cursor.fetchall()}


async def _words_of(db: aiosqlite.Connection, keys: Sequence[tuple[str, str]]) -> dict[tuple[str, str], _Indexed]:
    """The indexed words of each listing in ``keys``, in one pass: the key columns are UNINDEXED, so a
    lookup per key would scan the whole table once per listing on the page."""
    wanted = set(keys)
    if not wanted:
        return {}
    async with db.execute("SELECT seller, stable_skill_id, text, tags, category FROM listings_fts") as cursor:
        return {
            (str(r[0]), str(r[1])): _Indexed.of(r[2], r[3], r[4])
            for r in await cursor.fetchall()
            if (str(r[0]), str(r[1])) in wanted
        }


async def _own_bounty_rewards(store: MemoryStore, me: str, now_ms: int) -> dict[tuple[str, str], int]:
    """(seller, skill id) -> the reward of this node's own live bounties the listing answers."""
    rewards: dict[tuple[str, str], int] = {}
    for bounty in await live_bounties(store, now_ms, author=me):
        query = any_of(bounty_terms(bounty))
        if query is None:
            continue
        for key, (words, _) in (await _indexed(store.reader(), query)).items():
            if key[0] != me and words.answers(bounty):
                rewards[key] = rewards.get(key, 0) + bounty.reward_micro_usdc
    return rewards


async def listings_page(
    store: MemoryStore,
    *,
    standing: KeyStanding,
    me: str,
    now_ms: int,
    query: str = "",
    limit: int = 50,
    offset: int = 0,
) -> Page[CatalogEntry]:
    rows = await live_listings(store)
    relevance: dict[tuple[str, str], float]
    if query.strip():
        fts = any_of(_QUERY_WORD.findall(query.lower()))
        matched = await _indexed(store.reader(), fts) if fts else {}
        relevance = {key: -rank for key, (_, rank) in matched.items()}  # BM25: more negative is better
        rows = [r for r in rows if (r.seller, r.stable_skill_id) in relevance]
    else:
        relevance = {key: float(reward) for key, reward in (await _own_bounty_rewards(store, me, now_ms)).items()}

    def order(row: ListingRow) -> tuple[int, float, float, int]:
        level, combined = standing(row.seller)
        return (-level, -relevance.get((row.seller, row.stable_skill_id), 0.0), -combined, -row.received_ms)

    rows.sort(key=order)
    page = rows[offset : offset + min(limit, MAX_PAGE)]
    words = await _words_of(store.reader(), [(r.seller, r.stable_skill_id) for r in page])
    entries = []
    for row in page:
        indexed = words.get((row.seller, row.stable_skill_id), _Indexed(row.title, (), row.category))
        answered = await bounties_answered_by(
            store, text=indexed.text, tags=indexed.tags, category=indexed.category, now_ms=now_ms, me=row.seller
        )
        entries.append(CatalogEntry(row, tuple(answered)))
    return Page(entries, len(rows), offset)


async def listings_answering(store: MemoryStore, bounty: BountyRow, live: set[tuple[str, str]]) -> int:
    """How many of the ``live`` listings (not the bounty author's own) answer ``bounty``."""
    query = any_of(bounty_terms(bounty))
    if query is None:
        return 0
    candidates = await _indexed(store.reader(), query)
    return sum(1 for key, (words, _) in candidates.items() if key in live and key[0] != bounty.author
               and words.answers(bounty))  # fmt: skip


async def bounties_page(
    store: MemoryStore, *, standing: KeyStanding, now_ms: int, limit: int = 50, offset: int = 0
) -> Page[tuple[BountyRow, int]]:
    """Live bounties, each with how many live listings answer it."""
    bounties = await live_bounties(store, now_ms)
    bounties.sort(key=lambda b: (-standing(b.author)[0], -b.reward_micro_usdc, b.expires_ms))
    page = bounties[offset : offset + min(limit, MAX_PAGE)]
    live = {(r.seller, r.stable_skill_id) for r in await live_listings(store)}
    return Page([(b, await listings_answering(store, b, live)) for b in page], len(bounties), offset)
