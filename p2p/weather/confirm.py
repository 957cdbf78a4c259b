"""Learning an issuer's current sequence before obeying its weather (issue 48).

A weather is signed gossip from a management key (an issuer), renewed while it lasts under an
increasing sequence. A node that has not confirmed an issuer's sequence in this run (new, or just
restarted: its saved sequence may predate weathers issued while it was down) holds that issuer's
first weather: it forwards it (the validator accepted it), but does not obey it until it has asked
the issuer, if connected, and ``[p2p] weather_ask_peers`` other connected peers for the newest
signed weather they hold of it (``p2p.weather.ask``). Then it obeys the newest of the held one and
the answers: a signature cannot be forged, so a higher sequence is proof of a newer weather.

The attacker's moves, and what each gets:

- **Replay an old signed weather** (a storm's renewal after the storm was called off). Older than
  ``FIRST_WEATHER_WINDOW_MS`` (10 s) from now: refused by the validator, not forwarded. Within it: held,
  and it loses to the newer one any asked peer or the issuer holds.
- **Withhold the newest** (an attacker's node does not forward it). Gossip brings it by other paths,
  and the round asks the issuer and several peers; the attacker wins only if it is every peer asked
  and the issuer is not connected (an eclipse), and even then only with a weather issued in the
  last 10 s.
- **Answer the query with an old signed weather**, or with nothing. It cannot beat a newer answer:
  the newest sequence wins, whoever sent it. A forged or foreign answer is no answer.
- **Flood queries.** Answers per asker are rate-limited (``[p2p] weather_answers_per_peer_per_s``,
  burst 5; over it the stream is reset), answers are at most 4 KB and cost a map lookup, and the
  host bounds streams per peer. Rounds this node starts are bounded too: weather is admitted only
  from configured management keys, at most one held weather per key is kept (the newest), and one
  round runs at a time, each at most ``[p2p] weather_ask_timeout_s``.
- **Issuer offline, nobody answers in time.** The held weather is obeyed: it was issued in the
  last 10 s (the validator forwarded it), which is the rule a node without state followed before,
  and not obeying would leave a node alone with the issuer's gossip deaf to a real storm. Its
  sequence is then known and later weathers are checked against it.
- **Node restarts.** The applied sequences are saved and restored, so anything up to them stays
  refused; a restored sequence is not confirmed, so the first weather after a restart is held and
  asked about like a new node's.
- **The issuer's key rotates.** A new key is a new issuer with sequences of its own; the old key
  stays trusted as long as ``[trust] management_keys`` lists it, and its weather still obeys the
  newest-wins rule. Sequences are per key, never compared across keys.
"""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable, Iterable
from dataclasses import dataclass

from ground.events import get_logger
from p2p.weather import WeatherSequences
from p2p.weather.ask import Ask, Heard, Signed

log = get_logger("p2p.weather")


def newest(held: Signed, heard: Iterable[Heard]) -> Signed:
    """What to obey: the held weather, unless an answer holds a newer one of the same issuer (then the
    newest answered). Nobody answering leaves the held one."""
    best = held
    for answer in heard:
        if answer.newest is not None and answer.newest.weather.seq > best.weather.seq:
            best = answer.newest
    return best


@dataclass
class ConfirmCounts:
    held: int = 0  # weathers held until their issuer's sequence was learnt
    rounds: int = 0  # rounds of asking
    overtaken: int = 0  # held weathers that lost to a newer one an answer held


class Confirmer:
    """Holds first weathers per issuer and runs the rounds that decide what to obey."""

    def __init__(self, sequences: WeatherSequences, obey: Callable[[Signed], Awaitable[None]]) -> None:
        self._sequences = sequences
        self._obey = obey
        self._held: dict[bytes, Signed] = {}  # the newest held per issuer: one per management key at most
        self._wake = asyncio.Event()
        self.counts = ConfirmCounts()

    def hold(self, signed: Signed) -> None:
        """Hold ``signed`` until a round decides (a newer held one of the same issuer replaces it)."""
        issuer = signed.issuer
        kept = self._held.get(issuer)
        if kept is None or kept.weather.seq < signed.weather.seq:
            self._held[issuer] = signed
            self.counts.held += 1
        self._wake.set()

    async def run(self, ask: Ask) -> None:
        """Serve held weathers until cancelled: one round at a time, so a flood of them costs one
        round per issuer at a time."""
        while True:
            await self._wake.wait()
            self._wake.clear()
            await self.settle_held(ask)

    async def settle_held(self, ask: Ask) -> list[Signed]:
        """Settle every weather held now, and any held meanwhile; the weathers obeyed."""
        obeyed = []
        while self._held:
            _, held = self._held.popitem()
            try:
                obeyed.append(await self.settle(held, ask))
            except Exception:  # one failed round drops one held weather; the next renewal is held anew
                log.error("p2p.weather_confirm_failed", exc_info=True)
        return obeyed

    async def settle(self, held: Signed, ask: Ask) -> Signed:
        """Obey the newest of ``held`` and what the round learns; the weather obeyed."""
        issuer = held.issuer
        if self._sequences.confirmed(issuer):  # a round confirmed it while this one waited
            chosen = held
        else:
            self.counts.rounds += 1
            heard = await ask(issuer)
            chosen = newest(held, heard)
            if chosen is not held:
                self.counts.overtaken += 1
            log.info(
                "p2p.weather_confirmed",
                issuer=issuer.hex()[:16],
                held_seq=held.weather.seq,
                obeyed_seq=chosen.weather.seq,
                answers=len(heard),
                from_issuer=any(h.from_issuer for h in heard),
            )
        await self._obey(chosen)
        return chosen
