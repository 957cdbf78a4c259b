"""Issue 51, pairing: two real daemons pair over loopback by the command line, as a person would.
Wrong, expired, burnt and reused codes are refused with what to do; the agent's token is refused
every devices command; removing a device starts a new epoch without it, and the removed device
hears at once that it is out."""

from __future__ import annotations

import re
import subprocess
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from crypto.pairing import PairingCode, read_code
from ground.authority import Capability
from ground.errors import WiringError
from node.actor import AGENT
from node.clients.local import LocalClient
from node.commands.catalog import COMMANDS
from node.commands.registry import CommandSet, McpSpec, NoArgs, index
from node.config import Config
from node.paths import NodePaths
from node.servers.mcp import build_server
from tests.conftest import clean_env
from tests.daemons import Node, api_url, listening, wait_for
from tests.node.dashboard.test_security import Browser
from tests.node.servers.test_api import Api

DEVICES = ("devices.pair", "devices.join", "devices.list", "devices.remove")


def refused(result: subprocess.CompletedProcess[str], says: str) -> None:
    assert result.returncode == 2, (result.returncode, result.stdout, result.stderr)
    assert says in result.stderr, result.stderr


@pytest.fixture(scope="module")
def pair_of_nodes(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[Node, Node]]:
    root = tmp_path_factory.mktemp("devices")
    laptop = Node(root, "laptop", clean_env(BITTERBOT_MEMORY__EMBEDDER="hashing", BITTERBOT_NODE__NAME="laptop"))
    # the desktop's own codes live one second, for the expired code
    desktop = Node(root, "desktop", clean_env(BITTERBOT_MEMORY__EMBEDDER="hashing", BITTERBOT_NODE__NAME="desktop",
                                              BITTERBOT_DEVICES__PAIRING_CODE_TTL_S="1"))  # fmt: skip
    for node in (laptop, desktop):
        assert node.cli("init").returncode == 0
        node.start()
    try:
        for node in (laptop, desktop):
            wait_for(lambda n=node: listening(n) and api_url(n), 90, f"{node.data.name} to listen")  # type: ignore[misc]
        yield laptop, desktop
    finally:
        logs = [node.stop() for node in (laptop, desktop)]
    for log in logs:
        assert "Traceback" not in log, log


pytestmark = pytest.mark.slow  # two real daemons


