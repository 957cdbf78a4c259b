"""What `status` says of the background embedding (issue 32): how many wait, the rate, an ETA."""

from __future__ import annotations

from node.parts.memory import EmbeddingProgress


def test_the_rate_and_eta_follow_the_runs_and_nothing_waiting_says_nothing() -> None:
    progress = EmbeddingProgress(backlog=1_000)
    assert progress.as_dict() == {"backlog": 1_000, "embedded": 0, "per_s": None, "eta_s": None}
    assert progress.summary() == "1,000 waiting to be embedded"  # no rate yet: no guess
    progress.record(100, 2.0)  # 50/s
    assert progress.as_dict() == {"backlog": 900, "embedded": 100, "per_s": 50.0, "eta_s": 18}
    progress.record(100, 1.0)  # 100/s: the rate moves towards it, not to it
    assert progress.as_dict()["per_s"] == 65.0 and progress.summary() == "800 waiting to be embedded (about 1 min)"
    progress.record(800, 8.0)
    assert progress.summary() is None and progress.as_dict()["eta_s"] is None
    progress.record(0, 5.0)  # an idle run does not drag the rate down
    assert progress.as_dict()["per_s"] == 75.5
