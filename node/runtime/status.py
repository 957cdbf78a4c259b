"""The daemon's state as others see it: a small JSON file written atomically,
and a probe that combines it with the data dir's lock (so a stale file after a
crash reads as "not running").
"""

from __future__ import annotations

import json
import os
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

from node.runtime.lockfile import lock_holder


@dataclass(frozen=True, slots=True)
class DaemonStatus:
    state: str  # starting | running | stopping | stopped
    pid: int
    started_at_ms: int
    updated_at_ms: int
    name: str
    role: str
    peer_id: str
    parts: dict[str, str] = field(default_factory=dict)
    details: dict[str, Any] = field(default_factory=dict)


def write_status(path: Path, status: DaemonStatus) -> None:
    """Write atomically: readers see the old file or the new one, never half of one."""
    tmp = path.with_name(path.name + ".tmp")
    tmp.write_text(json.dumps(asdict(status), indent=2, sort_keys=True))
    os.replace(tmp, path)


def read_status(path: Path) -> DaemonStatus | None:
    try:
        doc = json.loads(path.read_text())
        return DaemonStatus(**doc)
    except (FileNotFoundError, ValueError, TypeError):
        return None


@dataclass(frozen=True, slots=True)
class DaemonProbe:
    running: bool
    pid: int | None
    status: DaemonStatus | None


def probe_daemon(data_dir: Path) -> DaemonProbe:
    """Is a daemon running on ``data_dir``, and what did it last report?"""
    pid = lock_holder(data_dir / "node.lock")
    status = read_status(data_dir / "status.json")
    if status is not None and status.pid != pid:
        status = None  # left by an earlier daemon (killed, or this one has not written its own yet)
    return DaemonProbe(running=pid is not None, pid=pid, status=status)
