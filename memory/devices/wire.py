"""The pairing protocol's two messages (``/bitterbot/devices-pair/1``, one request and one answer
on a direct stream whose far end Noise authenticated), and their bounds.

    request  msgpack ["join", 1, joiner's public key (32), device name, nonce (16), proof (32)]
    answer   msgpack ["ok", member list (packed), {epoch: key sealed to the joiner}]
          or msgpack ["refused", reason, attempts left (-1: not counted)]

The proof is ``crypto.pairing.proof(secret, inviter peer id, joiner peer id, nonce)``: the secret
never crosses the wire, and a proof is good only from the joiner's own peer id. A refusal carries a
reason and a number, never text: the joiner words it itself (``refusal_text``).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from enum import StrEnum

import msgpack

from crypto.device_group import MAX_NAME_CHARS
from memory.errors import InvalidValue

PROTOCOL = "/bitterbot/devices-pair/1"
NONCE_BYTES = 16
KEY_BYTES = 32
PROOF_BYTES = 32
#: A request is a key, a name of at most 64 characters, a nonce and a proof: about 200 bytes.
MAX_REQUEST_BYTES = 512
#: A list of 32 members and a key per epoch held; an answer past this is refused by its length.
MAX_ANSWER_BYTES = 262_144


class Refusal(StrEnum):
    NO_CODE = "no_code"
    WRONG_CODE = "wrong_code"
    EXPIRED = "expired"
    USED = "used"
    BURNT = "burnt"
    BUSY = "busy"
    FULL = "full"
    MALFORMED = "malformed"


@dataclass(frozen=True, slots=True)
class JoinRequest:
    public_key: bytes
    name: str
    nonce: bytes
    proof: bytes

    def pack(self) -> bytes:
        return bytes(msgpack.packb(["join", 1, self.public_key, self.name, self.nonce, self.proof]))


@dataclass(frozen=True, slots=True)
class Welcome:
    member_list: bytes
    sealed_keys: Mapping[int, bytes]


@dataclass(frozen=True, slots=True)
class Refused:
    reason: Refusal
    attempts_left: int = -1


def valid_name(name: object) -> bool:
    """A device name a terminal can show as it is: printable, 1 to 64 characters."""
    return isinstance(name, str) and 0 < len(name) <= MAX_NAME_CHARS and name.isprintable()


def read_request(raw: bytes) -> JoinRequest:
    """A join request from a stranger's bytes; ``InvalidValue`` for anything else."""
    if len(raw) > MAX_REQUEST_BYTES:
        raise InvalidValue(f"a join request is at most {MAX_REQUEST_BYTES} bytes")
    try:
        kind, version, key, name, nonce, proof = msgpack.unpackb(raw)
    except (ValueError, TypeError, msgpack.UnpackException):
        raise InvalidValue("not a join request") from None
    valid = (
        kind == "join" and version == 1 and valid_name(name)
        and isinstance(key, bytes) and len(key) == KEY_BYTES
        and isinstance(nonce, bytes) and len(nonce) == NONCE_BYTES
        and isinstance(proof, bytes) and len(proof) == PROOF_BYTES
    )  # fmt: skip
    if not valid:
        raise InvalidValue("a join request of the wrong shape")
    return JoinRequest(key, name, nonce, proof)


def pack_answer(answer: Welcome | Refused) -> bytes:
    if isinstance(answer, Welcome):
        return bytes(msgpack.packb(["ok", answer.member_list, dict(answer.sealed_keys)]))
    return bytes(msgpack.packb(["refused", answer.reason.value, answer.attempts_left]))


def read_answer(raw: bytes) -> Welcome | Refused:
    """The inviting device's answer; ``InvalidValue`` for anything else."""
    try:
        doc = msgpack.unpackb(raw, strict_map_key=False)
    except (ValueError, TypeError, msgpack.UnpackException):
        raise InvalidValue("the inviting device's answer is not one") from None
    if isinstance(doc, list) and len(doc) == 3 and doc[0] == "ok":
        _, members, sealed = doc
        keys_ok = isinstance(sealed, dict) and all(
            isinstance(e, int) and isinstance(k, bytes) for e, k in sealed.items()
        )
        if isinstance(members, bytes) and keys_ok:
            return Welcome(members, sealed)
    if isinstance(doc, list) and len(doc) == 3 and doc[0] == "refused" and isinstance(doc[2], int):
        try:
            return Refused(Refusal(doc[1]), doc[2])
        except ValueError:
            pass
    raise InvalidValue("the inviting device's answer is of the wrong shape")


_TEXT = {
    Refusal.NO_CODE: "the inviting device has no pairing code open: run `devices pair` there, and use its code",
    Refusal.WRONG_CODE: "the code does not match the one the inviting device printed last",
    Refusal.EXPIRED: "the pairing code has expired: run `devices pair` again on the inviting device",
    Refusal.USED: "the pairing code was used already (a code joins one device): run `devices pair` again",
    Refusal.BURNT: "the pairing code is burnt after too many wrong tries: run `devices pair` again",
    Refusal.BUSY: "the inviting device is answering too many join requests now: try again in a minute",
    Refusal.FULL: "the device group is full",
    Refusal.MALFORMED: "the inviting device did not understand the request",
}


def refusal_text(refused: Refused) -> str:
    text = _TEXT[refused.reason]
    if refused.reason is Refusal.WRONG_CODE and refused.attempts_left >= 0:
        text += f" ({refused.attempts_left} {'try' if refused.attempts_left == 1 else 'tries'} left before it is burnt)"
    return text
