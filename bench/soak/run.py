"""The soak (issue 48): `python -m bench soak [--quick]`.

A real daemon (`bitterbot-node run`, hashing embedder, P2P on loopback) with capture watching a
folder runs while, at the same time:
- three Claude Code sessions grow in chunks of 2-7 turns, with damaged lines (cut off, not an
  object, wrong shapes, binary junk), rotations (renamed in the folder, a new session started) and
  truncations (emptied, then written again with the turns it held and new ones)
  (``bench.soak.transcripts``);
- Mem0 exports are imported with `memory import` (40 % of runs killed with SIGKILL partway and run
  again), the API is searched, the dream cycle runs, peers connect, gossip and leave, and a stranger
  floods streams (``bench.soak.traffic``);
- the daemon is killed with SIGKILL at random moments (seeded) and started again.
Market rounds are not part of it: a market needs a chain (anvil, or the embedded EVM with a deployed
escrow and funded accounts) that the daemon does not start cheaply by itself.

Afterwards (``bench.soak.verdict``): each turn's token is in exactly one captured crystal (every
lifecycle counted), each imported memory's in exactly one crystal, no damaged line's anywhere, every
crystal that existed before a kill still exists, and `PRAGMA integrity_check` is ok; any of these
broken, or a start that failed, raises (the benchmark fails). Resident memory and open descriptors
are sampled through the run (``bench.soak.trend``) beside a baseline: a fresh idle daemon's, in the
same run. Reported, not judged: a slope over a short run is mostly warm-up.

Length: --quick ~100 s of load (about 2-3 min in all); full 3 h. ``BENCH_SOAK_SECONDS=N`` sets the
load's length, ``BENCH_SOAK_SEED`` the seed (48), ``BENCH_SOAK_KEEP=1`` keeps the data dir.
"""

from __future__ import annotations

import os
import random
import tempfile
import threading
import time
from pathlib import Path
from typing import Any

from bench.soak.daemon import DaemonFailed, SoakDaemon, soak_env
from bench.soak.traffic import Traffic
from bench.soak.transcripts import TranscriptWriter
from bench.soak.trend import Sample, trend
from bench.soak.verdict import SoakInvariantBroken, captured_texts, count_tokens, crystal_ids, judge, read_rows

QUICK_S, FULL_S = 100, 3 * 3600


def _plan(seconds: int) -> dict[str, float]:
    """Pauses scaled to the run: a short run kills every 8-20 s, a long one every 1-8 minutes."""
    short = seconds < 1800
    return {
        "kill_min_s": 8 if short else 60, "kill_max_s": 20 if short else 480, "sample_s": 2 if short else 15,
        "warm_up_s": 10 if short else 60, "drain_s": 90 if short else 300, "memories": 30 if short else 200,
    }  # fmt: skip


def run(quick: bool) -> dict[str, Any]:
    seconds = int(os.environ.get("BENCH_SOAK_SECONDS") or (QUICK_S if quick else FULL_S))
    seed = int(os.environ.get("BENCH_SOAK_SEED") or 48)
    if os.environ.get("BENCH_SOAK_KEEP"):
        return soak(Path(tempfile.mkdtemp(prefix="bench-soak-")), seconds, seed)
    with tempfile.TemporaryDirectory(prefix="bench-soak-") as tmp:
        return soak(Path(tmp), seconds, seed)


def _baseline(root: Path, warm_up_s: float) -> dict[str, Any]:
    """A fresh daemon, idle, with the same settings: what the soak's figures are read against."""
    (root / "idle-watch").mkdir()
    idle = SoakDaemon(root / "idle", soak_env(root / "idle-watch"), root / "idle.log")
    idle.start()
    try:
        time.sleep(warm_up_s)
        sample = idle.sample()
    finally:
        idle.stop()
    return {"idle_daemon": sample}


class _Loop(threading.Thread):
    """A load thread: ``step()`` then a pause, until told to stop; an exception ends the soak."""

    def __init__(self, name: str, step: Any, pause: tuple[float, float], rng: random.Random) -> None:
        super().__init__(name=name, daemon=True)
        self.step, self.pause, self.rng = step, pause, rng
        self.halt = threading.Event()
        self.error: BaseException | None = None

    def run(self) -> None:
        try:
            while not self.halt.is_set():
                self.step()
                self.halt.wait(self.rng.uniform(*self.pause))
        except BaseException as exc:  # handed to the soak's own thread, which raises it
            self.error = exc


