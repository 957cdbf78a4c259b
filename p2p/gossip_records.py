"""Signed peer records in gossip: each peer's verified once, not on every message it sends.

py-libp2p 0.8.1 attaches the sender's signed peer record to every gossip RPC, and a receiver checks
it twice per RPC (in ``Pubsub``'s reader and again in ``GossipSub.handle_rpc``), each time parsing
the record, verifying its Ed25519 signature and storing its addresses, before it even knows whether
the message is one it has seen. A message reaches a node from each of its mesh peers, so a node
verified some eight signatures per new message for the records alone, beside the message's own
signature and its envelope's. On the sending side, every RPC rebuilt the host's address list to
compare it with the record it had cached.

``install`` replaces the two functions the library's pubsub modules call with these:

- ``consume_record``: a record whose exact bytes this host already accepted from that peer is the
  same record, signature and addresses: it is accepted without being parsed and verified again.
  Different bytes (a new record, or anything forged) go through the library's own check as before.
- ``record_to_send``: the library's answer, reused for ``RECORD_REUSE_S``, since listen addresses
  change seldom (a new record then follows at most that much later).

Per host, so hosts sharing a process (tests, benchmarks) never share what one of them accepted; the
accepted pairs are bounded (``MAX_REMEMBERED`` per host, least recently used out). Imported only on
the libp2p thread, where the library is loaded (``p2p.host``).
"""

from __future__ import annotations

import time
import weakref
from collections import OrderedDict
from typing import Any

import libp2p.pubsub.gossipsub as gossipsub_module
import libp2p.pubsub.pubsub as pubsub_module
from libp2p.peer import peerstore as peerstore_module
from libp2p.pubsub import utils as pubsub_utils

MAX_REMEMBERED = 1024
RECORD_REUSE_S = 1.0
clock = time.monotonic
#: The library's own functions, which these wrap.
library_consume_record = pubsub_utils.maybe_consume_signed_record
library_record_to_send = peerstore_module.env_to_send_in_RPC

_accepted: weakref.WeakKeyDictionary[Any, OrderedDict[tuple[bytes, bytes], None]] = weakref.WeakKeyDictionary()
_to_send: weakref.WeakKeyDictionary[Any, tuple[float, tuple[bytes, bool]]] = weakref.WeakKeyDictionary()


def consume_record(msg: Any, host: Any, peer_id: Any) -> bool:
    """``maybe_consume_signed_record``, once per (peer, record bytes) for each host."""
    if not msg.HasField("senderRecord"):
        return True
    key = (peer_id.to_bytes(), bytes(msg.senderRecord))
    seen = _accepted.setdefault(host, OrderedDict())
    if key in seen:
        seen.move_to_end(key)
        return True
    if not library_consume_record(msg, host, peer_id):
        return False
    seen[key] = None
    if len(seen) > MAX_REMEMBERED:
        seen.popitem(last=False)
    return True


def record_to_send(host: Any) -> tuple[bytes, bool]:
    """``env_to_send_in_RPC``, asked of the library at most once per ``RECORD_REUSE_S`` per host."""
    now = clock()
    kept = _to_send.get(host)
    if kept is not None and now - kept[0] < RECORD_REUSE_S:
        return kept[1][0], False
    answer = library_record_to_send(host)
    _to_send[host] = (now, answer)
    return answer


def install() -> None:
    """Point the library's pubsub modules at the functions above (idempotent)."""
    for module in (pubsub_module, gossipsub_module):
        module.maybe_consume_signed_record = consume_record  # type: ignore[attr-defined]
        module.env_to_send_in_RPC = record_to_send  # type: ignore[attr-defined]
