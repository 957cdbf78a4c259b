"""One road from a memory command to its work (issue 50): each handler of the memory commands calls
one service of ``memory.service`` with its typed request, and reaches for nothing else of memory.
Read from the handlers' source with ``ast``, as ``tests/test_import_cycles.py`` reads imports."""

from __future__ import annotations

import ast
import inspect
import textwrap

from node.commands import memory, memory_history, working_memory

#: What a memory handler may import besides its service: the marketplace's bounty finder, which
#: ``memory.service.write.remember`` is handed because memory sits below the marketplace.
HANDED_DOWN = {"marketplace.catalog.bounties"}

#: Handlers that still call their part, each with its cause. The set may only shrink: a handler
#: that leaves it fails the test until it is taken off. Empty since consolidation and the dream
#: moved to ``memory.service.upkeep``.
STILL_ON_THE_PART: dict[str, str] = {}

COMMANDS = [*memory.MEMORY.commands, *memory_history.HISTORY.commands, *working_memory.DYNAMICS.commands]


def _imports(handler: object) -> list[str]:
    tree = ast.parse(textwrap.dedent(inspect.getsource(handler)))  # type: ignore[arg-type]
    found = []
    for node in ast.walk(tree):
        if isinstance(node, ast.ImportFrom):
            found += [f"{node.module}.{alias.name}" for alias in node.names]
        elif isinstance(node, ast.Import):
            found += [alias.name for alias in node.names]
    return found


def test_the_checker_reads_a_handlers_imports() -> None:
    async def handler() -> None:
        from memory.service import recall  # noqa: F401
        from memory.storage.counts import crystal_total  # noqa: F401

    assert _imports(handler) == ["memory.service.recall", "memory.storage.counts.crystal_total"]


def test_each_memory_handler_calls_one_service_of_the_memory_package() -> None:
    assert len(COMMANDS) > 25  # it read the declarations
    on_the_part, astray = set(), {}
    for command in COMMANDS:
        imported = _imports(command.handler)
        services = {i for i in imported if i.startswith("memory.service.")}
        others = [i for i in imported if i not in services and i.rpartition(".")[0] not in HANDED_DOWN]
        if not services:
            on_the_part.add(command.name)
        elif len(services) > 1 or others:
            astray[command.name] = imported
    assert astray == {}
    assert on_the_part == set(STILL_ON_THE_PART)
