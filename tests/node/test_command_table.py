"""Every command and where it appears, as the docs show it: generated from the declarations."""

from __future__ import annotations

from pathlib import Path

from node.commands.catalog import COMMANDS, table


def test_the_docs_carry_the_command_table() -> None:
    page = (Path(__file__).resolve().parents[2] / "docs" / "reference" / "commands.md").read_text()
    assert table() in page


def test_every_command_a_person_can_run_is_on_the_command_line() -> None:
    # The two without a generated CLI have a hand-written one that is more than the command:
    # `status` also reads the files when no daemon runs, `ui` also opens a browser.
    missing = {c.name for c in COMMANDS.values() if c.cli is None}
    assert missing == {"status", "ui.login"}
