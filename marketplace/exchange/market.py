"""One node's side of the marketplace: sells its listings and buys others'.

The buyer and the seller share this node's identity, wallet, chain, store and one replay guard
for every signed market message it receives; the clock is injected (tests move it).
"""

from __future__ import annotations

from crypto.identity import Identity
from ground.authority import Speaker
from ground.clock import Clock, wall_clock_ms
from marketplace.chain import Chain
from marketplace.chain_types import Account
from marketplace.errors import ChainError, InvalidValue, PurchaseError
from marketplace.escrow import Escrow
from marketplace.exchange.arbitration import Verdict, judge_on_chain
from marketplace.exchange.buyer import Buyer, PurchaseResult
from marketplace.exchange.messenger import Messenger
from marketplace.exchange.party import DeadlineBounds, Party, Standing, no_standing
from marketplace.exchange.seller import Seller, SellerLimits
from marketplace.exchange.spending import SpendLimits
from marketplace.pricing import format_usdc
from marketplace.public_chain.log_cursor import advance, cursor, window
from memory.intake.store import IntakeStore
from p2p.host import P2PHost

ESCROW_WINDOW_S = 600


#: The arbiter's cursor over the escrow's Answered events (``chain_cursors``).
ARBITER_READER = "arbiter.answered"


class Market:
    def __init__(
        self,
        identity: Identity,
        wallet: Account,
        store: IntakeStore,
        chain: Chain,
        host: P2PHost,
        *,
        escrow_window_s: int = ESCROW_WINDOW_S,
        payment: str = "escrow",
        limits: SellerLimits | None = None,
        spend_limits: SpendLimits | None = None,
        clock: Clock = wall_clock_ms,
        bounds: DeadlineBounds | None = None,
        round_interval_s: float = 30.0,
        standing: Standing = no_standing,
        buyer_class: type[Buyer] = Buyer,
        seller_class: type[Seller] = Seller,
    ) -> None:
        """The seller side answers on ``protocol.PROTOCOL``: register ``answer`` with the host before it
        starts. ``buyer_class``/``seller_class``: a test's named fake of one side; the node uses the real ones."""
        if payment not in ("escrow", "direct"):
            raise InvalidValue(f"payment is 'escrow' or 'direct', not {payment!r}")
        self._wallet = wallet
        self._chain = chain
        self._escrow = Escrow(chain)  # one client: the escrow's rules are read once
        bounds = bounds or DeadlineBounds()
        if not bounds.min_s <= escrow_window_s <= bounds.max_s:
            raise InvalidValue(f"the escrow window ({escrow_window_s} s) lies outside the deadline bounds {bounds}")
        party = Party(identity, wallet, store, chain, Messenger(identity, host, clock), clock, bounds, standing)
        self._buyer = buyer_class(party, payment=payment, spend_limits=spend_limits)
        self._seller = seller_class(
            party, escrow_window_s=escrow_window_s, limits=limits or SellerLimits(), round_interval_s=round_interval_s,
        )  # fmt: skip
        self._store = store

    @property
    def wallet(self) -> Account:
        return self._wallet

    @property
    def chain(self) -> Chain:
        return self._chain

    async def buy(
        self, seller_peer: str, seller_key: bytes, stable_skill_id: str, *, max_price: int | None = None,
        speaker: Speaker,
    ) -> PurchaseResult:  # fmt: skip
        """Buy for ``speaker`` (the node passes who asked; ``Buyer.buy`` says what each may spend)."""
        return await self._buyer.buy(seller_peer, seller_key, stable_skill_id, max_price=max_price, speaker=speaker)

    async def spending(self) -> dict[str, int]:
        """The purchase ceiling, and the agent's daily budget with what it spent in the last 24 hours."""
        return await self._buyer.spending.report()

    async def resume(self) -> list[PurchaseResult]:
        return await self._buyer.resume()

    async def settle_purchases(self) -> dict[str, int]:
        return await self._buyer.settle()

    async def settle_sales(self) -> dict[str, int]:
        return await self._seller.settle()

    async def owed(self) -> int:
        """Micro-USDC the escrow holds for this node: released sales not yet withdrawn or spent on
        purchases (a purchase locks out of it first)."""
        return await self._escrow.owed(self._wallet.address)

    async def withdraw(self, amount: int | None = None, *, at_least: int = 1) -> int:
        """Move ``amount`` (default: all) of what the escrow owes this node into its wallet, if that
        is at least ``at_least``; returns the micro-USDC moved (0: nothing was sent)."""
        escrow = self._escrow
        owed = await escrow.owed(self._wallet.address)
        if amount is not None and amount > owed:
            raise PurchaseError(f"the escrow owes this node {format_usdc(owed)}, less than {format_usdc(amount)}")
        amount = owed if amount is None else amount
        if amount <= 0 or amount < at_least:
            return 0
        await escrow.withdraw(self._wallet, amount)
        return amount

    async def dispute(self, purchase_id: bytes) -> PurchaseResult:
        return await self._buyer.dispute(purchase_id)

    def stuck(self) -> dict[str, str]:
        """Deals whose last settlement step failed, by purchase id (hex): why. They are retried each round."""
        both = {**self._buyer.stuck.reasons, **self._seller.stuck.reasons}
        return {pid.hex(): why for pid, why in both.items()}

    async def is_arbiter(self) -> bool:
        return (await self._escrow.rules()).arbiter.lower() == self._wallet.address.lower()

    async def verdict(self, purchase_id: bytes) -> Verdict:
        """What the arbiter's judgement of an answered dispute is, from the chain (anyone may read it)."""
        return await judge_on_chain(self._escrow, purchase_id)

    async def arbitrate(self, purchase_id: bytes) -> Verdict:
        """Judge an answered dispute from the chain and send the decision, as the escrow's arbiter."""
        if not await self.is_arbiter():
            raise PurchaseError("this node's wallet is not the escrow's arbiter")
        verdict = await self.verdict(purchase_id)
        await self._escrow.resolve(self._wallet, verdict.terms, to_seller=verdict.to_seller)
        return verdict

    async def arbitrate_answered(self) -> list[Verdict]:
        """As the escrow's arbiter: judge and resolve every dispute answered since the last round
        (nothing when this node is not the arbiter). A deal already resolved is skipped."""
        if not await self.is_arbiter():
            return []
        escrow, chain = self._escrow, self._chain
        # Read on from the persisted cursor, acting only on confirmed blocks (``public_chain.log_cursor``).
        chain_id, head = await chain.chain_id(), await chain.run(lambda: int(chain.w3.eth.block_number))
        at = await cursor(self._store, ARBITER_READER, chain_id, escrow.address)
        if not at and chain.log_lookback:  # a first start on a public chain: older answers are past arbitration
            at = max(0, head - chain.log_lookback)
        span = window(at, head, confirmations=chain.confirmations, reorg_blocks=chain.reorg_blocks)
        if span is None:
            return []
        answered, _ = await escrow.answered_since(span.start, to_block=span.end)
        decided = []
        for terms, _secret in answered:
            try:
                verdict = await self.verdict(terms.purchase_id)
                await escrow.resolve(self._wallet, verdict.terms, to_seller=verdict.to_seller)
            except (PurchaseError, ChainError):
                continue  # resolved already (or no longer awaiting the arbiter)
            decided.append(verdict)
        await advance(self._store, ARBITER_READER, chain_id, escrow.address, span.end + 1)
        return decided

    async def answer(self, peer: str, request: bytes) -> bytes:
        return await self._seller.answer(peer, request)
