"""The skill ledger on a node without its P2P part (the local client, and a daemon run with P2P
off): how peers rated this node comes from the trust book a daemon with P2P kept in the database,
or from the trust file an earlier release kept."""

from __future__ import annotations

from typing import Any

from crypto.errors import KeyFileError
from crypto.identity import read_key_file_info
from marketplace.desk.reputation import NEUTRAL_MILLI, own_reputation_milli, reputation_in
from marketplace.desk.skill_ledger import SkillLedger
from node.commands.skills_requests import SkillLedgerHost
from node.config import Config
from node.parts.memory import MemoryPart
from node.paths import NodePaths
from p2p.trust.limits import TrustLimits
from p2p.trust.records import TrustRecords


class FileReputation:
    """How peers rated this node, read from the files (``marketplace.desk.skill_ledger.Reputation``)."""

    def __init__(self, memory: MemoryPart, paths: NodePaths, trust: TrustLimits) -> None:
        self._memory = memory
        self._paths = paths
        self._trust = trust

    async def __call__(self) -> tuple[int, str | None]:
        try:
            me = read_key_file_info(self._paths.key_file).public_key
        except KeyFileError:
            return NEUTRAL_MILLI, None
        book = await TrustRecords(self._memory.running_store()).load(me, frozenset(), self._trust)
        assert self._paths.trust_file is not None
        if not book.attestations and self._paths.trust_file.exists():
            # A data dir no daemon of this release has opened yet: its book is still the JSON file.
            return own_reputation_milli(self._paths.trust_file, me), me.hex()
        return reputation_in(book), me.hex()


def file_hosts(memory: MemoryPart, config: Config, paths: NodePaths) -> dict[str, Any]:
    """The hosts of the commands a node without P2P runs: memory, and the skill ledger on the files."""
    ledger: SkillLedgerHost = SkillLedger(
        memory.running_store, config.marketplace, FileReputation(memory, paths, config.trust)
    )
    return {"memory": memory, "skills": ledger}
