"""Reaching a running daemon through its local HTTP API, as any agent would.

The daemon reports its API's URL in ``status.json``; the bearer token is the 0600 file ``init``
made. Each command's route (``Command.route``) says the method and path; path fields come out of
the request, the rest goes in the JSON body (POST) or the query string (GET, DELETE)."""

from __future__ import annotations

import asyncio
import json
import urllib.error
import urllib.request
from dataclasses import dataclass
from pathlib import Path
from typing import Any
from urllib.parse import quote, urlencode

from pydantic import BaseModel

from node.actor import CLI
from node.clients.base import CommandUnavailable, ControlError, wire
from node.commands.registry import Command, HttpRoute


@dataclass(frozen=True, slots=True)
class HttpClient:
    base_url: str
    token_file: Path
    actor: str = CLI
    transport: str = "api"

    async def call(self, command: Command[Any], request: BaseModel) -> Any:
        if command.route is None:
            raise ControlError(f"{command.name} has no HTTP route")
        return await asyncio.to_thread(self._send, command.route, wire(request), command.timeout_s)

    async def aclose(self) -> None:
        return None

    def _send(self, route: HttpRoute, args: dict[str, Any], timeout: float) -> Any:
        if not self.base_url.startswith("http://"):
            raise ControlError(f"the daemon reported an API URL this client does not use: {self.base_url!r}")
        path = route.path
        for name in route.path_fields:
            path = path.replace("{" + name + "}", quote(str(args.pop(name)), safe=""))
        body: bytes | None = None
        headers = {"Authorization": f"Bearer {self._token()}", "Accept": "application/json"}
        if route.method == "POST":
            body = json.dumps(args).encode()
            headers["Content-Type"] = "application/json"
        elif args:
            path += "?" + urlencode([(k, _query_value(v)) for k, v in args.items()], doseq=True)
        request = urllib.request.Request(self.base_url + path, data=body, headers=headers, method=route.method)  # noqa: S310
        try:
            with urllib.request.urlopen(request, timeout=timeout) as response:  # noqa: S310 - our own loopback URL
                return json.loads(response.read())
        except urllib.error.HTTPError as exc:
            message, unavailable = _refusal(exc, self.token_file)
            raise (CommandUnavailable if unavailable else ControlError)(message, exc.code) from None
        except (urllib.error.URLError, TimeoutError, ConnectionError) as exc:
            reason = getattr(exc, "reason", exc)
            raise ControlError(f"cannot reach the daemon's API at {self.base_url}: {reason}") from None
        except ValueError:
            raise ControlError("the daemon's API sent an unreadable answer") from None

    def _token(self) -> str:
        try:
            return self.token_file.read_text().strip()
        except OSError as exc:
            raise ControlError(f"cannot read the API token {self.token_file}: {exc.strerror}") from None


def _query_value(value: Any) -> Any:
    if isinstance(value, bool):
        return "true" if value else "false"
    return value


def _refusal(exc: urllib.error.HTTPError, token_file: Path) -> tuple[str, bool]:
    """The daemon's message for a refusal, and whether it says the command's part is off here."""
    try:
        doc = json.loads(exc.read())
        message, unavailable = str(doc["error"]), bool(doc.get("unavailable"))
    except (ValueError, KeyError, TypeError, OSError):
        message, unavailable = f"HTTP {exc.code}", False
    if exc.code == 401:
        message = f"the daemon refused the token in {token_file} (was the data dir re-initialised?): {message}"
    return message, unavailable
