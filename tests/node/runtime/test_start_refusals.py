"""A setting the person must fix stops the daemon's start with exit 2 (usage), which the service
unit does not restart on, and not 1 (a bug of ours), which it would restart on for ever."""

from __future__ import annotations

from pathlib import Path

from crypto.identity import Identity
from node.config_loading import load_config
from node.daemon.daemon import Daemon
from node.errors import EXIT_USAGE
from node.paths import NodePaths
from node.runtime.context import NodeContext


async def test_an_embedder_without_its_endpoint_refuses_to_start_with_exit_2(tmp_path: Path) -> None:
    """The memory builds its embedder from its own settings and raises a SettingError (memory cannot
    raise node's UsageError): the daemon takes it as a usage error, as it took the UsageError before."""
    env = {"BITTERBOT_MEMORY__EMBEDDER": "openai", "BITTERBOT_P2P__ENABLED": "false", "BITTERBOT_API__ENABLED": "false"}
    loaded = load_config(None, env)
    paths = NodePaths.of(tmp_path, loaded.config)
    paths.ensure_data_dir()
    daemon = Daemon(NodeContext(loaded, paths, Identity.generate()))
    assert await daemon.run() == EXIT_USAGE
    assert daemon.state != "running"
