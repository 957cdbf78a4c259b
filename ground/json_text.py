"""JSON from outside the process, parsed without exhausting the stack.

``json.loads`` recurses once per level of nesting: a document of 50,000 ``[`` raises
``RecursionError`` (an untyped crash for the caller), and once the embedded chain's libraries have
raised the interpreter's recursion limit to 100,000 it overflows the C stack and kills the process
(measured: a 200 KB body of brackets was a segfault). So nesting is measured first, in C and numpy,
and a document deeper than any of ours is refused with ``TooDeep``.
"""

from __future__ import annotations

import json
import re
from typing import Any

import numpy as np

from ground.errors import Invalid

#: Deeper than any document we read (an API request nests 3 levels, a ChatGPT export about 8).
MAX_DEPTH = 64
_STRING = re.compile(rb'"[^"\\]*(?:\\.[^"\\]*)*"')
_NOT_BRACKET = re.compile(rb"[^\[\]{}]+")
_STEP = bytes.maketrans(b"[{]}", b"\x01\x01\xff\xff")


class TooDeep(Invalid):
    """A JSON document nests arrays and objects more deeply than any we read."""


def nesting_depth(data: bytes) -> int:
    """How deeply ``data`` nests arrays and objects (brackets inside strings do not count)."""
    brackets = _NOT_BRACKET.sub(b"", _STRING.sub(b"", data))
    if not brackets:
        return 0
    steps = np.frombuffer(brackets.translate(_STEP), dtype=np.int8)  # +1 per opening, -1 per closing
    return int(np.cumsum(steps, dtype=np.int64).max())


def loads(data: bytes | str, *, max_depth: int = MAX_DEPTH) -> Any:
    """``json.loads(data)``, refusing a document nested past ``max_depth`` with ``TooDeep`` first.
    Raises only ``ValueError``s: ``TooDeep``, ``json.JSONDecodeError`` or ``UnicodeDecodeError``."""
    raw = data.encode("utf-8", errors="surrogatepass") if isinstance(data, str) else bytes(data)
    openings = raw.count(b"[") + raw.count(b"{")  # an upper bound on the depth, in C: most documents stop here
    if openings > max_depth and nesting_depth(raw) > max_depth:
        raise TooDeep(f"nests more than {max_depth} levels deep")
    try:
        return json.loads(data)
    except RecursionError:  # the depth check missed (it cannot, but a crash is never the answer)
        raise TooDeep("nests too deeply") from None
