"""Issue 51, sync: three real daemons of one person (a laptop, a desktop and a Pi that does not
embed) paired over loopback by the command line. What each says reaches the others; changes made
on a device while it was off (by the CLI, with no daemon) reach the others when it is back; a
device killed with SIGKILL in the middle of a sync catches up after it restarts; an erasure leaves
no byte of the words in any device's files; a removed device gets nothing said after its removal;
and the Pi, which never runs the model, finds what the others find."""

from __future__ import annotations

import re
import signal
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from tests.conftest import clean_env
from tests.daemons import Node, api_url, listening, wait_for

pytestmark = pytest.mark.slow  # three real daemons


def _env(name: str, **more: str) -> dict[str, str]:
    # a round every 2 s, so that a device back from being off is met soon
    return clean_env(BITTERBOT_MEMORY__EMBEDDER="hashing", BITTERBOT_NODE__NAME=name,
                     BITTERBOT_DEVICES__PULL_EVERY_S="2", **more)  # fmt: skip


def _up(node: Node) -> None:
    node.start()
    wait_for(lambda: listening(node) and api_url(node), 90, f"{node.data.name} to listen")


@pytest.fixture(scope="module")
def three(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[Node, Node, Node]]:
    root = tmp_path_factory.mktemp("sync")
    nodes = (
        Node(root, "laptop", _env("laptop")),
        Node(root, "desktop", _env("desktop")),
        Node(root, "pi", _env("pi", BITTERBOT_DEVICES__EMBEDS="false")),
    )
    for node in nodes:
        assert node.cli("init").returncode == 0
    # the desktop held memories before it joined: they travel too
    assert nodes[1].cli("memory", "add", "The desktop's old note: the boiler was serviced in May").returncode == 0
    for node in nodes:
        _up(node)
    try:
        pair(nodes[0], nodes[1])
        pair(nodes[0], nodes[2])
        yield nodes
    finally:
        logs = [node.stop() for node in nodes]
        for log in logs:
            assert "Traceback" not in log, log[-3000:]


def add(node: Node, text: str) -> str:
    return str(node.json("memory", "add", text)["crystal"]["id"])


def holds(node: Node, crystal_id: str) -> bool:
    return node.cli("memory", "show", crystal_id).returncode == 0


def files_hold(node: Node, words: bytes) -> list[str]:
    return [p.name for p in (node.data / "memory").glob("crystals.db*") if words in p.read_bytes()]


def in_sync(node: Node) -> bool:
    listed: dict[str, Any] = node.json("devices", "list")
    others = [m for m in listed["members"] if not m["this_device"]]
    return bool(others) and all(m["sync"] and m["sync"]["in_sync"] for m in others)


def pair(inviter: Node, joiner: Node) -> None:
    code = inviter.json("devices", "pair")["code"]
    joined = joiner.cli("devices", "join", code)
    assert joined.returncode == 0, joined.stderr


