"""Through whom a peer behind a NAT may be reached (p2p.network.relay.RelayBook): the peers that said
they are connected to it, bounded whatever the answers say (issue 31)."""

from __future__ import annotations

from hypothesis import given
from hypothesis import strategies as st

from p2p.network.relay import RelayBook


def test_the_latest_teller_comes_first_and_a_teller_is_not_its_own_relay() -> None:
    book = RelayBook()
    book.note("hub", ["seller", "hub"])
    book.note("relay", ["seller"])
    book.note("hub", ["seller"])
    assert book.relays_for("seller") == ["hub", "relay"]
    assert book.relays_for("hub") == [] and book.relays_for("stranger") == []


@given(st.lists(st.tuples(st.text(min_size=1, max_size=3), st.lists(st.text(min_size=1, max_size=3), max_size=40)),
                max_size=60))  # fmt: skip
def test_any_answers_keep_the_book_within_its_bounds(answers: list[tuple[str, list[str]]]) -> None:
    book = RelayBook(peers=10, per_peer=3)
    for relay, peers in answers:
        book.note(relay, peers)
    assert len(book) <= 10
    for peer in book.latest(100):
        relays = book.relays_for(peer)
        assert 1 <= len(relays) <= 3 and len(set(relays)) == len(relays) and peer not in relays
    if answers and (last := [p for p in answers[-1][1] if p != answers[-1][0]]):
        assert book.relays_for(last[-1])[0] == answers[-1][0]  # the latest answer is never forgotten
