"""Recording and pricing a skill on a node without its P2P part: how peers rated this node comes
from the trust book a daemon with P2P kept in the database (the local client, and a daemon run
with P2P off)."""

from __future__ import annotations

from typing import Any

from crypto.errors import KeyFileError
from crypto.identity import read_key_file_info
from marketplace.pricing import PriceSettings
from marketplace.reputation import NEUTRAL_MILLI, own_reputation_milli, reputation_in
from memory.intake.store import IntakeStore
from node.commands.skills_service import price_settings
from node.config import Config
from node.parts.memory import MemoryPart
from node.paths import NodePaths
from p2p.trust.book import TrustLimits
from p2p.trust.records import TrustRecords


class FileSkillLedger:
    """Recording and pricing a skill from the files: the store, and how peers rated this node in
    the trust file the daemon keeps (``node.commands.skills.SkillLedgerHost``)."""

    def __init__(self, memory: MemoryPart, config: Config, paths: NodePaths) -> None:
        self._memory = memory
        self._config = config
        self._paths = paths

    def store(self) -> IntakeStore:
        return self._memory.running_store()

    def price_settings(self) -> PriceSettings:
        return price_settings(self._config.marketplace)

    async def reputation(self) -> tuple[int, str | None]:
        try:
            me = read_key_file_info(self._paths.key_file).public_key
        except KeyFileError:
            return NEUTRAL_MILLI, None
        book = await TrustRecords(self.store()).load(me, frozenset(), TrustLimits())
        assert self._paths.trust_file is not None
        if not book.attestations and self._paths.trust_file.exists():
            # A data dir no daemon of this release has opened yet: its book is still the JSON file.
            return own_reputation_milli(self._paths.trust_file, me), me.hex()
        return reputation_in(book), me.hex()


def file_hosts(memory: MemoryPart, config: Config, paths: NodePaths) -> dict[str, Any]:
    """The hosts of the commands a node without P2P runs: memory, and the skill ledger on the files."""
    return {"memory": memory, "skills": FileSkillLedger(memory, config, paths)}
