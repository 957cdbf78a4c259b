"""Finding the network from one address (issue 31): peer exchange, and a peer store kept across restarts.

A node configured with one bootstrap address asks a peer it is connected to for a sample of that
peer's own connections (``/bitterbot/peers/1``) and dials the ones it does not know, until it holds
``[p2p] target_peers`` connections. Whom it learned of, and whom it was connected to, is kept in the
peer store (``[p2p] peers_file``) and dialled first at the next start, so a restart needs no
bootstrap peer that is up. mDNS stays for LANs.

Chosen over the DHT and rendezvous that py-libp2p also ships: a fleet of small machines holds a few
dozen peers, which one exchange with one neighbour covers, and this costs one bounded request every
``discover_s`` while below the target and nothing after. What a remote key can make this node
do is bounded: an answer holds at most 32 peers of at most 8 addresses (32 KB in all; more is
refused whole); a peer is answered at most once per 10 s; the store keeps at most
``peer_store_size`` peers, the least recently seen going first; and a learned address is only
dialled, never trusted: the noise handshake proves the peer id before anything is exchanged.

What others tell is heard, not known (issue 48). An address on a network this node is not on
(private, link-local, loopback, multicast: ``p2p.network.scope``) is dropped as it arrives; what is
left is dialled this run, at most ``peers_per_source`` peers of it per neighbour that told it, so
one neighbour cannot crowd out the rest. Only an address a handshake proved is kept for the next
start: one this node dialled and found the peer there, or one on the IP a connected peer's
connection comes from (the peer proved its key from that IP; a port there reaches that machine only).
"""

from __future__ import annotations

import asyncio
import json
import os
import random
import time
from collections.abc import Callable, Coroutine, Iterable
from dataclasses import dataclass
from pathlib import Path
from typing import Any, TypeVar

from ground import failpoints, json_text
from ground.events import get_logger
from p2p.errors import InvalidValue, ProtocolRefused
from p2p.network.scope import LocalNetworks, dialable_from, host_ip, interface_networks
from p2p.network.settings import DiscoverySettings

T = TypeVar("T")
log = get_logger("p2p.discovery")
PROTOCOL = "/bitterbot/peers/1"
MAX_SAMPLE = 32
MAX_ADDRS = 8
MAX_ADDR_CHARS = 256
MAX_ANSWER_BYTES = 32_768
ASK_INTERVAL_MS = 10_000  # a peer is answered at most this often
ASKS_PER_ROUND = 3  # neighbours asked in a round below the target number of connections
UNDIALABLE = ("/ip4/0.0.0.0/", "/ip6/::/")


@dataclass(frozen=True, slots=True)
class KnownPeer:
    peer_id: str
    addrs: tuple[str, ...]
    last_seen_ms: int


def encode(peers: Iterable[KnownPeer]) -> bytes:
    """A sample as the wire carries it: at most ``MAX_SAMPLE`` peers, each with its dialable addresses."""
    rows = []
    for peer in list(peers)[:MAX_SAMPLE]:
        # one without a dialable address (behind a NAT) is named too: the asker learns that this
        # node is connected to it, so may relay to it
        rows.append({"peer_id": peer.peer_id, "addrs": list(_dialable_parts(peer.addrs))[:MAX_ADDRS]})
    return json.dumps({"peers": rows}, separators=(",", ":")).encode()


