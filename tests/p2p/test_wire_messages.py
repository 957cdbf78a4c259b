"""Every gossip message described once (``ground.wire``): its body parses back to itself, and a map
with a field too many, too few or out of bounds is refused naming the field (issue 29)."""

from __future__ import annotations

from typing import Any

import pytest

from ground.errors import FieldError
from ground.wire import Wire
from marketplace.gossip import bounty, endorsement, listing, revocation
from marketplace.gossip.kinds import every_kind
from memory.model import content_hash
from p2p import weather
from p2p.trust import attestation

KEY = bytes(range(32))
HASH = "ab" * 32
PAID = listing.SkillListing(
    "nginx.rotate", 1, HASH, "Rotate logs", "", ("nginx", "logs"), "ops", 10_000, "0x" + "12" * 20, 3, 3, None
)
EXAMPLES: list[tuple[Wire[Any], object]] = [
    (
        weather.WEATHER,
        weather.Weather(level_milli=800, duration_s=600, reason="drill", issued_ms=1_700_000_000_000, seq=3),
    ),
    (revocation.REVOCATION, revocation.SkillRevocation("nginx.rotate", KEY, "it deleted logs")),
    (endorsement.ENDORSEMENT, endorsement.SkillEndorsement(KEY, "nginx.rotate", 2, HASH)),
    (attestation.ATTESTATION, attestation.TrustAttestation(((KEY, 900), (bytes(32), 10)))),
    (
        bounty.BOUNTY,
        bounty.SkillBounty("pg", "Restore a Postgres replica", ("postgres",), "ops", 500_000, 1_800_000_000_000),
    ),
    (listing.LISTING, PAID),
]


def test_every_kind_a_node_speaks_has_an_example_here() -> None:
    kinds = every_kind()
    spoken = {id(kinds.kind(name).wire) for topic in kinds.topics for name in kinds.names_on(topic)}  # type: ignore[union-attr]
    assert len(spoken) == 6 and spoken == {id(wire) for wire, _ in EXAMPLES}


@pytest.mark.parametrize(("wire", "message"), EXAMPLES, ids=lambda v: getattr(v, "__name__", type(v).__name__))
def test_a_body_parses_back_to_its_message_and_an_extra_or_missing_field_is_refused(
    wire: Wire[Any], message: object
) -> None:
    body = wire.body(message)
    assert list(body) == [name for name in wire.fields if name in body]  # the description's order
    assert wire.parse(body) == message
    with pytest.raises(FieldError, match="unexpected fields"):
        wire.parse({**body, "extra": 1})
    first = next(iter(body))
    with pytest.raises(FieldError, match=first):
        wire.parse({k: v for k, v in body.items() if k != first})


def test_an_optional_field_travels_only_when_it_holds_something() -> None:
    free = listing.SkillListing("s", 1, content_hash("Rotate logs: logrotate -f"), "Rotate", "", (), "", 0, "", 0, 0,
                          "Rotate logs: logrotate -f", ("/ip4/127.0.0.1/tcp/4102",))  # fmt: skip
    body = listing.LISTING.body(free)
    assert body["content"] == free.content and body["seller_addrs"] == ["/ip4/127.0.0.1/tcp/4102"]
    assert listing.LISTING.parse(body) == free
    paid = listing.LISTING.body(PAID)
    assert "content" not in paid and "seller_addrs" not in paid


@pytest.mark.parametrize(
    ("change", "message"),
    [
        ({"successes": 4}, "'successes' cannot exceed 'executions'"),
        ({"content": "not what the hash says"}, "'content' does not match 'content_hash'"),
        ({"seller_address": "0x12"}, "'seller_address' must be an 0x-prefixed"),
        ({"tags": ["x" * 33]}, "'tags' must be at most 16 strings of 1-32 characters"),
        ({"seller_addrs": ["ip4/1.2.3.4"]}, "'seller_addrs' must be at most 8 strings"),
        ({"version": 0}, r"'version' must be in \[1, 1000000\]"),
    ],
)
def test_a_listing_that_does_not_hold_together_is_refused(change: dict[str, Any], message: str) -> None:
    body = listing.LISTING.body(EXAMPLES[-1][1]) | change  # type: ignore[arg-type]
    with pytest.raises(FieldError, match=message):
        listing.LISTING.parse(body)
