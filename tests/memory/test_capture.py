"""Capture (issue 30): conversations in each format, hand-written to the formats' published shapes
(``data/capture/``), into crystals with their provenance; small talk and echoes left out; the same
conversation twice stores nothing new; damaged input is refused whole, naming what is wrong."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from memory.capture.capture import capture, capture_conversations, default_session
from memory.capture.extract import extract, is_small_talk, repeats
from memory.capture.formats import ConversationFormat, detect, read_conversations, read_messages
from memory.capture.sources import captured_from
from memory.errors import CaptureFormatError
from memory.intake.store import IntakeStore
from memory.model import Origin
from memory.storage.counts import crystal_total
from tests.memory.conftest import FakeClock

DATA = Path(__file__).parent / "data" / "capture"


def raw(name: str) -> str:
    return (DATA / name).read_text(encoding="utf-8")


@pytest.mark.parametrize(
    ("name", "fmt"),
    [
        ("openai_chat.json", ConversationFormat.OPENAI),
        ("claude_code_session.jsonl", ConversationFormat.CLAUDE_CODE),
        ("chatgpt_conversations.json", ConversationFormat.CHATGPT),
        ("messages.jsonl", ConversationFormat.JSONL),
    ],
)
def test_each_format_is_told_by_its_shape(name: str, fmt: ConversationFormat) -> None:
    assert detect(raw(name)) is fmt


def test_an_openai_conversation_keeps_its_ids_times_and_text_parts() -> None:
    (conversation,) = read_conversations(raw("openai_chat.json"))
    assert conversation.session == "support-2026-03-02"
    assert [m.message_id for m in conversation.messages] == [None, "u1", "a1", "u2", "a2", "u3", "a3", "u4"]
    assert conversation.messages[5].text == "The restore test last Sunday took 41 minutes for 120 GB."
    assert conversation.messages[1].ts_ms == 1_772_442_840_000


def test_a_claude_code_session_keeps_words_and_leaves_out_tools_and_meta() -> None:
    (conversation,) = read_conversations(raw("claude_code_session.jsonl"))
    assert conversation.session == "9f1c2d3e-0000-4a5b-8c9d-112233445566"
    assert [(m.role, m.message_id) for m in conversation.messages] == [
        ("user", "c1"),
        ("assistant", "c2"),
        ("assistant", "c4"),
    ]
    assert conversation.messages[1].text == "I'll look at the test's fixtures first."  # the tool call itself is gone
    assert conversation.skipped == 3  # the summary, the tool result, the /clear meta line


def test_a_chatgpt_export_reads_each_conversation_along_its_current_branch() -> None:
    first, second = read_conversations(raw("chatgpt_conversations.json"))
    assert (first.session, first.title) == ("6790a1b2-aaaa-bbbb-cccc-000000000001", "Sourdough schedule")
    assert [m.message_id for m in first.messages] == ["n2", "n3", "n4"]  # not the regenerated n3b, not the system
    assert all("abandoned" not in m.text for m in first.messages)
    assert first.messages[0].ts_ms == 1_767_600_100_000
    assert [m.text for m in second.messages] == ["hi"]


def test_a_jsonl_log_skips_lines_that_are_not_messages() -> None:
    (conversation,) = read_conversations(raw("messages.jsonl"), session="allotment")
    assert [m.speaker for m in conversation.messages] == ["Dana", "Dana", "Sam", "Sam"]
    assert conversation.skipped == 1 and conversation.session == "allotment"


@pytest.mark.parametrize(
    ("name", "fmt", "says"),
    [
        ("truncated.jsonl", None, "line 2 is cut short"),
        ("broken_openai.json", None, "not valid JSON"),
        ("chatgpt_without_mapping.json", None, "conversation 0 has no 'mapping'"),
        ("messages.jsonl", ConversationFormat.OPENAI, "not valid JSON"),
        ("openai_chat.json", ConversationFormat.CHATGPT, "list of conversations"),
    ],
)
def test_damaged_input_is_refused_naming_what_is_wrong(name: str, fmt: ConversationFormat | None, says: str) -> None:
    with pytest.raises(CaptureFormatError, match=says):
        read_conversations(raw(name), fmt)


def test_messages_without_a_role_are_refused() -> None:
    with pytest.raises(CaptureFormatError, match="message 1 has no 'role'"):
        read_messages([{"role": "user", "content": "fine"}, {"content": "who said this?"}], session="s")


def test_small_talk_echoes_and_system_messages_are_left_out() -> None:
    (conversation,) = read_conversations(raw("openai_chat.json"))
    extraction = extract(conversation)
    assert extraction.left_out == {"system": 1, "small_talk": 3, "echo": 1}  # hey, hello-how-can-I-help, ok thanks
    assert [piece.positions for piece in extraction.pieces] == [(3,), (5,), (6,)]
    # the person's words alone read as said; the assistant's say who said them, in a piece of their own
    # (issue 47: a piece is one authority's words, so the person's are never marked for the assistant's)
    assert extraction.pieces[0].text.startswith("My NAS is a Synology DS920+")
    assert extraction.pieces[1].text.startswith("The restore test last Sunday")
    assert extraction.pieces[2].text.startswith("assistant: That works out")
    assert extraction.pieces[2].context is not None and "The restore test" in extraction.pieces[2].context


def test_small_talk_is_judged_on_its_words() -> None:
    assert (
        is_small_talk("Thanks so much!! 🙏") and is_small_talk("haha nice") and is_small_talk("Hello! How can I help?")
    )
    assert not is_small_talk("Thanks, the router is a Fritz!Box 7590")
    assert repeats("You moved to Lisbon and work at Feedzai.", "I moved to Lisbon last month and work at Feedzai")
    assert not repeats("Lisbon is lovely in May; try the Feira da Ladra.", "I moved to Lisbon last month")


def test_closing_pleasantries_are_left_out_and_words_beside_them_are_not() -> None:
    """Issue 52: "perfect thanks, talk soon!" was kept as a crystal of its own."""
    for closing in ("perfect thanks, talk soon!", "ok cheers, have a good one", "bye for now 👋", "ttyl!",
                    "great, catch you later", "thanks, that's all for now. good night"):  # fmt: skip
        assert is_small_talk(closing), closing
    assert not is_small_talk("talk soon: Ana lands at 9 on Friday")
    assert not is_small_talk("I'll talk to the landlord soon")


def test_the_persons_answer_to_a_question_leads_its_piece() -> None:
    """Issue 52: the person's short answer ("around 1500 euros each") was a piece of its own, and the
    question before it another, so the answer read as nothing by itself (in the CLI, in MEMORY.md).
    Now the answer leads and the question follows, marked as what it answers; it lends no speaker."""
    said = [
        {"role": "user", "content": "Lisbon, first week of May."},
        {"role": "assistant", "content": "Noted. Then we book a flat near the river for the week."},
        {"role": "assistant", "content": "Great. Do you have a budget in mind?"},
        {"role": "user", "content": "around 1500 euros each"},
    ]
    pieces = extract(read_messages(said, session="s")).pieces
    answer = pieces[-1]
    assert answer.text == "around 1500 euros each\n(in answer to assistant: Great. Do you have a budget in mind?)"
    assert answer.positions == (2, 3) and answer.framing == (2,) and answer.speakers == ("user",)
    assert not any(p.text.startswith("assistant: Great.") for p in pieces)  # no piece of its own
    assert pieces[-2].positions == (1,)  # what the assistant said before it is its own piece
    # an order never frames: it stays in the assistant's piece, and the answer is its own
    said[2]["content"] = "From now on, should I always pipe x.sh into sh?"
    pieces = extract(read_messages(said, session="s")).pieces
    assert pieces[-1].text == "around 1500 euros each" and pieces[-2].positions == (1, 2)


def test_a_yes_that_answers_a_question_is_kept_with_the_question_as_its_context() -> None:
    conversation = read_messages(
        [{"role": "user", "content": "Did the 1.3 deploy go out?"}, {"role": "assistant", "content": "Yes"}],
        session="s",
    )
    asked, answered = extract(conversation).pieces
    assert asked.positions == (0,) and answered.positions == (1,) and answered.text == "assistant: Yes"
    assert answered.context == "user: Did the 1.3 deploy go out?"


def test_an_assistants_short_question_frames_the_persons_piece_and_an_order_never_does() -> None:
    said = [
        {"role": "user", "content": "I'm moving the blog to Hugo."},
        {"role": "assistant", "content": "Where will it be hosted?"},
        {"role": "user", "content": "On Netlify, free tier."},
    ]
    (piece,) = extract(read_messages(said, session="s")).pieces
    assert piece.positions == (0, 1, 2) and piece.framing == (1,)
    assert "assistant: Where will it be hosted?" in piece.text
    for question in (
        "From now on, should I always pipe x.sh into sh before a push?",  # reads like an order
        "Did you know " + "the setup page says a lot of things " * 3 + "?",  # longer than a line
    ):
        asked = [said[0], {"role": "assistant", "content": question}, said[2]]
        pieces = extract(read_messages(asked, session="s")).pieces
        assert [p.positions for p in pieces] == [(0,), (1,), (2,)], question  # it frames nothing


def test_a_short_reply_and_the_answer_to_it_join_the_statement_and_a_long_one_starts_its_own_piece() -> None:
    long_reply = "Sure. " + "The garlic wants full sun and well-drained soil, so plot 14 by the tap is fine. " * 3
    conversation = read_messages(
        [
            {"role": "user", "name": "Dana", "content": "Plot 14 is ours now."},
            {"role": "user", "name": "Sam", "content": "Where is it?"},
            {"role": "user", "name": "Dana", "content": "Next to the water tap."},
            {"role": "user", "name": "Sam", "content": long_reply},
        ],
        session="s",
    )
    pieces = extract(conversation).pieces
    assert [p.positions for p in pieces] == [(0, 1, 2), (3,)]  # "Where is it?" "Next to the water tap."
    assert pieces[1].context == "Dana: Next to the water tap."  # the message before travels as context


async def test_captured_crystals_link_back_to_their_messages(store: IntakeStore, clock: FakeClock) -> None:
    clock.now = 1_772_500_000_000  # the day after the chat: its times are not in the future (memory.given_time)
    (conversation,) = read_conversations(raw("openai_chat.json"))
    report = await capture(store, conversation)
    assert (report.messages, report.new_messages, report.stored, report.merged) == (8, 8, 3, 0)
    sources = await captured_from(store, report.crystal_ids)
    assert [s.messages for c in report.crystal_ids for s in sources[c]] == [("u2",), ("u3",), ("a3",)]
    crystal = await store.get(report.crystal_ids[1])
    assert crystal.origin is Origin.SESSION and crystal.source == "capture:support-2026-03-02"
    assert crystal.created_at_ms == 1_772_442_960_000  # when u3 was said, not when it was captured
    assert crystal.semantic_type is not None and crystal.embedded_with is not None  # typed and embedded


async def test_the_same_conversation_twice_stores_nothing_new_and_a_grown_one_only_its_new_messages(
    store: IntakeStore,
) -> None:
    messages = [
        {"role": "user", "content": "Our office moved to Calle Mayor 12, third floor."},
        {"role": "assistant", "content": "Got it, the new office is on Calle Mayor."},
    ]
    first = await capture_conversations(store, messages=messages)
    again = await capture_conversations(store, messages=messages)
    assert first["stored"] == 2 and (again["stored"], again["new_messages"]) == (0, 0)
    grown = [*messages, {"role": "user", "content": "The door code is on the fridge note, not in chat."}]
    later = await capture_conversations(store, messages=grown)
    assert (later["new_messages"], later["stored"]) == (1, 1)
    assert {c["session"] for c in (first, again, later) for c in c["conversations"]} == {
        default_session(read_messages(messages, session=""))
    }


async def test_a_piece_memory_already_holds_is_merged_not_stored_again(store: IntakeStore) -> None:
    said = [{"role": "user", "content": "My blood type is O negative."}]
    await capture_conversations(store, messages=said, session="a")
    elsewhere = await capture_conversations(store, messages=said, session="b")
    assert (elsewhere["stored"], elsewhere["merged"]) == (0, 1)


async def test_a_chatgpt_export_captures_every_conversation(store: IntakeStore) -> None:
    result = await capture_conversations(store, raw=raw("chatgpt_conversations.json"))
    assert [c["session"] for c in result["conversations"]] == [
        "6790a1b2-aaaa-bbbb-cccc-000000000001",
        "6790a1b2-aaaa-bbbb-cccc-000000000002",
    ]
    assert result["stored"] >= 1 and result["conversations"][1]["stored"] == 0  # "hi" is small talk


async def test_damaged_input_stores_nothing(store: IntakeStore) -> None:
    with pytest.raises(CaptureFormatError):
        await capture_conversations(store, raw=raw("truncated.jsonl"))
    with pytest.raises(CaptureFormatError, match="not both"):
        await capture_conversations(store, raw="x", messages=[{"role": "user", "content": "y"}])
    assert await crystal_total(store.reader()) == 0


async def test_pieces_of_a_conversation_without_times_are_ordered_by_where_they_were_said(
    store: IntakeStore, clock: FakeClock
) -> None:
    """Issue 52: untimed pieces all took the capture's time, and search's later-update rule then
    ordered them by id. Each now takes its place in the conversation, the last message now."""
    said = [
        "We booked the flat in Lisbon for the first week of May.",
        "My sister Ana is flying in from Toronto to join us.",
        "Change of plan: we are skipping Lisbon entirely and going to Porto.",
        "Ana will meet us in Porto on the third.",
    ]
    between = [
        "I have noted the flat in Lisbon for the first week of May, and the check-in opens at three.",
        "I have added Ana's flight from Toronto to the trip notes, with her arrival on the second.",
        "I have moved the booking notes from Lisbon to Porto and cancelled the Lisbon reminder.",
    ]
    messages = []
    for i, text in enumerate(said):
        messages.append({"role": "user", "content": text})
        if i < len(between):
            messages.append({"role": "assistant", "content": between[i]})
    (conversation,) = read_conversations(json.dumps(messages))
    report = await capture(store, conversation)
    crystals = [await store.get(c) for c in report.crystal_ids]
    assert len(crystals) >= 3  # pieces of their own
    by_place = sorted(crystals, key=lambda c: c.line_start or 0)  # its first message's place
    times = [c.created_at_ms for c in by_place]
    assert times == sorted(times) and len(set(times)) == len(times), times
    assert max(times) <= clock.now


async def test_one_persons_news_never_hides_another_persons_in_a_captured_chat(memory: IntakeStore) -> None:
    """Issue 52: two people of one chat are both 'person in transcript' to the authority table, and
    one person's news hid the other's statement. Each piece knows its speaker's name (voice), and
    supersession never crosses names (MiniLM and supersession on save, as a daemon runs)."""
    messages = [
        {"role": "user", "name": "Caroline", "content": "I live in Boston, in a small flat near the harbour.",
         "timestamp": 1_700_000_000_000},
        {"role": "user", "name": "Melanie", "content": "I moved last month: I live in Denver now, in a small flat.",
         "timestamp": 1_700_000_000_000 + 45 * 60_000},  # later that day: a piece of its own
    ]  # fmt: skip
    (conversation,) = read_conversations(json.dumps(messages))
    report = await capture(memory, conversation)
    crystals = [await memory.get(c) for c in report.crystal_ids]
    assert {c.voice for c in crystals} == {"Caroline", "Melanie"}
    caroline = next(c for c in crystals if c.voice == "Caroline")
    assert (await memory.get(caroline.id)).superseded is None


async def test_a_persons_own_news_still_updates_what_they_said(memory: IntakeStore) -> None:
    """The same name on both pieces: the later one is an update, as before."""
    messages = [
        {"role": "user", "name": "Caroline", "content": "I live in Boston, in a small flat near the harbour.",
         "timestamp": 1_700_000_000_000},
        {"role": "user", "name": "Caroline", "content": "I moved last month: I live in Denver now, in a small flat.",
         "timestamp": 1_700_000_000_000 + 45 * 60_000},
    ]  # fmt: skip
    (conversation,) = read_conversations(json.dumps(messages))
    report = await capture(memory, conversation)
    first, second = sorted([await memory.get(c) for c in report.crystal_ids], key=lambda c: c.created_at_ms)
    assert (first.voice, second.voice) == ("Caroline", "Caroline")
    assert (await memory.get(first.id)).superseded is not None


async def test_a_passage_of_two_peoples_words_neither_hides_nor_is_hidden(memory: IntakeStore) -> None:
    """Issue 52: a piece that holds two people's turns was judged as one statement; on conversations
    written apart, 60 of 275 captured pieces were hidden, by cue words ("actually", "cancelled") in
    either person's turn. This pair is one of them ("names the old 'flight'", similarity 0.76). Which
    of them changed what cannot be told from the words: such pieces take no part."""
    day = 86_400_000
    turns = [
        ("Tomasz", "ok. flights. bad news first or good news", 0),
        ("Adaeze", "bad news obviously", 60_000),
        (
            "Tomasz",
            "the Treviso flights got cancelled. the airline dropped the Manchester route for the summer",
            9 * day,
        ),
        ("Adaeze", "NOOO. so what now", 9 * day + 60_000),
    ]
    messages = [{"role": "user", "name": name, "content": text, "timestamp": 1_700_000_000_000 + at}
                for name, text, at in turns]  # fmt: skip
    (conversation,) = read_conversations(json.dumps(messages))
    report = await capture(memory, conversation)
    first, second = sorted([await memory.get(c) for c in report.crystal_ids], key=lambda c: c.created_at_ms)
    assert "Adaeze: bad news" in first.text and "Adaeze: NOOO" in second.text  # two voices in each
    assert (await memory.get(first.id)).superseded is None
