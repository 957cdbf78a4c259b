"""The dream cycle: synthesis into MEMORY.md, pointers, collapse guards, the chat provider, seeding,
scratch notes surviving kill -9."""

from __future__ import annotations

import asyncio
import json
import logging
import os
import re
import signal
import subprocess
import sys
import time
from collections.abc import Iterator
from dataclasses import replace
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

import pytest

from memory.dynamics.consolidation import consolidate
from memory.dynamics.endocrine import Endocrine
from memory.dynamics.hormones import Event
from memory.embedders.hashing import HashingEmbedder
from memory.governance.llm import ChatEndpoint
from memory.graph.provenance import derivation_tree
from memory.intake.store import IntakeStore
from memory.model import Hormones, Lifecycle, NewCrystal, Scope, SemanticType
from memory.retrieval.query import SearchMode, SearchRequest
from memory.retrieval.search import search
from memory.working_memory.dream import DreamReport, dream
from memory.working_memory.memory_md import MARKER, SECTIONS, WorkingMemory, WorkingMemoryFiles
from memory.working_memory.notes import working_memory_note
from memory.working_memory.synthesis import (
    SECTION_CAPS,
    ChatSynthesizer,
    DreamInput,
    ExtractiveSynthesizer,
    Sections,
)
from tests.memory.conftest import DAY, FakeClock, serving

EXTRACTIVE = ExtractiveSynthesizer()
PROJECT = Path(__file__).resolve().parents[2]


@pytest.fixture
def files(tmp_path: Path) -> WorkingMemoryFiles:
    return WorkingMemoryFiles(tmp_path / "workspace")


class Recording:
    """The extractive synthesizer, keeping what each dream gave it."""

    name = "recording"

    def __init__(self) -> None:
        self.seen: list[DreamInput] = []

    async def synthesize(self, dream_input: DreamInput) -> Sections:
        self.seen.append(dream_input)
        return await EXTRACTIVE.synthesize(dream_input)


class ScriptedSynthesizer:
    """A named fake of our own Synthesizer interface: returns the sections it was given."""

    name = "scripted"

    def __init__(self, sections: Sections) -> None:
        self.sections = sections

    async def synthesize(self, dream: DreamInput) -> Sections:
        return self.sections


async def _count(store: IntakeStore) -> int:
    return int((await store.stats())["total"])


async def test_a_dream_writes_the_seven_sections_and_clears_scratch(
    store: IntakeStore, files: WorkingMemoryFiles
) -> None:
    for text, kind in [
        ("Ana prefers answers in Spanish", SemanticType.PREFERENCE),
        ("Ana's sister Lucia lives in Porto", SemanticType.RELATIONSHIP),
        ("The team deploys with Nomad", SemanticType.FACT),
        ("Learn how the billing service computes VAT", SemanticType.GOAL),
        ("Ana takes in short answers best", SemanticType.INSIGHT),
    ]:
        await store.remember(NewCrystal(text, semantic_type=kind))
    pattern = (await store.remember(NewCrystal("Rotate logs weekly", semantic_type=SemanticType.TASK_PATTERN))).crystal
    await store.touch([pattern.id, pattern.id])
    note = await working_memory_note(store, files, "Release 2.3 is blocked on the migration", importance=0.9)
    assert (await search(store, SearchRequest("migration blocked", touch=False)))[0].crystal.id == note.id
    before = await _count(store)

    report = await dream(store, files, EXTRACTIVE)

    assert report.accepted and report.notes_indexed == 1
    assert await _count(store) == before  # the note was already a crystal: not stored twice
    memory = files.load()
    # The design's meanings: Phenotype the agent's self-concept (what it inferred), Bond the person
    # (their directives first), Niche the node in the network (nothing shared yet).
    assert memory.bullets("Phenotype") == ("Ana takes in short answers best",)
    assert memory.bullets("Bond") == ("Ana prefers answers in Spanish", "Ana's sister Lucia lives in Porto")
    assert memory.bullets("Niche") == ()
    assert memory.bullets("Active Context")[0] == "Release 2.3 is blocked on the migration"
    assert "The team deploys with Nomad" in memory.bullets("Active Context")
    assert memory.header.startswith("_Last dream: ") and memory.header.endswith("| Mood: calm_")
    assert memory.bullets("Curiosity Gaps") == ("Learn how the billing service computes VAT",)
    assert memory.bullets("Emerging Skills") == ("Rotate logs weekly",)
    assert [line[3:] for line in files.read_text().splitlines() if line.startswith("## ")] == list(SECTIONS)
    assert files.scratch.read().notes == ()


