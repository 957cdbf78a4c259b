"""The seed's bounty priority boost (issue 49 part 4): a skill crystallised, stored or bought records the
live bounty it answers and a boost derived from its reward; emerging skills answering one come first;
search lifts a skill that answered one, bounded, and never above the person's own words."""

from __future__ import annotations

import time
from dataclasses import replace

from crypto.envelope import pack_body, seal_envelope
from crypto.identity import Identity
from ground.authority import Speaker
from marketplace.catalog.bounties import answered_bounty
from marketplace.gossip.bounty import BOUNTY, KIND_BOUNTY, SkillBounty, record_bounty
from memory.intake.store import IntakeStore
from memory.model import Bounty, Crystal, NewCrystal, SemanticType, bounty_boost
from memory.retrieval.bounty_rank import with_bounty_boosts
from memory.retrieval.later_first import Scored
from memory.service.caller import Caller
from memory.service.requests import RememberArgs
from memory.service.write import remember
from node.commands.skills_service import crystallise_report, emerging_report
from node.parts.dream_lines import emerging_lines

STRANGER = Identity.from_seed(b"x" * 32)
DAY = 86_400_000


def test_the_boost_grows_with_the_reward_and_a_huge_reward_buys_no_more_than_1_2() -> None:
    assert bounty_boost(0) == 1.0
    assert bounty_boost(1_000_000) == 1.1  # 1 USDC: half the extra
    rewards = [1, 10_000, 100_000, 1_000_000, 10_000_000, 10**12]
    boosts = [bounty_boost(r) for r in rewards]
    assert boosts == sorted(boosts) and len(set(boosts)) == len(boosts)
    assert 1.19 < bounty_boost(10**12) < 1.2  # the largest reward a bounty may name (marketplace.gossip.bounty)
    # Derived, never given: a row cannot carry a boost its reward does not give.
    assert Bounty("b", 10_000_000).priority_boost == bounty_boost(10_000_000)


async def test_search_lifts_a_hit_that_answered_a_bounty_never_above_the_persons_better_hit(
    store: IntakeStore,
) -> None:
    crystal = (await store.remember(NewCrystal("Rotate the nginx logs weekly", speaker=Speaker.AGENT))).crystal
    person = replace(crystal, id="person", speaker=Speaker.PERSON)
    agent = replace(crystal, id="agent", speaker=Speaker.AGENT)
    asked = replace(crystal, id="asked", speaker=Speaker.AGENT, bounty=Bounty("b", 10**12))

    def hit(final: float, rowid: int, c: Crystal) -> Scored:
        return Scored(final, rowid, c, final, 1.0, 1.0)

    ranked = with_bounty_boosts([hit(1.00, 1, person), hit(0.95, 2, agent), hit(0.90, 3, asked)])
    assert [s.crystal.id for s in ranked] == ["person", "asked", "agent"]  # past the agent, not the person
    assert ranked[1].final < ranked[0].final and ranked[1].bounty > 1.0
    # Nothing of the person's above it: the whole boost, and no more.
    alone = with_bounty_boosts([hit(0.95, 2, agent), hit(0.90, 3, asked)])
    assert [s.crystal.id for s in alone] == ["asked", "agent"]
    assert alone[0].final == 0.90 * bounty_boost(10**12)
    # The person's own skill answering a bounty is lifted like any.
    mine = replace(asked, id="mine", speaker=Speaker.PERSON)
    assert [s.crystal.id for s in with_bounty_boosts([hit(0.95, 2, agent), hit(0.90, 3, mine)])] == ["mine", "agent"]


async def _post(store: IntakeStore, bounty_id: str, description: str, reward: int) -> None:
    now = time.time_ns() // 1_000_000
    bounty = SkillBounty(bounty_id, description, (), "", reward, now + DAY)
    await record_bounty(store, bounty, seal_envelope(STRANGER, KIND_BOUNTY, pack_body(BOUNTY.body(bounty)), now_ms=now))


def _variants(group: int, count: int) -> list[str]:
    """``count`` paraphrases of one task (6 words of its own, one extra each): alike under hashing."""
    words = " ".join(f"task{group}word{k}" for k in range(6))
    return [f"{words} extra{group}v{i}" for i in range(count)]


async def practise(store: IntakeStore, group: int, count: int) -> None:
    for text in _variants(group, count):
        await store.remember(NewCrystal(text, semantic_type=SemanticType.TASK_PATTERN, speaker=Speaker.PERSON))


async def test_an_emerging_skill_answering_a_bounty_comes_first_and_its_skill_records_the_bounty(
    store: IntakeStore,
) -> None:
    await practise(store, 1, 5)  # the more confident
    await practise(store, 2, 3)
    before = await emerging_report(store, 10)
    assert [len(s["crystal_ids"]) for s in before["emerging"]] == [5, 3]
    assert all(s["bounty"] is None for s in before["emerging"])

    await _post(store, "wanted", "task2word0 task2word3 please", 5_000_000)
    after = await emerging_report(store, 10)
    first = after["emerging"][0]
    assert len(first["crystal_ids"]) == 3
    assert first["bounty"] == {"bounty_id": "wanted", "reward_micro_usdc": 5_000_000,
                               "priority_boost": bounty_boost(5_000_000)}  # fmt: skip

    done = await crystallise_report(store, first["id"], None, actor="cli")
    assert done["skill"]["bounty"] == first["bounty"]
    assert (await store.get(done["skill"]["id"])).bounty == Bounty("wanted", 5_000_000)


async def test_memory_md_chooses_its_eight_lines_by_confidence_before_a_bounty_orders_them(
    store: IntakeStore,
) -> None:
    for group in range(1, 10):  # nine emerging skills; the ninth, the least confident, has 3 practices
        await practise(store, group, 3 if group == 9 else 4)
    await _post(store, "ninth", "task9word0 task9word1", 10**12)
    await _post(store, "fifth", "task5word0 task5word1", 1)
    lines = await emerging_lines(store)
    assert len(lines) == 8
    assert not any("task9word0" in line for line in lines)  # a stranger's reward brought nothing in
    assert "task5word0" in lines[0]  # and the one answering a bounty leads


async def test_a_skill_stored_by_the_agent_records_the_bounty_it_answers(store: IntakeStore) -> None:
    await _post(store, "pg", "Upgrade Postgres without downtime", 2_000_000)
    agent = Caller("agent", Speaker.AGENT)
    stored = await remember(
        store, RememberArgs(text="Zero-downtime postgres upgrade with pg_upgrade", type=SemanticType.SKILL),
        agent, answered_bounty=answered_bounty,
    )  # fmt: skip
    assert stored["crystal"]["bounty"]["bounty_id"] == "pg"
    fact = await remember(
        store, RememberArgs(text="Postgres upgrade without downtime went well"), agent, answered_bounty=answered_bounty
    )
    assert fact["crystal"]["bounty"] is None  # a memory answers no bounty