def test_two_daemons_pair_refuse_bad_codes_and_remove(pair_of_nodes: tuple[Node, Node]) -> None:
    laptop, desktop = pair_of_nodes
    laptop_id = laptop.json("status")["identity"]["peer_id"]
    desktop_id = desktop.json("status")["identity"]["peer_id"]

    # an expired code: the desktop's, a second old
    expired = desktop.json("devices", "pair")["code"]
    time.sleep(1.5)
    refused(laptop.cli("devices", "join", expired), "has expired")

    # wrong codes: the laptop's peer id and addresses with another secret, three times, burn the real one
    real = read_code(laptop.json("devices", "pair")["code"])
    wrong = PairingCode(real.peer_id, real.addrs, bytes(16)).text()
    refused(desktop.cli("devices", "join", wrong), "2 tries left")
    refused(desktop.cli("devices", "join", wrong), "1 try left")
    refused(desktop.cli("devices", "join", wrong), "burnt")
    refused(desktop.cli("devices", "join", real.text()), "burnt")
    assert desktop.json("devices", "list")["group_id"] is None and laptop.json("devices", "list")["group_id"] is None

    # a good code, printed with its QR code, joins
    shown = laptop.cli("devices", "pair")
    assert shown.returncode == 0 and "▄" in shown.stdout, shown.stderr
    (code,) = re.findall(r"devices join (BBPAIR1-\S+)", shown.stdout)
    joined = desktop.cli("devices", "join", code)
    assert joined.returncode == 0 and "joined the device group (2 devices)" in joined.stdout, joined.stderr
    lists = [node.json("devices", "list") for node in (laptop, desktop)]
    assert lists[0]["group_id"] == lists[1]["group_id"] is not None
    for listed, me in zip(lists, (laptop_id, desktop_id), strict=True):
        assert {(m["name"], m["peer_id"], m["this_device"]) for m in listed["members"]} == {
            ("laptop", laptop_id, me == laptop_id),
            ("desktop", desktop_id, me == desktop_id),
        }
    # the two meet at once (the join wakes the sync loop): the list says they are in sync
    wait_for(lambda: "sync: in sync, last seen" in laptop.cli("devices", "list").stdout, 30, "the two to be in sync")
    # the dashboard shows the same group, to the person's session
    browser = Browser(str(api_url(laptop)))
    browser.login(str(laptop.json("ui")["url"]))
    page = browser.request("GET", "/ui/devices")
    assert page.status == 200 and desktop_id in page.body and "laptop (this device)" in page.body, page.body[-800:]
    csrf = re.findall(r'name="csrf-token" content="([^"]+)"', page.body)[0]
    refused(desktop.cli("devices", "join", code), "in a device group already")

    # removing the desktop: a new epoch without it, and the desktop is told
    removed = laptop.json("devices", "remove", desktop_id)
    assert removed == {"removed": desktop_id, "left": False, "version": 3, "epoch": 1, "told": 1}
    after = laptop.json("devices", "list")
    assert after["epoch"] == 1 and [m["peer_id"] for m in after["members"]] == [laptop_id]
    out = desktop.json("devices", "list")
    assert out["group_id"] is None and out["removed"]["by"] == laptop_id and not out["removed"]["left"]
    # out of the group, the desktop may join again, but not with a code used already
    refused(desktop.cli("devices", "join", code), "was used already")

    # a code opened in the dashboard, with its QR code (a change: the session's CSRF token is needed)
    assert browser.request("POST", "/ui/devices/pair", {}).status == 403
    opened = browser.request("POST", "/ui/devices/pair", {"csrf": csrf})
    assert opened.status == 200 and "<svg" in opened.body and "devices join BBPAIR1-" in opened.body


def test_the_agents_token_is_refused_every_devices_route(pair_of_nodes: tuple[Node, Node]) -> None:
    laptop, _ = pair_of_nodes
    url = api_url(laptop)
    assert url
    api = Api(url, (laptop.data / "api.token").read_text().strip(), laptop)
    owner = (laptop.data / "owner.token").read_text().strip()
    for method, path, body in (
        ("POST", "/v1/devices/pair", None),
        ("POST", "/v1/devices/join", {"code": "BBPAIR1-AAAAAAAA-AAAA"}),
        ("GET", "/v1/devices", None),
        ("DELETE", "/v1/devices/12D3KooWanything", None),
    ):
        status, doc = api.call(method, path, body)
        assert status == 403 and "only the person decides this" in doc["error"], (path, status, doc)
    status, doc = api.call("GET", "/v1/devices", token=owner)
    assert status == 200 and "members" in doc, doc


async def test_mcp_offers_no_devices_tool_and_none_can_be_declared(tmp_path: Path) -> None:
    assert all(COMMANDS[name].person_only and COMMANDS[name].mcp is None for name in DEVICES)
    config = Config()
    client = LocalClient(config, NodePaths.of(tmp_path / "data", config), actor=AGENT)
    try:
        tools = [tool.name for tool in await build_server(client).list_tools()]
    finally:
        await client.aclose()
    assert tools and not [t for t in tools if "device" in t]
    sneaky = CommandSet("devices")
    sneaky.command("devices.sneak", NoArgs, mcp=McpSpec("devices_pair"), needs=Capability.MANAGE_DEVICES)(_noop)
    with pytest.raises(WiringError, match="only the person runs it, so it is no MCP tool"):
        index(sneaky.commands)


async def _noop(host: Any, request: NoArgs) -> dict[str, Any]:
    return {}
