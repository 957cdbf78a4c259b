"""JSON from outside the process (an API body, a control-socket line, a backup's manifest), parsed
with a clear error.

Nesting is checked before parsing: the embedded chain's libraries raise the interpreter's recursion
limit to 100,000 for the EVM, and at that limit ``json.loads`` of a deeply nested document overflows
the C stack and kills the process (measured: a 200 KB body of brackets was a segfault) instead of
raising ``RecursionError``.
"""

from __future__ import annotations

from typing import Any

from ground.json_text import MAX_DEPTH, TooDeep, loads, nesting_depth
from node.errors import InvalidValue

__all__ = ["MAX_DEPTH", "json_object", "nesting_depth"]


def json_object(data: bytes | str, what: str, *, max_depth: int = MAX_DEPTH) -> dict[str, Any]:
    """``data`` as a JSON object, or ``ValueError`` saying why not (not JSON, nested past ``max_depth``,
    not an object)."""
    try:
        value = loads(data, max_depth=max_depth)
    except TooDeep:
        raise InvalidValue(f"{what} nests too deeply (more than {max_depth} levels)") from None
    except ValueError as exc:  # JSONDecodeError, UnicodeDecodeError
        raise InvalidValue(f"{what} is not JSON ({exc})") from None
    if not isinstance(value, dict):
        raise InvalidValue(f"{what} must be a JSON object")
    return value
