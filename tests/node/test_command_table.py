"""Every command and where it appears, as the README shows it: generated from the declarations."""

from __future__ import annotations

from pathlib import Path

from node.commands.catalog import COMMANDS, table


def test_the_readme_carries_the_command_table() -> None:
    readme = (Path(__file__).resolve().parents[2] / "README.md").read_text()
    assert table() in readme


def test_every_command_a_person_can_run_is_on_the_command_line() -> None:
    # The two without a generated CLI have a hand-written one that is more than the command:
    # `status` also reads the files when no daemon runs, `ui` also opens a browser.
    missing = {c.name for c in COMMANDS.values() if c.cli is None}
    assert missing == {"status", "ui.login"}
