"""Issue 13, finding 1, as a measurement: 40 peers, each with its own fresh key, gossip one trust
attestation rating 256 made-up keys at a running node (`bitterbot-node run`, real processes).

Two cases: the keys are strangers (ignored at the first hop), and the keys are management keys
(they count: the sparse EigenTrust runs over all 10,240 ratings every 3 s). For each, in the same run:
- ``GET /v1/peers`` answer times over the local API before the flood (the baseline) and after it;
- the daemon's peak resident memory (VmHWM) before and after.
Before the fix the daemon grew from 345 MB to 1,146 MB and `peers` took 6 s; the goal is < 100 MB
and < 1 s.
"""

from __future__ import annotations

import json
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

from bench.api import ApiClient, daemon_env, stop_daemon, wait_for_api
from bench.network.attestation_flood import connected_attackers, peak_rss_kb, seeded_keys
from bench.timing import percentiles_ms
from node.runtime.status import read_status
from p2p.topics import TRUST_TOPIC

CLI = [sys.executable, "-m", "node"]
ATTACKERS, KEYS_EACH = 4, 10
QUICK_ATTACKERS, QUICK_KEYS_EACH = 2, 5
ASKS = 20


def _peers_times(client: ApiClient) -> tuple[dict[str, float], int]:
    samples = []
    listed = 0
    for _ in range(ASKS):
        started = time.perf_counter()
        listed = len(client.call("GET", "/v1/peers"))
        samples.append(time.perf_counter() - started)
    return percentiles_ms(samples), listed


def _wait(check: Any, timeout: float, what: str) -> Any:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if value := check():
            return value
        time.sleep(0.3)
    raise RuntimeError(f"timed out waiting for {what}")


def _one_case(heard: bool, attackers: int, keys_each: int) -> dict[str, Any]:
    keys = [k.public_key.hex() for k in seeded_keys(attackers, keys_each)] if heard else []
    env = daemon_env(
        BITTERBOT_P2P__LISTEN='["/ip4/127.0.0.1/tcp/0"]',
        BITTERBOT_P2P__ATTESTATION_INTERVAL_MIN="0.05",
        BITTERBOT_P2P__CONNECTIONS_PER_IP="1000",  # every attacker peer comes from 127.0.0.1
        BITTERBOT_TRUST__MANAGEMENT_KEYS=json.dumps(keys),
    )
    with tempfile.TemporaryDirectory(prefix="bench-flood-") as tmp:
        data = Path(tmp) / "node"
        subprocess.run([*CLI, "init", "--data-dir", str(data)], env=env, check=True, capture_output=True)
        proc = subprocess.Popen(
            [*CLI, "run", "--data-dir", str(data)], env=env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL
        )
        try:
            client = ApiClient(wait_for_api(data, proc), (data / "api.token").read_text().strip())

            def p2p() -> dict[str, Any]:
                status = read_status(data / "status.json")
                assert status is not None, "the running daemon keeps a status file"
                details: dict[str, Any] = status.details["p2p"]
                return details

            address = p2p()["listen"][0]
            before, _ = _peers_times(client)
            peak_before = peak_rss_kb(proc.pid)

            with connected_attackers(address, attackers=attackers, keys_each=keys_each, seeded=heard) as published:
                _wait(lambda: sum(p2p()["messages"].get(TRUST_TOPIC, {}).values()) >= published, 60, "every judgement")
            if heard:
                _wait(lambda: p2p()["trust"]["last_computed_peers"] >= published * 257, 60, "a computation")
            after, listed = _peers_times(client)
            trust = p2p()["trust"]
            peak_after = peak_rss_kb(proc.pid)
            client.close()
        finally:
            stop_daemon(proc)
    return {
        "attestations": published,
        "attesters_counted": trust["attesters"],
        "keys_in_last_computation": trust["last_computed_peers"],
        "baseline_peers_before_flood": before,
        "peers_after_flood": after,
        "peers_listed": listed,
        "peak_rss_mb_before": round(peak_before / 1024, 1),
        "peak_rss_mb_after": round(peak_after / 1024, 1),
        "peak_rss_growth_mb": round((peak_after - peak_before) / 1024, 1),
    }


def run(quick: bool) -> dict[str, Any]:
    attackers, keys_each = (QUICK_ATTACKERS, QUICK_KEYS_EACH) if quick else (ATTACKERS, KEYS_EACH)
    return {
        "goal": {"peak_rss_growth_mb_below": 100, "peers_p95_ms_below": 1000},
        "before_the_fix": {"peak_rss_mb": [345, 1146], "peers_s": 6},
        "fresh_keys": _one_case(False, attackers, keys_each),
        "management_keys": _one_case(True, attackers, keys_each),
    }
