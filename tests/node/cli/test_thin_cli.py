"""The thin CLI (issue 31): a command line the running daemon can answer is sent to it whole and
printed exactly as the full CLI prints it (same words, same exit code); every other line runs the
full CLI: help, standard input, files named on the line, lines click refuses, another data dir,
and a daemon that is not there. Command lines are the person's: the agent's token is refused."""

from __future__ import annotations

import json
import re
import subprocess
import sys
import urllib.error
import urllib.request
from collections.abc import Iterator
from pathlib import Path

import pytest

from node.cli import thin
from tests.conftest import clean_env
from tests.daemons import Node, api_url, wait_for

ENV = clean_env(BITTERBOT_MEMORY__EMBEDDER="hashing")
FULL = [sys.executable, "-c", "from node.cli.main import main; main()"]


@pytest.fixture(scope="module")
def node(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Node]:
    running = Node(tmp_path_factory.mktemp("thin"), "node", ENV)
    assert running.cli("init").returncode == 0
    running.start()
    wait_for(lambda: api_url(running), 60, "the daemon's API")
    try:
        yield running
    finally:
        log = running.stop()
    assert "Traceback" not in log, log


def _full(node: Node, *args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([*FULL, *args, "--data-dir", str(node.data)], env=ENV, capture_output=True, text=True,
                          timeout=60, stdin=subprocess.DEVNULL)  # fmt: skip


def _thin(node: Node, capsys: pytest.CaptureFixture[str], *args: str) -> tuple[int | None, str, str]:
    """The line through ``node.cli.thin`` in this process: its exit code (None: it would run the full
    CLI), and what it printed."""
    capsys.readouterr()
    code = thin.through_the_daemon([*args, "--data-dir", str(node.data)], ENV)
    out = capsys.readouterr()
    return code, out.out, out.err


@pytest.mark.slow  # a real daemon
def test_the_daemon_answers_a_line_as_the_full_cli_prints_it(node: Node, capsys: pytest.CaptureFixture[str]) -> None:
    code, out, _ = _thin(node, capsys, "memory", "add", "The staging database lives on db2", "--type", "fact", "--json")
    assert code == 0
    crystal = json.loads(out)["crystal"]["id"]
    assert node.json("memory", "show", crystal)["audit"][0]["actor"] == "cli"  # run as the person
    skill = node.json("memory", "add", "Rotate logs: logrotate -f", "--type", "skill")["crystal"]["id"]
    lines = [
        ("memory", "search", "staging database", "--mode", "keyword"),
        ("memory", "show", skill),  # one no search finds: a search counts an access, and show prints it
        ("memory", "show", "no-such-crystal"),  # refused by the daemon: exit 2, its words
        ("memory", "search", "--mode", "keyword"),  # refused: a keyword search needs a query
        ("memory", "stats"),
        ("skills", "price", skill, "--explain"),  # a flag of the command line alone
        ("weather", "show"),
        (
            "weather",
            "broadcast",
            "--level",
            "0.5",
            "--duration",
            "0s",
            "--reason",
            "x",
        ),  # the CLI's own conversion refuses
    ]
    for line in lines:
        code, out, err = _thin(node, capsys, *line)
        full = _full(node, *line)
        assert code is not None, f"the daemon did not answer {line}"
        assert (code, out, err) == (full.returncode, full.stdout, full.stderr), line
    assert _thin(node, capsys, "memory", "show", "no-such-crystal")[0] == 2
    # status is hand-written (it also works without a daemon); answered here, it reads the same
    code, out, err = _thin(node, capsys, "status")
    full = _full(node, "status")
    uptime = re.compile(r"up \d+ s")
    assert (code, uptime.sub("up N s", out), err) == (0, uptime.sub("up N s", full.stdout), full.stderr)
    assert json.loads(_thin(node, capsys, "status", "--json")[1])["daemon"]["running"] is True


@pytest.mark.slow  # a real daemon
def test_what_only_the_callers_process_can_do_runs_the_full_cli(
    node: Node, capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    chat = tmp_path / "chat.json"
    chat.write_text(json.dumps([{"role": "user", "content": "My sister Ana lives in Porto."}]))
    elsewhere = tmp_path / "other.toml"
    elsewhere.write_text(f'[node]\ndata_dir = "{tmp_path / "another"}"\n')
    declined = [
        ("memory", "search", "--help"),
        ("memory", "add", "-"),  # standard input is the caller's
        ("memory", "capture", str(chat)),  # a file on the caller's side
        ("memory", "search", "x", "--limit", "0"),  # click refuses it, in its own words
        ("memory", "search", "x", "--mode", "sideways"),
        ("memory", "import", str(chat)),  # not a command the daemon answers
    ]
    for line in declined:
        assert _thin(node, capsys, *line) == (None, "", ""), line
    bad_setting = dict(ENV, BITTERBOT_MEMORY__NO_SUCH_KEY="1")  # the full CLI refuses it: so must this path
    assert thin.through_the_daemon(["memory", "stats", "--data-dir", str(node.data)], bad_setting) is None
    other_config = ["memory", "stats", "--config", str(elsewhere)]  # names another data dir: not this daemon's
    assert thin.through_the_daemon(other_config, dict(ENV, BITTERBOT_DATA_DIR=str(node.data))) is not None
    assert thin.through_the_daemon(other_config, ENV) is None  # no daemon there
    piped = subprocess.run([*node_cli(), "memory", "add", "-", "--data-dir", str(node.data), "--json"], env=ENV,
                           input="Backups run at 02:00\n", capture_output=True, text=True, timeout=60)  # fmt: skip
    assert piped.returncode == 0 and json.loads(piped.stdout)["crystal"]["text"] == "Backups run at 02:00"


@pytest.mark.slow  # a real daemon
def test_command_lines_are_the_persons_and_a_bad_body_runs_nothing(node: Node) -> None:
    url = api_url(node)
    assert url is not None
    before = node.json("memory", "stats")["total"]
    line = {"argv": ["memory", "add", "written by the agent"], "env": {}, "cwd": "/"}
    agent = (node.data / "api.token").read_text().strip()
    assert _post(url + "/v1/cli", line, agent)[0] == 403
    owner = (node.data / "owner.token").read_text().strip()
    for body in ({"argv": "memory stats", "env": {}, "cwd": "/"}, {"argv": ["memory", "stats"], "env": {}, "cwd": "."},
                 {"argv": ["memory", "stats"], "env": {"PATH": "/"}, "cwd": "/"}):  # fmt: skip
        assert _post(url + "/v1/cli", body, owner) == (200, {"fallback": True})
    assert node.json("memory", "stats")["total"] == before


def node_cli() -> list[str]:
    return [sys.executable, "-m", "node"]


def _post(url: str, body: object, token: str) -> tuple[int, object]:
    request = urllib.request.Request(url, data=json.dumps(body).encode(), method="POST")
    request.add_header("Authorization", f"Bearer {token}")
    request.add_header("Content-Type", "application/json")
    try:
        with urllib.request.urlopen(request, timeout=30) as response:
            return response.status, json.loads(response.read())
    except urllib.error.HTTPError as exc:
        return exc.code, json.loads(exc.read())


def test_without_a_daemon_the_full_cli_runs(tmp_path: Path) -> None:
    assert thin.through_the_daemon(["memory", "stats", "--data-dir", str(tmp_path)], ENV) is None
    assert thin.through_the_daemon([], ENV) is None
    assert thin.through_the_daemon(["--version"], ENV) is None


def test_the_data_dir_is_found_as_the_full_cli_finds_it(tmp_path: Path) -> None:
    home = tmp_path / "home"
    assert thin._data_dir(["memory", "stats", "--data-dir", str(tmp_path / "a")], {}) == tmp_path / "a"
    assert thin._data_dir(["memory", "stats", f"--data-dir={tmp_path / 'b'}"], {}) == tmp_path / "b"
    assert thin._data_dir(["memory", "stats"], {"BITTERBOT_DATA_DIR": str(tmp_path / "c")}) == tmp_path / "c"
    config = tmp_path / "node.toml"
    config.write_text(f'[node]\ndata_dir = "{tmp_path / "d"}"\n')
    assert thin._data_dir(["memory", "stats", "--config", str(config)], {}) == tmp_path / "d"
    assert thin._data_dir(["memory", "stats"], {"BITTERBOT_CONFIG": str(config)}) == tmp_path / "d"
    config.write_text("[node\n")  # not TOML: only the full CLI can say so properly
    assert thin._data_dir(["memory", "stats", "--config", str(config)], {}) is None
    assert thin._data_dir(["memory", "stats"], {"BITTERBOT_NODE__DATA_DIR": str(home)}) is None
