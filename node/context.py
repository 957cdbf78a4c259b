"""What every part of a running node may read: its config, files, identity and clock."""

from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import dataclass

from crypto.identity import Identity
from node.config import Config, LoadedConfig
from node.paths import NodePaths


def wall_clock_ms() -> int:
    return time.time_ns() // 1_000_000


@dataclass(frozen=True)
class NodeContext:
    """What every part may read: config, files, identity, clock."""

    loaded: LoadedConfig
    paths: NodePaths
    identity: Identity
    now_ms: Callable[[], int] = wall_clock_ms

    @property
    def config(self) -> Config:
        return self.loaded.config
