"""The joining device's side of pairing: dial the device the code names, prove the code, and take
the group it answers with (``DeviceGroupKeeper.join``).

The code names the inviter's peer id, so the stream's handshake proves that the answer comes from
that device and no one in the middle; the answer's member list must be signed by it.
"""

from __future__ import annotations

import os
from typing import Protocol

from crypto.identity import Identity
from crypto.pairing import proof, read_code
from crypto.peer_id import ed25519_from_peer_id
from memory.devices.keeper import DeviceGroupKeeper, GroupView
from memory.devices.wire import MAX_ANSWER_BYTES, NONCE_BYTES, PROTOCOL, JoinRequest, Refused, read_answer, refusal_text
from memory.errors import AlreadyInGroup, PairingRefused

#: How long the joiner waits for the inviting device (dialing included).
JOIN_TIMEOUT_S = 20.0


class Dialer(Protocol):
    """What joining needs of the node's libp2p host (``p2p.host.P2PHost``)."""

    async def remember_addrs(self, peer_id: str, addrs: list[str]) -> None: ...

    async def request(
        self, peer_id: str, protocol: str, payload: bytes, *, timeout_s: float = ..., max_bytes: int = ...
    ) -> bytes: ...


async def join_group(
    code_text: str, name: str, keeper: DeviceGroupKeeper, identity: Identity, host: Dialer
) -> GroupView:
    """Join the group of the device that printed ``code_text``. ``PairingCodeError`` for a code that
    cannot be read, ``AlreadyInGroup``, ``PairingRefused`` with the inviter's reason; the host's own
    errors when the inviter cannot be reached."""
    code = read_code(code_text)
    if keeper.view() is not None:
        raise AlreadyInGroup()
    inviter = ed25519_from_peer_id(code.peer_id)
    if inviter is None:
        raise PairingRefused("malformed", "the code names a device whose id is not an Ed25519 key")
    if code.peer_id == identity.peer_id:
        raise PairingRefused("own_code", "this is this device's own code: use it on another device")
    if code.addrs:
        await host.remember_addrs(code.peer_id, list(code.addrs))
    nonce = os.urandom(NONCE_BYTES)
    request = JoinRequest(identity.public_key, name, nonce, proof(code.secret, code.peer_id, identity.peer_id, nonce))
    raw = await host.request(
        code.peer_id, PROTOCOL, request.pack(), timeout_s=JOIN_TIMEOUT_S, max_bytes=MAX_ANSWER_BYTES
    )
    answer = read_answer(raw)
    if isinstance(answer, Refused):
        raise PairingRefused(answer.reason.value, refusal_text(answer))
    return keeper.join(inviter, answer.member_list, answer.sealed_keys)
