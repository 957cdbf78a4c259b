"""JSON from outside the process (an API body, a control-socket line, a backup's manifest), parsed
with a clear error.

Nesting is checked before parsing: the embedded chain's libraries raise the interpreter's recursion
limit to 100,000 for the EVM, and at that limit ``json.loads`` of a deeply nested document overflows
the C stack and kills the process (measured: a 200 KB body of brackets was a segfault) instead of
raising ``RecursionError``.
"""

from __future__ import annotations

import json
import re
from typing import Any

import numpy as np

from node.errors import InvalidValue

#: Deeper than any document of ours (the deepest, a search request, nests 3 levels).
MAX_DEPTH = 64
_STRING = re.compile(rb'"[^"\\]*(?:\\.[^"\\]*)*"')
_NOT_BRACKET = re.compile(rb"[^\[\]{}]+")
_STEP = bytes.maketrans(b"[{]}", b"\x01\x01\xff\xff")


def nesting_depth(data: bytes) -> int:
    """How deeply ``data`` nests arrays and objects (brackets inside strings do not count)."""
    brackets = _NOT_BRACKET.sub(b"", _STRING.sub(b"", data))
    if not brackets:
        return 0
    steps = np.frombuffer(brackets.translate(_STEP), dtype=np.int8)  # +1 per opening, -1 per closing
    return int(np.cumsum(steps, dtype=np.int64).max())


def json_object(data: bytes | str, what: str, *, max_depth: int = MAX_DEPTH) -> dict[str, Any]:
    """``data`` as a JSON object, or ``ValueError`` saying why not (not JSON, nested past ``max_depth``,
    not an object)."""
    raw = data.encode() if isinstance(data, str) else data
    openings = raw.count(b"[") + raw.count(b"{")  # an upper bound on the depth, in C: most bodies stop here
    if openings > max_depth and nesting_depth(raw) > max_depth:
        raise InvalidValue(f"{what} nests too deeply (more than {max_depth} levels)")
    try:
        value = json.loads(raw)
    except RecursionError:
        raise InvalidValue(f"{what} nests too deeply") from None
    except (json.JSONDecodeError, UnicodeDecodeError) as exc:
        raise InvalidValue(f"{what} is not JSON ({exc})") from None
    if not isinstance(value, dict):
        raise InvalidValue(f"{what} must be a JSON object")
    return value