async def test_faded_topics_become_crystal_pointers(
    store: IntakeStore, files: WorkingMemoryFiles, clock: FakeClock
) -> None:
    await working_memory_note(store, files, "Kitchen renovation quotes arrive Friday", 0.6)
    await dream(store, files, EXTRACTIVE)
    clock.advance(DAY)
    await working_memory_note(store, files, "Passport renewal appointment on the 14th", 0.6)
    renewal = "Passport renewal appointment on the 14th at the police station"
    report = await dream(store, files, ScriptedSynthesizer({"Active Context": (renewal,)}))
    assert report.accepted and report.pointers_added == 1
    (pointer,) = files.load().bullets("Crystal Pointers")
    assert pointer.startswith("Kitchen renovation quotes arrive Friday → memory_search")
    assert "kitchen" in pointer.split("memory_search", 1)[1].lower()
    # A pointer is a directive, not a deletion: the crystal is still there.
    assert (await search(store, SearchRequest("kitchen renovation", touch=False)))[0].crystal.text.startswith("Kitchen")


# A mature state (over 2,000 characters), as the design's mass-drop guard needs.
LASTING = {
    "Bond": tuple(f"Long-standing preference number {i} about how the person likes their work done, " * 2
                  for i in range(8)),
    "Phenotype": tuple(f"Durable lesson number {i} about what works well with this person and in this job"
                       for i in range(8)),
}  # fmt: skip


@pytest.mark.parametrize(
    ("rewrite", "reason"),
    [
        ({name: () for name in SECTIONS}, "empty synthesis"),
        ({"Bond": ("tea",)}, "empty synthesis"),  # under 50 characters of substance
        ({"Bond": ("Prefers tea to coffee in the mornings, with oat milk and no sugar at all",)}, "mass drop"),
        (
            {**LASTING, "Crystal Pointers": tuple(f'Topic {i} → memory_search "topic {i}"' for i in range(21))},
            "eviction runaway",
        ),
    ],
)
async def test_collapse_guards_reject_a_bad_rewrite_and_keep_the_old_state(
    store: IntakeStore,
    files: WorkingMemoryFiles,
    rewrite: Sections,
    reason: str,
    caplog: pytest.LogCaptureFixture,
) -> None:
    files.write(WorkingMemory(sections=LASTING))
    await store.set_meta("working_memory_seeded", "test")
    old_text = files.read_text()
    files.scratch.append("kept until a dream succeeds", 0.5, store.now_ms())
    with caplog.at_level(logging.WARNING, logger="memory.working_memory.dream"):
        report = await dream(store, files, ScriptedSynthesizer(rewrite))
    assert not report.accepted and report.rejected_because is not None and report.rejected_because.startswith(reason)
    assert files.read_text() == old_text
    assert [n.text for n in files.scratch.read().notes] == ["kept until a dream succeeds"]
    assert any(r.getMessage() == "dream.rejected" for r in caplog.records)
    # The note was indexed all the same: rejection never loses it.
    assert await search(store, SearchRequest("kept until a dream succeeds", touch=False))


class ChatServer(ThreadingHTTPServer):
    """Named fake of a hosted or local chat model: speaks /chat/completions; ``mode`` picks a failure."""

    mode = "ok"
    bodies: list[dict[str, object]]


