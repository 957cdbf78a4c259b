"""The local HTTP API: JSON in and out, bearer token, loopback only unless the config says otherwise.

Every route (``node.commands.routes``) runs a command of the daemon's command table, the same
table the control socket serves. Errors are JSON ``{"error": "..."}`` with the status
``node.error_status`` gives each error class: 401 without the right token, 400 for bad
input (the message names the field; a body nested past 64 levels too), 403 when governance
keeps a crystal on this node, 404 for what does not exist, 502 when the chain or a peer does
not answer, 503 when the part behind a route is off (``"unavailable": true``) or not started,
500 (logged) for anything else. ``GET /v1/openapi.json`` and ``GET /v1/health``
need no token; ``GET /metrics`` (Prometheus text) does.
"""

from __future__ import annotations

import hmac
import json
from collections.abc import Awaitable, Callable, Mapping
from pathlib import Path
from typing import Any

from aiohttp import web
from pydantic import BaseModel, ValidationError

from node.commands.routes import ROUTES, Route
from node.error_status import UNEXPECTED, http_status, message_of
from node.logs import get_logger
from node.runtime.actor import AGENT, HEADER, acting_as
from node.servers.api_token import ensure_token
from node.servers.control import Handler
from node.servers.json_input import json_object

log = get_logger("node.api")
MAX_BODY_BYTES = 1_048_576
OPEN_PATHS = frozenset({"/v1/openapi.json", "/v1/health"})


def _error(status: int, message: str, *, unavailable: bool = False) -> web.Response:
    """``unavailable``: the command's part is off on this node, so a client may do the work itself."""
    return web.json_response({"error": message, **({"unavailable": True} if unavailable else {})}, status=status)


def _validation_message(exc: ValidationError) -> str:
    error = exc.errors()[0]
    where = ".".join(str(p) for p in error["loc"]) or "body"
    return f"{where}: {error['msg']}"


class ApiServer:
    name = "api"

    def __init__(
        self,
        host: str,
        port: int,
        token_file: Path,
        handlers: Callable[[], Mapping[str, Handler]],
        *,
        metrics: Callable[[], bytes] | None = None,
        observe: Callable[[str, int], None] | None = None,
    ) -> None:
        self._host = host
        self._port = port
        self._token_file = token_file
        self._handlers = handlers
        self._metrics = metrics
        self._observe = observe or (lambda command, status: None)
        self._token = ""
        self._runner: web.AppRunner | None = None
        self.url = ""

    async def start(self) -> None:
        self._token = ensure_token(self._token_file)
        app = web.Application(middlewares=[self._guard], client_max_size=MAX_BODY_BYTES)
        app.router.add_get("/v1/health", self._health)
        app.router.add_get("/v1/openapi.json", self._openapi)
        app.router.add_get("/metrics", self._serve_metrics)
        for route in ROUTES:
            app.router.add_route(route.method, route.path, self._endpoint(route))
        self._runner = web.AppRunner(app, access_log=None)
        await self._runner.setup()
        site = web.TCPSite(self._runner, self._host, self._port)
        await site.start()
        server = site._server  # aiohttp has no public accessor for the bound port (port 0 in tests)
        sockets = getattr(server, "sockets", None) or []
        port = sockets[0].getsockname()[1] if sockets else self._port
        host = f"[{self._host}]" if ":" in self._host else self._host
        self.url = f"http://{host}:{port}"
        log.info("api.listening", url=self.url)

    async def stop(self) -> None:
        if self._runner is not None:
            await self._runner.cleanup()
            self._runner = None

    def details(self) -> dict[str, Any]:
        return {"url": self.url, "token_file": str(self._token_file), "summary": f"API at {self.url or '-'}"}

    @web.middleware
    async def _guard(
        self, request: web.Request, handler: Callable[[web.Request], Awaitable[web.StreamResponse]]
    ) -> web.StreamResponse:
        if request.path not in OPEN_PATHS:
            given = request.headers.get("Authorization", "")
            expected = f"Bearer {self._token}"
            if not hmac.compare_digest(given.encode(), expected.encode()):
                # Says what is missing, never where the token lives: a caller without it has no business
                # knowing this machine's paths (the owner finds it with `bitterbot-node status`).
                response = _error(401, "a bearer token is required: Authorization: Bearer <the node's API token>")
                response.headers["WWW-Authenticate"] = 'Bearer realm="bitterbot-node"'
                return response
        try:
            return await handler(request)
        except web.HTTPException as exc:
            return _error(exc.status, exc.reason or "not found")

    def _endpoint(self, route: Route) -> Callable[[web.Request], Awaitable[web.StreamResponse]]:
        async def endpoint(request: web.Request) -> web.StreamResponse:
            response = await self._run(route, request)
            self._observe(route.command, response.status)
            return response

        return endpoint

    async def _run(self, route: Route, request: web.Request) -> web.Response:
        try:
            with acting_as(request.headers.get(HEADER, AGENT)):
                return await self._call(route, request)
        except ValueError as exc:  # an unknown actor
            return _error(400, str(exc))

    async def _call(self, route: Route, request: web.Request) -> web.Response:
        try:
            args = await self._arguments(request, route)
        except ValidationError as exc:
            return _error(400, _validation_message(exc))
        except ValueError as exc:
            return _error(400, str(exc))
        command = self._handlers().get(route.command)
        if command is None:
            return _error(
                503, f"{route.command} is not available on this node (is its part enabled?)", unavailable=True
            )
        try:
            return web.json_response(await command(args), dumps=lambda o: json.dumps(o, default=str))
        except Exception as exc:
            status = http_status(exc)
            if status == UNEXPECTED:
                log.error("api.command_failed", exc_info=True, command=route.command)
                return _error(status, f"{route.command} failed: {exc}")
            if isinstance(exc, ValidationError):
                return _error(status, _validation_message(exc))
            return _error(status, message_of(exc))

    async def _arguments(self, request: web.Request, route: Route) -> dict[str, Any]:
        """Path parameters, plus the JSON body (POST) or the query string (GET, DELETE), validated."""
        raw: dict[str, Any] = {}
        if request.method == "POST" and request.can_read_body:
            raw = json_object(await request.read(), "the body")
        elif request.query:
            raw = {k: (v if len(vs := request.query.getall(k)) == 1 else vs) for k, v in request.query.items()}
        if route.body is not None:
            model: BaseModel = route.body.model_validate(raw)
            raw = model.model_dump(mode="json", exclude_none=True)
        elif raw:
            raise ValueError(f"{route.method} {route.path} takes no parameters")
        return {**raw, **request.match_info}

    async def _health(self, request: web.Request) -> web.Response:
        return web.json_response({"ok": True})

    async def _openapi(self, request: web.Request) -> web.Response:
        return web.json_response(openapi_document())

    async def _serve_metrics(self, request: web.Request) -> web.Response:
        if self._metrics is None:
            return _error(404, "metrics are off")
        return web.Response(body=self._metrics(), content_type="text/plain", charset="utf-8")


