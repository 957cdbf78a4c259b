"""Every gossip message described once (``ground.wire``): its body parses back to itself, and a map
with a field too many, too few or out of bounds is refused naming the field (issue 29)."""

from __future__ import annotations

from typing import Any

import pytest

from ground.errors import FieldError
from ground.wire import Wire
from memory.model import content_hash
from p2p import messages as m

KEY = bytes(range(32))
HASH = "ab" * 32
EXAMPLES: list[tuple[Wire[Any], object]] = [
    (m.WEATHER, m.Weather(level_milli=800, duration_s=600, reason="drill", issued_ms=1_700_000_000_000, seq=3)),
    (m.REVOCATION, m.SkillRevocation("nginx.rotate", KEY, "it deleted logs")),
    (m.ENDORSEMENT, m.SkillEndorsement(KEY, "nginx.rotate", 2, HASH)),
    (m.ATTESTATION, m.TrustAttestation(((KEY, 900), (bytes(32), 10)))),
    (m.BOUNTY, m.SkillBounty("pg", "Restore a Postgres replica", ("postgres",), "ops", 500_000, 1_800_000_000_000)),
    (
        m.LISTING,
        m.SkillListing(
            "nginx.rotate", 1, HASH, "Rotate logs", "", ("nginx", "logs"), "ops", 10_000, "0x" + "12" * 20, 3, 3, None
        ),
    ),
]


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
    free = m.SkillListing("s", 1, content_hash("Rotate logs: logrotate -f"), "Rotate", "", (), "", 0, "", 0, 0,
                          "Rotate logs: logrotate -f", ("/ip4/127.0.0.1/tcp/4102",))  # fmt: skip
    body = m.skill_listing_body(free)
    assert body["content"] == free.content and body["seller_addrs"] == ["/ip4/127.0.0.1/tcp/4102"]
    assert m.parse_skill_listing(body) == free
    paid = m.skill_listing_body(EXAMPLES[-1][1])  # type: ignore[arg-type]
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
    body = m.skill_listing_body(EXAMPLES[-1][1]) | change  # type: ignore[arg-type]
    with pytest.raises(FieldError, match=message):
        m.parse_skill_listing(body)
