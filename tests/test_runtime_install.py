"""What the README gives users is the runtime install (`pip install .`, no dev extras, issue 32): no
module a user runs may import a tool that only the development extras bring."""

from __future__ import annotations

import ast
import tomllib
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
PACKAGES = ("ground", "crypto", "memory", "p2p", "marketplace", "node")
#: The import names of the dev extras (pyproject's [project.optional-dependencies] dev).
DEV_ONLY = {"pytest", "pytest_asyncio", "pytest_timeout", "xdist", "hypothesis", "ruff", "mypy", "playwright",
            "tokenizers", "mkdocs", "material"}  # fmt: skip


def test_the_dev_extras_are_the_tools_named_here() -> None:
    dev = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]["optional-dependencies"]["dev"]
    names = {req.split("==")[0].replace("-", "_") for req in dev}
    assert names == {"pytest", "pytest_asyncio", "pytest_timeout", "pytest_xdist", "hypothesis", "ruff", "mypy",
                     "playwright", "tokenizers", "mkdocs", "mkdocs_material"}  # fmt: skip


def test_no_installed_module_imports_a_development_tool() -> None:
    strays = []
    for package in PACKAGES:
        for path in sorted((ROOT / package).rglob("*.py")):
            for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
                names = (
                    [alias.name for alias in node.names]
                    if isinstance(node, ast.Import)
                    else [node.module or ""]
                    if isinstance(node, ast.ImportFrom) and node.level == 0
                    else []
                )
                strays += [f"{path.relative_to(ROOT)}: {n}" for n in names if n.split(".")[0] in DEV_ONLY]
    assert strays == []
