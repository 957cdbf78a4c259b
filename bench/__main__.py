"""Run the benchmarks and print one JSON document: `python -m bench [NAME ...] [--quick]`."""

from __future__ import annotations

import argparse
import importlib
import json
import os
import platform
import sys
import time
import traceback
from typing import Any

BENCHMARKS = {
    "consolidation": "bench.consolidation",
    "p2p": "bench.network.p2p",
    "marketplace": "bench.marketplace",
    "envelope_verify": "bench.network.envelope_verify",
    "locomo_recall": "bench.locomo_recall",
    "memory_store": "bench.memory_store",
    "api": "bench.api",
    "eigentrust": "bench.network.eigentrust",
    "injection": "bench.injection",
    "stranger_flood": "bench.network.stranger_flood",
    "connection_flood": "bench.network.flooded_node",
    "typing": "bench.typing",
    "supersession": "bench.supersession",
    "scale": "bench.scale",
    "dashboard": "bench.dashboard",
    "secrets": "bench.secrets",
    "importing": "bench.importing",
    "capture": "bench.memory.capture",
    "foreign_import": "bench.memory.foreign_import",
    "emerging": "bench.memory.emerging",
    "footprint": "bench.node.footprint",
    "fuzz": "bench.fuzz.campaign",
    "soak": "bench.soak.run",
    "sync": "bench.memory.sync",
}
#: Left out of a full run of all (hours long): run it by name. A quick run of all includes it.
BY_NAME_ONLY = {"soak"}
HELP_NAMES = "benchmarks to run (default: all; without --quick, all but soak, which runs for hours: name it)"


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m bench", description=__doc__)
    parser.add_argument(
        "names",
        nargs="*",
        choices=[*BENCHMARKS, []],
        help=HELP_NAMES,
    )
    parser.add_argument("--quick", action="store_true", help="smaller sizes, for a smoke run")
    args = parser.parse_args(argv)
    report: dict[str, Any] = {
        "machine": {
            "python": platform.python_version(),
            "platform": platform.platform(),
            "cpus": os.cpu_count(),
        },
        "quick": args.quick,
        "results": {},
    }
    failed = []
    for name in args.names or [n for n in BENCHMARKS if args.quick or n not in BY_NAME_ONLY]:
        started = time.perf_counter()
        try:
            module = importlib.import_module(BENCHMARKS[name])
            result = module.run(args.quick)
        except Exception as exc:  # one broken benchmark must not hide the others' figures
            failed.append(name)
            result = {"error": f"{type(exc).__name__}: {exc}"}
            traceback.print_exc(file=sys.stderr)
        result["wall_s"] = round(time.perf_counter() - started, 2)
        report["results"][name] = result
        print(f"bench {name}: {'FAILED' if name in failed else 'done'} in {result['wall_s']} s", file=sys.stderr)
    report["failed"] = failed
    print(json.dumps(report, indent=2))
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
