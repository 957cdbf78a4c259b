"""What every part of a running node may read: its config, files, identity and clock."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field

from crypto.identity import Identity
from ground.clock import wall_clock_ms
from node.config import Config
from node.config_loading import LoadedConfig
from node.paths import NodePaths


@dataclass(frozen=True)
class NodeContext:
    """What every part may read: config, files, identity, clock."""

    loaded: LoadedConfig
    paths: NodePaths
    identity: Identity
    now_ms: Callable[[], int] = wall_clock_ms
    #: What the identity is sealed under, if it is: the wallet is sealed under it too. Not printed.
    key_passphrase: bytes | None = field(default=None, repr=False)

    @property
    def config(self) -> Config:
        return self.loaded.config