def decode(raw: bytes, now_ms: int) -> list[KnownPeer]:
    """A peer's sample, checked whole: ``InvalidValue`` for anything past the bounds or malformed."""
    if len(raw) > MAX_ANSWER_BYTES:
        raise InvalidValue(f"a peer sample of {len(raw):,} bytes is over {MAX_ANSWER_BYTES:,}")
    try:
        doc = json_text.loads(raw)
    except (ValueError, UnicodeDecodeError):
        raise InvalidValue("a peer sample that is not JSON") from None
    rows = doc.get("peers") if isinstance(doc, dict) else None
    if not isinstance(rows, list) or len(rows) > MAX_SAMPLE:
        raise InvalidValue("a peer sample must be a list of at most 32 peers")
    out = []
    for row in rows:
        peer_id, addrs = (row.get("peer_id"), row.get("addrs")) if isinstance(row, dict) else (None, None)
        if not isinstance(peer_id, str) or not 10 <= len(peer_id) <= 128 or not isinstance(addrs, list):
            raise InvalidValue("a peer in the sample has no peer id or no address list")
        if len(addrs) > MAX_ADDRS or not all(
            isinstance(a, str) and a.startswith("/") and len(a) <= MAX_ADDR_CHARS for a in addrs
        ):
            raise InvalidValue(f"a peer in the sample has more than {MAX_ADDRS} addresses or one malformed")
        out.append(KnownPeer(peer_id, _dialable_parts(addrs), now_ms))
    return out


class PeerStore:
    """Peers known by id with their addresses and when they were last seen, bounded, kept in a file:
    those at an address a handshake proved (``learn``), kept across restarts; and those only heard of
    from a neighbour (``hear``), dialled this run and never saved, at most ``per_source`` per neighbour."""

    def __init__(self, path: Path | None, size: int, per_source: int = 64) -> None:
        self._path = path
        self._size = size
        self._per_source = per_source
        self._peers: dict[str, KnownPeer] = {}
        self._heard: dict[str, tuple[str, KnownPeer]] = {}  # peer id -> (who told, what it told)

    def __len__(self) -> int:
        return len(self._peers) + len(self._heard)

    def heard_from(self, source: str) -> int:
        return sum(1 for told_by, _ in self._heard.values() if told_by == source)

    def load(self) -> None:
        """What the last run kept; a missing or damaged file is an empty store (logged), never a stop."""
        if self._path is None or not self._path.exists():
            return
        try:
            rows = json.loads(self._path.read_text())["peers"]
            peers = [KnownPeer(r["peer_id"], tuple(r["addrs"]), int(r["last_seen_ms"])) for r in rows]
        except (OSError, ValueError, KeyError, TypeError) as exc:
            log.warning("p2p.peer_store_unreadable", path=str(self._path), error=repr(exc))
            return
        self.learn(peers)

    def save(self) -> None:
        if self._path is None:
            return
        rows = [
            {"peer_id": p.peer_id, "addrs": list(p.addrs), "last_seen_ms": p.last_seen_ms} for p in self._peers.values()
        ]
        self._path.parent.mkdir(parents=True, exist_ok=True)
        part = self._path.with_suffix(".tmp")
        part.write_text(json.dumps({"peers": rows}))
        os.replace(part, self._path)  # a crash mid-write leaves the last whole file

    def learn(self, peers: Iterable[KnownPeer]) -> None:
        for peer in peers:
            if not peer.addrs:
                continue
            known = self._peers.get(peer.peer_id)
            if known is None or known.last_seen_ms <= peer.last_seen_ms:
                self._peers[peer.peer_id] = peer
            self._heard.pop(peer.peer_id, None)
        if len(self._peers) > self._size:  # the least recently seen go first
            keep = sorted(self._peers.values(), key=lambda p: p.last_seen_ms, reverse=True)[: self._size]
            self._peers = {p.peer_id: p for p in keep}

    def hear(self, source: str, peers: Iterable[KnownPeer]) -> None:
        """Peers ``source`` told of (addresses already in scope): dialled, not kept across a restart. A
        source holds at most ``per_source`` of them, its earliest told forgotten first, and all sources
        together at most the store's size."""
        for peer in peers:
            if not peer.addrs or peer.peer_id in self._peers:
                continue
            self._heard.pop(peer.peer_id, None)
            self._heard[peer.peer_id] = (source, peer)
            told = [pid for pid, (by, _) in self._heard.items() if by == source]
            for pid in told[: max(0, len(told) - self._per_source)]:
                del self._heard[pid]
        while len(self._heard) > self._size:
            del self._heard[next(iter(self._heard))]

    def candidates(self, exclude: set[str], limit: int) -> list[KnownPeer]:
        """Known peers, then heard of ones, not in ``exclude``, the most recently seen first."""
        known = [p for p in self._peers.values() if p.peer_id not in exclude]
        heard = [p for _, p in self._heard.values() if p.peer_id not in exclude]
        by_recency = sorted(known, key=lambda p: p.last_seen_ms, reverse=True)
        return [*by_recency, *sorted(heard, key=lambda p: p.last_seen_ms, reverse=True)][:limit]


