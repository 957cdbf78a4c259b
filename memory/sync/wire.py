"""The sync exchange's messages as bytes, and back, checked as if hostile (pure).

An ask: ``[1, group id, member list, {epoch: key sealed to the answerer}, sealed]``, the box sealed
for the group under the asker's newest epoch: ``{"v": version vector, "d": state digest, "n":
nonce, "w": operations wanted}``.
An answer: ``[1, "ok", member list or None, {epoch: key sealed to the asker}, [sealed, ...]]``; the
member list and keys travel outside the group box (the keys are sealed to the asker's own key, and
the list is signed) so that an asker that missed a new epoch can take it before it opens the rest.
The boxes hold, cut in pieces of at most 64 KiB, ``{"o": [operation, ...], "v": vector, "d":
digest, "m": more to come}``. Or ``[1, "refused", reason]``.

Every box is bound to both peers, the direction and the ask's nonce, so a box cannot be replayed
to another device, as an answer to another ask, or as an ask.
"""

from __future__ import annotations

import os
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import msgpack

from crypto.group_box import MAX_PLAINTEXT, GroupKey, open_sealed, seal
from ground.authority import Speaker
from memory.errors import SyncRefused
from memory.model import MAX_TEXT_CHARS
from memory.sync.clock import Stamp
from memory.sync.operations import Change, Operation

VERSION = 1
PROTOCOL = "/bitterbot/devices-sync/1"
NONCE_BYTES = 16
MAX_AUTHORS = 256  # authors in a vector: members come and go, their operations stay
MAX_ID_CHARS = 128
MAX_VECTOR_BYTES = 16_384  # 4,096 float32 dimensions
MAX_DETAILS_CHARS = 64_000  # a STORE's details: its context (4,000 at most), tags, source, times


@dataclass(frozen=True, slots=True)
class Ask:
    vector: dict[str, int]
    digest: str
    nonce: bytes
    wanted: int


@dataclass(frozen=True, slots=True)
class Answer:
    operations: list[Operation]
    vector: dict[str, int]
    digest: str
    more: bool


@dataclass(frozen=True, slots=True)
class Outer:
    """What an answer carries outside the group box."""

    member_list: bytes | None
    sealed_keys: dict[int, bytes]
    boxes: list[bytes]


def _bound(kind: bytes, group_id: bytes, sender: str, receiver: str, nonce: bytes) -> bytes:
    return (
        b"bitterbot devices-sync v1\x00"
        + kind
        + b"\x00"
        + group_id
        + sender.encode()
        + b"\x00"
        + receiver.encode()
        + nonce
    )


def _packb(doc: Any) -> bytes:
    return bytes(msgpack.packb(doc, use_bin_type=True))


def _unpackb(data: bytes, what: str) -> Any:
    try:
        return msgpack.unpackb(data, raw=False, strict_map_key=False, max_bin_len=len(data), max_str_len=len(data))
    except Exception as exc:
        raise SyncRefused(f"{what} is not a message of the sync exchange") from exc


# --- the ask -----------------------------------------------------------------------------------


def ask_bytes(
    key: GroupKey, group_id: bytes, member_list: bytes, sealed_keys: Mapping[int, bytes], asker: str, answerer: str,
    ask: Ask,
) -> bytes:  # fmt: skip
    """An ask, with the asker's member list and its keys sealed to the answerer outside the box: an
    answerer that missed a new epoch takes them before it opens the box."""
    doc = {"v": ask.vector, "d": ask.digest, "n": ask.nonce, "w": ask.wanted}
    bound = _bound(b"ask", group_id, asker, answerer, b"")
    return _packb([VERSION, group_id, member_list, dict(sealed_keys), seal(key, bound, _packb(doc))])


def new_nonce() -> bytes:
    return os.urandom(NONCE_BYTES)


@dataclass(frozen=True, slots=True)
class AskFrame:
    group_id: bytes
    member_list: bytes
    sealed_keys: dict[int, bytes]
    sealed: bytes


