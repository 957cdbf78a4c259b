"""Small machines on this one: a Linux control group per node, with a memory limit and a CPU quota,
that every `bitterbot-node` call naming the node's data dir joins (its daemon, the daemon's
embedding worker, and its CLI calls), as each node would share one small machine.

cgroup v1's memory and cpu controllers, as root (what this project's machines have). Where they
cannot be made, ``unavailable`` says why and the tests that need them skip.
"""

from __future__ import annotations

import contextlib
import os
import shlex
import threading
import time
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path

ROOT = Path("/sys/fs/cgroup")
CONTROLLERS = ("memory", "cpu")
CPU_PERIOD_US = 100_000


def unavailable() -> str | None:
    if os.geteuid() != 0:
        return "confining a node to a small machine needs root (cgroups)"
    for controller in CONTROLLERS:
        if not (ROOT / controller / "cgroup.procs").is_file():
            return f"no cgroup v1 {controller} controller at {ROOT / controller}"
    probe = ROOT / "memory" / f"bitterbot-probe-{os.getpid()}"
    try:
        probe.mkdir()
        probe.rmdir()
    except OSError as exc:
        return f"cannot make a cgroup here: {exc}"
    return None


@dataclass(frozen=True)
class Usage:
    peak_mb: float  # memory.max_usage_in_bytes: the group's processes' memory and its page cache
    own_peak_mb: float  # the processes' own memory (not file pages), the most seen by the sampler
    oom_kills: int  # processes the kernel killed for the group's limit


@dataclass
class SmallMachines:
    name: str
    memory_mb: int
    cpus: float
    nodes: tuple[str, ...]
    _own_peak: dict[str, float] = field(default_factory=dict)
    _stopped: threading.Event = field(default_factory=threading.Event)
    _sampler: threading.Thread | None = None

    def group(self, controller: str, node: str) -> Path:
        return ROOT / controller / self.name / node

    def make(self) -> None:
        for node in self.nodes:
            memory, cpu = self.group("memory", node), self.group("cpu", node)
            memory.mkdir(parents=True)
            cpu.mkdir(parents=True)
            limit = str(self.memory_mb * 1024 * 1024)
            (memory / "memory.limit_in_bytes").write_text(limit)
            with contextlib.suppress(FileNotFoundError):  # without swap accounting there is no swap to cap
                (memory / "memory.memsw.limit_in_bytes").write_text(limit)
            (cpu / "cpu.cfs_period_us").write_text(str(CPU_PERIOD_US))
            (cpu / "cpu.cfs_quota_us").write_text(str(int(CPU_PERIOD_US * self.cpus)))

    def own_mb(self, node: str) -> float:
        """The group's anonymous memory now (``total_rss``: heaps, not file pages the system can drop)."""
        for line in (self.group("memory", node) / "memory.stat").read_text().splitlines():
            key, _, value = line.partition(" ")
            if key == "total_rss":
                return int(value) / 2**20
        return 0.0

    def sample(self) -> None:
        """Every 50 ms until ``stop_sampling``: the groups' own memory, whose peaks ``usage`` reports."""

        def run() -> None:
            while not self._stopped.wait(0.05):
                for node in self.nodes:
                    with contextlib.suppress(OSError):
                        self._own_peak[node] = max(self._own_peak.get(node, 0.0), self.own_mb(node))

        self._sampler = threading.Thread(target=run, name="cgroup-sampler", daemon=True)
        self._sampler.start()

    def stop_sampling(self) -> None:
        self._stopped.set()
        if self._sampler is not None:
            self._sampler.join()

    def usage(self, node: str) -> Usage:
        memory = self.group("memory", node)
        peak = int((memory / "memory.max_usage_in_bytes").read_text())
        kills = 0
        for line in (memory / "memory.oom_control").read_text().splitlines():
            key, _, value = line.partition(" ")
            if key == "oom_kill":
                kills = int(value)
        return Usage(round(peak / 2**20, 1), round(self._own_peak.get(node, 0.0), 1), kills)

    def wrapper(self, folder: Path, real: Path) -> Path:
        """A `bitterbot-node` that joins the group of the data dir it is given, then runs the real one."""
        folder.mkdir(parents=True, exist_ok=True)
        script = folder / "bitterbot-node"
        joins = "\n".join(
            f'  echo $$ > "{ROOT}/{controller}/{self.name}/$node/cgroup.procs"' for controller in CONTROLLERS
        )
        script.write_text(
            "#!/bin/sh\n"
            'node=""; previous=""\n'
            'for word in "$@"; do [ "$previous" = "--data-dir" ] && node=$(basename "$word"); previous=$word; done\n'
            f'if [ -n "$node" ] && [ -d "{ROOT}/memory/{self.name}/$node" ]; then\n{joins}\nfi\n'
            f'exec {shlex.quote(str(real))} "$@"\n'
        )
        script.chmod(0o755)
        return script

    def remove(self) -> None:
        """The groups, once what ran in them has exited (a group with a process in it cannot go)."""
        deadline = time.monotonic() + 30
        for controller in CONTROLLERS:
            for node in self.nodes:
                group = self.group(controller, node)
                while group.exists():
                    try:
                        group.rmdir()
                    except OSError:
                        if time.monotonic() > deadline:
                            raise
                        for pid in (group / "cgroup.procs").read_text().split():
                            with contextlib.suppress(ProcessLookupError):
                                os.kill(int(pid), 9)
                        time.sleep(0.2)
            with contextlib.suppress(OSError):
                (ROOT / controller / self.name).rmdir()


@contextlib.contextmanager
def small_machines(name: str, memory_mb: int, cpus: float, nodes: tuple[str, ...]) -> Iterator[SmallMachines]:
    machines = SmallMachines(f"{name}-{os.getpid()}", memory_mb, cpus, nodes)
    machines.make()
    machines.sample()
    try:
        yield machines
    finally:
        machines.stop_sampling()
        machines.remove()
