"""No import cycle among our modules, counting the imports a cycle likes to hide behind: inside
functions and under ``TYPE_CHECKING``. The graph is read from the source with ``ast``, not by importing."""

from __future__ import annotations

import ast
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
PACKAGES = ("ground", "crypto", "memory", "p2p", "marketplace", "node")


def modules() -> dict[str, Path]:
    found = {}
    for package in PACKAGES:
        for file in (ROOT / package).rglob("*.py"):
            parts = file.relative_to(ROOT).with_suffix("").parts
            found[".".join(parts[:-1] if parts[-1] == "__init__" else parts)] = file
    return found


def imports_of(name: str, file: Path, known: dict[str, Path]) -> set[str]:
    """Our modules that ``name`` imports anywhere in its source (``from a import b`` counts as ``a.b``
    when that is a module, else as ``a``)."""
    package = name if file.name == "__init__.py" else name.rpartition(".")[0]
    targets: set[str] = set()
    for node in ast.walk(ast.parse(file.read_text(), str(file))):
        if isinstance(node, ast.Import):
            targets.update(alias.name for alias in node.names)
        elif isinstance(node, ast.ImportFrom):
            base = node.module or ""
            if node.level:
                anchor = package.split(".")[: len(package.split(".")) - node.level + 1]
                base = ".".join([*anchor, base] if base else anchor)
            for alias in node.names:
                targets.add(f"{base}.{alias.name}" if f"{base}.{alias.name}" in known else base)
    out = set()
    for target in targets:
        while target and target not in known:
            target = target.rpartition(".")[0]
        if target and target != name:
            out.add(target)
    return out


def cycles(graph: dict[str, set[str]]) -> list[list[str]]:
    """Strongly connected components of more than one module (Tarjan, iterative)."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    found: list[list[str]] = []
    counter = 0
    for root in sorted(graph):
        if root in index:
            continue
        work = [(root, iter(sorted(graph[root])))]
        index[root] = low[root] = counter
        counter += 1
        stack.append(root)
        on_stack.add(root)
        while work:
            node, children = work[-1]
            child = next(children, None)
            if child is not None:
                if child not in index:
                    index[child] = low[child] = counter
                    counter += 1
                    stack.append(child)
                    on_stack.add(child)
                    work.append((child, iter(sorted(graph[child]))))
                elif child in on_stack:
                    low[node] = min(low[node], index[child])
                continue
            work.pop()
            if work:
                low[work[-1][0]] = min(low[work[-1][0]], low[node])
            if low[node] == index[node]:
                component = []
                while True:
                    member = stack.pop()
                    on_stack.discard(member)
                    component.append(member)
                    if member == node:
                        break
                if len(component) > 1:
                    found.append(sorted(component))
    return found


def test_the_checker_finds_a_cycle_hidden_in_a_function() -> None:
    assert cycles({"a": {"b"}, "b": {"c"}, "c": {"a"}, "d": {"a"}}) == [["a", "b", "c"]]
    assert cycles({"a": {"b"}, "b": set()}) == []


def test_no_import_cycle_among_our_modules() -> None:
    _, graph = _graph()
    assert len(graph) > 100 and sum(len(targets) for targets in graph.values()) > 300  # it read the code
    assert cycles(graph) == []


def _graph() -> tuple[dict[str, Path], dict[str, set[str]]]:
    known = modules()
    return known, {name: imports_of(name, file, known) for name, file in known.items()}


#: The layers, lowest first: a package imports only packages below it (the ground floor none of ours).
LAYERS = ("ground", "crypto", "memory", "p2p", "marketplace", "node")


def test_packages_import_only_the_layers_below_them() -> None:
    _, graph = _graph()
    upward = sorted(
        f"{name} -> {target}"
        for name, targets in graph.items()
        for target in targets
        if LAYERS.index(target.split(".")[0]) > LAYERS.index(name.split(".")[0])
    )
    assert upward == []


def _folder(name: str, known: dict[str, Path]) -> str:
    parts = name.split(".")
    return ".".join(parts if known[name].name == "__init__.py" else parts[:-1])


#: Folders that still import each other (issue 29 found 16 such pairs; a folder and the one it holds
#: count here too), each with its cause. The list may only shrink: a new pair fails the test, and so
#: does a pair here that is gone (take it off). Gone since: node.commands/parts (a search-metrics
#: protocol), node.dashboard/runtime and node.runtime/servers (node.actor), node.dashboard/servers
#: (dispatch in node.commands.catalog), node.parts/runtime (the daemon and its wiring in node.daemon),
#: memory.cognition/retrieval (the steering factor in retrieval.query), memory.retrieval/storage
#: (the time a text names is read by memory.when, below both), memory/embedders and memory/storage
#: (memory.graph and memory.skill_versions left the root for memory/graph/ and memory/emerging/),
#: memory/governance (memory.llm went into memory/governance/), memory.retrieval/supersession (the
#: FTS words the judge shares with search are memory.fts, below both), memory.cognition/storage and
#: memory.governance/storage (typing and classifying moved from the store to memory.intake; the
#: layer rule and sensitivity the store's migrations and reads use are memory.epistemic and
#: memory.sensitivity, below both).
MUTUAL_FOLDERS = {
    # a package's root holds its basics (errors, model) beside high-level modules that use its folders
    ("marketplace", "marketplace.exchange"): "marketplace.ledger reads the deals",
    ("node", "node.cli"): "python -m node (node.__main__) starts the CLI",
    ("p2p", "p2p.network"): "p2p.host applies the network's bounds and traversal; discovery raises p2p.errors",
    ("p2p", "p2p.trust"): "p2p.validation and p2p.kinds read trust levels; the attestation kind's home is in p2p.trust",
}


def test_no_new_pair_of_folders_imports_each_other() -> None:
    known, graph = _graph()
    folders: dict[str, set[str]] = {}
    for name, targets in graph.items():
        here = _folder(name, known)
        folders.setdefault(here, set()).update(t for f in targets if (t := _folder(f, known)) != here)
    mutual = {tuple(sorted((a, b))) for a, targets in folders.items() for b in targets if a in folders.get(b, ())}
    assert mutual - MUTUAL_FOLDERS.keys() == set(), "new folders that import each other"
    assert MUTUAL_FOLDERS.keys() - mutual == set(), "a pair no longer imports each other: take it off the list"