def read_ask_frame(data: bytes) -> AskFrame:
    doc = _unpackb(data, "the ask")
    if not (isinstance(doc, list) and len(doc) == 5 and doc[0] == VERSION):
        raise SyncRefused("the ask is not a version 1 sync ask")
    _, group_id, member_list, keys, sealed = doc
    if not (isinstance(group_id, bytes) and isinstance(member_list, bytes) and isinstance(sealed, bytes)):
        raise SyncRefused("the ask's fields have the wrong types")
    return AskFrame(group_id, member_list, _keys(keys, "the ask"), sealed)


def _keys(value: object, where: str) -> dict[int, bytes]:
    if not (isinstance(value, dict) and len(value) <= MAX_AUTHORS):
        raise SyncRefused(f"{where}'s keys are not a map")
    if not all(_is_count(k) and isinstance(v, bytes) for k, v in value.items()):
        raise SyncRefused(f"{where}'s keys are malformed")
    return {int(k): v for k, v in value.items()}


def open_ask(keys: Mapping[int, GroupKey], frame: AskFrame, asker: str, answerer: str) -> Ask:
    plain = open_sealed(keys, _bound(b"ask", frame.group_id, asker, answerer, b""), frame.sealed)
    doc = _unpackb(plain, "the ask's box")
    if not isinstance(doc, dict):
        raise SyncRefused("the ask's box holds no map")
    nonce, wanted = doc.get("n"), doc.get("w")
    if not (isinstance(nonce, bytes) and len(nonce) == NONCE_BYTES and isinstance(wanted, int) and _is_count(wanted)):
        raise SyncRefused("the ask's nonce or size is malformed")
    return Ask(_vector(doc.get("v")), _digest(doc.get("d")), nonce, wanted)


# --- the answer --------------------------------------------------------------------------------


def answer_bytes(
    key: GroupKey, group_id: bytes, answerer: str, asker: str, nonce: bytes, answer: Answer, outer: Outer
) -> bytes:
    """The answer, its plaintext cut into as many boxes as it needs (each bound to its place)."""
    plain = _packb(
        {"v": answer.vector, "d": answer.digest, "m": answer.more, "o": [op_wire(o) for o in answer.operations]}
    )
    pieces = [plain[i : i + MAX_PLAINTEXT] for i in range(0, len(plain), MAX_PLAINTEXT)]
    bound = _bound(b"answer", group_id, answerer, asker, nonce)
    boxes = [seal(key, bound + _place(i, len(pieces)), piece) for i, piece in enumerate(pieces)]
    return _packb([VERSION, "ok", outer.member_list, outer.sealed_keys, boxes])


def _place(index: int, count: int) -> bytes:
    return index.to_bytes(4, "big") + count.to_bytes(4, "big")


def refusal_bytes(reason: str) -> bytes:
    return _packb([VERSION, "refused", reason[:200]])


def read_answer_outer(data: bytes) -> Outer:
    doc = _unpackb(data, "the answer")
    if isinstance(doc, list) and len(doc) == 3 and doc[:2] == [VERSION, "refused"]:
        raise SyncRefused(f"the other device refused: {str(doc[2])[:200]}")
    if not (isinstance(doc, list) and len(doc) == 5 and doc[:2] == [VERSION, "ok"]):
        raise SyncRefused("the answer is not a version 1 sync answer")
    _, _, member_list, keys, boxes = doc
    if member_list is not None and not isinstance(member_list, bytes):
        raise SyncRefused("the answer's member list is not bytes")
    if not (isinstance(boxes, list) and boxes and all(isinstance(b, bytes) for b in boxes)):
        raise SyncRefused("the answer has no boxes")
    return Outer(member_list, _keys(keys, "the answer"), boxes)


def open_answer(
    keys: Mapping[int, GroupKey], group_id: bytes, answerer: str, asker: str, nonce: bytes, outer: Outer
) -> Answer:
    bound = _bound(b"answer", group_id, answerer, asker, nonce)
    count = len(outer.boxes)
    plain = b"".join(open_sealed(keys, bound + _place(i, count), box) for i, box in enumerate(outer.boxes))
    return read_answer_plain(plain)


