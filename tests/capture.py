"""What went over the wire in a network namespace, for tests that must show a party learns nothing:
``tcpdump`` captures every packet arriving on the namespace's interfaces, and ``flows`` joins each
TCP or UDP flow's payload bytes in the order captured, so that words cut across two segments are
still found.

Read from the pcap file by hand (its format is four fixed headers deep): Debian's tcpdump writes
``-i any`` as LINUX_SLL2 or, older, LINUX_SLL, and only IPv4 is used by the NAT lab.
"""

from __future__ import annotations

import contextlib
import shutil
import struct
import subprocess
import time
from collections import defaultdict
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

from tests.netns import NatLab

_LINUX_SLL, _LINUX_SLL2 = 113, 276
_OUTGOING = 4  # the SLL packet type of a packet this namespace sends: each routed packet counted once


def unavailable() -> str | None:
    """Why packets cannot be captured here, or None when they can."""
    if shutil.which("tcpdump") is None:
        return "`tcpdump` is not installed (Debian: tcpdump)"
    return None


@dataclass(frozen=True)
class Flow:
    """One direction of one TCP or UDP conversation, as IPv4 addresses and ports."""

    protocol: str  # "tcp" or "udp"
    src: str
    sport: int
    dst: str
    dport: int

    def touches(self, address: str, port: int | None = None) -> bool:
        """Whether either end of the flow is ``address`` (on ``port``, when given)."""
        ends = ((self.src, self.sport), (self.dst, self.dport))
        return any(ip == address and (port is None or p == port) for ip, p in ends)


@contextlib.contextmanager
def capturing(namespace: str, into: Path) -> Iterator[Path]:
    """Every packet arriving in ``namespace`` (all its interfaces, whole packets) written to ``into``
    while the block runs; the file is complete when the block ends."""
    proc = subprocess.Popen(
        [*NatLab.inside(namespace), "tcpdump", "-i", "any", "-s", "0", "-U", "-n", "-w", str(into)],
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
        text=True,
    )
    try:
        deadline = time.monotonic() + 10  # it says "listening on any" once the capture is open
        while not (into.exists() and into.stat().st_size > 0) and time.monotonic() < deadline:
            assert proc.poll() is None, proc.stderr.read() if proc.stderr else "tcpdump ended"
            time.sleep(0.1)
        yield into
    finally:
        proc.terminate()  # SIGTERM: tcpdump flushes and closes the file
        try:
            proc.wait(timeout=10)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait()
        if proc.stderr is not None:
            proc.stderr.close()


def flows(pcap: Path, *, arriving_only: bool = True) -> dict[Flow, bytes]:
    """Each flow's payload bytes, the packets' in the order captured (a retransmission repeats).
    ``arriving_only``: the packets that came in to the namespace, so that one routed through it is
    counted once; else those it sent too (each routed packet twice)."""
    data = pcap.read_bytes()
    magic = data[:4]
    order = "<" if magic in (b"\xd4\xc3\xb2\xa1", b"\x4d\x3c\xb2\xa1") else ">"
    link = struct.unpack(order + "I", data[20:24])[0]
    joined: dict[Flow, bytearray] = defaultdict(bytearray)
    at = 24
    while at + 16 <= len(data):
        caught = struct.unpack(order + "I", data[at + 8 : at + 12])[0]
        packet = data[at + 16 : at + 16 + caught]
        at += 16 + caught
        if link == _LINUX_SLL2:
            kind, ethertype, ip = packet[10], struct.unpack(">H", packet[0:2])[0], packet[20:]
        elif link == _LINUX_SLL:
            kind, ethertype, ip = (
                struct.unpack(">H", packet[0:2])[0],
                struct.unpack(">H", packet[14:16])[0],
                packet[16:],
            )
        else:
            raise AssertionError(f"a capture of link type {link}: expected LINUX_SLL or LINUX_SLL2 (tcpdump -i any)")
        if (arriving_only and kind == _OUTGOING) or ethertype != 0x0800 or len(ip) < 20:
            continue
        header = (ip[0] & 0x0F) * 4
        total = struct.unpack(">H", ip[2:4])[0]
        protocol = ip[9]
        src, dst = ".".join(map(str, ip[12:16])), ".".join(map(str, ip[16:20]))
        segment = ip[header:total]
        if protocol == 6 and len(segment) >= 20:
            name, payload = "tcp", segment[(segment[12] >> 4) * 4 :]
        elif protocol == 17 and len(segment) >= 8:
            name, payload = "udp", segment[8:]
        else:
            continue
        sport, dport = struct.unpack(">HH", segment[0:4])
        joined[Flow(name, src, sport, dst, dport)].extend(payload)
    return {flow: bytes(payload) for flow, payload in joined.items()}
