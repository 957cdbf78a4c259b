"""The escrow contract's calls, on a chain client (``marketplace.chain``).

Who may send what (``contracts/Escrow.vy``):
- the buyer ``lock``s the price for its own purchase id, within the deadline bounds the escrow was
  deployed with, and may ``release`` it to the seller at once, or ``dispute`` a committed delivery
  within the dispute window;
- the seller ``commit``s its delivery (the skill sealed to the buyer's node key) before the
  deadline; after the dispute window anyone may ``claim`` it for the seller;
- a disputed delivery: the seller ``answer``s with its one-time secret (which opens the sealed
  delivery for anyone) within the arbitration window from the dispute, or anyone may ``refund`` the
  buyer after it;
- released money is ``owed`` to the seller by the escrow until it ``withdraw``s it or locks its own
  purchases with it (``lock`` uses the credit first): one transfer for many sales;
- after the deadline with no delivery committed, anyone may ``refund`` the buyer;
- the arbiter ``resolve``s an answered dispute, to the seller or to the buyer; one it leaves
  undecided for the arbitration window from the answer can be claimed for the seller.
"""

from __future__ import annotations

from typing import Any

from marketplace.chain import GAS_LIMIT, Chain
from marketplace.chain_types import (
    DEAL_STATES,
    Account,
    Commitment,
    DealState,
    DealStatus,
    DealTerms,
    EscrowRules,
    Receipt,
)
from marketplace.deploy_policy import arbiter_refusal
from marketplace.errors import InvalidValue


def _terms(terms: DealTerms) -> tuple[Any, ...]:
    if terms.amount <= 0 or len(terms.nonce) != 32 or len(terms.content_hash) != 32:
        raise InvalidValue("deal terms need a positive amount, a 32-byte nonce and a 32-byte content hash")
    return terms.as_tuple()


