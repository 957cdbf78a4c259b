"""Buying and selling a skill between two nodes: quote, escrow, encrypted delivery, release or refund.

Over one direct stream protocol (``/bitterbot/market/1``), every message a signed envelope:

1. buyer -> seller  ``market.quote_request``  {stable_skill_id, version, buyer_address}
2. seller -> buyer  ``market.quote``          {purchase_id, stable_skill_id, version, content_hash,
                                                price_micro_usdc, seller_address, buyer, buyer_address,
                                                expires_ms, deadline_s}
3. buyer locks ``price`` for ``purchase_id`` in the escrow (the contract takes a purchase id once, ever)
4. buyer -> seller  ``market.delivery_request`` {purchase_id}
5. seller checks the lock on the chain (locked, right amount, to its address, from the quoted buyer),
   then ``market.delivery`` {purchase_id, sealed}: the skill sealed to the buyer's key
6. buyer opens it and checks its content hash against the listing the seller signed: it stores the
   skill (origin peer, provenance) and releases the escrow; anything else is refused, and the escrow
   refunds the buyer after the deadline.

Paying directly (``payment="direct"``) replaces 3-5: the buyer signs an EIP-3009
``transferWithAuthorization`` for exactly the price to the seller's address, with the purchase
id as its nonce (usable once, ever), and sends it with the delivery request; the seller
collects it on chain and then delivers. There is no escrow, so no refund: the buyer trusts the
seller (its trust level and reputation are the guard), and a refused delivery counts against it.

Every step is written to the store before the next one starts (``purchases`` / ``sales``).
A purchase in flight is never continued twice at once (``resume`` skips it), and a quote
that expired before its payment was locked is never paid.

Left to the escrow's rules: after the deadline a buyer can refund a lock it never released,
even if a valid delivery reached it. The seller's side is the remedy, not the contract:
``settle_sales`` marks such a sale ``defaulted``, the node counts it against the buyer's trust
(which its attestations carry to the network), and ``_quote`` refuses that buyer from then on.
"""

from __future__ import annotations

import asyncio
import os
from dataclasses import dataclass
from typing import Any

from crypto.envelope import Envelope, EnvelopePolicy, decode_envelope, open_envelope, pack_body, seal_envelope
from crypto.errors import EnvelopeError, SealedDataTampered
from crypto.identity import Identity, seal_to
from crypto.windows import ReplayGuard
from marketplace.bounties import live_bounties, matches
from marketplace.chain import Account, Chain, LockInfo, TransferAuthorization
from marketplace.errors import ChainError, PurchaseError
from marketplace.listings import listing_envelope
from memory.clock import wall_clock_ms
from memory.model import Bounty, NewCrystal, Origin, Scope, SemanticType, SkillVersion, content_hash
from memory.storage.store import MemoryStore
from p2p.host import P2PHost
from p2p.ingest import peer_source
from p2p.messages import SkillListing, parse_skill_listing
from p2p.validation import RateLimit, TokenBuckets

PROTOCOL = "/bitterbot/market/1"
KIND_QUOTE_REQUEST = "market.quote_request"
KIND_QUOTE = "market.quote"
KIND_DELIVERY_REQUEST = "market.delivery_request"
KIND_DELIVERY = "market.delivery"
KIND_ERROR = "market.error"
QUOTE_VALID_MS = 120_000
ESCROW_WINDOW_S = 600
_POLICY = EnvelopePolicy(
    kinds=frozenset({KIND_QUOTE_REQUEST, KIND_QUOTE, KIND_DELIVERY_REQUEST, KIND_DELIVERY, KIND_ERROR}),
    max_bytes=1_000_000,
)


@dataclass(frozen=True, slots=True)
class SellerLimits:
    """What one peer may ask of this node as a seller: requests are signed by keys that cost
    nothing, and each quote is a row and a chain call."""

    requests_per_min: float = 12.0  # quote and delivery requests per peer, sustained
    request_burst: int = 5
    max_open_quotes: int = 100  # quotes not yet expired and not delivered, from everyone
    max_open_quotes_per_buyer: int = 3


@dataclass(frozen=True, slots=True)
class PurchaseResult:
    purchase_id: str
    state: str
    crystal_id: str | None
    price_micro_usdc: int
    detail: str = ""


