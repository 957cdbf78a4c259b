"""Inputs for a door, made from its seeds: random bytes never get past a JSON parse, so most cases
are a valid seed bent a little (bytes flipped, cut short, a value swapped for a wrong type, a huge
number, a string of 100,000 characters, nesting thousands deep) and written back in the door's shape.

Shapes: ``json`` (one document), ``jsonl`` (one document per line; one line is bent), ``msgpack`` (a
gossip body), ``text`` (markdown, TOML: bent as lines of text).
"""

from __future__ import annotations

import json
import re
from typing import Any

import msgpack
from hypothesis import strategies as st

from ground import json_text

_DEEP = "\x00deep:"  # a string that stands for nesting the encoders cannot write (they recurse)
_MSGPACK_DEEP = re.compile(rb"[\xa0-\xbf]\x00deep:(\d+)")  # its fixstr in msgpack
_JSON_DEEP = re.compile(rb'"\\u0000deep:(\d+)"')
ODD_NUMBERS = (0, -1, 2**31, 2**53 + 1, 2**63, 2**64, -(2**63) - 1, 10**30, 10**400)

_odd: st.SearchStrategy[Any] = st.one_of(
    st.none(),
    st.booleans(),
    st.sampled_from(ODD_NUMBERS),
    st.integers(),
    st.floats(),
    st.text(max_size=20),
    st.sampled_from(["", " ", "x" * 100_000, "\u202e", "\ud800", "0x", "../../etc/passwd", "[[", "{{"]),
    st.integers(100, 20_000).map(lambda n: f"{_DEEP}{n}"),
    st.lists(st.integers(), max_size=4),
    st.dictionaries(st.text(max_size=8), st.integers(), max_size=3),
    st.builds(lambda: [0] * 10_000),  # a fresh list: a later move may append to it
)
_TEXT_FRAGMENTS = (
    "---\n", "tags: [a, b\n", "aliases: [[x]]\n", "[[", "]]", "#tag", "[section\n", "[[node]]\n", "x = ",
    "a = [[[[[[[[\n", "b = {c = {d = \n", "n = 99999999999999999999999999\n", 'u = "\\uD800"\n', "\x00", "\r",
    "\ufeff", "'''", '"""', "\n" * 3, "=" * 200,
)  # fmt: skip


_BYTES = (b"{", b"[", b'"', b"\\", b"\n", b"\xff")


def _deep_json(n: int) -> str:
    return "[" * n + "]" * n


def _deep_msgpack(n: int) -> bytes:
    return b"\x91" * n + b"\xc0"  # n arrays of one element around a nil


def encode(doc: Any, shape: str) -> bytes:
    """``doc`` written in ``shape`` (``json`` or ``msgpack``), with the deep-nesting stand-ins expanded."""
    if shape == "msgpack":
        out = msgpack.packb(doc, use_bin_type=True)
        return _MSGPACK_DEEP.sub(lambda m: _deep_msgpack(int(m[1])), out)
    text = json.dumps(doc, ensure_ascii=True).encode()
    return _JSON_DEEP.sub(lambda m: _deep_json(int(m[1])).encode(), text)


def decode(data: bytes, shape: str) -> Any:
    """The seed as a tree, or raises ``ValueError`` (it is then bent as bytes only)."""
    if shape == "msgpack":
        try:
            return msgpack.unpackb(data, raw=False)
        except Exception as exc:
            raise ValueError(str(exc)) from None
    return json_text.loads(data)


def _places(doc: Any, limit: int = 300) -> list[tuple[Any, Any]]:
    """(container, key) of every value in ``doc``, breadth first, at most ``limit``."""
    found: list[tuple[Any, Any]] = []
    queue = [doc]
    while queue and len(found) < limit:
        node = queue.pop(0)
        keys = list(node) if isinstance(node, dict) else range(len(node)) if isinstance(node, list) else []
        for key in keys:
            found.append((node, key))
            queue.append(node[key])
    return found


