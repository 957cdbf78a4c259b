"""The marketplace as a part of the daemon: the chain client, the wallet, buying and selling.

Starts after the P2P part (whose host carries the market protocol); connects the chain
named by ``[chain]``, or starts the embedded development chain when a command first needs it
(it cannot trade with other nodes, and building it cost each start about a second of a core
and the EVM's memory: most nodes never use it); then, every
``resume_interval_s``, carries unfinished purchases on (after a restart too), refunds
what is due, and settles sales whose escrow was released. A chain that cannot be
reached does not stop the node: the market waits for it and says why in ``status``.
"""

from __future__ import annotations

import asyncio
from typing import Any

from crypto.envelope import decode_envelope
from crypto.peer_id import peer_id_from_ed25519
from ground.authority import Speaker
from ground.events import get_logger
from marketplace.catalog.listings import ListingRow, listed_title, listing_envelope, live_listings
from marketplace.chain import Chain
from marketplace.errors import ChainError, ChainUnreachable, MarketUnavailable, PurchaseError
from marketplace.escrow import Escrow
from marketplace.exchange.advice import purchase_advice, sale_advice
from marketplace.exchange.deals import Purchases, Sales
from marketplace.exchange.ledger import ledger
from marketplace.exchange.market import Market
from marketplace.exchange.protocol import PROTOCOL, readable_quote
from marketplace.gossip.kinds import register_market_gossip
from marketplace.gossip.listing import LISTING
from marketplace.gossip.received_quota import bounties_bound, listings_bound
from marketplace.gossip.sink import MarketSink
from marketplace.pricing import format_usdc, parse_usdc
from marketplace.wallet import load_or_create_wallet
from memory.errors import CrystalNotFound
from memory.governance.peer_quota import PeerContentQuota
from memory.governance.quarantine import hold_of, review_note
from node.config import Config
from node.errors import InvalidValue, NotFoundHere
from node.parts.memory import MemoryPart
from node.parts.p2p import P2PPart
from node.runtime.context import NodeContext
from node.runtime.lifecycle import TaskSupervisor

log = get_logger("node.market")

EMBEDDED_CANNOT_TRADE = (
    "this node settles on its embedded development chain, which lives inside this process: "
    "no seller can see a payment made there. To buy from other nodes, point every node at the same "
    "chain ([chain] url, token_address, escrow_address; README: 'Buying and selling between nodes')"
)


