"""Purchases (this node buying) and sales (this node selling): their states, the moves allowed
between them, and the only SQL on the ``purchases`` and ``sales`` tables.

Every step of a deal is written, and synced to disk (power loss included), before the next one
starts, so a restart carries it on from where it stood and never finds a lock on chain without
its record; a move the state machine does not allow is refused (``IllegalTransition``)
instead of silently rewriting a deal's history.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from enum import StrEnum

import aiosqlite

from ground.authority import Speaker
from ground.clock import Clock
from marketplace.errors import MarketError
from marketplace.exchange.quote_slots import OpenQuotes
from memory.storage.store import MemoryStore


class IllegalTransition(MarketError):
    """A deal was asked to move to a state its current one does not lead to."""


class PurchaseState(StrEnum):
    QUOTED = "quoted"  # the seller's signed quote is held; nothing paid yet
    LOCKED = "locked"  # the price is locked in the escrow; waiting for the delivery
    PENDING = "pending"  # the lock was sent and no receipt came: reconciled with the chain by purchase id
    AUTHORIZED = "authorized"  # paying directly: a signed transfer is with the seller
    COMPLETED = "completed"  # the skill was received as listed (and the escrow released)
    REFUSED = "refused"  # the delivery failed its checks; refunded after the deadline, or disputed
    DISPUTED = "disputed"  # the seller committed a delivery this node contests: the arbiter decides
    REFUNDED = "refunded"  # the lock came back to this node
    LOST = "lost"  # the seller was paid without a valid delivery here (the arbiter so decided, or no dispute in time)
    EXPIRED = "expired"  # the quote lapsed before anything was paid
    FAILED = "failed"  # the payment was not made
    STALE = "stale"  # an earlier release left it unfinished, against an earlier escrow: set aside, see detail


_P = PurchaseState
PURCHASE_MOVES: Mapping[PurchaseState, frozenset[PurchaseState]] = {
    # A resumed purchase reads the chain first: it may find its lock already released, refunded or
    # disputed (lost: released with nothing of the listed skill here or on chain).
    _P.QUOTED: frozenset(
        {
            _P.STALE,
            _P.LOCKED,
            _P.PENDING,
            _P.AUTHORIZED,
            _P.EXPIRED,
            _P.FAILED,
            _P.COMPLETED,
            _P.REFUNDED,
            _P.DISPUTED,
            _P.LOST,
        }
    ),
    # Pending: the chain tells how it ended (locked, or never: sent again or expired).
    _P.PENDING: frozenset(
        {_P.STALE, _P.PENDING, _P.LOCKED, _P.EXPIRED, _P.FAILED, _P.COMPLETED, _P.REFUNDED, _P.DISPUTED, _P.LOST}
    ),
    _P.LOCKED: frozenset({_P.STALE, _P.LOCKED, _P.COMPLETED, _P.REFUSED, _P.REFUNDED, _P.DISPUTED, _P.LOST}),
    _P.AUTHORIZED: frozenset({_P.STALE, _P.AUTHORIZED, _P.COMPLETED, _P.REFUSED, _P.FAILED, _P.EXPIRED}),
    # Refused off chain, yet the seller committed the listed skill on chain: received after all.
    _P.REFUSED: frozenset({_P.STALE, _P.REFUNDED, _P.DISPUTED, _P.LOST, _P.COMPLETED}),
    _P.DISPUTED: frozenset({_P.STALE, _P.REFUNDED, _P.LOST, _P.COMPLETED}),
    _P.LOST: frozenset(),
    _P.COMPLETED: frozenset(),
    _P.REFUNDED: frozenset(),
    _P.EXPIRED: frozenset(),
    _P.STALE: frozenset(),
    # Failed is final unless the chain holds a lock for it after all (a release before ``pending``
    # existed stored an unknown outcome as failed): then the money is carried on, never stranded.
    _P.FAILED: frozenset({_P.STALE, _P.LOCKED, _P.COMPLETED, _P.REFUNDED, _P.DISPUTED, _P.LOST}),
}
UNFINISHED_PURCHASES = (_P.QUOTED, _P.PENDING, _P.LOCKED, _P.AUTHORIZED)


class SaleState(StrEnum):
    QUOTED = "quoted"  # a quote was signed; nothing paid yet
    DELIVERED = "delivered"  # the lock was checked and the skill sent; paid when the buyer releases
    COMMITTED = "committed"  # the buyer did not release: the delivery is committed on chain, claimable after the window
    DISPUTED = "disputed"  # the buyer contests the committed delivery: the arbiter decides
    PAID = "paid"  # released to this node, or collected directly
    REFUNDED = "refunded"  # locked, never delivered, refunded to the buyer
    DEFAULTED = "defaulted"  # delivered as listed, and the buyer took its money back
    LAPSED = "lapsed"  # never paid: earlier releases kept these; they are deleted now
    STALE = "stale"  # an earlier release left it unfinished, against an earlier escrow: set aside


_S = SaleState
SALE_MOVES: Mapping[SaleState, frozenset[SaleState]] = {
    # Committed at once: the buyer asked for the delivery too near the deadline to hand it over first.
    _S.QUOTED: frozenset({_S.STALE, _S.DELIVERED, _S.COMMITTED, _S.PAID, _S.REFUNDED}),
    # A buyer that did not get the delivery asks again: the seller sends it again, same state.
    _S.DELIVERED: frozenset({_S.STALE, _S.DELIVERED, _S.PAID, _S.REFUNDED, _S.DEFAULTED, _S.COMMITTED, _S.DISPUTED}),
    _S.COMMITTED: frozenset({_S.STALE, _S.COMMITTED, _S.PAID, _S.DISPUTED, _S.REFUNDED}),
    _S.DISPUTED: frozenset({_S.STALE, _S.DISPUTED, _S.PAID, _S.REFUNDED}),
    _S.PAID: frozenset({_S.PAID}),
    _S.REFUNDED: frozenset(),
    _S.DEFAULTED: frozenset(),
    _S.LAPSED: frozenset(),
    _S.STALE: frozenset(),
}


def check_move(moves: Mapping[StrEnum, frozenset[StrEnum]], deal: str, old: StrEnum | None, new: StrEnum) -> None:
    """Refuse a move the state machine does not have (``old`` None: no such deal)."""
    if old is None:
        raise IllegalTransition(f"no such deal: {deal} that was never recorded")
    if new not in moves[old]:
        raise IllegalTransition(f"{deal} cannot go from {old} to {new}")


async def _state_in(db: aiosqlite.Connection, table: str, purchase_id: bytes) -> str | None:
    """The deal's state in ``table`` ("purchases" or "sales": fixed names, never input)."""
    async with db.execute(f"SELECT state FROM {table} WHERE purchase_id = ?", (purchase_id.hex(),)) as cursor:  # noqa: S608
        row = await cursor.fetchone()
    return None if row is None else str(row[0])