def read_answer_plain(plain: bytes) -> Answer:
    """An answer's boxes, opened and joined, as the answer they hold."""
    doc = _unpackb(plain, "the answer's boxes")
    if not isinstance(doc, dict) or not isinstance(doc.get("o"), list):
        raise SyncRefused("the answer's boxes hold no operations")
    ops = [op_from_wire(row) for row in doc["o"]]
    return Answer(ops, _vector(doc.get("v")), _digest(doc.get("d")), doc.get("m") is True)


# --- operations --------------------------------------------------------------------------------


def op_wire(op: Operation) -> list[Any]:
    s = op.stamp
    return [
        op.device, op.seq, s.wall_ms, s.counter, s.device, op.speaker.value, op.change.value, op.target, op.text,
        op.semantic_type, op.scope, op.held, op.other, op.emptied, op.details, op.model, op.vector,
    ]  # fmt: skip


def op_from_wire(row: object) -> Operation:
    if not (isinstance(row, list) and len(row) == 17):
        raise SyncRefused("an operation is not a list of 17 fields")
    (device, seq, wall, counter, stamp_device, speaker, change, target, text, stype, scope, held, other, emptied,
     details, model, vector) = row  # fmt: skip
    for name, value, most in (
        ("device", device, MAX_ID_CHARS), ("stamp device", stamp_device, MAX_ID_CHARS),
        ("target", target, MAX_ID_CHARS), ("other", other, MAX_ID_CHARS), ("text", text, MAX_TEXT_CHARS),
        ("type", stype, 64), ("scope", scope, 64), ("details", details, MAX_DETAILS_CHARS),
        ("model", model, MAX_ID_CHARS),
    ):  # fmt: skip
        if not isinstance(value, str) or len(value) > most:
            raise SyncRefused(f"an operation's {name} is not a string of at most {most} characters")
    if not (_is_count(seq) and seq >= 1 and _is_count(wall) and _is_count(counter)):
        raise SyncRefused("an operation's number or stamp is malformed")
    if not (isinstance(held, bool) and isinstance(emptied, bool)) or not device or not target:
        raise SyncRefused("an operation's flags or ids are malformed")
    if not isinstance(vector, bytes) or len(vector) > MAX_VECTOR_BYTES or len(vector) % 4:
        raise SyncRefused(f"an operation's vector is not float32 bytes of at most {MAX_VECTOR_BYTES}")
    try:
        return Operation(
            device, seq, Stamp(wall, counter, stamp_device), Speaker(speaker), Change(change), target, text, stype,
            scope, held, other, emptied, details, model, vector,
        )  # fmt: skip
    except ValueError as exc:
        raise SyncRefused(f"an operation names an unknown speaker or change: {exc}") from None


def _is_count(value: object) -> bool:
    return isinstance(value, int) and not isinstance(value, bool) and 0 <= value < 2**63


def _vector(value: object) -> dict[str, int]:
    if not isinstance(value, dict) or len(value) > MAX_AUTHORS:
        raise SyncRefused(f"a version vector is not a map of at most {MAX_AUTHORS} authors")
    if not all(isinstance(k, str) and 0 < len(k) <= MAX_ID_CHARS and _is_count(v) for k, v in value.items()):
        raise SyncRefused("a version vector's entries are malformed")
    return {str(k): int(v) for k, v in value.items()}


def _digest(value: object) -> str:
    if not isinstance(value, str) or len(value) > 64:
        raise SyncRefused("a state digest is malformed")
    return value


def ops_fit(ops: Sequence[Operation]) -> int:
    """The wire size of operations (for the bytes-per-crystal benchmark)."""
    return sum(len(_packb(op_wire(op))) for op in ops)


def ops_within(ops: Sequence[Operation], budget: int) -> list[Operation]:
    """The longest run of ``ops`` from the first whose wire size is at most ``budget``, and never
    none: an operation larger than the budget alone (100,000 characters of words is ~400 KB) goes
    alone, within the frame, or its member would wait for it for ever. Each is packed once."""
    taken: list[Operation] = []
    size = 0
    for op in ops:
        size += len(_packb(op_wire(op)))
        if taken and size > budget:
            break
        taken.append(op)
    return taken
