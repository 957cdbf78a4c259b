"""The inviting device's side of pairing: the one code open now, and the answer to a join request.

A code lives ``pairing_code_ttl_s``, joins one device, and is burnt by ``pairing_code_attempts``
wrong proofs, whoever sends them (a stranger guessing burns it too: it fails closed, and the
person prints a new one). Requests are read at ``pairing_requests_per_min`` from all peers
together, a third of it from any one peer, before anything else is checked. A request the desk
cannot read gets an answer, never an exception: nothing a stranger sends stops the host.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

from crypto.device_group import Member
from crypto.errors import DeviceGroupError
from crypto.identity import Identity
from crypto.pairing import PairingCode, proof_holds
from crypto.peer_id import peer_id_from_ed25519
from ground.clock import wall_clock_ms
from ground.events import get_logger
from ground.rates import RateLimit, TokenBuckets
from memory.devices.keeper import DeviceGroupKeeper
from memory.devices.settings import DevicesSettings
from memory.devices.wire import JoinRequest, Refusal, Refused, Welcome, pack_answer, read_request
from memory.errors import InvalidValue

log = get_logger("memory.devices")


@dataclass
class OpenCode:
    code: PairingCode
    expires_ms: int
    wrong_proofs: int = 0
    used_by: bytes | None = None


class PairingDesk:
    """Opens codes (``open``) and answers join requests (``answer``, the host's stream handler)."""

    def __init__(
        self,
        keeper: DeviceGroupKeeper,
        identity: Identity,
        settings: DevicesSettings,
        my_name: str,
        *,
        now_ms: Callable[[], int] = wall_clock_ms,
    ) -> None:
        self._keeper = keeper
        self._identity = identity
        self._settings = settings
        self._my_name = my_name
        self._now_ms = now_ms
        per_s = settings.pairing_requests_per_min / 60
        self._all = TokenBuckets(RateLimit(per_s, settings.pairing_requests_per_min), max_keys=1)
        share = max(1, settings.pairing_requests_per_min // 3)
        self._each = TokenBuckets(RateLimit(per_s / 3, share), max_keys=10_000)
        self._open: OpenCode | None = None
        self.counts = {"admitted": 0, "refused": 0}

    def open(self, addrs: tuple[str, ...]) -> OpenCode:
        """A new code naming this device and ``addrs``; the code open before is closed."""
        self._open = OpenCode(
            PairingCode.new(self._identity.peer_id, addrs), self._now_ms() + self._settings.pairing_code_ttl_s * 1000
        )
        return self._open

    def is_open(self) -> OpenCode | None:
        """The code that can still be used now, if any."""
        live = self._open
        if live is None or live.used_by is not None or self._now_ms() >= live.expires_ms:
            return None
        return live if live.wrong_proofs < self._settings.pairing_code_attempts else None

    async def answer(self, peer_id: str, raw: bytes) -> bytes:
        """The answer to a join request from ``peer_id`` (authenticated by the stream's handshake)."""
        decided = self.decide(peer_id, raw)
        self.counts["admitted" if isinstance(decided, Welcome) else "refused"] += 1
        if isinstance(decided, Refused):
            log.info("devices.join_refused", peer=peer_id, reason=decided.reason.value)
        return pack_answer(decided)

    def decide(self, peer_id: str, raw: bytes) -> Welcome | Refused:
        now = self._now_ms()
        if not self._all.allow(b"", now) or not self._each.allow(peer_id.encode(), now):
            return Refused(Refusal.BUSY)
        try:
            request = read_request(raw)
        except InvalidValue:
            return Refused(Refusal.MALFORMED)
        if peer_id_from_ed25519(request.public_key) != peer_id:
            return Refused(Refusal.MALFORMED)  # a key other than the one the connection proved
        live = self._open
        if live is None:
            return Refused(Refusal.NO_CODE)
        holds = proof_holds(live.code.secret, self._identity.peer_id, peer_id, request.nonce, request.proof)
        attempts = self._settings.pairing_code_attempts
        if live.used_by is not None:
            view = self._keeper.view()
            if holds and live.used_by == request.public_key and view is not None and view.members.has(live.used_by):
                # its first answer was lost: the same group again (never to a device removed since)
                return Welcome(view.members.pack(), self._keeper.sealed_keys_for(live.used_by))
            return Refused(Refusal.USED) if holds else Refused(Refusal.WRONG_CODE)
        if live.wrong_proofs >= attempts:
            return Refused(Refusal.BURNT) if holds else Refused(Refusal.WRONG_CODE)
        if now >= live.expires_ms:
            return Refused(Refusal.EXPIRED) if holds else Refused(Refusal.WRONG_CODE)
        if not holds:
            live.wrong_proofs += 1
            left = attempts - live.wrong_proofs
            return Refused(Refusal.BURNT) if left == 0 else Refused(Refusal.WRONG_CODE, left)
        return self._admit(request, live)

    def _admit(self, request: JoinRequest, live: OpenCode) -> Welcome | Refused:
        view = self._keeper.view()
        if view is None or not view.members.has(request.public_key):
            try:
                view = self._keeper.admit(Member(request.public_key, request.name), self._my_name)
            except DeviceGroupError:
                return Refused(Refusal.FULL)
        live.used_by = request.public_key
        log.info("devices.admitted", peer=peer_id_from_ed25519(request.public_key), version=view.members.version)
        return Welcome(view.members.pack(), self._keeper.sealed_keys_for(request.public_key))
