"""What the soak throws at its daemon beside the transcripts: imports of a Mem0 export (sometimes
killed with SIGKILL partway, then run again), searches and dreams over the API, peers that connect,
gossip and leave, and a stranger flooding streams. A move that fails because the daemon was just
killed is counted, not fatal; an import that cannot be completed by running it again is."""

from __future__ import annotations

import json
import random
import signal
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

from bench.network.attestation_flood import connected_attackers
from bench.network.connection_flood import Flood
from bench.soak.daemon import CLI, SoakDaemon
from bench.soak.tokens import IMPORT, Tokens, memory_says

#: An import that needs more runs than this to complete cannot resume.
IMPORT_ATTEMPTS = 8
IMPORT_TIMEOUT_S = 300


class ImportFailed(RuntimeError):
    """An import that did not complete even when run again: it is neither whole nor resumable."""


class Traffic:
    def __init__(self, daemon: SoakDaemon, folder: Path, rng: random.Random, memories: int) -> None:
        self.daemon = daemon
        self.folder = folder
        self.rng = rng
        self.memories = memories
        self.tokens = Tokens(IMPORT, rng)
        self.imported: set[str] = set()
        self.counts = {"imports": 0, "import_runs": 0, "imports_killed": 0, "searches": 0, "searches_refused": 0,
                       "dreams": 0, "dreams_refused": 0, "peer_visits": 0, "peer_visits_failed": 0,
                       "floods": 0, "floods_failed": 0}  # fmt: skip
        self.seen_crystals: set[str] = set()  # ids search answers named: each must still be there at the end

    def step(self, written: set[str]) -> str:
        """One move, drawn at random (an import less often: it is the longest)."""
        move = self.rng.choices(("search", "dream", "import", "peer", "flood"), (8, 2, 1, 1, 1))[0]
        (self.import_() if move == "import" else getattr(self, move)(written))
        return move

    def search(self, written: set[str]) -> None:
        client = self.daemon.client()
        words = self.rng.choice(sorted(written)) if written and self.rng.random() < 0.7 else "warehouse delivery"
        try:
            if client is None:
                raise ConnectionError("down")
            hits = client.search(words)
            self.seen_crystals.update(str((hit.get("crystal") or hit)["id"]) for hit in hits)
            self.counts["searches"] += 1
        except (OSError, RuntimeError, ValueError):  # killed under us, or not up yet
            self.counts["searches_refused"] += 1
        finally:
            if client is not None:
                client.close()

    def dream(self, _written: set[str]) -> None:
        client = self.daemon.client()
        try:
            if client is None:
                raise ConnectionError("down")
            client.call("POST", "/v1/working-memory/dream", {})
            self.counts["dreams"] += 1
        except (OSError, RuntimeError, ValueError):
            self.counts["dreams_refused"] += 1
        finally:
            if client is not None:
                client.close()

    def import_(self) -> None:
        """A Mem0 export of fresh memories, imported; a run may be killed partway, and is run again
        until it completes."""
        path = self.folder / f"mem0-{self.counts['imports']}.json"
        tokens = [self.tokens.next() for _ in range(self.memories)]
        results = [{"id": f"m-{t}", "memory": memory_says(t, self.rng), "user_id": "alex",
                    "created_at": "2025-03-01T10:00:00Z"} for t in tokens]  # fmt: skip
        path.write_text(json.dumps({"results": results}))
        self.imported.update(tokens)  # from here on, each must end up stored exactly once
        for _ in range(IMPORT_ATTEMPTS):
            self.counts["import_runs"] += 1
            if self._import_once(path, kill_after=self.rng.uniform(0.3, 3.0) if self.rng.random() < 0.4 else None):
                self.counts["imports"] += 1
                return
        raise ImportFailed(f"{path.name} did not complete in {IMPORT_ATTEMPTS} runs")

    def _import_once(self, path: Path, kill_after: float | None) -> bool:
        command = [*CLI, "memory", "import", str(path), "--from", "mem0", "--no-embed", "--json",
                   "--data-dir", str(self.daemon.data)]  # fmt: skip
        proc = subprocess.Popen(command, env=self.daemon.env, stdout=subprocess.PIPE, stderr=subprocess.PIPE)
        try:
            proc.wait(timeout=kill_after if kill_after is not None else IMPORT_TIMEOUT_S)
        except subprocess.TimeoutExpired:
            if kill_after is None:
                proc.kill()
                proc.communicate()
                raise ImportFailed(f"{path.name}: an import run took more than {IMPORT_TIMEOUT_S} s") from None
            proc.send_signal(signal.SIGKILL)
            proc.communicate()
            self.counts["imports_killed"] += 1
            return False
        _out, err = proc.communicate()
        if proc.returncode != 0:
            sys.stderr.write(f"soak: import of {path.name} exited {proc.returncode}: {err.decode()[-500:]}\n")
        return proc.returncode == 0

    def peer(self, _written: set[str]) -> None:
        """A peer (a libp2p host of its own, two keys) connects, gossips an attestation, stays a moment, leaves."""
        address = self.daemon.address()
        try:
            if address is None:
                raise ConnectionError("down")
            with connected_attackers(address, attackers=1, keys_each=2, seeded=False):
                time.sleep(self.rng.uniform(0.5, 3.0))
            self.counts["peer_visits"] += 1
        except (OSError, RuntimeError, subprocess.TimeoutExpired):
            self.counts["peer_visits_failed"] += 1

    def flood(self, _written: set[str]) -> None:
        """A stranger under a fresh key opens streams as fast as the node lets it, junk on each."""
        address = self.daemon.address()
        try:
            if address is None:
                raise ConnectionError("down")
            flood = Flood(address, "--streams", "300", "--write", "512")
            time.sleep(self.rng.uniform(0.5, 2.0))
            flood.end()
            self.counts["floods"] += 1
        except (OSError, RuntimeError, ValueError, subprocess.TimeoutExpired):
            self.counts["floods_failed"] += 1

    def summary(self) -> dict[str, Any]:
        return dict(self.counts)
