"""The figures docs/design/shape.md and issue 50's closing note give, read from the code, so that
none is counted by hand: the largest importers and most imported modules (the import graph of
``tests/test_import_cycles.py``), the folder pairs that import each other, the longest files,
lines per package, and the parts' lengths.

    python docs/shape_figures.py            # JSON on stdout
"""

from __future__ import annotations

import json
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from tests.test_import_cycles import MUTUAL_FOLDERS, PACKAGES, _graph  # noqa: E402


def _lines(file: Path) -> int:
    return len(file.read_text().splitlines())


def figures() -> dict[str, object]:
    known, graph = _graph()
    imported_by: dict[str, int] = {}
    for targets in graph.values():
        for target in targets:
            imported_by[target] = imported_by.get(target, 0) + 1
    files = {name: _lines(path) for name, path in known.items()}
    parts = sorted((ROOT / "node" / "parts").glob("*.py"))
    return {
        "largest_importers": sorted(((n, len(t)) for n, t in graph.items()), key=lambda x: -x[1])[:6],
        "most_imported": sorted(imported_by.items(), key=lambda x: -x[1])[:6],
        "mutual_folder_pairs": sorted("/".join(pair) for pair in MUTUAL_FOLDERS),
        "longest_files": sorted(files.items(), key=lambda x: -x[1])[:6],
        "lines_by_package": {p: sum(n for m, n in files.items() if m.split(".")[0] == p) for p in PACKAGES},
        "modules": len(known),
        "parts": {p.stem: _lines(p) for p in parts if p.stem != "__init__"},
    }


if __name__ == "__main__":
    json.dump(figures(), sys.stdout, indent=1)
    sys.stdout.write("\n")