class Escrow:
    def __init__(self, chain: Chain) -> None:
        self._chain = chain
        self._contract = chain.escrow_contract
        self._rules: EscrowRules | None = None  # fixed at deployment: read once

    @property
    def address(self) -> str:
        return self._chain.escrow_address

    async def rules(self) -> EscrowRules:
        if self._rules is None:
            self._rules = await self._read_rules()
        return self._rules

    async def _read_rules(self) -> EscrowRules:
        functions = self._contract.functions

        def read() -> EscrowRules:
            return EscrowRules(
                arbiter=str(functions.arbiter().call()),
                min_delivery_window_s=int(functions.min_delivery_window().call()),
                max_lock_s=int(functions.max_lock().call()),
                dispute_window_s=int(functions.dispute_window().call()),
                arbitration_window_s=int(functions.arbitration_window().call()),
            )

        return await self._chain.run(read)

    async def arbiter_refusal(self) -> str | None:
        """Why this escrow's arbiter cannot be trusted (an unlocked or publicly known development
        account, whose key anyone may hold), or None. The embedded chain, which lives in this
        process alone, is exempt."""
        if getattr(self._chain.w3.provider, "ethereum_tester", None) is not None:
            return None
        arbiter = (await self.rules()).arbiter
        accounts = await self._chain.run(lambda: [str(a) for a in self._chain.w3.eth.accounts])
        return arbiter_refusal(arbiter, accounts)

    async def status(self, terms: DealTerms, *, confirmed: bool = False) -> DealStatus:
        """Where the deal with exactly these terms stands ("none" if there is no such deal: none
        locked, or locked on other terms, a nearer deadline say). ``confirmed``: as of the block
        ``Chain.confirmations`` under the head (what a reorg no longer undoes)."""

        def read() -> DealStatus:
            from web3.exceptions import BadFunctionCallOutput

            block: int | str = "latest"
            if confirmed and self._chain.confirmations:
                block = max(0, int(self._chain.w3.eth.block_number) - self._chain.confirmations)
            try:
                state, at = self._contract.functions.status(_terms(terms)).call(block_identifier=block)
            except BadFunctionCallOutput:  # no escrow at that block yet (a young chain): no deal then
                return DealStatus(DealState.NONE, 0)
            return DealStatus(DEAL_STATES.get(int(state), DealState.UNKNOWN), int(at))

        return await self._chain.run(read)

    async def lock(
        self, account: Account, terms: DealTerms, *, permit_value: int | None = None, permit_nonce: int | None = None
    ) -> Receipt:
        """Lock ``terms.amount`` in one transaction: out of what the escrow owes this buyer if that
        covers it (no token transfer), else from its wallet. Without an allowance for it, an EIP-2612
        permit signed here stands in for an approve: for ``permit_value`` (at least the amount) so that
        later locks need none (only this buyer's own locks can draw on it)."""
        args = _terms(terms)
        if await self.owed(account.address) >= terms.amount:
            return await self._chain.send(account, lambda: self._contract.functions.lock_from_credit(args))
        allowance = await self._chain.allowance(account.address, self.address)
        if allowance >= terms.amount:
            return await self._chain.send(account, lambda: self._contract.functions.lock(args))
        value = max(permit_value or 0, terms.amount)
        v, r, s = await self._chain.sign_permit(account, self.address, value, terms.deadline, permit_nonce)
        return await self._chain.send(  # the permit expires with the lock's deadline
            account, lambda: self._contract.functions.lock_with_permit(args, value, terms.deadline, v, r, s)
        )

    async def owed(self, address: str) -> int:
        """Micro-USDC the escrow owes ``address``: its released sales not yet withdrawn or spent."""
        return int(await self._chain.run(lambda: self._contract.functions.owed(address).call()))

    async def withdraw(self, account: Account, amount: int) -> Receipt:
        """Pay ``amount`` of what the escrow owes ``account`` into its wallet."""
        if amount <= 0:
            raise InvalidValue("withdraw a positive amount")
        return await self._chain.send(account, lambda: self._contract.functions.withdraw(amount))

    async def commit(self, seller: Account, terms: DealTerms, commitment: Commitment) -> Receipt:
        args = _terms(terms)
        c = commitment
        # Calldata and the log cost about 24 gas a byte of sealed skill, plus copying it into memory.
        gas = GAS_LIMIT + 64 * len(c.sealed)
        return await self._chain.send(
            seller, lambda: self._contract.functions.commit(args, c.ephemeral, c.salt, c.recipient, c.sealed), gas=gas
        )

    async def answer(self, seller: Account, terms: DealTerms, secret: bytes) -> Receipt:
        args = _terms(terms)
        return await self._chain.send(seller, lambda: self._contract.functions.answer(args, secret))

    async def release(self, buyer: Account, terms: DealTerms) -> Receipt:
        args = _terms(terms)
        return await self._chain.send(buyer, lambda: self._contract.functions.release(args))

    async def claim(self, sender: Account, terms: DealTerms) -> Receipt:
        args = _terms(terms)
        return await self._chain.send(sender, lambda: self._contract.functions.claim(args))

    async def refund(self, sender: Account, terms: DealTerms) -> Receipt:
        args = _terms(terms)
        return await self._chain.send(sender, lambda: self._contract.functions.refund(args))

    async def dispute(self, buyer: Account, terms: DealTerms) -> Receipt:
        args = _terms(terms)
        return await self._chain.send(buyer, lambda: self._contract.functions.dispute(args))

    async def resolve(self, arbiter: Account, terms: DealTerms, *, to_seller: bool) -> Receipt:
        args = _terms(terms)
        return await self._chain.send(arbiter, lambda: self._contract.functions.resolve(args, to_seller))

    async def commitment(self, purchase_id: bytes) -> Commitment | None:
        """The delivery the seller committed for ``purchase_id`` (from its event); None if none."""

        def read() -> Commitment | None:
            events = self._deal_logs(self._contract.events.Committed(), purchase_id)
            if not events:
                return None
            args = events[-1]["args"]  # the escrow takes one commitment per deal
            return Commitment(bytes(args["ephemeral"]), bytes(args["salt"]), bytes(args["recipient"]),
                              bytes(args["sealed"]))  # fmt: skip

        return await self._chain.run(read)

    async def answer_of(self, purchase_id: bytes) -> tuple[DealTerms, bytes] | None:
        """The terms of a disputed deal and the one-time secret its seller published in answer; None
        if the seller did not answer."""

        def read() -> tuple[DealTerms, bytes] | None:
            events = self._deal_logs(self._contract.events.Answered(), purchase_id)
            return _answer(events[-1]["args"]) if events else None

        return await self._chain.run(read)

    def _deal_logs(self, event: Any, purchase_id: bytes) -> list[Any]:
        """One deal's ``event`` logs (chain thread). A dev chain is asked once, from block 0; a public
        one (``Chain.log_chunk_blocks``) newest first, a chunk a query, ``Chain.log_lookback`` back
        at most: its RPC refuses a query from block 0, and the escrow logs each event once a deal."""
        only = {"purchase_id": purchase_id}
        chain = self._chain
        if not chain.log_chunk_blocks:
            return list(event.get_logs(from_block=0, argument_filters=only))
        end = int(chain.w3.eth.block_number)
        floor = max(0, end - chain.log_lookback)
        while end >= floor:
            start = max(floor, end - chain.log_chunk_blocks + 1)
            if found := list(event.get_logs(from_block=start, to_block=end, argument_filters=only)):
                return found
            end = start - 1
        return []

    async def answered_since(
        self, from_block: int, *, to_block: int | None = None
    ) -> tuple[list[tuple[DealTerms, bytes]], int]:
        """Disputes the sellers answered in blocks ``from_block`` to ``to_block`` (default: the
        latest): (terms, secret) each, and the block to read from next time."""

        def read() -> tuple[list[tuple[DealTerms, bytes]], int]:
            latest = int(self._chain.w3.eth.block_number) if to_block is None else to_block
            if from_block > latest:
                return [], from_block
            step = self._chain.log_chunk_blocks or latest - from_block + 1
            events = [
                event
                for start in range(from_block, latest + 1, step)
                for event in self._contract.events.Answered().get_logs(
                    from_block=start, to_block=min(latest, start + step - 1)
                )
            ]
            return [_answer(event["args"]) for event in events], latest + 1

        return await self._chain.run(read)


def _answer(args: Any) -> tuple[DealTerms, bytes]:
    terms = DealTerms(str(args["buyer"]), bytes(args["nonce"]), str(args["seller"]), int(args["amount"]),
                      bytes(args["content_hash"]), int(args["deadline"]))  # fmt: skip
    return terms, bytes(args["secret"])
