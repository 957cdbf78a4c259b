"""Continuous capture (issue 30): a watched folder's transcripts are captured as they are written,
with a watermark per file that survives a restart; a half-written line waits, a rewritten or
truncated file is read again, and a file that cannot be read is reported once."""

from __future__ import annotations

import json
import os
from pathlib import Path

from memory.capture.sources import captured_from
from memory.capture.watch import WatchPlan, load_marks, watch_round, watch_summary
from memory.embedders.hashing import HashingEmbedder
from memory.intake.store import IntakeStore
from memory.storage.counts import crystal_total

SESSION = "5d0c7e2a-1111-4c4c-9d9d-aabbccddeeff"


def line(uuid: str, role: str, text: str) -> str:
    entry = {"type": role, "sessionId": SESSION, "uuid": uuid, "timestamp": "2026-05-04T10:00:00Z",
             "message": {"role": role, "content": text}}  # fmt: skip
    return json.dumps(entry) + "\n"


def settings(folder: Path) -> WatchPlan:
    return WatchPlan(folders=(folder,))


async def test_new_lines_are_captured_as_they_are_written_and_a_half_line_waits(
    store: IntakeStore, tmp_path: Path
) -> None:
    session = tmp_path / "projects" / "payments" / f"{SESSION}.jsonl"
    session.parent.mkdir(parents=True)
    first = line("u1", "user", "The payments service deploys from the release/2026.05 branch.")
    session.write_text(first + line("a1", "assistant", "Understood.")[:40])  # the second is half-written
    done = await watch_round(store, settings(tmp_path / "projects"))
    assert (done.files_read, done.new_messages, done.stored) == (1, 1, 1)
    with session.open("a") as handle:
        handle.write(line("a1", "assistant", "Understood.")[40:])
        handle.write(line("u2", "user", "Its database is Postgres 16 on pay-db-3."))
    later = await watch_round(store, settings(tmp_path / "projects"))
    assert later.new_messages == 2 and later.stored == 1  # "Understood." is small talk
    (mark,) = (await load_marks(store)).values()
    assert (mark.session, mark.messages, mark.offset) == (SESSION, 3, session.stat().st_size)
    assert (await watch_round(store, settings(tmp_path / "projects"))).files_read == 0  # nothing changed


async def test_the_watermark_survives_a_restart(tmp_path: Path) -> None:
    folder = tmp_path / "logs"
    folder.mkdir()
    log = folder / "chat.jsonl"
    log.write_text(
        json.dumps({"speaker": "Ines", "text": "The boiler service is booked for 12 June.", "id": "i1"}) + "\n"
    )
    store = await IntakeStore.open(tmp_path / "memory.db", HashingEmbedder())
    try:
        assert (await watch_round(store, settings(folder))).stored == 1
    finally:
        await store.close()
    with log.open("a") as handle:
        handle.write(json.dumps({"speaker": "Ines", "text": "The plumber is Jordi, 600 123 456.", "id": "i2"}) + "\n")
    store = await IntakeStore.open(tmp_path / "memory.db", HashingEmbedder())  # the daemon restarted
    try:
        again = await watch_round(store, settings(folder))
        assert (again.new_messages, again.stored) == (1, 1)
        assert await crystal_total(store.reader()) == 2
    finally:
        await store.close()


async def test_a_rewritten_or_truncated_file_is_read_again_without_storing_twice(
    store: IntakeStore, tmp_path: Path
) -> None:
    log = tmp_path / "chat.jsonl"
    said = [{"speaker": "Ana", "text": "Our wifi password rotates every quarter.", "id": "x1"},
            {"speaker": "Ana", "text": "The printer on floor 2 is a Brother HL-L2350.", "id": "x2"}]  # fmt: skip
    log.write_text("".join(json.dumps(d) + "\n" for d in said))
    assert (await watch_round(store, settings(tmp_path))).stored == 1  # one piece: Ana going on
    log.write_text(json.dumps({"speaker": "Ana", "text": "Standup moved to 9:30.", "id": "y1"}) + "\n")  # shorter
    rewritten = await watch_round(store, settings(tmp_path))
    assert (rewritten.new_messages, rewritten.stored) == (1, 1)
    (mark,) = (await load_marks(store)).values()
    assert mark.messages == 1 and mark.offset == log.stat().st_size


async def test_a_file_that_cannot_be_read_is_reported_once_and_skipped_until_it_changes(
    store: IntakeStore, tmp_path: Path
) -> None:
    broken = tmp_path / "export.json"
    broken.write_text('[{"role": "user", "content": "never closed"')
    old = broken.stat().st_mtime_ns - 60_000_000_000
    os.utime(broken, ns=(old, old))  # written a minute ago: not still being written
    first = await watch_round(store, settings(tmp_path))
    assert [path for path, _ in first.new_errors] == [str(broken)] and "not valid JSON" in first.new_errors[0][1]
    assert (await watch_round(store, settings(tmp_path))).new_errors == []  # reported once
    summary = await watch_summary(store)
    assert summary["errors"] == {str(broken): first.new_errors[0][1]}
    broken.write_text('[{"role": "user", "content": "The VPN endpoint is vpn.example.test", "id": "z1"}]')
    fixed = await watch_round(store, settings(tmp_path))
    assert fixed.stored == 1 and (await watch_summary(store))["errors"] == {}


async def test_captured_lines_link_back_to_the_session_and_message_ids(store: IntakeStore, tmp_path: Path) -> None:
    session = tmp_path / f"{SESSION}.jsonl"
    session.write_text(line("u9", "user", "Feature flags live in LaunchDarkly, project payments-prod."))
    await watch_round(store, settings(tmp_path))
    async with store.reader().execute("SELECT crystal_id FROM captured_messages WHERE crystal_id IS NOT NULL") as c:
        (crystal_id,) = [str(r[0]) for r in await c.fetchall()]
    ((where,),) = (await captured_from(store, [crystal_id])).values()
    assert (where.session, where.messages) == (SESSION, ("u9",))


async def test_a_deleted_file_keeps_no_watermark_and_what_it_gave_stays(store: IntakeStore, tmp_path: Path) -> None:
    """Issue 30: a transcript deleted since stayed counted in `status` for ever."""
    log = tmp_path / "old.jsonl"
    log.write_text(json.dumps({"speaker": "Ana", "text": "The boiler code is in the blue folder.", "id": "d1"}) + "\n")
    assert (await watch_round(store, settings(tmp_path))).stored == 1
    assert (await watch_summary(store))["files"] == 1
    log.unlink()
    gone = await watch_round(store, settings(tmp_path))
    assert gone.forgotten == 1 and (await watch_summary(store))["files"] == 0
    assert [c.text async for c in store.iter_live()] == ["Ana: The boiler code is in the blue folder."]
    log.write_text(json.dumps({"speaker": "Ana", "text": "The boiler code is in the blue folder.", "id": "d1"}) + "\n")
    back = await watch_round(store, settings(tmp_path))
    assert back.stored == 0  # the same file back: read again, nothing stored twice
