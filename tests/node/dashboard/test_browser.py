"""The dashboard in a real browser: Debian's Chromium, headless, driven by Playwright.

One edge node serves the dashboard; a management node joins it later and broadcasts weather,
and the open page shows both without a reload. Screenshots go to the test's folder, and to
``$BITTERBOT_SCREENSHOTS`` when set (docs/guide/screenshots/ come from there).
"""

from __future__ import annotations

import json
import os
import shutil
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from tests.conftest import clean_env
from tests.daemons import Node, api_url, management_node, wait_for

pytestmark = pytest.mark.slow  # real daemons and a browser

CHROMIUM = shutil.which("chromium") or "/usr/bin/chromium"
BROWSER_ARGS = [
    "--no-sandbox",  # CI runs as root
    "--disable-gpu",
    "--disable-background-networking",  # the closed network refuses Chromium's own calls home
    "--disable-component-update",
    "--disable-sync",
    "--no-first-run",
]


@pytest.fixture
def browser_page(tmp_path: Path) -> Iterator[Any]:
    sync_api = pytest.importorskip("playwright.sync_api", reason="playwright is not installed")
    if not Path(CHROMIUM).exists():
        pytest.skip(f"no Chromium at {CHROMIUM}: .ci/run installs Debian's chromium package")
    with sync_api.sync_playwright() as playwright:
        browser = playwright.chromium.launch(executable_path=CHROMIUM, args=BROWSER_ARGS)
        try:
            page = browser.new_page(viewport={"width": 1280, "height": 860})
            yield page, sync_api.expect
        finally:
            browser.close()


def _shot(page: Any, tmp_path: Path, name: str) -> None:
    target = tmp_path / f"{name}.png"
    page.screenshot(path=str(target), full_page=True)
    keep = os.environ.get("BITTERBOT_SCREENSHOTS")
    if keep:
        Path(keep).mkdir(parents=True, exist_ok=True)
        shutil.copy(target, Path(keep) / target.name)


