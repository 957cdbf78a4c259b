"""The services the market commands call (``node.commands.market``), one method a command: buying
a listed skill, the wallet and its deals, disputes and arbitration, withdrawing and dev funds.

Each asks the connection for the market (``MarketUnavailable``, 503, when there is no chain) and
raises the market's own typed errors unchanged.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from ground.authority import Speaker
from marketplace.desk.connection import MarketConnection
from marketplace.desk.deals import recent_deals
from marketplace.desk.lookup import find_listing, seller_addrs, seller_peer_id
from marketplace.errors import ChainError, ChainUnreachable, InvalidValue, PurchaseError
from marketplace.exchange.ledger import ledger
from marketplace.pricing import format_usdc, parse_usdc
from memory.intake.store import IntakeStore

EMBEDDED_CANNOT_TRADE = (
    "this node settles on its embedded development chain, which lives inside this process: "
    "no seller can see a payment made there. To buy from other nodes, point every node at the same "
    "chain ([chain] url, token_address, escrow_address; README: 'Buying and selling between nodes')"
)


class MarketDesk:
    """What the market commands run on: the connection's market, over the running store (``store``
    raises while the memory part is not running)."""

    def __init__(self, connection: MarketConnection, store: Callable[[], IntakeStore]) -> None:
        self._connection = connection
        self._inputs = connection.inputs
        self._store = store
        limits = connection.inputs.market
        #: What ``status`` shows of the agent's daily budget, read anew by ``refresh``.
        self.spending: dict[str, int] = {
            "ceiling_micro_usdc": limits.max_purchase_micro_usdc,
            "agent_daily_budget_micro_usdc": limits.agent_daily_budget_micro_usdc,
        }

    async def refresh(self) -> None:
        """Read the agent's spending anew (``status`` must not wait on the database)."""
        if self._connection.market is not None:
            self.spending = await self._connection.market.spending()

    async def buy_listing(self, listing: str, max_price: str | None, speaker: Speaker) -> dict[str, Any]:
        """Buy a listed skill for ``speaker``: ``listing`` is a stable skill id, or ``<seller peer id>/<skill id>``.
        What it may cost is the buyer's to check (``marketplace.exchange.spending``)."""
        market = await self._connection.ready()
        if not self._inputs.chain.url:
            raise InvalidValue(EMBEDDED_CANNOT_TRADE)
        store = self._store()
        row = await find_listing(store, listing, me_hex=self._inputs.identity.public_key.hex())
        host = self._inputs.host()
        if host is not None and (addrs := await seller_addrs(store, row)):
            await host.remember_addrs(seller_peer_id(row), addrs)
        try:
            result = await market.buy(
                seller_peer_id(row),
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
            "seller_peer_id": seller_peer_id(row),
            "detail": result.detail,
        }

    async def wallet_report(self) -> dict[str, Any]:
        """The wallet, what the escrow owes it, the earnings ledger and the latest deals."""
        connection, address, store = self._connection, self._inputs.wallet.address, self._store()
        balance = owed = None
        await connection.start_embedded()  # the person asked for the balance: the embedded chain holds it
        market = connection.market
        if market is not None:
            try:
                balance = await market.chain.balance(address)
                owed = await market.owed()
            except ChainError as exc:
                connection.error = str(exc)
        stuck = market.stuck() if market is not None else {}
        purchases, sales = await recent_deals(store, 20, stuck)
        return {
            "address": address,
            "chain": self._inputs.chain.url or "embedded",
            "balance_micro_usdc": balance,
            "owed_micro_usdc": owed,  # paid sales held by the escrow until withdrawn
            "chain_error": connection.error or None,
            "ledger": (await ledger(store, self._inputs.identity.public_key.hex())).as_dict(),
            "recent_purchases": purchases,
            "recent_sales": sales,
            "stuck": stuck,
            "spending": await market.spending() if market is not None else dict(self.spending),
        }

    async def deals_report(self, limit: int) -> dict[str, Any]:
        """This node's latest purchases and sales, with what comes next for each, stuck ones first."""
        market = self._connection.market
        purchases, sales = await recent_deals(self._store(), limit, market.stuck() if market is not None else {})
        stuck = [d for d in purchases + sales if d["stuck"]]
        return {"purchases": purchases, "sales": sales, "stuck": len(stuck)}

    async def dispute(self, purchase_id: str) -> dict[str, Any]:
        """Contest the seller's committed delivery of one of this node's purchases."""
        result = await (await self._connection.ready()).dispute(_purchase_id(purchase_id))
        return {"purchase_id": result.purchase_id, "state": result.state, "detail": result.detail}

    async def evidence(self, purchase_id: str) -> dict[str, Any]:
        """What the chain holds of a disputed deal and the verdict it leads to (the arbiter judges
        nothing else)."""
        try:
            verdict = await (await self._connection.ready()).verdict(_purchase_id(purchase_id))
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
        verdict = await (await self._connection.ready()).arbitrate(_purchase_id(purchase_id))
        return {
            "purchase_id": verdict.terms.purchase_id.hex(),
            "to": "seller" if verdict.to_seller else "buyer",
            "why": verdict.why,
        }

    async def withdraw(self, usdc: str | None) -> dict[str, Any]:
        """Move what the escrow owes this node (all of it, or ``usdc``) into its wallet."""
        market = await self._connection.ready()
        moved = await market.withdraw(None if usdc is None else parse_usdc(usdc))
        return {
            "withdrawn_micro_usdc": moved,
            "balance_micro_usdc": await market.chain.balance(self._inputs.wallet.address),
            "owed_micro_usdc": await market.owed(),
        }

    async def fund_wallet(self, usdc: str) -> dict[str, Any]:
        """Mint development USDC (and gas) to this node's wallet: development chains only."""
        market, address = await self._connection.ready(), self._inputs.wallet.address
        amount = parse_usdc(usdc)
        try:
            await market.chain.fund(address, amount)
        except ChainUnreachable:
            raise
        except ChainError as exc:
            if market.chain.dev:
                raise InvalidValue(f"could not mint development USDC: {exc}") from None
            raise InvalidValue(
                f"`wallet fund` mints our development token, and this chain's token is not one ([chain] dev = "
                f"false): get USDC from whoever holds it (on a test network, its faucet) and send it to "
                f"{address}, with ether for gas"
            ) from None
        return {"address": address, "balance_micro_usdc": await market.chain.balance(address)}

    def summary(self) -> str:
        """The agent's spending today, for ``status``'s one line ("" before the first read)."""
        spent = self.spending.get("agent_spent_today_micro_usdc")
        if spent is None:
            return ""
        budget = self.spending["agent_daily_budget_micro_usdc"]
        return f"; the agent spent {format_usdc(spent)} of {format_usdc(budget)} today"


def _purchase_id(text: str) -> bytes:
    try:
        purchase_id = bytes.fromhex(text)
    except ValueError:
        purchase_id = b""
    if len(purchase_id) != 32:
        raise InvalidValue(f"{text!r} is not a purchase id (64 hex digits, as `wallet` lists them)")
    return purchase_id
