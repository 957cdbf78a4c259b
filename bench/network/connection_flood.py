"""An attacker's process that floods a node with connections or streams (issue 31, "bounded per connection").

    python -m bench.network.connection_flood ADDRESS --connections 1000 [--source 127.0.0.2]
    python -m bench.network.connection_flood ADDRESS --streams 10000 [--write 4096]

``--connections N``: N raw TCP connections from ``--source`` that never finish a handshake, the
cheapest flood there is. ``--streams N``: one libp2p connection, under a fresh key, on which it opens
N yamux streams as fast as the node lets it, each writing ``--write`` bytes of junk and never
negotiating a protocol. Either way it prints one JSON line with what it opened and what the node
refused so far, then holds what is still open until its stdin ends (or ``STAY_DEADLINE_S``), and
prints a second line with what the node closed meanwhile.
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import json
import os
import resource
import subprocess
import sys
import tempfile
import threading
from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import Any

import multiaddr
import trio

#: How long it holds its connections when nobody ends its stdin.
STAY_DEADLINE_S = 300
#: How long one connection or stream may take to open before it counts as refused.
OPEN_DEADLINE_S = 10


def _stdin_ended() -> threading.Event:
    ended = threading.Event()

    def read_to_the_end() -> None:
        sys.stdin.read()
        ended.set()

    threading.Thread(target=read_to_the_end, daemon=True).start()
    return ended


def _tcp_target(address: str) -> tuple[str, int]:
    parts = multiaddr.Multiaddr(address)
    return parts.value_for_protocol("ip4"), int(parts.value_for_protocol("tcp"))


async def _hold_tcp(address: str, count: int, source: str) -> dict[str, Any]:
    """Open ``count`` TCP connections and keep them: a socket the node closed reads its end."""
    host, port = _tcp_target(address)
    writers: list[asyncio.StreamWriter] = []
    readers: list[asyncio.StreamReader] = []
    refused = 0
    for _ in range(count):
        try:
            async with asyncio.timeout(OPEN_DEADLINE_S):
                reader, writer = await asyncio.open_connection(host, port, local_addr=(source, 0))
        except (OSError, TimeoutError):
            refused += 1
            continue
        readers.append(reader)
        writers.append(writer)
    print(json.dumps({"opened": len(writers), "refused": refused}), flush=True)
    ended = _stdin_ended()
    loop = asyncio.get_running_loop()
    closed = 0

    async def watch(reader: asyncio.StreamReader) -> None:
        nonlocal closed
        with contextlib.suppress(OSError):
            await reader.read(65536)  # it sends nothing before we speak: any answer is its end
        closed += 1

    watchers = [asyncio.create_task(watch(r)) for r in readers]
    with contextlib.suppress(TimeoutError):
        async with asyncio.timeout(STAY_DEADLINE_S):
            await loop.run_in_executor(None, ended.wait)
    for task in watchers:
        task.cancel()
    await asyncio.gather(*watchers, return_exceptions=True)
    for writer in writers:
        writer.close()
    return {"closed_by_node": closed}


async def open_raw_stream(muxed: Any, payload: bytes) -> None:
    """Open one yamux stream on ``muxed`` by writing its SYN frame (with ``payload``) straight onto the
    secured connection, as a hostile client would: the library's own muxer would stop at its local
    backlog of open streams, which a hostile client does not keep."""
    import struct

    from libp2p.stream_muxer.yamux.yamux import FLAG_SYN, TYPE_DATA, YAMUX_HEADER_FORMAT

    stream_id = muxed.next_stream_id
    muxed.next_stream_id += 2  # the muxer's own next stream stays clear of these
    header = struct.pack(YAMUX_HEADER_FORMAT, 0, TYPE_DATA, FLAG_SYN, stream_id, len(payload))
    await muxed.secured_conn.write(header + payload)


async def _flood_streams(address: str, count: int, junk: int) -> dict[str, Any]:
    """One connection under a fresh key; ``count`` streams opened on it (``open_raw_stream``)."""
    from libp2p import new_host
    from libp2p.crypto.ed25519 import create_new_key_pair
    from libp2p.peer.peerinfo import info_from_p2p_addr

    host = new_host(key_pair=create_new_key_pair(os.urandom(32)))
    info = info_from_p2p_addr(multiaddr.Multiaddr(address))
    sent = 0
    failure = ""
    async with host.run(listen_addrs=[multiaddr.Multiaddr("/ip4/127.0.0.1/tcp/0")]):
        with trio.fail_after(OPEN_DEADLINE_S * 3):
            await host.connect(info)
        muxed: Any = host.get_network().get_connections(info.peer_id)[0].muxed_conn  # yamux's own fields
        payload = os.urandom(junk)
        try:
            for _ in range(count):
                with trio.fail_after(OPEN_DEADLINE_S):
                    await open_raw_stream(muxed, payload)
                sent += 1
        except Exception as exc:  # the node closing the connection is one outcome to report
            failure = repr(exc)[:200]
        print(json.dumps({"opened": sent, "failure": failure, "connection_closed": muxed.is_closed}), flush=True)
        ended = trio.Event()
        token = trio.lowlevel.current_trio_token()

        def read_to_the_end() -> None:
            sys.stdin.read()
            with contextlib.suppress(trio.RunFinishedError):
                trio.from_thread.run_sync(ended.set, trio_token=token)

        threading.Thread(target=read_to_the_end, daemon=True).start()
        with trio.move_on_after(STAY_DEADLINE_S):
            await ended.wait()
        return {"closed_by_node": bool(muxed.is_closed)}


class Flood:
    """A running attacker process: ``opened`` is its first line; ``end`` ends its stdin and returns
    its last line (what the node closed meanwhile)."""

    def __init__(self, address: str, *args: str) -> None:
        self._errors = tempfile.TemporaryFile("w+")  # noqa: SIM115 - closed in end()
        self._proc = subprocess.Popen(
            [sys.executable, "-m", "bench.network.connection_flood", address, *args],
            stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=self._errors, text=True,
            cwd=Path(__file__).resolve().parents[2],
        )  # fmt: skip
        self.opened = self._line("its flood")

    def _line(self, what: str) -> dict[str, Any]:
        assert self._proc.stdout is not None
        line = self._proc.stdout.readline()
        if not line:
            self._proc.wait(timeout=60)
            self._errors.seek(0)
            raise RuntimeError(f"the attacker ended before {what}: {self._errors.read()[-2000:]}")
        result: dict[str, Any] = json.loads(line)
        return result

    def end(self) -> dict[str, Any]:
        try:
            assert self._proc.stdin is not None
            self._proc.stdin.close()
            return self._line("its last line")
        finally:
            try:
                self._proc.wait(timeout=60)
            except subprocess.TimeoutExpired:
                self._proc.kill()
                self._proc.wait()
            if self._proc.stdout is not None:
                self._proc.stdout.close()
            self._errors.close()


def _run(main: Callable[[], Awaitable[dict[str, Any]]], *, trio_native: bool) -> None:
    result = trio.run(main) if trio_native else asyncio.run(main())  # type: ignore[arg-type]
    print(json.dumps(result), flush=True)


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(prog="connection_flood", description=__doc__.splitlines()[0])
    parser.add_argument("address", help="the node's multiaddr, with /p2p/<peer id>")
    what = parser.add_mutually_exclusive_group(required=True)
    what.add_argument("--connections", type=int, help="raw TCP connections to hold")
    what.add_argument("--streams", type=int, help="yamux streams to open on one connection")
    parser.add_argument("--source", default="127.0.0.1", help="the address the TCP connections come from")
    parser.add_argument("--write", type=int, default=0, help="junk bytes written on each stream")
    args = parser.parse_args(argv)
    if args.connections is not None:
        # Each connection is a descriptor here too; a machine's default soft limit is often 1,024.
        _soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
        wanted = args.connections + 64
        if hard == resource.RLIM_INFINITY or hard >= wanted:
            resource.setrlimit(resource.RLIMIT_NOFILE, (wanted, hard))
        _run(lambda: _hold_tcp(args.address, args.connections, args.source), trio_native=False)
    else:
        _run(lambda: _flood_streams(args.address, args.streams, args.write), trio_native=True)


if __name__ == "__main__":
    main()
