"""No daemon: a command runs in this process, on the node's own files.

Only commands marked ``local`` run this way (memory, and recording and pricing a skill); the
network and the market need the daemon. The memory part is opened without its timers, so this
process is the file's only user for as long as the command takes (SQLite WAL lets bulk work
run beside a daemon, but the daemon owns the working-memory files and the dream lock)."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from pydantic import BaseModel

from node.actor import CLI, acting_as
from node.commands.registry import Command
from node.config import Config
from node.errors import DaemonRequired
from node.paths import NodePaths

if TYPE_CHECKING:
    from node.parts.memory import MemoryPart


class LocalClient:
    transport = "local"

    def __init__(self, config: Config, paths: NodePaths, *, actor: str = CLI) -> None:
        self._config = config
        self._paths = paths
        self._actor = actor
        self._memory: MemoryPart | None = None
        self._hosts: dict[str, Any] = {}

    async def call(self, command: Command[Any], request: BaseModel) -> Any:
        if not command.local:
            raise DaemonRequired(command.name, str(self._paths.data_dir))
        if not self._hosts:
            await self._open()
        with acting_as(self._actor):
            return await command.run(self._hosts[command.part], request)

    async def _open(self) -> None:
        from node.parts.memory import MemoryPart
        from node.parts.skill_ledger import file_hosts

        self._paths.ensure_data_dir()
        memory = MemoryPart(self._config, self._paths, supervisor=None)
        await memory.open()
        self._memory = memory
        self._hosts = file_hosts(memory, self._config, self._paths)

    async def aclose(self) -> None:
        if self._memory is not None:
            await self._memory.stop()
            self._memory = None
            self._hosts = {}
