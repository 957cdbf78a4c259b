"""Yamux receive credit once half the window is read, as go-yamux gives it (p2p.yamux_credit), between
two real py-libp2p hosts over TCP on 127.0.0.1, with the counts of window updates the receiver sent."""

from __future__ import annotations

import os
from collections.abc import Iterator
from typing import Any

import multiaddr
import pytest
import trio
from libp2p import new_host
from libp2p.crypto.ed25519 import create_new_key_pair
from libp2p.custom_types import TProtocol
from libp2p.peer.peerinfo import info_from_p2p_addr
from libp2p.stream_muxer.yamux.yamux import YamuxStream

from p2p import yamux_credit

PROTOCOL = TProtocol("/bitterbot-test/credit/1")
SMALL = 300  # bytes: a gossip message's size
SMALL_COUNT = 50
LARGE = 2 * 1024 * 1024  # eight default windows: the sender must be credited to finish


@pytest.fixture
def library_rule() -> Iterator[None]:
    """The library's own credit step, whatever an earlier test in this process installed."""
    installed = YamuxStream._auto_tune_and_send_window_update
    YamuxStream._auto_tune_and_send_window_update = yamux_credit.library_credit  # type: ignore[method-assign]
    try:
        yield
    finally:
        YamuxStream._auto_tune_and_send_window_update = installed  # type: ignore[method-assign]


@pytest.fixture
def go_rule(library_rule: None) -> None:
    yamux_credit.install()


def _exchange(monkeypatch: pytest.MonkeyPatch) -> tuple[int, int, int]:
    """Fifty small writes, each read on its own, then 2 MB: (updates the receiver sent for the small
    ones, updates in all, bytes it read)."""
    updates = 0
    library_send = YamuxStream.send_window_update

    async def counted(self: Any, increment: int, skip_lock: bool = False) -> None:
        nonlocal updates
        if not self.is_initiator:  # the stream's accepting side: the receiver here
            updates += 1
        await library_send(self, increment, skip_lock)

    monkeypatch.setattr(YamuxStream, "send_window_update", counted)
    result: dict[str, int] = {}

    async def main() -> None:
        sender = new_host(key_pair=create_new_key_pair(os.urandom(32)))
        receiver = new_host(key_pair=create_new_key_pair(os.urandom(32)))
        small_read = trio.Event()
        done = trio.Event()
        read = 0

        async def handler(stream: Any) -> None:
            nonlocal read
            while read < SMALL * SMALL_COUNT:
                read += len(await stream.read(SMALL))
            small_read.set()
            while read < SMALL * SMALL_COUNT + LARGE:
                read += len(await stream.read(65536))
            done.set()

        address = multiaddr.Multiaddr("/ip4/127.0.0.1/tcp/0")
        async with receiver.run(listen_addrs=[address]), sender.run(listen_addrs=[address]):
            receiver.set_stream_handler(PROTOCOL, handler)
            listen = receiver.get_addrs()[0]
            await sender.connect(info_from_p2p_addr(listen))
            stream = await sender.new_stream(receiver.get_id(), [PROTOCOL])
            with trio.fail_after(60):  # a hang, not a speed: the sender waits on credit it never gets
                for _ in range(SMALL_COUNT):
                    await stream.write(b"s" * SMALL)
                    await trio.sleep(0.005)  # the receiver reads each message on its own, as gossip does
                await small_read.wait()
                result["small"] = updates
                await stream.write(os.urandom(LARGE))
                await done.wait()
            result["all"], result["read"] = updates, read
            await stream.close()

    trio.run(main)
    return result["small"], result["all"], result["read"]


def test_the_library_sends_an_update_for_every_small_read(library_rule: None, monkeypatch: pytest.MonkeyPatch) -> None:
    small, _, read = _exchange(monkeypatch)
    assert read == SMALL * SMALL_COUNT + LARGE
    assert small >= SMALL_COUNT - 1  # the cost this module removes (one frame back per message)


def test_credit_comes_once_half_a_window_is_read_and_the_sender_never_stalls(
    go_rule: None, monkeypatch: pytest.MonkeyPatch
) -> None:
    small, everything, read = _exchange(monkeypatch)
    assert read == SMALL * SMALL_COUNT + LARGE  # 2 MB through a 256 KB window: credit did come
    assert small == 0  # 15 KB read: less than half the 256 KB window
    # At least one update per half window read; never one per read (there were hundreds of reads).
    assert 1 <= everything <= (SMALL * SMALL_COUNT + LARGE) // (128 * 1024) + 1
