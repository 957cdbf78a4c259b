"""Continuous capture against broken and hostile folders (issue 48): a symlink out of the watched
folder, a FIFO, a damaged line, a file longer than the cap, a file truncated and written again."""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest

from memory.capture import watch
from memory.capture.watch import WatchPlan, load_marks, watch_round, watch_summary
from memory.intake.store import IntakeStore
from memory.safe_files import read_bounded
from memory.storage.counts import crystal_total
from tests.memory.test_capture_watch import SESSION, line, settings

SECRET = "aws_secret_access_key = wJalrXUtnFEMI/K7MDENG/bPxRfiCYEXAMPLEKEY"


async def texts(store: IntakeStore) -> list[str]:
    return [c.text async for c in store.iter_live()]


async def test_a_symlink_out_of_the_watched_folder_is_never_followed(store: IntakeStore, tmp_path: Path) -> None:
    """A link to ``~/.aws/credentials`` (or ``/proc/self/environ``) in a watched folder became crystals
    the agent's searches return. Links to a file and to a folder are skipped, and a FIFO is not opened."""
    outside = tmp_path / "home"
    (outside / "project").mkdir(parents=True)
    (outside / "credentials.jsonl").write_text(json.dumps({"speaker": "user", "text": SECRET}) + "\n")
    (outside / "project" / "other.jsonl").write_text(json.dumps({"speaker": "user", "text": SECRET + " 2"}) + "\n")
    watched = tmp_path / "watched"
    watched.mkdir()
    (watched / f"{SESSION}.jsonl").write_text(line("u1", "user", "The wiki moved to wiki.example.test last week."))
    (watched / "credentials.jsonl").symlink_to(outside / "credentials.jsonl")
    (watched / "linked").symlink_to(outside / "project", target_is_directory=True)
    os.mkfifo(watched / "pipe.jsonl")  # a read of it would wait for a writer for ever
    done = await watch_round(store, settings(watched))
    assert (done.files_seen, done.stored, done.new_errors) == (1, 1, [])
    assert not [t for t in await texts(store) if "wJalrXUtnFEMI" in t]
    assert list(await load_marks(store)) == [str(watched / f"{SESSION}.jsonl")]


async def test_a_damaged_line_is_skipped_and_named_and_the_lines_after_it_are_captured(
    store: IntakeStore, tmp_path: Path
) -> None:
    """One damaged line stopped a session for good: the watermark never passed it."""
    session = tmp_path / f"{SESSION}.jsonl"
    session.write_text(
        line("u1", "user", "The release train leaves every second Thursday.")
        + '{"type": "user", "message": {"role": "us\n'  # a line a crash cut, the session went on
        + line("u2", "user", "Hotfixes need two approvals from the platform team.")
    )
    first = await watch_round(store, settings(tmp_path))
    assert (first.new_messages, first.new_errors) == (2, [])
    assert first.skipped_lines == [(str(session), 2)]
    with session.open("a") as handle:
        handle.write("not json at all\n" + line("u3", "user", "The staging cluster is called kestrel."))
    later = await watch_round(store, settings(tmp_path))
    assert (later.new_messages, later.skipped_lines) == (1, [(str(session), 4)])  # numbered in the whole file
    said = " ".join(await texts(store))
    assert all(fact in said for fact in ("second Thursday", "two approvals", "kestrel")), said
    assert (await watch_summary(store))["errors"] == {}


async def test_a_file_of_lines_is_read_at_most_the_cap_at_a_time_from_its_watermark(
    store: IntakeStore, tmp_path: Path
) -> None:
    """The cap was checked against the file's size and the whole file read into memory: a session
    that grew past it was skipped for good. Now at most the cap is read, from the watermark on."""
    said = [line(f"u{i}", "user", f"Fact number {i}: the rack {i} fuse is rated {10 + i} amps.") for i in range(6)]
    cap = len(said[0]) * 2 + 10  # two lines fit, three do not
    capped = WatchPlan(folders=(tmp_path,), max_file_bytes=cap)
    session = tmp_path / f"{SESSION}.jsonl"
    session.write_text(said[0])
    rounds = [await watch_round(store, capped)]
    session.write_text("".join(said))  # the file grows past the cap: five lines after the watermark
    rounds += [await watch_round(store, capped) for _ in range(3)]
    assert [r.new_messages for r in rounds] == [1, 2, 2, 1]  # at most two lines (the cap) a round
    assert all(r.new_errors == [] for r in rounds)
    (mark,) = (await load_marks(store)).values()
    assert (mark.messages, mark.offset) == (6, session.stat().st_size)
    assert (await watch_round(store, capped)).files_read == 0  # all read: nothing to do until it changes
    document = tmp_path / "chat.json"
    document.write_text(json.dumps([{"role": "user", "content": "x" * cap}]))
    refused = await watch_round(store, capped)
    assert refused.new_errors == [(str(document), f"over {cap:,} bytes; skipped")]  # a JSON file is read whole


