"""A wire message described once: each field with its check gives the parser of an untrusted map and
the builder of the map a sender signs (issue 29: each message was written three times, as a
dataclass, a parser and a body builder, and the three could drift apart).

    WEATHER = Wire(Weather, {"level_milli": whole(0, 1000), "reason": words(280), ...})
    WEATHER.parse(doc)    # a Weather, or FieldError naming the first wrong field
    WEATHER.body(weather) # the map, in the description's order

A check across fields (successes <= executions) is the description's ``check``.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any, Generic, TypeVar

from ground.errors import FieldError
from ground.fields import address, content_hash_field, field, identifier, integer, only, raw_bytes, text

T = TypeVar("T")


def _same(value: Any) -> Any:
    return value


@dataclass(frozen=True, slots=True)
class Spec:
    """How one field travels: ``read`` takes it from an untrusted map (raising ``FieldError``),
    ``write`` puts the typed value back; an ``omitted`` field is left out of a body while it holds
    its empty value, and read as that value when absent."""

    read: Callable[[dict[str, Any], str], Any]
    write: Callable[[Any], Any] = _same
    omitted: bool = False
    empty: Any = None


def whole(low: int, high: int) -> Spec:
    """An integer in [low, high]."""
    return Spec(lambda doc, name: integer(doc, name, low, high))


def words(limit: int, *, empty: bool = False) -> Spec:
    """A string of at most ``limit`` characters (not blank, unless ``empty``)."""
    return Spec(lambda doc, name: text(doc, name, limit, empty=empty))


def ident() -> Spec:
    """An identifier: 1-64 letters, digits and . _ : -."""
    return Spec(identifier)


def digest() -> Spec:
    """A SHA-256 content hash: 64 lowercase hex digits."""
    return Spec(content_hash_field)


def key() -> Spec:
    """A 32-byte public key."""
    return blob(32)


def blob(size: int | None = None, *, limit: int = 1_000_000) -> Spec:
    """Bytes: exactly ``size`` of them when given, at most ``limit``."""
    return Spec(lambda doc, name: raw_bytes(doc, name, size, limit=limit))


def eth_address() -> Spec:
    """An 0x-prefixed 20-byte hex address."""
    return Spec(address)


def strings(count: int, length: int, *, prefix: str = "", omitted: bool = False) -> Spec:
    """At most ``count`` strings of 1-``length`` characters (each starting with ``prefix``), as a tuple."""

    def read(doc: dict[str, Any], name: str) -> tuple[str, ...]:
        items = field(doc, name, list, optional=omitted) or []
        if len(items) > count or not all(
            isinstance(s, str) and 0 < len(s) <= length and s.startswith(prefix) for s in items
        ):
            raise FieldError(f"{name!r} must be at most {count} strings of 1-{length} characters")
        return tuple(str(s) for s in items)

    return Spec(read, list, omitted=omitted, empty=())


def optional_text(limit: int) -> Spec:
    """A string of 1-``limit`` non-blank characters, or absent (None)."""

    def read(doc: dict[str, Any], name: str) -> str | None:
        value = field(doc, name, str, optional=True)
        if value is not None and (not value.strip() or len(value) > limit):
            raise FieldError(f"{name!r} must be 1-{limit} characters")
        return None if value is None else str(value)

    return Spec(read, omitted=True, empty=None)


class Wire(Generic[T]):
    """A message type ``kind`` described once by its ``fields`` (in body order) and an optional
    ``check`` across them."""

    def __init__(self, kind: type[T], fields: Mapping[str, Spec], check: Callable[[T], None] | None = None) -> None:
        self.kind = kind
        self.fields = dict(fields)
        self._check = check

    def parse(self, doc: dict[str, Any]) -> T:
        """The message in ``doc`` (an untrusted map), or ``FieldError`` naming what is wrong."""
        only(doc, set(self.fields))
        message = self.kind(**{name: spec.read(doc, name) for name, spec in self.fields.items()})
        if self._check is not None:
            self._check(message)
        return message

    def body(self, message: T) -> dict[str, Any]:
        """The map a sender signs: every field in order, an omitted one only when it holds a value."""
        out: dict[str, Any] = {}
        for name, spec in self.fields.items():
            value = getattr(message, name)
            if spec.omitted and value == spec.empty:
                continue
            out[name] = spec.write(value)
        return out