def test_a_person_signs_in_searches_pins_and_sees_the_network_live(browser_page: Any, tmp_path: Path) -> None:
    page, expect = browser_page  # expect polls from outside the page: its CSP forbids eval
    base_env = clean_env(BITTERBOT_MEMORY__EMBEDDER="hashing", BITTERBOT_P2P__DEGREE_LOW="1", BITTERBOT_P2P__DEGREE="3")
    manager, trust = management_node(tmp_path, base_env)
    edge = Node(tmp_path, "edge", {**base_env, **trust})
    assert edge.cli("init").returncode == 0
    edge.start()
    started = [edge]
    try:
        base = wait_for(lambda: api_url(edge), 60, "the dashboard to listen")
        ids = {
            text: edge.json("memory", "add", text)["crystal"]["id"]
            for text in (
                "The weekly sync is on Tuesdays at 9",
                "Tomas lives in Tallinn",
                "Backups run at 02:00 nightly",
            )
        }
        edge.json("memory", "note", "Ask Tomas about the flat")
        requested: list[str] = []
        page.on("request", lambda request: requested.append(request.url))

        page.goto(edge.json("ui")["url"])
        page.get_by_role("heading", name="Overview").wait_for()
        assert page.url == base + "/ui/"
        assert page.locator('[data-field="peers.connected"]').inner_text() == "0"
        # issue 32: what an import left to embed shows on the overview (three crystals, embedded by now)
        expect(page.locator('[data-field="embedding.backlog"]')).to_have_text("0", timeout=30_000)
        page.keyboard.press("Tab")  # the first stop is the skip link, for a keyboard
        assert page.evaluate("document.activeElement.textContent") == "Skip to content"

        # issue 32: the chart's axis reads three distinct values, whatever the scale
        axis = page.locator('figure svg text.axis[x="38"]').all_text_contents()  # the y axis's labels
        assert len(axis) == 3 and len(set(axis)) == 3, axis

        page.get_by_role("link", name="Memory", exact=True).click()
        # issue 32: the page listed nothing until a search; now the newest crystals
        assert "Backups run at 02:00 nightly" in page.get_by_test_id("newest").inner_text()
        _shot(page, tmp_path, "memory")
        page.get_by_label("Search").fill("weekly sync")
        page.get_by_label("Search").press("Enter")
        page.get_by_role("link", name="The weekly sync is on Tuesdays at 9").click()
        assert page.get_by_test_id("lifespan").inner_text() == "decay"
        page.get_by_role("button", name="Pin (keep for good)").click()
        page.get_by_test_id("lifespan").wait_for()
        assert page.get_by_test_id("lifespan").inner_text() == "permanent"
        assert page.get_by_role("button", name="Pin (keep for good)").is_disabled()
        _shot(page, tmp_path, "crystal")
        crystal_id = page.url.rsplit("/", 1)[1]
        assert edge.json("memory", "show", crystal_id)["crystal"]["lifespan"] == "permanent"
        assert page.get_by_test_id("derivation").inner_text() == "Stored as it came: not derived from other crystals."

        # issue 32: an outdated crystal had no banner and no way back
        newer = edge.json("memory", "add", "Tomas moved to Riga in May")["crystal"]["id"]
        edge.json("memory", "supersede", ids["Tomas lives in Tallinn"], newer)
        page.goto(f"{base}/ui/memory/{ids['Tomas lives in Tallinn']}")
        banner = page.get_by_test_id("outdated")
        assert "Outdated" in banner.inner_text() and "Tomas moved to Riga in May" in banner.inner_text()
        _shot(page, tmp_path, "crystal-outdated")
        page.get_by_role("button", name="It is still true: make it current again").click()
        page.get_by_role("heading", name="Crystal").wait_for()
        assert page.get_by_test_id("outdated").count() == 0
        assert edge.json("memory", "show", ids["Tomas lives in Tallinn"])["crystal"]["superseded"] is None

        # issue 52: who memory names, and what it says of one of them
        page.get_by_role("link", name="People & things").click()
        page.get_by_test_id("entities").get_by_role("link", name="Tomas", exact=True).click()
        assert page.get_by_test_id("entity-name").inner_text() == "Tomas"
        said = page.get_by_test_id("entity-memories").inner_text()
        assert "Tomas lives in Tallinn" in said and "Tomas moved to Riga in May" in said
        assert "Backups run" not in said
        _shot(page, tmp_path, "entity")

        page.get_by_role("link", name="Overview").click()
        page.get_by_role("heading", name="Overview").wait_for()
        manager.env["BITTERBOT_P2P__BOOTSTRAP"] = json.dumps([edge.address()])
        manager.start()
        started.append(manager)
        # No reload: the page's own polling shows the peer.
        expect(page.locator('[data-field="peers.connected"]')).to_have_text("1", timeout=60_000)
        wait_for(lambda: edge.json("peers"), 30, "the edge to list the manager")
        broadcast = manager.cli("weather", "broadcast", "--level", "0.9", "--duration", "2m", "--reason", "drill")
        assert broadcast.returncode == 0, broadcast.stderr
        banner = page.locator("#weather-banner")
        banner.wait_for(state="visible", timeout=60_000)
        assert "drill" in banner.inner_text() and "halted" in banner.inner_text()
        _shot(page, tmp_path, "overview")

        page.get_by_role("link", name="Network").click()
        page.get_by_role("heading", name="Network").wait_for()
        manager_id = manager.json("status")["identity"]["peer_id"]
        assert page.get_by_role("cell", name=manager_id).is_visible()  # in the peers table
        assert page.locator(f"svg.graph circle.peer title:has-text('{manager_id}')").count() == 1
        assert "● provisional" in page.get_by_test_id("trust-key").inner_text()  # issue 32: colours explained
        _shot(page, tmp_path, "network")
        page.get_by_role("link", name="Working memory").click()
        assert page.get_by_role("cell", name="Ask Tomas about the flat").is_visible()  # a scratch note waiting
        # issue 32: it said "the last dream took them all" before any dream, and showed a raw dict after one
        assert page.get_by_test_id("last-dream").inner_text().startswith("No dream has run yet")
        assert edge.json("memory", "dream")["accepted"]
        page.reload()
        said = page.get_by_test_id("last-dream").inner_text()
        assert said.startswith("The last dream,") and "rewrote MEMORY.md" in said and "at_ms" not in said, said
        assert "<!--" not in page.locator("article.markdown").inner_text()  # MEMORY.md's marker comment
        _shot(page, tmp_path, "working")
        page.get_by_role("link", name="Market").click()
        page.get_by_role("heading", name="Market").wait_for()
        assert edge.json("wallet")["address"] in page.locator("dl.facts").inner_text()

        page.set_viewport_size({"width": 375, "height": 740})  # a phone: nothing wider than the screen
        for link, heading in (("Overview", "Overview"), ("Memory", "Memory"), ("Network", "Network")):
            page.get_by_role("link", name=link, exact=True).click()
            page.get_by_role("heading", name=heading, exact=True).wait_for()
            assert page.evaluate("document.documentElement.scrollWidth <= window.innerWidth"), link
        _shot(page, tmp_path, "network-phone")

        outside = [url for url in requested if not url.startswith(base + "/")]
        assert requested and outside == []  # nothing fetched from any other host
    finally:
        logs = [node.stop() for node in reversed(started)]
    for log in logs:
        assert "Traceback" not in log, log
