"""A running daemon loads its embedding model when a text first needs it and lets it go after
``[memory] embedder_idle_s`` unused (issue 31: an idle node does not hold the model), and a search
after that loads it again and finds the same."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.conftest import clean_env
from tests.daemons import Node, running_details, wait_for

# A real daemon process with the real model, which it loads twice: on a busy machine that alone took
# tens of seconds, so the test is bounded by its waits rather than by the suite's 120 s per test.
pytestmark = [pytest.mark.slow, pytest.mark.timeout(300)]


def _model_loaded(node: Node) -> bool | None:
    details = running_details(node)
    return None if details is None else details["memory"]["embedding"].get("model_loaded")


def test_the_daemon_loads_the_model_when_needed_and_lets_it_go_when_idle(tmp_path: Path) -> None:
    node = Node(tmp_path, "node", clean_env(BITTERBOT_MEMORY__EMBEDDER_IDLE_S="1"))
    assert node.cli("init").returncode == 0
    node.start()
    try:
        wait_for(lambda: _model_loaded(node) is False, 60, "the daemon to run without its model", [node])
        added = node.json("memory", "add", "The staging database lives on db2")
        hits = node.json("memory", "search", "where does the staging database live")
        assert hits[0]["crystal"]["id"] == added["crystal"]["id"]
        wait_for(lambda: any("memory.embedder_released" in line for line in node.log_tail(200)), 60,
                 "the idle model to be let go", [node])  # fmt: skip
        wait_for(lambda: _model_loaded(node) is False, 60, "status to say the model is not loaded", [node])
        again = node.json("memory", "search", "where does the staging database live")
        assert again[0]["crystal"]["id"] == added["crystal"]["id"]  # loaded again, same answer
    finally:
        log = node.stop()
    assert log.count("memory.embedder_released") >= 1
