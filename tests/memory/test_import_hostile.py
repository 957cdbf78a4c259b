"""Importing against broken and hostile inputs (issue 48): a symlink out of the folder, a FIFO named
as an export, a note or text file too big to read whole, and times in the future or before 1970."""

from __future__ import annotations

import json
import os
import time
from pathlib import Path

import pytest

from memory import safe_files
from memory.capture.capture import capture_conversations
from memory.errors import FileRefused, ForeignFormatError
from memory.given_time import CLAMPED_TAG
from memory.importer import MAX_TEXT_FILE_BYTES, crystals_from_file, find_sources
from memory.intake.store import IntakeStore
from memory.transfer import obsidian
from memory.transfer.foreign import store_entries
from memory.transfer.foreign_files import read_foreign
from memory.transfer.obsidian import MAX_NOTE_BYTES

SECRET = "aws_secret_access_key = wJalrXUtnFEMI/K7MDENG/bPxRfiCYEXAMPLEKEY"


def _outside(root: Path) -> Path:
    """A home folder beside the imported one, holding a secret in a file and in a folder."""
    home = root / "home"
    (home / ".aws").mkdir(parents=True)
    (home / ".aws" / "credentials.md").write_text(f"[default]\n{SECRET}\n")
    return home


def _links_out(folder: Path, home: Path) -> None:
    (folder / "credentials.md").symlink_to(home / ".aws" / "credentials.md")
    (folder / "aws").symlink_to(home / ".aws", target_is_directory=True)
    os.mkfifo(folder / "pipe.md")


def test_a_folder_import_follows_no_symlink_out_of_the_folder(tmp_path: Path) -> None:
    home = _outside(tmp_path)
    notes = tmp_path / "notes"
    notes.mkdir()
    (notes / "plants.md").write_text("The fig tree needs water twice a week in July.\n")
    _links_out(notes, home)
    sources = find_sources(notes)
    assert [s.path for s in sources] == [notes / "plants.md"]
    assert not [c for s in sources for c in crystals_from_file(s) if "wJalrXUtnFEMI" in c.text]


def test_an_obsidian_vault_follows_no_symlink_out_of_the_vault(tmp_path: Path) -> None:
    home = _outside(tmp_path)
    vault = tmp_path / "vault"
    (vault / ".obsidian").mkdir(parents=True)
    (vault / "Garden.md").write_text("The fig tree needs water twice a week in July.\n")
    _links_out(vault, home)
    source = read_foreign(vault, None)
    assert source is not None and [e.crystal.text for e in source.entries] == [
        "The fig tree needs water twice a week in July."
    ]


def test_a_fifo_named_as_an_export_is_refused_not_waited_on(tmp_path: Path) -> None:
    """A FIFO passed the size check (0 bytes) and the read waited for a writer for ever."""
    fifo = tmp_path / "mem0.json"
    os.mkfifo(fifo)
    with pytest.raises(ForeignFormatError, match="not a regular file"):
        read_foreign(fifo, "mem0")