class ChatHandler(BaseHTTPRequestHandler):
    server: ChatServer

    def log_message(self, *args: object) -> None:
        pass

    def do_POST(self) -> None:
        body = json.loads(self.rfile.read(int(self.headers["Content-Length"])))
        self.server.bodies.append(body)
        if self.path != "/v1/chat/completions":
            self.send_response(404)
            self.end_headers()
            return
        mode = self.server.mode
        if mode == "slow":
            time.sleep(1.0)
        if mode == "error":
            self.send_response(500)
            self.end_headers()
            return
        content = "## Phenotype\n- Likes terse answers\n## Active Context\n- Preparing the 2.3 release\n"
        if mode == "insight":  # a model that draws a conclusion from the memories it was shown, citing them
            ids = re.findall(r"\[([0-9a-f]{28})\]", json.dumps(body["messages"]))
            content = (
                "## Phenotype\n- Keeps release dates honest with the team\n## Active Context\n"
                "- The 2.3 migration is two weeks late\n- Release 2.3 moved from May to June\n"
                f"## Insights\n- Releases slip when migrations are late [{ids[0]}, {ids[1]}]\n"
                "- A claim citing nothing it was shown [ffffffffffffffffffffffffffff]\n"
            )
        payload = (
            b"<html>oops</html>"
            if mode == "garbage"
            else json.dumps({"choices": [{"message": {"role": "assistant", "content": content}}]}).encode()
        )
        try:
            self.send_response(200)
            self.send_header("Content-Type", "application/json")
            self.send_header("Content-Length", str(len(payload)))
            self.end_headers()
            self.wfile.write(payload)
        except BrokenPipeError:
            pass  # the client gave up (the slow case)


@pytest.fixture
def chat_server() -> Iterator[ChatServer]:
    server = ChatServer(("127.0.0.1", 0), ChatHandler)
    server.bodies = []
    yield from serving(server)


def _chat(server: ChatServer) -> ChatSynthesizer:
    host, port = server.server_address[:2]
    return ChatSynthesizer(ChatEndpoint(url=f"http://{host!s}:{port}/v1", model="test-model", timeout_s=0.3))


async def test_chat_synthesizer_writes_what_the_model_answered(
    store: IntakeStore, files: WorkingMemoryFiles, chat_server: ChatServer
) -> None:
    await working_memory_note(store, files, "Preparing the 2.3 release", 0.7)
    report = await dream(store, files, _chat(chat_server))
    assert report.accepted and report.synthesizer == "chat"
    memory = files.load()
    assert memory.bullets("Phenotype") == ("Likes terse answers",)
    assert memory.bullets("Active Context") == ("Preparing the 2.3 release",)
    (body,) = chat_server.bodies
    assert body["model"] == "test-model"
    assert "Preparing the 2.3 release" in json.dumps(body["messages"])


async def test_a_chat_dream_stores_insights_with_provenance_to_their_sources(
    store: IntakeStore, files: WorkingMemoryFiles, chat_server: ChatServer
) -> None:
    late = await working_memory_note(store, files, "The 2.3 migration is two weeks late", 0.7)
    slip = await working_memory_note(store, files, "Release 2.3 moved from May to June", 0.7)
    chat_server.mode = "insight"
    report = await dream(store, files, _chat(chat_server))
    assert report.accepted and report.insights == 1  # the one citing nothing it was shown is dropped
    asked = SearchRequest("releases slip migrations late", types=frozenset({SemanticType.INSIGHT}), touch=False)
    hits = await search(store, asked)
    insight = hits[0].crystal
    assert (insight.text, insight.origin.value, insight.epistemic_layer.value) == (
        "Releases slip when migrations are late", "dream", "mental_model",
    )  # fmt: skip
    tree = await derivation_tree(store, insight.id)
    assert {p.crystal_id for p in tree.parents} == {late.id, slip.id}
    assert "Insights" in json.dumps(chat_server.bodies[0]["messages"])  # the prompt asked for them


@pytest.mark.parametrize("mode", ["slow", "garbage", "error"])
async def test_a_failing_chat_endpoint_keeps_the_old_memory_and_logs(
    store: IntakeStore,
    files: WorkingMemoryFiles,
    chat_server: ChatServer,
    mode: str,
    caplog: pytest.LogCaptureFixture,
) -> None:
    await working_memory_note(store, files, "First note", 0.5)
    assert (await dream(store, files, EXTRACTIVE)).accepted
    old_text = files.read_text()
    await working_memory_note(store, files, "Second note", 0.5)
    chat_server.mode = mode
    with caplog.at_level(logging.WARNING, logger="memory.working_memory.dream"):
        report = await dream(store, files, _chat(chat_server))
    assert not report.accepted
    assert report.rejected_because is not None and report.rejected_because.startswith("synthesis failed")
    assert files.read_text() == old_text
    assert [n.text for n in files.scratch.read().notes] == ["Second note"]
    assert [r for r in caplog.records if r.getMessage() == "dream.rejected"]


