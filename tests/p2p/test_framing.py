"""Request/response framing: round trip, and a peer's length prefix never makes us read past the bound."""

from __future__ import annotations

import pytest
import trio

from p2p.framing import MAX_FRAME_BYTES, read_frame, write_frame


class BytesStream:
    """A stream with libp2p's read/write calls over a byte buffer (reads return at most 7 bytes,
    as a network may deliver a frame in pieces)."""

    def __init__(self, data: bytes = b"") -> None:
        self.data = bytearray(data)
        self.read_calls = 0

    async def write(self, payload: bytes) -> None:
        self.data += payload

    async def read(self, n: int) -> bytes:
        self.read_calls += 1
        chunk, self.data = bytes(self.data[: min(n, 7)]), self.data[min(n, 7) :]
        return chunk


def test_a_frame_round_trips_even_when_it_arrives_in_pieces() -> None:
    async def go() -> bytes:
        stream = BytesStream()
        await write_frame(stream, b"a sealed skill" * 10)
        return await read_frame(stream)

    assert trio.run(go) == b"a sealed skill" * 10


def test_an_oversized_length_is_refused_after_reading_only_the_prefix() -> None:
    stream = BytesStream((MAX_FRAME_BYTES + 1).to_bytes(4, "big") + b"x" * 100)
    with pytest.raises(ValueError, match="refused"):
        trio.run(read_frame, stream)
    assert len(stream.data) == 100  # the payload was never read


def test_a_stream_that_ends_mid_frame_is_a_connection_error_and_sending_too_much_is_refused() -> None:
    with pytest.raises(ConnectionError):
        trio.run(read_frame, BytesStream((10).to_bytes(4, "big") + b"abc"))
    with pytest.raises(ValueError, match="at most"):
        trio.run(write_frame, BytesStream(), b"x" * (MAX_FRAME_BYTES + 1))
