"""The ``devices`` commands (issue 51): pairing the person's devices into one device group, run on
``memory.devices.service.DevicesService``. The person's alone (``MANAGE_DEVICES``): the agent's
token is refused and MCP has no tool for them."""

from __future__ import annotations

from typing import Any, Protocol

from pydantic import Field

from ground.authority import Capability
from node.commands.registry import CommandSet, HttpRoute, NoArgs, Request
from node.commands.texts import devices as text
from node.commands.texts.cli_form import CliSpec


class DevicesHost(Protocol):
    """What the commands need (``memory.devices.service.DevicesService``)."""

    async def pair(self) -> dict[str, Any]: ...

    async def join(self, code: str, name: str | None) -> dict[str, Any]: ...

    async def listing(self) -> dict[str, Any]: ...

    async def remove(self, device: str) -> dict[str, Any]: ...


class JoinArgs(Request):
    code: str = Field(
        min_length=8, max_length=2_000, description="The code `devices pair` printed on the other device."
    )
    name: str | None = Field(
        default=None,
        min_length=1,
        max_length=64,
        pattern=r"^[^\x00-\x1f\x7f]+$",  # shown in terminals: no control character
        description="What to call this device in the group ([node] name if not given).",
    )


class RemoveArgs(Request):
    device: str = Field(
        min_length=1, max_length=128, description="The device's peer id (or its name, if no other has it)."
    )


DEVICES = CommandSet("devices")
commands = DEVICES.command


@commands(
    "devices.pair",
    NoArgs,
    route=HttpRoute("POST", "/v1/devices/pair", "devices"),
    cli=CliSpec("devices", "pair", render=text.paired),
    needs=Capability.MANAGE_DEVICES,
)
async def pair(devices: DevicesHost, request: NoArgs) -> dict[str, Any]:
    """A one-time code that joins another of your devices to this one's group (10 minutes, used once)."""
    return await devices.pair()


@commands(
    "devices.join",
    JoinArgs,
    route=HttpRoute("POST", "/v1/devices/join", "devices"),
    cli=CliSpec("devices", "join", arguments=("code",), render=text.joined),
    needs=Capability.MANAGE_DEVICES,
)
async def join(devices: DevicesHost, request: JoinArgs) -> dict[str, Any]:
    """Join the device group of the device that printed CODE."""
    return await devices.join(request.code, request.name)


@commands(
    "devices.list",
    NoArgs,
    route=HttpRoute("GET", "/v1/devices", "devices"),
    cli=CliSpec("devices", "list", render=text.listing),
    needs=Capability.MANAGE_DEVICES,
)
async def listing(devices: DevicesHost, request: NoArgs) -> dict[str, Any]:
    """The devices of this device's group: name, peer id, which is this one, and their sync."""
    return await devices.listing()


@commands(
    "devices.remove",
    RemoveArgs,
    route=HttpRoute("DELETE", "/v1/devices/{device}", "devices"),
    cli=CliSpec("devices", "remove", arguments=("device",), render=text.removed),
    needs=Capability.MANAGE_DEVICES,
)
async def remove(devices: DevicesHost, request: RemoveArgs) -> dict[str, Any]:
    """Remove a device from the group: a new group key the removed device never gets (this device's own id: leave)."""
    return await devices.remove(request.device)
