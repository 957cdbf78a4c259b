"""The dashboard's HTTP side: routes under /ui/, the login by one-time code, the session cookie,
CSRF on every POST, and the security headers every page carries.

The API server hands it every request for ``/`` or ``/ui/…`` instead of checking the bearer token;
nothing here answers with data before the session cookie checks out. Pages run the node's own
commands (``node.commands.catalog``) in-process, as the person (actor ``dashboard``).
"""

from __future__ import annotations

import asyncio
import contextlib
import json
from collections.abc import Awaitable, Callable, Mapping
from importlib import resources
from typing import Any
from urllib.parse import urlsplit

from aiohttp import web
from jinja2 import Environment, PackageLoader, select_autoescape

from ground.clock import wall_clock_ms
from ground.events import get_logger
from memory.dynamics.importance import DecaySettings
from node.actor import DASHBOARD, acting_as
from node.commands.catalog import Hosts, dispatch
from node.config import is_loopback
from node.dashboard import pages
from node.dashboard.history import SAMPLE_EVERY_S, History, sample_of
from node.dashboard.sessions import Session, SessionLimits, Sessions
from node.error_status import UNEXPECTED, refusal_of

log = get_logger("node.dashboard")
COOKIE = "bb_session"
CSRF_HEADER = "X-CSRF-Token"
#: Nothing from elsewhere, no inline script or style: a stored crystal's text can never run.
CSP = (
    "default-src 'none'; script-src 'self'; style-src 'self'; img-src 'self'; connect-src 'self'; "
    "form-action 'self'; frame-ancestors 'none'; base-uri 'none'"
)
SECURITY_HEADERS = {
    "Content-Security-Policy": CSP,
    "X-Content-Type-Options": "nosniff",
    "X-Frame-Options": "DENY",
    "Referrer-Policy": "no-referrer",  # a login code in the address bar never leaves in a Referer
    "Cache-Control": "no-store",
}
STATIC_TYPES = {".css": "text/css", ".js": "text/javascript", ".svg": "image/svg+xml"}
OPEN_PAGES = frozenset({"/ui/login", "/ui/static/style.css"})
Handler = Callable[[web.Request], Awaitable[web.StreamResponse]]


def is_dashboard_path(path: str) -> bool:
    return path == "/" or path == "/ui" or path.startswith("/ui/")


