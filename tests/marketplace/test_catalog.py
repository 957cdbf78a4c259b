"""`skills list` and `skills bounties` a page at a time, ordered by trust and relevance; the listings
and bounties peers publish are bounded; bounty matching through the index finds what a full scan finds."""

from __future__ import annotations

import random
import time

from crypto.envelope import pack_body, seal_envelope
from crypto.identity import Identity
from marketplace.catalog.bounties import bounties_answered_by, live_bounties, matches
from marketplace.catalog.browse import listings_page
from marketplace.catalog.listings import live_listings
from marketplace.gossip.bounty import BOUNTY, KIND_BOUNTY, SkillBounty, record_bounty
from marketplace.gossip.listing import KIND_SKILL_LISTING, LISTING, SkillListing, record_listing
from marketplace.gossip.received_quota import bounties_bound, enforce_bound, listings_bound
from memory.intake.store import IntakeStore

DAY = 86_400_000
TRUSTED = Identity.from_seed(b"t" * 32)
ME = Identity.from_seed(b"m" * 32).public_key.hex()


def now_ms() -> int:
    return time.time_ns() // 1_000_000


def standing(key: str) -> tuple[int, float]:
    return (2, 0.9) if key == TRUSTED.public_key.hex() else (1, 0.0)


async def publish(
    store: IntakeStore, seller: Identity, skill_id: str, title: str, *, description: str = "",
    tags: tuple[str, ...] = (), category: str = "", at_ms: int | None = None,
) -> None:  # fmt: skip
    listing = SkillListing(skill_id, 1, "ab" * 32, title, description, tags, category, 10_000, "", 3, 3, None)
    envelope = seal_envelope(seller, KIND_SKILL_LISTING, pack_body(LISTING.body(listing)), now_ms=at_ms or now_ms())
    await record_listing(store, listing, envelope)


async def post(store: IntakeStore, author: Identity, bounty: SkillBounty) -> None:
    await record_bounty(
        store, bounty, seal_envelope(author, KIND_BOUNTY, pack_body(BOUNTY.body(bounty)), now_ms=now_ms())
    )


async def test_a_flood_of_strangers_listings_does_not_push_a_trusted_sellers_off_the_first_page(
    store: IntakeStore,
) -> None:
    """Issue 13, finding 4: `skills list` showed the newest 200 listings, so a flood hid the honest ones."""
    await publish(store, TRUSTED, "ops.rotate-logs", "Rotate logs with logrotate")
    for i in range(250):
        await publish(store, Identity.generate(), f"spam.{i}", f"Cheap trick number {i}")

    page = await listings_page(store, standing=standing, me=ME, now_ms=now_ms(), limit=20)

    assert page.total == 251 and len(page.items) == 20
    assert page.items[0].listing.seller == TRUSTED.public_key.hex()


async def test_a_query_keeps_the_matching_listings_most_relevant_first(store: IntakeStore) -> None:
    stranger = Identity.generate()
    await publish(store, stranger, "ops.compress", "Compress old logs", description="gzip what logrotate left")
    await publish(store, stranger, "db.upgrade", "Upgrade Postgres", tags=("db",))
    await publish(store, stranger, "ops.rotate", "Rotate logs", description="rotate logs daily, rotate on size")

    page = await listings_page(store, standing=standing, me=ME, now_ms=now_ms(), query="rotate logs")

    assert [e.listing.stable_skill_id for e in page.items] == ["ops.rotate", "ops.compress"]
    tagged = await listings_page(store, standing=standing, me=ME, now_ms=now_ms(), query="db")
    assert [e.listing.stable_skill_id for e in tagged.items] == ["db.upgrade"]  # tags are searched too


async def test_pages_cover_every_listing_once(store: IntakeStore) -> None:
    start = now_ms()
    for i in range(23):
        await publish(store, Identity.generate(), f"s.{i}", f"skill {i}", at_ms=start + i)
    seen: list[str] = []
    for offset in range(0, 30, 10):
        page = await listings_page(store, standing=standing, me=ME, now_ms=now_ms(), limit=10, offset=offset)
        seen += [e.listing.stable_skill_id for e in page.items]
    assert sorted(seen) == sorted(f"s.{i}" for i in range(23)) and len(seen) == 23


