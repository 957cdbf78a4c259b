"""Reaching a running daemon through its control socket: one JSON line out, one back.

For a daemon run with ``[api] enabled = false``, or one that has not reported its API's URL yet.
The socket is 0600 in the data dir, so only the node's user can open it."""

from __future__ import annotations

import asyncio
import json
import socket
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from pydantic import BaseModel

from node.actor import CLI
from node.clients.base import CommandUnavailable, ControlError, DaemonNotRunning, wire
from node.commands.registry import Command


@dataclass(frozen=True, slots=True)
class SocketClient:
    socket_path: Path
    actor: str = CLI
    transport: str = "control socket"

    async def call(self, command: Command[Any], request: BaseModel) -> Any:
        return await asyncio.to_thread(
            send, self.socket_path, command.name, wire(request), timeout=command.timeout_s, actor=self.actor
        )

    async def aclose(self) -> None:
        return None


def send(socket_path: Path, cmd: str, args: dict[str, Any], *, timeout: float, actor: str) -> Any:
    """One command over the socket (blocking) and its result; a refusal raises ``ControlError``."""
    if not socket_path.exists():
        raise DaemonNotRunning(f"no daemon is running on this data dir (no {socket_path})")
    try:
        with socket.socket(socket.AF_UNIX, socket.SOCK_STREAM) as sock:
            sock.settimeout(timeout)
            sock.connect(str(socket_path))
            sock.sendall(json.dumps({"cmd": cmd, "args": args, "actor": actor}).encode() + b"\n")
            data = b""
            while not data.endswith(b"\n"):
                chunk = sock.recv(65_536)
                if not chunk:
                    break
                data += chunk
    except (ConnectionRefusedError, FileNotFoundError):
        raise DaemonNotRunning("no daemon is running on this data dir (its control socket is stale)") from None
    except OSError as exc:
        raise ControlError(f"cannot talk to the daemon: {exc}") from None
    try:
        answer = json.loads(data)
    except ValueError:
        raise ControlError("the daemon sent an unreadable answer") from None
    if not answer.get("ok"):
        kind = CommandUnavailable if answer.get("unavailable") else ControlError
        raise kind(str(answer.get("error")), int(answer.get("status") or 400))
    return answer.get("result")
