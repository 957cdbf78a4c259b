"""Framing on a libp2p stream for request/response protocols (quotes, sealed deliveries): a 4-byte
big-endian length, then that many bytes, at most ``MAX_FRAME_BYTES``, so a peer's length prefix
can never make this node allocate more than the bound."""

from __future__ import annotations

from typing import Any

from p2p.errors import InvalidValue, StreamEnded

MAX_FRAME_BYTES = 1_048_576


async def write_frame(stream: Any, payload: bytes) -> None:
    """One frame: a 4-byte big-endian length, then the payload."""
    if len(payload) > MAX_FRAME_BYTES:
        raise InvalidValue(f"a frame is at most {MAX_FRAME_BYTES} bytes")
    await stream.write(len(payload).to_bytes(4, "big") + payload)


async def _read_exactly(stream: Any, size: int) -> bytes:
    data = b""
    while len(data) < size:
        chunk = await stream.read(size - len(data))
        if not chunk:
            raise StreamEnded("the stream ended before the frame did")
        data += chunk
    return data


async def read_frame(stream: Any, max_bytes: int = MAX_FRAME_BYTES) -> bytes:
    """One frame of at most ``max_bytes`` (a protocol may bound its answers tighter than the default);
    a length over the bound is refused before anything is read into memory."""
    size = int.from_bytes(await _read_exactly(stream, 4), "big")
    if size > max_bytes:
        raise InvalidValue(f"frame of {size} bytes refused (at most {max_bytes})")
    return await _read_exactly(stream, size)
