"""Signed market messages over a direct stream: sealing this node's, opening a peer's (signature,
time window, replay) and asking one question of a peer."""

from __future__ import annotations

from typing import Any

from crypto.envelope import Envelope, open_envelope, pack_body, seal_envelope
from crypto.errors import EnvelopeError
from crypto.identity import Identity
from crypto.windows import ReplayGuard
from ground.clock import Clock
from marketplace.errors import PurchaseError
from marketplace.exchange.protocol import KIND_ERROR, POLICY, PROTOCOL, refusal_of
from p2p.host import P2PHost


class Messenger:
    def __init__(self, identity: Identity, host: P2PHost, clock: Clock) -> None:
        self._identity = identity
        self._host = host
        self._now_ms = clock
        self._replay = ReplayGuard(horizon_ms=POLICY.window.max_age_ms + POLICY.window.max_ahead_ms)

    def seal(self, kind: str, body: dict[str, Any]) -> Envelope:
        return seal_envelope(self._identity, kind, pack_body(body), now_ms=self._now_ms())

    def open(self, wire: bytes) -> Envelope:
        """A peer's message, checked (``EnvelopeError`` otherwise)."""
        return open_envelope(wire, POLICY, now_ms=self._now_ms(), replay=self._replay)

    async def ask(self, peer: str, request: Envelope, expect: str, signer: bytes) -> tuple[bytes, dict[str, Any]]:
        """Send ``request`` to ``peer``; its answer as (wire, body) when it is a ``expect`` signed by
        ``signer``, otherwise ``PurchaseError`` saying what came back."""
        answer = await self._host.request(peer, PROTOCOL, request.encode())
        try:
            envelope = self.open(answer)
        except EnvelopeError as exc:
            raise PurchaseError(f"unusable answer from the seller: {exc}") from None
        if envelope.author != signer:
            raise PurchaseError("the answer is not signed by the seller")
        body = envelope.body_map()
        if envelope.kind == KIND_ERROR:
            raise PurchaseError(f"the seller refused: {refusal_of(body)}")
        if envelope.kind != expect:
            raise PurchaseError(f"expected a {expect}, got a {envelope.kind}")
        return answer, body
