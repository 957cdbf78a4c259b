"""Reads go to a reader connection, never to the store's writer outside a transaction.

The writer runs one task's transaction at a time under the store's write lock, and aiosqlite runs a
connection's calls in the order they are queued. A read put on the writer from outside that lock
(five places read a crystal back that way after their transaction) ran between another task's
calls: its statement, open between its query and its fetch, made the embedding loop's checkpoint
fail with "database table is locked" and stop the node (CI, once), and a read between another
task's BEGIN and COMMIT would see rows that may yet be rolled back. A reader sees every committed
row at once (WAL)."""

from __future__ import annotations

import re
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
PACKAGES = ("memory", "node", "marketplace", "p2p", "crypto", "ground")
#: The store itself (its transactions, pragmas, checkpoint and close), and erase's secure-delete
#: switch, a setting of the connection, not a read.
ALLOWED = {"memory/storage/store.py", "memory/storage/connection.py", "memory/governance/erase.py"}
WRITER = re.compile(r"\bstore\.writer\b|\bself\.writer\b")


def test_nothing_outside_the_store_uses_its_writer_connection() -> None:
    offenders = [
        f"{path.relative_to(ROOT)}:{number}: {line.strip()}"
        for package in PACKAGES
        for path in sorted((ROOT / package).rglob("*.py"))
        if str(path.relative_to(ROOT)) not in ALLOWED
        for number, line in enumerate(path.read_text().splitlines(), start=1)
        if WRITER.search(line)
    ]
    assert offenders == []


def test_the_store_reads_back_on_a_reader_after_its_transactions() -> None:
    source = (ROOT / "memory/storage/store.py").read_text()
    assert "crystal_any(self.writer" not in source