@dataclass(frozen=True, slots=True)
class PurchaseRecord:
    purchase_id: bytes
    seller: bytes
    seller_peer: str
    quote: bytes  # the seller's signed quote envelope, as received
    state: PurchaseState
    payment: str  # "escrow" or "direct"
    detail: str
    crystal_id: str | None
    updated_ms: int
    delivery: bytes | None = None  # the seller's signed delivery as received: evidence in a dispute


_PURCHASE_COLUMNS = "purchase_id, seller, seller_peer, quote, state, payment, detail, crystal_id, updated_ms, delivery"


def _purchase(row: tuple[object, ...]) -> PurchaseRecord:
    pid, seller, peer, quote, state, payment, detail, crystal, updated, delivery = row
    return PurchaseRecord(
        bytes.fromhex(str(pid)), bytes.fromhex(str(seller)), str(peer), bytes(quote),  # type: ignore[call-overload]
        PurchaseState(str(state)), str(payment), str(detail), None if crystal is None else str(crystal),
        int(updated), None if delivery is None else bytes(delivery),  # type: ignore[call-overload]
    )  # fmt: skip


class Purchases:
    """This node's purchases, one row per purchase id."""

    def __init__(self, store: MemoryStore, clock: Clock | None = None) -> None:
        self._store = store
        self._now_ms = clock or store.now_ms

    async def add(
        self, purchase_id: bytes, seller: bytes, seller_peer: str, quote: bytes, payment: str, *,
        speaker: Speaker = Speaker.PERSON, price_micro_usdc: int = 0,
    ) -> None:  # fmt: skip
        """Record a quoted purchase, who asked for it and its price (the agent's daily budget counts them)."""
        now = self._now_ms()
        async with self._store.transaction(durable=True) as db:
            await db.execute(
                "INSERT INTO purchases (purchase_id, seller, seller_peer, quote, state, payment, updated_ms, "
                "speaker, price_micro_usdc, created_ms) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?)",
                (purchase_id.hex(), seller.hex(), seller_peer, quote, _P.QUOTED, payment, now, speaker,
                 price_micro_usdc, now),
            )  # fmt: skip

    async def spent_by(self, speaker: Speaker, since_ms: int) -> int:
        """Micro-USDC ``speaker``'s purchases recorded since ``since_ms`` took or may still take: all
        but those that ended with nothing paid (expired, failed, refunded, set aside)."""
        async with self._store.reader().execute(
            "SELECT coalesce(sum(price_micro_usdc), 0) FROM purchases WHERE speaker = ? AND created_ms > ? "
            "AND state NOT IN ('expired', 'failed', 'refunded', 'stale')",
            (speaker, since_ms),
        ) as cursor:
            row = await cursor.fetchone()
        return int(row[0]) if row else 0

    async def get(self, purchase_id: bytes) -> PurchaseRecord | None:
        async with self._store.reader().execute(
            f"SELECT {_PURCHASE_COLUMNS} FROM purchases WHERE purchase_id = ?",  # noqa: S608
            (purchase_id.hex(),),
        ) as cursor:
            row = await cursor.fetchone()
        return None if row is None else _purchase(tuple(row))

    async def move(
        self,
        purchase_id: bytes,
        state: PurchaseState,
        detail: str = "",
        *,
        crystal_id: str | None = None,
        keep_detail: bool = False,
        delivery: bytes | None = None,
    ) -> None:
        """Record the purchase's new state; ``keep_detail`` keeps why it got there (a refund after a
        refusal); ``delivery``: the seller's signed delivery, kept as evidence."""
        async with self._store.transaction(durable=True) as db:
            old = await _state_in(db, "purchases", purchase_id)
            check_move(PURCHASE_MOVES, "a purchase", PurchaseState(old) if old else None, state)  # type: ignore[arg-type]
            await db.execute(
                "UPDATE purchases SET state = ?, detail = CASE WHEN ? THEN detail ELSE ? END, "
                "crystal_id = coalesce(?, crystal_id), delivery = coalesce(?, delivery), updated_ms = ? "
                "WHERE purchase_id = ?",
                (state, keep_detail, detail, crystal_id, delivery, self._now_ms(), purchase_id.hex()),
            )

    async def keep_delivery(self, purchase_id: bytes, delivery: bytes) -> None:
        """Keep the seller's signed delivery as received (evidence in a dispute); the state is unchanged."""
        async with self._store.transaction(durable=True) as db:
            await db.execute("UPDATE purchases SET delivery = ? WHERE purchase_id = ?", (delivery, purchase_id.hex()))

    async def in_states(self, *states: PurchaseState, payment: str | None = None) -> list[PurchaseRecord]:
        marks = ", ".join("?" * len(states))
        async with self._store.reader().execute(
            f"SELECT {_PURCHASE_COLUMNS} FROM purchases WHERE state IN ({marks}) "  # noqa: S608
            "AND (? IS NULL OR payment = ?) ORDER BY updated_ms",
            (*states, payment, payment),
        ) as cursor:
            return [_purchase(tuple(r)) for r in await cursor.fetchall()]

    async def recent(self, limit: int = 20) -> list[PurchaseRecord]:
        async with self._store.reader().execute(
            f"SELECT {_PURCHASE_COLUMNS} FROM purchases ORDER BY updated_ms DESC LIMIT ?",  # noqa: S608
            (limit,),
        ) as cursor:
            return [_purchase(tuple(r)) for r in await cursor.fetchall()]

    async def spent(self) -> list[PurchaseRecord]:
        """What was paid for: completed purchases, and a direct payment refused on delivery."""
        async with self._store.reader().execute(
            f"SELECT {_PURCHASE_COLUMNS} FROM purchases "  # noqa: S608
            "WHERE state = 'completed' OR (state = 'refused' AND payment = 'direct')"
        ) as cursor:
            return [_purchase(tuple(r)) for r in await cursor.fetchall()]

    async def count_by_state(self) -> dict[str, int]:
        async with self._store.reader().execute("SELECT state, count(*) FROM purchases GROUP BY state") as cursor:
            return {str(state): int(n) for state, n in await cursor.fetchall()}

    async def outcomes_by_seller(self) -> dict[str, tuple[int, int]]:
        """(completed, failed) per seller (hex key); a purchase still under way is neither."""
        async with self._store.reader().execute(
            "SELECT seller, sum(state = 'completed'), sum(state IN ('refused', 'refunded')) FROM purchases "
            "GROUP BY seller"
        ) as cursor:
            return {str(s): (int(ok or 0), int(bad or 0)) for s, ok, bad in await cursor.fetchall()}