async def test_first_activation_seeds_a_hand_written_memory_once(store: IntakeStore, files: WorkingMemoryFiles) -> None:
    files.workspace.mkdir(parents=True)
    words = " ".join(f"word{i}" for i in range(1_000))
    hand_written = f"# My own memory\n\nI keep my notes here.\n\n{words}\n"
    files.memory_md.write_text(hand_written)
    report = await dream(store, files, EXTRACTIVE)
    assert report.accepted and report.seeded_chunks == 3
    backups = list(files.workspace.glob("MEMORY.md.before-bitterbot-*"))
    assert len(backups) == 1 and backups[0].read_text() == hand_written
    text = files.read_text()
    assert text.startswith(hand_written.rstrip()) and text.index(MARKER) > len(hand_written.rstrip())
    stats = await store.stats()
    assert stats["by_lifecycle"] == {"consolidated": 3}
    hits = await search(store, SearchRequest("word500", mode=SearchMode.KEYWORD))
    assert hits and hits[0].crystal.lifecycle is Lifecycle.CONSOLIDATED
    again = await dream(store, files, EXTRACTIVE)
    assert again.seeded_chunks == 0 and (await store.stats())["total"] == 3
    assert files.read_text().startswith(hand_written.rstrip())
    assert len(list(files.workspace.glob("MEMORY.md.before-bitterbot-*"))) == 1


async def test_a_high_hormone_writes_its_own_scratch_note(store: IntakeStore, files: WorkingMemoryFiles) -> None:
    endocrine = await Endocrine.attach(store)
    await endocrine.observe([Event.URGENCY, Event.URGENCY])  # cortisol 0.02 + 2 x 0.4 = 0.82
    report = await dream(store, files, EXTRACTIVE, hormones=endocrine)
    assert len(report.auto_notes) == 1 and report.auto_notes[0].startswith("cortisol was high (0.82)")
    assert any(b.startswith("cortisol was high") for b in files.load().bullets("Active Context"))


async def test_a_level_that_stays_high_is_noted_once_not_at_every_dream(
    store: IntakeStore, files: WorkingMemoryFiles
) -> None:
    """Issue 28: a level high for several dreams wrote a note at each, and 4 of 5 Active Context bullets
    read "dopamine was high"."""
    endocrine = await Endocrine.attach(store)
    await endocrine.observe([Event.URGENCY, Event.URGENCY])
    first = await dream(store, files, EXTRACTIVE, hormones=endocrine)
    files.scratch.append("Shipped the billing page", 0.8, store.now_ms())
    second = await dream(store, files, EXTRACTIVE, hormones=endocrine)
    assert len(first.auto_notes) == 1 and second.auto_notes == ()
    bullets = files.load().bullets("Active Context")
    assert sum(b.startswith("cortisol was high") for b in bullets) == 1
    assert any("Shipped the billing page" in b for b in bullets)


async def test_due_replays_are_dreamt_and_move_to_the_next_interval(
    store: IntakeStore, files: WorkingMemoryFiles, clock: FakeClock
) -> None:
    crystal = (await store.remember(NewCrystal("The boiler needs a service every autumn"))).crystal
    await store.touch([crystal.id] * 12)
    assert (await consolidate(store, levels=Hormones())).promoted == 1
    clock.advance(DAY)
    report = await dream(store, files, EXTRACTIVE)
    assert report.replayed == 1
    assert (await store.get(crystal.id)).dream_count == 1
    async with store.reader().execute("SELECT stage, due_ms FROM replay_queue") as cursor:
        assert [tuple(r) for r in await cursor.fetchall()] == [(1, clock.now + 3 * DAY)]


NOTE_THEN_HANG = """
import asyncio, sys, time
from pathlib import Path
from memory.working_memory.notes import working_memory_note
from memory.embedders.hashing import HashingEmbedder
from memory.intake.store import IntakeStore
from memory.working_memory.memory_md import WorkingMemoryFiles

async def main() -> None:
    root = Path(sys.argv[1])
    store = await IntakeStore.open(root / "m.db", HashingEmbedder())
    await working_memory_note(store, WorkingMemoryFiles(root / "ws"), "The spare key is under the blue pot", 0.9)
    print("noted", flush=True)
    time.sleep(60)

asyncio.run(main())
"""


