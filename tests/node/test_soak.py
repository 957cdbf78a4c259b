"""The soak (``bench.soak``, issue 48), short: a real daemon watching transcripts that grow in chunks
with damaged lines, rotations and truncations, beside imports, searches, dreams, peers and a flood,
killed with SIGKILL and started again. Every turn is captured exactly once, every import whole,
no damaged line stored, no crystal lost, and the file sound (``bench.soak.verdict``)."""

from __future__ import annotations

from pathlib import Path

import pytest

from bench.soak.run import soak

pytestmark = [pytest.mark.slow, pytest.mark.timeout(600)]  # a daemon started several times


def test_a_short_soak_with_kills_loses_and_doubles_nothing(tmp_path: Path) -> None:
    result = soak(tmp_path, seconds=30, seed=7)  # raises SoakInvariantBroken or DaemonFailed on a finding
    assert result["kills_survived"] >= 1
    assert result["transcripts"]["messages"] > 0 and result["messages_checked"] == result["transcripts"]["messages"]
    assert (result["lost"], result["duplicated"], result["import_lost"], result["import_duplicated"]) == (0, 0, 0, 0)
    assert result["damaged_tokens_stored"] == 0 and result["crystals_seen_then_vanished"] == 0
    assert result["integrity_check"] == "ok"
    assert result["starts"] == result["kills_survived"] + 1