async def test_a_file_truncated_and_written_again_stores_nothing_twice(store: IntakeStore, tmp_path: Path) -> None:
    """Rotation (copy, truncate, write again): the messages it still holds are not stored twice."""
    session = tmp_path / f"{SESSION}.jsonl"
    old = [
        line("u1", "user", "Door code for the lab is kept in 1Password."),
        line("a1", "assistant", "The spare key hangs in the server room cabinet."),
    ]
    session.write_text("".join(old))
    assert (await watch_round(store, settings(tmp_path))).stored == 2
    session.write_text("")
    await watch_round(store, settings(tmp_path))
    session.write_text("".join(old) + line("u2", "user", "The lab closes at 19:00 on Fridays."))
    again = await watch_round(store, settings(tmp_path))
    assert again.stored == 1 and await crystal_total(store.reader()) == 3


async def test_a_file_the_daemon_may_not_read_is_reported_and_the_others_are_still_captured(
    store: IntakeStore, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A read that failed (permission denied; the tests run as root, so the refusal is injected at
    the read) ended the whole round, every round: the files after it in name order were never read."""
    locked = tmp_path / "a-locked.jsonl"
    locked.write_text(line("u1", "user", "This file belongs to another user."))
    (tmp_path / "b-open.jsonl").write_text(line("u2", "user", "The router admin page is at 192.168.8.1."))
    real = read_bounded

    def refuse_locked(path: Path, limit: int, offset: int = 0, *, one_name: bool = False) -> bytes:
        if path == locked:
            raise PermissionError(13, "Permission denied", str(path))
        return real(path, limit, offset, one_name=one_name)

    monkeypatch.setattr(watch, "read_bounded", refuse_locked)
    done = await watch_round(store, settings(tmp_path))
    assert done.new_errors == [(str(locked), "cannot be read: Permission denied")]
    assert done.stored == 1 and "192.168.8.1" in " ".join(await texts(store))


async def test_a_hard_link_in_the_watched_folder_is_skipped_and_named(store: IntakeStore, tmp_path: Path) -> None:
    """A hard link is a regular file with a second name, and the other name may be outside the
    folder (``~/.aws/credentials``): it was read as a transcript of its own. It is skipped like a
    symlink, and named (``skipped_links``) for the daemon's log."""
    outside = tmp_path / "home"
    outside.mkdir()
    (outside / "credentials.jsonl").write_text(json.dumps({"speaker": "user", "text": SECRET}) + "\n")
    watched = tmp_path / "watched"
    watched.mkdir()
    (watched / f"{SESSION}.jsonl").write_text(line("u1", "user", "The wiki moved to wiki.example.test last week."))
    os.link(outside / "credentials.jsonl", watched / "credentials.jsonl")
    done = await watch_round(store, settings(watched))
    assert (done.files_seen, done.stored) == (1, 1)
    assert [path for path, _ in done.skipped_links] == [str(watched / "credentials.jsonl")]
    assert "hard link" in done.skipped_links[0][1]
    assert not [t for t in await texts(store) if "wJalrXUtnFEMI" in t]


#: Two of the person's turns in a row (u2, u3) join one piece when read together.
FOUR_TURNS = (
    line("u1", "user", "The boiler service is booked with Heatwise for March."),
    line("a1", "assistant", "I added the Heatwise visit to the shared calendar."),
    line("u2", "user", "Marta keeps the spare van keys in the blue drawer."),
    line("u3", "user", "The Porto office switches internet provider in July."),
)


async def test_a_file_rewritten_with_its_turns_and_new_ones_stores_no_turn_in_a_second_crystal(
    store: IntakeStore, tmp_path: Path
) -> None:
    """Found by the soak (issue 48): a session emptied and written again, its turns plus new ones.
    Read as a new conversation, the turns it held were grouped anew ("u2" with the new "u3", both
    the person's), and "u2"'s words were stored in a second crystal beside the first."""
    session = tmp_path / f"{SESSION}.jsonl"
    u1, a1, u2, u3 = FOUR_TURNS
    session.write_text(u1 + a1)
    await watch_round(store, settings(tmp_path))
    with session.open("a") as handle:
        handle.write(u2)
    await watch_round(store, settings(tmp_path))
    session.write_text("")
    await watch_round(store, settings(tmp_path))
    session.write_text(u1 + a1 + u2 + u3)
    await watch_round(store, settings(tmp_path))
    stored = await every_text(store)
    assert [sum("spare van keys" in t for t in stored), sum("Porto office" in t for t in stored)] == [1, 1], stored


async def test_a_file_rewritten_past_its_head_between_two_rounds_is_read_again_and_loses_nothing(
    store: IntakeStore, tmp_path: Path
) -> None:
    """Found by the soak (issue 48): a session rewritten without one of its lines (a damaged one),
    plus new turns, between two rounds. Its first 4 KB were unchanged and it had grown, so the
    watcher read on from its old byte offset, now inside the new turns: the first new turn was lost
    and a bogus damaged line reported."""
    session = tmp_path / f"{SESSION}.jsonl"
    good = [
        line(f"g{i}", "user", f"Kiln batch {i * 7} is stored in shed {i}.")
        if i % 2
        else line(f"g{i}", "assistant", f"Courier parcel {i * 7} went to the Lisbon depot.")
        for i in range(24)
    ]
    session.write_text("".join(good[:20]) + "{not json, a damaged line\n" + "".join(good[20:22]))
    assert session.stat().st_size > watch.HEAD_BYTES
    await watch_round(store, settings(tmp_path))
    session.write_text("".join(good))  # the damaged line gone, two new turns
    again = await watch_round(store, settings(tmp_path))
    stored = await every_text(store)
    assert [sum(f" {i * 7} " in t for t in stored) for i in range(24)] == [1] * 24, stored
    assert again.skipped_lines == []


async def every_text(store: IntakeStore) -> list[str]:
    """Every crystal's text, superseded and archived ones too: a turn stored twice counts either way."""
    async with store.reader().execute("SELECT text FROM crystals") as cursor:
        return [str(row[0]) for row in await cursor.fetchall()]


async def test_a_rewritten_file_renamed_stores_no_turn_twice(store: IntakeStore, tmp_path: Path) -> None:
    """Found by the soak (issue 48): a session rewritten (read on as ``<id>~<head>``), grown, then
    renamed (rotated). Under its new name it was read as session ``<id>`` again, to which the turns
    captured after the rewrite were new: grouped anew ("u2" and "u3", both the person's) they were
    stored a second time."""
    session = tmp_path / f"{SESSION}.jsonl"
    u1, a1, u2, u3 = FOUR_TURNS
    session.write_text(u1 + a1)
    await watch_round(store, settings(tmp_path))
    session.write_text("")
    await watch_round(store, settings(tmp_path))
    session.write_text(u1 + a1 + u2)
    await watch_round(store, settings(tmp_path))
    with session.open("a") as handle:
        handle.write(u3)
    await watch_round(store, settings(tmp_path))
    session.rename(tmp_path / f"{SESSION}.0.jsonl")
    await watch_round(store, settings(tmp_path))
    stored = await every_text(store)
    assert [sum("spare van keys" in t for t in stored), sum("Porto office" in t for t in stored)] == [1, 1], stored


async def test_a_kill_between_storing_and_recording_a_chunk_stores_no_turn_twice(
    store: IntakeStore, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Found building the soak (issue 48): the crystals of a chunk commit before the record of which
    messages they came from. Killed between the two, the daemon read the chunk again after restart
    with the turns written meanwhile, grouped "u2" with the new "u3" and stored "u2" a second time.
    The death is a failpoint here: recording fails once, as if the process ended there."""
    from memory.capture import capture as capture_module

    session = tmp_path / f"{SESSION}.jsonl"
    u1, a1, u2, u3 = FOUR_TURNS
    session.write_text(u1 + a1 + u2)

    async def killed(*_args: object, **_kwargs: object) -> None:
        raise SystemExit("killed between the crystals and their record")

    with monkeypatch.context() as patch:
        patch.setattr(capture_module, "record_captured", killed)
        with pytest.raises(SystemExit):
            await watch_round(store, settings(tmp_path))
    with session.open("a") as handle:
        handle.write(u3)
    await watch_round(store, settings(tmp_path))
    stored = await every_text(store)
    assert [sum("spare van keys" in t for t in stored), sum("Porto office" in t for t in stored)] == [1, 1], stored
    again = await watch_round(store, settings(tmp_path))  # nothing left unrecorded
    assert again.new_messages == 0
