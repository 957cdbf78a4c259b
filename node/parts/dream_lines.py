"""What other parts of the node tell the memory's dream (MEMORY.md): the person's place in the market,
and the emerging skills with the executions and bounties the marketplace recorded. The memory part
hands these to ``memory.working_memory.dream``; memory itself never reads the market's tables."""

from __future__ import annotations

from crypto.errors import KeyFileError
from crypto.identity import read_key_file_info
from marketplace.exchange.ledger import ledger, niche_line
from memory.storage.store import MemoryStore
from node.paths import NodePaths


async def world_lines(store: MemoryStore, paths: NodePaths) -> tuple[str, ...]:
    """What other parts of the node tell the dream about the person's world: the market ledger."""
    try:
        me: str | None = read_key_file_info(paths.key_file).public_key.hex()
    except KeyFileError:
        me = None
    line = niche_line(await ledger(store, me))
    return (line,) if line else ()


async def emerging_lines(store: MemoryStore) -> tuple[str, ...]:
    """MEMORY.md's lines for the emerging skills, counting the executions the marketplace recorded:
    the eight most confident, those answering a live bounty first. Chosen before they are ordered,
    so a stranger's bounty reorders the lines and never brings one in."""
    from marketplace.catalog.bounties import with_answered_bounties
    from marketplace.executions import executions_per_crystal
    from memory.emerging.patterns import bounty_first
    from memory.emerging.practice import emerging_skills

    found = await emerging_skills(store, await executions_per_crystal(store))
    return tuple(skill.line() for skill in bounty_first(await with_answered_bounties(store, found[:8])))