@dataclass(frozen=True, slots=True)
class SaleRecord:
    purchase_id: bytes
    buyer: bytes
    crystal_id: str
    quote: bytes  # the quote this node signed
    state: SaleState
    updated_ms: int
    delivery_key: bytes | None = None  # the one-time key of this sale's delivery, once delivered


_SALE_COLUMNS = "purchase_id, buyer, crystal_id, quote, state, updated_ms, delivery_key"


def _sale(row: tuple[object, ...]) -> SaleRecord:
    pid, buyer, crystal, quote, state, updated, key = row
    return SaleRecord(
        bytes.fromhex(str(pid)), bytes.fromhex(str(buyer)), str(crystal), bytes(quote),  # type: ignore[call-overload]
        SaleState(str(state)), int(updated), None if key is None else bytes(key),  # type: ignore[call-overload]
    )  # fmt: skip


class Sales:
    """This node's sales, one row per purchase id it quoted."""

    def __init__(self, store: MemoryStore, clock: Clock | None = None) -> None:
        self._store = store
        self._now_ms = clock or store.now_ms

    async def add_quote(
        self, purchase_id: bytes, buyer: bytes, crystal_id: str, quote: bytes, *, buyer_address: str = "",
        standing: bool = False, funded: bool = False,
    ) -> None:  # fmt: skip
        """Record a signed quote; ``standing``/``funded``: the quote slot it took (``quote_slots``)."""
        async with self._store.transaction(durable=True) as db:
            await db.execute(
                "INSERT INTO sales (purchase_id, buyer, crystal_id, quote, state, updated_ms, buyer_address, standing, "
                "funded) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?)",
                (purchase_id.hex(), buyer.hex(), crystal_id, quote, _S.QUOTED, self._now_ms(), buyer_address.lower(),
                 int(standing), int(funded)),
            )  # fmt: skip

    async def get(self, purchase_id: bytes) -> SaleRecord | None:
        async with self._store.reader().execute(
            f"SELECT {_SALE_COLUMNS} FROM sales WHERE purchase_id = ?",  # noqa: S608
            (purchase_id.hex(),),
        ) as cursor:
            row = await cursor.fetchone()
        return None if row is None else _sale(tuple(row))

    async def move(self, purchase_id: bytes, state: SaleState, *, delivery_key: bytes | None = None) -> None:
        async with self._store.transaction(durable=True) as db:
            old = await _state_in(db, "sales", purchase_id)
            check_move(SALE_MOVES, "a sale", SaleState(old) if old else None, state)  # type: ignore[arg-type]
            await db.execute(
                "UPDATE sales SET state = ?, delivery_key = coalesce(?, delivery_key), updated_ms = ? "
                "WHERE purchase_id = ?",
                (state, delivery_key, self._now_ms(), purchase_id.hex()),
            )

    async def keep_delivery_key(self, purchase_id: bytes, key: bytes) -> None:
        """Keep a delivery's one-time secret before anything sealed with it leaves (state unchanged)."""
        async with self._store.transaction(durable=True) as db:
            await db.execute("UPDATE sales SET delivery_key = ? WHERE purchase_id = ?", (key, purchase_id.hex()))

    async def defaulted_by(self, buyer: bytes, buyer_address: str = "") -> bytes | None:
        """One sale that ``buyer`` (its node key, or its wallet under any key) defaulted on, if any."""
        async with self._store.reader().execute(
            "SELECT purchase_id FROM sales WHERE state = 'defaulted' AND (buyer = ? OR buyer_address = ?) LIMIT 1",
            (buyer.hex(), buyer_address.lower() or None),
        ) as cursor:
            row = await cursor.fetchone()
        return None if row is None else bytes.fromhex(str(row[0]))

    async def paid_by(self, buyer: bytes, buyer_address: str = "") -> bool:
        """Whether ``buyer`` (its node key or its wallet) ever paid this node for a sale: standing here.
        Pass ``buyer_address`` only once the wallet proved it speaks for ``buyer``."""
        async with self._store.reader().execute(
            "SELECT 1 FROM sales WHERE state = 'paid' AND (buyer = ? OR buyer_address = ?) LIMIT 1",
            (buyer.hex(), buyer_address.lower() or None),
        ) as cursor:
            return await cursor.fetchone() is not None

    async def open_quotes(self, buyer: bytes, since_ms: int, buyer_address: str = "") -> OpenQuotes:
        """Quotes signed since ``since_ms`` and not yet paid, by pool (``quote_slots``)."""
        async with self._store.reader().execute(
            "SELECT count(*), coalesce(sum(buyer = ?), 0), coalesce(sum(standing = 0 AND funded = 1), 0), "
            "coalesce(sum(standing = 0 AND funded = 0), 0), "
            "coalesce(sum(standing = 0 AND funded = 1 AND buyer_address = ?), 0) FROM sales "
            "WHERE state = 'quoted' AND updated_ms > ?",
            (buyer.hex(), buyer_address.lower(), since_ms),
        ) as cursor:
            row = await cursor.fetchone()
        return OpenQuotes(*(int(v) for v in row)) if row else OpenQuotes(0, 0, 0, 0, 0)

    async def to_settle(self, quoted_before_ms: int) -> list[SaleRecord]:
        """Delivered sales, quotes older than ``quoted_before_ms``, and quotes whose commit-first
        delivery was tried (their secret is kept): their escrow may have moved."""
        async with self._store.reader().execute(
            f"SELECT {_SALE_COLUMNS} FROM sales "  # noqa: S608
            "WHERE state IN ('delivered', 'committed', 'disputed') "
            "OR (state = 'quoted' AND (updated_ms < ? OR delivery_key IS NOT NULL))",
            (quoted_before_ms,),
        ) as cursor:
            return [_sale(tuple(r)) for r in await cursor.fetchall()]

    async def drop_unpaid_quote(self, purchase_id: bytes) -> None:
        """Delete a quote never paid: the buyer holds the signed quote; nothing is owed either way."""
        async with self._store.transaction(durable=True) as db:
            await db.execute("DELETE FROM sales WHERE purchase_id = ? AND state = 'quoted'", (purchase_id.hex(),))

    async def drop_lapsed(self) -> int:
        """Delete the quotes earlier releases marked ``lapsed`` (never paid) and kept for good."""
        async with self._store.transaction(durable=True) as db:
            cursor = await db.execute("DELETE FROM sales WHERE state = 'lapsed'")
            count = int(cursor.rowcount)
            await cursor.close()
        return count

    async def recent(self, limit: int = 20) -> list[SaleRecord]:
        """The sales whose state changed last, newest first."""
        sql = f"SELECT {_SALE_COLUMNS} FROM sales ORDER BY updated_ms DESC LIMIT ?"  # noqa: S608
        async with self._store.reader().execute(sql, (limit,)) as cursor:
            return [_sale(tuple(r)) for r in await cursor.fetchall()]

    async def everything(self) -> list[SaleRecord]:
        async with self._store.reader().execute(f"SELECT {_SALE_COLUMNS} FROM sales") as cursor:  # noqa: S608
            return [_sale(tuple(r)) for r in await cursor.fetchall()]

    async def count_by_state(self) -> dict[str, int]:
        async with self._store.reader().execute("SELECT state, count(*) FROM sales GROUP BY state") as cursor:
            return {str(state): int(n) for state, n in await cursor.fetchall()}

    async def defaults_by_buyer(self) -> dict[str, int]:
        async with self._store.reader().execute(
            "SELECT buyer, count(*) FROM sales WHERE state = 'defaulted' GROUP BY buyer"
        ) as cursor:
            return {str(b): int(n) for b, n in await cursor.fetchall()}

    async def unique_buyers(self, crystal_id: str) -> int:
        """Distinct buyers who paid for ``crystal_id`` (demand in pricing)."""
        async with self._store.reader().execute(
            "SELECT count(DISTINCT buyer) FROM sales WHERE crystal_id = ? AND state = 'paid'", (crystal_id,)
        ) as cursor:
            row = await cursor.fetchone()
        return int(row[0]) if row else 0
