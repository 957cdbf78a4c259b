"""The daemon's local control socket: how the CLI reaches a daemon run with its HTTP API off.

A Unix socket in the data dir (mode 0600, so only the node's user can use it).
One request per connection: a JSON line ``{"cmd": name, "args": {...}}``; one JSON
line back, ``{"ok": true, "result": ...}`` or ``{"ok": false, "error": "..."}``.
Every command of ``node.commands.catalog`` is served (``node.commands.catalog``); an unknown
command or bad arguments get an error answer, never a dropped connection (an unknown command's
answer, and one whose part this node does not run, also say ``"unavailable": true``, so a client
can tell a part that is off from a refusal). The client is ``node.clients.socket``.
"""

from __future__ import annotations

import asyncio
import json
import os
from pathlib import Path
from typing import Any

from ground.events import get_logger
from node.actor import AGENT, acting_as
from node.commands.catalog import Hosts, dispatch
from node.error_status import UNEXPECTED, refusal_of
from node.servers.json_input import json_object

log = get_logger("node.control")
MAX_REQUEST_BYTES = 1_048_576


class ControlServer:
    name = "control"

    def __init__(self, path: Path, hosts: Hosts) -> None:
        self.path = path
        self._hosts = hosts
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
        if not isinstance(args, dict):
            return {"ok": False, "error": "args must be an object"}
        try:
            with acting_as(str(request.get("actor", AGENT))):
                return {"ok": True, "result": await dispatch(self._hosts, request["cmd"], args)}
        except Exception as exc:
            refused = refusal_of(exc, request["cmd"])
            if refused.status == UNEXPECTED:
                log.error("control.command_failed", exc_info=True, cmd=request["cmd"], error_id=refused.error_id)
            answer = {"ok": False, "error": refused.message, "status": refused.status}
            return answer | ({"unavailable": True} if refused.unavailable else {})
