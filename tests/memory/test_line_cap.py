"""A per-line cap for JSONL inputs (issue 48): one gigantic line in a watched transcript, a JSONL
import or an export being restored is read past in blocks, never held whole; it is skipped and
counted like a damaged line, and the lines around it are still taken."""

from __future__ import annotations

import json
import tracemalloc
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from memory.capture.watch import WatchPlan, watch_round
from memory.importer import crystals_from_file, find_sources
from memory.intake.store import IntakeStore
from memory.model import NewCrystal
from memory.transfer.restore import restore_export
from tests.memory.test_capture_watch import SESSION, line
from tests.memory.test_transfer import TRUSTED, _exported

GIANT = 24_000_000  # bytes of one line
CAP = 1_000_000  # the line cap the tests set
PEAK = 8_000_000  # the most memory a read may take: well under the giant line


def _giant_line() -> str:
    return json.dumps({"type": "user", "sessionId": SESSION, "uuid": "big", "message": {"role": "user",
                       "content": "x" * GIANT}}) + "\n"  # fmt: skip


def _peak(work: Callable[[], Any]) -> tuple[Any, int]:
    tracemalloc.start()
    try:
        result = work()
        return result, tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()


async def _apeak(work: Callable[[], Any]) -> tuple[Any, int]:
    tracemalloc.start()
    try:
        result = await work()
        return result, tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()


async def test_a_gigantic_line_in_a_watched_transcript_is_skipped_unread_and_named(
    store: IntakeStore, tmp_path: Path
) -> None:
    """Before, a round read up to ``max_file_bytes`` (50 MB) from the watermark into memory, the
    giant line whole; a line longer than that stopped the session for good."""
    session = tmp_path / f"{SESSION}.jsonl"
    session.write_text(
        line("u1", "user", "The release train leaves every second Thursday.")
        + _giant_line()
        + line("u2", "user", "Hotfixes need two approvals from the platform team.")
    )
    settings = WatchPlan(folders=(tmp_path,), max_line_bytes=CAP)
    done, peak = await _apeak(lambda: watch_round(store, settings))
    assert done.skipped_lines == [(str(session), 2)]
    assert done.new_messages == 2 and done.new_errors == []
    assert peak < PEAK, f"the round took {peak:,} bytes"
    said = " ".join([c.text async for c in store.iter_live()])
    assert "second Thursday" in said and "two approvals" in said


def test_a_gigantic_line_in_a_jsonl_import_is_skipped_unread_and_logged(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    path = tmp_path / "log.jsonl"
    path.write_text(
        json.dumps({"text": "The fig tree needs water twice a week in July."})
        + "\n"
        + json.dumps({"text": "y" * GIANT})
        + "\n"
        + json.dumps({"text": "The boat is moored at pier 7 in Vigo."})  # no newline at the end: still read
    )
    (source,) = find_sources(path)
    with caplog.at_level("WARNING"):
        crystals, peak = _peak(lambda: list(crystals_from_file(source, max_line=CAP)))
    assert [c.text for c in crystals] == ["The fig tree needs water twice a week in July.",
                                          "The boat is moored at pier 7 in Vigo."]  # fmt: skip
    assert [r.msg for r in caplog.records] == ["import.line_skipped"]
    assert peak < PEAK, f"the import took {peak:,} bytes"


async def test_a_gigantic_line_in_an_export_is_counted_as_damaged_and_the_rest_restored(
    memory: IntakeStore, store: IntakeStore, tmp_path: Path
) -> None:
    """``memory`` exports, ``store`` (another node's, trusting the key) restores."""
    for text in ("Tomas lives in Riga.", "I prefer window seats on long flights."):
        await memory.remember(NewCrystal(text))
    lines = (await _exported(memory)).splitlines()
    lines.insert(2, json.dumps({"kind": "crystal", "text": "z" * GIANT}))
    path = tmp_path / "big.jsonl"
    path.write_text("\n".join(lines) + "\n")
    done, peak = await _apeak(lambda: restore_export(store, path, trusted=TRUSTED, max_line=CAP))
    assert done.damaged_count == 1 and done.damaged[0].startswith("line 3: a line of ")
    assert done.created == 2
    assert peak < PEAK, f"the restore took {peak:,} bytes"
