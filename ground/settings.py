"""The base of every package's settings: a section of the TOML file, or a component of one.

A package declares the knobs of each of its components as a ``Section`` whose field names are the
TOML keys people write (``ConnectionBounds``: ``max_connections``, ``connections_per_ip``, ...),
with their defaults and bounds. A TOML table is the union of its components, by inheritance
(``class P2PSettings(ConnectionBounds, RelaySettings, ...)``), so the whole table is handed to each
component and nothing maps one onto the other. ``node.config.Config`` only composes the tables and
holds the checks that span two of them. A new setting is one field (and its words in
``configs/edge.toml``, which the reference page is generated from).
"""

from __future__ import annotations

from pydantic import BaseModel, ConfigDict

from ground.errors import Invalid


class Section(BaseModel):
    """Settings read from the config file: unknown keys are refused, and a value is taken as what it
    is, never coerced ("5" is not an int and 1 is not a bool; a TOML file says what it means)."""

    model_config = ConfigDict(extra="forbid", frozen=True, strict=True, use_attribute_docstrings=True)


class SettingError(Invalid):
    """Settings that cannot go together (raised by a section's checks; the loader names the key)."""
