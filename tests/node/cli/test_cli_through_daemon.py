"""The CLI with a daemon running: each command is a request to the daemon's local API (or, with
the API switched off, to its control socket), and answers exactly as it does without a daemon."""

from __future__ import annotations

import json
import urllib.request
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import click
import pytest

from tests.conftest import clean_env
from tests.daemons import Node, running_details, wait_for

pytestmark = pytest.mark.slow  # real processes, hosts or chains (`-m "not slow"` skips them)

ENV = clean_env(BITTERBOT_MEMORY__EMBEDDER="hashing")


def _details(node: Node) -> dict[str, Any] | None:
    return running_details(node)


def _api_requests(node: Node) -> dict[tuple[str, str], float]:
    """The daemon's own count of API requests, by (command, status), from its /metrics."""
    counts = {}
    for line in _metrics(node).splitlines():
        if line.startswith("bitterbot_api_requests_total{"):
            labels, value = line.split("} ")
            fields = dict(part.split("=") for part in labels.split("{", 1)[1].split(","))
            counts[(fields["command"].strip('"'), fields["status"].strip('"'))] = float(value)
    return counts


def _running(tmp: Path, name: str, env: dict[str, str]) -> Node:
    node = Node(tmp, name, env)
    assert node.cli("init").returncode == 0
    node.start()
    wait_for(lambda: _details(node), 60, f"{name} to run")
    return node


@pytest.fixture(scope="module")
def node(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Node]:
    running = _running(tmp_path_factory.mktemp("cli-api"), "node", ENV)
    try:
        yield running
    finally:
        log = running.stop()
    assert "Traceback" not in log, log


def test_memory_commands_are_requests_to_the_daemon(node: Node) -> None:
    made = node.json("memory", "add", "The staging database lives on db2", "--type", "fact")
    crystal_id = made["crystal"]["id"]
    hits = node.json("memory", "search", "staging database", "--mode", "keyword", "--explain")
    assert hits[0]["crystal"]["id"] == crystal_id and hits[0]["explain"]["keyword_rank"] == 1
    shown = node.json("memory", "show", crystal_id)
    assert shown["audit"][0]["actor"] == "cli"  # the daemon records who asked
    assert node.json("memory", "stats")["total"] >= 1
    noted = node.json("memory", "note", "Release 2.3 is blocked on the migration")
    assert noted["origin"] == "session"
    assert "Release 2.3 is blocked" in node.json("memory", "bootstrap", "--context-window", "8000")["text"]
    assert node.json("memory", "dream")["accepted"] is True
    assert node.json("memory", "consolidate", "--dry-run")["dry_run"] is True
    assert node.json("memory", "event", "reward")["dopamine"] > node.json("memory", "hormones")["dopamine"] - 0.01
    assert node.json("memory", "forget", crystal_id) == {"forgotten": crystal_id, "erased": False}

    counts = _api_requests(node)
    for command in ("memory.remember", "memory.search", "memory.show", "memory.stats", "wm.note", "wm.bootstrap",
                    "wm.dream", "memory.consolidate", "memory.event", "memory.hormones", "memory.forget"):  # fmt: skip
        assert counts.get((command, "200"), 0) >= 1, (command, counts)


def test_an_import_beside_the_daemon_returns_at_once_and_the_daemon_embeds_it(node: Node, tmp_path: Path) -> None:
    """Issue 32: an import embedded for an hour in the command. Beside a daemon it now only stores:
    keyword search finds the messages at once, and status, the metrics and the dashboard's overview
    show the daemon's backlog shrink as it embeds them."""
    chat = tmp_path / "chat.jsonl"
    chat.write_text("".join(json.dumps({"role": "user", "content": f"note {i} about the heron pond"}) + "\n"
                            for i in range(400)))  # fmt: skip
    done = node.cli("memory", "import", str(chat), "--json")
    assert done.returncode == 0, done.stderr
    report = json.loads(done.stdout)
    assert (report["created"], report["embedded"], report["embedding"]) == (400, 0, "daemon")
    hits = node.json("memory", "search", "note 17 heron", "--mode", "keyword")
    assert hits[0]["crystal"]["text"] == "user: note 17 about the heron pond"

    def embedded() -> dict[str, Any] | None:
        details = _details(node)
        progress = details["memory"]["embedding"] if details else None
        return progress if progress and progress["backlog"] == 0 and progress["embedded"] >= 400 else None

    progress = wait_for(embedded, 300, "the daemon to embed the import")
    assert progress["per_s"] is not None and progress["eta_s"] is None
    # /metrics reads its snapshot of the store every few seconds: it says so on its next refresh
    gauge = "bitterbot_embedding_backlog 0.0"
    wait_for(lambda: gauge in _metrics(node).splitlines(), 60, "the metrics to show an empty backlog")


