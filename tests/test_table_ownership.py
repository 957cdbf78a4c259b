"""Each package owns its tables: the SQL in a package's source names only the tables its own schema
creates (plus the shared ``meta`` and SQLite's catalogue). What a package needs of another's tables
it asks through that package's functions (e.g. ``memory.storage.crystal_queries``)."""

from __future__ import annotations

import ast
import re
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
SCHEMAS = {
    "memory": (ROOT / "memory" / "storage" / "schema.py", ROOT / "memory" / "sync" / "schema.py"),
    "marketplace": (ROOT / "marketplace" / "schema.py",),
    "p2p": (ROOT / "p2p" / "schema.py",),
}
PACKAGES = ("crypto", "memory", "p2p", "marketplace", "node")
SHARED = {"meta", "sqlite_master", "pragma_table_info", "sqlite_sequence"}
_CREATED = re.compile(r"CREATE\s+(?:VIRTUAL\s+)?TABLE\s+(?:IF\s+NOT\s+EXISTS\s+)?([a-z_][a-z0-9_]*)", re.IGNORECASE)
# UPDATE after DO is an upsert's, after AFTER/BEFORE a trigger's event: neither names a table.
_NAMED = re.compile(
    r"(?:\bFROM|\bJOIN|\bINTO|(?<!DO )(?<!AFTER )(?<!BEFORE )\bUPDATE|\bTABLE)\s+(?:IF\s+NOT\s+EXISTS\s+)?"
    r"([a-z_][a-z0-9_]*)"
)
_COMMENT = re.compile(r"--[^\n]*")
_FORMATTED = "formatted_value"  # stands for an f-string's {…}: a name chosen in code, never a table literal
_SQL = re.compile(r"\b(SELECT|INSERT|UPDATE|DELETE|CREATE|ALTER)\b")
#: Named, with why: the doctor's in-memory probe that FTS5 loads (not a table of the node's file), and
#: the memory's v10 migration, which holds received peer content except what this node bought, read
#: from the marketplace's table only where that table exists (a step written when both were one set).
EXCEPTIONS = {"node/ops/doctor.py": {"t"}, "memory/storage/schema.py": {"purchases"}}


def sql_strings(path: Path) -> list[str]:
    """String constants in a module that read as SQL (f-string parts included)."""
    found = []
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if isinstance(node, ast.Constant) and isinstance(node.value, str) and _SQL.search(node.value):
            found.append(_COMMENT.sub("", node.value))
        if isinstance(node, ast.JoinedStr):
            text = "".join(
                v.value if isinstance(v, ast.Constant) and isinstance(v.value, str) else _FORMATTED for v in node.values
            )
            if _SQL.search(text):
                found.append(_COMMENT.sub("", text))
    return found


def owned() -> dict[str, set[str]]:
    return {
        package: {name for path in paths for name in _CREATED.findall(path.read_text(encoding="utf-8"))}
        for package, paths in SCHEMAS.items()
    }


def test_the_two_schemas_create_disjoint_tables() -> None:
    tables = owned()
    assert tables["memory"] and tables["marketplace"]
    assert not tables["memory"] & tables["marketplace"]
    assert not (tables["memory"] | tables["marketplace"]) & tables["p2p"]
    assert {"purchases", "sales", "listings", "skill_executions"} <= tables["marketplace"]


def test_every_package_writes_sql_only_on_its_own_tables() -> None:
    tables = owned()
    strays = []
    for package in PACKAGES:
        mine = tables.get(package, set()) | SHARED
        for path in sorted((ROOT / package).rglob("*.py")):
            for sql in sql_strings(path):
                for name in _NAMED.findall(sql):
                    # vector tables are made per embedder (vec_<slug>) by memory.storage.vectors
                    excepted = name in EXCEPTIONS.get(str(path.relative_to(ROOT)), set())
                    if (
                        name in mine
                        or excepted
                        or name == _FORMATTED
                        or (package == "memory" and name.startswith("vec"))
                    ):
                        continue
                    strays.append(f"{path.relative_to(ROOT)}: {name}")
    assert strays == []


def test_the_check_sees_a_stray_table(tmp_path: Path) -> None:
    """The scanner finds a table named in SQL, in a plain string and in an f-string."""
    sample = tmp_path / "sample.py"
    sample.write_text("x = 'SELECT id FROM crystals c JOIN sales s ON 1'\ny = f\"DELETE FROM {t} WHERE a\"\n")
    found = [name for sql in sql_strings(sample) for name in _NAMED.findall(sql)]
    assert found == ["crystals", "sales", _FORMATTED]