def test_three_devices_keep_one_memory(three: tuple[Node, Node, Node]) -> None:
    laptop, desktop, pi = three
    old = desktop.json("memory", "search", "boiler serviced")[0]["crystal"]["id"]
    said = {node.data.name: add(node, f"{node.data.name} says: the spare key is under the {colour} pot")
            for node, colour in ((laptop, "blue"), (desktop, "green"), (pi, "red"))}  # fmt: skip
    for node in three:
        for crystal_id in (*said.values(), old):
            wait_for(lambda n=node, c=crystal_id: holds(n, c), 30, f"{crystal_id} on {node.data.name}")  # type: ignore[misc]
    wait_for(lambda: all(in_sync(n) for n in three), 30, "all three in sync")
    # the Pi never embedded (its embedder does not run), yet it searches by meaning as the laptop does
    assert pi.json("memory", "stats")["embedding_backlog"] == 0
    hits = 0
    for query in ("spare key", "where is the key", "boiler", "pot"):
        for mode in ("vector", "hybrid"):
            found = [[h["crystal"]["id"] for h in n.json("memory", "search", query, "--mode", mode)] for n in three]
            if mode == "hybrid":  # its order also weighs each device's own use (accesses), which stays its own
                found = [sorted(f) for f in found]
            assert found[0] == found[1] == found[2], (query, mode, found)
            hits += len(found[0])
    assert hits >= 8

    # the desktop goes off; changes on both sides while it is off
    desktop.stop()
    assert desktop.cli("memory", "forget", said["laptop"]).returncode == 0  # the CLI, with no daemon
    offline = str(desktop.json("memory", "add", "Said on the desktop while it was off")["crystal"]["id"])
    online = add(laptop, "Said on the laptop while the desktop was off")
    wait_for(lambda: holds(pi, online), 30, "the laptop's words on the Pi")
    _up(desktop)
    wait_for(lambda: holds(laptop, offline) and holds(pi, offline) and holds(desktop, online), 60, "the heal")
    for node in three:
        wait_for(lambda n=node: not holds(n, said["laptop"]), 30, f"the forget on {node.data.name}")  # type: ignore[misc]
    wait_for(lambda: all(in_sync(n) for n in three), 60, "all three in sync after the heal")


def test_a_device_killed_in_the_middle_of_a_sync_catches_up(three: tuple[Node, Node, Node], tmp_path: Path) -> None:
    laptop, desktop, _ = three
    notes = tmp_path / "notes"
    notes.mkdir()
    for i in range(40):
        (notes / f"n{i}.md").write_text(f"# Note {i}\n\nShelf {i} holds the jars of batch {i * 7}.\n")
    assert laptop.cli("memory", "import", str(notes)).returncode == 0
    # kill -9 while the desktop is taking the laptop's changes
    wait_for(lambda: b"jars of batch" in (desktop.data / "memory" / "crystals.db-wal").read_bytes()
             if (desktop.data / "memory" / "crystals.db-wal").exists() else False, 60, "the sync to start")  # fmt: skip
    assert desktop.proc is not None
    desktop.proc.send_signal(signal.SIGKILL)
    desktop.proc.wait(timeout=10)
    desktop.stop()
    _up(desktop)
    wait_for(lambda: all(in_sync(n) for n in three), 90, "all three in sync after the kill")
    hits = desktop.json("memory", "search", "jars of batch", "--limit", "50", "--mode", "keyword")
    assert len({h["crystal"]["text"] for h in hits}) == 40


def test_an_erasure_reaches_every_device_file(three: tuple[Node, Node, Node]) -> None:
    _, desktop, pi = three
    crystal_id = add(desktop, "The kids named the new hamster periwinkle-zebra-42")
    for node in three:
        wait_for(lambda n=node: holds(n, crystal_id), 30, f"the words on {node.data.name}")  # type: ignore[misc]
    assert pi.cli("memory", "forget", crystal_id, "--erase").returncode == 0
    for node in three:
        wait_for(lambda n=node: not files_hold(n, b"periwinkle-zebra"), 60, f"no trace on {node.data.name}")  # type: ignore[misc]


def test_a_removed_device_gets_nothing_said_after(three: tuple[Node, Node, Node]) -> None:
    laptop, desktop, pi = three
    pi_id = pi.json("status")["identity"]["peer_id"]
    assert laptop.json("devices", "remove", pi_id)["epoch"] >= 1
    wait_for(lambda: pi.json("devices", "list")["group_id"] is None, 30, "the Pi to hear it was removed")
    after = add(laptop, "Said after the Pi was removed: the bins go out on Mondays now")
    wait_for(lambda: holds(desktop, after), 30, "the laptop's words on the desktop")
    wait_for(lambda: all(in_sync(n) for n in (laptop, desktop)), 30, "the two in sync")
    assert not holds(pi, after) and not files_hold(pi, b"bins go out on Mondays")
    listed = pi.cli("devices", "list").stdout
    assert re.search(r"this device was removed by", listed), listed
