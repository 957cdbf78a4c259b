"""The local HTTP API: JSON in and out, bearer token, loopback only unless the config says otherwise.

Every command with a route (``node.commands.catalog``) is served at it, through the same
dispatch the control socket uses. Errors are JSON ``{"error": "..."}`` with the status
``node.error_status`` gives each error class: 401 without the right token, 400 for bad
input (the message names the field; a body nested past 64 levels too), 403 when governance
keeps a crystal on this node, 404 for what does not exist, 502 when the chain or a peer does
not answer, 503 when the part behind a route is off (``"unavailable": true``) or not started,
500 (logged) for anything else. ``GET /v1/openapi.json`` and ``GET /v1/health``
need no token; ``GET /metrics`` (Prometheus text) does. The dashboard's pages (``/`` and
``/ui/…``, ``node.dashboard``) take its session cookie instead of the token.
"""

from __future__ import annotations

import hmac
import json
from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import Any

from aiohttp import web

from ground.events import get_logger
from node.actor import AGENT, CLI, acting_as
from node.commands.catalog import COMMANDS, Hosts, dispatch
from node.commands.registry import Command
from node.config_loading import LoadedConfig
from node.dashboard.web import Dashboard, is_dashboard_path
from node.error_status import UNEXPECTED, refusal_of
from node.paths import NodePaths
from node.servers import cli_call
from node.servers.api_token import ensure_token
from node.servers.json_input import json_object
from node.servers.openapi import openapi_document

log = get_logger("node.api")
MAX_BODY_BYTES = 1_048_576
OPEN_PATHS = frozenset({"/v1/openapi.json", "/v1/health"})


def _error(status: int, message: str, *, unavailable: bool = False) -> web.Response:
    """``unavailable``: the command's part is off on this node, so a client may do the work itself."""
    return web.json_response({"error": message, **({"unavailable": True} if unavailable else {})}, status=status)