class MarketPart:
    name = "market"

    def __init__(self, ctx: NodeContext, supervisor: TaskSupervisor, memory: MemoryPart, p2p: P2PPart) -> None:
        self._ctx = ctx
        self._supervisor = supervisor
        self._memory = memory
        self._p2p = p2p
        self._wallet = load_or_create_wallet(ctx.paths.data_dir / "wallet.key", ctx.key_passphrase)
        self.market: Market | None = None
        self._chain_error = ""
        self._connecting = asyncio.Lock()  # two first commands at once build one embedded chain
        self._last_round: dict[str, Any] = {}
        market = ctx.config.marketplace
        #: What ``status`` shows of the agent's daily budget, read by ``refresh``.
        self._spending: dict[str, int] = {
            "ceiling_micro_usdc": market.max_purchase_micro_usdc,
            "agent_daily_budget_micro_usdc": market.agent_daily_budget_micro_usdc,
        }
        p2p.add_service(PROTOCOL, self._answer)
        register_market_gossip(p2p.gossip, market_sink(p2p, ctx.config))  # the market's kinds, consumed here

    # --- lifecycle ---------------------------------------------------------------------

    async def start(self) -> None:
        if self._ctx.config.chain.url:
            await self._try_connect()
        self._supervisor.spawn("market-rounds", self._rounds)

    async def stop(self) -> None:
        if self.market is not None:
            chain, self.market = self.market.chain, None
            await chain.close()

    async def refresh(self) -> None:
        """Read the agent's spending anew for ``status`` (``details`` must not wait on the database)."""
        if self.market is not None:
            self._spending = await self.market.spending()

    def details(self) -> dict[str, Any]:
        cfg = self._ctx.config.chain
        where = cfg.url or "embedded development chain (this process only)"
        if self.market is not None:
            state = "ready"
        elif not cfg.url and not self._chain_error:
            state = "starts when a market command first needs it"
        else:
            state = f"chain unreachable: {self._chain_error}"
        return {
            "chain": where,
            "address": self._wallet.address,
            "state": state,
            "last_round": dict(self._last_round),
            "spending": dict(self._spending),
            "summary": f"wallet {self._wallet.address} on {where}, {state}{_spent(self._spending)}",
        }

    # --- chain and rounds ----------------------------------------------------------------

    async def _try_connect(self) -> None:
        cfg = self._ctx.config.chain
        try:
            if cfg.url:
                tuning = cfg.settled()
                chain = await Chain.rpc(
                    cfg.url, cfg.token_address, cfg.escrow_address, dev=cfg.dev, chain_id=tuning.chain_id
                )
                tuning.apply(chain)
            else:
                chain = await Chain.embedded()
        except ChainError as exc:
            if self._chain_error != str(exc):
                log.error("market.chain_unreachable", url=cfg.url, error=str(exc))
            self._chain_error = str(exc)
            return
        chain.receipt_timeout_s = cfg.receipt_timeout_s
        try:
            mismatch = cfg.outside(await Escrow(chain).rules()) or await Escrow(chain).arbiter_refusal()
        except ChainError as exc:
            mismatch = str(exc)
        if mismatch is not None:
            await chain.close()
            if self._chain_error != mismatch:
                log.error("market.escrow_bounds", escrow=chain.escrow_address, error=mismatch)
            self._chain_error = mismatch
            return
        store = self._memory.store
        host = self._p2p.host
        if store is None or host is None:
            await chain.close()
            self._chain_error = "the memory store or the p2p host is not running"
            return
        market = self._ctx.config.marketplace
        self.market = Market(
            self._ctx.identity,
            self._wallet,
            store,
            chain,
            host,
            escrow_window_s=cfg.escrow_window_s,
            bounds=cfg,
            payment=market.payment,
            limits=market,
            spend_limits=market,
            round_interval_s=cfg.resume_interval_s,
            standing=self._p2p.trust.has_standing,
        )
        self._chain_error = ""
        log.info("market.ready", chain=cfg.url or "embedded", address=self._wallet.address)

    async def _rounds(self) -> None:
        """Carry unfinished purchases on, refund what is due, settle sales; log what changed."""
        while True:
            if self.market is None and self._ctx.config.chain.url:
                await self._try_connect()
            market = self.market
            if market is not None:
                try:
                    resumed = await market.resume()
                    settled = await market.settle_sales()
                    decided = await market.arbitrate_answered()
                    withdraw_at = self._ctx.config.marketplace.withdraw_at_micro_usdc
                    withdrawn = await market.withdraw(at_least=withdraw_at) if withdraw_at else 0
                    self._last_round = {
                        "at_ms": self._ctx.now_ms(),
                        "resumed": {r.purchase_id: r.state for r in resumed},
                        "settled": settled,
                        "arbitrated": [
                            {"purchase_id": v.terms.purchase_id.hex(), "to": "seller" if v.to_seller else "buyer"}
                            for v in decided
                        ],
                        "withdrawn_micro_usdc": withdrawn,
                        "stuck": market.stuck(),
                    }
                    if resumed or settled or withdrawn or decided:
                        log.info(
                            "market.round", resumed=len(resumed), arbitrated=len(decided),
                            settled=", ".join(f"{state}={n}" for state, n in sorted(settled.items())),
                            withdrawn=withdrawn,
                        )  # fmt: skip
                except (ChainError, PurchaseError, ConnectionError, TimeoutError) as exc:
                    log.warning("market.round_failed", error=str(exc))
            await asyncio.sleep(self._ctx.config.chain.resume_interval_s)

    async def _answer(self, peer: str, request: bytes) -> bytes:
        if self.market is None:
            raise ConnectionError("the marketplace is not ready (no chain)")  # the stream resets; the buyer retries
        return await self.market.answer(peer, request)

    # --- commands --------------------------------------------------------------------------

    async def _start_embedded(self) -> None:
        if self.market is None and not self._ctx.config.chain.url:
            async with self._connecting:
                if self.market is None:
                    await self._try_connect()

    async def _ready(self) -> Market:
        await self._start_embedded()
        if self.market is None:
            raise MarketUnavailable(f"the marketplace has no chain: {self._chain_error}")
        return self.market

    async def buy_listing(self, listing: str, max_price: str | None, speaker: Speaker) -> dict[str, Any]:
        """Buy a listed skill for ``speaker``: ``listing`` is a stable skill id, or ``<seller peer id>/<skill id>``.
        What it may cost is the buyer's to check (``marketplace.exchange.spending``)."""
        market = await self._ready()
        if not self._ctx.config.chain.url:
            raise InvalidValue(EMBEDDED_CANNOT_TRADE)
        row = await self._find_listing(listing)
        await self._learn_seller_addrs(row)
        try:  # a PurchaseError is the market's own refusal (400 in node.error_status): not rewrapped
            result = await market.buy(
                peer_id_from_ed25519(bytes.fromhex(row.seller)),
                bytes.fromhex(row.seller),
                row.stable_skill_id,
                max_price=parse_usdc(max_price) if max_price else None,
                speaker=speaker,
            )
        finally:
            await self.refresh()
        return {
            "purchase_id": result.purchase_id,
            "state": result.state,
            "crystal_id": result.crystal_id,
            "price_micro_usdc": result.price_micro_usdc,
            "stable_skill_id": row.stable_skill_id,
            "seller_peer_id": peer_id_from_ed25519(bytes.fromhex(row.seller)),
            "detail": result.detail,
        }

    async def _learn_seller_addrs(self, row: ListingRow) -> None:
        """The listing says where its seller listens: a buyer not connected to it can still dial it."""
        store, host = self._memory.store, self._p2p.host
        if store is None or host is None:
            return
        wire = await listing_envelope(store, row.seller, row.stable_skill_id)
        if wire is None:
            return
        listing = LISTING.parse(decode_envelope(wire, max_bytes=1_000_000).body_map())
        if listing.seller_addrs:
            await host.remember_addrs(peer_id_from_ed25519(bytes.fromhex(row.seller)), list(listing.seller_addrs))

    async def _find_listing(self, wanted: str) -> ListingRow:
        store = self._memory.running_store()
        me = self._ctx.identity.public_key.hex()
        seller_peer, _, skill_id = wanted.rpartition("/")
        rows = [
            r
            for r in await live_listings(store)
            if r.stable_skill_id == skill_id
            and r.seller != me
            and (not seller_peer or peer_id_from_ed25519(bytes.fromhex(r.seller)) == seller_peer)
        ]
        if not rows:
            raise NotFoundHere(f"no live listing of {wanted!r} from another node (see `bitterbot-node skills list`)")
        if len(rows) > 1:
            sellers = ", ".join(f"{peer_id_from_ed25519(bytes.fromhex(r.seller))}/{skill_id}" for r in rows)
            raise InvalidValue(f"{skill_id} is listed by {len(rows)} sellers; name one: {sellers}")
        return rows[0]

    async def wallet_report(self) -> dict[str, Any]:
        store = self._memory.running_store()
        balance = owed = None
        await self._start_embedded()  # the person asked for the balance: the embedded chain holds it
        if self.market is not None:
            try:
                balance = await self.market.chain.balance(self._wallet.address)
                owed = await self.market.owed()
            except ChainError as exc:
                self._chain_error = str(exc)
        purchases, sales = await self._deals(20)
        return {
            "address": self._wallet.address,
            "chain": self._ctx.config.chain.url or "embedded",
            "balance_micro_usdc": balance,
            "owed_micro_usdc": owed,  # paid sales held by the escrow until withdrawn
            "chain_error": self._chain_error or None,
            "ledger": (await ledger(store, self._ctx.identity.public_key.hex())).as_dict(),
            "recent_purchases": purchases,
            "recent_sales": sales,
            "stuck": self.market.stuck() if self.market is not None else {},
            "spending": await self.market.spending() if self.market is not None else dict(self._spending),
        }

    async def _deals(self, limit: int) -> tuple[list[dict[str, Any]], list[dict[str, Any]]]:
        """The latest purchases and sales, each with what comes next (or why it is stuck)."""
        store = self._memory.running_store()
        stuck = self.market.stuck() if self.market is not None else {}
        purchases = [
            {"purchase_id": r.purchase_id.hex(), "state": str(r.state), "detail": r.detail,
             "skill": await self._skill_named(r.crystal_id, r.seller.hex(), r.quote),
             "crystal_id": r.crystal_id, "updated_ms": r.updated_ms, "stuck": stuck.get(r.purchase_id.hex()),
             "advice": purchase_advice(r.state, stuck.get(r.purchase_id.hex())),
             "held": review_note(await hold_of(store, r.crystal_id)) if r.crystal_id else None}
            for r in await Purchases(store).recent(limit)
        ]  # fmt: skip
        sales = [
            {"purchase_id": r.purchase_id.hex(), "state": str(r.state), "crystal_id": r.crystal_id,
             "skill": await self._skill_named(r.crystal_id, None, r.quote),
             "buyer": r.buyer.hex(), "updated_ms": r.updated_ms, "stuck": stuck.get(r.purchase_id.hex()),
             "advice": sale_advice(r.state, stuck.get(r.purchase_id.hex()))}
            for r in await Sales(store).recent(limit)
        ]  # fmt: skip
        return purchases, sales

    async def _skill_named(self, crystal_id: str | None, seller: str | None, quote: bytes) -> str:
        """What a deal was for, for a person: the skill's first line once it is here, else the title
        its seller listed it under, else its id from the quote (a purchase read "completed" alone)."""
        store = self._memory.running_store()
        if crystal_id is not None:
            try:
                first = (await store.get(crystal_id, include_archived=True)).text.strip().splitlines()[0]
                return first[:80] + ("…" if len(first) > 80 else "")
            except CrystalNotFound:
                pass  # forgotten since: the listing still names it
        terms = readable_quote(quote)
        if terms is None:
            return "a skill (the quote is in an earlier release's form)"
        title = await listed_title(store, seller, terms.stable_skill_id) if seller is not None else None
        return title or terms.stable_skill_id

    async def deals_report(self, limit: int) -> dict[str, Any]:
        """This node's latest purchases and sales, with what comes next for each, stuck ones first."""
        purchases, sales = await self._deals(limit)
        stuck = [d for d in purchases + sales if d["stuck"]]
        return {"purchases": purchases, "sales": sales, "stuck": len(stuck)}

    async def dispute(self, purchase_id: str) -> dict[str, Any]:
        """Contest the seller's committed delivery of one of this node's purchases."""
        result = await (await self._ready()).dispute(_purchase_id(purchase_id))
        return {"purchase_id": result.purchase_id, "state": result.state, "detail": result.detail}

    async def evidence(self, purchase_id: str) -> dict[str, Any]:
        """What the chain holds of a disputed deal and the verdict it leads to (the arbiter judges
        nothing else)."""
        try:
            verdict = await (await self._ready()).verdict(_purchase_id(purchase_id))
        except PurchaseError as exc:
            return {"purchase_id": purchase_id, "answered": False, "summary": str(exc)}
        to = "seller" if verdict.to_seller else "buyer"
        return {
            "purchase_id": purchase_id,
            "answered": True,
            "to": to,
            "why": verdict.why,
            "summary": f"answered on chain; the arbiter's verdict: to the {to} ({verdict.why})",
        }

    async def arbitrate(self, purchase_id: str) -> dict[str, Any]:
        """Judge an answered dispute from the chain and send the decision (this node is the arbiter)."""
        verdict = await (await self._ready()).arbitrate(_purchase_id(purchase_id))
        return {
            "purchase_id": verdict.terms.purchase_id.hex(),
            "to": "seller" if verdict.to_seller else "buyer",
            "why": verdict.why,
        }

    async def withdraw(self, usdc: str | None) -> dict[str, Any]:
        """Move what the escrow owes this node (all of it, or ``usdc``) into its wallet."""
        market = await self._ready()
        moved = await market.withdraw(None if usdc is None else parse_usdc(usdc))
        return {
            "withdrawn_micro_usdc": moved,
            "balance_micro_usdc": await market.chain.balance(self._wallet.address),
            "owed_micro_usdc": await market.owed(),
        }

    async def fund_wallet(self, usdc: str) -> dict[str, Any]:
        """Mint development USDC (and gas) to this node's wallet: development chains only."""
        market = await self._ready()
        amount = parse_usdc(usdc)
        try:
            await market.chain.fund(self._wallet.address, amount)
        except ChainUnreachable:
            raise
        except ChainError as exc:
            if market.chain.dev:
                raise InvalidValue(f"could not mint development USDC: {exc}") from None
            raise InvalidValue(
                f"`wallet fund` mints our development token, and this chain's token is not one ([chain] dev = "
                f"false): get USDC from whoever holds it (on a test network, its faucet) and send it to "
                f"{self._wallet.address}, with ether for gas"
            ) from None
        return {"address": self._wallet.address, "balance_micro_usdc": await market.chain.balance(self._wallet.address)}