def _note_then_kill_9(root: Path, project: Path) -> None:
    child = subprocess.Popen(
        [sys.executable, "-c", NOTE_THEN_HANG, str(root)], stdout=subprocess.PIPE, text=True, cwd=project
    )
    try:
        assert child.stdout is not None and child.stdout.readline().strip() == "noted"
    finally:
        os.kill(child.pid, signal.SIGKILL)
        child.wait(timeout=10)


@pytest.mark.slow
async def test_scratch_notes_survive_kill_9_between_note_and_dream(tmp_path: Path) -> None:
    await asyncio.to_thread(_note_then_kill_9, tmp_path, PROJECT)
    store = await IntakeStore.open(tmp_path / "m.db", HashingEmbedder())
    try:
        files = WorkingMemoryFiles(tmp_path / "ws")
        report: DreamReport = await dream(store, files, EXTRACTIVE)
        assert report.accepted and report.notes_indexed == 1
        assert "The spare key is under the blue pot" in files.load().bullets("Active Context")
        assert (await search(store, SearchRequest("spare key blue pot", touch=False)))[0].crystal.text == (
            "The spare key is under the blue pot"
        )
        assert (await store.stats())["total"] == 1
    finally:
        await store.close()


async def test_the_market_line_in_niche_is_replaced_not_piled_up(
    store: IntakeStore, files: WorkingMemoryFiles, clock: FakeClock
) -> None:
    offered = NewCrystal("Rotate nginx logs without downtime: logrotate -f", semantic_type=SemanticType.SKILL)
    await store.remember(replace(offered, scope=Scope.SHARED))
    await dream(store, files, EXTRACTIVE, world=("Marketplace: earned 0.01 USDC from 1 sales to 1 buyers",))
    clock.advance(DAY)
    await dream(store, files, EXTRACTIVE, world=("Marketplace: earned 0.03 USDC from 2 sales to 2 buyers",))
    niche = files.load().bullets("Niche")
    assert niche[0] == "Marketplace: earned 0.03 USDC from 2 sales to 2 buyers"
    assert not any("0.01 USDC" in line for line in niche)
    assert "Rotate nginx logs without downtime: logrotate -f" in niche  # a skill it offers the network


async def test_a_secret_noted_in_scratch_never_reaches_memory_md_or_a_prompt(
    store: IntakeStore, files: WorkingMemoryFiles
) -> None:
    recording = Recording()
    files.scratch.append("The deploy password is hunter2-Xk9!", 0.9, store.now_ms())
    files.scratch.append("Deploys happen on Thursdays", 0.6, store.now_ms())
    report = await dream(store, files, recording)
    assert report.accepted and report.notes_indexed == 2
    assert "hunter2" not in files.read_text() and "Deploys happen on Thursdays" in files.read_text()
    assert [n.text for n in recording.seen[0].notes] == ["Deploys happen on Thursdays"]
    hits = await search(store, SearchRequest("deploy password", mode=SearchMode.KEYWORD, touch=False))
    assert hits and hits[0].crystal.sensitivity.value == "confidential"  # kept, as a confidential crystal


@pytest.mark.parametrize(
    "secret",
    [
        "the staging db pw is hunter2",  # issue 27: classified normal and dreamed into MEMORY.md
        "Front door keypad: 1 9 8 4",
        "Rent goes to IBAN DE89 3704 0044 0532 0130 00",
        "Tr0ub4dor&3 gets you into the NAS",
    ],
)
async def test_a_reworded_secret_never_reaches_memory_md_from_a_crystal_or_a_note(
    store: IntakeStore, files: WorkingMemoryFiles, secret: str
) -> None:
    recording = Recording()
    await store.remember(NewCrystal(secret, semantic_type=SemanticType.FACT, importance=0.95))
    files.scratch.append(secret, 0.95, store.now_ms())
    files.scratch.append("Deploys happen on Thursdays", 0.6, store.now_ms())
    report = await dream(store, files, recording)
    assert report.accepted
    written = files.read_text()
    assert secret not in written and "Deploys happen on Thursdays" in written
    given = recording.seen[0]
    offered = [n.text for n in given.notes] + [
        c.text
        for group in (given.new_crystals, given.profile, given.bonds, given.niche, given.replayed, given.curiosity)
        for c in group
    ]
    assert secret not in offered


