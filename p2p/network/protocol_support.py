"""Whether a peer speaks a protocol: what its identify said (py-libp2p keeps the list in its peer
store), and whether a failed stream was the peer saying no (multistream-select's "na") rather than a
broken connection. A peer of another kind (a js-libp2p or go-libp2p node without our protocols)
says no to ours; treating that as a stale connection had the node drop and redial it every time it
asked, its gossip mesh included. Imported on the libp2p thread only."""

from __future__ import annotations

from typing import Any

from libp2p.peer.peerstore import PeerStoreError
from libp2p.protocol_muxer.exceptions import MultiselectClientError

#: How py-libp2p 0.8.1's multistream client words a refusal of every protocol offered.
REFUSED = "protocols not supported"


def speaks(host: Any, peer: Any, protocol: str) -> bool:
    """False only when the peer's identify listed its protocols and ``protocol`` is not among them."""
    try:
        known = host.get_peerstore().get_protocols(peer)
    except PeerStoreError:  # not identified yet: it may
        return True
    return not known or protocol in known


def refused_protocol(error: BaseException) -> bool:
    """Whether ``error`` (py-libp2p's ``StreamFailure``, or what caused it) is the peer refusing the
    protocols offered."""
    seen: BaseException | None = error
    while seen is not None:
        if isinstance(seen, MultiselectClientError) and str(seen).startswith(REFUSED):
            return True
        seen = seen.__cause__
    return False
