"""Compile the Vyper contracts into the artifacts the node loads (ABI + bytecode, committed).

Run after changing a contract: `python contracts/compile.py` (needs `pip install vyper==0.4.3`,
which runs offline). The node itself never compiles: it reads marketplace/artifacts/*.json,
and a test checks that each artifact was built from the source beside it (sha256).
"""

from __future__ import annotations

import hashlib
import json
import sys
from pathlib import Path

HERE = Path(__file__).resolve().parent
OUT = HERE.parent / "marketplace" / "artifacts"
CONTRACTS = ("DevUSDC", "Escrow")


def main() -> int:
    import vyper  # imported here: only this script needs the compiler

    OUT.mkdir(exist_ok=True)
    for name in CONTRACTS:
        path = HERE / f"{name}.vy"
        source = path.read_text()
        compiled = vyper.compile_code(source, output_formats=["abi", "bytecode"], contract_path=path.name)
        artifact = {
            "contract": name,
            "compiler": f"vyper {vyper.__version__}",
            "source_sha256": hashlib.sha256(source.encode()).hexdigest(),
            "abi": compiled["abi"],
            "bytecode": compiled["bytecode"],
        }
        (OUT / f"{name}.json").write_text(json.dumps(artifact, indent=1, sort_keys=True) + "\n")
        print(f"{name}: {len(compiled['bytecode']) // 2 - 1} bytes of init code -> {OUT / (name + '.json')}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
