"""What `peers` lists, from the last trust round, without recomputing it."""

from __future__ import annotations

from crypto.identity import Identity
from p2p.host import PeerSnapshot
from p2p.trust.book import TrustBook, TrustLevel
from p2p.trust.floors import NO_FLOORS
from p2p.trust.peer_listing import peer_rows

ME, GOOD, BAD, HEARD_OF = (Identity.generate() for _ in range(4))


def test_connected_peers_first_then_by_trust_and_the_limit_holds() -> None:
    book = TrustBook(me=ME.public_key, management=frozenset(), floors=NO_FLOORS)
    book.record(GOOD.public_key, executions_ok=8)
    book.record(BAD.public_key, invalid=3)
    book.record(HEARD_OF.public_key, executions_ok=1)
    book.compute()
    connected = [PeerSnapshot(BAD.peer_id, ("/ip4/127.0.0.1/tcp/1",), 12.5),
                 PeerSnapshot("12D3KooWnotAKey", (), 0.0, banned_until_ms=99)]  # fmt: skip

    rows = peer_rows(connected, book, lambda key: TrustLevel.PROVISIONAL)

    assert [r["peer_id"] for r in rows] == [BAD.peer_id, GOOD.peer_id, HEARD_OF.peer_id, "12D3KooWnotAKey"]
    bad = rows[0]
    assert bad["connected"] and bad["level"] == "untrusted" and bad["penalty_points"] == 12.5
    assert rows[1]["level"] in ("trusted", "provisional") and rows[1]["combined"] > rows[2]["combined"] > 0
    banned = rows[3]
    assert not banned["connected"] and banned["banned_until_ms"] == 99 and banned["level"] == "provisional"
    assert len(peer_rows(connected, book, lambda key: TrustLevel.PROVISIONAL, limit=2)) == 2