def test_a_note_too_big_to_read_whole_is_left_out_and_named(tmp_path: Path) -> None:
    vault = tmp_path / "vault"
    (vault / ".obsidian").mkdir(parents=True)
    (vault / "Garden.md").write_text("The fig tree needs water twice a week in July.\n")
    (vault / "Dump.md").write_text(("x" * 99 + "\n") * (MAX_NOTE_BYTES // 100 + 1))
    source = read_foreign(vault, "obsidian")
    assert source is not None and [e.crystal.source_path for e in source.entries] == [str(vault / "Garden.md")]
    assert [why for why in source.left_out if why.startswith("Dump.md: over")], source.left_out


def test_a_text_file_too_big_to_read_whole_is_refused_naming_the_cap(tmp_path: Path) -> None:
    big = tmp_path / "big.txt"
    big.write_text(("y" * 99 + "\n") * (MAX_TEXT_FILE_BYTES // 100 + 1))
    (source,) = find_sources(big)
    with pytest.raises(FileRefused, match=f"over {MAX_TEXT_FILE_BYTES:,} bytes"):
        list(crystals_from_file(source))


FUTURE = "2999-01-01T00:00:00Z"
BEFORE_1970 = "1901-06-01T00:00:00Z"


def test_an_imported_message_dated_in_the_future_or_before_1970_is_clamped_and_tagged(tmp_path: Path) -> None:
    log = tmp_path / "chat.jsonl"
    log.write_text(
        json.dumps({"speaker": "Ana", "text": "The bins go out on Tuesday nights.", "timestamp": FUTURE}) + "\n"
        + json.dumps({"speaker": "Ana", "text": "The gas meter is in the cellar.", "timestamp": BEFORE_1970}) + "\n"
        + json.dumps({"speaker": "Ana", "text": "The cat eats at six.", "timestamp": "2025-03-01T18:00:00Z"}) + "\n"
    )  # fmt: skip
    (source,) = find_sources(log)
    before = int(time.time() * 1000)
    future, early, plain = crystals_from_file(source)  # the clock's time by default, as `memory import` reads
    assert future.created_at_ms is not None and before <= future.created_at_ms <= int(time.time() * 1000)
    assert early.created_at_ms == 0
    assert CLAMPED_TAG in future.tags and CLAMPED_TAG in early.tags
    assert plain.created_at_ms == 1_740_852_000_000 and CLAMPED_TAG not in plain.tags


async def test_captured_and_foreign_times_out_of_range_are_clamped_and_tagged(
    store: IntakeStore, tmp_path: Path
) -> None:
    await capture_conversations(
        store,
        messages=[
            {"role": "user", "content": "The boat is moored at pier 7 in Vigo.", "timestamp": FUTURE},
        ],
        session="s",
        embed=False,
    )
    export = tmp_path / "mem0.json"
    export.write_text(json.dumps([{"memory": "Allergic to penicillin", "created_at": BEFORE_1970}]))
    source = read_foreign(export, "mem0")
    assert source is not None
    await store_entries(store, source)
    crystals = {c.text: c async for c in store.iter_live()}
    moored = crystals["The boat is moored at pier 7 in Vigo."]
    assert moored.created_at_ms <= store.now_ms() and CLAMPED_TAG in moored.tags
    allergy = crystals["Allergic to penicillin"]
    assert allergy.created_at_ms == 0 and CLAMPED_TAG in allergy.tags


def test_a_file_the_person_names_may_be_a_link(tmp_path: Path) -> None:
    """Links below a folder are skipped; a link the person names on the command line is theirs."""
    (tmp_path / "real.md").write_text("The fig tree needs water twice a week in July.\n")
    (tmp_path / "named.md").symlink_to(tmp_path / "real.md")
    (source,) = find_sources(tmp_path / "named.md")
    assert [c.text for c in crystals_from_file(source)] == ["The fig tree needs water twice a week in July."]
    (tmp_path / "real.json").write_text(json.dumps([{"memory": "Allergic to penicillin"}]))
    (tmp_path / "named.json").symlink_to(tmp_path / "real.json")
    named = read_foreign(tmp_path / "named.json", "mem0")
    assert named is not None and [e.crystal.text for e in named.entries] == ["Allergic to penicillin"]


def test_a_hard_link_below_a_folder_is_skipped_and_named_but_a_named_one_is_read(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    """A hard link in an imported folder or vault may be the credentials file's other name: it is
    skipped like a symlink, and the log names it. A file the person names is theirs, links or not."""
    home = _outside(tmp_path)
    notes = tmp_path / "notes"
    (notes / ".obsidian").mkdir(parents=True)
    (notes / "plants.md").write_text("The fig tree needs water twice a week in July.\n")
    os.link(home / ".aws" / "credentials.md", notes / "credentials.md")
    with caplog.at_level("WARNING"):
        sources = find_sources(notes)
    assert [s.path for s in sources] == [notes / "plants.md"]
    assert [r.msg for r in caplog.records if str(notes / "credentials.md") in str(r.__dict__)] == ["files.link_skipped"]
    vault = read_foreign(notes, None)
    assert vault is not None and not [e for e in vault.entries if "wJalrXUtnFEMI" in e.crystal.text]
    (named,) = find_sources(notes / "credentials.md")
    assert [c.text for c in crystals_from_file(named) if "wJalrXUtnFEMI" in c.text]


@pytest.mark.parametrize("suffix", [".md", ".jsonl"])
def test_a_listed_file_swapped_for_a_hard_link_before_it_is_read_is_refused(tmp_path: Path, suffix: str) -> None:
    """Issue 48: the walk refuses links, and the read refuses one put in the listed file's place
    between the two (before, the read took the credentials' text under the listed name)."""
    home = _outside(tmp_path)
    notes = tmp_path / "notes"
    notes.mkdir()
    listed = notes / f"plants{suffix}"
    listed.write_text(json.dumps({"role": "user", "content": "The fig tree needs water."}) + "\n")
    (source,) = find_sources(notes)
    os.link(home / ".aws" / "credentials.md", notes / "swap")
    os.replace(notes / "swap", listed)  # the listed name is now the credentials file's second name
    with pytest.raises(FileRefused, match="hard link"):
        list(crystals_from_file(source))


def test_a_folder_on_a_listed_files_path_swapped_for_a_symlink_is_refused(tmp_path: Path) -> None:
    """``O_NOFOLLOW`` guards the last name only: a folder above the listed file made a symlink to one
    holding a file of the same name would be read through the link, but it is not the file listed."""
    home = _outside(tmp_path)
    (home / ".aws" / "plants.md").write_text(f"{SECRET}\n")
    sub = tmp_path / "notes" / "garden"
    sub.mkdir(parents=True)
    (sub / "plants.md").write_text("The fig tree needs water twice a week in July.\n")
    (source,) = find_sources(tmp_path / "notes")
    sub.rename(tmp_path / "notes" / "old")
    sub.symlink_to(home / ".aws", target_is_directory=True)
    with pytest.raises(FileRefused, match="another file than the one listed"):
        list(crystals_from_file(source))


def test_an_obsidian_note_swapped_for_a_hard_link_after_the_walk_is_left_out(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    home = _outside(tmp_path)
    vault = tmp_path / "vault"
    (vault / ".obsidian").mkdir(parents=True)
    (vault / "plants.md").write_text("The fig tree needs water twice a week in July.\n")
    (vault / "shed.md").write_text("The shed key is under the red pot.\n")
    walk = safe_files.listed_files

    def walk_then_swap(root: Path) -> list[tuple[Path, tuple[int, int]]]:
        found = walk(root)
        os.link(home / ".aws" / "credentials.md", vault / "swap")
        os.replace(vault / "swap", vault / "plants.md")
        return found

    monkeypatch.setattr(obsidian, "listed_files", walk_then_swap)
    read = read_foreign(vault, None)
    assert read is not None
    assert [e.crystal.text for e in read.entries] == ["The shed key is under the red pot."]
    assert any(note.startswith("plants.md: a hard link") for note in read.left_out), read.left_out