async def test_listings_are_bounded_per_seller_and_in_total_least_trusted_oldest_first(store: IntakeStore) -> None:
    bound = listings_bound(per_seller=3, total=6)
    me = Identity.from_seed(b"m" * 32)
    start = now_ms()
    for i in range(5):
        await publish(store, me, f"mine.{i}", f"my skill {i}", at_ms=start + i)
        assert await enforce_bound(store, bound, ME, standing, ME) == 0  # never counted, never deleted
    await publish(store, TRUSTED, "t.old", "a trusted and old listing", at_ms=start)
    stranger = Identity.generate()
    for i in range(5):
        await publish(store, stranger, f"x.{i}", f"stranger listing {i}", at_ms=start + 10 + i)
        await enforce_bound(store, bound, stranger.public_key.hex(), standing, ME)
    others = [Identity.generate() for _ in range(4)]
    for i, other in enumerate(others):
        await publish(store, other, f"o.{i}", f"another stranger {i}", at_ms=start + 100 + i)
        await enforce_bound(store, bound, other.public_key.hex(), standing, ME)

    kept = {(r.seller, r.stable_skill_id) for r in await live_listings(store)}
    assert {k for k in kept if k[0] == ME} == {(ME, f"mine.{i}") for i in range(5)}
    assert (TRUSTED.public_key.hex(), "t.old") in kept  # the oldest of all, but trusted
    # The stranger kept its newest 3 (its own bound), then lost its oldest two as newer strangers came.
    assert {k[1] for k in kept if k[0] != ME} == {"t.old", "x.4", "o.0", "o.1", "o.2", "o.3"}
    async with store.reader().execute("SELECT count(*) FROM listings_fts WHERE stable_skill_id LIKE 'x.%'") as cur:
        assert await cur.fetchone() == (1,)  # the deleted ones' words left the index with them


async def test_bounties_are_bounded_per_author(store: IntakeStore) -> None:
    author = Identity.generate()
    for i in range(30):
        await post(store, author, SkillBounty(f"b{i}", f"want thing {i}", (), "", 1_000, now_ms() + DAY))
        await enforce_bound(store, bounties_bound(per_author=20, total=2_000), author.public_key.hex(), standing, ME)
    live = await live_bounties(store, now_ms())
    assert len(live) == 20 and {b.bounty_id for b in live} == {f"b{i}" for i in range(10, 30)}


async def test_the_index_finds_exactly_the_bounties_a_full_scan_matches(store: IntakeStore) -> None:
    rng = random.Random(5)
    vocabulary = ["postgres", "upgrade", "kubernetes", "rollout", "logrotate", "backup", "restore", "tls-cert",
                  "nginx", "reload", "cache_warm", "metrics"]  # fmt: skip
    categories = ["", "", "ops", "db", "Net"]
    for i in range(120):
        words = " ".join(rng.sample(vocabulary, rng.randint(1, 4)))
        tags = tuple(rng.sample(vocabulary, rng.randint(0, 2)))
        await post(store, Identity.generate(), SkillBounty(f"b{i}", f"Please {words}", tags, rng.choice(categories),
                                                           rng.randint(1, 10**6), now_ms() + DAY))  # fmt: skip
    every = await live_bounties(store, now_ms())
    for _ in range(60):
        text = " ".join(rng.sample(vocabulary, rng.randint(1, 5)))
        tags = tuple(t.upper() for t in rng.sample(vocabulary, rng.randint(0, 2)))
        category = rng.choice(categories).lower()
        through_index = await bounties_answered_by(store, text=text, tags=tags, category=category,
                                                   now_ms=now_ms(), me=None)  # fmt: skip
        full_scan = [b for b in every if matches(b, text=text, tags=tags, category=category)]
        assert {(b.author, b.bounty_id) for b in through_index} == {(b.author, b.bounty_id) for b in full_scan}
    assert any(matches(b, text="postgres upgrade", tags=(), category="") for b in every)  # the sets are not empty
