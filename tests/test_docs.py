"""The documentation: its generated reference pages are what the code gives, and the README stays
a page a person reads (what, install, run, the walkthrough, the test command, links)."""

from __future__ import annotations

import importlib.util
import re
from pathlib import Path
from types import ModuleType

ROOT = Path(__file__).resolve().parents[1]


def _generator() -> ModuleType:
    spec = importlib.util.spec_from_file_location("docs_generate", ROOT / "docs" / "generate.py")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def test_the_generated_reference_pages_are_current() -> None:
    assert _generator().stale() == []


def test_every_setting_has_its_words_in_the_reference() -> None:
    page = (ROOT / "docs" / "reference" / "config.md").read_text()
    rows = [line for line in page.splitlines() if line.startswith("| `")]
    unexplained = [line.split("|")[1].strip() for line in rows if line.rstrip().endswith("|  |")]
    assert len(rows) > 100  # the page lists the settings, not an empty table
    assert unexplained == []


def test_the_readme_is_short_and_its_links_lead_somewhere() -> None:
    readme = (ROOT / "README.md").read_text()
    assert len(readme.splitlines()) <= 320
    targets = re.findall(r"\]\(((?:docs|configs)/[^)#]+)", readme)
    assert targets  # the README links into the docs
    assert [t for t in targets if not (ROOT / t).exists()] == []
