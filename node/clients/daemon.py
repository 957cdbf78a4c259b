"""How the CLI reaches a running daemon: its local HTTP API, as any agent would.

The daemon reports its API's URL in ``status.json``; the bearer token is the 0600 file
``init`` made. A daemon running with ``[api] enabled = false`` (or one that has not
reported its URL yet) is reached through its control socket instead: the same command
table behind a Unix socket only its user can open. Either way a refusal comes back as
``ControlError`` carrying the daemon's own message.
"""

from __future__ import annotations

import json
import urllib.error
import urllib.request
from dataclasses import dataclass
from pathlib import Path
from typing import Any
from urllib.parse import quote, urlencode

from node.commands.routes import ROUTES, Route
from node.paths import NodePaths
from node.runtime.actor import CLI, HEADER
from node.runtime.status import probe_daemon
from node.servers.control import CommandUnavailable, ControlError, call

ROUTE_OF_COMMAND: dict[str, Route] = {route.command: route for route in ROUTES}


@dataclass(frozen=True, slots=True)
class DaemonClient:
    paths: NodePaths
    api_url: str | None  # None: the control socket
    actor: str = CLI  # what the daemon's audit trail records for changes made through this client

    @property
    def transport(self) -> str:
        return "api" if self.api_url else "control socket"

    def call(self, command: str, args: dict[str, Any] | None = None, *, timeout: float = 30) -> Any:
        args = {k: v for k, v in (args or {}).items() if v is not None}
        route = ROUTE_OF_COMMAND.get(command)
        if self.api_url is None or route is None:
            return call(self.paths.control_socket, command, args, timeout=timeout, actor=self.actor)
        return self._http(self.api_url, route, args, timeout)

    def _http(self, base_url: str, route: Route, args: dict[str, Any], timeout: float) -> Any:
        if not base_url.startswith("http://"):
            raise ControlError(f"the daemon reported an API URL this client does not use: {base_url!r}")
        path = route.path
        for name in [part[1:-1] for part in route.path.split("/") if part.startswith("{")]:
            if name not in args:
                raise ControlError(f"{route.command} needs {name!r}")
            path = path.replace("{" + name + "}", quote(str(args.pop(name)), safe=""))
        body: bytes | None = None
        headers = {"Authorization": f"Bearer {self._token()}", "Accept": "application/json", HEADER: self.actor}
        if route.method == "POST":
            body = json.dumps(args).encode()
            headers["Content-Type"] = "application/json"
        elif args:
            path += "?" + urlencode([(k, _query_value(v)) for k, v in args.items()], doseq=True)
        request = urllib.request.Request(base_url + path, data=body, headers=headers, method=route.method)  # noqa: S310
        try:
            with urllib.request.urlopen(request, timeout=timeout) as response:  # noqa: S310 - our own loopback URL
                return json.loads(response.read())
        except urllib.error.HTTPError as exc:
            message, unavailable = _refusal(exc, self.paths.api_token_file)
            raise (CommandUnavailable if unavailable else ControlError)(message, exc.code) from None
        except (urllib.error.URLError, TimeoutError, ConnectionError) as exc:
            reason = getattr(exc, "reason", exc)
            raise ControlError(f"cannot reach the daemon's API at {base_url}: {reason}") from None
        except ValueError:
            raise ControlError("the daemon's API sent an unreadable answer") from None

    def _token(self) -> str:
        try:
            return self.paths.api_token_file.read_text().strip()
        except OSError as exc:
            raise ControlError(f"cannot read the API token {self.paths.api_token_file}: {exc.strerror}") from None


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


def find_daemon(paths: NodePaths, *, actor: str = CLI) -> DaemonClient | None:
    """The running daemon on this data dir, or None when there is none."""
    probe = probe_daemon(paths.data_dir)
    if not probe.running:
        return None
    url = None
    if probe.status is not None:
        url = probe.status.details.get("api", {}).get("url") or None
    return DaemonClient(paths, url, actor)
