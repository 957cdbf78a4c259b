"""What an open dashboard costs the daemon: CPU and requests per minute, beside the same daemon
with no dashboard open, in the same run.

A real `bitterbot-node run` (hashing embedder, P2P and the embedded chain on, as a user runs it)
holds 5,000 crystals (1,000 with --quick). Its CPU time is read from /proc before and after
each window:
- baseline: nobody looks at it, for the window;
- open: a client does what an open page does, polling ``/ui/live/overview`` every 5 s
  (``static/live.js``), with the session cookie;
- browsing: the same, plus one page load every 10 s, going round the five pages.
Each request's own time is measured too.
"""

from __future__ import annotations

import asyncio
import http.client
import os
import subprocess
import tempfile
import time
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

from bench.api import CLI, _fill, daemon_env, stop_daemon, wait_for_api
from bench.timing import percentiles_ms

SIZE, QUICK_SIZE = 5_000, 1_000
WINDOW_S, QUICK_WINDOW_S = 120.0, 30.0
POLL_S = 5.0  # static/live.js
PAGE_EVERY_S = 10.0
PAGES = ("/ui/", "/ui/memory?query=item+w12", "/ui/working-memory", "/ui/network", "/ui/market")


def cpu_seconds(pid: int) -> float:
    """User plus system CPU time of a process so far (/proc/PID/stat, fields 14 and 15)."""
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


class Viewer:
    """What a browser with the page open sends: cookie-bearing GETs on one kept-alive connection."""

    def __init__(self, login_url: str) -> None:
        parts = urlsplit(login_url)
        self._conn = http.client.HTTPConnection(parts.netloc, timeout=30)
        self._conn.request("GET", f"{parts.path}?{parts.query}")
        response = self._conn.getresponse()
        response.read()
        self._cookie = response.getheader("Set-Cookie", "").split(";", 1)[0]
        if response.status != 303 or not self._cookie:
            raise RuntimeError(f"the login URL answered {response.status}")

    def get(self, path: str) -> float:
        started = time.perf_counter()
        self._conn.request("GET", path, headers={"Cookie": self._cookie})
        response = self._conn.getresponse()
        response.read()
        if response.status != 200:
            raise RuntimeError(f"{path} answered {response.status}")
        return time.perf_counter() - started

    def close(self) -> None:
        self._conn.close()


def _window(pid: int, seconds: float, viewer: Viewer | None, browse: bool) -> dict[str, Any]:
    polls: list[float] = []
    pages: list[float] = []
    start_cpu, started = cpu_seconds(pid), time.monotonic()
    next_poll = next_page = started
    while (now := time.monotonic()) < started + seconds:
        if viewer is not None and now >= next_poll:
            polls.append(viewer.get("/ui/live/overview"))
            next_poll += POLL_S
        if viewer is not None and browse and now >= next_page:
            pages.append(viewer.get(PAGES[len(pages) % len(PAGES)]))
            next_page += PAGE_EVERY_S
        time.sleep(0.05)
    elapsed = time.monotonic() - started
    used = cpu_seconds(pid) - start_cpu
    out: dict[str, Any] = {
        "cpu_percent_of_one_core": round(100 * used / elapsed, 2),
        "requests_per_min": round(60 * (len(polls) + len(pages)) / elapsed, 1),
    }
    if polls:
        out["live_poll"] = percentiles_ms(polls)
    if pages:
        out["page_load"] = percentiles_ms(pages)
    return out


def run(quick: bool) -> dict[str, Any]:
    size, seconds = (QUICK_SIZE, QUICK_WINDOW_S) if quick else (SIZE, WINDOW_S)
    env = daemon_env(BITTERBOT_P2P__LISTEN='["/ip4/127.0.0.1/tcp/0"]')
    with tempfile.TemporaryDirectory(prefix="bench-dashboard-") as tmp:
        data = Path(tmp) / "node"
        asyncio.run(_fill(data, env, size))
        subprocess.run([*CLI, "init", "--data-dir", str(data)], env=env, check=True, capture_output=True)
        proc = subprocess.Popen(
            [*CLI, "run", "--data-dir", str(data)], env=env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL
        )
        try:
            wait_for_api(data, proc)
            time.sleep(10)  # past the start's own work (vector codes, the first rounds)
            baseline = _window(proc.pid, seconds, None, browse=False)
            ask = [*CLI, "ui", "--print-url", "--data-dir", str(data)]
            login = subprocess.run(ask, env=env, check=True, capture_output=True, text=True).stdout.strip()
            viewer = Viewer(login)
            try:
                open_page = _window(proc.pid, seconds, viewer, browse=False)
                browsing = _window(proc.pid, seconds, viewer, browse=True)
            finally:
                viewer.close()
        finally:
            stop_daemon(proc)
    return {
        "crystals": size,
        "window_s": seconds,
        "baseline_nobody_looking": baseline,
        "dashboard_open": open_page,
        "dashboard_browsing": browsing,
        "added_cpu_percent_open": round(open_page["cpu_percent_of_one_core"] - baseline["cpu_percent_of_one_core"], 2),
        "added_cpu_percent_browsing": round(
            browsing["cpu_percent_of_one_core"] - baseline["cpu_percent_of_one_core"], 2
        ),
    }