def _spent(spending: dict[str, int]) -> str:
    spent = spending.get("agent_spent_today_micro_usdc")
    if spent is None:
        return ""
    return f"; the agent spent {format_usdc(spent)} of {format_usdc(spending['agent_daily_budget_micro_usdc'])} today"


def _purchase_id(text: str) -> bytes:
    try:
        purchase_id = bytes.fromhex(text)
    except ValueError:
        purchase_id = b""
    if len(purchase_id) != 32:
        raise InvalidValue(f"{text!r} is not a purchase id (64 hex digits, as `wallet` lists them)")
    return purchase_id


def market_sink(p2p: P2PPart, config: Config) -> MarketSink:
    """What the market's gossip consumers fill: the store, bounded by config, counted in the network
    part's ``ingested`` and ``evicted`` (one ``peers``/``status`` report for everything peers sent)."""
    cfg = config.p2p
    return MarketSink(
        store=p2p.store,
        level_of=p2p.level_of_key,
        standing_of=p2p.trust_standing_of,
        me_hex=p2p.ctx.identity.public_key.hex(),
        content_quota=PeerContentQuota(
            per_author_crystals=cfg.peer_content_per_author,
            per_author_bytes=cfg.peer_content_bytes_per_author,
            total_crystals=cfg.peer_content_total,
            total_bytes=cfg.peer_content_bytes_total,
        ),
        listings_bound=listings_bound(cfg.listings_per_seller, cfg.listings_total),
        bounties_bound=bounties_bound(cfg.bounties_per_author, cfg.bounties_total),
        ingested=p2p.ingested,
        evicted=p2p.evicted,
    )
