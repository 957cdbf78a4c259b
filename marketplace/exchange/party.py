"""What either side of a deal acts with: this node's keys, wallet, store, chain, its signed
messages and the clock (injected, so tests can move time)."""

from __future__ import annotations

from dataclasses import dataclass

from crypto.identity import Identity
from marketplace.chain import Account, Chain
from marketplace.exchange.messenger import Messenger
from memory.clock import Clock
from memory.storage.store import MemoryStore


@dataclass(frozen=True, slots=True)
class Party:
    identity: Identity
    wallet: Account
    store: MemoryStore
    chain: Chain
    messenger: Messenger
    clock: Clock
