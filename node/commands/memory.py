"""The daemon's memory commands (HTTP API, control socket, MCP server): one handler per operation,
each validating its request model and calling ``node.commands.memory_service``."""

from __future__ import annotations

import time
from typing import TYPE_CHECKING, Any, Protocol

from memory.dynamics.consolidation import unmerge
from memory.errors import StoreError
from memory.retrieval.query import Weights
from memory.working_memory.dream import working_memory_note
from memory.working_memory.memory_md import WorkingMemoryFiles, bootstrap_text
from node.commands import memory_service as service
from node.commands.memory_requests import (
    BootstrapArgs,
    ConsolidateArgs,
    EventArgs,
    ForgetArgs,
    NoteArgs,
    QuarantineArgs,
    RememberArgs,
    SearchArgs,
    ShowArgs,
)
from node.commands.memory_service import crystal_json
from node.errors import PartNotRunning
from node.runtime.actor import current_actor
from node.servers.control import Handler

if TYPE_CHECKING:
    from memory.storage.store import MemoryStore


class MemoryHost(Protocol):
    """What the memory commands need of the part that runs them (``node.parts.memory.MemoryPart``)."""

    store: MemoryStore | None
    files: WorkingMemoryFiles
    weights: Weights

    async def consolidate_now(self, *, dry_run: bool = False) -> dict[str, Any]: ...

    async def dream_now(self) -> dict[str, Any]: ...


class MemoryCommands:
    def __init__(self, part: MemoryHost) -> None:
        self._part = part

    def commands(self) -> dict[str, Handler]:
        return {
            "memory.search": self.search,
            "memory.remember": self.remember,
            "memory.show": self.show,
            "memory.forget": self.forget,
            "memory.stats": self.stats,
            "memory.consolidate": self.consolidate,
            "memory.unmerge": self.unmerge,
            "memory.quarantine": self.quarantine,
            "memory.quarantine.approve": self.approve,
            "memory.quarantine.reject": self.reject,
            "memory.hormones": self.hormones,
            "memory.event": self.event,
            "wm.note": self.note,
            "wm.bootstrap": self.bootstrap,
            "wm.dream": self.dream,
        }

    def _store(self) -> MemoryStore:
        if self._part.store is None:
            raise PartNotRunning("the memory store is not open")
        return self._part.store

    async def search(self, args: dict[str, Any]) -> list[dict[str, Any]]:
        request = SearchArgs.model_validate(args)
        started = time.perf_counter()
        hits = await service.search_memory(self._store(), request, self._part.weights)
        metrics = getattr(self._part, "metrics", None)
        if metrics is not None:
            metrics.search_seconds.labels(request.mode.value).observe(time.perf_counter() - started)
        return hits

    async def remember(self, args: dict[str, Any]) -> dict[str, Any]:
        return await service.remember(self._store(), RememberArgs.model_validate(args), actor=current_actor())

    async def show(self, args: dict[str, Any]) -> dict[str, Any]:
        return await service.show(self._store(), ShowArgs.model_validate(args))

    async def forget(self, args: dict[str, Any]) -> dict[str, Any]:
        return await service.forget(self._store(), ForgetArgs.model_validate(args), actor=current_actor())

    async def stats(self, args: dict[str, Any]) -> dict[str, Any]:
        return await self._store().stats()

    async def consolidate(self, args: dict[str, Any]) -> dict[str, Any]:
        request = ConsolidateArgs.model_validate(args)
        return await self._part.consolidate_now(dry_run=request.dry_run)

    async def unmerge(self, args: dict[str, Any]) -> dict[str, Any]:
        request = ShowArgs.model_validate(args)
        try:
            winner = await unmerge(self._store(), request.id, actor=current_actor())
        except StoreError as exc:  # not merged, or no longer archived: the caller's mistake
            raise ValueError(str(exc)) from None
        return {"restored": request.id, "merged_into": winner}

    async def quarantine(self, args: dict[str, Any]) -> list[dict[str, Any]]:
        return await service.quarantine_list(self._store(), QuarantineArgs.model_validate(args))

    async def approve(self, args: dict[str, Any]) -> dict[str, Any]:
        return await service.quarantine_approve(self._store(), ShowArgs.model_validate(args), actor=current_actor())

    async def reject(self, args: dict[str, Any]) -> dict[str, Any]:
        return await service.quarantine_reject(self._store(), ShowArgs.model_validate(args), actor=current_actor())

    async def hormones(self, args: dict[str, Any]) -> dict[str, Any]:
        return service.hormone_doc(self._store())

    async def event(self, args: dict[str, Any]) -> dict[str, Any]:
        request = EventArgs.model_validate(args)
        return await service.observe_events(self._store(), request.events)

    async def note(self, args: dict[str, Any]) -> dict[str, Any]:
        request = NoteArgs.model_validate(args)
        crystal = await working_memory_note(self._store(), self._part.files, request.text, request.importance)
        return crystal_json(crystal)

    async def bootstrap(self, args: dict[str, Any]) -> dict[str, Any]:
        request = BootstrapArgs.model_validate(args)
        return {"text": bootstrap_text(self._part.files, request.context_window)}

    async def dream(self, args: dict[str, Any]) -> dict[str, Any]:
        return await self._part.dream_now()