@st.composite
def bent_tree(draw: st.DrawFn, doc: Any) -> Any:
    """``doc`` with one to three values replaced by odd ones, removed, or given an unknown sibling."""
    for _ in range(draw(st.integers(1, 3))):
        places = _places(doc)
        if not places:
            return draw(_odd)
        node, key = draw(st.sampled_from(places))
        move = draw(st.sampled_from(("swap", "swap", "drop", "add")))
        if move == "swap":
            node[key] = draw(_odd)
        elif move == "drop":
            del node[key]
        elif isinstance(node, dict):
            node[draw(st.text(max_size=10))] = draw(_odd)
        else:
            node.append(draw(_odd))
    return doc


@st.composite
def bent_bytes(draw: st.DrawFn, data: bytes) -> bytes:
    """``data`` with a few bytes flipped, cut, inserted or repeated."""
    out = bytearray(data)
    for _ in range(draw(st.integers(1, 4))):
        at = draw(st.integers(0, len(out)))
        move = draw(st.sampled_from(("flip", "cut", "truncate", "insert", "repeat")))
        if move == "flip" and at < len(out):
            out[at] ^= 1 << draw(st.integers(0, 7))
        elif move == "cut":
            del out[at : at + draw(st.integers(1, 64))]
        elif move == "truncate":
            del out[at:]
        elif move == "insert":
            out[at:at] = draw(
                st.binary(min_size=1, max_size=16) | st.sampled_from([b"{", b"[", b'"', b"\\", b"\n", b"\xff"])
            )
        else:
            out[at:at] = out[at : at + draw(st.integers(1, 256))] * draw(st.integers(2, 50))
    return bytes(out)


@st.composite
def bent_lines(draw: st.DrawFn, data: bytes, shape: str) -> bytes:
    """One line of ``data`` bent: as a JSON document (``jsonl``) or with a fragment of text put in."""
    lines = data.split(b"\n")
    at = draw(st.integers(0, max(0, len(lines) - 1)))
    if shape == "jsonl":
        try:
            lines[at] = encode(draw(bent_tree(decode(lines[at], "json"))), "json")
        except ValueError:
            lines[at] = draw(bent_bytes(lines[at]))
    else:
        fragment = draw(st.sampled_from(_TEXT_FRAGMENTS)).encode("utf-8", errors="surrogatepass")
        lines.insert(at, fragment * draw(st.sampled_from((1, 1, 2, 1000))))
    return b"\n".join(lines)


@st.composite
def _from_seed(draw: st.DrawFn, seeds: tuple[bytes, ...], shape: str) -> bytes:
    seed = draw(st.sampled_from(seeds))
    way = draw(st.sampled_from(("tree", "tree", "bytes", "lines") if shape != "text" else ("lines", "bytes")))
    if way == "tree" and shape in ("json", "msgpack"):
        try:
            return encode(draw(bent_tree(decode(seed, shape))), shape)
        except (ValueError, OverflowError, TypeError):  # a seed that is not its shape, a number msgpack cannot hold
            pass
    if way in ("tree", "lines") and shape != "msgpack":
        return draw(bent_lines(seed, "jsonl" if shape == "jsonl" else "text"))
    return draw(bent_bytes(seed))


def inputs(seeds: tuple[bytes, ...], shape: str) -> st.SearchStrategy[bytes]:
    """A door's inputs: mostly its seeds bent, some random bytes, some bare deep nesting."""
    deep = st.integers(65, 50_000).flatmap(
        lambda n: st.sampled_from([b"[" * n, b'{"a":' * n, _deep_msgpack(n), b"a = " + b"[" * n])
    )
    random = st.binary(max_size=512) | st.text(max_size=200).map(lambda t: t.encode("utf-8", errors="surrogatepass"))
    if not seeds:
        return st.one_of(random, deep)
    return st.one_of(_from_seed(seeds, shape), _from_seed(seeds, shape), _from_seed(seeds, shape), random, deep)
