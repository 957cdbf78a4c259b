"""Chunked AES-256-GCM for backups: round trips, and every kind of damage refused."""

from __future__ import annotations

import io
import json
import os
import struct
from pathlib import Path

import pytest

from crypto.errors import SealedDataError, SealedDataTampered
from crypto.stream import CHUNK, MAGIC, StreamKey, decrypt_file, encrypt_file

KEY = StreamKey(raw=bytes(range(32)))
DATA = os.urandom(2 * CHUNK + 12_345)  # three chunks, the last one short


def sealed(data: bytes = DATA, key: StreamKey = KEY) -> bytes:
    out = io.BytesIO()
    encrypt_file(io.BytesIO(data), out, key, meta={"format": "test"})
    return out.getvalue()


def opened(blob: bytes, key: StreamKey = KEY) -> bytes:
    out = io.BytesIO()
    decrypt_file(io.BytesIO(blob), out, key)
    return out.getvalue()


def chunks(blob: bytes) -> tuple[bytes, list[bytes]]:
    """(magic + header, [length-prefixed chunks])."""
    (header_len,) = struct.unpack(">I", blob[len(MAGIC) : len(MAGIC) + 4])
    head_end = len(MAGIC) + 4 + header_len
    parts, at = [], head_end
    while at < len(blob):
        (size,) = struct.unpack(">I", blob[at : at + 4])
        parts.append(blob[at : at + 4 + size])
        at += 4 + size
    return blob[:head_end], parts


@pytest.mark.parametrize("data", [b"", b"x", DATA, os.urandom(CHUNK)])
def test_round_trip(data: bytes) -> None:
    assert opened(sealed(data)) == data


def test_a_passphrase_key_round_trips_and_a_wrong_one_fails() -> None:
    blob = sealed(b"memories", StreamKey(passphrase=b"correct horse"))
    assert opened(blob, StreamKey(passphrase=b"correct horse")) == b"memories"
    with pytest.raises(SealedDataTampered, match="wrong key, or the file was altered"):
        opened(blob, StreamKey(passphrase=b"wrong horse"))
    with pytest.raises(SealedDataError, match="give --passphrase-file"):
        opened(blob, KEY)


def damaged(what: str) -> bytes:
    blob = sealed()
    head, parts = chunks(blob)
    assert len(parts) == 3
    flipped = bytearray(blob)
    flipped[len(blob) // 2] ^= 1
    return {
        "a flipped bit": bytes(flipped),
        "swapped chunks": head + parts[1] + parts[0] + parts[2],
        "a dropped last chunk": head + parts[0] + parts[1],
        "a repeated chunk": head + parts[0] + parts[0] + parts[1] + parts[2],
        "a cut-off end": blob[:-10],
        "trailing data": blob + b"\x00",
        "an edited header": blob.replace(b'"format": "test"', b'"format": "tost"'),
    }[what]


@pytest.mark.parametrize(
    "what",
    ["a flipped bit", "swapped chunks", "a dropped last chunk", "a repeated chunk", "a cut-off end",
     "trailing data", "an edited header"],
)  # fmt: skip
def test_every_kind_of_damage_is_refused(what: str) -> None:
    with pytest.raises(SealedDataTampered):
        opened(damaged(what))


def test_a_file_of_another_kind_is_refused() -> None:
    with pytest.raises(SealedDataError, match="wrong magic"):
        opened(b"PK\x03\x04" + sealed(b"x"))


def test_key_files(tmp_path: Path) -> None:
    hex_file = tmp_path / "k.hex"
    hex_file.write_text(bytes(range(32)).hex() + "\n")
    assert StreamKey.from_key_file(hex_file) == KEY
    short = tmp_path / "short"
    short.write_bytes(b"x" * 16)
    with pytest.raises(SealedDataError, match="holds 32 bytes"):
        StreamKey.from_key_file(short)


def with_kdf(blob: bytes, **params: int) -> bytes:
    """``blob`` with its header's scrypt parameters replaced (as a hostile file would name them)."""
    head, parts = chunks(blob)
    header = json.loads(head[len(MAGIC) + 4 :])
    header.update(params)
    encoded = json.dumps(header).encode()
    return MAGIC + struct.pack(">I", len(encoded)) + encoded + b"".join(parts)


@pytest.mark.parametrize(
    ("params", "why"),
    [
        ({"n": 2**20, "r": 32, "p": 16}, "4096 MiB"),  # issue 13: each within its range, 4 GiB together
        ({"n": 2**20, "r": 8, "p": 1}, "1024 MiB"),
        ({"n": 2**17, "r": 8, "p": 16}, "more work"),
    ],
)
def test_a_header_asking_for_too_much_scrypt_is_refused_before_deriving(params: dict[str, int], why: str) -> None:
    blob = with_kdf(sealed(b"memories", StreamKey(passphrase=b"pw")), **params)
    with pytest.raises(SealedDataError, match=why):
        opened(blob, StreamKey(passphrase=b"pw"))