async def test_active_context_carries_over_three_sessions_then_becomes_a_pointer(
    store: IntakeStore, files: WorkingMemoryFiles, clock: FakeClock
) -> None:
    await working_memory_note(store, files, "User's name is Douglas, deadline Friday", importance=0.8)
    await dream(store, files, EXTRACTIVE)
    for session in range(3):  # three more sessions, each with something new
        clock.advance(DAY)
        await working_memory_note(store, files, f"Session {session}: reviewed the quarterly budget numbers", 0.5)
        report = await dream(store, files, EXTRACTIVE)
        active = files.load().bullets("Active Context")
        if session < 2:  # the session it was noted in and the two after it
            assert "User's name is Douglas, deadline Friday" in active, session
    assert "User's name is Douglas, deadline Friday" not in active
    assert report.pointers_added == 1
    assert files.load().bullets("Crystal Pointers")[0].startswith("User's name is Douglas, deadline Friday →")


async def test_a_full_active_context_lets_the_least_important_go_first(
    store: IntakeStore, files: WorkingMemoryFiles
) -> None:
    await working_memory_note(store, files, "The landlord's number is in the blue folder", importance=0.9)
    for i in range(14):
        await working_memory_note(store, files, f"Minor detail number {i} about the garden shed", importance=0.2)
    await dream(store, files, EXTRACTIVE)
    active = files.load().bullets("Active Context")
    assert len(active) == SECTION_CAPS["Active Context"]
    assert active[0] == "The landlord's number is in the blue folder"


async def test_a_dream_with_nothing_new_changes_nothing(
    store: IntakeStore, files: WorkingMemoryFiles, clock: FakeClock
) -> None:
    await working_memory_note(store, files, "The plumber comes on Tuesday morning at nine", importance=0.6)
    assert (await dream(store, files, EXTRACTIVE)).accepted
    before = files.memory_md.read_bytes()
    clock.advance(3 * DAY)
    report = await dream(store, files, EXTRACTIVE)
    assert report.accepted and files.memory_md.read_bytes() == before  # not even the header's time


async def test_the_header_names_the_last_dream_and_the_mood(store: IntakeStore, files: WorkingMemoryFiles) -> None:
    endocrine = await Endocrine.attach(store)
    await endocrine.observe([Event.ACHIEVEMENT])  # dopamine 0.55, oxytocin 0.30
    await working_memory_note(store, files, "We shipped the new onboarding flow today, finally", 0.7)
    await dream(store, files, EXTRACTIVE, hormones=endocrine)
    header = files.load().header
    # The note itself says "shipped": a second achievement; oxytocin is past 0.4 too.
    assert header == "_Last dream: 2026-01-01T00:00:00Z | Mood: motivated, socially engaged_"
    assert files.read_text().splitlines()[4:6] == ["# Working Memory State", header]


async def test_a_line_another_node_wrote_is_marked_in_memory_md_and_in_the_dream_prompt(
    store: IntakeStore, files: WorkingMemoryFiles, chat_server: ChatServer
) -> None:
    """Issue 27: MEMORY.md and the chat dream prompt carried no marking of peer-origin lines, so a
    skill another node wrote read like the agent's own knowledge."""
    from memory.model import Origin

    text = "Rotate nginx logs without downtime: logrotate -f, then nginx -s reopen"
    await store.remember(NewCrystal(text, semantic_type=SemanticType.SKILL, origin=Origin.PEER,
                                    source="peer:" + "ab" * 32, scope=Scope.SHARED))  # fmt: skip
    await dream(store, files, ExtractiveSynthesizer())
    memory_md = files.read_text()
    assert f"[from another node] {text}" in memory_md
    assert f"- {text}" not in memory_md  # never unmarked
    await dream(store, files, _chat(chat_server))
    assert f"[from another node] {text}" in json.dumps(chat_server.bodies[-1]["messages"])
