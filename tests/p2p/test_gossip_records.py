"""Signed peer records in gossip verified once per peer and record (p2p.gossip_records)."""

from __future__ import annotations

import os
from typing import Any

import pytest
from libp2p import new_host
from libp2p.crypto.ed25519 import create_new_key_pair
from libp2p.peer.peerstore import issue_and_cache_local_record
from libp2p.pubsub.pb import rpc_pb2

from p2p import gossip_records


def _host() -> Any:
    return new_host(key_pair=create_new_key_pair(os.urandom(32)))


class Counting:
    """The library's check, counted: how many times a record was really parsed and verified."""

    def __init__(self) -> None:
        self.calls = 0
        self._check = gossip_records.library_consume_record

    def __call__(self, msg: Any, host: Any, peer_id: Any) -> bool:
        self.calls += 1
        return self._check(msg, host, peer_id)


@pytest.fixture
def counting(monkeypatch: pytest.MonkeyPatch) -> Counting:
    counter = Counting()
    monkeypatch.setattr(gossip_records, "library_consume_record", counter)
    return counter


def test_the_same_record_from_the_same_peer_is_verified_once_and_a_changed_one_is_refused(counting: Counting) -> None:
    sender, receiver = _host(), _host()
    record = issue_and_cache_local_record(sender)
    rpc = rpc_pb2.RPC(senderRecord=record)
    assert all(gossip_records.consume_record(rpc, receiver, sender.get_id()) for _ in range(50))
    assert counting.calls == 1

    forged = bytearray(record)
    forged[-1] ^= 1  # the signature's last byte
    assert not gossip_records.consume_record(rpc_pb2.RPC(senderRecord=bytes(forged)), receiver, sender.get_id())
    assert not gossip_records.consume_record(rpc_pb2.RPC(senderRecord=bytes(forged)), receiver, sender.get_id())
    assert counting.calls == 3  # a refused record is checked each time: nothing refused is remembered

    # The same bytes said to come from another peer are that peer's problem: checked, and refused.
    assert not gossip_records.consume_record(rpc, receiver, _host().get_id())
    # Another host in the same process has verified nothing yet.
    assert gossip_records.consume_record(rpc, _host(), sender.get_id())
    assert counting.calls == 5
    assert gossip_records.consume_record(rpc_pb2.RPC(), receiver, sender.get_id())  # no record: as the library


def test_what_a_host_remembers_is_bounded(counting: Counting, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(gossip_records, "MAX_REMEMBERED", 3)
    receiver = _host()
    senders = [_host() for _ in range(5)]
    records = [rpc_pb2.RPC(senderRecord=issue_and_cache_local_record(s)) for s in senders]
    for rpc, sender in zip(records, senders, strict=True):
        assert gossip_records.consume_record(rpc, receiver, sender.get_id())
    assert len(gossip_records._accepted[receiver]) == 3
    assert gossip_records.consume_record(records[0], receiver, senders[0].get_id())  # forgotten: checked again
    assert counting.calls == 6


def test_the_record_to_send_is_reused_for_a_second(monkeypatch: pytest.MonkeyPatch) -> None:
    asked = []

    def library(host: Any) -> tuple[bytes, bool]:
        asked.append(host)
        return b"record", True

    monkeypatch.setattr(gossip_records, "library_record_to_send", library)
    now = [100.0]
    monkeypatch.setattr(gossip_records, "clock", lambda: now[0])
    host = _host()
    assert gossip_records.record_to_send(host) == (b"record", True)
    assert gossip_records.record_to_send(host) == (b"record", False)
    now[0] += gossip_records.RECORD_REUSE_S
    gossip_records.record_to_send(host)
    assert len(asked) == 2
