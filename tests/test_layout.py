"""The layout rules of the redesign: no source file over 500 lines, no folder with more than 15
modules side by side (a newcomer reads a folder whole), no part past 300 lines (it only runs packages)."""

from __future__ import annotations

from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
SOURCES = ("ground", "crypto", "memory", "p2p", "marketplace", "node", "bench")
MAX_LINES = 500
MAX_MODULES = 15


def modules() -> list[Path]:
    return [p for package in SOURCES for p in sorted((ROOT / package).rglob("*.py"))]


def test_no_source_file_is_over_500_lines() -> None:
    long = {str(p.relative_to(ROOT)): n for p in modules() if (n := len(p.read_text().splitlines())) > MAX_LINES}
    assert long == {}


def test_no_folder_holds_more_than_15_modules() -> None:
    folders = {p.parent for p in modules()}
    crowded = {str(f.relative_to(ROOT)): n for f in folders if (n := len(list(f.glob("*.py")))) > MAX_MODULES}
    assert crowded == {}
    assert len(folders) > 10  # the rule looked at the packages' folders, not an empty list


#: A part starts, stops and wires the packages' pieces (issue 50): it stays well under this.
MAX_PART_LINES = 300


def test_no_part_grows_past_the_length_of_a_part_that_only_runs_packages() -> None:
    long = {
        p.name: n
        for p in sorted((ROOT / "node" / "parts").glob("*.py"))
        if (n := len(p.read_text().splitlines())) > MAX_PART_LINES
    }
    assert long == {}
