"""The systemd unit in configs/ names commands and exit codes that exist."""

from __future__ import annotations

import configparser
from pathlib import Path

import pytest

from node.errors import EXIT_ALREADY_RUNNING, EXIT_USAGE
from tests.conftest import run_cli

pytestmark = pytest.mark.slow  # real processes, hosts or chains (`-m "not slow"` skips them)

UNIT = Path(__file__).resolve().parents[3] / "configs" / "bitterbot-node.service"


def test_the_unit_runs_the_daemon_and_does_not_restart_what_a_restart_cannot_fix(tmp_path: Path) -> None:
    unit = configparser.ConfigParser(interpolation=None, strict=True)
    unit.optionxform = str  # type: ignore[assignment,method-assign]  # systemd keys are case-sensitive
    unit.read(UNIT)
    service = unit["Service"]
    # issue 32: it assumed `pip install --user` (~/.local/bin), not the README's venv in the clone
    assert service["ExecStart"] == "%h/bitterbot-node/.venv/bin/bitterbot-node run"
    assert service["ExecStartPre"] == "%h/bitterbot-node/.venv/bin/bitterbot-node config check"
    assert service["KillSignal"] == "SIGTERM" and service["Restart"] == "on-failure"
    assert {int(code) for code in service["RestartPreventExitStatus"].split()} == {EXIT_USAGE, EXIT_ALREADY_RUNNING}
    assert unit["Install"]["WantedBy"] == "default.target"
    pre = service["ExecStartPre"].split("/bitterbot-node ", 1)[1].split()
    checked = run_cli(*pre, "--data-dir", str(tmp_path / "d"))
    assert checked.returncode == 0, checked.stderr