class Dashboard:
    """The host of the ``ui`` commands (a login URL) and the pages' routes."""

    def __init__(
        self,
        hosts: Hosts,
        *,
        session_hours: float,
        decay: DecaySettings | None = None,
        dream_every_min: float = 120,
        loopback_only: bool = True,
        now_ms: Callable[[], int] = wall_clock_ms,
    ) -> None:
        self._loopback_only = loopback_only
        self.decay = decay or DecaySettings()
        self.dream_every_min = dream_every_min
        self.sessions = Sessions(now_ms, SessionLimits(session_ttl_ms=int(session_hours * 3_600_000)))
        self._hosts = hosts
        self.base_url = ""  # the API server's, once it listens
        self._templates = Environment(
            loader=PackageLoader("node.dashboard", "templates"), autoescape=select_autoescape(default=True)
        )
        self._templates.filters["when"] = pages.when
        self._templates.filters["usdc"] = pages.usdc
        self.now_ms = now_ms
        self.history = History()
        self._sampler: asyncio.Task[None] | None = None

    async def start(self) -> None:
        """Begin sampling the node for the charts (the API server starts and stops this)."""
        self._sampler = asyncio.create_task(self._sample_every(SAMPLE_EVERY_S), name="dashboard-history")

    async def stop(self) -> None:
        sampler, self._sampler = self._sampler, None
        if sampler is not None:
            sampler.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await sampler

    async def _sample_every(self, seconds: float) -> None:
        while True:
            try:
                self.history.add(sample_of(await self.run("status"), self.now_ms()))
            except Exception:  # a sample missed is a gap in a chart, never a reason to stop the daemon
                log.warning("dashboard.sample_failed", exc_info=True)
            await asyncio.sleep(seconds)

    def login_url(self) -> str:
        return f"{self.base_url}/ui/login?code={self.sessions.new_code()}"

    def add_routes(self, app: web.Application) -> None:
        add = app.router
        add.add_get("/", self._root)
        add.add_get("/ui", self._root)
        add.add_get("/ui/login", self._login)
        add.add_post("/ui/logout", self._logout)
        add.add_get("/ui/static/{name}", self._static)
        add.add_get("/ui/", self._page(pages.overview, "overview.html"))
        add.add_get("/ui/memory", self._page(pages.memory, "memory.html"))
        add.add_get("/ui/memory/{id}", self._page(pages.crystal, "crystal.html"))
        add.add_post("/ui/memory/{id}/{action}", self._crystal_action)
        add.add_get("/ui/entities", self._page(pages.entities, "entities.html"))
        add.add_get("/ui/entities/{name}", self._page(pages.entities, "entities.html"))
        add.add_get("/ui/working-memory", self._page(pages.working_memory, "working.html"))
        add.add_get("/ui/network", self._page(pages.network, "network.html"))
        add.add_get("/ui/market", self._page(pages.market, "market.html"))
        add.add_get("/ui/devices", self._page(pages.devices, "devices.html"))
        add.add_post("/ui/devices/pair", self._pair)
        add.add_post("/ui/devices/remove", self._remove_device)
        add.add_get("/ui/live/overview", self._live(pages.live_overview))

    async def guard(self, request: web.Request, handler: Handler) -> web.StreamResponse:
        """Every dashboard request: the session (unless the login page), CSRF on POST, the headers."""
        response = await self._checked(request, handler)
        response.headers.update(SECURITY_HEADERS)
        return response

    async def _checked(self, request: web.Request, handler: Handler) -> web.StreamResponse:
        if self._loopback_only and not is_loopback(urlsplit("//" + request.host).hostname or ""):
            # A page reached under another name is a DNS-rebinding attempt: some site's script
            # pointing its own host name at 127.0.0.1. Its origin has no cookie, but it gets nothing.
            return web.Response(status=403, text="the dashboard answers only at its loopback address")
        if request.headers.get("Sec-Fetch-Site", "none") not in ("same-origin", "none"):
            # A page on another port of this machine is same-site: it sends the session cookie and
            # passes the host check. Only the dashboard's own pages, or a URL the person typed, pass.
            return web.Response(status=403, text="the dashboard answers only its own pages (Sec-Fetch-Site)")
        if request.path in OPEN_PAGES:
            return await handler(request)
        session = self.sessions.get(request.cookies.get(COOKIE))
        if session is None:
            return self._login_page("Open the dashboard with `bitterbot-node ui`.", status=401)
        if request.method == "POST":
            form = await request.post() if request.content_type == "application/x-www-form-urlencoded" else {}
            token = request.headers.get(CSRF_HEADER) or _text(form.get("csrf"))
            if not Sessions.csrf_ok(session, token):
                return self._login_page("That request did not carry this session's CSRF token.", status=403)
        request["session"] = session
        try:
            return await handler(request)
        except web.HTTPException as exc:  # a page or asset that is not there
            return self._render("error.html", {"message": exc.reason}, session, status=exc.status)
        except Exception as exc:
            refused = refusal_of(exc, "dashboard")
            if refused.status == UNEXPECTED:
                log.error("dashboard.failed", exc_info=True, path=request.path, error_id=refused.error_id)
            return self._render("error.html", {"message": refused.message}, session, status=refused.status)

    async def run(self, name: str, args: Mapping[str, Any] | None = None) -> Any:
        """A node command, as the person at the dashboard."""
        with acting_as(DASHBOARD):
            return await dispatch(self._hosts, name, dict(args or {}))

    def _page(self, build: pages.PageBuilder, template: str) -> Handler:
        async def page(request: web.Request) -> web.StreamResponse:
            context = await build(self, request)
            return self._render(template, context, request["session"])

        return page

    def _live(self, build: pages.PageBuilder) -> Handler:
        async def live(request: web.Request) -> web.StreamResponse:
            return web.json_response(await build(self, request), dumps=lambda o: json.dumps(o, default=str))

        return live

    def _render(
        self, template: str, context: dict[str, Any], session: Session | None, *, status: int = 200
    ) -> web.Response:
        html = self._templates.get_template(template).render(**context, csrf=session.csrf if session else "")
        return web.Response(text=html, content_type="text/html", status=status)

    def _login_page(self, message: str, *, status: int) -> web.Response:
        return self._render("login.html", {"message": message}, None, status=status)

    async def _root(self, request: web.Request) -> web.StreamResponse:
        return _see_other("/ui/")

    async def _login(self, request: web.Request) -> web.StreamResponse:
        session = self.sessions.redeem(request.query.get("code", ""))
        if session is None:
            return self._login_page(
                "This login link was used already, has expired or is not one this node made. "
                "Run `bitterbot-node ui` for a new one.",
                status=401,
            )
        response = _see_other("/ui/")  # the code leaves the address bar at once
        max_age = max(1, (session.expires_ms - self.now_ms()) // 1000)
        response.set_cookie(COOKIE, session.id, httponly=True, samesite="Strict", path="/", max_age=max_age)
        return response

    async def _logout(self, request: web.Request) -> web.StreamResponse:
        self.sessions.end(request["session"].id)
        response = self._login_page("Signed out.", status=200)
        response.del_cookie(COOKIE, path="/")
        return response

    async def _static(self, request: web.Request) -> web.StreamResponse:
        name = request.match_info["name"]
        suffix = name[name.rfind(".") :] if "." in name else ""
        asset = resources.files("node.dashboard") / "static" / name
        if suffix not in STATIC_TYPES or "/" in name or not asset.is_file():
            raise web.HTTPNotFound()
        return web.Response(body=asset.read_bytes(), content_type=STATIC_TYPES[suffix])

    async def _crystal_action(self, request: web.Request) -> web.StreamResponse:
        crystal_id, action = request.match_info["id"], request.match_info["action"]
        form = await request.post()
        target = await pages.crystal_action(self, crystal_id, action, {k: _text(v) for k, v in form.items()})
        return _see_other(target)

    async def _pair(self, request: web.Request) -> web.StreamResponse:
        """The code is shown on this answer only (a reload asks for none): it joins one device."""
        context = await pages.devices(self, request, await self.run("devices.pair"))
        return self._render("devices.html", context, request["session"])

    async def _remove_device(self, request: web.Request) -> web.StreamResponse:
        form = await request.post()
        await self.run("devices.remove", {"device": _text(form.get("device"))})
        return _see_other("/ui/devices")


def _see_other(location: str) -> web.Response:
    return web.Response(status=303, headers={"Location": location})


def _text(value: object) -> str | None:
    return value if isinstance(value, str) else None
