"""The memory's settings (issue 50): each table of the config file is the union of the settings of
the components it configures, so a value written in the file reaches the component with nothing
mapping one onto the other, and the memory is put together from the tables alone."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

from ground.settings import Section, SettingError
from memory.capture.watch import WatchPlan
from memory.capture.watch_settings import WatchSettings
from memory.dynamics.endocrine import Endocrine
from memory.dynamics.hormones import HormoneSettings
from memory.dynamics.importance import DAY_MS, DecaySettings
from memory.embedders.http_settings import HttpEmbedderSettings
from memory.setup.cycles import search_weights
from memory.setup.settings import CaptureSettings, ConsolidationSettings, HormonesSettings, MemorySettings
from memory.setup.store import close_store, configured_embedder, open_store
from memory.storage.store_types import LinkSettings
from node.config import Config
from node.config_loading import load_config

ROOT = Path(__file__).resolve().parents[2]
TABLES: dict[str, tuple[type[Section], tuple[type[Section], ...]]] = {
    "memory": (MemorySettings, (HttpEmbedderSettings, LinkSettings)),
    "capture": (CaptureSettings, (WatchSettings,)),
    "hormones": (HormonesSettings, (HormoneSettings,)),
    "consolidation": (ConsolidationSettings, (DecaySettings,)),
}


@pytest.mark.parametrize("table", sorted(TABLES))
def test_a_table_is_its_components_and_the_config_composes_it(table: str) -> None:
    """A component's fields are keys of its table, with the same defaults: a component takes the
    whole table, and the table is what ``Config`` holds."""
    section, components = TABLES[table]
    assert Config.model_fields[table].annotation is section
    for component in components:
        assert issubclass(section, component)
        for key, field in component.model_fields.items():
            assert section.model_fields[key].default == field.default, (table, key)


async def test_values_in_the_file_reach_the_components(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """What the node mapped by hand before, read straight from the tables: the store's links, the
    hormones' homeostasis, the purge's retention, the watch's folders and caps, search's fusion."""
    (tmp_path / "config.toml").write_text(
        '[memory]\nembedder = "hashing"\nrelated_threshold = 0.6\nrrf_k = 40\n'
        '[hormones]\ncortisol_home = 0.3\n'
        '[consolidation]\nretention_days = 9\n'
        '[capture]\nwatch = ["$MEMSET_HOME/sessions"]\nmax_file_mb = 2\n'
    )  # fmt: skip
    monkeypatch.setenv("MEMSET_HOME", str(tmp_path))
    config = load_config(tmp_path / "config.toml", {"BITTERBOT_MEMORY__UPDATES_THRESHOLD": "0.95"}).config
    plan = WatchPlan.of(config.capture)
    assert (plan.folders, plan.max_file_bytes) == ((tmp_path / "sessions",), 2_000_000)
    assert config.consolidation.retention_ms == 9 * DAY_MS
    assert search_weights(config.memory).rrf_k == 40
    store = await open_store(tmp_path / "m.db", config.memory, config.hormones, config.llm)
    try:
        assert (store.links.related_threshold, store.links.updates_threshold) == (0.6, 0.95)
        assert isinstance(store.hormone_source, Endocrine)
        assert store.hormone_source.settings.cortisol_home == 0.3
        assert store.embedder.id.startswith("hashing")
    finally:
        await close_store(store)


def test_an_embedder_that_cannot_be_built_names_the_setting() -> None:
    """A SettingError (the daemon's start and the CLI answer it as a usage error, exit 2)."""
    with pytest.raises(SettingError, match=r"memory\.embedder = 'openai': .*openai_url"):
        configured_embedder(MemorySettings(embedder="openai"))


def test_the_tables_load_without_numpy_or_the_store() -> None:
    """``node.config`` imports the memory's tables, and the full CLI imports ``node.config`` before
    it knows the command: a component's settings sit in a module of their own (``watch_settings``,
    ``http_settings``) so that reading the config never loads numpy, the store or SQLite (the first
    cut of this change did: 517 modules for ``node.config`` instead of 299)."""
    code = "import sys, node.config; print(sorted({'numpy', 'aiosqlite', 'memory.storage.store'} & set(sys.modules)))"
    loaded = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True, cwd=ROOT)
    assert loaded.stdout.strip() == "[]"
