"""Chain time that cannot be stale, for the seller's "is there still time before the deadline?".

The latest block's timestamp is when the chain last mined, not now. A chain that mines only when a
transaction arrives (anvil without interval mining, a quiet test network) can leave it ten minutes
old; the next block, the one that would carry the seller's commitment, is stamped with the time it
is mined. A seller judging "time left" by the latest block hands a skill over off chain believing
it has ten more minutes than it has; its commitment then fails past the deadline and the buyer
refunds and keeps the skill (issue 49).

Two answers were open: never deliver before the commitment is mined in time (sound by
construction, but every sale then pays for a commitment of up to 32 KB, 0.9-1.3M gas, even when the
buyer would have released at once), or judge the deadline with a time no earlier than the block
that will carry the commitment. We take the second, as the latest of three readings:

- the latest block (a chain that mines every few seconds, as any public L2, is fresh here);
- the pending block, which anvil stamps with its clock now (warps included) and the embedded EVM
  with exactly the time its next block will carry;
- this node's own clock, for a node that answers neither freshly: a block producer stamps blocks
  with its wall clock (consensus refuses blocks from the future), so the next block is no earlier
  than our clock, less the skew the margins already hold (``offchain_margin_s``, 150 s).

This is an *upper* reading of now, used only where a late reading loses money: whether to hand a
skill over off chain, when a commitment is due, and from when a quote's deadline counts. Moves
that must come *after* a time (claim, refund) keep the latest block, a lower bound: a claim sent
when the latest block is past the window is valid in any later block.
"""

from __future__ import annotations

from typing import Any

from ground.clock import Clock
from marketplace.chain import Chain


async def deadline_now(chain: Chain, clock: Clock) -> int:
    """The latest of the latest block's, the pending block's and this node's time, in seconds:
    no earlier than the timestamp of a block mined now (see the module's notes)."""

    def read() -> tuple[int, int]:
        w3: Any = chain.w3
        latest = int(w3.eth.get_block("latest")["timestamp"])
        try:
            pending = int(w3.eth.get_block("pending")["timestamp"])
        except Exception:  # noqa: BLE001 - a node without a pending view: the other two readings stand
            pending = latest
        return latest, pending

    latest, pending = await chain.run(read)
    return max(latest, pending, clock() // 1000)