def soak(root: Path, seconds: int, seed: int) -> dict[str, Any]:
    """Run the soak in ``root`` for ``seconds`` of load; the figures, or SoakInvariantBroken/DaemonFailed."""
    plan = _plan(seconds)
    rng = random.Random(seed)
    baseline = _baseline(root, plan["warm_up_s"])
    watched = root / "transcripts"
    watched.mkdir()
    daemon = SoakDaemon(root / "node", soak_env(watched), root / "node.log")
    writer = TranscriptWriter(watched, random.Random(rng.random()))
    traffic = Traffic(daemon, root, random.Random(rng.random()), int(plan["memories"]))
    try:
        return _soak(daemon, writer, traffic, rng, plan, seconds, seed, baseline, root)
    finally:
        daemon.kill_quietly()  # a soak that raised leaves no daemon behind


def _soak(
    daemon: SoakDaemon,
    writer: TranscriptWriter,
    traffic: Traffic,
    rng: random.Random,
    plan: dict[str, float],
    seconds: int,
    seed: int,
    baseline: dict[str, Any],
    root: Path,
) -> dict[str, Any]:
    loops = [
        _Loop("soak-transcripts", writer.step, (0.2, 1.0), random.Random(rng.random())),
        _Loop("soak-traffic", lambda: traffic.step(set(writer.written)), (0.3, 1.5), random.Random(rng.random())),
    ]
    samples: list[Sample] = []
    kills = 0
    daemon.start()
    began = time.monotonic()  # the load's time runs from the first start: a slow start takes none of it
    for loop in loops:
        loop.start()
    try:
        deadline = began + seconds
        # The first kill within the first 60 % of the run, however short: every soak kills at least once.
        first = min(plan["kill_max_s"], max(plan["kill_min_s"], seconds * 0.6))
        next_kill = time.monotonic() + rng.uniform(plan["kill_min_s"], first)
        while time.monotonic() < deadline:
            time.sleep(min(plan["sample_s"], max(0.0, next_kill - time.monotonic())))
            _raise_from(loops)
            if not daemon.alive():
                raise DaemonFailed(f"the daemon exited by itself: {daemon.log_tail()}")
            if (sample := daemon.sample()) is not None:
                samples.append(Sample(round(time.monotonic() - began, 1), sample["uptime_s"], sample["rss_mb"],
                                      sample["fds"]))  # fmt: skip
            if time.monotonic() >= next_kill and time.monotonic() < deadline:
                before = crystal_ids(daemon.db)  # each of these committed rows must outlive the kill
                daemon.kill()
                traffic.seen_crystals.update(before)
                kills += 1
                time.sleep(rng.uniform(0.0, 2.0))  # the transcripts grow while it is down
                daemon.start()
                next_kill = time.monotonic() + rng.uniform(plan["kill_min_s"], plan["kill_max_s"])
    finally:
        for loop in loops:
            loop.halt.set()
        for loop in loops:
            loop.join(timeout=IMPORT_JOIN_S)
    _raise_from(loops)
    load_s = time.monotonic() - began
    caught_up = _drain(daemon, writer.written, plan["drain_s"])
    daemon.stop()
    verdict = judge(read_rows(daemon.db), written=writer.written, imported=traffic.imported,
                    damaged=writer.damaged, seen=traffic.seen_crystals)  # fmt: skip
    log = daemon.log_path.read_text(errors="replace")
    result = {
        "seed": seed,
        "load_s": round(load_s, 1),
        "transcripts": writer.counts,
        "traffic": traffic.summary(),
        "kills_survived": kills,
        "starts": daemon.starts,
        "caught_up_in_s": caught_up,
        **verdict,
        "daemon": trend(samples, plan["warm_up_s"]),
        "baseline": baseline,
        "log": {"tracebacks": log.count("Traceback"), "task_failed": log.count("task.failed")},
    }
    if verdict["broken"]:
        raise SoakInvariantBroken(f"the soak found a bug: {verdict['broken']} (seed {seed}, root {root})")
    return result


IMPORT_JOIN_S = 330  # an import in flight may take its whole run to end


def _raise_from(loops: list[_Loop]) -> None:
    for loop in loops:
        if loop.error is not None:
            raise loop.error


def _drain(daemon: SoakDaemon, written: set[str], limit_s: float) -> float | None:
    """Once the load stopped: wait for capture to hold every token (or ``limit_s``); how long it took."""
    started = time.monotonic()
    while time.monotonic() - started < limit_s:
        texts = captured_texts(daemon.db)
        if texts is not None and written <= set(count_tokens(texts)):
            return round(time.monotonic() - started, 1)
        time.sleep(1.0)
    return None
