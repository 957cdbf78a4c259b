"""Compile Circle's FiatTokenV2_2, its proxy and the SignatureChecker library from ``../shared/usdc``
with solc-js (``solc@0.6.12``, the version the sources pin) and ``@openzeppelin/contracts@3.4.2``,
both from npm into ``.ci/tools``. The artifacts are cached under ``~/.cache/bitterbot-node``, keyed by
the sha256 of every source compiled: never written into the repository.

Whatever is missing (the sources, node, the npm packages) is ``FiatTokenUnavailable`` with the
reason, for a test to skip on.
"""

from __future__ import annotations

import hashlib
import json
import re
import shutil
import subprocess
import tempfile
from pathlib import Path
from typing import Any

from marketplace.errors import ChainError

REPO = Path(__file__).resolve().parents[2]
#: Where Circle's sources sit: ``shared/usdc`` beside the repository (never inside it).
SOURCES = REPO.parent / "shared" / "usdc" / "stablecoin-evm"
TOOLS = REPO / ".ci" / "tools" / "node_modules"
CACHE = Path.home() / ".cache" / "bitterbot-node"
#: (source file, contract) of what the deployment needs.
CONTRACTS = {
    "FiatTokenV2_2": "contracts/v2/FiatTokenV2_2.sol",
    "FiatTokenProxy": "contracts/v1/FiatTokenProxy.sol",
    "SignatureChecker": "contracts/util/SignatureChecker.sol",
}
_IMPORT = re.compile(r'^\s*import\s+(?:[^"\']*\s+from\s+)?["\']([^"\']+)["\']', re.MULTILINE)
INSTALL = "npm install --prefix .ci/tools solc@0.6.12 @openzeppelin/contracts@3.4.2"


class FiatTokenUnavailable(ChainError):
    """Circle's token cannot be built here (no sources beside the repository, no node or solc-js)."""


def _locate(name: str, importer: str) -> tuple[str, Path]:
    """The source unit name and file of an import ``name`` made from the unit ``importer``."""
    unit = str(Path(importer).parent / name) if name.startswith(".") else name
    parts: list[str] = []
    for part in unit.split("/"):
        if part == "..":
            parts.pop()
        elif part != ".":
            parts.append(part)
    unit = "/".join(parts)
    return unit, (TOOLS if unit.startswith("@openzeppelin/") else SOURCES) / unit


def sources() -> dict[str, str]:
    """Every source unit the three contracts need, by the name solc knows it under."""
    if not SOURCES.is_dir():
        raise FiatTokenUnavailable(f"Circle's USDC sources are not at {SOURCES} (../shared/usdc beside the repo)")
    found: dict[str, str] = {}
    todo = [(unit, SOURCES / unit) for unit in CONTRACTS.values()]
    while todo:
        unit, path = todo.pop()
        if unit in found:
            continue
        if not path.is_file():
            raise FiatTokenUnavailable(f"{unit} is missing at {path} (install the compiler: {INSTALL})")
        found[unit] = path.read_text()
        todo.extend(_locate(name, unit) for name in _IMPORT.findall(found[unit]))
    return found


def _solcjs() -> list[str]:
    node = shutil.which("node")
    solcjs = TOOLS / "solc" / "solcjs"
    if node is None or not solcjs.is_file():
        raise FiatTokenUnavailable(f"solc-js is not installed (node, and `{INSTALL}`)")
    return [node, str(solcjs)]


def artifacts() -> dict[str, Any]:
    """ABI, bytecode and library link references of each contract in ``CONTRACTS``, compiled once per
    set of sources (about 6 s) and then read from the cache."""
    request = {
        "language": "Solidity",
        "sources": {unit: {"content": text} for unit, text in sorted(sources().items())},
        "settings": {
            "optimizer": {"enabled": True, "runs": 10_000_000},
            "outputSelection": {"*": {"*": ["abi", "evm.bytecode.object", "evm.bytecode.linkReferences"]}},
        },
    }
    digest = hashlib.sha256(json.dumps(request, sort_keys=True).encode()).hexdigest()[:16]
    cached = CACHE / f"usdc-{digest}.json"
    if cached.is_file():
        doc: dict[str, Any] = json.loads(cached.read_text())
        return doc
    # solc-js reads its request with readFileSync(stdin) (a pipe gives EAGAIN) and exits before a
    # large answer drains into a pipe: both go through files.
    CACHE.mkdir(parents=True, exist_ok=True)
    with tempfile.TemporaryFile("w+", dir=CACHE) as stdin, tempfile.TemporaryFile("w+", dir=CACHE) as stdout:
        json.dump(request, stdin)
        stdin.seek(0)
        done = subprocess.run(  # our own node and solc-js, with a JSON request on stdin
            [*_solcjs(), "--standard-json"], stdin=stdin, stdout=stdout, stderr=subprocess.PIPE, text=True,
            timeout=300, check=False,
        )  # fmt: skip
        stdout.seek(0)
        answer = stdout.read()
    try:
        output = json.loads(answer[answer.index("{") :])
    except ValueError:
        raise FiatTokenUnavailable(f"solc-js gave no output: {done.stderr[-500:]}") from None
    errors = [e["formattedMessage"] for e in output.get("errors", []) if e.get("severity") == "error"]
    if errors:
        raise FiatTokenUnavailable("solc-js could not compile Circle's sources: " + "\n".join(errors)[:2000])
    built = {}
    for name, unit in CONTRACTS.items():
        contract = output["contracts"][unit][name]
        built[name] = {
            "abi": contract["abi"],
            "bytecode": contract["evm"]["bytecode"]["object"],
            "link_references": contract["evm"]["bytecode"]["linkReferences"],
        }
    partial = cached.with_suffix(".partial")
    partial.write_text(json.dumps(built))
    partial.replace(cached)  # whole or not at all: a parallel test may be reading it
    return built


def linked(contract: dict[str, Any], libraries: dict[str, str]) -> str:
    """The contract's bytecode with each library's address filled in where solc left its placeholder."""
    code = str(contract["bytecode"])
    for refs in contract["link_references"].values():
        for library, spots in refs.items():
            address = libraries[library].lower().removeprefix("0x")
            for spot in spots:
                start = 2 * int(spot["start"])
                code = code[:start] + address + code[start + 2 * int(spot["length"]) :]
    return code
