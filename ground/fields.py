"""Checks for the fields of an untrusted msgpack map: each returns the typed value or raises
``FieldError`` naming the field. Gossip messages (``ground.wire``, in each kind's home) and the market's stream
messages are parsed with them."""

from __future__ import annotations

import re
from typing import Any

from ground.errors import FieldError

_HEX64 = re.compile(r"[0-9a-f]{64}")
_SKILL_ID = re.compile(r"[A-Za-z0-9._:\-]{1,64}")
ADDRESS = re.compile(r"0x[0-9a-fA-F]{40}")


def field(doc: dict[str, Any], name: str, kind: type, *, optional: bool = False) -> Any:
    if name not in doc:
        if optional:
            return None
        raise FieldError(f"missing field {name!r}")
    value = doc[name]
    if kind is int and (type(value) is not int):
        raise FieldError(f"{name!r} must be an integer")
    if kind is not int and not isinstance(value, kind):
        raise FieldError(f"{name!r} must be {kind.__name__}")
    return value


def text(doc: dict[str, Any], name: str, limit: int, *, optional: bool = False, empty: bool = False) -> str:
    value = field(doc, name, str, optional=optional)
    if value is None:
        return ""
    if len(value) > limit:
        raise FieldError(f"{name!r} is longer than {limit} characters")
    if not empty and not value.strip():
        raise FieldError(f"{name!r} must not be empty")
    return str(value)


def identifier(doc: dict[str, Any], name: str) -> str:
    value = text(doc, name, 64)
    if not _SKILL_ID.fullmatch(value):
        raise FieldError(f"'{name}' may hold letters, digits and . _ : - only")
    return value


def content_hash_field(doc: dict[str, Any], name: str = "content_hash") -> str:
    value = text(doc, name, 64)
    if not _HEX64.fullmatch(value):
        raise FieldError(f"{name!r} must be 64 lowercase hex digits")
    return value


def integer(doc: dict[str, Any], name: str, low: int, high: int) -> int:
    value = int(field(doc, name, int))
    if not low <= value <= high:
        raise FieldError(f"{name!r} must be in [{low}, {high}], got {value}")
    return value


def only(doc: dict[str, Any], allowed: set[str]) -> None:
    extra = set(doc) - allowed
    if extra:
        raise FieldError(f"unexpected fields {sorted(str(k) for k in extra)}")


def raw_bytes(doc: dict[str, Any], name: str, size: int | None = None, *, limit: int = 1_000_000) -> bytes:
    value = field(doc, name, bytes)
    if size is not None and len(value) != size:
        raise FieldError(f"{name!r} must be {size} bytes")
    if len(value) > limit:
        raise FieldError(f"{name!r} is longer than {limit} bytes")
    return bytes(value)


def address(doc: dict[str, Any], name: str) -> str:
    value = text(doc, name, 42)
    if not ADDRESS.fullmatch(value):
        raise FieldError(f"{name!r} must be an 0x-prefixed 20-byte hex address")
    return value
