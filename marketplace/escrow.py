"""The escrow contract's calls, on a chain client (``marketplace.chain``).

Who may send what (``contracts/Escrow.vy``):
- the buyer ``lock``s the price for its own purchase id, within the deadline bounds the escrow was
  deployed with, and may ``release`` it to the seller at once, or ``dispute`` a committed delivery
  within the dispute window;
- the seller ``commit``s its delivery (the ciphertext's hash and the key that opens it) before the
  deadline; after the dispute window anyone may ``claim`` it for the seller;
- released money is ``owed`` to the seller by the escrow until it ``withdraw``s it or locks its own
  purchases with it (``lock`` uses the credit first): one transfer for many sales;
- after the deadline with no delivery committed, anyone may ``refund`` the buyer;
- the arbiter ``resolve``s a dispute, to the seller or to the buyer.
"""

from __future__ import annotations

from typing import Any

from marketplace.chain import Chain
from marketplace.chain_types import DEAL_STATES, Account, DealStatus, DealTerms, EscrowRules, Receipt


def _terms(terms: DealTerms) -> tuple[Any, ...]:
    if terms.amount <= 0 or len(terms.nonce) != 32 or len(terms.content_hash) != 32:
        raise ValueError("deal terms need a positive amount, a 32-byte nonce and a 32-byte content hash")
    return terms.as_tuple()


class Escrow:
    def __init__(self, chain: Chain) -> None:
        self._chain = chain
        self._contract = chain.escrow_contract

    @property
    def address(self) -> str:
        return self._chain.escrow_address

    async def rules(self) -> EscrowRules:
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

    async def status(self, terms: DealTerms) -> DealStatus:
        """Where the deal with exactly these terms stands ("none" if there is no such deal: none
        locked, or locked on other terms, a nearer deadline say)."""

        def read() -> DealStatus:
            state, at = self._contract.functions.status(_terms(terms)).call()
            return DealStatus(DEAL_STATES.get(int(state), "unknown"), int(at))

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
            raise ValueError("withdraw a positive amount")
        return await self._chain.send(account, lambda: self._contract.functions.withdraw(amount))

    async def commit(self, seller: Account, terms: DealTerms, delivery_hash: bytes, key: bytes) -> Receipt:
        args = _terms(terms)
        return await self._chain.send(seller, lambda: self._contract.functions.commit(args, delivery_hash, key))

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

    async def committed_delivery(self, purchase_id: bytes) -> tuple[bytes, bytes] | None:
        """(delivery hash, key) the seller committed for ``purchase_id``, from its event; None if none."""

        def read() -> tuple[bytes, bytes] | None:
            events = self._contract.events.Committed().get_logs(
                from_block=0, argument_filters={"purchase_id": purchase_id}
            )
            if not events:
                return None
            args = events[-1]["args"]
            return bytes(args["delivery_hash"]), bytes(args["key"])

        return await self._chain.run(read)