def _metrics(node: Node) -> str:
    details = _details(node)
    assert details is not None
    request = urllib.request.Request(f"{details['api']['url']}/metrics")
    request.add_header("Authorization", f"Bearer {(node.data / 'api.token').read_text().strip()}")
    with urllib.request.urlopen(request, timeout=30) as response:
        return str(response.read().decode())


def test_the_daemons_refusals_reach_the_user_as_usage_errors(node: Node) -> None:
    missing = node.cli("memory", "show", "no-such-crystal")
    assert missing.returncode == 2 and "no crystal 'no-such-crystal'" in missing.stderr
    no_query = node.cli("memory", "search", "--mode", "keyword")
    assert no_query.returncode == 2 and "keyword search needs a query" in no_query.stderr
    unmerge = node.cli("memory", "unmerge", "no-such-crystal")
    assert unmerge.returncode == 2 and "was not merged" in unmerge.stderr
    fact = node.json("memory", "add", "Lisbon is the capital of Portugal", "--type", "fact")["crystal"]["id"]
    record = node.cli("skills", "record", fact, "--success")
    assert record.returncode == 2 and "not a fact" in record.stderr
    counts = _api_requests(node)
    assert counts.get(("memory.show", "404"), 0) >= 1 and counts.get(("memory.search", "400"), 0) >= 1


def test_skills_record_and_price_through_the_daemon(node: Node) -> None:
    skill = node.json("memory", "add", "Rotate logs: logrotate -f", "--type", "skill", "--scope", "shared")
    crystal_id = skill["crystal"]["id"]
    for _ in range(3):
        recorded = node.json("skills", "record", crystal_id, "--success", "--reward", "0.9")
    assert recorded["executions"] == 3 and recorded["listable"]
    priced = node.json("skills", "price", crystal_id)
    assert priced["listable"] and priced["price_micro_usdc"] > 0 and priced["price"].endswith(" USDC")
    counts = _api_requests(node)
    assert counts.get(("skills.record", "200"), 0) >= 3 and counts.get(("skills.price", "200"), 0) >= 1


def test_a_wrong_token_is_a_clear_error_and_changes_nothing(node: Node) -> None:
    token_file = node.data / "owner.token"  # the CLI is the person: it sends the owner's token
    token = token_file.read_text()
    before = node.json("memory", "stats")["total"]
    try:
        token_file.write_text("not-the-token\n")
        refused = node.cli("memory", "add", "should not be stored")
        assert refused.returncode == 2 and "the daemon refused the token" in refused.stderr
    finally:
        token_file.write_text(token)
    assert node.json("memory", "stats")["total"] == before


def test_without_the_api_the_cli_uses_the_control_socket_and_falls_back_for_missing_parts(tmp_path: Path) -> None:
    quiet = _running(tmp_path, "no-api", clean_env(BITTERBOT_MEMORY__EMBEDDER="hashing", BITTERBOT_API__ENABLED="false",
                                                    BITTERBOT_P2P__ENABLED="false"))  # fmt: skip
    try:
        assert "api" not in (_details(quiet) or {})
        made = quiet.json("memory", "add", "Backups run at 02:00", "--type", "fact")
        assert quiet.json("memory", "show", made["crystal"]["id"])["audit"][0]["actor"] == "cli"
        quiet.json("memory", "note", "Check the backup at 09:00")
        assert quiet.json("memory", "dream")["accepted"] is True
        # The daemon itself dreamt (its memory part remembers its last dream), not a CLI process on the file.
        wait_for(lambda: ((_details(quiet) or {}).get("memory") or {}).get("last_dream"), 60, "the dream in status")
        skill = quiet.json("memory", "add", "Restart nginx: systemctl reload nginx", "--type", "skill")
        # No P2P part, so no skills commands in the daemon: the CLI records on the memory file itself.
        recorded = quiet.json("skills", "record", skill["crystal"]["id"], "--success")
        assert recorded["executions"] == 1
        peers = quiet.cli("peers")
        assert peers.returncode == 2 and "peers is not available on this node" in peers.stderr
    finally:
        log = quiet.stop()
    assert "Traceback" not in log, log


def test_every_command_speaks_json() -> None:
    from node.cli.main import register_commands

    def leaves(command: click.Command, path: tuple[str, ...]) -> Iterator[tuple[tuple[str, ...], click.Command]]:
        if isinstance(command, click.Group):
            for name, sub in command.commands.items():
                yield from leaves(sub, (*path, name))
        else:
            yield path, command

    cli = register_commands()
    exempt = {("run",), ("mcp",), ("config", "show")}  # a process; a protocol on stdio; prints JSON always
    found = list(leaves(cli, ()))
    assert len(found) > 30
    for path, command in found:
        if path in exempt:
            continue
        options = {opt for param in command.params for opt in getattr(param, "opts", [])}
        assert "--json" in options, f"bitterbot-node {' '.join(path)} has no --json"