@dataclass(frozen=True, slots=True)
class _Deal:
    """One purchase as the buyer carries it: the seller's signed terms and where to reach the seller."""

    purchase_id: bytes
    quote: dict[str, Any]
    seller_peer: str
    seller_key: bytes
    listing: SkillListing

    @property
    def price(self) -> int:
        return int(self.quote["price_micro_usdc"])


_now_ms = wall_clock_ms  # a module global, so tests can move this module's time


class Market:
    """One node's side of the marketplace: sells its listings and buys others'."""

    def __init__(
        self,
        identity: Identity,
        wallet: Account,
        store: MemoryStore,
        chain: Chain,
        host: P2PHost,
        *,
        escrow_window_s: int = ESCROW_WINDOW_S,
        payment: str = "escrow",
        limits: SellerLimits | None = None,
    ) -> None:
        """The seller side answers on ``PROTOCOL``: register ``answer`` with the host before it starts."""
        self._identity = identity
        self._wallet = wallet
        self._store = store
        self._chain = chain
        self._host = host
        self._escrow_window_s = escrow_window_s
        if payment not in ("escrow", "direct"):
            raise ValueError(f"payment is 'escrow' or 'direct', not {payment!r}")
        self._payment = payment
        self._replay = ReplayGuard(horizon_ms=_POLICY.window.max_age_ms + _POLICY.window.max_ahead_ms)
        self._in_flight: set[bytes] = set()
        self._limits = limits or SellerLimits()
        self._requests = TokenBuckets(
            RateLimit(self._limits.requests_per_min / 60, self._limits.request_burst), max_keys=10_000
        )

    @property
    def wallet(self) -> Account:
        return self._wallet

    @property
    def chain(self) -> Chain:
        return self._chain

    # --- buyer -------------------------------------------------------------------------

    async def buy(
        self, seller_peer: str, seller_key: bytes, stable_skill_id: str, *, max_price: int | None = None
    ) -> PurchaseResult:
        wire = await listing_envelope(self._store, seller_key.hex(), stable_skill_id)
        if wire is None:
            raise PurchaseError(f"no live listing of {stable_skill_id} from that seller")
        listing = parse_skill_listing(decode_envelope(wire, max_bytes=_POLICY.max_bytes).body_map())
        if max_price is not None and listing.price_micro_usdc > max_price:
            raise PurchaseError(f"the listing asks {listing.price_micro_usdc} micro-USDC, more than {max_price}")
        request = self._seal(KIND_QUOTE_REQUEST, {
            "stable_skill_id": stable_skill_id, "version": listing.version, "buyer_address": self._wallet.address,
        })  # fmt: skip
        # The chain reads (on the chain's thread) overlap the quote's round trip; a buyer that cannot
        # pay has asked for a quote, nothing more (the seller's quote lapses).
        balance, permit_nonce, (quote_env, quote) = await asyncio.gather(
            self._chain.balance(self._wallet.address),
            self._chain.permit_nonce(self._wallet.address),
            self._ask(seller_peer, request, KIND_QUOTE, seller_key),
        )
        if balance < listing.price_micro_usdc:
            raise PurchaseError(
                f"insufficient funds: the skill costs {listing.price_micro_usdc} micro-USDC, the wallet holds {balance}"
            )
        self._check_quote(quote, listing)
        purchase_id = bytes(quote["purchase_id"])
        async with self._store.reader().execute(
            "SELECT 1 FROM purchases WHERE purchase_id = ?", (purchase_id.hex(),)
        ) as cursor:
            if await cursor.fetchone() is not None:
                raise PurchaseError("quote refused: its purchase id was already used (a replayed quote)")
        await self._persist_purchase(purchase_id, seller_key, seller_peer, quote_env, "quoted")
        self._in_flight.add(purchase_id)
        try:
            deal = _Deal(purchase_id, quote, seller_peer, seller_key, listing)
            return await self._continue(deal, fresh=True, permit_nonce=permit_nonce)
        finally:
            self._in_flight.discard(purchase_id)

    async def _continue(self, deal: _Deal, *, fresh: bool = False, permit_nonce: int | None = None) -> PurchaseResult:
        """Carry a purchase on from wherever it stands. ``fresh``: quoted just now by this process, so
        nothing was paid for it yet (a resumed purchase reads the chain first)."""
        if await self._payment_of(deal.purchase_id) == "direct":
            return await self._continue_direct(deal, fresh=fresh)
        # A purchase id the escrow already holds makes the lock revert: a fresh one skips the read.
        lock = LockInfo("", "", 0, 0, "none") if fresh else await self._chain.lock_info(deal.purchase_id)
        if lock.state in ("released", "refunded"):
            # A restart after the last chain step but before it was written down: settle the record.
            crystal = await self._crystal_with(deal.listing.content_hash) if lock.state == "released" else None
            return await self._end(deal, "completed" if lock.state == "released" else "refunded", crystal=crystal)
        if lock.state == "none":  # the escrow takes a purchase id once: a resumed purchase never pays twice
            if int(deal.quote["expires_ms"]) < _now_ms():
                return await self._end(
                    deal, "expired", "the quote expired before the payment was locked; nothing was paid"
                )
            try:
                await self._chain.lock(
                    self._wallet,
                    deal.purchase_id,
                    str(deal.quote["seller_address"]),
                    deal.price,
                    int(deal.quote["deadline_s"]),
                    permit_nonce=permit_nonce,
                )
            except ChainError as exc:
                await self._set_state(deal.purchase_id, "failed", str(exc))
                raise PurchaseError(f"payment not made: {exc}") from None
        await self._set_state(deal.purchase_id, "locked")
        outcome = await self._receive(deal, {"purchase_id": deal.purchase_id})
        if outcome == "unreachable":
            # The seller may be restarting: the payment stays locked and ``resume`` asks again;
            # if it never answers, ``refund_due`` takes the money back after the deadline.
            return await self._end(
                deal, "locked", "seller unreachable; resume retries, the escrow refunds after the deadline"
            )
        if isinstance(outcome, str):
            return await self._end(
                deal, "refused", f"delivery refused: {outcome}; the escrow refunds after the deadline"
            )
        crystal = await self._store_skill(outcome[0], deal.listing, deal.seller_key)
        await self._chain.release(self._wallet, deal.purchase_id)
        return await self._end(deal, "completed", crystal=crystal)

    async def _continue_direct(self, deal: _Deal, *, fresh: bool) -> PurchaseResult:
        paid = False if fresh else await self._chain.authorization_used(self._wallet.address, deal.purchase_id)
        if not paid and int(deal.quote["expires_ms"]) < _now_ms():
            return await self._end(
                deal, "expired", "the quote expired before the payment was authorized; nothing was paid"
            )
        # Signing again on resume gives an authorization for the same nonce: it can be collected once.
        auth = await self._chain.authorize_transfer(
            self._wallet, str(deal.quote["seller_address"]), deal.price, deal.purchase_id, int(deal.quote["deadline_s"])
        )
        await self._set_state(deal.purchase_id, "authorized")
        outcome = await self._receive(deal, {"purchase_id": deal.purchase_id, "authorization": auth.to_wire()})
        if outcome == "unreachable":
            return await self._end(
                deal, "authorized", "seller unreachable; resume retries (the authorization is collected at most once)"
            )
        if isinstance(outcome, str):
            if await self._chain.authorization_used(self._wallet.address, deal.purchase_id):
                return await self._end(
                    deal, "refused", f"delivery refused: {outcome}; paid directly, so there is no refund"
                )
            return await self._end(deal, "failed", f"delivery refused: {outcome}; nothing was paid")
        crystal = await self._store_skill(outcome[0], deal.listing, deal.seller_key)
        return await self._end(deal, "completed", crystal=crystal)

    async def _end(self, deal: _Deal, state: str, detail: str = "", *, crystal: str | None = None) -> PurchaseResult:
        """Write where the purchase stands now and report it."""
        await self._set_state(deal.purchase_id, state, detail, crystal_id=crystal)
        return PurchaseResult(deal.purchase_id.hex(), state, crystal, deal.price, detail)

    async def _receive(self, deal: _Deal, body: dict[str, Any]) -> tuple[str] | str:
        """Ask for the delivery and check it: ``(skill text,)``, ``"unreachable"``, or why it was refused."""
        try:
            request = self._seal(KIND_DELIVERY_REQUEST, body)
            _, delivery = await self._ask(deal.seller_peer, request, KIND_DELIVERY, deal.seller_key)
            if bytes(delivery["purchase_id"]) != deal.purchase_id:
                raise PurchaseError("the delivery is for another purchase")
            text = self._identity.open_sealed(bytes(delivery["sealed"])).decode("utf-8")
            if content_hash(text) != deal.listing.content_hash:
                raise PurchaseError("the delivered skill does not match the signed listing's content hash")
        except (TimeoutError, ConnectionError):
            return "unreachable"
        except (PurchaseError, SealedDataTampered, UnicodeDecodeError) as exc:
            return str(exc)
        return (text,)

    async def _payment_of(self, purchase_id: bytes) -> str:
        async with self._store.reader().execute(
            "SELECT payment FROM purchases WHERE purchase_id = ?", (purchase_id.hex(),)
        ) as cursor:
            row = await cursor.fetchone()
        return str(row[0]) if row else self._payment

    async def resume(self) -> list[PurchaseResult]:
        """After a restart: carry every purchase left quoted or locked to its end, and refund what is due."""
        async with self._store.reader().execute(
            "SELECT purchase_id, seller, seller_peer, quote FROM purchases "
            "WHERE state IN ('quoted', 'locked', 'authorized')"
        ) as cursor:
            rows = list(await cursor.fetchall())
        results = []
        for purchase_hex, seller_hex, seller_peer, quote_wire in rows:
            purchase_id = bytes.fromhex(purchase_hex)
            if purchase_id in self._in_flight:
                continue  # a buy in this process is carrying it right now
            quote = decode_envelope(bytes(quote_wire), max_bytes=_POLICY.max_bytes).body_map()
            listing = SkillListing(
                stable_skill_id=str(quote["stable_skill_id"]), version=int(quote["version"]),
                content_hash=str(quote["content_hash"]), title=str(quote["stable_skill_id"]), description="",
                tags=(), category="", price_micro_usdc=int(quote["price_micro_usdc"]),
                seller_address=str(quote["seller_address"]), executions=0, successes=0, content=None,
            )  # fmt: skip
            self._in_flight.add(purchase_id)
            try:
                results.append(
                    await self._continue(
                        _Deal(purchase_id, quote, str(seller_peer), bytes.fromhex(seller_hex), listing)
                    )
                )
            finally:
                self._in_flight.discard(purchase_id)
        await self.refund_due()
        return results

    async def settle_sales(self) -> dict[str, int]:
        """Seller side: mark delivered sales whose escrow was released (``paid``) or refunded. A quote is
        looked at once its validity and two escrow windows have passed: never locked, it is deleted
        (``purged``), so unpaid quotes cost neither rows nor chain calls for long; locked and refunded
        without a delivery, it is ``refunded``. Returns counts by new state."""
        lapse_ms = QUOTE_VALID_MS + 2 * self._escrow_window_s * 1000
        async with self._store.reader().execute(
            "SELECT purchase_id, state, updated_ms FROM sales "
            "WHERE state = 'delivered' OR (state = 'quoted' AND updated_ms < ?)",
            (_now_ms() - lapse_ms,),
        ) as cursor:
            rows = list(await cursor.fetchall())
        changed: dict[str, int] = {}
        purged = await self._purge_lapsed_quotes()
        if purged:
            changed["purged"] = purged
        for purchase_hex, state, updated_ms in rows:
            lock = await self._chain.lock_info(bytes.fromhex(purchase_hex))
            new_state = {"released": "paid", "refunded": "refunded"}.get(lock.state)
            if new_state == "refunded" and state == "delivered" and await self._delivered_as_listed(purchase_hex):
                new_state = "defaulted"  # the buyer kept exactly the listed skill and took its money back
            if new_state is None and lock.state == "none" and state == "quoted" and _now_ms() - updated_ms > lapse_ms:
                new_state = "purged"
            if new_state is None:
                continue
            async with self._store.transaction() as db:
                if new_state == "purged":  # never paid: nothing to keep (the buyer holds the signed quote)
                    await db.execute("DELETE FROM sales WHERE purchase_id = ? AND state = 'quoted'", (purchase_hex,))
                else:
                    await db.execute(
                        "UPDATE sales SET state = ?, updated_ms = ? WHERE purchase_id = ?",
                        (new_state, _now_ms(), purchase_hex),
                    )
            changed[new_state] = changed.get(new_state, 0) + 1
        return changed

    async def _purge_lapsed_quotes(self) -> int:
        """Delete the quotes earlier releases marked ``lapsed`` (never paid) and kept for good."""
        async with self._store.transaction() as db:
            cursor = await db.execute("DELETE FROM sales WHERE state = 'lapsed'")
            count = int(cursor.rowcount)
            await cursor.close()
        return count

    async def _delivered_as_listed(self, purchase_hex: str) -> bool:
        """Whether the crystal this node delivered for a sale is the one its quote named (its content
        hash): only then is a refund after delivery the buyer's doing rather than this node's."""
        async with self._store.reader().execute(
            "SELECT s.quote, c.content_hash FROM sales s JOIN crystals c ON c.id = s.crystal_id "
            "WHERE s.purchase_id = ?",
            (purchase_hex,),
        ) as cursor:
            row = await cursor.fetchone()
        if row is None:
            return False
        quote = decode_envelope(bytes(row[0]), max_bytes=_POLICY.max_bytes).body_map()
        return str(quote["content_hash"]) == str(row[1])

    async def _crystal_with(self, chash: str) -> str | None:
        async with self._store.reader().execute("SELECT id FROM crystals WHERE content_hash = ?", (chash,)) as cursor:
            row = await cursor.fetchone()
        return str(row[0]) if row else None

    async def refund_due(self) -> list[str]:
        """Refund every refused or undelivered purchase whose escrow deadline has passed; returns their ids."""
        async with self._store.reader().execute(
            "SELECT purchase_id FROM purchases WHERE state IN ('refused', 'locked') AND payment = 'escrow'"
        ) as cur:
            pending = [bytes.fromhex(r[0]) for r in await cur.fetchall()]
        done = []
        now = await self._chain.timestamp()
        for purchase_id in pending:
            lock = await self._chain.lock_info(purchase_id)
            if lock.state == "locked" and now >= lock.deadline:
                await self._chain.refund(self._wallet, purchase_id)
                lock = await self._chain.lock_info(purchase_id)
            if lock.state == "refunded":
                await self._set_state(purchase_id, "refunded", keep_detail=True)
                done.append(purchase_id.hex())
        return done

    def _check_quote(self, quote: dict[str, Any], listing: SkillListing) -> None:
        expected = {
            "stable_skill_id": listing.stable_skill_id,
            "version": listing.version,
            "content_hash": listing.content_hash,
            "price_micro_usdc": listing.price_micro_usdc,
            "seller_address": listing.seller_address,
            "buyer": self._identity.public_key,
            "buyer_address": self._wallet.address,
        }
        for name, value in expected.items():
            if quote.get(name) != value:
                raise PurchaseError(f"quote refused: {name} differs from the listing or from this buyer")
        if int(quote["expires_ms"]) < _now_ms():
            raise PurchaseError("quote refused: it has expired")
        if not isinstance(quote.get("purchase_id"), bytes) or len(quote["purchase_id"]) != 32:
            raise PurchaseError("quote refused: malformed purchase id")

    async def _store_skill(self, text: str, listing: SkillListing, seller_key: bytes) -> str:
        source = peer_source(seller_key)
        me = self._identity.public_key.hex()
        mine = [  # a bought skill that answers one of this node's own bounties carries it
            b
            for b in await live_bounties(self._store, _now_ms(), author=me)
            if matches(b, text=f"{listing.title} {text}", tags=listing.tags, category=listing.category)
        ]
        remembered = await self._store.remember(
            NewCrystal(
                text,
                semantic_type=SemanticType.SKILL,
                origin=Origin.PEER,
                scope=Scope.PRIVATE,
                source=source,
                skill=SkillVersion(
                    listing.stable_skill_id, listing.version, tags=listing.tags, category=listing.category or None
                ),
                actor=source,
                context=listing.title,
                bounty=Bounty(mine[0].bounty_id, mine[0].reward_micro_usdc) if mine else None,
            )
        )
        return remembered.crystal.id

    # --- seller ------------------------------------------------------------------------

    async def answer(self, peer: str, request: bytes) -> bytes:
        """The seller's side of ``PROTOCOL``: one signed answer (or a signed error) per request."""
        try:
            if not self._requests.allow(peer.encode(), _now_ms()):  # before any signature check or row
                raise PurchaseError("too many requests from your node; try again in a minute")
            envelope = open_envelope(request, _POLICY, now_ms=_now_ms(), replay=self._replay)
            body = envelope.body_map()
            if envelope.kind == KIND_QUOTE_REQUEST:
                return await self._quote(envelope.author, body)
            if envelope.kind == KIND_DELIVERY_REQUEST:
                return await self._deliver(envelope.author, body)
            raise PurchaseError(f"cannot answer a {envelope.kind}")
        except (EnvelopeError, PurchaseError, ChainError, KeyError, TypeError, ValueError) as exc:
            return self._seal(KIND_ERROR, {"error": str(exc)}).encode()

    async def _quote(self, buyer: bytes, body: dict[str, Any]) -> bytes:
        skill_id = str(body["stable_skill_id"])
        async with self._store.reader().execute(
            "SELECT purchase_id FROM sales WHERE buyer = ? AND state = 'defaulted' LIMIT 1", (buyer.hex(),)
        ) as cursor:
            defaulted = await cursor.fetchone()
        if defaulted is not None:  # the escrow cannot stop that buyer; this seller can stop selling to it
            raise PurchaseError(
                f"this seller no longer sells to you: you took back the payment for a skill it had delivered "
                f"(purchase {str(defaulted[0])[:16]}…)"
            )
        async with self._store.reader().execute(
            "SELECT count(*), coalesce(sum(buyer = ?), 0) FROM sales WHERE state = 'quoted' AND updated_ms > ?",
            (buyer.hex(), _now_ms() - QUOTE_VALID_MS),
        ) as cursor:
            open_quotes, yours = await cursor.fetchone() or (0, 0)
        if yours >= self._limits.max_open_quotes_per_buyer:
            raise PurchaseError(f"you have {yours} open quotes here; pay one or let them expire (2 minutes)")
        if open_quotes >= self._limits.max_open_quotes:
            raise PurchaseError("this seller has too many open quotes; try again in a few minutes")
        wire = await listing_envelope(self._store, self._identity.public_key.hex(), skill_id)
        if wire is None:
            raise PurchaseError(f"{skill_id} is not listed here")
        listing = parse_skill_listing(decode_envelope(wire, max_bytes=_POLICY.max_bytes).body_map())
        if int(body["version"]) != listing.version:
            raise PurchaseError(f"version {body['version']} is not the listed one ({listing.version})")
        async with self._store.reader().execute(
            "SELECT id FROM crystals WHERE content_hash = ? AND lifecycle NOT IN ('expired', 'archived')",
            (listing.content_hash,),
        ) as cursor:
            row = await cursor.fetchone()
        if row is None:
            raise PurchaseError(f"{skill_id} is no longer held here")
        purchase_id = os.urandom(32)
        quote_body = {
            "purchase_id": purchase_id,
            "stable_skill_id": skill_id,
            "version": listing.version,
            "content_hash": listing.content_hash,
            "price_micro_usdc": listing.price_micro_usdc,
            "seller_address": listing.seller_address,
            "buyer": buyer,
            "buyer_address": str(body["buyer_address"]),
            "expires_ms": _now_ms() + QUOTE_VALID_MS,
            "deadline_s": await self._chain.timestamp() + self._escrow_window_s,
        }
        quote = self._seal(KIND_QUOTE, quote_body)
        async with self._store.transaction() as db:
            await db.execute(
                "INSERT INTO sales (purchase_id, buyer, crystal_id, quote, state, updated_ms) "
                "VALUES (?, ?, ?, ?, 'quoted', ?)",
                (purchase_id.hex(), buyer.hex(), row[0], quote.encode(), _now_ms()),
            )
        return quote.encode()

    async def _deliver(self, buyer: bytes, body: dict[str, Any]) -> bytes:
        purchase_id = bytes(body["purchase_id"])
        async with self._store.reader().execute(
            "SELECT buyer, crystal_id, quote FROM sales WHERE purchase_id = ?", (purchase_id.hex(),)
        ) as cursor:
            row = await cursor.fetchone()
        if row is None or row[0] != buyer.hex():
            raise PurchaseError("no such purchase for this buyer")
        quote = decode_envelope(bytes(row[2]), max_bytes=_POLICY.max_bytes).body_map()
        if "authorization" in body:
            await self._collect(purchase_id, quote, TransferAuthorization.from_wire(body["authorization"]))
            state = "paid"  # paid directly: nothing left to settle
        else:
            lock = await self._chain.lock_info(purchase_id)
            if (
                lock.state != "locked"
                or lock.amount != int(quote["price_micro_usdc"])
                or lock.seller.lower() != str(quote["seller_address"]).lower()
                or lock.buyer.lower() != str(quote["buyer_address"]).lower()
            ):
                raise PurchaseError(f"payment not locked as quoted (escrow says {lock.state}); nothing delivered")
            state = "delivered"  # paid when the buyer releases the escrow
        crystal = await self._store.get(str(row[1]))
        delivery = self._seal(
            KIND_DELIVERY, {"purchase_id": purchase_id, "sealed": seal_to(buyer, crystal.text.encode())}
        )
        async with self._store.transaction() as db:
            await db.execute(
                "UPDATE sales SET state = ?, updated_ms = ? WHERE purchase_id = ?",
                (state, _now_ms(), purchase_id.hex()),
            )
        return delivery.encode()

    async def _collect(self, purchase_id: bytes, quote: dict[str, Any], auth: TransferAuthorization) -> None:
        """Collect a direct payment: exactly the quoted terms, once (a re-sent authorization whose
        nonce is already used was collected before: the seller was paid, it delivers again)."""
        terms = {
            "authorizer": str(quote["buyer_address"]).lower(),
            "receiver": str(quote["seller_address"]).lower(),
            "amount": int(quote["price_micro_usdc"]),
            "nonce": purchase_id,
        }
        given = {"authorizer": auth.authorizer.lower(), "receiver": auth.receiver.lower(), "amount": auth.amount,
                 "nonce": auth.nonce}  # fmt: skip
        for name, value in terms.items():
            if given[name] != value:
                raise PurchaseError(f"the payment authorization's {name} differs from the quote; nothing delivered")
        if not await self._chain.authorization_used(auth.authorizer, purchase_id):
            try:
                await self._chain.transfer_with_authorization(self._wallet, auth)
            except ChainError as exc:
                raise PurchaseError(f"the direct payment failed ({exc}); nothing delivered") from None

    # --- helpers -----------------------------------------------------------------------

    def _seal(self, kind: str, body: dict[str, Any]) -> Envelope:
        return seal_envelope(self._identity, kind, pack_body(body), now_ms=_now_ms())

    async def _ask(self, peer: str, request: Envelope, expect: str, signer: bytes) -> tuple[bytes, dict[str, Any]]:
        answer = await self._host.request(peer, PROTOCOL, request.encode())
        try:
            envelope = open_envelope(answer, _POLICY, now_ms=_now_ms(), replay=self._replay)
        except EnvelopeError as exc:
            raise PurchaseError(f"unusable answer from the seller: {exc}") from None
        if envelope.author != signer:
            raise PurchaseError("the answer is not signed by the seller")
        body = envelope.body_map()
        if envelope.kind == KIND_ERROR:
            raise PurchaseError(f"the seller refused: {body.get('error')}")
        if envelope.kind != expect:
            raise PurchaseError(f"expected a {expect}, got a {envelope.kind}")
        return answer, body

    async def _persist_purchase(self, purchase_id: bytes, seller: bytes, peer: str, quote: bytes, state: str) -> None:
        async with self._store.transaction() as db:
            await db.execute(
                "INSERT INTO purchases (purchase_id, seller, seller_peer, quote, state, payment, updated_ms) "
                "VALUES (?, ?, ?, ?, ?, ?, ?)",
                (purchase_id.hex(), seller.hex(), peer, quote, state, self._payment, _now_ms()),
            )

    async def _set_state(
        self,
        purchase_id: bytes,
        state: str,
        detail: str = "",
        *,
        crystal_id: str | None = None,
        keep_detail: bool = False,
    ) -> None:
        """Record the purchase's new state; ``keep_detail`` keeps why it got there (a refund after a refusal)."""
        async with self._store.transaction() as db:
            await db.execute(
                "UPDATE purchases SET state = ?, detail = CASE WHEN ? THEN detail ELSE ? END, "
                "crystal_id = coalesce(?, crystal_id), updated_ms = ? WHERE purchase_id = ?",
                (state, keep_detail, detail, crystal_id, _now_ms(), purchase_id.hex()),
            )