class ApiServer:
    name = "api"

    def __init__(
        self,
        host: str,
        port: int,
        token_file: Path,
        hosts: Hosts,
        *,
        metrics: Callable[[], bytes] | None = None,
        observe: Callable[[str, int], None] | None = None,
        dashboard: Dashboard | None = None,
        owner_token_file: Path | None = None,
        locate: Callable[[], tuple[LoadedConfig, NodePaths]] | None = None,
    ) -> None:
        self._host = host
        self._port = port
        self._token_file = token_file
        self._owner_token_file = owner_token_file or token_file.with_name("owner.token")
        self._hosts = hosts
        self._metrics = metrics
        self._observe = observe or (lambda command, status: None)
        self._dashboard = dashboard
        self._locate = locate  # this node's config and paths: the daemon answers command lines with them
        self._token = ""
        self._owner_token = ""
        self._runner: web.AppRunner | None = None
        self.url = ""

    async def start(self) -> None:
        self._token = ensure_token(self._token_file)
        self._owner_token = ensure_token(self._owner_token_file)
        app = web.Application(middlewares=[self._guard], client_max_size=MAX_BODY_BYTES)
        app.router.add_get("/v1/health", self._health)
        app.router.add_get("/v1/openapi.json", self._openapi)
        app.router.add_get("/metrics", self._serve_metrics)
        if self._locate is not None:
            app.router.add_post("/v1/cli", self._command_line)
        routes = [c.route for c in COMMANDS.values() if c.route is not None]
        # A GET of a POST-only path would otherwise fall to a GET pattern beside it ("GET
        # /v1/memory/search" answered 404 "no crystal 'search'"): it is told the method instead.
        taken = {(r.method, r.path) for r in routes}
        for route in routes:
            if route.method == "POST" and ("GET", route.path) not in taken:
                app.router.add_get(route.path, _use_post(route.path))
        for command in COMMANDS.values():
            if command.route is not None:
                app.router.add_route(command.route.method, command.route.path, self._endpoint(command))
        if self._dashboard is not None:
            self._dashboard.add_routes(app)
        self._runner = web.AppRunner(app, access_log=None)
        await self._runner.setup()
        site = web.TCPSite(self._runner, self._host, self._port)
        await site.start()
        server = site._server  # aiohttp has no public accessor for the bound port (port 0 in tests)
        sockets = getattr(server, "sockets", None) or []
        port = sockets[0].getsockname()[1] if sockets else self._port
        host = f"[{self._host}]" if ":" in self._host else self._host
        self.url = f"http://{host}:{port}"
        if self._dashboard is not None:
            self._dashboard.base_url = self.url
            await self._dashboard.start()
        log.info("api.listening", url=self.url)

    async def stop(self) -> None:
        if self._dashboard is not None:
            await self._dashboard.stop()
        if self._runner is not None:
            await self._runner.cleanup()
            self._runner = None

    def details(self) -> dict[str, Any]:
        return {"url": self.url, "token_file": str(self._token_file), "summary": f"API at {self.url or '-'}"}

    @web.middleware
    async def _guard(
        self, request: web.Request, handler: Callable[[web.Request], Awaitable[web.StreamResponse]]
    ) -> web.StreamResponse:
        if self._dashboard is not None and is_dashboard_path(request.path):
            return await self._dashboard.guard(request, handler)  # a session cookie, not the token
        if request.path not in OPEN_PATHS:
            given = request.headers.get("Authorization", "").encode()
            # Who asks is who authenticated: the owner's token is the person (the CLI), the API token
            # the agent. Nothing the request says about itself counts.
            owner = hmac.compare_digest(given, f"Bearer {self._owner_token}".encode())
            agent = hmac.compare_digest(given, f"Bearer {self._token}".encode())
            request["actor"] = CLI if owner else AGENT
            if not (owner or agent):
                # Says what is missing or wrong, never where the token lives: a caller without it has no
                # business knowing this machine's paths (the owner finds it with `bitterbot-node status`).
                response = _error(
                    401,
                    "the bearer token is not this node's: it changes when the data dir is new"
                    if given
                    else "a bearer token is required: Authorization: Bearer <the node's API token>",
                )
                response.headers["WWW-Authenticate"] = 'Bearer realm="bitterbot-node"'
                return response
        try:
            return await handler(request)
        except web.HTTPException as exc:
            return _error(exc.status, exc.reason or "not found")

    def _endpoint(self, command: Command[Any]) -> Callable[[web.Request], Awaitable[web.StreamResponse]]:
        async def endpoint(request: web.Request) -> web.StreamResponse:
            response = await self._run(command, request)
            self._observe(command.name, response.status)
            return response

        return endpoint

    async def _run(self, command: Command[Any], request: web.Request) -> web.Response:
        try:
            args = await _arguments(request)
            with acting_as(request.get("actor", AGENT)):
                result = await dispatch(self._hosts, command.name, args)
        except web.HTTPRequestEntityTooLarge:
            return _error(413, f"the body is larger than the API takes ({MAX_BODY_BYTES:,} bytes)")
        except Exception as exc:
            refused = refusal_of(exc, command.name)
            if refused.status == UNEXPECTED:
                log.error("api.command_failed", exc_info=True, command=command.name, error_id=refused.error_id)
            return _error(refused.status, refused.message, unavailable=refused.unavailable)
        return web.json_response(result, dumps=lambda o: json.dumps(o, default=str))

    async def _command_line(self, request: web.Request) -> web.Response:
        """A command line the person's thin CLI sends (``node.servers.cli_call``): the owner's token only."""
        if request.get("actor") != CLI:
            return _error(403, "command lines are the person's: the owner's token only")
        assert self._locate is not None
        try:
            body = json_object(await request.read(), "the body")
        except web.HTTPRequestEntityTooLarge:
            return _error(413, f"the body is larger than the API takes ({MAX_BODY_BYTES:,} bytes)")
        except ValueError as exc:
            return _error(400, str(exc))

        async def run(command: Command[Any], args: dict[str, Any]) -> Any:
            with acting_as(CLI):
                return await dispatch(self._hosts, command.name, args)

        return web.json_response(await cli_call.answer(body, run, self._locate, self._observe))

    async def _health(self, request: web.Request) -> web.Response:
        return web.json_response({"ok": True})

    async def _openapi(self, request: web.Request) -> web.Response:
        return web.json_response(openapi_document())

    async def _serve_metrics(self, request: web.Request) -> web.Response:
        if self._metrics is None:
            return _error(404, "metrics are off")
        return web.Response(body=self._metrics(), content_type="text/plain", charset="utf-8")


def _use_post(path: str) -> Callable[[web.Request], Awaitable[web.StreamResponse]]:
    async def use_post(request: web.Request) -> web.StreamResponse:
        response = _error(405, f"{path} takes POST with a JSON body")
        response.headers["Allow"] = "POST"
        return response

    return use_post


async def _arguments(request: web.Request) -> dict[str, Any]:
    """The JSON body (POST) or the query string (GET, DELETE), then the path's fields over them:
    the command validates the whole against its request model."""
    raw: dict[str, Any] = {}
    if request.method == "POST" and request.can_read_body:
        raw = json_object(await request.read(), "the body")
    elif request.query:
        raw = {k: (v if len(vs := request.query.getall(k)) == 1 else vs) for k, v in request.query.items()}
    return {**raw, **request.match_info}