def openapi_document() -> dict[str, Any]:
    """OpenAPI 3.1, generated from the route table and the request models' JSON schemas."""
    paths: dict[str, dict[str, Any]] = {}
    schemas: dict[str, Any] = {}
    for route in ROUTES:
        operation: dict[str, Any] = {
            "summary": route.summary,
            "operationId": route.command.replace(".", "_"),
            "tags": [route.tag],
            "responses": {
                "200": {"description": "JSON result"},
                "400": {"description": "bad input; the error names the field"},
                "401": {"description": "missing or wrong bearer token"},
                "404": {"description": "no such thing"},
                "502": {"description": "a service the node depends on (the chain) did not answer"},
                "503": {"description": "the part serving this is off on this node"},
            },
        }
        params = [
            {"name": part[1:-1], "in": "path", "required": True, "schema": {"type": "string"}}
            for part in route.path.split("/")
            if part.startswith("{")
        ]
        if route.body is not None:
            schema = route.body.model_json_schema(ref_template="#/components/schemas/{model}")
            schemas.update(schema.pop("$defs", {}))
            schemas[route.body.__name__] = schema
            ref = {"$ref": f"#/components/schemas/{route.body.__name__}"}
            if route.method == "POST":
                operation["requestBody"] = {"required": True, "content": {"application/json": {"schema": ref}}}
            else:
                params += [
                    {"name": name, "in": "query", "required": name in schema.get("required", []), "schema": prop}
                    for name, prop in schema.get("properties", {}).items()
                ]
        if params:
            operation["parameters"] = params
        paths.setdefault(route.path, {})[route.method.lower()] = operation
    return {
        "openapi": "3.1.0",
        "info": {"title": "bitterbot-node local API", "version": "1"},
        "components": {
            "securitySchemes": {"bearer": {"type": "http", "scheme": "bearer"}},
            "schemas": schemas,
        },
        "security": [{"bearer": []}],
        "paths": paths,
    }
