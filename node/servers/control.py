"""The daemon's local control socket: how the CLI reaches a daemon run with its HTTP API off.

A Unix socket in the data dir (mode 0600, so only the node's user can use it).
One request per connection: a JSON line ``{"cmd": name, "args": {...}}``; one JSON
line back, ``{"ok": true, "result": ...}`` or ``{"ok": false, "error": "..."}``.
Parts contribute commands (``commands()``); an unknown command or bad arguments
get an error answer, never a dropped connection (an unknown command's answer also says
``"unavailable": true``, so a client can tell a part that is off from a refusal).
"""

from __future__ import annotations

import asyncio
import json
import os
import socket
from collections.abc import Awaitable, Callable, Mapping
from pathlib import Path
from typing import Any

from node.error_status import UNEXPECTED, http_status, message_of
from node.logs import get_logger
from node.runtime.actor import AGENT, acting_as
from node.servers.json_input import json_object

log = get_logger("node.control")
MAX_REQUEST_BYTES = 1_048_576
Handler = Callable[[dict[str, Any]], Awaitable[Any]]


class ControlError(Exception):
    """The daemon answered with an error (``status``: its HTTP status, ``node.error_status``), or could
    not be reached."""

    def __init__(self, message: str, status: int = 400) -> None:
        super().__init__(message)
        self.status = status


class DaemonNotRunning(ControlError):
    pass


class CommandUnavailable(ControlError):
    """The daemon runs without the part that serves this command (e.g. P2P disabled)."""


class ControlServer:
    name = "control"

    def __init__(self, path: Path, handlers: Callable[[], Mapping[str, Handler]]) -> None:
        self.path = path
        self._handlers = handlers
        self._server: asyncio.AbstractServer | None = None

    async def start(self) -> None:
        if self.path.exists() or self.path.is_symlink():
            self.path.unlink()  # a stale socket from a killed daemon (the lock file proved we are alone)
        self._server = await asyncio.start_unix_server(self._serve, path=str(self.path), limit=MAX_REQUEST_BYTES)
        os.chmod(self.path, 0o600)

    async def stop(self) -> None:
        if self._server is not None:
            self._server.close()
            await self._server.wait_closed()
            self._server = None
        if self.path.exists():
            self.path.unlink()

    async def _serve(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        try:
            answer = await self._answer(reader)
            writer.write(json.dumps(answer, default=str).encode() + b"\n")
            await writer.drain()
        except (ConnectionError, asyncio.IncompleteReadError):
            pass
        finally:
            writer.close()

    async def _answer(self, reader: asyncio.StreamReader) -> dict[str, Any]:
        try:
            request = json_object(await reader.readline(), "a request")
        except (ValueError, asyncio.LimitOverrunError) as exc:
            return {"ok": False, "error": f"a request is one JSON object on one line: {exc}"}
        if not isinstance(request.get("cmd"), str):
            return {"ok": False, "error": 'a request looks like {"cmd": "...", "args": {...}}'}
        args = request.get("args", {})
        handler = self._handlers().get(request["cmd"])
        if handler is None:
            return {"ok": False, "error": f"unknown command {request['cmd']!r}", "unavailable": True}
        if not isinstance(args, dict):
            return {"ok": False, "error": "args must be an object"}
        try:
            with acting_as(str(request.get("actor", AGENT))):
                return {"ok": True, "result": await handler(args)}
        except KeyError as exc:  # a handler reading an argument the request lacks
            return {"ok": False, "error": f"missing argument {exc}", "status": 400}
        except Exception as exc:
            status = http_status(exc)
            if status == UNEXPECTED:
                log.error("control.command_failed", exc_info=True, cmd=request["cmd"])
                return {"ok": False, "error": f"{request['cmd']} failed: {exc}", "status": status}
            return {"ok": False, "error": message_of(exc), "status": status}


def call(
    socket_path: Path, cmd: str, args: dict[str, Any] | None = None, *, timeout: float = 30, actor: str = AGENT
) -> Any:
    """Send one command to the daemon (blocking; for the CLI) and return its result."""
    if not socket_path.exists():
        raise DaemonNotRunning(f"no daemon is running on this data dir (no {socket_path})")
    try:
        with socket.socket(socket.AF_UNIX, socket.SOCK_STREAM) as sock:
            sock.settimeout(timeout)
            sock.connect(str(socket_path))
            sock.sendall(json.dumps({"cmd": cmd, "args": args or {}, "actor": actor}).encode() + b"\n")
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