class AskLimiter:
    """Each peer is answered at most once per ``ASK_INTERVAL_MS``; at most ``size`` askers are
    remembered (the oldest half forgotten past it), so many fresh keys cost bounded memory."""

    def __init__(self, size: int) -> None:
        self._size = size
        self._last: dict[str, int] = {}

    def allow(self, asker: str, now_ms: int) -> bool:
        if now_ms - self._last.get(asker, now_ms - ASK_INTERVAL_MS) < ASK_INTERVAL_MS:
            return False
        if len(self._last) >= self._size:
            for peer, _ in sorted(self._last.items(), key=lambda item: item[1])[: len(self._last) // 2]:
                del self._last[peer]
        self._last[asker] = now_ms
        return True


class PeerDiscovery:
    """The exchange and the store on a running ``P2PHost`` (the asyncio side)."""

    def __init__(
        self,
        host: Any,
        settings: DiscoverySettings,
        store: PeerStore,
        *,
        me: str,
        now_ms: Callable[[], int] = lambda: int(time.time() * 1000),
        rng: random.Random | None = None,
        interfaces: Callable[[], list[tuple[str, str]]] = interface_networks,
        dial_timeout_s: float = 10.0,
    ) -> None:
        self._host = host
        self._dial_timeout_s = dial_timeout_s
        self.settings = settings
        self.store = store
        self._me = me
        self._now_ms = now_ms
        self._rng = rng or random.Random()  # noqa: S311 - which neighbour to ask: no secret in it
        self._limiter = AskLimiter(4 * settings.peer_store_size)
        self._interfaces = interfaces
        self.learned = 0  # peers first heard of through an exchange, since start
        self.dialled = 0  # connections this loop made

    async def answer(self, asker: str, _request: bytes) -> bytes:
        """A sample of this node's connections for ``asker`` (not itself, nor the asker)."""
        now = self._now_ms()
        if not self._limiter.allow(asker, now):
            return encode([])
        connected = [s for s in await self._host.peers() if s.banned_until_ms is None and s.peer_id != asker]
        self._rng.shuffle(connected)
        return encode(KnownPeer(s.peer_id, s.addrs, now) for s in connected[:MAX_SAMPLE])

    async def run(self) -> None:
        """Dial what the store knows, then keep up to ``target_peers`` connections, asking a neighbour
        for more while below it. A round that fails raises: the daemon's supervisor logs it, counts
        it and runs the loop again after its backoff (it was swallowed here, and counted nowhere)."""
        while True:
            await self.round()
            await asyncio.sleep(self.settings.discover_s)

    async def round(self) -> None:
        now = self._now_ms()
        snaps = [s for s in await self._host.peers() if s.banned_until_ms is None]
        connected = {s.peer_id for s in snaps}
        self.store.learn(KnownPeer(s.peer_id, proven_addrs(s.addrs, s.seen_at), now) for s in snaps)
        wanted = self.settings.target_peers - len(connected)
        if wanted <= 0:
            self.store.save()
            return
        # A few neighbours at once: which of them is connected to a peer behind a NAT (its relay)
        # is learnt only by asking that one, and one random neighbour a round took a minute to.
        asked = self._rng.sample(snaps, min(ASKS_PER_ROUND, len(snaps)))
        await _together(self._ask(s.peer_id, now) for s in asked)
        # Side by side (at most ``wanted``): a peer behind a NAT that drops what it did not ask for
        # answers no address it tells, so each of its dials takes the whole timeout; one after another
        # they held a round, and the asking at its start, for half a minute.
        dials = await _together(self._dial(p) for p in self.store.candidates(connected | {self._me}, wanted))
        self.dialled += sum(dials)
        self.store.save()

    async def _ask(self, neighbour: str, now: int) -> None:
        try:
            raw = await self._host.request(neighbour, PROTOCOL, b"", timeout_s=self._dial_timeout_s)
            sample = decode(raw, now)
        except ProtocolRefused:  # a peer of another kind (js-libp2p, go-libp2p): it keeps its connection
            log.debug("p2p.peer_exchange_not_spoken", peer=neighbour)
            return
        except (InvalidValue, TimeoutError, ConnectionError, RuntimeError) as exc:
            log.info("p2p.peer_exchange_failed", peer=neighbour, error=str(exc))
            return
        before = len(self.store)
        local = LocalNetworks.of(self._interfaces(), self._host.listen_addrs)
        in_scope = (KnownPeer(p.peer_id, dialable_from(p.addrs, local), p.last_seen_ms) for p in sample)
        self.store.hear(neighbour, (p for p in in_scope if p.peer_id != self._me))
        self.learned += max(0, len(self.store) - before)
        failpoints.check("discovery:heard")  # a round cut off with one neighbour's answer in
        # the neighbour is connected to each: a way to one behind a NAT that holds a slot there
        await self._host.note_relays(neighbour, [p.peer_id for p in sample if p.peer_id != self._me])

    async def _dial(self, peer: KnownPeer) -> bool:
        for addr in peer.addrs:
            try:
                await asyncio.wait_for(self._host.connect(f"{addr}/p2p/{peer.peer_id}"), self._dial_timeout_s)
                self.store.learn([KnownPeer(peer.peer_id, (addr,), self._now_ms())])  # the handshake proved it there
                return True
            except Exception as exc:  # noqa: BLE001 - gone, moved or behind a NAT: the next address, or peer
                log.debug("p2p.discovery_dial_failed", peer=peer.peer_id, addr=addr, error=str(exc))
        return False


async def _together(work: Iterable[Coroutine[Any, Any, T]]) -> list[T]:
    """Run ``work`` side by side and return each result in order. If one fails, the others are
    cancelled and waited for before its error is raised: ``asyncio.gather`` left them running,
    unowned, still asking and dialling for a round that had already failed."""
    try:
        async with asyncio.TaskGroup() as group:
            tasks = [group.create_task(w) for w in work]
    except ExceptionGroup as failed:  # the first error as it was; the rest were cancelled with it
        raise failed.exceptions[0] from None
    return [t.result() for t in tasks]


def _dialable(addr: str) -> bool:
    return not any(addr.startswith(u) for u in UNDIALABLE) and "/p2p-circuit" not in addr


def _dialable_parts(addrs: Iterable[str]) -> tuple[str, ...]:
    return tuple(_transport_part(a) for a in addrs if _dialable(a))


def proven_addrs(claimed: Iterable[str], seen_at: Iterable[str]) -> tuple[str, ...]:
    """Of the addresses a connected peer claims, those on an IP one of its connections comes from (or
    goes to): there a handshake proved its key."""
    ips = {ip for ip in map(host_ip, seen_at) if ip is not None}
    return tuple(a for a in _dialable_parts(claimed) if host_ip(a) in ips)


def _transport_part(addr: str) -> str:
    """``/ip4/…/tcp/…`` without a ``/p2p/<id>`` suffix (the peer id travels beside it)."""
    return addr.split("/p2p/")[0]
