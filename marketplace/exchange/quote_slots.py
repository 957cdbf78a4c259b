"""Which quote slot a buyer's request may take, and whether one is free (pure, but for the balance
read that ``FundsCache`` bounds).

A quote is a row and a chain call, and node keys cost nothing, so a seller keeps its open quotes in
three pools, each bounded by ``[marketplace]`` keys (``SellerLimits``):

- **standing**: buyers trusted here, or who paid this node before, as their node key (the request is
  signed by it) or their wallet, *proven* by the wallet's signature (``marketplace.exchange.wallet_proof``),
  never merely named: a request naming a past buyer's address without that signature is a stranger;
- **funded strangers** (``max_open_quotes_strangers``): new buyers whose proven wallet holds the
  price now (read from the chain; a balance that covered it is kept ``quote_funds_cache_s``), one open quote per wallet
  (``max_open_quotes_per_stranger_wallet``). To take these slots a flood needs as many wallets
  each holding the price as there are slots, not fresh keys: 40 slots at 1 USDC ask 40 USDC held
  in 40 wallets, while a genuine new buyer holds the price anyway, since it is about to pay it.
  Money moved between wallets to pass the check again costs gas per move and waits out the cache.
  (A fee per quote was the other choice: it charges every honest buyer, needs a payment before
  the quote that says what to pay, and a flood with money pays it gladly.)
- **unproven strangers** (``max_open_quotes_unproven``): requests without a wallet proof, as
  an earlier release sends. A flood of fresh keys fills only this small pool.

A proven wallet that does not hold the price is refused at once: it could not pay the quote.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from enum import StrEnum

from ground.clock import Clock


class Slot(StrEnum):
    STANDING = "standing"
    FUNDED = "funded"
    UNPROVEN = "unproven"


@dataclass(frozen=True, slots=True)
class OpenQuotes:
    """Quotes signed recently and not yet paid, counted for one request."""

    total: int  # to everyone
    yours: int  # to the node key asking now
    strangers: int  # to funded strangers (proven wallets without standing)
    unproven: int  # to strangers without a wallet proof
    wallet: int  # to strangers naming the wallet of the request


def slot_of(*, standing: bool, proven: bool) -> Slot:
    return Slot.STANDING if standing else Slot.FUNDED if proven else Slot.UNPROVEN


def quote_refusal(
    slot: Slot,
    open_quotes: OpenQuotes,
    *,
    max_open_quotes: int,
    per_buyer: int,
    strangers: int,
    per_stranger_wallet: int,
    unproven: int,
) -> str | None:
    """Why a request for ``slot`` gets no quote now, or None."""
    if open_quotes.yours >= per_buyer:
        return f"you have {open_quotes.yours} open quotes here; pay one or let them expire (2 minutes)"
    if open_quotes.total >= max_open_quotes:
        return "this seller has too many open quotes; try again in a few minutes"
    if slot is Slot.FUNDED:
        if open_quotes.wallet >= per_stranger_wallet:
            return f"your wallet has {open_quotes.wallet} open quotes here; pay one or let them expire (2 minutes)"
        if open_quotes.strangers >= strangers:
            return (
                "this seller has too many open quotes to buyers new to it; try again in a few minutes "
                "(buyers it knows are still served)"
            )
    if slot is Slot.UNPROVEN and open_quotes.unproven >= unproven:
        return (
            "this seller has too many open quotes to buyers new to it that did not prove their wallet; "
            "a buyer whose wallet signs its request and holds the price is still served"
        )
    return None


class FundsCache:
    """Wallet balances read from the chain, a balance that covered a price kept ``ttl_ms`` (at most
    ``max_wallets`` of them): a flood naming one funded wallet costs one chain read per ``ttl_ms``.
    A balance short of the price is read again next time, so a buyer that was refused and then
    funded its wallet is served at once; those reads are bounded by each peer's request rate."""

    def __init__(self, ttl_ms: int, clock: Clock, max_wallets: int = 10_000) -> None:
        self._ttl_ms = ttl_ms
        self._now_ms = clock
        self._max = max_wallets
        self._seen: dict[str, tuple[int, int]] = {}  # address: (read at, balance)

    async def balance(self, address: str, price: int, read: Callable[[str], Awaitable[int]]) -> int:
        """The wallet's balance: kept, when it covered ``price`` within ``ttl_ms``; else read now."""
        now = self._now_ms()
        key = address.lower()
        kept = self._seen.get(key)
        if kept is not None and now - kept[0] < self._ttl_ms and kept[1] >= price:
            return kept[1]
        value = await read(address)
        if len(self._seen) >= self._max:
            self._seen = {k: v for k, v in self._seen.items() if now - v[0] < self._ttl_ms}
            if len(self._seen) >= self._max:
                self._seen.pop(next(iter(self._seen)))
        self._seen[key] = (now, value)
        return value
